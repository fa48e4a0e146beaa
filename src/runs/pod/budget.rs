//! The budget of a run's pod (issue 20): its cost cap becomes the smaller of the target's
//! `max_cost_usd` and what remains of `budget.max_usd`, so the cost snapshot and the
//! deletion at the cap (POD-41) hold the pod to the budget; a start whose most the pod
//! may cost passes the cap is refused unless `--over-budget`, and one with nothing left
//! is refused always. A pod's spend goes to the ledger as it lives and when it is deleted.
//!
//! Issue 33: the cap counts every other spender's reservations, and a new run's pod
//! holds its whole cap as a reservation in the ledger ([`reserve`]) until its `final`
//! line, so a stage running beside it cannot spend what the pod may.

use crate::budget::book::{self, Book};
use crate::budget::pod::{pod_budget, train_estimate};
use crate::budget::{BudgetError, LedgerLine, PodLine, ReserveLine, ledger, usd};
use crate::config::{RunpodTarget, Settings};
use crate::project::Project;
use crate::runpod::lifecycle::{PodState, Rules};
use crate::runs::{Refusal, RunError};

/// Narrows `rules.cost_cap_usd` to what the budget leaves for run `run` (`None` for a
/// new run) on `target` (named `name`); with `check`, refuses a start whose estimate
/// passes the cap unless `over_budget`. `--keep-pod` runs without a cost cap (POD-1).
///
/// # Errors
///
/// [`Refusal::OverBudget`]; [`RunError::Io`] when the ledger cannot be read.
pub(super) fn apply(
    project: &Project,
    settings: &Settings,
    (name, target): (&str, &RunpodTarget),
    run: Option<&str>,
    (check, over_budget): (bool, bool),
    rules: &mut Rules,
) -> Result<(), RunError> {
    let Some(max_usd) = settings.budget.max_usd else {
        return Ok(());
    };
    if rules.keep_pod {
        return Ok(());
    }
    let mut book = Book::new(project.root());
    let budget = {
        let (held, _) = book.lock().map_err(|e| ledger_error(project, &e))?;
        let reserved = held.tally().reserved(book::alive, run);
        let (lines, _) = ledger::read(&ledger::path(project.root()))
            .map_err(|e| ledger_error(project, &e.into()))?;
        pod_budget(target.max_cost_usd, Some(max_usd), &lines, run, reserved)
    };
    let remaining = budget.remaining_usd.unwrap_or(0.0);
    if check {
        let refusal = |what: String, hint: &str| Refusal::OverBudget {
            what,
            spent: usd(budget.spent_usd),
            cap: usd(max_usd),
            hint: hint.to_owned(),
        };
        if remaining <= 0.0 {
            return Err(refusal("nothing of the budget remains".to_owned(), "").into());
        }
        // The highest candidate rate is known only as `max_price_per_hour` (with
        // `"auto"`): the API lists no rates of named GPU types before a create, so the
        // bound is then `max_cost_usd`; without either, the pod's cap is what remains.
        let rate = target
            .max_price_per_hour
            .map(|price| price * f64::from(target.gpu_count));
        let estimate = train_estimate(target.max_cost_usd, target.max_hours, rate);
        if let Some(estimate) = estimate.filter(|e| budget.spent_usd + e > max_usd) {
            if !over_budget {
                return Err(refusal(
                    format!(
                        "the pod may cost up to {} (`targets.{name}.max_cost_usd`)",
                        usd(estimate)
                    ),
                    ", or pass `--over-budget` to accept it (the pod is then deleted at the cap)",
                )
                .into());
            }
        }
    }
    rules.cost_cap_usd = budget.cap_usd;
    Ok(())
}

fn ledger_error(project: &Project, error: &BudgetError) -> RunError {
    RunError::Io {
        path: ledger::path(project.root()),
        source: std::io::Error::other(error.to_string()),
    }
}

/// Holds the pod cap of new run `run` (`rules.cost_cap_usd`, narrowed to what the budget
/// leaves now) as the run's reservation in the ledger, under its lock: from here on every
/// other spender counts the pod's worst case until its `final` line. Nothing is held
/// without a budget cap or with `--keep-pod`.
///
/// # Errors
///
/// [`Refusal::OverBudget`] when nothing remains now (another spender reserved it since
/// [`apply`]); [`RunError::Io`] when the ledger cannot be read or written.
pub(super) fn reserve<'a>(
    project: &'a Project,
    settings: &Settings,
    run: &str,
    rules: &mut Rules,
) -> Result<Held<'a>, RunError> {
    let mut held_by = Held {
        project,
        run: run.to_owned(),
        holds: false,
    };
    let Some(max_usd) = settings.budget.max_usd else {
        return Ok(held_by);
    };
    if rules.keep_pod {
        return Ok(held_by);
    }
    let mut book = Book::new(project.root());
    let (mut held, _) = book.lock().map_err(|e| ledger_error(project, &e))?;
    let tally = held.tally();
    let spent = tally.spent();
    let remaining = (max_usd - spent - tally.reserved(book::alive, None)).max(0.0);
    if remaining <= 0.0 {
        return Err(Refusal::OverBudget {
            what: "nothing of the budget remains (other spenders hold the rest)".to_owned(),
            spent: usd(spent),
            cap: usd(max_usd),
            hint: String::new(),
        }
        .into());
    }
    let cap = rules
        .cost_cap_usd
        .map_or(remaining, |cap| cap.min(remaining));
    rules.cost_cap_usd = Some(cap);
    held.append(&LedgerLine::Reserve(ReserveLine {
        at: jiff::Timestamp::now(),
        id: ReserveLine::pod_id(run),
        usd: cap,
        run: Some(run.to_owned()),
        pid: None,
    }))
    .map_err(|e| ledger_error(project, &e))?;
    held_by.holds = true;
    Ok(held_by)
}

/// A new run's pod reservation while its start runs: dropped when `train` returns, it
/// releases the reservation (a reservation of 0) when no pod was made, so a start that
/// failed holds nothing; a pod's reservation stays until its `final` line.
pub(super) struct Held<'a> {
    project: &'a Project,
    run: String,
    holds: bool,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if !self.holds {
            return;
        }
        let dir = self.project.run_dir(&self.run);
        let made = crate::runpod::record::PodRecord::read(&dir)
            .ok()
            .flatten()
            .is_some_and(|pod| pod.pod_id.is_some());
        if made {
            return;
        }
        let release = LedgerLine::Reserve(ReserveLine {
            at: jiff::Timestamp::now(),
            id: ReserveLine::pod_id(&self.run),
            usd: 0.0,
            run: Some(self.run.clone()),
            pid: None,
        });
        if let Err(error) = append_line(self.project.root(), &release) {
            tracing::warn!("cannot release the pod's reservation in the ledger: {error}");
        }
    }
}

/// Appends the pod line `line` under the ledger's lock, a `final` one only when its pod
/// has none yet: whichever process sees the pod gone first writes its end, once.
///
/// # Errors
///
/// [`BudgetError`] when the ledger cannot be read or written.
pub(super) fn append_line(root: &std::path::Path, line: &LedgerLine) -> Result<(), BudgetError> {
    let mut book = Book::new(root);
    let (mut held, _) = book.lock()?;
    if let LedgerLine::Pod(pod) = line {
        if held.tally().is_final(&pod.run, &pod.pod) {
            return Ok(());
        }
    }
    held.append(line)
}

/// The ledger line of the pod of `state` for run `run`: its rate times its lifetime so
/// far (final once deleted); `None` before it has a rate and a creation time.
#[must_use]
pub(super) fn line(run: &str, state: &PodState, now: std::time::Duration) -> Option<LedgerLine> {
    let facts = &state.facts;
    let (pod, rate, created) = (facts.pod.as_ref()?, facts.rate?, facts.created_at?);
    let (end, last) = match facts.deleted {
        Some((at, _)) => (at, true),
        None => (now, false),
    };
    let seconds = end.saturating_sub(created).as_secs_f64();
    Some(LedgerLine::Pod(PodLine::new(
        (run, pod),
        rate,
        seconds,
        state.rules.hour.as_secs_f64(),
        last,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::TimeScale;
    use crate::runpod::lifecycle::{Deleter, PodFacts};
    use std::time::Duration;

    #[test]
    fn the_pod_line_is_the_rate_times_the_lifetime_and_final_once_deleted() {
        let target = crate::runpod::lifecycle::tests::target(2.0, None);
        let rules = Rules::new(&target, false, TimeScale::REAL);
        let facts = PodFacts {
            pod: Some("p7".into()),
            rate: Some(1.8),
            created_at: Some(Duration::from_secs(1000)),
            ..PodFacts::default()
        };
        let now = Duration::from_secs(1000 + 1800);
        let state = PodState::attached(rules, facts.clone(), None, now);
        let Some(LedgerLine::Pod(live)) = line("r1", &state, now) else {
            panic!("no pod line")
        };
        assert!((live.cost_usd - 0.9).abs() < 1e-9, "{live:?}");
        assert!(!live.r#final);
        let mut deleted = PodState::attached(rules, facts.clone(), None, now);
        deleted.facts.deleted = Some((Duration::from_secs(1000 + 3600), Deleter::Client));
        let Some(LedgerLine::Pod(last)) = line("r1", &deleted, now) else {
            panic!("no pod line")
        };
        assert!((last.cost_usd - 1.8).abs() < 1e-9);
        assert!(last.r#final);
        assert_eq!((last.run.as_str(), last.pod.as_str()), ("r1", "p7"));
        let unpriced = PodFacts {
            rate: None,
            ..facts
        };
        assert_eq!(
            line("r1", &PodState::attached(rules, unpriced, None, now), now),
            None
        );
    }
}

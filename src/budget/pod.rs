//! The budget of a training pod (issue 20), pure: its cost cap is the smaller of the
//! target's `max_cost_usd` and what remains of `budget.max_usd` after every other spend
//! (the run's own pod lines left out, so taking a run up again gives it the same room)
//! and every other spender's reservations (issue 33), and the estimate of a start is the most the pod may cost.

use super::ledger::LedgerLine;
use super::summary::summary;

/// A pod's cost cap and what the budget leaves for it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PodBudget {
    /// The cap handed to the pod's rules (POD-41): `None` without either bound.
    pub cap_usd: Option<f64>,
    /// What remains of `budget.max_usd` for this pod; `None` without a budget cap.
    pub remaining_usd: Option<f64>,
    /// USD spent by everything but this run's pods.
    pub spent_usd: f64,
}

/// The budget of a pod of run `run` (`None` before the run exists) under the target's
/// `max_cost_usd` and `budget.max_usd`, over the ledger's `lines`, with `reserved_usd`
/// held by the other spenders' open reservations.
#[must_use]
pub fn pod_budget(
    max_cost_usd: Option<f64>,
    max_usd: Option<f64>,
    lines: &[LedgerLine],
    run: Option<&str>,
    reserved_usd: f64,
) -> PodBudget {
    let summary = summary(lines);
    let own = run
        .and_then(|run| summary.by_run.get(run))
        .map_or(0.0, |spend| spend.usd);
    let spent_usd = (summary.total.usd - own).max(0.0);
    let remaining_usd = max_usd.map(|cap| (cap - spent_usd - reserved_usd).max(0.0));
    let cap_usd = match (max_cost_usd, remaining_usd) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    PodBudget {
        cap_usd,
        remaining_usd,
        spent_usd,
    }
}

/// The most a training pod may cost: `max_hours` at the highest candidate rate, and
/// `max_cost_usd`, whichever is smaller; `None` when neither is known.
#[must_use]
pub fn train_estimate(
    max_cost_usd: Option<f64>,
    max_hours: f64,
    highest_rate: Option<f64>,
) -> Option<f64> {
    let by_hours = highest_rate.map(|rate| rate * max_hours);
    match (max_cost_usd, by_hours) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::ledger::{PodLine, RequestLine};

    fn lines() -> Vec<LedgerLine> {
        vec![
            LedgerLine::Request(RequestLine {
                at: "2026-01-01T00:00:00Z".parse().unwrap(),
                stage: "answers".into(),
                provider: "p".into(),
                model: "m".into(),
                input_tokens: 1,
                output_tokens: 1,
                cost_usd: Some(6.0),
                reservation: None,
            }),
            LedgerLine::Pod(PodLine::new(("r1", "7"), 2.0, 3600.0, 3600.0, false)),
        ]
    }

    #[test]
    fn the_pod_cap_is_the_smaller_of_max_cost_and_what_the_budget_leaves_past_other_spend() {
        // A new run: 6 + 2 spent of 10.
        let new = pod_budget(Some(5.0), Some(10.0), &lines(), None, 0.0);
        assert_eq!(new.cap_usd, Some(2.0));
        assert_eq!(new.remaining_usd, Some(2.0));
        // Run r1 taken up again: its own pod's 2 is not counted against it.
        let own = pod_budget(Some(5.0), Some(10.0), &lines(), Some("r1"), 0.0);
        assert_eq!(own.cap_usd, Some(4.0));
        assert!((own.spent_usd - 6.0).abs() < 1e-12);
        assert_eq!(
            pod_budget(Some(5.0), None, &lines(), None, 0.0).cap_usd,
            Some(5.0)
        );
        assert_eq!(
            pod_budget(None, Some(10.0), &lines(), None, 0.0).cap_usd,
            Some(2.0)
        );
        assert_eq!(pod_budget(None, None, &lines(), None, 0.0).cap_usd, None);
        // Another spender's reservation is room taken.
        assert_eq!(
            pod_budget(Some(5.0), Some(10.0), &lines(), None, 1.5).cap_usd,
            Some(0.5)
        );
        // Spent past the cap: nothing remains, never less.
        assert_eq!(
            pod_budget(None, Some(1.0), &lines(), None, 0.0).remaining_usd,
            Some(0.0)
        );
    }

    #[test]
    fn the_train_estimate_is_the_smaller_known_bound() {
        assert_eq!(train_estimate(Some(3.0), 2.0, Some(2.5)), Some(3.0));
        assert_eq!(train_estimate(Some(9.0), 2.0, Some(2.5)), Some(5.0));
        assert_eq!(train_estimate(None, 2.0, Some(2.5)), Some(5.0));
        assert_eq!(train_estimate(Some(3.0), 2.0, None), Some(3.0));
        assert_eq!(train_estimate(None, 2.0, None), None);
    }
}

//! A pod's end that no follower wrote (issue 33): a pod deleted while no process followed
//! it (its watchdog at the cost cap or the deadline, `pod rm`, the reconciliation) has
//! no `final` ledger line, so the budget would understate its spend and its run's
//! reservation would hold forever. Every Runpod command's check ([`super::manage::check`])
//! looks at this project's runs: a pod in `pod.json` that the API no longer lists and
//! answers 404 for, without a `final` line, gets one now, from the record of its life
//! (its creation and rate as the API gave them): the deletion `pod.json` holds, else the
//! earliest of now, its cost cap's moment and its deadline (its watchdog deletes it
//! there; one that outlives them is listed, and reconciled). The line is written under
//! the ledger's lock, only when its pod has none: once, whichever command comes first.

use std::time::Duration;

use crate::budget::book::Book;
use crate::budget::{LedgerLine, PodLine};
use crate::env::TimeScale;
use crate::project::Project;
use crate::runpod::api::{Pod, RunpodClient};
use crate::runpod::record::PodRecord;

/// Writes the `final` line of every pod of this project's runs that is gone without one;
/// returns, for each pod whose end could not be written, why.
pub(super) async fn settle_gone(
    client: &RunpodClient,
    project: &Project,
    listed: &[Pod],
    scale: TimeScale,
) -> Vec<String> {
    let mut failed = Vec::new();
    let mut book = Book::new(project.root());
    for entry in std::fs::read_dir(project.runs_dir())
        .into_iter()
        .flatten()
        .flatten()
    {
        let Some(run) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let Ok(Some(record)) = PodRecord::read(&entry.path()) else {
            continue;
        };
        let Some(pod) = record.pod_id.clone() else {
            continue;
        };
        if listed.iter().any(|p| p.id == pod) {
            continue;
        }
        let settled = match book.lock() {
            Ok((held, _)) => held.tally().is_final(&run, &pod),
            Err(error) => {
                failed.push(format!("the ledger: {error}"));
                return failed;
            }
        };
        if settled {
            continue;
        }
        // "Gone means gone": not listed and 404.
        match client.get_pod(&pod).await {
            Ok(None) => {}
            Ok(Some(_)) => continue,
            Err(error) => {
                failed.push(format!(
                    "the end of pod {pod} of run `{run}` is not in the budget yet: {error}"
                ));
                continue;
            }
        }
        let Some(line) = final_line(&run, &pod, &record, jiff::Timestamp::now(), scale) else {
            continue;
        };
        if let Err(error) = super::budget::append_line(project.root(), &line) {
            failed.push(format!(
                "the end of pod {pod} of run `{run}` could not be written to the ledger: {error}"
            ));
        }
    }
    failed
}

/// The `final` line of pod `pod` of run `run` seen gone at `now`, from its record: the
/// deletion it holds, else its creation to the earliest of `now`, its cost cap's moment
/// and its deadline; `None` without a rate or a creation time.
fn final_line(
    run: &str,
    pod: &str,
    record: &PodRecord,
    now: jiff::Timestamp,
    scale: TimeScale,
) -> Option<LedgerLine> {
    let rate = record.rate_usd_per_hour?;
    // Rates are per hour of the rules' clock (the test-only factor).
    let hour = scale.scale(Duration::from_secs(3600)).as_secs_f64();
    let seconds = if let Some(deleted) = &record.deleted {
        deleted.uptime_s
    } else {
        let created = record.created_at?;
        let end = [Some(now), record.cost_cap_at, record.deadline_at]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(now);
        (end - created)
            .total(jiff::Unit::Second)
            .unwrap_or(0.0)
            .max(0.0)
    };
    Some(LedgerLine::Pod(PodLine::new(
        (run, pod),
        rate,
        seconds,
        hour,
        true,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> PodRecord {
        serde_json::from_value(serde_json::json!({
            "version": 1, "run_id": "r1", "pod_name": "overbrainer-r1", "state": "running",
            "pod_id": "p1", "gpu_type": null, "network_volume_id": null,
            "rate_usd_per_hour": 2.0, "created_at": "2026-01-01T00:00:00Z",
            "deadline_at": "2026-01-01T10:00:00Z", "cost_snapshot_at": null,
            "cost_cap_at": "2026-01-01T01:30:00Z", "keep_pod": false,
            "job_started_at": null, "deleted": null
        }))
        .unwrap()
    }

    fn cost(line: Option<LedgerLine>) -> f64 {
        let Some(LedgerLine::Pod(line)) = line else {
            panic!("no pod line")
        };
        assert!(line.r#final);
        line.cost_usd
    }

    #[test]
    fn a_pod_seen_gone_is_charged_to_the_earliest_of_now_its_cost_cap_and_its_deadline() {
        let record = record();
        let at = |t: &str| t.parse::<jiff::Timestamp>().unwrap();
        // Seen gone within its bounds: its whole life until now.
        let line = final_line(
            "r1",
            "p1",
            &record,
            at("2026-01-01T00:30:00Z"),
            TimeScale::REAL,
        );
        assert!((cost(line) - 1.0).abs() < 1e-9);
        // Seen gone later: its watchdog deleted it at the cost cap.
        let line = final_line(
            "r1",
            "p1",
            &record,
            at("2026-01-02T00:00:00Z"),
            TimeScale::REAL,
        );
        assert!((cost(line) - 3.0).abs() < 1e-9);
        // Without a rate nothing is known.
        let unpriced = PodRecord {
            rate_usd_per_hour: None,
            ..record
        };
        assert!(
            final_line(
                "r1",
                "p1",
                &unpriced,
                at("2026-01-02T00:00:00Z"),
                TimeScale::REAL
            )
            .is_none()
        );
    }
}

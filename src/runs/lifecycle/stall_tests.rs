//! Table tests of a followed run's stalls (issue 21): for each `training.on_stall`, what
//! the machine does when the job's process group lives but no step line comes, what it
//! records, and that a slow but progressing job is never flagged.

use super::*;
use crate::config::OnStall;

/// [`super::tests::record`] running, without the merge.
fn record() -> RunRecord {
    RunRecord {
        merge: false,
        ..super::tests::record(State::Running)
    }
}

fn train(step: u64, ts: u64) -> String {
    format!(r#"{{"kind": "train", "ts": {ts}, "step": {step}, "max_steps": 100, "loss": 1.0}}"#)
}

fn poll(at: u64, metrics: Vec<String>, status: JobStatus) -> Event {
    Event::Polled {
        at: Duration::from_secs(at),
        metrics: Ok(metrics),
        log: Vec::new(),
        status: Ok(status),
        queued: None,
    }
}

/// A poll that finds the job waiting in the scheduler's queue.
fn queued_poll(at: u64) -> Event {
    Event::Polled {
        at: Duration::from_secs(at),
        metrics: Ok(Vec::new()),
        log: Vec::new(),
        status: Ok(JobStatus::Running),
        queued: Some("pending on Slurm (Nodes required for job are DOWN, DRAINED)".into()),
    }
}

/// What matters here of an effect: stall warnings, requests, cancels, saves.
fn label(effect: &Effect) -> Option<String> {
    match effect {
        Effect::Emit(RunEvent::Warning(RunWarning::Stalled {
            last_step, action, ..
        })) => Some(format!(
            "stalled {} {}",
            last_step.map_or_else(|| "none".to_owned(), |(step, _)| step.to_string()),
            action.name()
        )),
        Effect::Emit(RunEvent::Warning(RunWarning::StallEnded { step, .. })) => {
            Some(format!("resumed {step:?}"))
        }
        Effect::Emit(RunEvent::Warning(RunWarning::SnapshotOverdue { .. })) => {
            Some("overdue".into())
        }
        Effect::RequestSnapshot(reason) => Some(format!("request {}", reason.trim())),
        Effect::CancelJob => Some("cancel".into()),
        Effect::Save => Some("save".into()),
        _ => None,
    }
}

fn labels(effects: &[Effect]) -> Vec<String> {
    effects.iter().filter_map(label).collect()
}

/// A follower under `on_stall` whose job wrote two steps at ts 1000 and 1001 at time 0
/// (so the 10-minute floor is the bound); `requested`: `train stop` placed a request.
fn two_steps(on_stall: OnStall, requested: bool) -> RunState {
    steps(on_stall, requested, 1)
}

/// As [`two_steps`], the second step `took` seconds after the first.
fn steps(on_stall: OnStall, requested: bool, took: u64) -> RunState {
    let policy = crate::train::stall::Policy {
        on_stall,
        ..Default::default()
    };
    let rules = Rules::default().with_stall(&policy, crate::env::TimeScale::REAL);
    let mut state = RunState::new(record(), rules, requested);
    state.began = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let _ = handle(
        &mut state,
        poll(
            0,
            vec![train(1, 1000), train(2, 1000 + took)],
            JobStatus::Running,
        ),
    );
    state
}

#[test]
fn a_stall_is_warned_recorded_and_acted_on_as_on_stall_says() {
    let rows: [(OnStall, &[&str]); 3] = [
        (OnStall::Warn, &["save", "stalled 2 warn"]),
        (
            OnStall::Snapshot,
            &["save", "stalled 2 snapshot", "request stall"],
        ),
        (OnStall::Cancel, &["save", "stalled 2 cancel", "cancel"]),
    ];
    for (on_stall, expected) in rows {
        let mut state = two_steps(on_stall, false);
        let quiet = labels(&handle(&mut state, poll(599, vec![], JobStatus::Running)));
        assert!(!quiet.iter().any(|l| l.starts_with("stalled")), "{quiet:?}");
        let effects = labels(&handle(&mut state, poll(600, vec![], JobStatus::Running)));
        assert_eq!(effects, expected, "{on_stall:?}");
        let stalled = state.record.stalled.clone().expect("recorded");
        assert_eq!(stalled.last_step, Some(2));
        assert_eq!(
            stalled.last_step_at,
            Some(jiff::Timestamp::from_second(1001).unwrap())
        );
        assert_eq!(
            stalled.at,
            jiff::Timestamp::from_second(1_800_000_600).unwrap()
        );
        assert!((stalled.silent_seconds - 600.0).abs() < 1e-9);
        assert_eq!(stalled.on_stall, on_stall);
        // Declared once: the next polls say nothing more about it.
        let later = labels(&handle(&mut state, poll(610, vec![], JobStatus::Running)));
        assert_eq!(later, ["save"], "{on_stall:?}");
    }
}

#[test]
fn a_stall_snapshot_is_held_to_run_28_and_ends_stopped_with_reason_stall() {
    let mut state = two_steps(OnStall::Snapshot, false);
    let _ = handle(&mut state, poll(600, vec![], JobStatus::Running));
    // Still no snapshot 30 minutes after the request: cancelled (RUN-28).
    let overdue = labels(&handle(&mut state, poll(2401, vec![], JobStatus::Running)));
    assert!(overdue.contains(&"overdue".to_owned()), "{overdue:?}");
    assert!(overdue.contains(&"cancel".to_owned()), "{overdue:?}");
    // A job that honours it stops with the stall as its reason.
    let mut state = two_steps(OnStall::Snapshot, false);
    let _ = handle(&mut state, poll(600, vec![], JobStatus::Running));
    let snapshot = r#"{"kind": "snapshot", "ts": 1700, "step": 2, "checkpoint": "checkpoint-2", "reason": "stall"}"#;
    let _ = handle(
        &mut state,
        poll(700, vec![snapshot.to_owned()], JobStatus::Exited(0)),
    );
    for event in [
        Event::Drained {
            lines: Vec::new(),
            rest: Vec::new(),
        },
        Event::Retrieved(Ok(())),
        Event::CheckpointChecked(Vec::new()),
    ] {
        let _ = handle(&mut state, event);
    }
    assert_eq!(state.record.state, State::Stopped);
    assert_eq!(
        state.record.snapshot.as_ref().map(|s| s.reason),
        Some(SnapshotReason::Stall)
    );
}

#[test]
fn a_job_cancelled_for_its_stall_is_recorded_cancelled_with_the_stall_as_cause() {
    let mut state = two_steps(OnStall::Cancel, false);
    let _ = handle(&mut state, poll(600, vec![], JobStatus::Running));
    let _ = handle(&mut state, poll(601, vec![], JobStatus::Cancelled));
    for event in [
        Event::Drained {
            lines: Vec::new(),
            rest: Vec::new(),
        },
        Event::SnapshotFile(None),
        Event::Leftovers(Ok(Vec::new())),
        Event::Retrieved(Ok(())),
    ] {
        let _ = handle(&mut state, event);
    }
    assert_eq!(state.record.state, State::Cancelled);
    let message = state.record.message.clone().unwrap_or_default();
    assert!(
        message.contains("stalled after step 2") && message.contains("on_stall"),
        "{message}"
    );
}

#[test]
fn progress_after_a_stall_is_said_and_the_next_stall_is_declared_again() {
    let mut state = two_steps(OnStall::Warn, false);
    let _ = handle(&mut state, poll(600, vec![], JobStatus::Running));
    let resumed = labels(&handle(
        &mut state,
        poll(650, vec![train(3, 1650)], JobStatus::Running),
    ));
    assert!(
        resumed.contains(&"resumed Some(3)".to_owned()),
        "{resumed:?}"
    );
    let again = labels(&handle(&mut state, poll(1250, vec![], JobStatus::Running)));
    assert!(again.contains(&"stalled 3 warn".to_owned()), "{again:?}");
}

#[test]
fn a_slow_but_progressing_job_is_never_flagged_and_a_pending_request_owns_the_job() {
    // Steps of 12 minutes (over the 10-minute floor), polled every 30 s, for 10 hours.
    let mut state = steps(OnStall::Cancel, false, 720);
    let mut step = 2;
    for at in (30..36_000).step_by(30) {
        let metrics = if at % 720 == 0 {
            step += 1;
            vec![train(step, 1720 + at)]
        } else {
            Vec::new()
        };
        let effects = labels(&handle(&mut state, poll(at, metrics, JobStatus::Running)));
        assert!(effects.iter().all(|l| l == "save"), "at {at}: {effects:?}");
    }
    assert!(state.record.stalled.is_none());
    // `train stop` placed a request: RUN-28 decides, no stall is declared.
    let mut state = two_steps(OnStall::Cancel, true);
    let effects = labels(&handle(&mut state, poll(1000, vec![], JobStatus::Running)));
    assert!(
        !effects.iter().any(|l| l.starts_with("stalled")),
        "{effects:?}"
    );
}

#[test]
fn a_job_queued_past_the_first_step_bound_is_pending_not_stalled_and_its_clock_starts_when_it_runs()
{
    // Issue 33: `on_stall = "cancel"`, the 30-minute first-step bound, two hours in the
    // queue, polled every 30 s.
    let policy = crate::train::stall::Policy {
        on_stall: OnStall::Cancel,
        ..Default::default()
    };
    let rules = Rules::default().with_stall(&policy, crate::env::TimeScale::REAL);
    let mut state = RunState::new(record(), rules, false);
    for at in (0..=7200).step_by(30) {
        let effects = labels(&handle(&mut state, queued_poll(at)));
        assert!(effects.iter().all(|l| l == "save"), "at {at}: {effects:?}");
        assert_eq!(state.record.state, State::Pending, "at {at}");
    }
    assert!(state.record.stalled.is_none());
    // It runs: the first-step bound counts from now.
    let started = labels(&handle(&mut state, poll(7230, vec![], JobStatus::Running)));
    assert!(started.iter().all(|l| l == "save"), "{started:?}");
    assert_eq!(state.record.state, State::Running);
    assert_eq!(state.record.message, None);
    let quiet = labels(&handle(
        &mut state,
        poll(7230 + 1799, vec![], JobStatus::Running),
    ));
    assert!(!quiet.iter().any(|l| l.starts_with("stalled")), "{quiet:?}");
    let stalled = labels(&handle(
        &mut state,
        poll(7230 + 1800, vec![], JobStatus::Running),
    ));
    assert_eq!(stalled, ["save", "stalled none cancel", "cancel"]);
}

// A trial's `stall_minutes = 0.05` was said as "0.1 minutes": seconds under two
// minutes, minutes with one decimal above.
#[test]
fn a_silence_is_said_in_seconds_under_two_minutes_then_in_minutes() {
    for (seconds, said) in [
        (3.0, "3 s"),
        (4.4, "4 s"),
        (119.0, "119 s"),
        (120.0, "2.0 minutes"),
        (630.0, "10.5 minutes"),
    ] {
        assert_eq!(super::silence_text(seconds), said, "{seconds}");
    }
}

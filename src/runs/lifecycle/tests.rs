//! Table tests of the run lifecycle: each row a state, an event and the effects it
//! gives, with the record's state after it. Together they cover every transition of
//! `run.json`'s states that a follower makes.

use super::*;
use crate::exec::Pid;
use crate::runs::record::TargetKind;

mod ending_rows;

const TRAIN: &str = r#"{"kind":"train","ts":1,"step":1,"max_steps":2,"epoch":0.5,"loss":1.5,"learning_rate":0.001,"grad_norm":1.0}"#;
const END: &str = r#"{"kind":"end","ts":2,"step":2}"#;
const SNAPSHOT: &str = r#"{"kind":"snapshot","ts":2,"step":1,"checkpoint":"checkpoint-1"}"#;
const MERGE_STAGE: &str = r#"{"kind":"stage","ts":3,"stage":"merge"}"#;

/// A followed run on an `ssh` target, its job a process, merged after training.
pub(super) fn record(state: State) -> RunRecord {
    RunRecord {
        target: "gpu".into(),
        target_kind: TargetKind::Ssh,
        job: Some(
            crate::exec::JobId {
                dir: "/w/r_1".into(),
                pid: Pid::new(42).unwrap(),
                container: None,
            }
            .into(),
        ),
        merge: true,
        ..crate::runs::record::fixture("r_1", state)
    }
}

/// A short name of an effect, for the tables.
fn label(effect: &Effect) -> String {
    match effect {
        Effect::Emit(RunEvent::Following { .. }) => "following".into(),
        Effect::Emit(RunEvent::Phase(phase)) => format!("phase {phase}"),
        Effect::Emit(RunEvent::Train(line)) => format!("train step {}", line.step),
        Effect::Emit(RunEvent::Eval(line)) => format!("eval step {}", line.step),
        Effect::Emit(RunEvent::Sample(_)) => "sample".into(),
        Effect::Emit(RunEvent::JobLog(line)) => format!("log {line}"),
        Effect::Emit(RunEvent::Pod(notice)) => format!("pod {notice:?}"),
        Effect::Emit(RunEvent::Scheduler(note)) => format!("scheduler {note}"),
        Effect::Emit(RunEvent::Pending(note)) => format!("pending: {note}"),
        Effect::Emit(RunEvent::Started) => "started".into(),
        Effect::Emit(RunEvent::Upload(summary)) => format!("upload {summary}"),
        Effect::Emit(RunEvent::Warning(warning)) => match warning {
            RunWarning::Unreachable {
                failures, limit, ..
            } => format!("warn unreachable {failures}/{limit}"),
            RunWarning::Metrics(_) => "warn metrics".into(),
            RunWarning::SnapshotOverdue { .. } => "warn overdue".into(),
            RunWarning::CancelFailed { .. } => "warn cancel failed".into(),
            RunWarning::LeftoversUnreadable { .. } => "warn leftovers unreadable".into(),
            other => format!("warn {other:?}"),
        },
        Effect::Save => "save".into(),
        Effect::Poll => "poll".into(),
        Effect::Sample => "probe".into(),
        Effect::CheckRequest => "check request".into(),
        Effect::CancelJob => "cancel".into(),
        Effect::RequestSnapshot(reason) => format!("request {}", reason.trim()),
        Effect::Wait(pause) => {
            assert_eq!(*pause, Rules::default().poll_interval);
            "wait".into()
        }
        Effect::Drain => "drain".into(),
        Effect::ReadSnapshotFile => "read snapshot.json".into(),
        Effect::ReadLeftovers => "read leftovers".into(),
        Effect::Retrieve { checkpoint, skip } => {
            format!("retrieve {checkpoint:?} skip {skip:?}")
        }
        Effect::CheckCheckpoint(name) => format!("check {name}"),
        Effect::PointAtLog { last } => format!("point at log last={last}"),
        Effect::Detach(DetachReason::Interrupted) => "detach interrupted".into(),
        Effect::Detach(DetachReason::Unreachable { times, .. }) => {
            format!("detach unreachable {times}")
        }
        Effect::End => "end".into(),
        Effect::Fail => "fail".into(),
    }
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn lines(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|s| (*s).to_owned()).collect()
}

fn poll(at: u64, metrics: &[&str], status: JobStatus) -> Event {
    Event::Polled {
        at: secs(at),
        metrics: Ok(lines(metrics)),
        log: Vec::new(),
        status: Ok(status),
        queued: None,
    }
}

/// A poll that finds the job waiting in the scheduler's queue, for `reason`.
fn queued_poll(at: u64, reason: &str) -> Event {
    Event::Polled {
        at: secs(at),
        metrics: Ok(Vec::new()),
        log: Vec::new(),
        status: Ok(JobStatus::Running),
        queued: Some(format!("pending on Slurm ({reason})")),
    }
}

fn unreachable_poll(at: u64) -> Event {
    Event::Polled {
        at: secs(at),
        metrics: Ok(Vec::new()),
        log: Vec::new(),
        status: Err("ssh: connection refused".into()),
        queued: None,
    }
}

/// A follower whose job waits in the queue for `Resources` since time 1.
fn queued() -> RunState {
    let mut state = following();
    let _ = handle(&mut state, queued_poll(1, "Resources"));
    state
}

/// A follower after its first round at time 0 (sample and request check taken).
fn following() -> RunState {
    let mut state = RunState::new(record(State::Running), Rules::default(), false);
    let _ = handle(&mut state, poll(0, &[], JobStatus::Running));
    state
}

/// A follower whose job ended with `status` after `metrics`, fed `events` since.
fn ending(status: JobStatus, metrics: &[&str], events: Vec<Event>) -> RunState {
    let mut state = following();
    let _ = handle(&mut state, poll(1, metrics, JobStatus::Running));
    let _ = handle(&mut state, poll(2, &[], status));
    for event in events {
        let _ = handle(&mut state, event);
    }
    state
}

fn drained() -> Event {
    Event::Drained {
        lines: Vec::new(),
        rest: Vec::new(),
    }
}

struct Row {
    name: &'static str,
    state: RunState,
    event: Event,
    effects: &'static [&'static str],
    /// The record's state after the event, and a part of its message.
    after: (State, Option<&'static str>),
    step: Step,
}

/// Every row: [`following_rows`], then `ending_rows` (`tests/ending_rows.rs`).
fn rows() -> Vec<Row> {
    let mut rows = following_rows();
    rows.extend(ending_rows::rows());
    rows
}

/// The rows of a follower while its job runs: polls, the queue, failed reaches,
/// Ctrl-C and the cancels of an overstaying job.
#[allow(clippy::too_many_lines, reason = "one table")]
fn following_rows() -> Vec<Row> {
    let mut failing_five = following();
    for at in 1..=5 {
        let _ = handle(&mut failing_five, unreachable_poll(at));
    }
    let mut failing_one = following();
    let _ = handle(&mut failing_one, unreachable_poll(1));
    let mut requested = RunState::new(record(State::Running), Rules::default(), true);
    let _ = handle(&mut requested, poll(0, &[], JobStatus::Running));
    let mut snapshot_saved = following();
    let _ = handle(
        &mut snapshot_saved,
        poll(5, &[SNAPSHOT], JobStatus::Running),
    );
    vec![
        Row {
            name: "the follower begins and polls",
            state: RunState::new(record(State::Running), Rules::default(), false),
            event: Event::Began,
            effects: &["following", "poll"],
            after: (State::Running, None),
            step: Step::Following,
        },
        Row {
            name: "the first round samples and looks for a request",
            state: RunState::new(record(State::Running), Rules::default(), false),
            event: Event::Polled {
                at: secs(0),
                metrics: Ok(lines(&[TRAIN])),
                log: lines(&["loading"]),
                status: Ok(JobStatus::Running),
                queued: None,
            },
            effects: &[
                "phase training",
                "train step 1",
                "log loading",
                "probe",
                "check request",
                "wait",
            ],
            after: (State::Running, None),
            step: Step::Following,
        },
        Row {
            name: "a quiet round only waits",
            state: following(),
            event: poll(1, &[], JobStatus::Running),
            effects: &["wait"],
            after: (State::Running, None),
            step: Step::Following,
        },
        Row {
            name: "the summary is saved every 10 s, samples too",
            state: following(),
            event: poll(10, &[], JobStatus::Running),
            effects: &["probe", "save", "wait"],
            after: (State::Running, None),
            step: Step::Following,
        },
        Row {
            name: "another process's request is looked for every 30 s",
            state: following(),
            event: poll(30, &[], JobStatus::Running),
            effects: &["probe", "check request", "save", "wait"],
            after: (State::Running, None),
            step: Step::Following,
        },
        Row {
            name: "a job waiting in the queue: running -> pending with the scheduler's reason, saved",
            state: following(),
            event: queued_poll(1, "Resources"),
            effects: &["save", "pending: pending on Slurm (Resources)", "wait"],
            after: (State::Pending, Some("pending on Slurm (Resources)")),
            step: Step::Following,
        },
        Row {
            name: "a queued job's new reason: pending -> pending, saved and said",
            state: queued(),
            event: queued_poll(2, "Priority"),
            effects: &["save", "pending: pending on Slurm (Priority)", "wait"],
            after: (State::Pending, Some("pending on Slurm (Priority)")),
            step: Step::Following,
        },
        Row {
            name: "the same reason again only waits",
            state: queued(),
            event: queued_poll(2, "Resources"),
            effects: &["wait"],
            after: (State::Pending, Some("pending on Slurm (Resources)")),
            step: Step::Following,
        },
        Row {
            name: "the job leaves the queue: pending -> running, saved and said",
            state: queued(),
            event: poll(2, &[], JobStatus::Running),
            effects: &["save", "started", "wait"],
            after: (State::Running, None),
            step: Step::Following,
        },
        Row {
            name: "a run recorded pending at its submission runs at the first poll that sees it run",
            state: RunState::new(record(State::Pending), Rules::default(), false),
            event: poll(0, &[], JobStatus::Running),
            effects: &["save", "started", "probe", "check request", "wait"],
            after: (State::Running, None),
            step: Step::Following,
        },
        Row {
            name: "a follower attached to a pending run says so once and saves nothing new",
            state: {
                let mut record = record(State::Pending);
                record.message = Some("pending on Slurm (Resources)".into());
                let mut state = RunState::new(record, Rules::default(), false);
                let _ = handle(&mut state, queued_poll(0, "Resources"));
                state
            },
            event: queued_poll(1, "Resources"),
            effects: &["wait"],
            after: (State::Pending, Some("pending on Slurm (Resources)")),
            step: Step::Following,
        },
        Row {
            name: "an attach to a pending run: its first poll says it is pending, no save",
            state: {
                let mut record = record(State::Pending);
                record.message = Some("pending on Slurm (Resources)".into());
                RunState::new(record, Rules::default(), false)
            },
            event: queued_poll(0, "Resources"),
            effects: &[
                "pending: pending on Slurm (Resources)",
                "probe",
                "check request",
                "wait",
            ],
            after: (State::Pending, Some("pending on Slurm (Resources)")),
            step: Step::Following,
        },
        Row {
            name: "a queued job that ended is drained, whatever the queue said",
            state: queued(),
            event: Event::Polled {
                at: secs(2),
                metrics: Ok(Vec::new()),
                log: Vec::new(),
                status: Ok(JobStatus::Cancelled),
                queued: Some("pending on Slurm (Resources)".into()),
            },
            effects: &["drain"],
            after: (State::Pending, Some("pending on Slurm (Resources)")),
            step: Step::Ending,
        },
        Row {
            name: "a failed reach of a queued job keeps it pending",
            state: queued(),
            event: unreachable_poll(2),
            effects: &["warn unreachable 1/6", "wait"],
            after: (State::Pending, Some("pending on Slurm (Resources)")),
            step: Step::Following,
        },
        Row {
            name: "a failed reach warns and waits",
            state: following(),
            event: unreachable_poll(1),
            effects: &["warn unreachable 1/6", "wait"],
            after: (State::Running, None),
            step: Step::Following,
        },
        Row {
            name: "a failed reach when a sample and a request check are due asks nothing more",
            state: following(),
            event: unreachable_poll(30),
            effects: &["warn unreachable 1/6", "wait"],
            after: (State::Running, None),
            step: Step::Following,
        },
        Row {
            name: "six failed reaches detach, the record kept running",
            state: failing_five,
            event: unreachable_poll(6),
            effects: &["warn unreachable 6/6", "save", "detach unreachable 6"],
            after: (State::Running, None),
            step: Step::Detached,
        },
        Row {
            name: "a reach between failures starts the count again",
            state: failing_one,
            event: poll(2, &[], JobStatus::Running),
            effects: &["wait"],
            after: (State::Running, None),
            step: Step::Following,
        },
        Row {
            name: "a Ctrl-C detaches, the record kept running",
            state: following(),
            event: Event::Interrupted,
            effects: &["save", "detach interrupted"],
            after: (State::Running, None),
            step: Step::Detached,
        },
        Row {
            name: "the pause ends with a poll",
            state: following(),
            event: Event::Woke,
            effects: &["poll"],
            after: (State::Running, None),
            step: Step::Following,
        },
        Row {
            name: "a job that overstays its snapshot request is cancelled",
            state: requested,
            event: poll(30 * 60 + 1, &[], JobStatus::Running),
            effects: &["probe", "warn overdue", "cancel", "save", "wait"],
            after: (State::Running, None),
            step: Step::Following,
        },
        Row {
            name: "a job that does not end after its snapshot is cancelled",
            state: snapshot_saved,
            event: poll(5 + 10 * 60 + 1, &[], JobStatus::Running),
            effects: &[
                "probe",
                "check request",
                "warn overdue",
                "cancel",
                "save",
                "wait",
            ],
            after: (State::Running, None),
            step: Step::Following,
        },
        Row {
            name: "a failed cancel warns",
            state: following(),
            event: Event::CancelFailed("gone".into()),
            effects: &["warn cancel failed"],
            after: (State::Running, None),
            step: Step::Following,
        },
    ]
}

#[test]
fn each_state_and_event_gives_its_effects_and_record() {
    let mut wrong = Vec::new();
    for mut row in rows() {
        let effects: Vec<String> = handle(&mut row.state, row.event)
            .iter()
            .map(label)
            .collect();
        let (state, message) = row.after;
        let text = row.state.record.message.clone().unwrap_or_default();
        if effects != row.effects
            || row.state.step != row.step
            || row.state.record.state != state
            || message.is_some_and(|part| !text.contains(part))
        {
            wrong.push(format!(
                "{}: effects {effects:?}, step {:?}, record {:?} ({text})",
                row.name, row.state.step, row.state.record.state
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_stopped_run_records_its_snapshot_and_step() {
    let mut state = ending(
        JobStatus::Exited(0),
        &[TRAIN, SNAPSHOT],
        vec![drained(), Event::Retrieved(Ok(()))],
    );
    let _ = handle(&mut state, Event::CheckpointChecked(vec![]));
    let record = &state.record;
    assert!(record.retrieved);
    assert_eq!(
        record.snapshot,
        Some(Snapshot {
            checkpoint: "checkpoint-1".into(),
            step: 1,
            reason: SnapshotReason::Requested,
        })
    );
    assert_eq!(record.last_step, Some(1));
    assert_eq!(record.last_loss, Some(1.5));
}

#[test]
fn a_snapshot_of_a_pod_rule_records_the_reason_its_line_gives() {
    const COST: &str =
        r#"{"kind":"snapshot","ts":2,"step":1,"checkpoint":"checkpoint-1","reason":"cost"}"#;
    let mut state = ending(
        JobStatus::Exited(0),
        &[TRAIN, COST],
        vec![drained(), Event::Retrieved(Ok(()))],
    );
    let _ = handle(&mut state, Event::CheckpointChecked(vec![]));
    assert_eq!(
        state.record.snapshot.map(|s| s.reason),
        Some(SnapshotReason::Cost)
    );
}

#[test]
fn a_cancel_seen_by_train_cancel_is_collected_from_the_summary() {
    let summary = Summary {
        plugin_seen: true,
        last_step: Some(4),
        ..Summary::default()
    };
    let mut state = RunState::ended(record(State::Running), summary);
    let effects: Vec<String> = handle(&mut state, Event::JobEnded(JobStatus::Cancelled))
        .iter()
        .map(label)
        .collect();
    assert_eq!(
        effects,
        ["phase retrieving results", "read snapshot.json"],
        "{effects:?}"
    );
    let _ = handle(&mut state, Event::SnapshotFile(None));
    let _ = handle(&mut state, Event::Leftovers(Ok(vec![])));
    let effects: Vec<String> = handle(&mut state, Event::Retrieved(Ok(())))
        .iter()
        .map(label)
        .collect();
    assert_eq!(effects, ["save", "end"]);
    assert_eq!(state.record.state, State::Cancelled);
    assert_eq!(state.record.last_step, Some(4));
}

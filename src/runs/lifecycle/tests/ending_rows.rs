//! The lifecycle table's rows once the job ended: the drain, the retrieval, and each
//! way a run ends (succeeded, failed, `merge_failed`, cancelled, stopped).

use super::{END, MERGE_STAGE, Row, SNAPSHOT, TRAIN, drained, ending, following, lines, poll};
use crate::exec::JobStatus;
use crate::runs::lifecycle::{Event, Step};
use crate::runs::record::State;

/// The rows of a follower from the job's end to the record's last state.
#[allow(clippy::too_many_lines, reason = "one table")]
pub(super) fn rows() -> Vec<Row> {
    vec![
        Row {
            name: "a finished job is drained first",
            state: following(),
            event: poll(3, &[TRAIN], JobStatus::Exited(0)),
            effects: &["phase training", "train step 1", "drain"],
            after: (State::Running, None),
            step: Step::Ending,
        },
        Row {
            name: "after the drain, snapshot.json is read when no line named one",
            state: ending(JobStatus::Exited(0), &[TRAIN], vec![]),
            event: Event::Drained {
                lines: lines(&[END]),
                rest: Vec::new(),
            },
            effects: &[
                "phase finalizing (saving model)",
                "phase retrieving results",
                "read snapshot.json",
            ],
            after: (State::Running, None),
            step: Step::Ending,
        },
        Row {
            name: "a succeeded job is retrieved whole",
            state: ending(JobStatus::Exited(0), &[TRAIN, END], vec![drained()]),
            event: Event::SnapshotFile(None),
            effects: &["retrieve None skip []"],
            after: (State::Running, None),
            step: Step::Ending,
        },
        Row {
            name: "running -> succeeded once retrieved",
            state: ending(
                JobStatus::Exited(0),
                &[TRAIN, END],
                vec![drained(), Event::SnapshotFile(None)],
            ),
            event: Event::Retrieved(Ok(())),
            effects: &["save", "end"],
            after: (State::Succeeded, None),
            step: Step::Ended,
        },
        Row {
            name: "a retrieval mismatch stays pending: running -> running",
            state: ending(
                JobStatus::Exited(0),
                &[TRAIN, END],
                vec![drained(), Event::SnapshotFile(None)],
            ),
            event: Event::Retrieved(Err("`output/a` differs from the target".into())),
            effects: &["save", "fail"],
            after: (
                State::Running,
                Some("results pending retrieval: `output/a` differs"),
            ),
            step: Step::Pending,
        },
        Row {
            name: "running -> failed: a non-zero exit points at the log",
            state: ending(
                JobStatus::Exited(1),
                &[TRAIN],
                vec![
                    drained(),
                    Event::SnapshotFile(None),
                    Event::Retrieved(Ok(())),
                ],
            ),
            event: Event::LogPointer("; `runs/r_1/job.log` lines 3-4: OSError: x".into()),
            effects: &["save", "end"],
            after: (
                State::Failed,
                Some("exited with code 1; `runs/r_1/job.log` lines 3-4"),
            ),
            step: Step::Ended,
        },
        Row {
            name: "running -> failed: a lost job",
            state: ending(
                JobStatus::Lost,
                &[TRAIN],
                vec![
                    drained(),
                    Event::SnapshotFile(None),
                    Event::Retrieved(Ok(())),
                ],
            ),
            event: Event::LogPointer("; see `runs/r_1/job.log`".into()),
            effects: &["save", "end"],
            after: (State::Failed, Some("the job was lost")),
            step: Step::Ended,
        },
        Row {
            name: "running -> failed: no metric line",
            state: ending(
                JobStatus::Exited(0),
                &[],
                vec![drained(), Event::SnapshotFile(None)],
            ),
            event: Event::Retrieved(Ok(())),
            effects: &["save", "end"],
            after: (State::Failed, Some("wrote no metric line")),
            step: Step::Ended,
        },
        Row {
            name: "a failed merge is retrieved without its partial output",
            state: ending(
                JobStatus::Exited(1),
                &[TRAIN, END, MERGE_STAGE],
                vec![drained()],
            ),
            event: Event::SnapshotFile(None),
            effects: &["retrieve None skip [\"merged\"]"],
            after: (State::Running, None),
            step: Step::Ending,
        },
        Row {
            name: "running -> merge_failed: the last root cause counts",
            state: ending(
                JobStatus::Exited(1),
                &[TRAIN, END, MERGE_STAGE],
                vec![drained(), Event::SnapshotFile(None)],
            ),
            event: Event::Retrieved(Ok(())),
            effects: &["point at log last=true"],
            after: (State::Running, None),
            step: Step::Ending,
        },
        Row {
            name: "a cancelled marker wins: its leftovers are read",
            state: ending(JobStatus::Cancelled, &[TRAIN, END], vec![drained()]),
            event: Event::SnapshotFile(None),
            effects: &["read leftovers"],
            after: (State::Running, None),
            step: Step::Ending,
        },
        Row {
            name: "running -> cancelled",
            state: ending(
                JobStatus::Cancelled,
                &[TRAIN, END],
                vec![
                    drained(),
                    Event::SnapshotFile(None),
                    Event::Leftovers(Ok(vec![])),
                ],
            ),
            event: Event::Retrieved(Ok(())),
            effects: &["save", "end"],
            after: (State::Cancelled, Some("cancelled with `train cancel`")),
            step: Step::Ended,
        },
        Row {
            name: "running -> cancelled with leftovers",
            state: ending(
                JobStatus::Cancelled,
                &[TRAIN],
                vec![
                    drained(),
                    Event::SnapshotFile(None),
                    Event::Leftovers(Ok(vec![7, 9])),
                ],
            ),
            event: Event::Retrieved(Ok(())),
            effects: &["save", "end"],
            after: (State::Cancelled, Some("cancelled with leftovers: 7 9;")),
            step: Step::Ended,
        },
        Row {
            name: "unreadable leftovers warn, the cancel counts",
            state: ending(
                JobStatus::Cancelled,
                &[TRAIN],
                vec![drained(), Event::SnapshotFile(None)],
            ),
            event: Event::Leftovers(Err("ps failed".into())),
            effects: &["warn leftovers unreadable", "retrieve None skip []"],
            after: (State::Running, None),
            step: Step::Ending,
        },
        Row {
            name: "a snapshot named by a line retrieves its checkpoint",
            state: ending(JobStatus::Exited(0), &[TRAIN, SNAPSHOT], vec![]),
            event: drained(),
            effects: &[
                "phase retrieving results",
                "retrieve Some(\"checkpoint-1\") skip []",
            ],
            after: (State::Running, None),
            step: Step::Ending,
        },
        Row {
            name: "a snapshot found in snapshot.json counts as one",
            state: ending(JobStatus::Exited(0), &[TRAIN], vec![drained()]),
            event: Event::SnapshotFile(Some((1, "checkpoint-1".into()))),
            effects: &["retrieve Some(\"checkpoint-1\") skip []"],
            after: (State::Running, None),
            step: Step::Ending,
        },
        Row {
            name: "a retrieved snapshot checkpoint is checked",
            state: ending(JobStatus::Exited(0), &[TRAIN, SNAPSHOT], vec![drained()]),
            event: Event::Retrieved(Ok(())),
            effects: &["check checkpoint-1"],
            after: (State::Running, None),
            step: Step::Ending,
        },
        Row {
            name: "running -> stopped at a complete checkpoint",
            state: ending(
                JobStatus::Exited(0),
                &[TRAIN, SNAPSHOT],
                vec![drained(), Event::Retrieved(Ok(()))],
            ),
            event: Event::CheckpointChecked(vec![]),
            effects: &["save", "end"],
            after: (State::Stopped, None),
            step: Step::Ended,
        },
        Row {
            name: "running -> failed at an incomplete checkpoint",
            state: ending(
                JobStatus::Exited(0),
                &[TRAIN, SNAPSHOT],
                vec![drained(), Event::Retrieved(Ok(()))],
            ),
            event: Event::CheckpointChecked(vec!["optimizer.pt".into()]),
            effects: &["save", "end"],
            after: (State::Failed, Some("it lacks optimizer.pt")),
            step: Step::Ended,
        },
        Row {
            name: "a Ctrl-C while collecting is too late: the run is collected",
            state: ending(JobStatus::Exited(0), &[TRAIN, END], vec![]),
            event: Event::Interrupted,
            effects: &[],
            after: (State::Running, None),
            step: Step::Ending,
        },
    ]
}

//! The changes of `run.json`'s state made outside a follower, pure: a start
//! (`starting` -> `running`, `pending` or `failed`), a second cancel of a run whose cancel left
//! processes behind (`cancelled` -> `cancelled`), and `train merge` of a
//! `merge_failed` run (-> `merge_failed` or `succeeded`). The follower's transitions
//! are [`super::handle`]'s. Each function changes the record only; the caller saves it.

use crate::exec::{EXIT_FILE, JOB_LOG, JobHandle, JobStatus, pid_list};
use crate::runs::ending::{leftovers_message, merge_hint};
use crate::runs::record::{RunRecord, State};
use crate::train::axolotl::{MERGED_DIR, OUTPUT_DIR};

/// The run's job started: `starting` -> `running` (RUN-15); a Slurm job, which
/// `sbatch` only queued: `starting` -> `pending` until a follower sees it run (issue
/// 33).
pub fn started(record: &mut RunRecord, job: JobHandle) {
    if let Some(slurm_job) = job.slurm_job() {
        record.state = State::Pending;
        record.message = Some(format!(
            "submitted as Slurm job {slurm_job}; pending until the scheduler starts it"
        ));
    } else {
        record.state = State::Running;
    }
    record.job = Some(job);
}

/// The start failed after the run directory existed: `starting` -> `failed`, the
/// message giving `cause` (RUN-14).
pub fn start_failed(record: &mut RunRecord, cause: &str) {
    record.state = State::Failed;
    record.message = Some(format!("start failed: {cause}"));
}

/// The run's pod was deleted under a rule (`max_hours`, `max_cost_usd`, the retrieve
/// grace) or vanished while its job ran and nothing was retrieved: `running` ->
/// `failed`, the message saying why (POD-37, POD-41); the job is gone with the pod.
pub fn pod_lost(record: &mut RunRecord, why: &str) {
    record.state = State::Failed;
    record.message = Some(why.to_owned());
}

/// A second `train cancel` of a run whose cancel left processes behind signalled them
/// again: `cancelled` -> `cancelled`, the message naming what is still left (RUN-41).
pub fn cancelled_again(record: &mut RunRecord, leftovers: &[u32]) {
    record.state = State::Cancelled;
    record.message = Some(if leftovers.is_empty() {
        "cancelled with `train cancel`".to_owned()
    } else {
        leftovers_message(&record.id, leftovers)
    });
}

/// `train merge` started the merge job `job` in `runs/<id>/<dir_name>`: the run stays
/// `merge_failed`, recording the job \[design\].
pub fn merge_started(record: &mut RunRecord, job: JobHandle, dir_name: &str) {
    record.merge_job = Some(job);
    record.message = Some(format!(
        "a merge started with `train merge` runs in `runs/{id}/{dir_name}`; `overbrainer train merge {id}` follows it",
        id = record.id
    ));
}

/// `train cancel` cancelled the running merge job: the run stays `merge_failed`, the
/// adapter its usable result \[design\].
pub fn merge_cancelled(record: &mut RunRecord, leftovers: &[u32]) {
    let left = if leftovers.is_empty() {
        String::new()
    } else {
        format!(
            " with leftovers: {} (they outlived SIGKILL on the target: stop them there)",
            pid_list(leftovers)
        )
    };
    record.message = Some(format!(
        "the merge started with `train merge` was cancelled with `train cancel`{left}; {}",
        merge_hint(&record.id)
    ));
}

/// How a `train merge` job ended, as its follower collected it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeEnd {
    /// It exited 0 and its merged model was retrieved and verified.
    Merged,
    /// It exited 0 but wrote nothing in `output/merged/`.
    Empty,
    /// It exited 0 but its result could not be retrieved: `reason`.
    Pending(String),
    /// It ended otherwise (`status`); `pointer` points into its `job.log`.
    Failed {
        /// How the job ended.
        status: JobStatus,
        /// The `; `-prefixed pointer into the merge's `job.log`.
        pointer: String,
    },
}

/// A `train merge` job in `runs/<id>/<dir_name>` ended as `end`: `merge_failed` ->
/// `succeeded` once merged, else the run stays `merge_failed` with the cause.
pub fn merge_ended(record: &mut RunRecord, dir_name: &str, end: &MergeEnd) {
    let id = record.id.clone();
    match end {
        MergeEnd::Merged => {
            record.state = State::Succeeded;
            record.message = None;
            record.merge_job = None;
        }
        MergeEnd::Empty => {
            record.message = Some(format!(
                "the merge in `runs/{id}/{dir_name}` exited 0 but wrote nothing in `{OUTPUT_DIR}/{MERGED_DIR}`; see `runs/{id}/{dir_name}/{JOB_LOG}`; {}",
                merge_hint(&id)
            ));
            record.merge_job = None;
        }
        MergeEnd::Pending(reason) => {
            record.message = Some(format!(
                "the merge in `runs/{id}/{dir_name}` succeeded; its result is pending retrieval: {reason}; `overbrainer train merge {id}` retries"
            ));
        }
        MergeEnd::Failed { status, pointer } => {
            let cause = match status {
                JobStatus::Exited(code) => {
                    format!("`axolotl merge-lora` exited with code {code}")
                }
                JobStatus::Cancelled => "the merge was cancelled".to_owned(),
                JobStatus::Lost | JobStatus::Running => {
                    format!("the merge was lost: it ended without writing `{dir_name}/{EXIT_FILE}`")
                }
            };
            record.message = Some(format!(
                "`train merge` failed: {cause}{pointer}; {}",
                merge_hint(&id)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::Pid;

    fn record(state: State) -> RunRecord {
        RunRecord {
            merge: true,
            retrieved: true,
            ..crate::runs::record::fixture("r_1", state)
        }
    }

    fn job(dir: &str) -> JobHandle {
        crate::exec::JobId {
            dir: dir.into(),
            pid: Pid::new(42).unwrap(),
            container: None,
        }
        .into()
    }

    type Change = Box<dyn Fn(&mut RunRecord)>;

    #[test]
    #[allow(clippy::too_many_lines, reason = "one table")]
    fn each_transition_outside_the_follower_gives_its_state_and_message() {
        let merge_job = job("/w/r_1/merge-1");
        let cases: Vec<(&str, State, Change, State, Option<&str>)> = vec![
            (
                "a started job",
                State::Starting,
                Box::new(|r| started(r, job("/w/r_1"))),
                State::Running,
                None,
            ),
            (
                "a submitted Slurm job waits in the queue",
                State::Starting,
                Box::new(|r| {
                    started(
                        r,
                        crate::exec::SlurmJob {
                            dir: "/w/r_1".into(),
                            container: None,
                            slurm_job: 7,
                        }
                        .into(),
                    );
                }),
                State::Pending,
                Some("submitted as Slurm job 7; pending until the scheduler starts it"),
            ),
            (
                "a failed start",
                State::Starting,
                Box::new(|r| start_failed(r, "target `gpu`: upload failed")),
                State::Failed,
                Some("start failed: target `gpu`: upload failed"),
            ),
            (
                "a pod deleted at its deadline under its job",
                State::Running,
                Box::new(|r| {
                    pod_lost(
                        r,
                        "`targets.pod.max_hours` was reached before the job ended; the pod was deleted",
                    );
                }),
                State::Failed,
                Some("`targets.pod.max_hours` was reached before the job ended"),
            ),
            (
                "a second cancel that stopped every leftover",
                State::Cancelled,
                Box::new(|r| cancelled_again(r, &[])),
                State::Cancelled,
                Some("cancelled with `train cancel`"),
            ),
            (
                "a second cancel with leftovers still",
                State::Cancelled,
                Box::new(|r| cancelled_again(r, &[7])),
                State::Cancelled,
                Some("cancelled with leftovers: 7;"),
            ),
            (
                "a merge started",
                State::MergeFailed,
                Box::new(move |r| merge_started(r, merge_job.clone(), "merge-1")),
                State::MergeFailed,
                Some("runs in `runs/r_1/merge-1`; `overbrainer train merge r_1` follows it"),
            ),
            (
                "a merge cancelled",
                State::MergeFailed,
                Box::new(|r| merge_cancelled(r, &[])),
                State::MergeFailed,
                Some(
                    "was cancelled with `train cancel`; the adapter in `runs/r_1/output` is usable",
                ),
            ),
            (
                "a merge cancelled with leftovers",
                State::MergeFailed,
                Box::new(|r| merge_cancelled(r, &[8, 9])),
                State::MergeFailed,
                Some("with leftovers: 8 9"),
            ),
            (
                "a merged model",
                State::MergeFailed,
                Box::new(|r| merge_ended(r, "merge-1", &MergeEnd::Merged)),
                State::Succeeded,
                None,
            ),
            (
                "a merge that wrote nothing",
                State::MergeFailed,
                Box::new(|r| merge_ended(r, "merge-1", &MergeEnd::Empty)),
                State::MergeFailed,
                Some("exited 0 but wrote nothing in `output/merged`"),
            ),
            (
                "a merged model pending retrieval",
                State::MergeFailed,
                Box::new(|r| merge_ended(r, "merge-1", &MergeEnd::Pending("differs".into()))),
                State::MergeFailed,
                Some("pending retrieval: differs; `overbrainer train merge r_1` retries"),
            ),
            (
                "a failed merge",
                State::MergeFailed,
                Box::new(|r| {
                    let end = MergeEnd::Failed {
                        status: JobStatus::Exited(1),
                        pointer: "; see `runs/r_1/merge-1/job.log`".into(),
                    };
                    merge_ended(r, "merge-1", &end);
                }),
                State::MergeFailed,
                Some("`axolotl merge-lora` exited with code 1; see `runs/r_1/merge-1/job.log`"),
            ),
            (
                "a merge cancelled under its follower",
                State::MergeFailed,
                Box::new(|r| {
                    let end = MergeEnd::Failed {
                        status: JobStatus::Cancelled,
                        pointer: String::new(),
                    };
                    merge_ended(r, "merge-1", &end);
                }),
                State::MergeFailed,
                Some("`train merge` failed: the merge was cancelled;"),
            ),
        ];
        for (name, from, change, to, message) in cases {
            let mut record = record(from);
            change(&mut record);
            assert_eq!(record.state, to, "{name}");
            match message {
                Some(part) => {
                    let text = record.message.clone().unwrap_or_default();
                    assert!(text.contains(part), "{name}: {text}");
                }
                None => assert_eq!(record.message, None, "{name}"),
            }
        }
    }

    #[test]
    fn a_merged_run_forgets_its_merge_job_and_a_pending_one_keeps_it() {
        let mut merged = record(State::MergeFailed);
        merge_started(&mut merged, job("/w/r_1/merge-1"), "merge-1");
        let mut pending = merged.clone();
        merge_ended(&mut merged, "merge-1", &MergeEnd::Merged);
        assert_eq!(merged.merge_job, None);
        merge_ended(&mut pending, "merge-1", &MergeEnd::Pending("x".into()));
        assert!(pending.merge_job.is_some());
    }
}

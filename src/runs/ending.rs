//! How a run ends (RUN-9): from the way its job ended and what its metric lines said,
//! to the run's final state and the parts of its message. Pure, with table tests; the
//! follower ([`super::follow::finish`]) performs the retrieval between the two steps:
//! [`ending`] before it (it decides what is retrieved), [`unresumable`] after it, when
//! the retrieved snapshot checkpoint lacks what a resume needs.
//!
//! Beyond the four terminal states of RUN-9 a run can end `merge_failed` \[design\]: the
//! job's last stage was `merge` (the job script writes that stage line only once
//! `axolotl train` exited 0) and it exited non-zero. The adapter is then the usable
//! result, retrieved as for a succeeded run except for the merge's partial
//! `output/merged/`, and `train merge RUN_ID` redoes the merge alone.
//!
//! A stopped run whose snapshot checkpoint is not complete is never recorded `stopped`
//! (which `train --resume-from` accepts): it ends `failed`, with a message naming what
//! the checkpoint lacks and saying that `output/` holds a partial model.

use super::record::State;
use crate::exec::JobStatus;
use crate::train::metrics::Stage;

/// How a job ended, as the follower saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobEnd<'a> {
    /// The job's status once finished.
    pub status: JobStatus,
    /// Whether the metrics plugin wrote any line (MPL-1).
    pub plugin_seen: bool,
    /// The snapshot the plugin saved, step and checkpoint directory name.
    pub snapshot: Option<(u64, &'a str)>,
    /// The last stage the job script started (MPL-2).
    pub last_stage: Option<Stage>,
    /// The processes a cancel left alive on the target (see
    /// [`crate::exec::Executor::leftovers`]); empty for none.
    pub leftovers: &'a [u32],
}

/// A run's final state and the parts of its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ending {
    /// The state to record.
    pub state: State,
    /// Why, first part of the message; empty for none.
    pub cause: String,
    /// Whether the message then points at the lines of `job.log` that say why.
    pub points_at_log: bool,
    /// What the user can do, last part of the message.
    pub hint: Option<String>,
}

impl Ending {
    fn new(state: State, cause: impl Into<String>) -> Self {
        Self {
            state,
            cause: cause.into(),
            points_at_log: false,
            hint: None,
        }
    }

    fn pointing(mut self) -> Self {
        self.points_at_log = true;
        self
    }

    fn hint(mut self, hint: String) -> Self {
        self.hint = Some(hint);
        self
    }

    /// The message: the cause, the `job.log` pointer when given (it starts with
    /// `; `), then the hint; `None` when all are empty.
    #[must_use]
    pub fn message(&self, pointer: Option<&str>) -> Option<String> {
        let mut text = self.cause.clone();
        if self.points_at_log {
            if let Some(pointer) = pointer {
                text.push_str(pointer);
            }
        }
        if let Some(hint) = &self.hint {
            if !text.is_empty() {
                text.push_str("; ");
            }
            text.push_str(hint);
        }
        (!text.is_empty()).then_some(text)
    }
}

/// The final state of run `run_id` whose job ended as `end` (RUN-9).
#[must_use]
pub fn ending(run_id: &str, end: &JobEnd<'_>) -> Ending {
    match end.status {
        JobStatus::Cancelled if !end.leftovers.is_empty() => {
            Ending::new(State::Cancelled, leftovers_message(run_id, end.leftovers))
        }
        JobStatus::Cancelled => Ending::new(State::Cancelled, "cancelled with `train cancel`"),
        JobStatus::Lost => Ending::new(
            State::Failed,
            "the job was lost: it ended without an exit code (killed, or its run directory is gone)",
        )
        .pointing(),
        JobStatus::Exited(0) if !end.plugin_seen => Ending::new(
            State::Failed,
            format!(
                "the job wrote no metric line: Axolotl did not load the metrics plugin; see `runs/{run_id}/job.log`"
            ),
        ),
        JobStatus::Exited(0) if end.snapshot.is_some() => Ending::new(State::Stopped, ""),
        JobStatus::Exited(0) | JobStatus::Running => Ending::new(State::Succeeded, ""),
        JobStatus::Exited(code)
            if end.plugin_seen && end.snapshot.is_none() && end.last_stage == Some(Stage::Merge) =>
        {
            Ending::new(
                State::MergeFailed,
                format!("training succeeded, then `axolotl merge-lora` exited with code {code}"),
            )
            .pointing()
            .hint(merge_hint(run_id))
        }
        // The shell's "command not found", before Axolotl ever ran: most often `axolotl`
        // itself is not where the job looks.
        JobStatus::Exited(127) if !end.plugin_seen => Ending::new(
            State::Failed,
            "the job exited with code 127: a command was not found where it runs, most often `axolotl`",
        )
        .pointing()
        .hint(
            "install Axolotl on the target, or set the target's `venv` to the virtual environment that has it"
                .to_owned(),
        ),
        JobStatus::Exited(code) => {
            Ending::new(State::Failed, format!("the job exited with code {code}")).pointing()
        }
    }
}

/// How a run's record begins its message when its cancel left processes behind: never
/// a clean cancel.
pub const LEFTOVERS_PREFIX: &str = "cancelled with leftovers: ";

/// The message of a run whose cancel left the processes `pids` alive on its target.
#[must_use]
pub fn leftovers_message(run_id: &str, pids: &[u32]) -> String {
    format!(
        "{LEFTOVERS_PREFIX}{}; these processes of the job outlived SIGKILL on the target (stuck in the kernel, such as a GPU driver, or owned by another user): stop them there, or run `overbrainer train cancel {run_id}` again",
        crate::exec::pid_list(pids)
    )
}

/// What a `merge_failed` run's message ends with.
#[must_use]
pub fn merge_hint(run_id: &str) -> String {
    format!(
        "the adapter in `runs/{run_id}/output` is usable; redo the merge alone with `overbrainer train merge {run_id}`"
    )
}

/// The final state of run `run_id` that stopped at `step` with the snapshot checkpoint
/// `checkpoint`, which lacks `missing` (see [`crate::train::checkpoint::missing`]):
/// `failed`, never `stopped`, so no resume starts from it.
#[must_use]
pub fn unresumable(run_id: &str, step: u64, checkpoint: &str, missing: &[String]) -> Ending {
    Ending::new(
        State::Failed,
        format!(
            "stopped at step {step}, but its snapshot checkpoint `{checkpoint}` cannot be resumed: it lacks {}",
            missing.join(", ")
        ),
    )
    .hint(format!(
        "`runs/{run_id}/output` holds a partial model at step {step}, not a finished one"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(
        status: JobStatus,
        plugin_seen: bool,
        snapshot: bool,
        stage: Option<Stage>,
    ) -> JobEnd<'static> {
        JobEnd {
            status,
            plugin_seen,
            snapshot: snapshot.then_some((3, "checkpoint-3")),
            last_stage: stage,
            leftovers: &[],
        }
    }

    #[test]
    fn every_way_a_job_ends_gives_its_state() {
        use JobStatus::{Cancelled, Exited, Lost, Running};
        use Stage::{Export, Merge, Train};
        // One row a line: the table reads as a table.
        #[rustfmt::skip]
        let cases: Vec<(JobEnd<'static>, State, Option<&str>, bool)> = vec![
            (end(Exited(0), true, false, Some(Merge)), State::Succeeded, None, false),
            (end(Exited(0), true, false, Some(Train)), State::Succeeded, None, false),
            (end(Running, true, false, None), State::Succeeded, None, false),
            (end(Exited(0), true, true, Some(Train)), State::Stopped, None, false),
            (end(Exited(0), false, false, Some(Merge)), State::Failed, Some("no metric line"), false),
            (end(Exited(1), true, false, Some(Train)), State::Failed, Some("exited with code 1"), true),
            (end(Exited(1), false, false, Some(Merge)), State::Failed, Some("exited with code 1"), true),
            (end(Exited(2), true, false, Some(Export)), State::Failed, Some("exited with code 2"), true),
            (end(Exited(1), true, false, None), State::Failed, Some("exited with code 1"), true),
            (end(Exited(127), false, false, None), State::Failed, Some("code 127: a command was not found where it runs, most often `axolotl`"), true),
            (end(Exited(127), true, false, Some(Train)), State::Failed, Some("the job exited with code 127"), true),
            (end(Exited(3), true, false, Some(Merge)), State::MergeFailed, Some("training succeeded, then `axolotl merge-lora` exited with code 3"), true),
            // A snapshot skips the merge (MPL-6): a failure then is not the merge's.
            (end(Exited(3), true, true, Some(Merge)), State::Failed, Some("exited with code 3"), true),
            (end(Cancelled, true, false, Some(Merge)), State::Cancelled, Some("cancelled"), false),
            (end(Lost, true, false, Some(Merge)), State::Failed, Some("the job was lost"), true),
            (JobEnd { leftovers: &[41, 42], ..end(Cancelled, true, false, Some(Train)) }, State::Cancelled, Some("cancelled with leftovers: 41"), false),
        ];
        for (job, state, cause, points) in cases {
            let got = ending("r_1", &job);
            assert_eq!(got.state, state, "{job:?}");
            match cause {
                Some(cause) => assert!(got.cause.contains(cause), "{job:?}: {got:?}"),
                None => assert!(got.cause.is_empty(), "{job:?}: {got:?}"),
            }
            assert_eq!(got.points_at_log, points, "{job:?}");
        }
        let not_found = ending("r_1", &end(Exited(127), false, false, None));
        let message = not_found.message(Some("; see job.log")).unwrap();
        assert!(
            message.contains(
                "`axolotl`; see job.log; install Axolotl on the target, or set the target's `venv`"
            ),
            "{message}"
        );
    }

    #[test]
    fn a_failed_merge_says_the_adapter_is_usable_and_how_to_redo_it() {
        let got = ending(
            "r_1",
            &end(JobStatus::Exited(1), true, false, Some(Stage::Merge)),
        );
        let message = got
            .message(Some("; `runs/r_1/job.log` lines 3-9: OSError: disk full"))
            .unwrap();
        assert_eq!(
            message,
            "training succeeded, then `axolotl merge-lora` exited with code 1; `runs/r_1/job.log` lines 3-9: OSError: disk full; the adapter in `runs/r_1/output` is usable; redo the merge alone with `overbrainer train merge r_1`"
        );
        assert_eq!(
            ending("r_1", &end(JobStatus::Exited(0), true, false, None)).message(None),
            None
        );
    }

    #[test]
    fn a_stop_at_an_incomplete_checkpoint_fails_and_names_what_it_lacks() {
        let missing = vec!["`optimizer.pt` (the optimizer state)".to_owned()];
        let got = unresumable("r_1", 3, "checkpoint-3", &missing);
        assert_eq!(got.state, State::Failed);
        assert!(!got.points_at_log);
        let message = got.message(Some("; ignored")).unwrap();
        assert!(message.contains("stopped at step 3"), "{message}");
        assert!(
            message.contains("`checkpoint-3` cannot be resumed: it lacks `optimizer.pt`"),
            "{message}"
        );
        assert!(
            message.contains("`runs/r_1/output` holds a partial model at step 3"),
            "{message}"
        );
    }
}

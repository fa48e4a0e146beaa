//! What a run flow warns about while it goes on: one variant per warning, with its
//! data. Front ends render them (the command line in `cli/follow.rs`); flows never
//! turn them into text.

use std::time::Duration;

use super::record::State;
use crate::config::OnStall;

/// A warning of a run flow, sent as [`super::RunEvent::Warning`].
#[derive(Debug, Clone, PartialEq)]
pub enum RunWarning {
    /// The job stalled (issue 21): its process group lives but no new training step or
    /// eval progress line came for `silent`.
    Stalled {
        /// The run.
        run_id: String,
        /// The last training step and the UTC time of its line, when there was one.
        last_step: Option<(u64, Option<jiff::Timestamp>)>,
        /// How long no progress line came.
        silent: Duration,
        /// The latest system sample of the job's machine, when one was taken.
        sample: Option<Box<crate::system::Sample>>,
        /// What the follower does about it (`training.on_stall`).
        action: OnStall,
    },
    /// A stalled job makes progress again: a training step (`Some`) or an evaluation.
    StallEnded {
        /// The run.
        run_id: String,
        /// The step.
        step: Option<u64>,
    },
    /// The snapshot request of `on_stall = "snapshot"` could not be placed.
    StallRequestFailed {
        /// The run.
        run_id: String,
        /// What failed, with its causes.
        cause: String,
    },
    /// The run's chat template may drop `reasoning_content` (TGT-12); the text, from
    /// [`crate::train::template::decide`], names the template, how it was checked and
    /// the fix.
    TemplateDropsReasoning(String),
    /// `gpu_types = "auto"` without `min_vram_gb`, and the VRAM estimate could not be
    /// made: any type in stock may be chosen, however small (POD-19).
    NoVramFloor {
        /// Target name.
        target: String,
        /// Why no estimate was made.
        why: String,
    },
    /// The target refused hard links from its blob cache into the run directory, so the
    /// uploaded base model's files were copied there (issue 21).
    BlobsCopied {
        /// Target name.
        target: String,
    },
    /// `training.hub_model_id` is set; it is deprecated for `[hub] repo`.
    HubModelIdDeprecated,
    /// `[hub] after_training = true` without `OVERBRAINER_HF_TOKEN`.
    HubTokenMissing,
    /// The target did not answer a poll (RUN-16).
    Unreachable {
        /// Target name.
        target: String,
        /// Failed reaches in a row so far.
        failures: u32,
        /// Failed reaches in a row after which the follower detaches.
        limit: u32,
        /// What failed, with its causes.
        cause: String,
    },
    /// A metric line was skipped or flagged (MPL-4); the text is the metric reader's.
    Metrics(String),
    /// The job did not stop in time after a snapshot request; its job is cancelled
    /// (RUN-28).
    SnapshotOverdue {
        /// The run.
        run_id: String,
    },
    /// Cancelling the job failed.
    CancelFailed {
        /// What failed, with its causes.
        cause: String,
    },
    /// What the cancel of the run's job left behind cannot be read.
    LeftoversUnreadable {
        /// The run.
        run_id: String,
        /// What failed, with its causes.
        cause: String,
    },
    /// `train cancel` of a run recorded terminal: any job left is stopped.
    AlreadyEnded {
        /// The run.
        run_id: String,
        /// Its recorded state.
        state: State,
    },
    /// The job was cancelled but `run.json` could not be updated (RUN-42).
    CancelNotRecorded {
        /// The run.
        run_id: String,
        /// Why the record could not be written.
        cause: String,
        /// What the record may still read.
        state: State,
    },
    /// The run's pod ended its life without the result it was made for, after the
    /// following ended: what went wrong ([`crate::runs::pod::failure_text`]).
    PodFailed(String),
    /// An overbrainer pod past its bound and not kept was deleted by this process
    /// (issue 12, reconciliation), or could not be confirmed gone (`failed`).
    PodReconciled {
        /// Pod ID.
        pod: String,
        /// Its run marker.
        run_id: Option<String>,
        /// Why it could not be confirmed gone.
        failed: Option<String>,
    },
    /// An overbrainer pod that no rule will remove, with its ID and rate
    /// ([`crate::runs::pod::manage::stray_text`], POD-62).
    PodStray(String),
    /// The disk of a followed Runpod run (POD-46, POD-47): a level of use reached, a
    /// grow of its network volume, or the `disk` snapshot, with the amounts.
    Disk(String),
    /// `--keep-pod`: the run's pod stays with no limit until `pod rm` (POD-61); the
    /// command that reaches it.
    PodKept {
        /// The run.
        run_id: String,
        /// `ssh -F runs/<run-id>/ssh/config -p PORT root@HOST`.
        command: String,
    },
    /// The log of a failed `train merge` could not be retrieved.
    MergeLogUnretrieved {
        /// The run.
        run_id: String,
        /// The log, relative to the run directory.
        log: String,
        /// What failed.
        cause: String,
    },
}

//! Training runs (spec/training.md): start a detached Axolotl job on a target, follow it,
//! stop, cancel, resume and retrieve it, and list the runs of a project.
//!
//! - [`id`]: run IDs (RUN-1, RUN-2, RUN-5);
//! - [`record`]: `run.json` and its states (RUN-8, RUN-9), listing (RUN-44);
//! - [`ending`]: from the end of a job to the run's final state, pure (RUN-9);
//! - [`target`]: from a `[targets.<name>]` entry to a connected executor and a runtime
//!   (TGT-1..TGT-7);
//! - [`start`]: the run directory, the claim, the upload and the job (RUN-6, RUN-10..RUN-15,
//!   RUN-35, RUN-36);
//! - [`lifecycle`]: a followed run's life as a pure state machine, events in, effects
//!   out (RUN-9, RUN-16..RUN-25, RUN-28, RUN-29, MPL-4);
//! - [`follow`]: the driver of [`lifecycle`]: polls, samples, saves, retrieval
//!   (RUN-16..RUN-21, MPL-4, MPL-7, SYS-1, SYS-5);
//! - [`train`](mod@train): a run from its start to its end, [`start`] then [`follow`];
//! - [`job_log`]: where `job.log` says why a job failed;
//! - [`retrieve`]: results checked file by file against the target's manifest
//!   (RUN-23..RUN-25);
//! - [`control`]: `train stop` and `train cancel` (RUN-26..RUN-42); [`access`]: how they
//!   stand with the project lock (LCK-1, LCK-2, LCK-8, LCK-9);
//! - [`template`]: whether the run's chat template renders the data's reasoning (TGT-12);
//! - [`pod`]: a run on a `runpod` target: the pod's life beside the run's (issue 12);
//! - [`merge`]: `train merge`, the merge alone of a `merge_failed` run \[design\];
//! - [`elsewhere`]: the target an export or compare of a run runs on, its own or
//!   another (a pod's run, whose pod is gone: issue 34).
//!
//! - [`refusal`]: why a flow refuses, one variant each; [`warning`]: what it warns
//!   about, one variant each, rendered by the front end.
//!
//! Flows never print: they send [`RunEvent`]s on a channel that the front end renders.

pub mod access;
pub mod control;
pub mod elsewhere;
pub mod ending;
pub mod follow;
pub mod id;
pub mod job_log;
pub mod lifecycle;
pub mod merge;
pub mod pod;
pub mod prune;
pub mod record;
pub mod refusal;
pub mod retrieve;
pub mod side_job;
pub mod slurm;
pub mod start;
pub mod target;
pub mod template;
pub mod train;
pub mod warning;

use std::path::PathBuf;

pub use lifecycle::{DetachReason, Outcome};
pub use record::{RunRecord, State};
pub use refusal::Refusal;
pub use warning::RunWarning;

use crate::train::metrics::{EvalLine, TrainLine};
use crate::train::phase::Phase;

/// What a run flow reports while it works.
#[derive(Debug, Clone)]
pub enum RunEvent {
    /// The job started (or a follower attached to it).
    Following {
        /// Run ID.
        run_id: String,
        /// Target name.
        target: String,
    },
    /// A new phase, or a new tenth of an evaluation (RUN-18).
    Phase(Phase),
    /// A training step (RUN-17).
    Train(TrainLine),
    /// A completed evaluation (RUN-17).
    Eval(EvalLine),
    /// A sample of the job's machine (SYS-1, SYS-6).
    Sample(Box<crate::system::Sample>),
    /// A new line of the job's `job.log` (shown at `debug` level by the command line).
    JobLog(String),
    /// Something the user should know; the flow goes on.
    Warning(RunWarning),
    /// What the run's pod went through (a `runpod` target).
    Pod(crate::runpod::lifecycle::Notice),
    /// What the scheduler says of the run's job (a `slurm` target, issue 19) beyond its
    /// queue: why it ended the job; sent when it changes. A wait in the queue is
    /// [`RunEvent::Pending`].
    Scheduler(String),
    /// The run is `pending`: its job waits in the scheduler's queue (a `slurm` target,
    /// issue 33), with the scheduler's word on why (`pending on Slurm (Resources)`);
    /// sent when the run becomes pending and when that word changes, after `run.json`
    /// says so. No stall clock runs while it waits.
    Pending(String),
    /// The run's job left the scheduler's queue: the run is `running` (saved in
    /// `run.json`), and its stall clocks start now.
    Started,
    /// What the upload of a run's local base model (`training.upload_base_model`,
    /// issue 21) sends: its files and bytes, the bytes the target's blob cache holds
    /// already and the bytes left to send; sent before sending.
    Upload(crate::exec::blobs::UploadSummary),
}

/// Sender of [`RunEvent`]s.
pub type Events = tokio::sync::mpsc::UnboundedSender<RunEvent>;

/// Sends `event`, ignoring a front end that stopped listening.
pub(crate) fn emit(events: &Events, event: RunEvent) {
    let _ = events.send(event);
}

/// Errors of the run flows. Messages name the run, key or file and say the fix when known.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A local file or directory could not be read or written.
    #[error("cannot access `{}`", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The target could not be reached or answered wrongly.
    #[error("target `{target}`")]
    Exec {
        /// Target name.
        target: String,
        /// Underlying error.
        #[source]
        source: Box<crate::exec::ExecError>,
    },
    /// A run ID with characters a run ID cannot have (RUN-5).
    #[error("`{0}` is not a run ID: only letters, digits, `_` and `-` are allowed")]
    BadRunId(String),
    /// No such run in `runs/` (RUN-5).
    #[error("no run `{0}` in `runs/`; `overbrainer runs ls` lists the runs")]
    UnknownRun(String),
    /// A `run.json` that cannot be read.
    #[error("cannot read `{}`: {reason}", path.display())]
    BadRecord {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The project lock cannot be taken (LCK-2, LCK-6).
    #[error(transparent)]
    Lock(#[from] crate::project::LockError),
    /// `train cancel` while another process holds the project without following the run
    /// (LCK-2, LCK-9); the lock's message names that process.
    #[error(
        "{lock}; it does not follow run `{run_id}`: run `overbrainer train cancel {run_id}` again once it ended"
    )]
    HeldNotFollowing {
        /// Why the lock could not be taken.
        lock: crate::project::LockError,
        /// The run.
        run_id: String,
    },
    /// The Hugging Face token could not be resolved (TGT-10).
    #[error("cannot resolve `OVERBRAINER_HF_TOKEN`")]
    Secret(#[source] Box<crate::secrets::SecretError>),
    /// A refusal before anything starts or changes, with its reason and fix.
    #[error(transparent)]
    Refused(Refusal),
    /// The Runpod key could not be resolved or used (POD-4); the text names the variable.
    #[error("cannot use `OVERBRAINER_RUNPOD__API_KEY`: {0}")]
    RunpodKey(String),
    /// The Runpod API could not list the account's pods, before any run of this command
    /// exists (the check every Runpod command makes first); named by the target when
    /// there is one.
    #[error("{}cannot list the Runpod account's pods: {reason}", target.as_ref().map(|t| format!("target `{t}`: ")).unwrap_or_default())]
    PodList {
        /// The target, when the command has one.
        target: Option<String>,
        /// What happened.
        reason: String,
    },
    /// The run's pod failed it; the pod was deleted unless the text says otherwise.
    #[error("run `{run_id}`: {reason}")]
    Pod {
        /// Run ID.
        run_id: String,
        /// What happened.
        reason: String,
    },
    /// The merged model of `train merge` could not be retrieved or failed verification;
    /// `train merge` retries.
    #[error(
        "retrieval of the merged model of run `{run_id}` failed: {reason}; `overbrainer train merge {run_id}` retries"
    )]
    MergeRetrieval {
        /// Run ID.
        run_id: String,
        /// What failed.
        reason: String,
    },
    /// The run's local base model could not be uploaded (`training.upload_base_model`,
    /// issue 21); the reason names the directory and the step that failed.
    #[error("target `{target}`: {reason}")]
    Upload {
        /// Target name.
        target: String,
        /// What failed.
        reason: String,
    },
    /// The results could not be retrieved or failed verification; `train attach` retries.
    #[error(
        "retrieval of run `{run_id}` failed: {reason}; `overbrainer train attach {run_id}` retries"
    )]
    Retrieval {
        /// Run ID.
        run_id: String,
        /// What failed.
        reason: String,
    },
}

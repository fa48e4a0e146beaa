//! The events a followed run's machine takes and the effects it returns (see
//! [`super`]).

use std::time::{Duration, SystemTime};

use super::DetachReason;
use crate::exec::JobStatus;
use crate::runs::RunEvent;

/// What happened, as the driver saw it. `at` is the time since the follower began.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The follower begins.
    Began,
    /// One poll of the job: its new metric lines (or why they could not be read), its
    /// new `job.log` lines and its status (or why it could not be read), and whether
    /// it waits in a scheduler's queue.
    Polled {
        /// When.
        at: Duration,
        /// New lines of `metrics.jsonl`.
        metrics: Result<Vec<String>, String>,
        /// New lines of `job.log`.
        log: Vec<String>,
        /// The job's status.
        status: Result<JobStatus, String>,
        /// The scheduler's word on a job that waits in its queue (a pending Slurm job,
        /// whose status reads running: `pending on Slurm (Resources)`); `None` when the
        /// job is not queued or the target has no scheduler (issue 33).
        queued: Option<String>,
    },
    /// A system sample's probe output (SYS-1), at wall-clock time `wall`.
    Sampled {
        /// The probe's output.
        output: String,
        /// Wall-clock time of the sample.
        wall: SystemTime,
    },
    /// The snapshot request was looked for on the target (RUN-29).
    RequestChecked {
        /// When.
        at: Duration,
        /// Whether one is there.
        found: bool,
    },
    /// Cancelling the job failed.
    CancelFailed(String),
    /// Placing the snapshot request of a stall failed (issue 21).
    RequestFailed(String),
    /// The pause between two polls is over.
    Woke,
    /// Ctrl-C.
    Interrupted,
    /// The job ended with `status`, seen by someone else than this follower (`train
    /// cancel`): the state's summary is what the metric lines said.
    JobEnded(JobStatus),
    /// The rest of `metrics.jsonl`: its complete lines, then the bytes after the last
    /// line break.
    Drained {
        /// Complete lines.
        lines: Vec<String>,
        /// A last line without a line break.
        rest: Vec<u8>,
    },
    /// `snapshot.json` on the target: step and checkpoint, `None` when absent or
    /// unreadable.
    SnapshotFile(Option<(u64, String)>),
    /// What the cancel of the job left alive, or why that cannot be read.
    Leftovers(Result<Vec<u32>, String>),
    /// The results were retrieved and verified, or why not.
    Retrieved(Result<(), String>),
    /// What the retrieved snapshot checkpoint lacks for a resume (empty: complete).
    CheckpointChecked(Vec<String>),
    /// The pointer into `job.log` at the lines that say why the job failed, starting
    /// with `; `.
    LogPointer(String),
}

/// What to do.
#[derive(Debug, Clone)]
pub enum Effect {
    /// Send this event to the front end.
    Emit(RunEvent),
    /// Write the state's record to `run.json`.
    Save,
    /// Poll the job: new metric and log lines, its status; then [`Event::Polled`].
    Poll,
    /// Take a system sample; then [`Event::Sampled`] (nothing when it fails).
    Sample,
    /// Look for a snapshot request on the target; then [`Event::RequestChecked`].
    CheckRequest,
    /// Cancel the job; [`Event::CancelFailed`] when that fails.
    CancelJob,
    /// Place `snapshot.request` with this reason unless one is there (issue 21);
    /// [`Event::RequestFailed`] when that fails.
    RequestSnapshot(&'static str),
    /// Wait this long for the next poll; then [`Event::Woke`], or
    /// [`Event::Interrupted`] on Ctrl-C.
    Wait(Duration),
    /// Read what is left of `metrics.jsonl`; then [`Event::Drained`].
    Drain,
    /// Read `snapshot.json`; then [`Event::SnapshotFile`].
    ReadSnapshotFile,
    /// Read what the cancel left alive; then [`Event::Leftovers`].
    ReadLeftovers,
    /// Retrieve the results, the snapshot checkpoint `checkpoint` among them, without
    /// the entries of `output/` named in `skip`; then [`Event::Retrieved`].
    Retrieve {
        /// The snapshot checkpoint to retrieve.
        checkpoint: Option<String>,
        /// Entries of `output/` not retrieved.
        skip: Vec<&'static str>,
    },
    /// Check the retrieved checkpoint `output/<name>`; then
    /// [`Event::CheckpointChecked`].
    CheckCheckpoint(String),
    /// Find the lines of the retrieved `job.log` that say why (the last root cause when
    /// `last`); then [`Event::LogPointer`].
    PointAtLog {
        /// Whether the last root cause counts (a failed merge after training).
        last: bool,
    },
    /// Stop following; the job goes on.
    Detach(DetachReason),
    /// The run is recorded in its final state.
    End,
    /// The retrieval failed; the run is recorded pending retrieval.
    Fail,
}

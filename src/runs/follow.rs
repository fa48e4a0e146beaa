//! Following a run (spec/training.md, RUN-16..RUN-21, RUN-28, RUN-29, MPL-4, MPL-7,
//! SYS-1, SYS-5): the driver of [`super::lifecycle`]. It feeds the machine what the
//! target says and performs the effects the machine returns: polls, samples, saves,
//! cancels, retrieval. The machine decides; this file only does.
//!
//! A Ctrl-C (the cancellation token) or six failed reaches in a row end the following
//! only; the job goes on and `run.json` keeps its state (RUN-21).

use std::collections::VecDeque;
use std::time::{Instant, SystemTime};

use tokio_util::sync::CancellationToken;

pub use super::ending::{LEFTOVERS_PREFIX, leftovers_message};
pub use super::job_log::{error_lines, last_error_lines, log_pointer};
pub use super::lifecycle::{DetachReason, Outcome};
use super::lifecycle::{Effect, Event, Rules, RunState, handle};
use super::record::RunRecord;
use super::refusal::Refusal;
use super::retrieve::retrieve;
use super::start::error_chain;
use super::{Events, RunError, emit};
use crate::exec::{
    AnyExecutor, CANCEL_FILE, CANCELLING_FILE, Executor as _, JOB_LOG, JobHandle, JobStatus,
    LineStream, MAX_TAIL_READ,
};
use crate::project::Project;
use crate::train::axolotl::OUTPUT_DIR;
use crate::train::metrics::{METRICS_FILE, Summary};
use crate::train::plugin::{SNAPSHOT_FILE, SNAPSHOT_REQUEST, SnapshotFile};
use crate::train::stall::Policy;

/// Follows the run of `record` on `executor` until it ends or the follower detaches,
/// watching for stalls under `stall` (issue 21). `requested` says this process placed
/// a snapshot request just before (RUN-26).
///
/// # Errors
///
/// [`RunError::Retrieval`] when the job ended but its results could not be retrieved
/// (the run stays `running`, pending retrieval), or [`RunError::Io`] when `run.json`
/// cannot be written.
pub async fn follow(
    project: &Project,
    executor: &AnyExecutor,
    record: RunRecord,
    stall: &Policy,
    events: &Events,
    cancel: &CancellationToken,
    requested: bool,
) -> Result<Outcome, RunError> {
    let Some(job) = record.job.clone() else {
        return Err(Refusal::NoJob { run_id: record.id }.into());
    };
    // LCK-9: a `train cancel` from another terminal sees that this process follows
    // the run and records its end; it then only cancels the job on the target.
    let _following = match project.follow_lock(&record.id) {
        Ok(lock) => Some(lock),
        Err(error) => {
            tracing::debug!("run `{}` not marked as followed: {error}", record.id);
            None
        }
    };
    let dir = record.dir.clone();
    // The executor's time scale: the test suite's, or real time.
    let scale = executor.time_scale();
    let rules = Rules::scaled(scale).with_stall(stall, scale);
    let mut state = RunState::new(record, rules, requested);
    state.began = SystemTime::now();
    // Boxed: the machine's state is large.
    Box::pin(Driver::new(project, executor, job, &dir, events, cancel).run(state, Event::Began))
        .await
}

/// Collects a run whose job ended with `status` (seen by `train cancel`), whose metric
/// lines said `summary`: retrieves its results and records its final state (RUN-9,
/// RUN-24).
///
/// # Errors
///
/// [`RunError::Retrieval`] when the results could not be retrieved: the run is then
/// recorded `running` with a message saying results are pending.
pub async fn finish(
    project: &Project,
    executor: &AnyExecutor,
    record: RunRecord,
    status: JobStatus,
    summary: Summary,
    events: &Events,
) -> Result<Outcome, RunError> {
    let Some(job) = record.job.clone() else {
        return Err(Refusal::NoJob { run_id: record.id }.into());
    };
    let never = CancellationToken::new();
    let dir = record.dir.clone();
    let state = RunState::ended(record, summary);
    Box::pin(
        Driver::new(project, executor, job, &dir, events, &never)
            .run(state, Event::JobEnded(status)),
    )
    .await
}

/// Performs the effects of one followed run.
struct Driver<'a> {
    project: &'a Project,
    executor: &'a AnyExecutor,
    job: JobHandle,
    events: &'a Events,
    cancel: &'a CancellationToken,
    metrics: LineStream<'a, AnyExecutor>,
    log: LineStream<'a, AnyExecutor>,
    began: Instant,
    error: Option<RunError>,
    /// The scheduler's last note sent (a `slurm` target).
    scheduler_note: Option<String>,
    /// When a non-zero exit was first seen while a cancel from elsewhere was under way.
    cancel_seen: Option<Instant>,
}

/// How long a non-zero exit seen while a cancel is under way (`cancelling` there, not
/// yet `cancelled`) reads as the job still stopping: the container engine's stop makes the
/// wrapper write the exit code before the cancel confirms the group gone (the executor's
/// documented window); a cancel that was itself killed leaves `cancelling` behind, and
/// then the real exit code wins after this long.
const CANCEL_WINDOW: std::time::Duration = std::time::Duration::from_secs(60);

impl<'a> Driver<'a> {
    fn new(
        project: &'a Project,
        executor: &'a AnyExecutor,
        job: JobHandle,
        dir: &str,
        events: &'a Events,
        cancel: &'a CancellationToken,
    ) -> Self {
        Self {
            project,
            executor,
            metrics: executor.tail(&format!("{dir}/{METRICS_FILE}"), 0),
            log: executor.tail(&format!("{dir}/{JOB_LOG}"), 0),
            job,
            events,
            cancel,
            began: Instant::now(),
            error: None,
            scheduler_note: None,
            cancel_seen: None,
        }
    }

    /// Runs the machine from `first` until it ends, detaches or fails.
    async fn run(mut self, mut state: RunState, first: Event) -> Result<Outcome, RunError> {
        let mut queue: VecDeque<Effect> = handle(&mut state, first).into();
        while let Some(effect) = queue.pop_front() {
            let next = match effect {
                Effect::Emit(event) => {
                    emit(self.events, event);
                    None
                }
                Effect::Save => {
                    state.record.save(&self.project.runs_dir())?;
                    None
                }
                Effect::Detach(reason) => {
                    return Ok(Outcome::Detached {
                        record: state.record,
                        reason,
                    });
                }
                Effect::End => return Ok(Outcome::Ended(state.record)),
                Effect::Fail => {
                    return Err(self.error.take().unwrap_or_else(|| RunError::Retrieval {
                        run_id: state.record.id.clone(),
                        reason: "unknown".to_owned(),
                    }));
                }
                other => self.perform(other, &state.record).await,
            };
            if let Some(event) = next {
                // What an effect found is handled before the effects that followed it.
                for effect in handle(&mut state, event).into_iter().rev() {
                    queue.push_front(effect);
                }
            }
        }
        Err(RunError::Retrieval {
            run_id: state.record.id,
            reason: "the follower stopped without an end".to_owned(),
        })
    }

    /// One poll of the job: new metric lines, new log lines, its status. A target
    /// that did not answer the first read is not asked again in this poll, so one
    /// failed reach costs one connect bound, not three.
    async fn poll(&mut self) -> Event {
        let metrics = self.metrics.poll().await.map_err(|e| error_chain(&e));
        let (log, status) = match &metrics {
            Err(cause) => (Vec::new(), Err(cause.clone())),
            Ok(_) => (
                self.log.poll().await.unwrap_or_default(),
                self.executor
                    .job_status(&self.job)
                    .await
                    .map_err(|e| error_chain(&e)),
            ),
        };
        let status = match status {
            Ok(JobStatus::Exited(code)) if code != 0 && self.cancel_under_way().await => {
                Ok(JobStatus::Running)
            }
            other => other,
        };
        let mut queued = None;
        if let (AnyExecutor::Slurm(slurm), Ok(_)) = (self.executor, &status) {
            // A wait in the queue goes to the machine, which records the run `pending`
            // (issue 33); the scheduler's other words are sent from here.
            queued = slurm.last_queued();
            let note = slurm.last_note();
            if queued.is_none() && note.is_some() && note != self.scheduler_note {
                emit(
                    self.events,
                    super::RunEvent::Scheduler(note.clone().unwrap_or_default()),
                );
            }
            self.scheduler_note = note;
        }
        Event::Polled {
            at: self.began.elapsed(),
            metrics,
            log,
            status,
            queued,
        }
    }

    /// Whether a cancel is stopping the job (its `cancelling` marker there, no `cancelled`
    /// yet) and has been for less than [`CANCEL_WINDOW`] (scaled) since this follower
    /// first saw its exit code.
    async fn cancel_under_way(&mut self) -> bool {
        let dir = crate::exec::quote(self.job.dir());
        let script = format!(
            "[ -e {dir}/{CANCELLING_FILE} ] && [ ! -e {dir}/{CANCEL_FILE} ] && echo yes; exit 0"
        );
        let under_way = self
            .executor
            .probe(&script)
            .await
            .is_ok_and(|out| out.starts_with(b"yes"));
        if !under_way {
            return false;
        }
        let since = *self.cancel_seen.get_or_insert_with(Instant::now);
        since.elapsed() < self.executor.time_scale().scale(CANCEL_WINDOW)
    }

    /// Performs an effect that asks the target or the disk; returns what it found.
    async fn perform(&mut self, effect: Effect, record: &RunRecord) -> Option<Event> {
        let executor = self.executor;
        match effect {
            Effect::Poll => Some(self.poll().await),
            // Issue 33: a Slurm job's node, sampled inside its allocation; nothing while
            // it waits in the queue.
            Effect::Sample => match executor.sample(&self.job, &record.dir).await {
                Ok(Some(output)) => Some(Event::Sampled {
                    output: String::from_utf8_lossy(&output).into_owned(),
                    wall: SystemTime::now(),
                }),
                Ok(None) => None,
                Err(error) => {
                    tracing::debug!("system sample failed: {}", error_chain(&error));
                    None
                }
            },
            Effect::CheckRequest => {
                let path = format!("{}/{SNAPSHOT_REQUEST}", record.dir);
                let found = executor
                    .read_from(&path, 0, 64)
                    .await
                    .is_ok_and(|bytes| !bytes.is_empty());
                Some(Event::RequestChecked {
                    at: self.began.elapsed(),
                    found,
                })
            }
            Effect::RequestSnapshot(reason) => {
                let path = format!("{}/{SNAPSHOT_REQUEST}", record.dir);
                let placed = match executor.read_from(&path, 0, 64).await {
                    Ok(bytes) if !bytes.is_empty() => Ok(()),
                    _ => executor.put_file(&path, reason).await,
                };
                placed
                    .err()
                    .map(|error| Event::RequestFailed(error_chain(&error)))
            }
            Effect::CancelJob => match executor.cancel_job(&self.job).await {
                Ok(()) => None,
                Err(error) => Some(Event::CancelFailed(error_chain(&error))),
            },
            Effect::Wait(pause) => {
                tokio::select! {
                    () = self.cancel.cancelled() => Some(Event::Interrupted),
                    () = tokio::time::sleep(pause) => Some(Event::Woke),
                }
            }
            Effect::Drain => Some(self.drain(record).await),
            Effect::ReadSnapshotFile => {
                let path = format!("{}/{SNAPSHOT_FILE}", record.dir);
                let found = executor
                    .read_from(&path, 0, 4096)
                    .await
                    .ok()
                    .and_then(|bytes| {
                        let bytes = crate::dataset::jsonl::strip_bom(&bytes);
                        serde_json::from_slice::<SnapshotFile>(bytes)
                            .ok()
                            .map(|file| (file.step, file.checkpoint))
                    });
                Some(Event::SnapshotFile(found))
            }
            Effect::ReadLeftovers => Some(Event::Leftovers(
                executor
                    .job_leftovers(&self.job)
                    .await
                    .map_err(|e| error_chain(&e)),
            )),
            Effect::Retrieve { checkpoint, skip } => {
                let local_dir = self.project.run_dir(&record.id);
                let result =
                    retrieve(executor, record, &local_dir, checkpoint.as_deref(), &skip).await;
                Some(Event::Retrieved(result.map_err(|error| {
                    let text = error.to_string();
                    self.error = Some(error);
                    text
                })))
            }
            Effect::CheckCheckpoint(name) => {
                let dir = self.project.run_dir(&record.id).join(OUTPUT_DIR).join(name);
                Some(Event::CheckpointChecked(
                    crate::train::checkpoint::missing(&dir)
                        .unwrap_or_else(|error| vec![format!("a readable directory ({error})")]),
                ))
            }
            Effect::PointAtLog { last } => {
                let pointer =
                    log_pointer(&self.project.run_dir(&record.id), &record.id, JOB_LOG, last);
                // A slurm target's scheduler says why it ended the job (issue 19).
                Some(Event::LogPointer(match &self.scheduler_note {
                    Some(note) => format!("; {note}{pointer}"),
                    None => pointer,
                }))
            }
            Effect::Emit(_) | Effect::Save | Effect::Detach(_) | Effect::End | Effect::Fail => None,
        }
    }

    /// Reads every line left in `metrics.jsonl`, then a last line without a line break.
    async fn drain(&mut self, record: &RunRecord) -> Event {
        let mut lines = Vec::new();
        loop {
            match self.metrics.poll().await {
                Ok(more) if !more.is_empty() => lines.extend(more),
                _ => break,
            }
        }
        let path = format!("{}/{METRICS_FILE}", record.dir);
        let rest = self
            .executor
            .read_from(&path, self.metrics.offset(), MAX_TAIL_READ)
            .await
            .unwrap_or_default();
        Event::Drained { lines, rest }
    }
}

//! `train attach`, `train stop` and `train cancel` on an existing run (spec/training.md,
//! RUN-26..RUN-43): each reads the run's record, reaches its target again from the
//! recorded job handle alone, and ends like a follower.

use tokio_util::sync::CancellationToken;

use super::access::Access;
use super::follow::{self, Outcome};
use super::lifecycle::transitions;
use super::record::{RUN_JSON, RunRecord, State};
use super::{Events, Refusal, RunError, RunEvent, RunWarning, emit, target};
use crate::config::{EnvSnapshot, Settings};
use crate::exec::{AnyExecutor, ExecError, Executor as _, JobHandle, JobStatus};
use crate::project::Project;
use crate::train::metrics::Summary;
use crate::train::plugin::SNAPSHOT_REQUEST;
use crate::train::stall::Policy;

/// Loads run `run_id` and connects to its target.
///
/// # Errors
///
/// [`RunError::BadRunId`], [`RunError::UnknownRun`], a refusal when its target is no
/// longer declared, or [`RunError::Exec`] when the target cannot be reached.
pub async fn open(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    run_id: &str,
) -> Result<(RunRecord, AnyExecutor), RunError> {
    let record = RunRecord::load(&project.runs_dir(), run_id)?;
    let resolved = target::resolve(settings, &record.target)?;
    if resolved.kind == super::record::TargetKind::Runpod {
        let executor = Box::pin(super::pod::connect(project, settings, env, &record)).await?;
        return Ok((record, executor));
    }
    let executor = target::connect(&resolved, &project.runs_dir(), env).await?;
    Ok((record, executor))
}

/// Follows run `run_id` again, then retrieves it (RUN-43). A run already terminal and
/// retrieved, or that never started a job, is returned as it is.
///
/// # Errors
///
/// As [`open`] and [`follow::follow`].
pub async fn attach(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    run_id: &str,
    events: &Events,
    cancel: &CancellationToken,
) -> Result<Outcome, RunError> {
    let record = RunRecord::load(&project.runs_dir(), run_id)?;
    if record.target_kind == super::record::TargetKind::Runpod
        && record.job.is_none()
        && record.state == State::Starting
    {
        // The process that started it died before the job existed (it held the
        // project, which this process holds now): its pods go, the run fails.
        let record = Box::pin(super::pod::manage::abandon_start(
            project, settings, env, record,
        ))
        .await?;
        return Ok(Outcome::Ended(record));
    }
    if (record.state.is_terminal() && record.retrieved) || record.job.is_none() {
        return Ok(Outcome::Ended(record));
    }
    if record.target_kind == super::record::TargetKind::Runpod {
        let how = super::pod::TakeUp::Follow { requested: false };
        return Box::pin(super::pod::take_up(
            project, settings, env, record, how, events, cancel,
        ))
        .await;
    }
    let (record, executor) = open(project, settings, env, run_id).await?;
    let stall = Policy::of(settings.training.as_ref());
    follow::follow(project, &executor, record, &stall, events, cancel, false).await
}

/// What `train stop` did.
#[derive(Debug)]
pub enum StopOutcome {
    /// The request was placed; another process holds the project and follows (RUN-33).
    RequestOnly {
        /// The run.
        record: RunRecord,
        /// Whether a process follows the run (holds its `FollowLock`) and so records
        /// the stop and retrieves the snapshot; without one the job saves its snapshot
        /// and ends, and nothing is retrieved until `train attach`.
        followed: bool,
    },
    /// The request was placed and the run followed to its end, or detached.
    Followed(Outcome),
}

/// `train stop`: places `snapshot.request` in the run directory on the target, then,
/// unless `request_only` (another process holds the project lock, RUN-33), follows the
/// run to its end and retrieves the checkpoint (RUN-26).
///
/// # Errors
///
/// A refusal when the run's job is not running, or the errors of [`open`] and
/// [`follow::follow`].
pub async fn stop(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    run_id: &str,
    request_only: bool,
    events: &Events,
    cancel: &CancellationToken,
) -> Result<StopOutcome, RunError> {
    let (record, executor) = open(project, settings, env, run_id).await?;
    let Some(job) = record.job.clone() else {
        return Err(Refusal::NoJob {
            run_id: run_id.to_owned(),
        }
        .into());
    };
    let exec = |source| RunError::Exec {
        target: record.target.clone(),
        source: Box::new(source),
    };
    let status = executor.job_status(&job).await.map_err(exec)?;
    if status != JobStatus::Running {
        return Err(Refusal::NotRunning {
            run_id: run_id.to_owned(),
            status,
            collected: record.state.is_terminal() && record.retrieved,
        }
        .into());
    }
    let path = format!("{}/{SNAPSHOT_REQUEST}", record.dir);
    executor
        .put_file(&path, "requested\n")
        .await
        .map_err(exec)?;
    if request_only {
        let followed = project.is_followed(&record.id);
        return Ok(StopOutcome::RequestOnly { record, followed });
    }
    if record.target_kind == super::record::TargetKind::Runpod {
        if let AnyExecutor::Ssh(ssh) = &executor {
            ssh.disconnect().await;
        }
        let how = super::pod::TakeUp::Follow { requested: true };
        let outcome = Box::pin(super::pod::take_up(
            project, settings, env, record, how, events, cancel,
        ))
        .await?;
        return Ok(StopOutcome::Followed(outcome));
    }
    let stall = Policy::of(settings.training.as_ref());
    let outcome = follow::follow(project, &executor, record, &stall, events, cancel, true).await?;
    Ok(StopOutcome::Followed(outcome))
}

/// What `train cancel` did.
#[derive(Debug)]
pub enum CancelOutcome {
    /// The job was stopped, its artifacts retrieved and the run recorded `cancelled`.
    Cancelled {
        /// The run, as recorded.
        record: RunRecord,
        /// Processes of the job that outlived `SIGKILL` on the target; a cancel
        /// with any is never a clean one (the record's message names them).
        leftovers: Vec<u32>,
    },
    /// Another overbrainer process follows the run (LCK-9): the job was cancelled on
    /// the target and that process retrieves and records the run; nothing was
    /// written here.
    OnTarget {
        /// The run, as it was read.
        record: RunRecord,
        /// As for [`CancelOutcome::Cancelled`].
        leftovers: Vec<u32>,
    },
    /// The job had already ended and was not signalled (RUN-40).
    AlreadyEnded {
        /// The run.
        record: RunRecord,
        /// What its job read.
        status: JobStatus,
    },
    /// The run's `train merge` job was running and was cancelled; the run stays
    /// `merge_failed`, its adapter the usable result, and the next `train merge`
    /// starts the merge again \[design\].
    MergeCancelled {
        /// The run, as recorded.
        record: RunRecord,
        /// As for [`CancelOutcome::Cancelled`].
        leftovers: Vec<u32>,
    },
}

/// The `train merge` job of `record`, when the run is `merge_failed` and that job
/// still runs.
async fn running_merge(
    executor: &AnyExecutor,
    record: &RunRecord,
) -> Result<Option<JobHandle>, ExecError> {
    let Some(job) = record
        .merge_job
        .as_ref()
        .filter(|_| record.state == State::MergeFailed)
    else {
        return Ok(None);
    };
    Ok((executor.job_status(job).await? == JobStatus::Running).then(|| job.clone()))
}

/// Whether `record` is a cancelled run whose cancel left processes behind: another
/// `train cancel` signals them again instead of refusing (RUN-41).
fn has_leftovers(record: &RunRecord) -> bool {
    record.state == State::Cancelled
        && record
            .message
            .as_deref()
            .is_some_and(|message| message.starts_with(follow::LEFTOVERS_PREFIX))
}

/// The executor's cancel of `job`, with the processes that outlived `SIGKILL` as a
/// value.
async fn cancel_job(executor: &AnyExecutor, job: &JobHandle) -> Result<Vec<u32>, ExecError> {
    match executor.cancel_job(job).await {
        Ok(()) => Ok(Vec::new()),
        Err(ExecError::Leftovers { pids }) => Ok(pids),
        Err(error) => Err(error),
    }
}

/// The refusals of RUN-41 and the job of run `run_id`.
fn cancellable(record: &RunRecord, run_id: &str) -> Result<JobHandle, RunError> {
    if record.state == State::Cancelled && !has_leftovers(record) {
        return Err(Refusal::AlreadyCancelled {
            run_id: run_id.to_owned(),
        }
        .into());
    }
    record.job.clone().ok_or_else(|| {
        Refusal::NoJob {
            run_id: run_id.to_owned(),
        }
        .into()
    })
}

/// `train cancel` (RUN-37..RUN-42). A run recorded `cancelled` whose cancel left
/// processes behind is cancelled again: its leftovers are signalled and the record
/// says what is still left. A `merge_failed` run whose `train merge` job still runs has
/// that job cancelled and stays `merge_failed` \[design\].
///
/// # Errors
///
/// A refusal for a run already cancelled or that never started a job (RUN-41); the
/// errors of [`open`]; [`RunError::Retrieval`] when the artifacts cannot be retrieved
/// (the job is stopped all the same). When the job was stopped but `run.json` cannot be
/// written, the cancel is reported as done with a warning event (RUN-42).
pub async fn cancel(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    run_id: &str,
    events: &Events,
) -> Result<CancelOutcome, RunError> {
    let record = RunRecord::load(&project.runs_dir(), run_id)?;
    let job = cancellable(&record, run_id)?;
    let again = has_leftovers(&record);
    let (mut record, executor) = open(project, settings, env, run_id).await?;
    let exec = |source| RunError::Exec {
        target: record.target.clone(),
        source: Box::new(source),
    };
    // A `train merge` job of a `merge_failed` run that still runs is the run's job now.
    if let Some(merge_job) = running_merge(&executor, &record).await.map_err(exec)? {
        let leftovers = cancel_job(&executor, &merge_job).await.map_err(exec)?;
        transitions::merge_cancelled(&mut record, &leftovers);
        record.save(&project.runs_dir())?;
        return Ok(CancelOutcome::MergeCancelled { record, leftovers });
    }
    if record.state.is_terminal() && !again {
        emit(
            events,
            RunEvent::Warning(RunWarning::AlreadyEnded {
                run_id: run_id.to_owned(),
                state: record.state,
            }),
        );
    }
    if again {
        let leftovers = cancel_job(&executor, &job).await.map_err(exec)?;
        transitions::cancelled_again(&mut record, &leftovers);
        record.save(&project.runs_dir())?;
        return Ok(CancelOutcome::Cancelled { record, leftovers });
    }
    let status = executor.job_status(&job).await.map_err(exec)?;
    if status != JobStatus::Running {
        if job.container().is_some() {
            // TGT-6: a container may have outlived its wrapper.
            cancel_job(&executor, &job).await.map_err(exec)?;
        }
        return Ok(CancelOutcome::AlreadyEnded { record, status });
    }
    let leftovers = cancel_job(&executor, &job).await.map_err(exec)?;
    let summary = summary_of(&executor, &record).await;
    let run_json = project.runs_dir().join(&record.id).join(RUN_JSON);
    let mut unrecorded = record.clone();
    unrecorded.set_summary(&summary);
    match Box::pin(follow::finish(
        project,
        &executor,
        record,
        JobStatus::Cancelled,
        summary,
        events,
    ))
    .await
    {
        Ok(Outcome::Ended(record) | Outcome::Detached { record, .. }) => {
            if record.target_kind == super::record::TargetKind::Runpod {
                // The artifacts are here: the pod is marked retrieved and deleted.
                let how = super::pod::TakeUp::Ended(Box::new(record.clone()));
                let never = CancellationToken::new();
                if let Err(error) = Box::pin(super::pod::take_up(
                    project,
                    settings,
                    env,
                    record.clone(),
                    how,
                    events,
                    &never,
                ))
                .await
                {
                    tracing::warn!("the run's pod: {}", super::start::error_chain(&error));
                }
            }
            Ok(CancelOutcome::Cancelled { record, leftovers })
        }
        // RUN-42: the job is stopped; only the record could not say so.
        Err(RunError::Io { path, source }) if path == run_json => {
            emit(
                events,
                RunEvent::Warning(RunWarning::CancelNotRecorded {
                    run_id: run_id.to_owned(),
                    cause: source.to_string(),
                    state: unrecorded.state,
                }),
            );
            unrecorded.state = State::Cancelled;
            unrecorded.message = Some(if leftovers.is_empty() {
                "cancelled with `train cancel`; not recorded".to_owned()
            } else {
                format!(
                    "{}; not recorded",
                    follow::leftovers_message(run_id, &leftovers)
                )
            });
            Ok(CancelOutcome::Cancelled {
                record: unrecorded,
                leftovers,
            })
        }
        Err(error) => Err(error),
    }
}

/// `train cancel` as `access` allows: the whole cancel with the project lock ([`cancel`]),
/// only the job on the target beside a process that follows the run
/// ([`cancel_followed`], LCK-9).
///
/// # Errors
///
/// As [`cancel`] and [`cancel_followed`].
pub async fn cancel_as(
    access: &Access,
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    run_id: &str,
    events: &Events,
) -> Result<CancelOutcome, RunError> {
    match access {
        Access::Locked(_) => cancel(project, settings, env, run_id, events).await,
        Access::Beside { .. } => cancel_followed(project, settings, env, run_id).await,
    }
}

/// `train cancel` while another overbrainer process holds the project and follows
/// run `run_id` (LCK-9): cancels the job on the target from the run's record alone
/// and leaves the retrieval and the record to that process. Writes nothing in the
/// project.
///
/// # Errors
///
/// As [`cancel`], without the retrieval.
pub async fn cancel_followed(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    run_id: &str,
) -> Result<CancelOutcome, RunError> {
    let record = RunRecord::load(&project.runs_dir(), run_id)?;
    let job = cancellable(&record, run_id)?;
    let (record, executor) = open(project, settings, env, run_id).await?;
    let exec = |source| RunError::Exec {
        target: record.target.clone(),
        source: Box::new(source),
    };
    if let Some(merge_job) = running_merge(&executor, &record).await.map_err(exec)? {
        // The `train merge` that follows it records the cancelled merge.
        let leftovers = cancel_job(&executor, &merge_job).await.map_err(exec)?;
        return Ok(CancelOutcome::OnTarget { record, leftovers });
    }
    let status = executor.job_status(&job).await.map_err(exec)?;
    if status != JobStatus::Running {
        if job.container().is_some() {
            cancel_job(&executor, &job).await.map_err(exec)?;
        }
        return Ok(CancelOutcome::AlreadyEnded { record, status });
    }
    let leftovers = cancel_job(&executor, &job).await.map_err(exec)?;
    Ok(CancelOutcome::OnTarget { record, leftovers })
}

/// The metric summary of a run, read from its `metrics.jsonl` on the target.
async fn summary_of(executor: &AnyExecutor, record: &RunRecord) -> Summary {
    let mut summary = Summary::default();
    let path = format!("{}/{}", record.dir, crate::train::metrics::METRICS_FILE);
    let mut stream = executor.tail(&path, 0);
    let mut reader = crate::train::metrics::MetricReader::new();
    while let Ok(lines) = stream.poll().await {
        if lines.is_empty() {
            break;
        }
        for line in lines {
            if let Some(line) = reader.parse(&line).into_line() {
                summary.observe(&line);
            }
        }
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(state: State, message: Option<&str>) -> RunRecord {
        RunRecord {
            job: Some(
                crate::exec::JobId {
                    dir: "/w/r_1".into(),
                    pid: crate::exec::Pid::new(42).unwrap(),
                    container: None,
                }
                .into(),
            ),
            message: message.map(str::to_owned),
            retrieved: true,
            ..crate::runs::record::fixture("r_1", state)
        }
    }

    #[test]
    fn only_a_cancel_that_left_processes_behind_can_be_cancelled_again() {
        let with_leftovers = follow::leftovers_message("r_1", &[7, 9]);
        assert!(with_leftovers.starts_with("cancelled with leftovers: 7 9;"));
        let cases = [
            (State::Cancelled, Some(with_leftovers.as_str()), true),
            (
                State::Cancelled,
                Some("cancelled with `train cancel`"),
                false,
            ),
            (State::Cancelled, None, false),
            (State::Failed, Some(with_leftovers.as_str()), false),
            (State::Running, None, false),
        ];
        for (state, message, again) in cases {
            let record = record(state, message);
            assert_eq!(has_leftovers(&record), again, "{state:?} {message:?}");
            let refused = cancellable(&record, "r_1").is_err();
            assert_eq!(
                refused,
                state == State::Cancelled && !again,
                "{state:?} {message:?}"
            );
        }
        let mut never_started = record(State::Running, None);
        never_started.job = None;
        let error = cancellable(&never_started, "r_1").unwrap_err();
        assert!(
            error.to_string().contains("has not started a job"),
            "{error}"
        );
    }
}

//! `train merge RUN_ID` \[design\]: redoes `axolotl merge-lora axolotl.yaml` alone for a
//! `merge_failed` run (see [`super::ending`]), on the run's target and in its run
//! directory, as the training job's merge stage did, without training again.
//!
//! The merge runs as a detached job of its own whose directory is a new `merge-<n>/`
//! inside the run directory (claimed like a run directory, RUN-3), so the training
//! job's `job.pid`, `exit_code` and `job.log` stay as they were. Its script
//! ([`crate::train::job::merge_script`]) has the runtime's prelude the training job had,
//! changes to the run directory, removes the failed merge's partial `output/merged/`,
//! and runs the training job's merge command (so a container runtime works the same).
//! The job is recorded as `merge_job` in `run.json`.
//!
//! The follower polls it like a training job. A Ctrl-C, or six failed reaches in a row,
//! end the following only: the merge goes on and the next `train merge` follows it
//! again. Once it exited 0, `output/merged/` and `merge-<n>/` are retrieved and checked
//! against the target's manifest and the run is recorded `succeeded`; a merge that
//! failed leaves the run `merge_failed`, its message pointing at `merge-<n>/job.log`.
//! What to do on each call is the pure [`plan`].

use tokio_util::sync::CancellationToken;

use super::control::open;
use super::follow::{DetachReason, Outcome, log_pointer};
use super::lifecycle::Rules;
use super::lifecycle::transitions::{self, MergeEnd};
use super::record::{RunRecord, State};
use super::retrieve::retrieve_merge;
use super::start::{error_chain, job_secrets};
use super::{Events, Refusal, RunError, RunEvent, RunWarning, emit, target};
use crate::config::{EnvSnapshot, Settings};
use crate::exec::{AnyExecutor, Executor as _, JOB_LOG, JobCommand, JobHandle, JobStatus};
use crate::project::Project;
use crate::train::axolotl::{MERGED_DIR, OUTPUT_DIR};
use crate::train::job::merge_script;
use crate::train::phase::Phase;

/// Prefix of the directories of merge jobs, inside the run directory.
pub const MERGE_DIR_PREFIX: &str = "merge-";

/// What `train merge` does with a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Refuse, with the reason and the fix.
    Refuse(Refusal),
    /// Start a new merge job.
    Start,
    /// Follow the recorded merge job, which is still running.
    Follow,
    /// Retrieve the result of the recorded merge job, which exited 0.
    Collect,
}

/// What `train merge` does with run `run_id` in `state`, whose recorded merge job
/// (if any) reads `merge_job` now.
#[must_use]
pub fn plan(run_id: &str, state: State, merge: bool, merge_job: Option<JobStatus>) -> Plan {
    match state {
        State::MergeFailed => match merge_job {
            Some(JobStatus::Running) => Plan::Follow,
            Some(JobStatus::Exited(0)) => Plan::Collect,
            Some(_) | None => Plan::Start,
        },
        State::Succeeded if merge => Plan::Refuse(Refusal::AlreadyMerged {
            run_id: run_id.to_owned(),
        }),
        State::Starting | State::Pending | State::Running => {
            Plan::Refuse(Refusal::MergeOfLiveRun {
                run_id: run_id.to_owned(),
                state,
            })
        }
        _ => Plan::Refuse(Refusal::NotMergeFailed {
            run_id: run_id.to_owned(),
            state,
        }),
    }
}

/// `train merge`: redoes the merge of run `run_id`, follows it and retrieves the merged
/// model. Returns the run as it ended (`succeeded`, or `merge_failed` with the cause),
/// or detached from a merge that goes on.
///
/// # Errors
///
/// A refusal for a run whose merge did not fail or whose adapter is no longer on its
/// target; the errors of [`open`]; [`RunError::Exec`] when the merge cannot start;
/// [`RunError::MergeRetrieval`] when the merged model cannot be retrieved (the run stays
/// `merge_failed`, and `train merge` retries).
pub async fn merge(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    run_id: &str,
    events: &Events,
    cancel: &CancellationToken,
) -> Result<Outcome, RunError> {
    let record = RunRecord::load(&project.runs_dir(), run_id)?;
    if record.state != State::MergeFailed {
        if let Plan::Refuse(reason) = plan(run_id, record.state, record.merge, None) {
            return Err(reason.into());
        }
    }
    // LCK-9: a `train cancel` from another terminal cancels the merge job on the
    // target and leaves the record to this process.
    let _following = match project.follow_lock(run_id) {
        Ok(lock) => Some(lock),
        Err(error) => {
            tracing::debug!("run `{run_id}` not marked as followed: {error}");
            None
        }
    };
    let (mut record, executor) = open(project, settings, env, run_id).await?;
    let exec = |source| RunError::Exec {
        target: record.target.clone(),
        source: Box::new(source),
    };
    let status = match &record.merge_job {
        Some(job) => Some(executor.job_status(job).await.map_err(exec)?),
        None => None,
    };
    let job = match plan(run_id, record.state, record.merge, status) {
        Plan::Refuse(reason) => return Err(reason.into()),
        Plan::Follow | Plan::Collect => {
            record
                .merge_job
                .clone()
                .ok_or_else(|| Refusal::NoMergeJob {
                    run_id: run_id.to_owned(),
                })?
        }
        Plan::Start => {
            let job = start(settings, env, &executor, &record).await?;
            let dir_name = merge_dir_name(&record, &job);
            transitions::merge_started(&mut record, job.clone(), &dir_name);
            record.save(&project.runs_dir())?;
            job
        }
    };
    emit(
        events,
        RunEvent::Following {
            run_id: record.id.clone(),
            target: record.target.clone(),
        },
    );
    emit(events, RunEvent::Phase(Phase::Merging));
    let status = match follow_job(&executor, &record, &job, events, cancel).await {
        Ok(status) => status,
        Err(reason) => return Ok(Outcome::Detached { record, reason }),
    };
    conclude(project, &executor, record, &job, status, events).await
}

/// The name of the merge job's directory inside the run directory.
fn merge_dir_name(record: &RunRecord, job: &JobHandle) -> String {
    job.dir()
        .strip_prefix(record.dir.trim_end_matches('/'))
        .map_or_else(
            || job.dir().to_owned(),
            |rest| rest.trim_start_matches('/').to_owned(),
        )
}

/// Checks that the adapter is still on the target, claims a new `merge-<n>/` and starts
/// the merge job there.
async fn start(
    settings: &Settings,
    env: &EnvSnapshot,
    executor: &AnyExecutor,
    record: &RunRecord,
) -> Result<JobHandle, RunError> {
    let exec = |source| RunError::Exec {
        target: record.target.clone(),
        source: Box::new(source),
    };
    let adapter = executor
        .manifest(
            &record.dir,
            &[OUTPUT_DIR.to_owned()],
            &["checkpoint-*".to_owned(), MERGED_DIR.to_owned()],
        )
        .await
        .map_err(exec)?;
    let has = |name: &str| {
        adapter
            .iter()
            .any(|f| f.path == format!("{OUTPUT_DIR}/{name}"))
    };
    if !has("adapter_config.json")
        || !(has("adapter_model.safetensors") || has("adapter_model.bin"))
    {
        return Err(Refusal::AdapterGone {
            run_id: record.id.clone(),
            dir: record.dir.clone(),
            target: record.target.clone(),
        }
        .into());
    }
    let resolved = target::resolve(settings, &record.target)?;
    target::check_engine(executor, &record.target, &resolved.runtime).await?;
    let secrets = job_secrets(settings, env).await?;
    let spec = target::job_spec(record, executor, &resolved.runtime, &secrets);
    let owner = format!("{} {:016x}", std::process::id(), rand::random::<u64>());
    let mut n = 1_u32;
    let dir = loop {
        let dir = format!("{}/{MERGE_DIR_PREFIX}{n}", record.dir.trim_end_matches('/'));
        if executor.claim(&dir, &owner).await.map_err(exec)? {
            break dir;
        }
        n += 1;
    };
    let job = JobCommand {
        dir,
        ..spec.job(&merge_script(&spec), secrets)
    };
    executor.spawn_job(&job).await.map_err(exec)
}

/// Polls the merge job until it ends; `Err` with the reason when the following stops
/// first (Ctrl-C, or the target unreachable [`Rules::max_failed_reaches`] times in a
/// row).
async fn follow_job(
    executor: &AnyExecutor,
    record: &RunRecord,
    job: &JobHandle,
    events: &Events,
    cancel: &CancellationToken,
) -> Result<JobStatus, DetachReason> {
    let mut log = executor.tail(&format!("{}/{JOB_LOG}", job.dir()), 0);
    let rules = Rules::scaled(executor.time_scale());
    let mut failures = 0;
    loop {
        if let Ok(lines) = log.poll().await {
            for line in lines {
                emit(events, RunEvent::JobLog(line));
            }
        }
        match executor.job_status(job).await {
            Ok(status) if status.is_finished() => return Ok(status),
            Ok(_) => failures = 0,
            Err(error) => {
                failures += 1;
                emit(
                    events,
                    RunEvent::Warning(RunWarning::Unreachable {
                        target: record.target.clone(),
                        failures,
                        limit: rules.max_failed_reaches,
                        cause: error_chain(&error),
                    }),
                );
                if failures >= rules.max_failed_reaches {
                    return Err(DetachReason::Unreachable {
                        target: record.target.clone(),
                        times: rules.max_failed_reaches,
                    });
                }
            }
        }
        tokio::select! {
            () = cancel.cancelled() => return Err(DetachReason::Interrupted),
            () = tokio::time::sleep(rules.poll_interval) => {}
        }
    }
}

/// Records how the merge job ended: retrieves the merged model and records the run
/// `succeeded`, or keeps it `merge_failed` with the cause.
async fn conclude(
    project: &Project,
    executor: &AnyExecutor,
    mut record: RunRecord,
    job: &JobHandle,
    status: JobStatus,
    events: &Events,
) -> Result<Outcome, RunError> {
    let runs_dir = project.runs_dir();
    let local_dir = project.run_dir(&record.id);
    let dir_name = merge_dir_name(&record, job);
    emit(events, RunEvent::Phase(Phase::Retrieving));
    if status == JobStatus::Exited(0) {
        let retrieved = retrieve_merge(executor, &record, &local_dir, &dir_name, true).await;
        let merged = local_dir.join(OUTPUT_DIR).join(MERGED_DIR);
        let produced = std::fs::read_dir(&merged).is_ok_and(|mut d| d.next().is_some());
        match retrieved {
            Ok(()) => {
                let end = if produced {
                    MergeEnd::Merged
                } else {
                    MergeEnd::Empty
                };
                transitions::merge_ended(&mut record, &dir_name, &end);
                record.save(&runs_dir)?;
                return Ok(Outcome::Ended(record));
            }
            Err(error) => {
                let reason = match error {
                    RunError::Retrieval { reason, .. } => reason,
                    other => return Err(other),
                };
                transitions::merge_ended(
                    &mut record,
                    &dir_name,
                    &MergeEnd::Pending(reason.clone()),
                );
                record.save(&runs_dir)?;
                return Err(RunError::MergeRetrieval {
                    run_id: record.id.clone(),
                    reason,
                });
            }
        }
    }
    // The merge failed: its log, for the message (best effort: the run stays
    // `merge_failed` either way).
    if let Err(error) = retrieve_merge(executor, &record, &local_dir, &dir_name, false).await {
        emit(
            events,
            RunEvent::Warning(RunWarning::MergeLogUnretrieved {
                run_id: record.id.clone(),
                log: format!("{dir_name}/{JOB_LOG}"),
                cause: error.to_string(),
            }),
        );
    }
    let pointer = log_pointer(
        &local_dir,
        &record.id,
        &format!("{dir_name}/{JOB_LOG}"),
        false,
    );
    transitions::merge_ended(
        &mut record,
        &dir_name,
        &MergeEnd::Failed { status, pointer },
    );
    record.save(&runs_dir)?;
    Ok(Outcome::Ended(record))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_run_state_and_merge_job_gives_its_plan() {
        use JobStatus::{Cancelled, Exited, Lost, Running};
        let cases: Vec<(State, bool, Option<JobStatus>, Plan)> = vec![
            (State::MergeFailed, true, None, Plan::Start),
            (State::MergeFailed, true, Some(Running), Plan::Follow),
            (State::MergeFailed, true, Some(Exited(0)), Plan::Collect),
            (State::MergeFailed, true, Some(Exited(1)), Plan::Start),
            (State::MergeFailed, true, Some(Cancelled), Plan::Start),
            (State::MergeFailed, true, Some(Lost), Plan::Start),
        ];
        for (state, merge, job, expected) in cases {
            assert_eq!(
                plan("r_1", state, merge, job),
                expected,
                "{state:?} {job:?}"
            );
        }
        for (state, merge, reason) in [
            (State::Succeeded, true, "already merged"),
            (State::Succeeded, false, "succeeded without a merge"),
            (State::Running, true, "`overbrainer train attach r_1`"),
            (State::Pending, true, "is pending"),
            (State::Starting, true, "is starting"),
            (State::Failed, true, "is failed"),
            (State::Stopped, true, "is stopped"),
            (State::Cancelled, true, "is cancelled"),
        ] {
            let Plan::Refuse(refusal) = plan("r_1", state, merge, Some(JobStatus::Running)) else {
                panic!("{state:?} not refused");
            };
            let text = refusal.to_string();
            assert!(text.contains(reason), "{state:?}: {text}");
        }
    }
}

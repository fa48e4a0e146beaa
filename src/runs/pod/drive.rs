//! The pod's life with the run's part on it and the run's follower beside it, for a
//! new run ([`super::train`]) and for one taken up again ([`super::attach`]); and the
//! run's result from how both ended.

use std::sync::{Arc, Mutex, PoisonError};

use tokio_util::sync::CancellationToken;

use super::failure::{failure_text, loses_the_job};
use super::{POD_WORKDIR, job};
use crate::env::TimeScale;
use crate::project::Project;
use crate::runpod::api::RunpodClient;
use crate::runpod::driver::{self, Ending, PodHooks, PodPlan};
use crate::runpod::keys;
use crate::runpod::lifecycle::{Event, Notice, PodState};
use crate::runpod::record::{PodContext, PodRecord};
use crate::runs::follow::{DetachReason, Outcome};
use crate::runs::lifecycle::transitions;
use crate::runs::record::RunRecord;
use crate::runs::{Events, RunError, RunEvent, RunWarning, emit};

/// Writes `pod.json` and hands the pod's notices to the front end.
pub(super) struct Hooks<'a> {
    events: &'a Events,
    run_dir: std::path::PathBuf,
    /// The project's root, whose ledger holds the pod's spend.
    root: std::path::PathBuf,
    context: PodContext,
}

impl PodHooks for Hooks<'_> {
    fn notice(&mut self, notice: &Notice) {
        emit(self.events, RunEvent::Pod(notice.clone()));
    }

    fn record(&mut self, state: &PodState) -> Result<(), String> {
        PodRecord::new(&self.context, state)
            .save(&self.run_dir)
            .map_err(|e| e.to_string())?;
        // Issue 20: the pod's spend so far, final once it is deleted.
        if let Some(line) = super::budget::line(&self.context.run_id, state, driver::now()) {
            if let Err(error) = super::budget::append_line(&self.root, &line) {
                tracing::warn!("cannot write the pod's spend to the ledger: {error}");
            }
        }
        Ok(())
    }
}

/// What the run's part on its pod needs besides the pod.
pub(super) struct Part<'a> {
    pub(super) project: &'a Project,
    pub(super) target: &'a str,
    pub(super) runtime: crate::exec::JobRuntime,
    pub(super) merge: bool,
    /// How the train stage launches Axolotl: a process per GPU of the pod.
    pub(super) launch: crate::train::launch::Launch,
    pub(super) secrets: Vec<(String, secrecy::SecretString)>,
    pub(super) scale: TimeScale,
    /// The stall policy of `[training]` (issue 21).
    pub(super) stall: crate::train::stall::Policy,
    /// `--keep-pod` (POD-61).
    pub(super) keep_pod: bool,
    /// `max_volume_gb` of the target: how far the disk watch may grow its network
    /// volume (POD-47).
    pub(super) max_volume_gb: Option<u32>,
    pub(super) events: &'a Events,
    pub(super) cancel: &'a CancellationToken,
}

/// How the pod's life is taken up.
pub(super) enum Start {
    /// A new pod: the job starts once it is ready.
    Fresh,
    /// A pod this process connected to again whose job runs: followed at once
    /// (`requested`: a `train stop` placed the snapshot request, RUN-26).
    Follow {
        pod: Box<crate::exec::SshExecutor>,
        requested: bool,
    },
    /// A pod whose run ended and was retrieved by this process (`train cancel`): it is
    /// marked retrieved and deleted.
    Ended {
        pod: Box<crate::exec::SshExecutor>,
        record: Box<RunRecord>,
    },
}

/// Drives the pod's life with the run's part on it and the run's follower beside it;
/// what the driver returned and what the follower left.
#[allow(
    clippy::too_many_arguments,
    reason = "the pod's plan, state and start, and the run's part"
)]
pub(super) async fn run_pod(
    part: &Part<'_>,
    client: &RunpodClient,
    plan: &PodPlan,
    context: PodContext,
    record: RunRecord,
    state: PodState,
    first: Event,
    start: Start,
) -> (Result<driver::Driven, driver::DriveError>, job::Shared) {
    let disk = super::disk::Plan {
        client,
        volume: context
            .network_volume_id
            .clone()
            .map(|id| (id, part.max_volume_gb)),
        scale: part.scale,
    };
    let mut hooks = Hooks {
        events: part.events,
        run_dir: part.project.run_dir(&record.id),
        root: part.project.root().to_path_buf(),
        context,
    };
    let shared: job::SharedRef = Arc::new(Mutex::new(job::Shared::default()));
    let (begin_tx, begin_rx) = tokio::sync::oneshot::channel();
    let mut run = job::PodRun {
        project: part.project,
        record: record.clone(),
        runtime: part.runtime.clone(),
        workdir: POD_WORKDIR.to_owned(),
        scale: part.scale,
        stall: part.stall,
        merge: part.merge,
        launch: part.launch,
        secrets: part.secrets.clone(),
        shared: Arc::clone(&shared),
        begin: None,
        seen: 0,
    };
    let pod = match start {
        Start::Fresh => {
            run.begin = Some(begin_tx);
            None
        }
        Start::Follow { pod, requested } => {
            let destination = pod.destination();
            lock_shared(&shared).endpoint = Some((destination.host.clone(), destination.port));
            let _ = begin_tx.send(job::Begin::new(
                record,
                pod.destination().clone(),
                part.scale,
                part.stall,
                requested,
            ));
            Some(*pod)
        }
        Start::Ended { pod, record } => {
            let destination = pod.destination();
            lock_shared(&shared).endpoint = Some((destination.host.clone(), destination.port));
            job::ended(&shared, *record);
            Some(*pod)
        }
    };
    let stop = CancellationToken::new();
    let driving = async {
        let driven = driver::drive_on(
            client,
            plan,
            state,
            first,
            &mut run,
            &mut hooks,
            part.cancel,
            pod,
        )
        .await;
        stop.cancel();
        driven
    };
    let following = job::follower(
        part.project,
        begin_rx,
        Arc::clone(&shared),
        part.events,
        part.cancel,
        &stop,
        &disk,
    );
    let (driven, ()) = Box::pin(async { tokio::join!(driving, following) }).await;
    let left = std::mem::take(&mut *shared.lock().unwrap_or_else(PoisonError::into_inner));
    (driven, left)
}

fn lock_shared(shared: &job::SharedRef) -> std::sync::MutexGuard<'_, job::Shared> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// POD-61: the command that reaches a kept pod, once its job exists.
fn keep_pod_command(run: &Part<'_>, run_id: &str, reached: Option<&(String, Option<u16>)>) {
    let Some((host, port)) = reached else {
        return;
    };
    let config = run
        .project
        .run_dir(run_id)
        .join(keys::SSH_DIR)
        .join(keys::CONFIG);
    let port_option = port.map_or_else(String::new, |p| format!(" -p {p}"));
    let command = format!(
        "ssh -F {}{port_option} {}",
        crate::exec::quote(&config.to_string_lossy()),
        crate::exec::quote(host)
    );
    emit(
        run.events,
        RunEvent::Warning(RunWarning::PodKept {
            run_id: run_id.to_owned(),
            command,
        }),
    );
}

/// The run's result from the pod's end and the follower's.
pub(super) fn conclude(
    part: &Part<'_>,
    record: RunRecord,
    driven: Result<driver::Driven, driver::DriveError>,
    shared: job::Shared,
) -> Result<Outcome, RunError> {
    let runs_dir = part.project.runs_dir();
    let run_id = record.id.clone();
    let job::Shared {
        result,
        started,
        not_retrieved,
        endpoint,
        ..
    } = shared;
    if part.keep_pod
        && started
            .as_ref()
            .or(Some(&record))
            .is_some_and(|r| r.job.is_some())
    {
        keep_pod_command(part, &run_id, endpoint.as_ref());
    }
    let driven = match driven {
        Ok(driven) => driven,
        Err(error) => {
            let mut record = started.unwrap_or(record);
            if record.job.is_none() {
                transitions::start_failed(&mut record, &error.to_string());
                let _ = record.save(&runs_dir);
            }
            return Err(RunError::Pod {
                run_id,
                reason: error.to_string(),
            });
        }
    };
    if let Some(left) = &driven.secret_left {
        tracing::warn!("the run's host-key secret could not be deleted: {left}");
    }
    match (driven.ending, result) {
        (Ending::Done(None), Some(result)) => result,
        (Ending::Done(Some(failure)), Some(result)) => {
            let text = failure_text(part.target, &failure);
            emit(
                part.events,
                RunEvent::Warning(RunWarning::PodFailed(text.clone())),
            );
            match result {
                // The follower lost the pod under it: the run is over (POD-37, POD-41).
                Ok(Outcome::Detached { mut record, .. }) if loses_the_job(&failure) => {
                    transitions::pod_lost(&mut record, &text);
                    record.save(&runs_dir)?;
                    Ok(Outcome::Ended(record))
                }
                other => other,
            }
        }
        (Ending::Detached, Some(Ok(outcome))) if not_retrieved.is_none() => Ok(outcome),
        (Ending::Detached, Some(result)) => match result {
            Ok(Outcome::Ended(record)) => Err(RunError::Retrieval {
                run_id: record.id,
                reason: not_retrieved.unwrap_or_default(),
            }),
            other => other,
        },
        (ending, None) => {
            // The job never ran, or its follower never began.
            let mut record = started.unwrap_or(record);
            if record.job.is_some() {
                if let Ending::Detached = ending {
                    return Ok(Outcome::Detached {
                        record,
                        reason: DetachReason::Interrupted,
                    });
                }
            }
            let reason = match &ending {
                Ending::Done(Some(failure)) => failure_text(part.target, failure),
                Ending::Done(None) | Ending::Detached => {
                    not_retrieved.unwrap_or_else(|| "the pod's life ended first".to_owned())
                }
            };
            if record.job.is_none() {
                transitions::start_failed(&mut record, &reason);
                let _ = record.save(&runs_dir);
            }
            Err(RunError::Pod { run_id, reason })
        }
    }
}

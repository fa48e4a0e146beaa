//! A training run on a `runpod` target (spec/runpod.md sections 5-8, 10, 12; issue 12):
//! the checks of every run first, then the refusals that need no pod (no
//! `OVERBRAINER_RUNPOD__API_KEY`, `"auto"`, a key that cannot manage secrets: POD-4,
//! POD-21), the local run directory and its start files, the run's SSH keys and its
//! host-key secret, and then the pod's life ([`crate::runpod::driver::drive`]) with the
//! run's own part on it ([`job::PodRun`]): upload, the job, the run's follower beside
//! the pod's driver, the checkpoint check on the pod ([`checkpoint`]), the retrieved
//! mark, the deletion until gone.
//!
//! The run directory on the pod is `<POD_WORKDIR>/<run-id>`; `run.json` records it, with
//! the run ID as the claim's owner (the pod's bootstrap claims the directory for it).

pub mod checkpoint;
mod job;
pub mod manage;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::follow::{DetachReason, Outcome};
use super::lifecycle::transitions;
use super::record::{RunRecord, State, TargetKind};
use super::start::{self, StartOptions, error_chain};
use super::{Events, Refusal, RunError, RunEvent, emit, id};
use crate::config::{AdapterKind, EnvSnapshot, ListOrAuto, RunpodTarget, Settings};
use crate::env::TimeScale;
use crate::llm::Redactor;
use crate::project::Project;
use crate::runpod::api::{RunpodClient, pod_name};
use crate::runpod::body::{PodSpec, create_body};
use crate::runpod::driver::{self, Ending, PodHooks, PodPlan};
use crate::runpod::keys::{self, KeyError};
use crate::runpod::lifecycle::{Event, Notice, PodFailure, PodState, Rules};
use crate::runpod::record::{PodContext, PodRecord};

pub use super::target::POD_WORKDIR;

/// How long one Runpod API call may take.
const API_TIMEOUT: Duration = Duration::from_secs(60);

/// Test-suite knob (ENV-5 reserves `OVERBRAINER_TEST_*`): the API base the pods' own
/// watchdog calls, when the test's stand-in is reached at another address from inside
/// its pods' network than from this machine (real Runpod has one address for both).
pub const POD_API_VAR: &str = "OVERBRAINER_TEST_RUNPOD_POD_BASE_URL";

/// The Runpod key's variable (POD-4).
pub const KEY_VAR: &str = "OVERBRAINER_RUNPOD__API_KEY";

/// A client of the Runpod API with the account's key, resolved now (POD-4).
///
/// # Errors
/// [`Refusal::NoRunpodKey`] when the key is unset; [`RunError::RunpodKey`] when it cannot
/// be resolved or used.
pub async fn client(settings: &Settings, env: &EnvSnapshot) -> Result<RunpodClient, RunError> {
    let Some(reference) = &settings.runpod.api_key else {
        return Err(Refusal::NoRunpodKey {
            variable: KEY_VAR.to_owned(),
        }
        .into());
    };
    let key = crate::secrets::Resolver::new(env)
        .resolve(KEY_VAR, reference)
        .await
        .map_err(|e| RunError::RunpodKey(e.to_string()))?;
    RunpodClient::new(
        settings.runpod.endpoint(),
        key,
        Redactor::new(),
        API_TIMEOUT,
    )
    .map_err(|e| RunError::RunpodKey(e.to_string()))
}

/// `"auto"` comes with the next Runpod issue: refused naming the key, before anything.
fn refuse_auto(name: &str, target: &RunpodTarget) -> Result<(), RunError> {
    let auto = |key: &str| {
        Err(Refusal::RunpodAuto {
            key: format!("targets.{name}.{key}"),
        }
        .into())
    };
    if matches!(target.gpu_types, ListOrAuto::Auto(_)) {
        return auto("gpu_types");
    }
    if matches!(target.data_center_ids, Some(ListOrAuto::Auto(_))) {
        return auto("data_center_ids");
    }
    Ok(())
}

/// Writes `pod.json` and hands the pod's notices to the front end.
struct Hooks<'a> {
    events: &'a Events,
    run_dir: std::path::PathBuf,
    context: PodContext,
}

impl PodHooks for Hooks<'_> {
    fn notice(&mut self, notice: &Notice) {
        emit(self.events, RunEvent::Pod(notice.clone()));
    }

    fn record(&mut self, state: &PodState) -> Result<(), String> {
        PodRecord::new(&self.context, state)
            .save(&self.run_dir)
            .map_err(|e| e.to_string())
    }
}

/// Starts a run of `project` on its `runpod` target and follows it until it ends or the
/// follower detaches; the caller holds the project lock.
///
/// # Errors
/// A [`RunError`]: a refusal before any pod exists (nothing is left on disk), a start
/// that failed (the run recorded `failed` with the cause, its pod deleted), or what the
/// run's following reported.
#[allow(
    clippy::too_many_lines,
    reason = "one sequence of start steps, read top to bottom"
)]
pub async fn train(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    options: &StartOptions,
    events: &Events,
    cancel: &CancellationToken,
) -> Result<Outcome, RunError> {
    let (target, inputs, yaml) = start::check(project, settings, options)?;
    let Some(runpod) = target.runpod.as_deref() else {
        return Err(Refusal::UnknownTarget {
            name: target.name.clone(),
            known: settings.targets.keys().cloned().collect(),
        }
        .into());
    };
    refuse_auto(&target.name, runpod)?;
    let training = start::training(settings)?;
    start::warn(settings, events);
    let client = client(settings, env).await?;
    let secrets = start::job_secrets(settings, env).await?;
    let scale = TimeScale::from_env(env);
    // Reconciliation (issue 12): pods past their bound go first, whoever made them.
    for done in manage::reconcile(&client, scale).await? {
        emit(
            events,
            RunEvent::Warning(super::RunWarning::PodReconciled {
                pod: done.pod,
                run_id: done.run_id,
                failed: done.failed,
            }),
        );
    }
    let rules = Rules::new(runpod, options.keep_pod, scale);

    // The ID: a free local directory; the pod is fresh, so no claim can be taken yet.
    let runs_dir = project.runs_dir();
    std::fs::create_dir_all(&runs_dir).map_err(|source| RunError::Io {
        path: runs_dir.clone(),
        source,
    })?;
    let created = jiff::Timestamp::now();
    let base = id::base_id(&settings.project.name, created);
    let (run_id, local_dir) = (1..)
        .map(|n| id::candidate(&base, n))
        .find_map(|candidate| {
            let dir = runs_dir.join(&candidate);
            match std::fs::create_dir(&dir) {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => None,
                result => Some(result.map(|()| (candidate, dir))),
            }
        })
        .unwrap_or_else(|| Err(std::io::Error::other("no free run ID")))
        .map_err(|source| RunError::Io {
            path: runs_dir.clone(),
            source,
        })?;

    // POD-21: the key must manage account secrets before anything else is made; the
    // run's keys are made for that check, and nothing stays when it fails.
    let keys = match keys::create(&local_dir, &run_id).await {
        Ok(keys) => keys,
        Err(error) => {
            let _ = std::fs::remove_dir_all(&local_dir);
            return Err(RunError::Pod {
                run_id,
                reason: error_chain(&error),
            });
        }
    };
    let secret = match keys::create_host_secret(&client, &run_id, &keys).await {
        Ok(secret) => secret,
        Err(error) => {
            let _ = std::fs::remove_dir_all(&local_dir);
            return Err(match error {
                KeyError::NoSecretsAccess { status } => Refusal::NoSecretsAccess { status }.into(),
                other => RunError::Pod {
                    run_id,
                    reason: error_chain(&other),
                },
            });
        }
    };

    let merge = training.merge && training.adapter != AdapterKind::Full;
    let pod_dir = format!("{POD_WORKDIR}/{run_id}");
    let mut record = RunRecord {
        id: run_id.clone(),
        created,
        target: target.name.clone(),
        target_kind: TargetKind::Runpod,
        dir: pod_dir.clone(),
        owner: run_id.clone(),
        job: None,
        state: State::Starting,
        message: None,
        snapshots: true,
        snapshot: None,
        resumed_from: options.resume_from.clone(),
        merge,
        merge_job: None,
        max_steps: None,
        last_step: None,
        epoch: None,
        last_loss: None,
        last_eval_loss: None,
        retrieved: false,
    };
    let made = record
        .save(&runs_dir)
        .and_then(|()| start::prepare(&local_dir, &inputs, &yaml));
    let body = made.and_then(|()| {
        create_body(&PodSpec {
            target: runpod,
            run_id: &run_id,
            run_dir: &pod_dir,
            api_base: env
                .get(POD_API_VAR)
                .unwrap_or_else(|| settings.runpod.endpoint()),
            keys: &keys,
            rules: &rules,
            now: driver::now(),
        })
        .map_err(|e| {
            RunError::Refused(Refusal::Axolotl {
                reason: e.to_string(),
            })
        })
    });
    let (body, gpu_types) = match body {
        Ok(made) => made,
        Err(error) => {
            let _ = client.delete_secret(&secret.id).await;
            transitions::start_failed(&mut record, &error_chain(&error));
            let _ = record.save(&runs_dir);
            return Err(error);
        }
    };
    let context = PodContext {
        run_id: run_id.clone(),
        pod_name: pod_name(&run_id),
        data_center_ids: body.data_center_ids.clone(),
        network_volume_id: runpod.network_volume_id.clone(),
        host_key_secret_id: Some(secret.id.clone()),
    };
    let plan = PodPlan {
        body,
        ssh_config: keys.config.clone(),
        workdir: POD_WORKDIR.to_owned(),
        run_dir: pod_dir,
        host_key_secret: Some(secret.id),
        job_poll: scale.scale(Duration::from_secs(5)),
        time_scale: scale,
    };
    let part = Part {
        project,
        target: &target.name,
        runtime: target.runtime.clone(),
        merge,
        secrets,
        scale,
        keep_pod: options.keep_pod,
        events,
        cancel,
    };
    let state = PodState::new(rules, gpu_types);
    let first = Event::Began { at: driver::now() };
    let (driven, shared) = run_pod(
        &part,
        &client,
        &plan,
        context,
        record.clone(),
        state,
        first,
        Start::Fresh,
    )
    .await;
    conclude(&part, record, driven, shared)
}

/// What the run's part on its pod needs besides the pod.
struct Part<'a> {
    project: &'a Project,
    target: &'a str,
    runtime: crate::exec::JobRuntime,
    merge: bool,
    secrets: Vec<(String, secrecy::SecretString)>,
    scale: TimeScale,
    /// `--keep-pod` (POD-61).
    keep_pod: bool,
    events: &'a Events,
    cancel: &'a CancellationToken,
}

/// How the pod's life is taken up.
enum Start {
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
async fn run_pod(
    part: &Part<'_>,
    client: &RunpodClient,
    plan: &PodPlan,
    context: PodContext,
    record: RunRecord,
    state: PodState,
    first: Event,
    start: Start,
) -> (Result<driver::Driven, driver::DriveError>, job::Shared) {
    let mut hooks = Hooks {
        events: part.events,
        run_dir: part.project.run_dir(&record.id),
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
        merge: part.merge,
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
        RunEvent::Warning(super::RunWarning::PodKept {
            run_id: run_id.to_owned(),
            command,
        }),
    );
}

/// The run's result from the pod's end and the follower's.
fn conclude(
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
            emit(
                part.events,
                RunEvent::Warning(super::RunWarning::PodFailed(failure_text(
                    part.target,
                    &failure,
                ))),
            );
            result
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

/// What a pod's failure means for the run, naming the target's key where one decides.
#[must_use]
pub fn failure_text(target: &str, failure: &PodFailure) -> String {
    match failure {
        PodFailure::NoCapacity(tried) => format!(
            "no pod could be created for any of `targets.{target}.gpu_types`: {}",
            tried
                .iter()
                .map(|(gpu, reason)| format!("{gpu}: {reason}"))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        PodFailure::Refused { status, detail } => format!(
            "Runpod refused the pod (HTTP {}): {detail}; check `targets.{target}.gpu_types`, `image` and the other keys of `[targets.{target}]`; no pod was created",
            status.map_or_else(|| "none".to_owned(), |s| s.to_string())
        ),
        PodFailure::RateLimited => "Runpod kept answering 429 (rate limited)".to_owned(),
        PodFailure::Ambiguous(cause) => {
            format!("the create call had no clear answer and no pod of the run was found: {cause}")
        }
        PodFailure::OtherHostKey(cause) => format!(
            "the pod presented another SSH host key than the run's pinned one; it was deleted before any command ran: {cause}"
        ),
        PodFailure::CapNotTransmitted => format!(
            "`targets.{target}.max_cost_usd` could not be given to the pod's watchdog; the pod was deleted"
        ),
        PodFailure::Interrupted => {
            "interrupted before the job started; the pod was deleted".to_owned()
        }
        PodFailure::BootGrace => format!(
            "no job started within `targets.{target}.boot_grace_minutes`; the pod was deleted"
        ),
        PodFailure::DeadlineReached => format!(
            "`targets.{target}.max_hours` was reached before the job ended; the pod was deleted"
        ),
        PodFailure::CostCapReached => format!(
            "`targets.{target}.max_cost_usd` was reached before the job ended; the pod was deleted"
        ),
        PodFailure::RetrieveGrace => format!(
            "the results were not retrieved within `targets.{target}.retrieve_grace_minutes`; the pod was deleted"
        ),
        PodFailure::Vanished => "the pod vanished before its results were retrieved".to_owned(),
        PodFailure::StartFailed(cause) => {
            format!("the job could not be started on the pod: {cause}")
        }
        PodFailure::StillListed { pod, rate } => format!(
            "pod {pod} was deleted but Runpod still lists it{}; it is reported until gone",
            rate.map_or_else(String::new, |r| format!(" (USD {r:.2}/h)"))
        ),
    }
}

/// Connects to the pod of `record`'s run, as `pod.json` names it and the API locates
/// it, with the run's own `ssh -F` file (the pinned host key): for `train attach`,
/// `train stop` and `train cancel`.
///
/// # Errors
/// [`RunError::Pod`] when the run has no recorded pod, the pod is gone or has no SSH
/// endpoint; [`RunError::Exec`] when it cannot be reached.
pub async fn connect(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    record: &RunRecord,
) -> Result<crate::exec::AnyExecutor, RunError> {
    let pod_error = |reason: String| RunError::Pod {
        run_id: record.id.clone(),
        reason,
    };
    let local_dir = project.run_dir(&record.id);
    let recorded = PodRecord::read(&local_dir)
        .map_err(|e| pod_error(e.to_string()))?
        .and_then(|r| r.pod_id)
        .ok_or_else(|| pod_error("`pod.json` names no pod".to_owned()))?;
    let client = client(settings, env).await?;
    let pod = client
        .get_pod(&recorded)
        .await
        .map_err(|e| pod_error(e.to_string()))?
        .ok_or_else(|| pod_error(format!("pod {recorded} is gone")))?;
    let endpoint = pod
        .view()
        .ssh
        .ok_or_else(|| pod_error(format!("pod {recorded} has no SSH endpoint")))?;
    let config = local_dir.join(keys::SSH_DIR).join(keys::CONFIG);
    let executor = crate::exec::SshExecutor::connect(endpoint.destination(config), POD_WORKDIR)
        .await
        .map_err(|source| RunError::Exec {
            target: record.target.clone(),
            source: Box::new(source),
        })?;
    Ok(crate::exec::AnyExecutor::Ssh(
        executor.with_time_scale(TimeScale::from_env(env)),
    ))
}

/// How a later command takes up a run's pod.
#[derive(Debug, Clone)]
pub enum TakeUp {
    /// Follow its job again (`train attach`; `train stop` with `requested`).
    Follow {
        /// A snapshot request was just placed.
        requested: bool,
    },
    /// The run was retrieved and recorded by this process (`train cancel`): the pod
    /// is marked retrieved and deleted.
    Ended(Box<RunRecord>),
}

/// Takes up the pod of `record`'s run (recorded in its `pod.json`) with the pod's
/// lifecycle again: for `train attach` and `train stop` its job is followed and its
/// results retrieved beside the pod's rules (lease, deadline, cost cap); then, as after
/// `train cancel`, the pod is marked retrieved, deleted and confirmed gone, and the
/// run's host-key secret deleted.
///
/// # Errors
/// [`RunError::Pod`] when the run has no recorded pod or the pod is gone; the errors of
/// the following.
pub async fn take_up(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    record: RunRecord,
    how: TakeUp,
    events: &Events,
    cancel: &CancellationToken,
) -> Result<Outcome, RunError> {
    let pod_error = |reason: String| RunError::Pod {
        run_id: record.id.clone(),
        reason,
    };
    let target = super::target::resolve(settings, &record.target)?;
    let Some(runpod) = target.runpod.as_deref() else {
        return Err(pod_error(format!(
            "target `{}` is not a Runpod target",
            record.target
        )));
    };
    let local_dir = project.run_dir(&record.id);
    let recorded = PodRecord::read(&local_dir)
        .map_err(|e| pod_error(e.to_string()))?
        .ok_or_else(|| pod_error("the run has no `pod.json`".to_owned()))?;
    let facts = recorded.facts().map_err(pod_error)?;
    let executor = Box::pin(connect(project, settings, env, &record)).await?;
    let crate::exec::AnyExecutor::Ssh(pod) = executor else {
        return Err(pod_error("the pod is not reached over SSH".to_owned()));
    };
    let client = client(settings, env).await?;
    let scale = TimeScale::from_env(env);
    let rules = Rules::new(runpod, recorded.keep_pod, scale);
    let now = driver::now();
    let (ended, start) = match how {
        TakeUp::Follow { requested } => (
            None,
            Start::Follow {
                pod: Box::new(pod),
                requested,
            },
        ),
        TakeUp::Ended(done) => (
            Some(now),
            Start::Ended {
                pod: Box::new(pod),
                record: done,
            },
        ),
    };
    let state = PodState::attached(rules, facts, ended, now);
    let context = PodContext {
        run_id: record.id.clone(),
        pod_name: recorded.pod_name.clone(),
        data_center_ids: recorded.data_center_ids.clone(),
        network_volume_id: recorded.network_volume_id.clone(),
        host_key_secret_id: recorded.host_key_secret_id.clone(),
    };
    let plan = PodPlan {
        body: crate::runpod::api::CreatePod {
            name: recorded.pod_name.clone(),
            image: runpod.image.clone(),
            gpu: crate::runpod::api::GpuRequest {
                id: recorded.gpu_type.clone().unwrap_or_default(),
                count: runpod.gpu_count,
            },
            cloud: "SECURE".into(),
            data_center_ids: recorded.data_center_ids.clone(),
            disk: runpod.container_disk_gb,
            env: std::collections::BTreeMap::new(),
            ports: vec!["22/tcp".into()],
            mounts: None,
            args: None,
        },
        ssh_config: local_dir.join(keys::SSH_DIR).join(keys::CONFIG),
        workdir: POD_WORKDIR.to_owned(),
        run_dir: record.dir.clone(),
        host_key_secret: recorded.host_key_secret_id.clone(),
        job_poll: scale.scale(Duration::from_secs(5)),
        time_scale: scale,
    };
    let training = start::training(settings)?;
    let part = Part {
        project,
        target: &target.name,
        runtime: target.runtime.clone(),
        merge: training.merge && training.adapter != AdapterKind::Full,
        secrets: Vec::new(),
        scale,
        keep_pod: recorded.keep_pod,
        events,
        cancel,
    };
    let first = Event::Tick { at: now };
    let (driven, shared) = run_pod(
        &part,
        &client,
        &plan,
        context,
        record.clone(),
        state,
        first,
        start,
    )
    .await;
    conclude(&part, record, driven, shared)
}

//! A run's pod taken up again by a later command (`train attach`, `train stop`,
//! `train cancel`): reached through `pod.json` and the API with the run's pinned host
//! key, and its life driven again with the run's part on it.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::drive::{Part, Start, conclude, run_pod};
use super::{POD_WORKDIR, client};
use crate::config::{AdapterKind, EnvSnapshot, Settings};
use crate::env::TimeScale;
use crate::project::Project;
use crate::runpod::driver::{self, PodPlan};
use crate::runpod::keys;
use crate::runpod::lifecycle::{Event, PodState, Rules};
use crate::runpod::record::{PodContext, PodRecord};
use crate::runs::follow::Outcome;
use crate::runs::record::RunRecord;
use crate::runs::{Events, RunError, start};

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
    let target = crate::runs::target::resolve(settings, &record.target)?;
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
    let client = client(settings, env).await?;
    super::check_account(&client, TimeScale::from_env(env), project, events).await?;
    if let Some(pod_id) = &recorded.pod_id {
        let found = client
            .get_pod(pod_id)
            .await
            .map_err(|e| pod_error(e.to_string()))?;
        if found.is_none() && matches!(how, TakeUp::Follow { .. }) {
            // Its watchdog (or someone) deleted it: what it held is lost.
            return Box::pin(lost(project, &client, record, recorded)).await;
        }
    }
    let executor = Box::pin(connect(project, settings, env, &record)).await?;
    let crate::exec::AnyExecutor::Ssh(pod) = executor else {
        return Err(pod_error("the pod is not reached over SSH".to_owned()));
    };
    let scale = TimeScale::from_env(env);
    let mut rules = Rules::new(runpod, recorded.keep_pod, scale);
    // Issue 20: the same room the budget left at the start (its own pod not counted).
    let own = (record.target.as_str(), runpod);
    super::budget::apply(
        project,
        settings,
        own,
        Some(&record.id),
        (false, false),
        &mut rules,
    )?;
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
    let plan = plan_of(&record, &recorded, runpod, &local_dir, scale);
    let training = start::training(settings)?;
    let part = Part {
        project,
        target: &target.name,
        runtime: target.runtime.clone(),
        merge: training.merge && training.adapter != AdapterKind::Full,
        launch: target.launch(),
        secrets: Vec::new(),
        scale,
        stall: crate::train::stall::Policy::of(Some(training)),
        keep_pod: recorded.keep_pod,
        max_volume_gb: runpod.max_volume_gb,
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

/// A run whose pod is gone before its results were retrieved: recorded `failed` with
/// what was lost, the pod's deletion recorded (by its watchdog, or anyone), and the
/// run's host-key secret deleted with its last pod (POD-31).
async fn lost(
    project: &Project,
    client: &crate::runpod::api::RunpodClient,
    mut record: RunRecord,
    mut recorded: PodRecord,
) -> Result<Outcome, RunError> {
    let pod = recorded.pod_id.clone().unwrap_or_default();
    if let Some(secret) = &recorded.host_key_secret_id {
        if let Err(error) = client.delete_secret(secret).await {
            tracing::warn!("the run's host-key secret could not be deleted: {error}");
        }
    }
    if recorded.deleted.is_none() {
        let at = jiff::Timestamp::now();
        let uptime = recorded
            .created_at
            .map_or(0.0, |c| (at - c).total(jiff::Unit::Second).unwrap_or(0.0));
        "deleted".clone_into(&mut recorded.state);
        recorded.deleted = Some(crate::runpod::record::DeletedRecord {
            at,
            by: "watchdog".to_owned(),
            uptime_s: uptime,
            cost_usd: None,
        });
        let _ = recorded.save(&project.run_dir(&record.id));
    }
    record.state = crate::runs::record::State::Failed;
    record.message = Some(format!(
        "its pod {pod} is gone (deleted by its watchdog or by hand) before the results were retrieved; they are lost"
    ));
    record.save(&project.runs_dir())?;
    Ok(Outcome::Ended(record))
}

/// The plan of a recorded pod taken up again: its name for a search, the run's `ssh -F`
/// file, its run directory and its host-key secret (no create call is made for it).
fn plan_of(
    record: &RunRecord,
    recorded: &PodRecord,
    runpod: &crate::config::RunpodTarget,
    local_dir: &std::path::Path,
    scale: TimeScale,
) -> PodPlan {
    PodPlan {
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
        job_poll: scale.poll(Duration::from_secs(5)),
        time_scale: scale,
        auto: None,
        log_dir: Some(local_dir.to_path_buf()),
    }
}

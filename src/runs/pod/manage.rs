//! `pod ls` and `pod rm` (spec/runpod.md section 13, POD-64..POD-67): the pods
//! overbrainer created, recognized by name (`overbrainer-<run-id>`) and run marker
//! (`OVERBRAINER_RUN_ID` in their environment), and their removal by run ID, waiting
//! until Runpod no longer lists them and `GET` answers 404 ("gone means gone", the
//! delete sent again with the pod rules' backoff), then the run's host-key secret and
//! the deletion in `pod.json`.

use std::time::Duration;

use super::client;
use crate::config::{EnvSnapshot, Settings};
use crate::env::TimeScale;
use crate::project::Project;
use crate::runpod::api::{Pod, RunpodClient, pod_name};
use crate::runpod::body::RUN_ID_VAR;
use crate::runpod::record::{DeletedRecord, PodRecord};
use crate::runs::record::{RunRecord, State};
use crate::runs::{Refusal, RunError, id};

/// One pod of `pod ls`.
#[derive(Debug, Clone, PartialEq)]
pub struct PodRow {
    /// Pod ID.
    pub pod: String,
    /// Its run marker; `None` when it carries none that matches its name.
    pub run_id: Option<String>,
    /// Whether that run is in this project's `runs/`.
    pub in_project: bool,
    /// Runpod's status.
    pub status: String,
    /// GPU type.
    pub gpu_type: Option<String>,
    /// USD per hour.
    pub rate: Option<f64>,
    /// Age, when Runpod gave the creation time.
    pub age: Option<Duration>,
}

/// The run ID a pod carries, when its name and its marker agree.
fn run_of(pod: &Pod) -> Option<String> {
    let marker = pod.env.get(RUN_ID_VAR)?;
    (pod.name == pod_name(marker) && id::is_valid(marker)).then(|| marker.clone())
}

/// Whether `pod` is named like overbrainer's pods.
fn ours(pod: &Pod) -> bool {
    pod.name.starts_with("overbrainer-")
}

/// [`client`] for `pod ls`/`pod rm`: a missing key is refused as needed to list and
/// delete pods, not to create them.
async fn pods_client(settings: &Settings, env: &EnvSnapshot) -> Result<RunpodClient, RunError> {
    match client(settings, env).await {
        Err(RunError::Refused(Refusal::NoRunpodKey { variable })) => {
            Err(Refusal::NoRunpodKeyForPods { variable }.into())
        }
        other => other,
    }
}

/// `pod ls` (POD-64): read-only but for the reconciliation of pods past their bound
/// ([`check`]), whose deletions come first in the answer.
///
/// # Errors
/// The key's refusals; [`RunError::PodList`] when the API cannot list the pods.
pub async fn list(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
) -> Result<(Listed, Vec<PodRow>), RunError> {
    let client = pods_client(settings, env).await?;
    let (reconciled, strays, unswept) = check(&client, TimeScale::from_env(env), project).await?;
    let pods = client.list_pods().await.map_err(|e| RunError::PodList {
        target: None,
        reason: e.to_string(),
    })?;
    let now = crate::runpod::driver::now();
    let rows = pods
        .iter()
        .filter(|pod| ours(pod))
        .map(|pod| {
            let run_id = run_of(pod);
            let view = pod.view();
            PodRow {
                pod: pod.id.clone(),
                in_project: run_id
                    .as_ref()
                    .is_some_and(|run| project.run_dir(run).join("run.json").is_file()),
                run_id,
                status: pod.status.clone(),
                gpu_type: pod.gpu.as_ref().map(|g| g.id.clone()),
                rate: view.cost_per_hour,
                age: view.created_at.map(|at| now.saturating_sub(at)),
            }
        })
        .collect();
    Ok((
        Listed {
            reconciled,
            strays,
            unswept,
        },
        rows,
    ))
}

/// What the check before `pod ls` found ([`check`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// Pods past their bound deleted first.
    pub reconciled: Vec<Reconciled>,
    /// Strays (POD-62).
    pub strays: Vec<Stray>,
    /// Host-key secrets the sweep could not delete, and why (POD-63).
    pub unswept: Vec<String>,
}

/// An overbrainer pod past its bound that this process deleted (issue 12,
/// reconciliation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconciled {
    /// Pod ID.
    pub pod: String,
    /// Its run marker.
    pub run_id: Option<String>,
    /// Why it could not be confirmed gone, when it could not.
    pub failed: Option<String>,
}

/// Reconciliation (issue 12, beyond the spec; issue 34): every overbrainer pod
/// carries its first bound in its environment (`OVERBRAINER_DEADLINE_AT`,
/// `OVERBRAINER_KEEP_POD`); a pod of this project has its current bound in its run's
/// `pod.json`, which its follower keeps: the lease that holds it past that deadline
/// and its cost cap. A pod of this project past its bound plus a grace, and not kept,
/// is deleted and confirmed gone (`past_bound`). A pod of another project is left to
/// its owner, whose lease this process cannot read (its watchdog and its own project's
/// commands end it); while listed it is reported as a stray ([`strays`]).
/// `reconcile_listed`, then the strays of `project` among the pods still listed
/// ([`strays`]), the secrets sweep (`sweep_secrets`) and the `final` ledger line of each
/// pod gone without one (`settle::settle_gone`), whose failures come third:
/// the check every Runpod command makes first.
///
/// # Errors
/// [`RunError::PodList`] when the pods cannot be listed.
pub async fn check(
    client: &RunpodClient,
    scale: TimeScale,
    project: &Project,
) -> Result<(Vec<Reconciled>, Vec<Stray>, Vec<String>), RunError> {
    let pods = client.list_pods().await.map_err(|e| RunError::PodList {
        target: None,
        reason: e.to_string(),
    })?;
    let done = reconcile_listed(client, &pods, scale, project).await;
    let gone: Vec<&str> = done
        .iter()
        .filter(|d| d.failed.is_none())
        .map(|d| d.pod.as_str())
        .collect();
    let left: Vec<Pod> = pods
        .into_iter()
        .filter(|p| !gone.contains(&p.id.as_str()))
        .collect();
    let mut unswept = sweep_secrets(client, project, &left).await;
    // Issue 33: the end of a pod that went while no process followed it.
    unswept.extend(super::settle::settle_gone(client, project, &left, scale).await);
    Ok((done, strays(project, &left), unswept))
}

/// The secrets sweep (POD-63) over this project's runs: the host-key secret of a run
/// that has ended and has no pod listed any more is deleted (404 counts as deleted) and
/// dropped from its `pod.json`, so that no later command deletes it again; a run in
/// progress keeps its secret. The API lists no secrets, so secrets of runs not in this
/// project are beyond it. Returns, for each secret that could not be deleted, why.
async fn sweep_secrets(client: &RunpodClient, project: &Project, pods: &[Pod]) -> Vec<String> {
    let runs_dir = project.runs_dir();
    let mut failed = Vec::new();
    for entry in std::fs::read_dir(&runs_dir).into_iter().flatten().flatten() {
        let Some(run) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let dir = entry.path();
        let (Ok(record), Ok(Some(mut pod))) =
            (RunRecord::load(&runs_dir, &run), PodRecord::read(&dir))
        else {
            continue;
        };
        let listed = pods.iter().any(|p| {
            run_of(p).as_deref() == Some(run.as_str()) || pod.pod_id.as_ref() == Some(&p.id)
        });
        let Some(secret) = pod.host_key_secret_id.clone() else {
            continue;
        };
        if !record.state.is_terminal() || listed {
            continue;
        }
        let swept = match client.delete_secret(&secret).await {
            Ok(()) => {
                pod.host_key_secret_id = None;
                pod.save(&dir).map_err(|e| e.to_string())
            }
            Err(error) => Err(error.to_string()),
        };
        if let Err(why) = swept {
            failed.push(format!(
                "the host-key secret {secret} of run `{run}` could not be deleted: {why}"
            ));
        }
    }
    failed
}

/// Why no rule of overbrainer will remove a pod (POD-62).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrayCause {
    /// Its run in this project has ended (a deletion that left it listed, a kept pod).
    Ended,
    /// Its run is not in this project's `runs/`.
    NotInProject,
    /// Named like overbrainer's pods without a usable run marker.
    NoMarker,
}

/// An overbrainer pod that no rule will remove: reported, never deleted (POD-62).
#[derive(Debug, Clone, PartialEq)]
pub struct Stray {
    /// Pod ID.
    pub pod: String,
    /// Its run marker.
    pub run_id: Option<String>,
    /// USD per hour, when Runpod gives it.
    pub rate: Option<f64>,
    /// Why it is a stray.
    pub cause: StrayCause,
}

/// The strays among `pods` (POD-62, issue 12's "gone means gone"): overbrainer pods
/// whose run in `project` has ended, whose run is not in `project`, or that carry no
/// run marker. A pod of a run in progress is its owner's.
#[must_use]
pub fn strays(project: &Project, pods: &[Pod]) -> Vec<Stray> {
    let runs_dir = project.runs_dir();
    pods.iter()
        .filter(|pod| ours(pod))
        .filter_map(|pod| {
            let run_id = run_of(pod);
            let cause = match &run_id {
                None => StrayCause::NoMarker,
                Some(run) if !project.run_dir(run).join("run.json").is_file() => {
                    StrayCause::NotInProject
                }
                Some(run) => match RunRecord::load(&runs_dir, run) {
                    Ok(record) if record.state.is_terminal() => StrayCause::Ended,
                    _ => return None,
                },
            };
            Some(Stray {
                pod: pod.id.clone(),
                run_id,
                rate: pod.view().cost_per_hour,
                cause,
            })
        })
        .collect()
}

/// The warning of a stray: its ID, its rate and what removes it.
#[must_use]
pub fn stray_text(stray: &Stray) -> String {
    let rate = stray
        .rate
        .map_or_else(|| "rate unknown".to_owned(), |r| format!("{r:.3} USD/h"));
    match (&stray.run_id, stray.cause) {
        (Some(run), StrayCause::Ended) => format!(
            "pod {} ({rate}) of run `{run}` is still listed though its run ended: it bills until it is gone; `overbrainer pod rm {run}` deletes it",
            stray.pod
        ),
        (Some(run), StrayCause::NotInProject) => format!(
            "pod {} ({rate}) of run `{run}`, not in this project's runs/, is still listed; `overbrainer pod rm {run} --force` deletes it",
            stray.pod
        ),
        _ => format!(
            "pod {} ({rate}) is named like overbrainer's pods but carries no run marker; delete it in the Runpod console",
            stray.pod
        ),
    }
}

/// The bound this project knows of a pod it made: when its follower last wrote its
/// lease and when its cost cap deletes it, from its run's `pod.json` (both `None` when
/// that file names another pod).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Known {
    pub(super) lease_at: Option<Duration>,
    pub(super) cost_cap_at: Option<Duration>,
}

/// Whether reconciliation deletes, at `now`, a pod whose environment's deadline is
/// `deadline`: one of this project (`known`) once past its cost cap plus the client
/// guard, or past its deadline (later while a lease held it: the lease's last
/// writing plus its freshness) plus the deadline snapshot's window and the client
/// guard (POD-35, POD-36, POD-40: by then the pod's own rules have ended it); never one
/// of another project (`known` is `None`), whose lease is not readable here.
pub(super) fn past_bound(
    now: Duration,
    deadline: Duration,
    known: Option<Known>,
    rules: &crate::runpod::lifecycle::Rules,
) -> bool {
    let Some(known) = known else {
        return false;
    };
    if known
        .cost_cap_at
        .is_some_and(|cap| now > cap + rules.client_guard)
    {
        return true;
    }
    let held = known
        .lease_at
        .map_or(deadline, |lease| deadline.max(lease + rules.lease_fresh));
    now > held + rules.snapshot_window + rules.client_guard
}

/// What this project knows of `pod` ([`Known`]): `None` when the pod's run is not in
/// this project.
fn known(project: &Project, pod: &Pod) -> Option<Known> {
    let run = run_of(pod)?;
    let dir = project.run_dir(&run);
    if !dir.join("run.json").is_file() {
        return None;
    }
    let record = PodRecord::read(&dir).ok().flatten();
    let at = |t: Option<jiff::Timestamp>| t.and_then(crate::runpod::record::unix);
    Some(
        record
            .filter(|r| r.pod_id.as_ref() == Some(&pod.id))
            .map_or_else(Known::default, |r| Known {
                lease_at: at(r.lease_at),
                cost_cap_at: at(r.cost_cap_at),
            }),
    )
}

/// The reconciliation over pods already listed (see [`check`]).
async fn reconcile_listed(
    client: &RunpodClient,
    pods: &[Pod],
    scale: TimeScale,
    project: &Project,
) -> Vec<Reconciled> {
    let rules = deletion_rules(scale);
    let now = crate::runpod::driver::now();
    let mut done = Vec::new();
    for pod in pods.iter().filter(|pod| ours(pod)) {
        let kept = pod
            .env
            .get("OVERBRAINER_KEEP_POD")
            .is_some_and(|k| k == "1");
        let deadline = pod
            .env
            .get(crate::runpod::driver::DEADLINE_VAR)
            .and_then(|d| d.parse::<u64>().ok())
            .map(Duration::from_secs);
        let Some(deadline) = deadline.filter(|_| !kept) else {
            continue;
        };
        if !past_bound(now, deadline, known(project, pod), &rules) {
            continue;
        }
        let failed = delete_until_gone(client, &pod.id, scale).await.err();
        done.push(Reconciled {
            pod: pod.id.clone(),
            run_id: run_of(pod),
            failed,
        });
    }
    done
}

/// What `pod rm` did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Removed {
    /// Pods deleted and confirmed gone.
    pub removed: Vec<String>,
    /// Pods left alone: the training pod of a run in progress (POD-66).
    pub left: Vec<String>,
    /// Whether the run was marked `failed` (`--force` on a run in progress).
    pub failed_run: bool,
    /// Pods of any run past their bound that the reconciliation deleted first.
    pub reconciled: Vec<Reconciled>,
    /// The strays still listed besides the run's pods (POD-62).
    pub strays: Vec<Stray>,
}

/// `pod rm RUN_ID [--force]` (POD-65..POD-67); the caller holds the project lock.
///
/// # Errors
/// A refusal for a bad ID, a pod ID, a run absent from `runs/` or still starting its
/// pod without `--force`; [`RunError::Pod`] when a pod cannot be deleted or stays listed.
pub async fn remove(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    run_id: &str,
    force: bool,
) -> Result<Removed, RunError> {
    if !id::is_valid(run_id) {
        return Err(RunError::BadRunId(run_id.to_owned()));
    }
    let runs_dir = project.runs_dir();
    let local_dir = project.run_dir(run_id);
    let record = if local_dir.join("run.json").is_file() {
        Some(RunRecord::load(&runs_dir, run_id)?)
    } else {
        refuse_pod_id(settings, env, run_id).await?;
        if !force {
            return Err(Refusal::PodRmNotHere {
                run_id: run_id.to_owned(),
            }
            .into());
        }
        None
    };
    let recorded = if record.is_some() {
        PodRecord::read(&local_dir).map_err(|e| RunError::Pod {
            run_id: run_id.to_owned(),
            reason: e.to_string(),
        })?
    } else {
        None
    };
    let in_progress = record.as_ref().is_some_and(|r| !r.state.is_terminal());
    let training_pod = recorded.as_ref().and_then(|r| r.pod_id.clone());
    if in_progress
        && !force
        && (training_pod.is_none() || record.as_ref().is_some_and(|r| r.state == State::Starting))
    {
        return Err(Refusal::PodRmStarting {
            run_id: run_id.to_owned(),
        }
        .into());
    }
    let client = pods_client(settings, env).await?;
    let api = |e: crate::runpod::api::ApiError| RunError::Pod {
        run_id: run_id.to_owned(),
        reason: e.to_string(),
    };
    let scale = TimeScale::from_env(env);
    let listed = client.list_pods().await.map_err(api)?;
    // Reconciliation first (issue 12): pods past their bound go, whoever made them.
    let reconciled = reconcile_listed(&client, &listed, scale, project).await;
    let pods: Vec<Pod> = listed
        .into_iter()
        .filter(|p| {
            !reconciled
                .iter()
                .any(|d| d.pod == p.id && d.failed.is_none())
        })
        .collect();
    let (of_run, others) = split_run(pods, run_id, training_pod.as_ref());
    let mut outcome = Removed {
        strays: strays(project, &others),
        reconciled,
        ..Removed::default()
    };
    for pod in &of_run {
        if in_progress && !force && Some(&pod.id) == training_pod.as_ref() {
            outcome.left.push(pod.id.clone());
            continue;
        }
        if record.is_some() && Some(&pod.id) == training_pod.as_ref() {
            drain_log(&client, &pod.id, &local_dir, scale).await;
        }
        delete_until_gone(&client, &pod.id, scale)
            .await
            .map_err(|reason| RunError::Pod {
                run_id: run_id.to_owned(),
                reason,
            })?;
        outcome.removed.push(pod.id.clone());
    }
    if outcome.left.is_empty() {
        // POD-67: the run's last pod is gone: its host-key secret goes too.
        if let Some(secret) = recorded.as_ref().and_then(|r| r.host_key_secret_id.clone()) {
            client.delete_secret(&secret).await.map_err(api)?;
        }
    }
    if let Some(pod) = recorded.filter(|r| {
        r.deleted.is_none()
            && r.pod_id
                .as_ref()
                .is_some_and(|t| outcome.removed.contains(t))
    }) {
        record_deleted(&local_dir, pod, scale).map_err(|reason| RunError::Pod {
            run_id: run_id.to_owned(),
            reason,
        })?;
    }
    if let (Some(mut record), true) = (record, in_progress && force) {
        record.state = State::Failed;
        record.message = Some("its pod was removed with `overbrainer pod rm --force`".to_owned());
        record.save(&runs_dir)?;
        outcome.failed_run = true;
    }
    Ok(outcome)
}

/// POD-65: `pod rm` never takes a pod ID. An ID absent from `runs/` that a listed pod
/// has is refused, naming that pod's run, with or without `--force`.
async fn refuse_pod_id(settings: &Settings, env: &EnvSnapshot, id: &str) -> Result<(), RunError> {
    let client = pods_client(settings, env).await?;
    let listed = client.list_pods().await.map_err(|e| RunError::Pod {
        run_id: id.to_owned(),
        reason: e.to_string(),
    })?;
    match listed.iter().find(|p| p.id == id) {
        Some(pod) => Err(Refusal::PodRmPodId {
            pod: id.to_owned(),
            run: run_of(pod),
        }
        .into()),
        None => Ok(()),
    }
}

/// The pods of `run_id` (its marker, or its recorded training pod) and the others.
fn split_run(pods: Vec<Pod>, run_id: &str, training_pod: Option<&String>) -> (Vec<Pod>, Vec<Pod>) {
    pods.into_iter()
        .partition(|p| run_of(p).as_deref() == Some(run_id) || Some(&p.id) == training_pod)
}

/// A Runpod run whose start died before its job existed (`kill -9` before, during or
/// right after the create call, or during readiness): seen by the next command that
/// holds the project, its pods are deleted until gone, its host-key secret deleted and
/// the run recorded `failed`.
///
/// # Errors
/// As [`remove`].
pub async fn abandon_start(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    mut record: RunRecord,
) -> Result<RunRecord, RunError> {
    let removed = Box::pin(remove(project, settings, env, &record.id, true)).await?;
    record = RunRecord::load(&project.runs_dir(), &record.id)?;
    record.state = State::Failed;
    record.message = Some(format!(
        "start failed: the process starting the run ended before its job existed; {}",
        if removed.removed.is_empty() {
            "no pod of the run was left".to_owned()
        } else {
            format!("its pods {} were deleted", removed.removed.join(", "))
        }
    ));
    record.save(&project.runs_dir())?;
    Ok(record)
}

/// POD-57: what is left of the run's log stream is read into its copy before its pod
/// is deleted; a failure is only told.
async fn drain_log(
    client: &RunpodClient,
    pod: &str,
    local_dir: &std::path::Path,
    scale: TimeScale,
) {
    let limit = scale.scale(crate::runpod::logs::read::DRAIN);
    let drained =
        crate::runpod::logs::read::drain(client, pod, local_dir, client.redactor(), limit, None)
            .await;
    if let Err(error) = drained {
        let cause = std::error::Error::source(&error).map(ToString::to_string);
        tracing::warn!("{error}: {}", cause.unwrap_or_default());
    }
}

/// Records in `pod.json` that its pod was deleted by this process now (POD-67), with
/// its uptime and estimated spend (POD-68).
fn record_deleted(
    local_dir: &std::path::Path,
    mut pod: PodRecord,
    scale: TimeScale,
) -> Result<(), String> {
    let at = jiff::Timestamp::now();
    let uptime = pod
        .created_at
        .map_or(0.0, |c| (at - c).total(jiff::Unit::Second).unwrap_or(0.0));
    // Rates are per hour of the rules' clock (the test-only factor).
    let hour = scale.scale(Duration::from_secs(3600)).as_secs_f64();
    "deleted".clone_into(&mut pod.state);
    pod.deleted = Some(DeletedRecord {
        at,
        by: "client".to_owned(),
        uptime_s: uptime,
        cost_usd: pod.rate_usd_per_hour.map(|r| r * uptime / hour),
    });
    pod.save(local_dir).map_err(|e| e.to_string())
}

/// Deletes pod `id` and waits until it is no longer listed and `GET` answers 404,
/// sending the delete again with the pod rules' backoff; gives up after their patience.
async fn delete_until_gone(
    client: &RunpodClient,
    id: &str,
    scale: TimeScale,
) -> Result<(), String> {
    let rules = deletion_rules(scale);
    let began = tokio::time::Instant::now();
    let mut attempt = 0;
    loop {
        client.delete_pod(id).await.map_err(|e| e.to_string())?;
        attempt += 1;
        let next = tokio::time::Instant::now() + rules.backoff(attempt);
        loop {
            if let Ok((false, false)) = client.gone(id).await {
                return Ok(());
            }
            if began.elapsed() > rules.gone_patience {
                return Err(format!(
                    "pod {id} is still listed after its delete; delete it in the Runpod console"
                ));
            }
            tokio::time::sleep(rules.poll_interval).await;
            if tokio::time::Instant::now() >= next {
                break;
            }
        }
    }
}

/// The pod rules' deletion durations (poll, backoff, patience), which no target key
/// changes, on `scale`.
fn deletion_rules(scale: TimeScale) -> crate::runpod::lifecycle::Rules {
    let target = crate::config::RunpodTarget {
        gpu_types: crate::config::ListOrAuto::List(Vec::new()),
        min_vram_gb: None,
        max_price_per_hour: None,
        max_hours: 1.0,
        max_cost_usd: None,
        gpu_count: 1,
        image: String::new(),
        venv: "/".to_owned(),
        container_disk_gb: 20,
        boot_grace_minutes: 5,
        retrieve_grace_minutes: 1,
        data_center_ids: None,
        network_volume_id: None,
        max_volume_gb: None,
        ssh_client: crate::config::SshClient::default(),
    };
    crate::runpod::lifecycle::Rules::new(&target, false, scale)
}

#[cfg(test)]
#[path = "manage_tests.rs"]
mod tests;

//! A training run on a `runpod` target (spec/runpod.md sections 5-8, 10, 12; issue 12):
//! the checks of every run first, then the refusals that need no pod (no
//! `OVERBRAINER_RUNPOD__API_KEY`, `"auto"`, a key that cannot manage secrets: POD-4,
//! POD-21), the local run directory and its start files, the run's SSH keys and its
//! host-key secret, and then the pod's life ([`crate::runpod::driver::drive`]) with the
//! run's own part on it (`job::PodRun`): upload, the job, the run's follower beside
//! the pod's driver, the checkpoint check on the pod ([`checkpoint`]), the retrieved
//! mark, the deletion until gone; beside the follower, the watch of the run's disks
//! (`disk`: warnings, the grow of a network volume, the `disk` snapshot, POD-45..POD-48).
//!
//! The run directory on the pod is `<POD_WORKDIR>/<run-id>`; `run.json` records it, with
//! the run ID as the claim's owner (the pod's bootstrap claims the directory for it).

mod attach;
mod budget;
pub mod checkpoint;
mod choose;
mod disk;
mod drive;
mod failure;
mod job;
pub mod manage;
pub mod preview;
mod settle;

pub use attach::{TakeUp, connect, take_up};
pub use failure::failure_text;

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::follow::Outcome;
use super::lifecycle::transitions;
use super::record::{RunRecord, TargetKind};
use super::start::{self, StartOptions, error_chain};
use super::{Events, Refusal, RunError, RunEvent, emit, id};
use crate::config::{AdapterKind, EnvSnapshot, Provenance, Settings};
use crate::env::TimeScale;
use crate::llm::Redactor;
use crate::project::Project;
use crate::runpod::api::{RunpodClient, pod_name};
use crate::runpod::body::{PodSpec, create_body};
use crate::runpod::driver::{self, PodPlan};
use crate::runpod::keys::{self, KeyError};
use crate::runpod::lifecycle::{Event, PodState, Rules};
use crate::runpod::record::PodContext;
use crate::train::stall::Policy;
use crate::train::template::Decision;
use drive::{Part, Start, conclude, run_pod};

pub use super::target::POD_WORKDIR;

/// How long one Runpod API call may take: a rule duration, so it follows the test time
/// factor ([`TimeScale`]), never below [`API_TIMEOUT_FLOOR`].
const API_TIMEOUT: Duration = Duration::from_secs(60);

/// The least a scaled [`API_TIMEOUT`] may be: a call to a loaded test machine's stand-in
/// (which starts a real container for a create) still has time to answer.
const API_TIMEOUT_FLOOR: Duration = Duration::from_secs(10);

/// [`API_TIMEOUT`] on `scale`.
fn api_timeout(scale: TimeScale) -> Duration {
    scale.scale(API_TIMEOUT).max(API_TIMEOUT_FLOOR)
}

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
    account_client(&settings.runpod, env).await
}

/// A client of the Runpod API for `account`, its key resolved now (POD-4).
///
/// # Errors
/// As [`client`].
pub async fn account_client(
    account: &crate::config::RunpodAccount,
    env: &EnvSnapshot,
) -> Result<RunpodClient, RunError> {
    let Some(reference) = &account.api_key else {
        return Err(Refusal::NoRunpodKey {
            variable: KEY_VAR.to_owned(),
        }
        .into());
    };
    let key = crate::secrets::Resolver::new(env)
        .resolve(KEY_VAR, reference)
        .await
        .map_err(|e| RunError::RunpodKey(e.to_string()))?;
    let scale = TimeScale::from_env(env);
    RunpodClient::new(account.endpoint(), key, Redactor::new(), api_timeout(scale))
        .map(|client| client.with_rate_limit(crate::runpod::rate::RateLimit::new(scale)))
        .map_err(|e| RunError::RunpodKey(e.to_string()))
}

/// The check every Runpod command that holds the project makes first: the
/// reconciliation of pods past their bound, whoever made them (issue 12), and the
/// strays of this project (POD-62), reported as warnings.
///
/// # Errors
/// [`RunError::PodList`] when the pods cannot be listed.
pub(super) async fn check_account(
    client: &RunpodClient,
    scale: TimeScale,
    project: &Project,
    events: &Events,
) -> Result<(), RunError> {
    let (reconciled, strays, unswept) = manage::check(client, scale, project).await?;
    for why in unswept {
        emit(events, RunEvent::Warning(super::RunWarning::PodStray(why)));
    }
    for stray in &strays {
        emit(
            events,
            RunEvent::Warning(super::RunWarning::PodStray(manage::stray_text(stray))),
        );
    }
    for done in reconciled {
        emit(
            events,
            RunEvent::Warning(super::RunWarning::PodReconciled {
                pod: done.pod,
                run_id: done.run_id,
                failed: done.failed,
            }),
        );
    }
    Ok(())
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
    provenance: &Provenance,
    env: &EnvSnapshot,
    options: &StartOptions,
    events: &Events,
    cancel: &CancellationToken,
) -> Result<Outcome, RunError> {
    let (target, inputs, yaml) = start::check(project, (settings, env), provenance, options)?;
    let Some(runpod) = target.runpod.as_deref() else {
        return Err(Refusal::UnknownTarget {
            name: target.name.clone(),
            known: settings.targets.keys().cloned().collect(),
        }
        .into());
    };
    if settings.export.after_training {
        // The pod is deleted after the retrieval; the export runs from this machine's
        // copy of the run instead (issue 34).
        return Err(Refusal::AfterTrainingOnPod {
            target: target.name.clone(),
        }
        .into());
    }
    let training = start::training(settings)?;
    start::warn(settings, events);
    // TGT-12 by name: the pod that would be read does not exist before the run.
    let reason = "the pod is made for the run, so its template cannot be read before";
    match super::template::check_by_name(training, &inputs.train, reason)? {
        Decision::Fine => {}
        Decision::Warn(text) => emit(
            events,
            RunEvent::Warning(super::RunWarning::TemplateDropsReasoning(text)),
        ),
        Decision::Refuse(text) => {
            return Err(RunError::Refused(Refusal::TemplateDropsReasoning(text)));
        }
    }
    let client = client(settings, env).await?;
    let secrets = start::job_secrets(settings, env).await?;
    let scale = TimeScale::from_env(env);
    // Reconciliation (issue 12): pods past their bound go first, whoever made them.
    check_account(&client, scale, project, events)
        .await
        .map_err(|e| match e {
            RunError::PodList {
                target: None,
                reason,
            } => RunError::PodList {
                target: Some(target.name.clone()),
                reason,
            },
            other => other,
        })?;
    // POD-21: "auto" is resolved after the account check, before the run's keys.
    let choice = choose::resolve(
        &client,
        (&target.name, runpod),
        (settings, env, options.vram_estimate),
        events,
    )
    .await?;
    let stall = Policy::of(Some(training));
    let mut rules = Rules::new(runpod, options.keep_pod, scale).with_stall(stall.bounds(scale));
    // Issue 20: the pod's cost cap is what the budget leaves, at most `max_cost_usd`.
    let over_budget = (true, options.over_budget);
    budget::apply(
        project,
        settings,
        (&target.name, runpod),
        None,
        over_budget,
        &mut rules,
    )?;

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
    // Issue 33: the pod's cap is held in the ledger from here, released when no pod is
    // made.
    let _held = match budget::reserve(project, settings, &run_id, &mut rules) {
        Ok(held) => held,
        Err(error) => {
            let _ = std::fs::remove_dir_all(&local_dir);
            return Err(error);
        }
    };

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
        resumed_from: options.resume_from.clone(),
        merge,
        ..RunRecord::starting(&run_id, created, &target.name, TargetKind::Runpod, &pod_dir)
    };
    let made = record
        .save(&runs_dir)
        .and_then(|()| start::prepare(&local_dir, &inputs, &yaml));
    // POD-48: the watchdog's disk backstop weighs a network volume against its size at
    // pod creation until the follow writes `.pod/volume_gb`.
    let volume_gb = match &runpod.network_volume_id {
        Some(id) => client.network_volume_gb(id).await.unwrap_or_else(|error| {
            tracing::warn!("cannot read the size of network volume `{id}`: {error}");
            None
        }),
        None => None,
    };
    let body = made.and_then(|()| {
        create_body(&PodSpec {
            chosen: choice.chosen.as_ref(),
            target: runpod,
            run_id: &run_id,
            run_dir: &pod_dir,
            api_base: env
                .get(POD_API_VAR)
                .unwrap_or_else(|| settings.runpod.endpoint()),
            keys: &keys,
            rules: &rules,
            now: driver::now(),
            volume_gb,
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
        job_poll: scale.poll(Duration::from_secs(5)),
        time_scale: scale,
        auto: choice.auto.clone(),
        log_dir: Some(local_dir.clone()),
    };
    let part = Part {
        project,
        target: &target.name,
        runtime: target.runtime.clone(),
        merge,
        launch: target.launch(),
        secrets,
        scale,
        stall,
        keep_pod: options.keep_pod,
        max_volume_gb: runpod.max_volume_gb,
        events,
        cancel,
    };
    let state = if choice.auto.is_some() {
        PodState::new(rules, gpu_types).with_reorder()
    } else {
        PodState::new(rules, gpu_types)
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_timeout_follows_the_time_factor_down_to_its_floor() {
        for (second_ms, expected) in [(1000, 60_000), (250, 15_000), (20, 10_000)] {
            let scale = TimeScale::with_second(Duration::from_millis(second_ms));
            assert_eq!(
                api_timeout(scale),
                Duration::from_millis(expected),
                "{second_ms} ms a second"
            );
        }
        assert_eq!(api_timeout(TimeScale::REAL), API_TIMEOUT);
    }
}

//! A `slurm` target's run (issue 19): the executor over the login node, with the
//! target's `sbatch` options, and the checks made before any job is submitted. The
//! run itself is any run's (`runs::start`, `runs::follow`): the executor keeps the
//! contract, the scheduler's word comes in through [`crate::exec::SlurmExecutor`].

use super::target::{Resolved, SLURM_NO_SIGNAL_VAR, ssh_destination};
use super::{Refusal, RunError};
use crate::config::{EnvSnapshot, SlurmTarget};
use crate::env::TimeScale;
use crate::exec::{
    AnyExecutor, DeadlineSignal, LocalExecutor, Login, SlurmExecutor, SlurmOptions, SshExecutor,
};
use crate::train::plugin::SNAPSHOT_REQUEST;

/// The reason the deadline signal's snapshot request carries (the plugin's word).
const DEADLINE_REASON: &str = "deadline";

/// The `sbatch` options of `slurm`; `env` may drop the deadline signal (the test
/// suite's [`SLURM_NO_SIGNAL_VAR`]).
#[must_use]
pub fn options(slurm: &SlurmTarget, env: &EnvSnapshot) -> SlurmOptions {
    let deadline = env
        .get(SLURM_NO_SIGNAL_VAR)
        .is_none()
        .then(|| DeadlineSignal {
            file: SNAPSHOT_REQUEST.to_owned(),
            content: DEADLINE_REASON.to_owned(),
        });
    SlurmOptions {
        partition: slurm.partition.clone(),
        account: slurm.account.clone(),
        qos: slurm.qos.clone(),
        gpus_per_node: slurm.gpus_per_node,
        nodes: slurm.nodes,
        cpus_per_task: slurm.cpus_per_task,
        mem_gb: slurm.mem_gb,
        max_hours: slurm.max_hours,
        extra_sbatch: slurm.extra_sbatch.clone(),
        deadline,
    }
}

/// Connects to the login node of `target`: over SSH when `host` is set, else this
/// machine, whose `workdir` is taken relative to `HOME` when not absolute.
///
/// # Errors
///
/// [`RunError::Exec`] when the login node cannot be reached or the work directory
/// cannot be made.
pub async fn connect(
    target: &Resolved,
    slurm: &SlurmTarget,
    env: &EnvSnapshot,
    scale: TimeScale,
) -> Result<SlurmExecutor, RunError> {
    let exec = |source| RunError::Exec {
        target: target.name.clone(),
        source: Box::new(source),
    };
    let workdir = target
        .workdir
        .clone()
        .unwrap_or_else(|| super::target::SLURM_WORKDIR.to_owned());
    let login = if let Some(host) = &target.host {
        Login::Ssh(
            SshExecutor::connect(ssh_destination(host, env), &workdir)
                .await
                .map_err(exec)?
                .with_time_scale(scale),
        )
    } else {
        let dir = if workdir.starts_with('/') {
            std::path::PathBuf::from(&workdir)
        } else {
            std::path::Path::new(env.get("HOME").unwrap_or("/")).join(&workdir)
        };
        Login::Local(
            LocalExecutor::new(&dir)
                .map_err(exec)?
                .with_time_scale(scale),
        )
    };
    Ok(SlurmExecutor::new(login, options(slurm, env)))
}

/// How the train stage of `target`'s job launches Axolotl: a slurm target's `nodes`
/// and `gpus_per_node`; a process per GPU of a `local` or `ssh` target's `gpu_count`
/// elsewhere (one for a Runpod target).
#[must_use]
pub fn launch(target: &Resolved) -> crate::train::launch::Launch {
    target.slurm.as_ref().map_or_else(
        || crate::train::launch::Launch::one_machine(target.gpu_count),
        |slurm| crate::train::launch::Launch::slurm(slurm.nodes, slurm.gpus_per_node),
    )
}

/// Checks what only the cluster can say before a run is created: the target's
/// `partition` is one `sinfo` lists. Nothing to check for other targets.
///
/// # Errors
///
/// [`Refusal::UnknownPartition`] naming the key and the partitions there are;
/// [`RunError::Exec`] when `sinfo` cannot be run.
pub async fn check(executor: &AnyExecutor, target: &Resolved) -> Result<(), RunError> {
    let AnyExecutor::Slurm(slurm) = executor else {
        return Ok(());
    };
    let Some(partition) = slurm.options().partition.clone() else {
        return Ok(());
    };
    let known = slurm.partitions().await.map_err(|source| RunError::Exec {
        target: target.name.clone(),
        source: Box::new(source),
    })?;
    if known.contains(&partition) {
        return Ok(());
    }
    Err(Refusal::UnknownPartition {
        target: target.name.clone(),
        partition,
        known,
    }
    .into())
}

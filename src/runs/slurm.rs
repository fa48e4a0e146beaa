//! A `slurm` target's run (issue 19): the checks made before any job is submitted
//! (its train stage's launch is [`Resolved::launch`]). Its executor over the login node, with the
//! target's `sbatch` options, is `runs::target`'s (as every target's). The run itself
//! is any run's (`runs::start`, `runs::follow`): the scheduler's word comes in through
//! [`crate::exec::SlurmExecutor`].

use super::target::Resolved;
use super::{Refusal, RunError};
use crate::exec::AnyExecutor;

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

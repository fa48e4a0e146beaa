//! A `slurm` target's run (issue 19): how its train stage launches, and the checks
//! made before any job is submitted. Its executor over the login node, with the
//! target's `sbatch` options, is `runs::target`'s (as every target's). The run itself
//! is any run's (`runs::start`, `runs::follow`): the scheduler's word comes in through
//! [`crate::exec::SlurmExecutor`].

use super::target::Resolved;
use super::{Refusal, RunError};
use crate::exec::AnyExecutor;

/// How the train stage of `target`'s job launches Axolotl: a slurm target's `nodes`
/// and `gpus_per_node`; a process per GPU of a `local`, `ssh` or `runpod` target's
/// `gpu_count` elsewhere (a pod rents that many GPUs).
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `gpu_count` of a `local`, an `ssh` and a `runpod` target reaches the train stage's
    /// launch (issue 19; a pod rents that many GPUs): two processes through accelerate;
    /// unset, one.
    #[test]
    fn the_gpu_count_of_local_ssh_and_runpod_targets_sets_the_launch() {
        use crate::train::launch::Launch;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(crate::config::FILE_NAME),
            "[project]\nname = \"p\"\n\n[targets.here]\nkind = \"local\"\ngpu_count = 2\n\n\
             [targets.box]\nkind = \"ssh\"\nruntime = \"docker\"\ngpu_count = 2\n\n\
             [targets.pod]\nkind = \"runpod\"\ngpu_types = [\"A\"]\nmax_hours = 1\ngpu_count = 2\n\n\
             [targets.plain]\nkind = \"local\"\n",
        )
        .unwrap();
        let env =
            crate::config::EnvSnapshot::from_pairs([("OVERBRAINER_TARGETS__BOX__HOST", "me@box")]);
        let loaded = crate::config::load(dir.path(), &env, |_, _, _| {}).unwrap();
        for name in ["here", "box", "pod"] {
            let target = super::super::target::resolve(&loaded.settings, name).unwrap();
            assert_eq!(target.gpu_count, 2, "{name}");
            let launch = launch(&target);
            assert_eq!(launch, Launch::one_machine(2), "{name}");
            assert_eq!(
                launch.train_args()[2..],
                [
                    "--launcher",
                    "accelerate",
                    "--",
                    "--num_processes",
                    "2",
                    "--num_machines",
                    "1"
                ],
                "{name}"
            );
        }
        let plain = super::super::target::resolve(&loaded.settings, "plain").unwrap();
        assert_eq!(launch(&plain), Launch::default());
    }
}

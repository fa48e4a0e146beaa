//! `target prune NAME`: removes the blobs of a target's cache that no run directory
//! links to ([`crate::exec::blobs::prune_cache`]).

use anyhow::Context as _;

use super::record::TargetKind;
use super::target;
use crate::config::{EnvSnapshot, Settings};
use crate::exec::blobs::{PruneReport, prune_cache};
use crate::project::Project;

/// What a prune of a target did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PruneOutcome {
    /// The target is this machine: runs use local paths, there is no blob cache.
    Local,
    /// The blobs removed and their bytes.
    Pruned(PruneReport),
}

/// Prunes the blob cache of the target `name`.
///
/// # Errors
///
/// An unknown target, naming it; a Runpod target (its cache is on a pod's volume,
/// reached through a run, not by name); an unreachable target or a failed prune,
/// naming the target.
pub async fn prune_target(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    name: &str,
) -> anyhow::Result<PruneOutcome> {
    let resolved = target::resolve(settings, name)?;
    if resolved.kind == TargetKind::Runpod {
        anyhow::bail!(
            "cannot prune target `{name}`: a Runpod target's cache is on its pod's volume, reached through a run"
        );
    }
    if resolved.kind == TargetKind::Local {
        return Ok(PruneOutcome::Local);
    }
    let executor = target::connect(&resolved, &project.runs_dir(), env).await?;
    let report = prune_cache(&executor)
        .await
        .with_context(|| format!("cannot prune target `{name}`"))?;
    Ok(PruneOutcome::Pruned(report))
}

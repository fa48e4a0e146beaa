//! `overbrainer target prune NAME`: frees a target's blob cache of the blobs no run
//! directory links to, over [`crate::runs::prune::prune_target`].

use std::process::ExitCode;

use super::Context;
use crate::runs::prune::{PruneOutcome, prune_target};

/// Commands on a configured target.
#[derive(Debug, clap::Subcommand)]
pub enum TargetCommand {
    /// Remove the target's cached blobs that no run directory links to, and report
    /// the bytes freed.
    Prune(PruneArgs),
}

/// Arguments of `target prune`.
#[derive(Debug, clap::Args)]
pub struct PruneArgs {
    /// The target, as named under `[targets]`.
    #[arg(value_name = "NAME")]
    pub name: String,
}

/// Runs a `target` command.
///
/// # Errors
///
/// For an unknown or Runpod target, an unreachable target, or a failed prune.
pub async fn run(ctx: &Context, command: &TargetCommand) -> anyhow::Result<ExitCode> {
    let TargetCommand::Prune(args) = command;
    let (project, loaded) = ctx.load()?;
    match prune_target(&project, &loaded.settings, &loaded.env, &args.name).await? {
        PruneOutcome::Local => {
            outln!("target `{}` is local: no blob cache to prune", args.name);
        }
        PruneOutcome::Pruned(report) => {
            outln!(
                "target `{}`: removed {} unlinked blobs, {} bytes freed",
                args.name,
                report.blobs,
                report.bytes
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

//! `overbrainer train attach RUN_ID`: follow a run again, then retrieve its results and
//! record its final state (RUN-43). Takes the project lock.

use std::process::ExitCode;

use super::Context;
use super::follow;

/// Arguments of `train attach`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run to follow.
    #[arg(value_name = "RUN_ID", add = clap_complete::ArgValueCompleter::new(super::complete::run_ids))]
    pub run_id: String,
}

/// Runs `train attach`.
///
/// # Errors
///
/// For an invalid or unknown run ID, a held lock, or an unreachable target.
pub async fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let outcome = follow::on_run(ctx, &args.run_id, crate::runs::control::attach).await?;
    Ok(follow::conclude(&outcome))
}

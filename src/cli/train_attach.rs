//! `overbrainer train attach RUN_ID`: follow a run again, then retrieve its results and
//! record its final state (RUN-43), then push it with `[hub] after_training` (HUB-14).
//! Takes the project lock.

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
    let cancel = follow::ctrl_c();
    let (project, loaded) = ctx.load()?;
    let _lock = project.lock()?;
    let (events, mut receiver) = follow::channel();
    // Boxed: following a run is a large future.
    let flow = Box::pin(crate::runs::control::attach(
        &project,
        &loaded.settings,
        &loaded.env,
        &args.run_id,
        &events,
        &cancel,
    ));
    let outcome = follow::drive(&mut receiver, flow).await?;
    let code = follow::conclude(&outcome);
    if let crate::runs::Outcome::Ended(record) = &outcome {
        super::push::after_training(&project, &loaded.settings, &loaded.env, record, &cancel).await;
    }
    Ok(code)
}

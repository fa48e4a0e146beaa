//! `overbrainer train stop RUN_ID`: ask the job for a snapshot, follow it to its end and
//! retrieve the checkpoint (RUN-26, RUN-27). When another overbrainer process holds the
//! project, only the request is written and that process records the stop (RUN-33).

use std::process::ExitCode;

use super::Context;
use super::follow;
use crate::runs::Outcome;
use crate::runs::access::Access;
use crate::runs::control::{StopOutcome, stop};
use crate::runs::record::State;

/// Arguments of `train stop`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run to stop.
    #[arg(value_name = "RUN_ID", add = clap_complete::ArgValueCompleter::new(super::complete::run_ids))]
    pub run_id: String,
}

/// Runs `train stop`.
///
/// # Errors
///
/// For an invalid or unknown run ID, a run whose job is not running, or an unreachable
/// target.
pub async fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let cancel = follow::ctrl_c();
    let (project, loaded) = ctx.load()?;
    let access = Access::for_stop(&project)?;
    let (events, mut receiver) = follow::channel();
    let outcome = follow::drive(
        &mut receiver,
        stop(
            &project,
            &loaded.settings,
            &loaded.env,
            &args.run_id,
            access.is_beside(),
            &events,
            &cancel,
        ),
    )
    .await?;
    let holder = access.holder();
    drop(access);
    match outcome {
        StopOutcome::RequestOnly { record } => {
            let holder = holder.map_or_else(
                || "another overbrainer process".to_owned(),
                |pid| format!("overbrainer process {pid}"),
            );
            outln!(
                "train: snapshot requested for run {}; {holder} holds the project and records the stop",
                record.id
            );
            Ok(ExitCode::SUCCESS)
        }
        StopOutcome::Followed(outcome) => {
            let code = follow::conclude(&outcome);
            match &outcome {
                Outcome::Ended(record)
                    if record.state == State::Stopped || record.state == State::Succeeded =>
                {
                    Ok(ExitCode::SUCCESS)
                }
                _ => Ok(code),
            }
        }
    }
}

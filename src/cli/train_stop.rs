//! `overbrainer train stop RUN_ID`: ask the job for a snapshot, follow it to its end and
//! retrieve the checkpoint (RUN-26, RUN-27). When another overbrainer process holds the
//! project, only the request is written: a process that follows the run records the
//! stop (RUN-33); without one the line says how to retrieve the snapshot later.

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
        StopOutcome::RequestOnly { record, followed } => {
            outln!("{}", request_only(&record.id, holder, followed));
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

/// What `train stop` says when another process holds the project: only the request was
/// placed. When that process follows the run it records the stop; otherwise nothing
/// does yet, and the line says what becomes of the snapshot and how to get it.
fn request_only(id: &str, holder: Option<u32>, followed: bool) -> String {
    let holder = holder.map_or_else(
        || "another overbrainer process".to_owned(),
        |pid| format!("overbrainer process {pid}"),
    );
    if followed {
        format!(
            "train: snapshot requested for run {id}; {holder} holds the project and records the stop"
        )
    } else {
        format!(
            "train: snapshot requested for run {id}; the job saves a snapshot checkpoint on the target and ends. \
             {holder} holds the project but does not follow this run, so nothing retrieves the snapshot yet: \
             once the project is free, `overbrainer train attach {id}` retrieves it and records the stop \
             (`overbrainer runs ls` shows the run's state)"
        )
    }
}

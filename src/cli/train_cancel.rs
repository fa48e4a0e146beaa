//! `overbrainer train cancel RUN_ID`: stop a run's job, retrieve its artifacts and
//! record it cancelled (RUN-37..RUN-42). Takes the project lock (LCK-1). While another
//! overbrainer process holds it and follows that run, only the job on the target is
//! cancelled and that process retrieves and records the run (LCK-9); any other holder
//! makes the cancel fail at once naming that process (LCK-2).
//!
//! A cancel that leaves processes of the job alive on the target (they outlived
//! `SIGKILL`) says `cancelled with leftovers: <pids>` and exits non-zero.

use std::process::ExitCode;

use super::Context;
use super::follow;
use crate::exec::pid_list;
use crate::runs::access::Access;
use crate::runs::control::{CancelOutcome, cancel_as};
use crate::runs::refusal::status_text;

/// Arguments of `train cancel`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run to cancel.
    #[arg(value_name = "RUN_ID", add = clap_complete::ArgValueCompleter::new(super::complete::run_ids))]
    pub run_id: String,
}

/// Runs `train cancel`.
///
/// # Errors
///
/// For an invalid or unknown run ID, a run already cancelled or never started, a
/// project lock held by a process that does not follow the run, or an unreachable
/// target.
pub async fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let (project, loaded) = ctx.load()?;
    let access = Access::for_cancel(&project, &loaded.settings, &args.run_id)?;
    let (events, mut receiver) = follow::channel();
    let outcome = follow::drive(
        &mut receiver,
        Box::pin(cancel_as(
            &access,
            &project,
            &loaded.settings,
            &loaded.env,
            &args.run_id,
            &events,
        )),
    )
    .await?;
    let holder = access.holder();
    drop(access);
    match outcome {
        CancelOutcome::Cancelled { record, leftovers } => {
            outln!("{}", follow::summary_line(&record));
            Ok(leftovers_status(&leftovers))
        }
        CancelOutcome::OnTarget { record, leftovers } => {
            let holder = holder.map_or_else(
                || "another overbrainer process".to_owned(),
                |pid| format!("overbrainer process {pid}"),
            );
            if leftovers.is_empty() {
                outln!(
                    "train: the job of run {} was cancelled on the target; {holder} follows the run and records it",
                    record.id
                );
            } else {
                outln!(
                    "train: run {} cancelled with leftovers: {} (they outlived SIGKILL on the target); {holder} follows the run and records it",
                    record.id,
                    pid_list(&leftovers)
                );
            }
            Ok(leftovers_status(&leftovers))
        }
        CancelOutcome::AlreadyEnded { record, status } if record.retrieved => {
            outln!(
                "train: the job of run {id} had already ended ({}) and was not signalled; its results are in runs/{id}",
                status_text(status),
                id = record.id
            );
            Ok(ExitCode::FAILURE)
        }
        CancelOutcome::AlreadyEnded { record, status } => {
            outln!(
                "train: the job of run {} had already ended ({}) and was not signalled; collect it with: overbrainer train attach {}",
                record.id,
                status_text(status),
                record.id
            );
            Ok(ExitCode::FAILURE)
        }
        CancelOutcome::MergeCancelled { record, leftovers } => {
            outln!("{}", follow::summary_line(&record));
            outln!(
                "train: the merge of run {id} was cancelled; the adapter in runs/{id}/output is usable; redo the merge alone with: overbrainer train merge {id}",
                id = record.id
            );
            Ok(leftovers_status(&leftovers))
        }
    }
}

/// Success for a clean cancel, failure when processes were left behind.
fn leftovers_status(leftovers: &[u32]) -> ExitCode {
    if leftovers.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

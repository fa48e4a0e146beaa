//! `overbrainer train cancel RUN_ID`: stop a run's job, retrieve its artifacts and
//! record it cancelled (RUN-37..RUN-42). Takes the project lock (LCK-1): while another
//! overbrainer process holds it (a follower of the run, say) the cancel fails at once
//! naming that process (LCK-2) and says how to cancel anyway.

use std::process::ExitCode;

use super::Context;
use super::follow;
use crate::project::LockError;
use crate::runs::control::{CancelOutcome, cancel};

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
/// project lock held by another process, or an unreachable target.
pub async fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let (project, loaded) = ctx.load()?;
    if loaded.settings.training.is_none() {
        anyhow::bail!(
            "`overbrainer.toml` has no `[training]` section, which `train cancel` needs to retrieve artifacts"
        );
    }
    let _lock = match project.lock() {
        Ok(lock) => lock,
        Err(error @ LockError::Held { .. }) => {
            anyhow::bail!(
                "{error}; to cancel run `{id}` now, stop that process with Ctrl-C where it runs (the job goes on) and run `overbrainer train cancel {id}` again, or cancel from that session",
                id = args.run_id
            );
        }
        Err(error) => return Err(error.into()),
    };
    let (events, mut receiver) = follow::channel();
    let outcome = follow::drive(
        &mut receiver,
        cancel(
            &project,
            &loaded.settings,
            &loaded.env,
            &args.run_id,
            &events,
        ),
    )
    .await?;
    match outcome {
        CancelOutcome::Cancelled(record) => {
            outln!("{}", follow::summary_line(&record));
            Ok(ExitCode::SUCCESS)
        }
        CancelOutcome::AlreadyEnded { record, found } => {
            outln!(
                "train: the job of run {} had already ended ({found}) and was not signalled; collect it with: overbrainer train attach {}",
                record.id,
                record.id
            );
            Ok(ExitCode::FAILURE)
        }
    }
}

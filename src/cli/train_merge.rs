//! `overbrainer train merge RUN_ID`: redo the merge of a run whose training succeeded
//! and whose merge failed (`merge_failed`), without training again, then retrieve the
//! merged model (see `runs::merge`). Takes the project lock.

use std::process::ExitCode;

use super::Context;
use super::follow;
use crate::runs::Outcome;

/// Arguments of `train merge`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run to merge, recorded `merge_failed`.
    #[arg(value_name = "RUN_ID", add = clap_complete::ArgValueCompleter::new(super::complete::merge_failed_run_ids))]
    pub run_id: String,
}

/// Runs `train merge`.
///
/// # Errors
///
/// For an invalid or unknown run ID, a run whose merge did not fail, a held lock, an
/// unreachable target, or a merged model that cannot be retrieved.
pub async fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let outcome = follow::on_run(ctx, &args.run_id, crate::runs::merge::merge).await?;
    match &outcome {
        Outcome::Detached { record, reason } => {
            errln!(
                "train: detached from the merge of run {} ({}); the merge goes on. Follow it again with:\n  overbrainer train merge {}",
                record.id,
                follow::detach_text(reason),
                record.id
            );
            Ok(follow::detach_status(reason))
        }
        Outcome::Ended(_) => Ok(follow::conclude(&outcome)),
    }
}

//! `overbrainer run`: the whole `run` sequence ([`crate::pipeline::sequence`]): every
//! dataset stage on every topic, stopping at the first that fails (PIPE-5), the
//! configuration re-read between stages when it changed (RLD-3), then with a `[training]`
//! section a training run followed exactly as `train` follows it, ending with where the
//! adapter and the merged model are (RUN-19).

use std::process::ExitCode;

use tokio::sync::mpsc::unbounded_channel;

use super::Context;
use super::follow;
use crate::pipeline::sequence::{self, Ended};

/// Arguments of `run` (no topic: it always covers every topic, PIPE-5).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Start each stage even when its estimate with the spend passes `budget.max_usd`
    /// (the cap still stops it when it is reached).
    #[arg(long)]
    pub over_budget: bool,
}

/// Runs the sequence, rendering its events.
///
/// # Errors
///
/// When there is no project, the lock is held, a reloaded configuration is invalid or the
/// training run cannot start.
pub async fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let (mut session, mut stage_events) = super::stages::open(ctx)?;
    session.context.over_budget = args.over_budget;
    let (out, mut flow_events) = unbounded_channel();
    let (run_events, mut run_receiver) = follow::channel();
    let flow = Box::pin(sequence::run(&mut session, &mut stage_events, &out));
    let (ended, code) = follow::drive(
        &mut run_receiver,
        super::stages::drive_flow(&mut flow_events, &run_events, flow),
    )
    .await;
    Ok(match ended? {
        Ended::StageFailed(_) => code,
        Ended::Dataset => ExitCode::SUCCESS,
        Ended::Trained(outcome) => {
            let code = follow::conclude(&outcome);
            if let crate::runs::Outcome::Ended(record) = &*outcome {
                super::push::after_training(
                    &session.project,
                    &session.loaded.settings,
                    &session.env,
                    record,
                    &session.context.cancel,
                )
                .await;
            }
            code
        }
    })
}

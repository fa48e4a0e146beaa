//! `overbrainer train [--target NAME] [--resume-from RUN_ID]`: start a run, follow it to
//! the end and retrieve its results; `train attach|stop|cancel|merge RUN_ID` act on an
//! existing run (spec/training.md, section 1). Takes the project lock.

use std::process::ExitCode;

use super::Context;
use super::follow;
use crate::runs::Outcome;
use crate::runs::start::StartOptions;

/// Arguments of `train`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// Run on this target instead of `training.target`.
    #[arg(long, value_name = "NAME", add = clap_complete::ArgValueCompleter::new(super::complete::targets))]
    pub target: Option<String>,
    /// Start a new run from the snapshot of this stopped run.
    #[arg(long, value_name = "RUN_ID", add = clap_complete::ArgValueCompleter::new(super::complete::run_ids))]
    pub resume_from: Option<String>,
    /// Keep the Runpod pod after the run (Runpod targets only).
    #[arg(long)]
    pub keep_pod: bool,
    /// Start a Runpod run even when the most its pod may cost passes `budget.max_usd`
    /// (the pod's cost cap is still what remains of the budget).
    #[arg(long)]
    pub over_budget: bool,
    /// Act on an existing run.
    #[command(subcommand)]
    pub command: Option<TrainCommand>,
}

/// `train attach|stop|cancel|merge`.
#[derive(Debug, clap::Subcommand)]
pub enum TrainCommand {
    /// Follow a run again, then retrieve its results.
    Attach(super::train_attach::Args),
    /// Stop a run's job with a snapshot, then retrieve it.
    Stop(super::train_stop::Args),
    /// Stop a run's job, then retrieve its artifacts.
    Cancel(super::train_cancel::Args),
    /// Redo the merge of a run whose merge failed, without training again.
    Merge(super::train_merge::Args),
}

/// Runs `train`.
///
/// # Errors
///
/// When there is no project, the configuration is invalid, the lock is held, or the run
/// cannot start (nothing is created for a refusal).
pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Some(TrainCommand::Attach(attach)) => return super::train_attach::run(ctx, &attach).await,
        Some(TrainCommand::Stop(stop)) => return super::train_stop::run(ctx, &stop).await,
        Some(TrainCommand::Cancel(cancel)) => return super::train_cancel::run(ctx, &cancel).await,
        Some(TrainCommand::Merge(merge)) => return super::train_merge::run(ctx, &merge).await,
        None => {}
    }
    let cancel = follow::ctrl_c();
    let (project, loaded) = ctx.load()?;
    for warning in &loaded.warnings {
        tracing::warn!("{warning}");
    }
    let _lock = project.lock()?;
    let options = StartOptions {
        target: args.target,
        resume_from: args.resume_from,
        keep_pod: args.keep_pod,
        over_budget: args.over_budget,
        vram_estimate: None,
    };
    let (events, mut receiver) = follow::channel();
    let outcome = follow::drive(
        &mut receiver,
        Box::pin(crate::runs::train::train(
            &project,
            &loaded.settings,
            &loaded.provenance,
            &loaded.env,
            &options,
            &events,
            &cancel,
        )),
    )
    .await?;
    let code = follow::conclude(&outcome);
    if let Outcome::Ended(record) = &outcome {
        super::push::after_training(&project, &loaded.settings, &loaded.env, record, &cancel).await;
    }
    Ok(code)
}

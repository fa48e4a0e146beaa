//! `overbrainer pod ls` and `overbrainer pod rm RUN_ID [--force]` (spec/runpod.md
//! section 13, POD-64..POD-67): the Runpod pods overbrainer created, and their removal
//! by run ID (never by pod ID). `pod rm` takes the project lock.

use std::process::ExitCode;

use super::Context;
use crate::runs::pod::manage;

/// `pod ...`.
#[derive(Debug, clap::Subcommand)]
pub enum PodCommand {
    /// List the Runpod pods overbrainer created, with their run, state, GPU type, rate
    /// and age.
    Ls,
    /// Delete the pods of a run and wait until Runpod no longer lists them.
    Rm(RmArgs),
    /// List Secure Cloud GPU types for one GPU per pod: VRAM, price, most GPUs per pod
    /// and stock, cheapest first. Needs only the Runpod API key.
    Gpus(super::pod_catalog::GpusArgs),
    /// List Runpod's data centers with how many GPU types each has in stock.
    Datacenters,
    /// List the account's network volumes.
    Volumes,
    /// List the account's pod templates.
    Templates,
}

/// Arguments of `pod rm`.
#[derive(Debug, clap::Args)]
pub struct RmArgs {
    /// The run whose pods go (a run ID, never a pod ID).
    #[arg(value_name = "RUN_ID", add = clap_complete::ArgValueCompleter::new(super::complete::run_ids))]
    pub run_id: String,
    /// Also delete the training pod of a run in progress (the run is marked `failed`),
    /// or the pods of a run absent from this project's `runs/`.
    #[arg(long)]
    pub force: bool,
}

/// One pod past its bound that the reconciliation deleted.
pub(super) fn reconciled_text(done: &manage::Reconciled) -> String {
    let run = done
        .run_id
        .as_deref()
        .map_or_else(String::new, |r| format!(" of run `{r}`"));
    match &done.failed {
        None => format!(
            "warning: pod {}{run} was past its bound (max_hours plus grace) and not kept: deleted and confirmed gone",
            done.pod
        ),
        Some(why) => format!(
            "warning: pod {}{run} is past its bound and not kept, but could not be confirmed gone: {why}",
            done.pod
        ),
    }
}

/// Runs `pod ls` or `pod rm`.
///
/// # Errors
/// When there is no project, the configuration is invalid, the Runpod key is missing,
/// the API cannot be reached, or (`rm`) a refusal of POD-65.
pub async fn run(ctx: &Context, command: &PodCommand) -> anyhow::Result<ExitCode> {
    use super::pod_catalog::{Listing, run as list};
    match command {
        PodCommand::Gpus(args) => list(ctx, Listing::Gpus(args)).await,
        PodCommand::Datacenters => list(ctx, Listing::DataCenters).await,
        PodCommand::Volumes => list(ctx, Listing::Volumes).await,
        PodCommand::Templates => list(ctx, Listing::Templates).await,
        PodCommand::Ls => ls(ctx).await,
        PodCommand::Rm(args) => rm(ctx, args).await,
    }
}

/// `pod ls`.
async fn ls(ctx: &Context) -> anyhow::Result<ExitCode> {
    let (project, loaded) = ctx.load()?;
    let (listed, rows) = manage::list(&project, &loaded.settings, &loaded.env).await?;
    for done in &listed.reconciled {
        errln!("{}", reconciled_text(done));
    }
    for stray in &listed.strays {
        errln!("warning: {}", manage::stray_text(stray));
    }
    for why in &listed.unswept {
        errln!("warning: {why}");
    }
    let mut lines = vec![format!(
        "{:<20} {:<40} {:<12} {:<24} {:>10} {:>8}",
        "POD", "RUN", "STATE", "GPU", "USD/H", "AGE"
    )];
    for row in rows {
        let run = match (&row.run_id, row.in_project) {
            (Some(run), true) => run.clone(),
            (Some(run), false) => format!("{run} (not in this project)"),
            (None, _) => "(no run marker: delete it in the Runpod console)".to_owned(),
        };
        lines.push(format!(
            "{:<20} {:<40} {:<12} {:<24} {:>10} {:>8}",
            row.pod,
            run,
            row.status,
            row.gpu_type.unwrap_or_else(|| "-".to_owned()),
            row.rate
                .map_or_else(|| "-".to_owned(), |r| format!("{r:.3}")),
            row.age
                .map_or_else(|| "-".to_owned(), |a| format!("{}m", a.as_secs() / 60)),
        ));
    }
    for line in lines {
        outln!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `pod rm RUN_ID [--force]`.
async fn rm(ctx: &Context, args: &RmArgs) -> anyhow::Result<ExitCode> {
    let (project, loaded) = ctx.load()?;
    let _lock = project.lock()?;
    let removed = Box::pin(manage::remove(
        &project,
        &loaded.settings,
        &loaded.env,
        &args.run_id,
        args.force,
    ))
    .await?;
    for done in &removed.reconciled {
        errln!("{}", reconciled_text(done));
    }
    for stray in &removed.strays {
        errln!("warning: {}", manage::stray_text(stray));
    }
    for pod in &removed.removed {
        outln!("removed pod {pod}");
    }
    if removed.removed.is_empty() && removed.left.is_empty() {
        errln!(
            "no pod of run `{}` is listed; nothing was deleted",
            args.run_id
        );
    }
    if removed.failed_run {
        errln!("run `{}` is marked failed", args.run_id);
    }
    if removed.left.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        errln!(
            "error: left the training pod {} of run `{}` in progress; `overbrainer pod rm {} --force` also removes it",
            removed.left.join(", "),
            args.run_id,
            args.run_id
        );
        Ok(ExitCode::FAILURE)
    }
}

//! `overbrainer split [--topic NAME]`: rewrites `data/train.jsonl` and `data/eval.jsonl`
//! (SPL-1..SPL-9). Needs no provider and resolves no secret; `--topic` only restricts the
//! counts printed.

use std::process::ExitCode;

use super::Context;
use super::stages;

/// Arguments of `split`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the counts of this topic only (both files always hold every topic).
    #[arg(long, value_name = "NAME", add = clap_complete::ArgValueCompleter::new(super::complete::topics))]
    pub topic: Option<String>,
}

/// Runs the split.
///
/// # Errors
///
/// When there is no project, the configuration is invalid, the lock is held or `--topic`
/// names no topic of the project.
pub async fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let topic = args.topic.as_deref();
    super::metrics::split_started();
    let report = stages::run_stage(ctx, (topic, false), async |context| {
        crate::pipeline::split::run(context, topic)
    })
    .await?;
    Ok(stages::conclude_split(&report))
}

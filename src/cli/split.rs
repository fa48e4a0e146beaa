//! `overbrainer split [--topic NAME]`: rewrites `data/train.jsonl` and `data/eval.jsonl`
//! (SPL-1..SPL-9). Needs no provider and resolves no secret; `--topic` only restricts the
//! counts printed.

use std::process::ExitCode;

use super::Context;

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
    let (session, mut events) = super::stages::open(ctx)?;
    // PIPE-2: a bad `--topic` is refused before anything starts (no history, no summary).
    session.context.check_topic(args.topic.as_deref())?;
    let context = session.context.clone();
    let report = super::stages::drive(&mut events, async move {
        crate::pipeline::split::run(&context, args.topic.as_deref())
    })
    .await;
    Ok(super::stages::conclude_split(&report))
}

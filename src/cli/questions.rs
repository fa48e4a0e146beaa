//! `overbrainer questions [--topic NAME] [--force] [--over-budget]`: the `questions` stage (PIPE-20..23),
//! first completing the subtopics of short topics (PIPE-4, with its own summary line).

use std::process::ExitCode;

use super::Context;
use super::stages::{self, StageArgs};

/// Arguments of `questions`.
pub type Args = StageArgs;

/// Runs the stage.
///
/// # Errors
///
/// When there is no project, the configuration is invalid, the lock is held or `--topic`
/// names no topic of the project.
pub async fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let topic = args.topic.as_deref();
    let reports = stages::run_stage(ctx, (topic, args.over_budget), async |context| {
        crate::pipeline::questions::run(context, topic, args.force).await
    })
    .await?;
    for report in reports.iter() {
        stages::conclude(report);
    }
    Ok(stages::exit_status(reports.decisive()))
}

//! `overbrainer answers [--topic NAME] [--force] [--over-budget]`: the `answers` stage of the dataset pipeline
//! (spec/pipeline.md). Takes the project lock; progress on stderr, one summary line on
//! stdout, non-zero exit when an item failed or the stage stopped.

use std::process::ExitCode;

use super::Context;
use super::stages::{self, StageArgs};

/// Arguments of `answers`.
pub type Args = StageArgs;

/// Runs the stage.
///
/// # Errors
///
/// When there is no project, the configuration is invalid, the lock is held or `--topic`
/// names no topic of the project.
pub async fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let topic = args.topic.as_deref();
    let report = stages::run_stage(ctx, (topic, args.over_budget), async |context| {
        crate::pipeline::answers::run(context, topic, args.force).await
    })
    .await?;
    Ok(stages::conclude(&report))
}

//! `overbrainer subtopics [--topic NAME] [--force]`: the `subtopics` stage of the dataset pipeline
//! (spec/pipeline.md). Takes the project lock; progress on stderr, one summary line on
//! stdout, non-zero exit when an item failed or the stage stopped.

use std::process::ExitCode;

use super::Context;

/// Arguments of `subtopics`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this topic (a configured `[[topics]]` name).
    #[arg(long, value_name = "NAME", add = clap_complete::ArgValueCompleter::new(super::complete::topics))]
    pub topic: Option<String>,
    /// Discard this stage's output for the selected topics and generate it again.
    #[arg(long)]
    pub force: bool,
}

/// Runs the stage.
///
/// # Errors
///
/// When there is no project, the configuration is invalid, the lock is held or `--topic`
/// names no topic of the project.
pub async fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let (session, mut events) = super::stages::open(ctx)?;
    // PIPE-2: a bad `--topic` is refused before anything starts (no history, no summary).
    session.context.check_topic(args.topic.as_deref())?;
    let report = super::stages::drive(
        &mut events,
        crate::pipeline::subtopics::run(&session.context, args.topic.as_deref(), args.force),
    )
    .await;
    Ok(super::stages::conclude(&report))
}

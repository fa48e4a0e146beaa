//! `overbrainer questions [--topic NAME] [--force]`: the `questions` stage (PIPE-20..23),
//! first completing the subtopics of short topics (PIPE-4, with its own summary line).

use std::process::ExitCode;

use super::Context;

/// Arguments of `questions`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this topic (a configured `[[topics]]` name).
    #[arg(long, value_name = "NAME")]
    pub topic: Option<String>,
    /// Discard the questions of the selected topics and generate them again.
    #[arg(long)]
    pub force: bool,
}

/// Runs the stage.
///
/// # Errors
///
/// When there is no project, the configuration is invalid or the lock is held.
pub async fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let mut session = super::stages::open(ctx)?;
    let reports = super::stages::drive(
        &mut session.events,
        crate::pipeline::questions::run(&session.context, args.topic.as_deref(), args.force),
    )
    .await;
    if let Some(subtopics) = &reports.subtopics {
        let code = super::stages::conclude(subtopics);
        if !subtopics.succeeded()
            && reports.questions.progress.done == 0
            && reports.questions.error.is_some()
        {
            return Ok(code);
        }
    }
    Ok(super::stages::conclude(&reports.questions))
}

//! `overbrainer questions [--topic NAME] [--force]`: the `questions` stage (PIPE-20..23),
//! first completing the subtopics of short topics (PIPE-4, with its own summary line).

use std::process::ExitCode;

use super::Context;

/// Arguments of `questions`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this topic (a configured `[[topics]]` name).
    #[arg(long, value_name = "NAME", add = clap_complete::ArgValueCompleter::new(super::complete::topics))]
    pub topic: Option<String>,
    /// Discard the questions of the selected topics and generate them again.
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
    let reports = super::stages::drive(
        &mut events,
        crate::pipeline::questions::run(&session.context, args.topic.as_deref(), args.force),
    )
    .await;
    // PIPE-4: the subtopics completed first print their own line; either failing fails
    // the command.
    let subtopics_code = reports.subtopics.as_ref().map(super::stages::conclude);
    let code = super::stages::conclude(&reports.questions);
    match subtopics_code {
        Some(sub) if sub != ExitCode::SUCCESS && code == ExitCode::SUCCESS => Ok(sub),
        _ => Ok(code),
    }
}

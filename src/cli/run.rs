//! `overbrainer run`: `subtopics`, `questions`, `answers` and `split` on every topic, in
//! this order, stopping at the first stage that fails (PIPE-5); the configuration is
//! re-read between stages when `overbrainer.toml` or `.env` changed, and templates at
//! every stage (RLD-3).
//!
//! With a `[training]` section, `run` then starts and follows a training run exactly as
//! `train` does (the same [`crate::runs`] flow and rendering), and prints where the adapter
//! and the merged model are (RUN-19).

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::SystemTime;

use super::Context;
use super::follow;
use super::stages::{Session, conclude, conclude_split, drive};
use crate::pipeline::{answers, questions, split, subtopics};
use crate::runs::start::{StartOptions, start};

/// Arguments of `run` (none: it always covers every topic, PIPE-5).
#[derive(Debug, clap::Args)]
pub struct Args {}

type Stamp = Vec<Option<(SystemTime, u64)>>;

fn stamp(root: &Path) -> Stamp {
    [crate::config::FILE_NAME, crate::config::DOTENV_NAME]
        .iter()
        .map(|name| {
            let meta = std::fs::metadata(root.join(name)).ok()?;
            Some((meta.modified().ok()?, meta.len()))
        })
        .collect()
}

/// Re-reads the configuration when either file changed since the last read (RLD-3).
fn reload(ctx: &Context, session: &mut Session, last: &mut Stamp) -> anyhow::Result<()> {
    let now = stamp(session.project.root());
    if now == *last {
        return Ok(());
    }
    *last = now;
    let loaded = crate::config::load(session.project.root(), &ctx.env)?;
    session.context.settings = Arc::new(loaded.settings.clone());
    session.loaded = loaded;
    errln!("note: the configuration changed and was reloaded; the next stage uses it");
    Ok(())
}

/// Runs every stage.
///
/// # Errors
///
/// When there is no project, the lock is held, or a reloaded configuration is invalid.
pub async fn run(ctx: &Context, _args: &Args) -> anyhow::Result<ExitCode> {
    let mut session = super::stages::open(ctx)?;
    let mut last = stamp(session.project.root());

    let context = session.context.clone();
    let report = drive(&mut session.events, subtopics::run(&context, None, false)).await;
    let code = conclude(&report);
    if !report.succeeded() {
        return Ok(code);
    }

    reload(ctx, &mut session, &mut last)?;
    let context = session.context.clone();
    let reports = drive(&mut session.events, questions::run(&context, None, false)).await;
    if let Some(sub) = &reports.subtopics {
        let code = conclude(sub);
        if !sub.succeeded() {
            return Ok(code);
        }
    }
    let code = conclude(&reports.questions);
    if !reports.questions.succeeded() {
        return Ok(code);
    }

    reload(ctx, &mut session, &mut last)?;
    let context = session.context.clone();
    let report = drive(&mut session.events, answers::run(&context, None, false)).await;
    let code = conclude(&report);
    if !report.succeeded() {
        return Ok(code);
    }

    reload(ctx, &mut session, &mut last)?;
    let context = session.context.clone();
    let report = drive(&mut session.events, async { split::run(&context, None) }).await;
    let code = conclude_split(&report);
    if !report.succeeded() {
        return Ok(code);
    }

    reload(ctx, &mut session, &mut last)?;
    if session.loaded.settings.training.is_none() {
        return Ok(ExitCode::SUCCESS);
    }
    train(&session).await
}

/// Starts and follows a training run as `train` does (PIPE-5); Ctrl-C detaches from it.
async fn train(session: &Session) -> anyhow::Result<ExitCode> {
    let options = StartOptions::default();
    let cancel = session.context.cancel.clone();
    let (events, mut receiver) = follow::channel();
    let outcome = follow::drive(&mut receiver, async {
        let started = start(
            &session.project,
            &session.loaded.settings,
            &session.loaded.env,
            &options,
            &events,
        )
        .await?;
        crate::runs::follow::follow(
            &session.project,
            &started.executor,
            started.record,
            &events,
            &cancel,
            false,
        )
        .await
    })
    .await?;
    Ok(follow::conclude(&outcome))
}

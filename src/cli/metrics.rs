//! The Prometheus endpoint around a command (spec/metrics.md): the commands of MET-3
//! serve for their whole duration when `metrics.listen` is set; the URL is logged at
//! `info` (MET-2), a non-loopback address (MET-5) and a failed bind (MET-6) warn and the
//! command goes on. The renderers of stage and run events hand each event here too, so
//! the endpoint sees exactly what the front end shows.

use std::sync::{Arc, OnceLock};

use crate::metrics::{Follower, Metrics, Serving};
use crate::pipeline::{Event, Stage};
use crate::runs::RunEvent;

/// The metrics this process serves, once its endpoint is bound (one command a process).
static SERVED: OnceLock<Arc<Metrics>> = OnceLock::new();

/// Whether `command` serves the endpoint (MET-3); read-only commands never do.
pub(crate) fn serves(command: &super::Command) -> bool {
    use super::Command;
    match command {
        Command::Subtopics(_)
        | Command::Questions(_)
        | Command::Answers(_)
        | Command::Split(_)
        | Command::Run(_)
        | Command::Train(_)
        | Command::Push(_)
        | Command::Export(_)
        | Command::Compare(_)
        | Command::Tui(_)
        | Command::Pod(super::pod::PodCommand::Rm(_)) => true,
        Command::Init(_)
        | Command::Config(_)
        | Command::History(_)
        | Command::Budget(_)
        | Command::Runs(_)
        | Command::Target(_)
        | Command::Pod(_) => false,
    }
}

/// Starts the endpoint when the project sets `metrics.listen`; the returned value serves
/// until dropped. Never fails the command: an unloadable project is the command's to
/// report, a failed bind a warning.
pub(crate) async fn serve(ctx: &super::Context) -> Option<Serving> {
    let (project, loaded) = ctx.load().ok()?;
    let address = crate::metrics::listen_address(&loaded.settings)?;
    if crate::metrics::is_exposed(address) {
        tracing::warn!(
            "`metrics.listen` is `{address}`, not a loopback address: the metrics endpoint has no authentication and other machines can read it"
        );
    }
    let scale = crate::env::TimeScale::from_env(&ctx.env);
    match crate::metrics::start(&project, address, scale).await {
        Ok(serving) => {
            tracing::info!("metrics: serving {}", serving.endpoint.url());
            if let Some(why) = &serving.history_unread {
                tracing::warn!(
                    "metrics: the counters start from zero: cannot read the history: {why}"
                );
            }
            let _ = SERVED.set(Arc::clone(&serving.metrics));
            Some(serving)
        }
        Err(error) => {
            tracing::warn!("{}", super::out::chain(&error));
            None
        }
    }
}

fn served() -> Option<&'static Metrics> {
    SERVED.get().map(AsRef::as_ref)
}

/// A stage event, as the renderer sees it.
pub(crate) fn stage_event(event: &Event) {
    if let Some(metrics) = served() {
        metrics.stage_event(event);
    }
}

/// A judge request of `compare` settled (MET-9).
pub(crate) fn judge_spent(model: &str, usage: crate::llm::Usage, cost_usd: Option<f64>) {
    if let Some(metrics) = served() {
        metrics.judge_spent(model, usage, cost_usd);
    }
}

/// A stage ended.
pub(crate) fn stage_ended(stage: Stage) {
    if let Some(metrics) = served() {
        metrics.stage_ended(stage);
    }
}

/// `split` began.
pub(crate) fn split_started() {
    if let Some(metrics) = served() {
        metrics.split_started();
    }
}

/// `split` ended with `report`.
pub(crate) fn split_ended(report: &crate::pipeline::split::SplitReport) {
    if let Some(metrics) = served() {
        metrics.split_ended(report);
    }
}

/// No stage runs any more.
pub(crate) fn stages_idle() {
    if let Some(metrics) = served() {
        metrics.stages_idle();
    }
}

/// A new follower of runs (one [`super::follow::drive`]).
pub(crate) fn follower() -> Option<Follower> {
    served().map(Metrics::follower)
}

/// A run event of `follower`.
pub(crate) fn run_event(follower: Option<Follower>, event: &RunEvent) {
    if let (Some(metrics), Some(follower)) = (served(), follower) {
        metrics.run_event(follower, event);
    }
}

/// `follower` is done: the series of runs nothing else follows go (MET-11, MET-13).
pub(crate) fn unfollow(follower: Option<Follower>) {
    if let (Some(metrics), Some(follower)) = (served(), follower) {
        metrics.unfollow(follower);
    }
}

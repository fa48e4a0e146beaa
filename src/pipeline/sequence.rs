//! The `run` sequence, for any front end (PIPE-5, RLD-3, RUN-19): `subtopics`,
//! `questions`, `answers` and `split` on every topic, in this order, stopping at the first
//! stage that does not succeed; the configuration is re-read between stages when
//! `overbrainer.toml` or `.env` changed (templates are read at every stage anyway). With a
//! `[training]` section it then starts and follows a training run, as `train` does.
//!
//! Everything it reports comes out, in order, as [`FlowEvent`]s on one channel: each
//! stage's events, then its report, a reload, then the run's events.

use std::future::Future;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::session::Session;
use super::split::SplitReport;
use super::{Event, Stage, StageReport, answers, questions, split, subtopics};
use crate::config::ConfigError;
use crate::runs::follow::Outcome;
use crate::runs::start::StartOptions;
use crate::runs::{RunError, RunEvent};

/// What the sequence reports, in the order it happens.
#[derive(Debug)]
pub enum FlowEvent {
    /// An event of the dataset stage in progress.
    Stage(Event),
    /// A dataset stage ended (with `questions`, first the subtopics it completed, PIPE-4).
    StageEnded(StageReport),
    /// `split` began (it reports nothing else until it ends).
    SplitStarted,
    /// `split` ended.
    SplitEnded(SplitReport),
    /// The configuration changed and was re-read; the next step uses it (RLD-3).
    Reloaded,
    /// An event of the training run.
    Run(RunEvent),
}

/// Sender of [`FlowEvent`]s.
pub type FlowEvents = UnboundedSender<FlowEvent>;

/// How the sequence ended.
#[derive(Debug)]
pub enum Ended {
    /// This stage did not succeed (failed items, an error, an interruption); the sequence
    /// stopped after it. Its report was the last [`FlowEvent::StageEnded`] or
    /// [`FlowEvent::SplitEnded`].
    StageFailed(Stage),
    /// Every stage succeeded and the project has no `[training]` section.
    Dataset,
    /// Every stage succeeded and the training run was followed to this outcome.
    Trained(Box<Outcome>),
}

/// Why the sequence stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    /// A configuration re-read between stages is invalid.
    #[error(transparent)]
    Reload(#[from] ConfigError),
    /// The training run could not start or be followed.
    #[error(transparent)]
    Run(#[from] RunError),
}

/// Runs `flow` while forwarding what arrives on `from` to `to` as `wrap`ped events; every
/// event sent before `flow` ended is forwarded before this returns.
async fn forwarding<E, T>(
    from: &mut UnboundedReceiver<E>,
    to: &FlowEvents,
    wrap: fn(E) -> FlowEvent,
    flow: impl Future<Output = T>,
) -> T {
    super::pump::pump(from, flow, |event| {
        let _ = to.send(wrap(event));
    })
    .await
}

/// Re-reads the configuration when it changed, saying so.
fn reload(session: &mut Session, out: &FlowEvents) -> Result<(), ConfigError> {
    if session.reload_if_changed()? {
        let _ = out.send(FlowEvent::Reloaded);
    }
    Ok(())
}

/// Sends a stage's report; returns whether the sequence goes on.
fn ended(report: StageReport, out: &FlowEvents) -> Result<(), Stage> {
    let stage = report.stage;
    let succeeded = report.succeeded();
    let _ = out.send(FlowEvent::StageEnded(report));
    if succeeded { Ok(()) } else { Err(stage) }
}

/// Runs the dataset stages on every topic, then the training run when `[training]` is
/// set. `stage_events` is the receiver [`super::session::open`] returned with `session`.
/// Cancelling `session.context.cancel` interrupts the stage in progress (which reports
/// `interrupted` and ends the sequence) or detaches from the training run (RUN-16).
///
/// # Errors
///
/// [`FlowError::Reload`] when a changed configuration is invalid (the stages before kept
/// their output); [`FlowError::Run`] when the run cannot start (a refusal creates
/// nothing) or its following fails.
pub async fn run(
    session: &mut Session,
    stage_events: &mut UnboundedReceiver<Event>,
    out: &FlowEvents,
) -> Result<Ended, FlowError> {
    if let Err(stage) = dataset(session, stage_events, out).await? {
        return Ok(Ended::StageFailed(stage));
    }
    reload(session, out)?;
    if session.loaded.settings.training.is_none() {
        return Ok(Ended::Dataset);
    }
    Ok(Ended::Trained(Box::new(
        Box::pin(train(session, out)).await?,
    )))
}

/// The four stages; `Err(stage)` names the first that did not succeed.
async fn dataset(
    session: &mut Session,
    events: &mut UnboundedReceiver<Event>,
    out: &FlowEvents,
) -> Result<Result<(), Stage>, ConfigError> {
    let context = session.context.clone();
    let report = forwarding(events, out, FlowEvent::Stage, async {
        subtopics::run(&context, None, false).await
    })
    .await;
    if let Err(stage) = ended(report, out) {
        return Ok(Err(stage));
    }

    reload(session, out)?;
    let context = session.context.clone();
    let reports = forwarding(events, out, FlowEvent::Stage, async {
        questions::run(&context, None, false).await
    })
    .await;
    for report in reports {
        if let Err(stage) = ended(report, out) {
            return Ok(Err(stage));
        }
    }

    reload(session, out)?;
    let context = session.context.clone();
    let report = forwarding(events, out, FlowEvent::Stage, async {
        answers::run(&context, None, false).await
    })
    .await;
    if let Err(stage) = ended(report, out) {
        return Ok(Err(stage));
    }

    reload(session, out)?;
    let context = session.context.clone();
    let _ = out.send(FlowEvent::SplitStarted);
    let report = forwarding(events, out, FlowEvent::Stage, async {
        split::run(&context, None)
    })
    .await;
    let succeeded = report.succeeded();
    let _ = out.send(FlowEvent::SplitEnded(report));
    Ok(if succeeded { Ok(()) } else { Err(Stage::Split) })
}

/// Starts and follows a training run as `train` does (PIPE-5, RUN-19).
async fn train(session: &Session, out: &FlowEvents) -> Result<Outcome, RunError> {
    let (events, mut receiver) = unbounded_channel();
    forwarding(
        &mut receiver,
        out,
        FlowEvent::Run,
        crate::runs::train::train(
            &session.project,
            &session.loaded.settings,
            &session.loaded.provenance,
            &session.loaded.env,
            // `run --over-budget` accepts the pod's estimate too (issue 20).
            &StartOptions {
                over_budget: session.context.over_budget,
                vram_estimate: None,
                ..StartOptions::default()
            },
            &events,
            &session.context.cancel,
        ),
    )
    .await
}

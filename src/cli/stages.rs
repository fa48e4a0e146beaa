//! What the stage commands share: their arguments, opening a pipeline session
//! ([`crate::pipeline::session`]) with Ctrl-C handling, rendering stage events (an
//! indicatif bar per stage on stderr, warnings and item failures as log lines), the one
//! summary line on stdout, and rendering the `run` sequence's events.

use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

use super::out::chain;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::history::Status;
use crate::pipeline::pump::pump;
use crate::pipeline::sequence::FlowEvent;
use crate::pipeline::session::Session;
use crate::pipeline::split::SplitReport;
use crate::pipeline::{Event, Progress, StageReport};

/// Opens a pipeline session ([`crate::pipeline::session::open`]): the configuration's
/// warnings go to stderr and Ctrl-C cancels the session's token (PIPE-16).
pub(crate) fn open(ctx: &super::Context) -> anyhow::Result<(Session, UnboundedReceiver<Event>)> {
    let (session, events) = crate::pipeline::session::open(&ctx.dir, &ctx.env)?;
    for warning in &session.loaded.warnings {
        tracing::warn!("{warning}");
    }
    let on_signal = session.context.cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_signal.cancel();
        }
    });
    Ok((session, events))
}

/// Arguments of the stage commands `subtopics`, `questions` and `answers`.
#[derive(Debug, clap::Args)]
pub struct StageArgs {
    /// Only this topic (a configured `[[topics]]` name).
    #[arg(long, value_name = "NAME", add = clap_complete::ArgValueCompleter::new(super::complete::topics))]
    pub topic: Option<String>,
    /// Discard this stage's output for the selected topics and generate it again.
    #[arg(long)]
    pub force: bool,
    /// Start even when the estimate with the spend passes `budget.max_usd` (the cap
    /// still stops the stage when it is reached).
    #[arg(long)]
    pub over_budget: bool,
}

/// What every stage command does around its stage: opens the session ([`open`]), refuses a
/// `topic` that names no topic of the project before anything starts (PIPE-2: no history,
/// no summary), then runs `stage` on the session's context while rendering its events;
/// `over_budget` is `--over-budget`.
pub(crate) async fn run_stage<T>(
    ctx: &super::Context,
    (topic, over_budget): (Option<&str>, bool),
    stage: impl AsyncFnOnce(&crate::pipeline::Context) -> T,
) -> anyhow::Result<T> {
    let (mut session, mut events) = open(ctx)?;
    session.context.over_budget = over_budget;
    session.context.check_topic(topic)?;
    Ok(drive(&mut events, stage(&session.context)).await)
}

/// Runs `flow` while rendering its events; returns its output once it and its events are
/// done.
pub(crate) async fn drive<T>(
    events: &mut UnboundedReceiver<Event>,
    flow: impl Future<Output = T>,
) -> T {
    let mut renderer = Renderer::default();
    let output = pump(events, flow, |event| renderer.render(event)).await;
    renderer.finish();
    super::metrics::stages_idle();
    output
}

/// Runs the `run` sequence `flow` while rendering its stage events and reports as the
/// stage commands do and handing its run events to `run_events` (rendered by
/// [`super::follow::drive`]); returns its output and the exit status of the last stage
/// report.
pub(crate) async fn drive_flow<T>(
    events: &mut UnboundedReceiver<FlowEvent>,
    run_events: &crate::runs::Events,
    flow: impl Future<Output = T>,
) -> (T, ExitCode) {
    let mut renderer = Renderer::default();
    let mut code = ExitCode::SUCCESS;
    let output = pump(events, flow, |event| match event {
        FlowEvent::Stage(event) => renderer.render(event),
        FlowEvent::StageEnded(report) => {
            renderer.finish();
            code = conclude(&report);
        }
        FlowEvent::SplitStarted => super::metrics::split_started(),
        FlowEvent::SplitEnded(report) => {
            renderer.finish();
            code = conclude_split(&report);
        }
        FlowEvent::Reloaded => {
            errln!("note: the configuration changed and was reloaded; the next stage uses it");
        }
        FlowEvent::Run(event) => {
            let _ = run_events.send(event);
        }
    })
    .await;
    renderer.finish();
    super::metrics::stages_idle();
    (output, code)
}

#[derive(Default)]
struct Renderer {
    bar: Option<ProgressBar>,
}

impl Renderer {
    fn render(&mut self, event: Event) {
        super::metrics::stage_event(&event);
        match event {
            Event::Started { stage, total, .. } => {
                self.finish();
                let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
                bar.set_style(
                    ProgressStyle::with_template("{prefix}: [{bar:20}] {pos}/{len} {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("=> "),
                );
                bar.set_prefix(stage.name());
                bar.enable_steady_tick(Duration::from_millis(200));
                self.bar = Some(bar);
            }
            Event::Progress { progress, .. } => {
                if let Some(bar) = &self.bar {
                    bar.set_position(progress.done + progress.failed);
                    bar.set_message(progress_text(&progress));
                }
            }
            Event::Warning(message) => self.log(|| tracing::warn!("{message}")),
            // Counted by the Prometheus endpoint; the bar shows the totals.
            Event::Spent { .. } => {}
            Event::Waiting {
                stage,
                item,
                wait,
                reason,
            } => self.log(|| {
                tracing::info!(
                    "{}: {item} waits {} before its retry: {reason}",
                    stage.name(),
                    crate::llm::human_duration(wait)
                );
            }),
            Event::ItemFailed {
                stage,
                item,
                reason,
            } => {
                self.log(|| tracing::error!("{}: {item} failed: {reason}", stage.name()));
            }
        }
    }

    fn log(&self, write: impl FnOnce()) {
        match &self.bar {
            Some(bar) => bar.suspend(write),
            None => write(),
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

fn progress_text(p: &Progress) -> String {
    format!(
        "{} in flight, {} retrying, {} failed, {}/{} tokens, {}",
        p.in_flight, p.retrying, p.failed, p.input_tokens, p.output_tokens, p.cost
    )
}

/// Prints a stage's summary line and its errors; returns its exit status.
pub(crate) fn conclude(report: &StageReport) -> ExitCode {
    super::metrics::stage_ended(report.stage);
    outln!("{}", report.summary_line());
    if let Some(error) = &report.error {
        errln!("error: {}", chain(error));
    }
    if let Some(error) = &report.history_error {
        errln!("error: {}", chain(error));
    }
    exit_status(report)
}

/// The exit status of a stage: 130 when it was interrupted, success when it succeeded.
pub(crate) fn exit_status(report: &StageReport) -> ExitCode {
    match report.status {
        Status::Interrupted => ExitCode::from(130),
        _ if report.succeeded() => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}

/// Prints `split`'s line and errors; returns its exit status.
pub(crate) fn conclude_split(report: &SplitReport) -> ExitCode {
    super::metrics::split_ended(report);
    outln!("{}", report.summary_line());
    if let Some(error) = &report.error {
        errln!("error: {}", chain(error));
    }
    if let Some(error) = &report.history_error {
        errln!("error: {}", chain(error));
    }
    if report.succeeded() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

//! The dataset stages as the TUI starts them (`r` menu, `A`, TUI-6, TUI-36..TUI-40): one
//! stage, `run` (the four stages, ending after `split`) or auto mode (the four, then a
//! training run as `t` starts it). Each stage is the call its command makes
//! (`pipeline::subtopics::run`, …, `pipeline::split::run`) on every topic and never with
//! `--force`, with the configuration in use when it starts (a change on disk read
//! meanwhile applies to the next stage, RLD-3); the chain stops at the first stage that
//! does not succeed, and running it again picks up where it stopped (stages skip what is
//! done). Its events come back to the loop tagged with the task.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

use super::config_write::Current;
use super::event::FlowEvent;
use crate::pipeline::pump::pump;
use crate::pipeline::{Event, Stage, StageReport};

/// What the `r` menu or `A` starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chain {
    /// One stage.
    One(Stage),
    /// `run`: the four stages, ending after `split` (TUI-6).
    Run,
    /// Auto mode: the four stages, then a training run (TUI-39).
    Auto,
}

/// The four stages in order.
pub const STAGES: [Stage; 4] = [
    Stage::Subtopics,
    Stage::Questions,
    Stage::Answers,
    Stage::Split,
];

impl Chain {
    /// The stages it runs, in order.
    #[must_use]
    pub fn stages(self) -> Vec<Stage> {
        match self {
            Self::One(stage) => vec![stage],
            Self::Run | Self::Auto => STAGES.to_vec(),
        }
    }

    /// Its name, as the menu lists it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::One(stage) => stage.name(),
            Self::Run => "run",
            Self::Auto => "auto",
        }
    }
}

/// What a chain reports.
#[derive(Debug, Clone)]
pub enum StageNews {
    /// A stage began.
    Began(Stage),
    /// An event of the stage in progress.
    Event(Event),
    /// A stage ended: its summary line as its command prints it, and its error.
    Ended {
        /// The stage.
        stage: Stage,
        /// Whether it succeeded (no failed item, no error, not interrupted).
        ok: bool,
        /// The summary line.
        line: String,
        /// The error that stopped it, with its causes.
        error: Option<String>,
    },
    /// The chain ended: every stage succeeded, or it stopped at the one that did not.
    Finished {
        /// Whether every stage succeeded.
        ok: bool,
    },
}

/// The pipeline context of a flow on the project at `root` with `settings`, the keys of
/// `env`, its events on `events`, cancelled by `cancel`, retries paced from
/// `backoff_base`.
#[must_use]
pub fn pipeline_context(
    root: &std::path::Path,
    settings: &crate::config::Settings,
    env: &crate::config::EnvSnapshot,
    events: UnboundedSender<Event>,
    (cancel, backoff_base): (CancellationToken, Duration),
) -> crate::pipeline::Context {
    crate::pipeline::Context {
        settings: Arc::new(settings.clone()),
        root: root.to_path_buf(),
        secrets: Arc::new(crate::secrets::Resolver::new(env)),
        prices: crate::pricing::PriceBook::new(),
        events,
        cancel,
        backoff_base,
        redactor: crate::llm::Redactor::new(),
        over_budget: false,
    }
}

/// A stage's end: the first of its errors (the stage's, then the history line's), with its
/// causes.
fn ended_news(
    stage: Stage,
    (ok, line): (bool, String),
    errors: [Option<&dyn std::error::Error>; 2],
) -> StageNews {
    StageNews::Ended {
        stage,
        ok,
        line,
        error: errors
            .into_iter()
            .flatten()
            .next()
            .map(crate::runs::start::error_chain),
    }
}

fn ended(report: &StageReport) -> StageNews {
    ended_news(
        report.stage,
        (report.succeeded(), report.summary_line()),
        [
            report.error.as_ref().map(|e| e as _),
            report.history_error.as_ref().map(|e| e as _),
        ],
    )
}

/// Runs `chain` as task `task`, sending its news on `sender`; `cancel` interrupts the stage
/// in progress (it reports `interrupted`) and ends the chain.
pub async fn run_chain(
    config: Arc<Current>,
    chain: Chain,
    task: u64,
    sender: UnboundedSender<FlowEvent>,
    cancel: CancellationToken,
) {
    let send = |news: StageNews| {
        let _ = sender.send(FlowEvent::Stage { task, news });
    };
    for stage in chain.stages() {
        let context = config.get();
        let backoff = crate::env::TimeScale::from_env(&context.process_env).second();
        send(StageNews::Began(stage));
        let (events, mut received) = unbounded_channel();
        let pipeline = pipeline_context(
            context.project.root(),
            &context.settings,
            &context.env,
            events,
            (cancel.clone(), backoff),
        );
        let forward = |event| send(StageNews::Event(event));
        let news: Vec<StageNews> = match stage {
            Stage::Subtopics => vec![ended(
                &pump(
                    &mut received,
                    crate::pipeline::subtopics::run(&pipeline, None, false),
                    forward,
                )
                .await,
            )],
            Stage::Questions => {
                let reports = pump(
                    &mut received,
                    crate::pipeline::questions::run(&pipeline, None, false),
                    forward,
                )
                .await;
                reports.iter().map(ended).collect()
            }
            Stage::Answers => vec![ended(
                &pump(
                    &mut received,
                    crate::pipeline::answers::run(&pipeline, None, false),
                    forward,
                )
                .await,
            )],
            Stage::Split => {
                let splitting = pipeline.clone();
                let report = pump(
                    &mut received,
                    tokio::task::spawn_blocking(move || {
                        crate::pipeline::split::run(&splitting, None)
                    }),
                    forward,
                )
                .await;
                vec![match report {
                    Ok(report) => ended_news(
                        stage,
                        (report.succeeded(), report.summary_line()),
                        [
                            report.error.as_ref().map(|e| e as _),
                            report.history_error.as_ref().map(|e| e as _),
                        ],
                    ),
                    Err(error) => StageNews::Ended {
                        stage,
                        ok: false,
                        line: "split: did not finish".to_owned(),
                        error: Some(error.to_string()),
                    },
                }]
            }
        };
        let ok = news
            .iter()
            .all(|n| matches!(n, StageNews::Ended { ok: true, .. }));
        news.into_iter().for_each(send);
        if !ok || cancel.is_cancelled() {
            send(StageNews::Finished { ok: false });
            return;
        }
    }
    send(StageNews::Finished { ok: true });
}

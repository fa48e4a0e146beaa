//! The Pipeline view (`3`, TUI-36..TUI-40): the four dataset stages, each with what it has
//! written under `data/` (read with the Dataset view by
//! [`crate::dataset::listing::list`]) and, once the TUI ran it, its live progress: the
//! items done of the total, requests in flight, items being retried, failures, tokens and
//! cost, as items finish; then the summary lines its command prints. A `run` or auto chain
//! shows above them with a done mark on finished steps and a current mark on the running
//! one. `r` (the app's menu) starts stages, `A` auto mode, `c` cancels a running chain.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use super::super::action::{Action, Dialog};
use super::super::motion::Eased;
use super::super::stages::{Chain, STAGES, StageNews};
use super::super::theme::{Motion, Theme};
use super::View;
use crate::dataset::listing::Listing;
use crate::pipeline::{Event, Progress, Stage};

const KEYS: &[(&str, &str)] = &[("r", "run a stage"), ("A", "auto"), ("R", "reload")];
const RUNNING_KEYS: &[(&str, &str)] = &[("c", "cancel the chain"), ("R", "reload")];

/// How far a stage of the chain got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    /// Not reached yet.
    Waiting,
    /// Running now.
    Running,
    /// Ended and succeeded.
    Done,
    /// Ended without succeeding.
    Failed,
}

/// What the TUI saw of one stage.
#[derive(Debug, Clone)]
struct Row {
    stage: Stage,
    mark: Mark,
    /// Items to do and already done, once the stage said.
    total: Option<(u64, u64)>,
    progress: Progress,
    /// The summary lines, as the command prints them.
    lines: Vec<String>,
    /// Why it stopped.
    error: Option<String>,
    /// The last items that failed, with why.
    failures: Vec<String>,
    /// A request waiting for its retry.
    waiting: Option<String>,
    /// The bar's fraction as drawn (TUI-72).
    bar: Eased,
}

/// The chain the TUI runs or ran last.
#[derive(Debug, Clone)]
pub struct ChainState {
    chain: Chain,
    rows: Vec<Row>,
    /// `None` while it runs, then whether every stage succeeded.
    finished: Option<bool>,
}

impl ChainState {
    fn row(&mut self, stage: Stage) -> Option<&mut Row> {
        self.rows.iter_mut().find(|r| r.stage == stage)
    }
}

/// The Pipeline view.
#[derive(Debug, Clone)]
pub struct PipelineView {
    theme: Theme,
    listing: Option<Listing>,
    /// The chain running or run last.
    pub chain: Option<ChainState>,
}

/// The view.
#[must_use]
pub fn new(theme: Theme) -> PipelineView {
    PipelineView {
        theme,
        listing: None,
        chain: None,
    }
}

/// The most failures a stage row keeps.
const FAILURES_SHOWN: usize = 3;

impl PipelineView {
    /// Replaces what was read.
    pub fn set_listing(&mut self, listing: Listing) {
        self.listing = Some(listing);
    }

    /// Whether a chain runs.
    #[must_use]
    pub fn running(&self) -> bool {
        self.chain.as_ref().is_some_and(|c| c.finished.is_none())
    }

    /// The stage running now.
    #[must_use]
    pub fn current(&self) -> Option<Stage> {
        let chain = self.chain.as_ref()?;
        chain
            .rows
            .iter()
            .find(|r| r.mark == Mark::Running)
            .map(|r| r.stage)
    }

    /// The stage that stopped the chain, with why.
    #[must_use]
    pub fn failure(&self) -> Option<(String, String)> {
        let chain = self.chain.as_ref()?;
        let row = chain.rows.iter().rev().find(|r| r.mark == Mark::Failed)?;
        let why = row
            .error
            .clone()
            .or_else(|| row.lines.last().cloned())
            .unwrap_or_else(|| "interrupted".to_owned());
        Some((row.stage.name().to_owned(), why))
    }

    /// Moves each stage's bar toward its progress, easing with motion on (TUI-72);
    /// whether one still moves.
    pub fn ease(&mut self) -> bool {
        let motion = self.theme.motion;
        let Some(chain) = self.chain.as_mut() else {
            return false;
        };
        let mut moving = false;
        for row in &mut chain.rows {
            if let Some((total, _)) = row.total {
                row.bar
                    .set(fraction(row.progress.done.min(total), total), motion);
            }
            moving |= row.bar.step();
        }
        moving
    }

    /// Whether a stage's bar is still easing to its progress.
    #[must_use]
    pub fn easing(&self) -> bool {
        if self.theme.motion != Motion::On {
            return false;
        }
        self.chain.as_ref().is_some_and(|chain| {
            chain.rows.iter().any(|row| {
                let behind = row.total.is_some_and(|(total, _)| {
                    #[allow(clippy::float_cmp, reason = "the value it was set to")]
                    let behind = row.bar.target() != fraction(row.progress.done.min(total), total);
                    behind
                });
                behind || row.bar.moving()
            })
        })
    }

    /// A chain starts.
    pub fn begin(&mut self, chain: Chain) {
        let rows = chain
            .stages()
            .into_iter()
            .map(|stage| Row {
                stage,
                mark: Mark::Waiting,
                total: None,
                progress: Progress::default(),
                lines: Vec::new(),
                error: None,
                failures: Vec::new(),
                waiting: None,
                bar: Eased::default(),
            })
            .collect();
        self.chain = Some(ChainState {
            chain,
            rows,
            finished: None,
        });
    }

    /// Takes in the chain's news.
    pub fn apply(&mut self, news: &StageNews) {
        let Some(chain) = self.chain.as_mut() else {
            return;
        };
        match news {
            StageNews::Began(stage) => {
                if let Some(row) = chain.row(*stage) {
                    row.mark = Mark::Running;
                }
            }
            StageNews::Event(event) => apply_event(chain, event),
            StageNews::Ended {
                stage,
                ok,
                line,
                error,
            } => {
                // `questions` first completes the subtopics it needs (PIPE-4): that report
                // is the `subtopics` row's, and the `questions` row still runs.
                let current = chain
                    .rows
                    .iter()
                    .find(|r| r.mark == Mark::Running)
                    .map(|r| r.stage);
                if chain.row(*stage).is_none()
                    && let Some(row) = current.and_then(|s| chain.row(s))
                {
                    // A stage of the chain's own (the subtopics `questions` completed).
                    row.lines.push(line.clone());
                } else if let Some(row) = chain.row(*stage) {
                    row.lines.push(line.clone());
                    row.error.clone_from(error);
                    row.waiting = None;
                    if current == Some(*stage) || row.mark == Mark::Waiting || !ok {
                        row.mark = if *ok { Mark::Done } else { Mark::Failed };
                    }
                }
                if !ok && let Some(current) = current.and_then(|s| chain.row(s)) {
                    current.mark = Mark::Failed;
                }
            }
            StageNews::Finished { ok } => {
                chain.finished = Some(*ok);
                for row in &mut chain.rows {
                    if row.mark == Mark::Running {
                        row.mark = if *ok { Mark::Done } else { Mark::Failed };
                    }
                }
            }
        }
    }

    /// The chain's line (`subtopics ✓ → questions ● → answers → split → train`), for a
    /// `run` or auto chain.
    fn chain_line(&self, chain: &ChainState) -> Option<Line<'static>> {
        let t = self.theme;
        if matches!(chain.chain, Chain::One(_)) {
            return None;
        }
        let mut spans = Vec::new();
        for (i, row) in chain.rows.iter().enumerate() {
            if i > 0 {
                spans.push(Span::styled(" → ", t.dim()));
            }
            let (mark, style) = match row.mark {
                Mark::Waiting => ("", t.dim()),
                Mark::Running => (" ●", t.warn()),
                Mark::Done => (" ✓", t.ok()),
                Mark::Failed => (" ✗", t.error()),
            };
            spans.push(Span::styled(format!("{}{mark}", row.stage.name()), style));
        }
        if chain.chain == Chain::Auto {
            spans.push(Span::styled(" → train", t.dim()));
        }
        Some(Line::from(spans))
    }

    fn row_lines(&self, row: &Row, written: Option<String>) -> Vec<Line<'static>> {
        let t = self.theme;
        let name = Span::styled(format!("{:<11}", row.stage.name()), t.text());
        let p = &row.progress;
        let mut lines = Vec::new();
        let head = match (row.mark, row.total) {
            (Mark::Waiting, _) => Line::from(vec![
                name,
                Span::styled(written.unwrap_or_else(|| "waiting".into()), t.dim()),
            ]),
            (_, Some((total, skipped))) => {
                let done = p.done.min(total);
                // The eased fraction with motion on (TUI-72), else the progress itself.
                let shown = if self.theme.motion == Motion::On {
                    row.bar.shown()
                } else {
                    fraction(done, total)
                };
                lines.push(Line::from(vec![
                    name,
                    Span::styled(bar(shown), t.ok()),
                    Span::raw(format!(" {done}/{total} ({skipped} done before)")),
                ]));
                Line::styled(
                    format!(
                        "           {} in flight · {} retrying · {} failed · {} in / {} out tokens · {}",
                        p.in_flight, p.retrying, p.failed, p.input_tokens, p.output_tokens, p.cost
                    ),
                    if p.failed > 0 { t.warn() } else { t.dim() },
                )
            }
            (_, None) => Line::from(vec![
                name,
                Span::styled(
                    if row.mark == Mark::Running {
                        "starting…"
                    } else {
                        ""
                    },
                    t.dim(),
                ),
            ]),
        };
        lines.push(head);
        if let Some(waiting) = &row.waiting {
            lines.push(Line::styled(format!("           {waiting}"), t.warn()));
        }
        for failure in &row.failures {
            lines.push(Line::styled(format!("           ✗ {failure}"), t.error()));
        }
        for line in &row.lines {
            lines.push(Line::styled(
                format!("           {line}"),
                if row.mark == Mark::Failed {
                    t.error()
                } else {
                    t.dim()
                },
            ));
        }
        if let Some(error) = &row.error {
            lines.push(Line::styled(
                format!("           error: {error}"),
                t.error(),
            ));
        }
        lines
    }
}

/// A stage's event, on its row.
fn apply_event(chain: &mut ChainState, event: &Event) {
    match event {
        Event::Started {
            stage,
            total,
            skipped,
        } => {
            if let Some(row) = chain.row(*stage) {
                row.total = Some((*total, *skipped));
            }
        }
        Event::Progress { stage, progress } => {
            if let Some(row) = chain.row(*stage) {
                row.progress = *progress;
                if progress.retrying == 0 {
                    row.waiting = None;
                }
            }
        }
        Event::Waiting {
            stage,
            item,
            wait,
            reason,
        } => {
            if let Some(row) = chain.row(*stage) {
                row.waiting = Some(format!(
                    "{item} waits {}s before its retry: {reason}",
                    wait.as_secs()
                ));
            }
        }
        Event::ItemFailed {
            stage,
            item,
            reason,
        } => {
            if let Some(row) = chain.row(*stage) {
                row.failures.push(format!("{item}: {reason}"));
                if row.failures.len() > FAILURES_SHOWN {
                    row.failures.remove(0);
                }
            }
        }
        Event::Warning(_) | Event::Spent { .. } => {}
    }
}

/// `done` out of `total` as a fraction (a stage with nothing to do is done).
fn fraction(done: u64, total: u64) -> f64 {
    if total == 0 {
        return 1.0;
    }
    #[allow(clippy::cast_precision_loss, reason = "item counts")]
    let fraction = done as f64 / total as f64;
    fraction.min(1.0)
}

/// A 20-cell bar filled to `fraction`.
fn bar(fraction: f64) -> String {
    const CELLS: usize = 20;
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "clamped to 0..=20"
    )]
    let filled = ((fraction.clamp(0.0, 1.0) * 20.0).floor() as usize).min(CELLS);
    format!("{}{}", "█".repeat(filled), "░".repeat(CELLS - filled))
}

/// The records of `name` in `listing`, `None` when the file does not exist.
fn records(listing: &Listing, name: &str) -> Option<usize> {
    listing
        .files
        .iter()
        .find(|f| f.name == name)
        .and_then(|f| f.records)
}

/// What `stage` has written under `data/`, in words.
fn written(listing: &Listing, stage: Stage) -> Option<String> {
    match stage {
        Stage::Subtopics => records(listing, "subtopics.jsonl").map(|n| format!("{n} subtopics")),
        Stage::Questions => records(listing, "questions.jsonl").map(|n| format!("{n} questions")),
        Stage::Answers => records(listing, "answers.jsonl").map(|n| format!("{n} answers")),
        Stage::Split => match (
            records(listing, "train.jsonl"),
            records(listing, "eval.jsonl"),
        ) {
            (None, None) => None,
            (train, eval) => Some(format!(
                "{} train, {} eval",
                train.unwrap_or(0),
                eval.unwrap_or(0)
            )),
        },
    }
}

impl View for PipelineView {
    fn title(&self) -> &'static str {
        "Pipeline"
    }

    fn keys(&self) -> &'static [(&'static str, &'static str)] {
        if self.running() { RUNNING_KEYS } else { KEYS }
    }

    fn handle_key(&mut self, key: KeyEvent) -> Option<Action> {
        match key.code {
            KeyCode::Char('c') if self.running() => Some(Action::Ask(Dialog::new(
                "Cancel the chain?",
                vec![
                    format!(
                        "The running stage{} stops; what it finished is kept and the next run picks up there.",
                        self.current()
                            .map(|s| format!(" `{}`", s.name()))
                            .unwrap_or_default()
                    ),
                    "Requests in flight are paid for but lost; the rest of the chain does not run."
                        .into(),
                ],
                Action::CancelStages,
            ))),
            KeyCode::Char('c') => Some(Action::refuse("no stage runs")),
            KeyCode::Char('A') => Some(Action::AskAuto),
            _ => None,
        }
    }
}

impl Widget for &PipelineView {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let block = Block::new()
            .borders(Borders::ALL)
            .title(Span::styled(" pipeline ", t.title()));
        let Some(listing) = &self.listing else {
            Paragraph::new(Line::styled("Reading data/…", t.dim()))
                .block(block)
                .render(area, buf);
            return;
        };
        let mut lines = Vec::new();
        match &self.chain {
            Some(chain) => {
                let state = match chain.finished {
                    None => "running",
                    Some(true) => "done",
                    Some(false) => "stopped",
                };
                lines.push(Line::styled(
                    format!("`{}` {state}", chain.chain.name()),
                    t.title(),
                ));
                if let Some(line) = self.chain_line(chain) {
                    lines.push(line);
                }
            }
            None => lines.push(Line::styled(
                "What each stage has written, read from data/; `r` runs a stage, `A` all of them and training",
                t.dim(),
            )),
        }
        lines.push(Line::raw(""));
        for stage in STAGES {
            let row = self
                .chain
                .as_ref()
                .and_then(|c| c.rows.iter().find(|r| r.stage == stage));
            let on_disk = written(listing, stage);
            match row {
                Some(row) => lines.extend(self.row_lines(row, on_disk)),
                None => lines.push(Line::from(vec![
                    Span::styled(format!("{:<11}", stage.name()), t.text()),
                    match on_disk {
                        Some(text) => Span::styled(text, t.text()),
                        None => Span::styled("not run (no file in data/)", t.dim()),
                    },
                ])),
            }
        }
        if !listing.errors.is_empty() {
            lines.push(Line::raw(""));
            lines.push(Line::styled(
                format!(
                    "{} unreadable line(s): the Dataset view (2) names them",
                    listing.errors.len()
                ),
                t.error(),
            ));
        }
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(block)
            .render(area, buf);
    }
}

#[cfg(test)]
#[path = "pipeline_tests.rs"]
mod tests;

//! The Training view (`4`, TUI-41..TUI-48): the runs of `runs/` with their state; for the
//! selected run its progress, ETA, notes and a loss chart (training and eval loss,
//! downsampled) with learning-rate and gradient-norm sparklines; `t` start, `s` stop with
//! snapshot, `T` resume, `c` cancel, each after a confirmation, and `a` attach.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Axis, Block, Borders, Chart, Dataset, Gauge, GraphType, List, ListItem, ListState, Paragraph,
    Sparkline, StatefulWidget, Widget,
};

use super::super::action::Action;
use super::super::components::chart::{downsample, y_bounds};
use super::super::components::dialog::Dialog;
use super::super::motion::{Eased, pulse};
use super::super::theme::{Motion, Theme};
use super::View;
use crate::runs::record::RunRecord;
use crate::runs::{RunEvent, State};

mod live;
pub use live::Live;

/// The step the TUI saw, once it saw a training line (a follow that has seen none yet,
/// such as the one a cancel ends, says nothing: the record's step stands).
fn seen_step(live: Option<&Live>) -> Option<u64> {
    live.filter(|l| l.first.is_some()).map(|l| l.step)
}

#[allow(clippy::cast_precision_loss, reason = "steps are far below 2^52")]
fn f64_of(n: u64) -> f64 {
    n as f64
}

/// The share of its steps `run` has done, as the TUI saw it (0 before `max_steps` is
/// known).
fn progress(run: &RunRecord, live: Option<&Live>) -> f64 {
    let step = seen_step(live).or(run.last_step).unwrap_or(0);
    let max = live.and_then(|l| l.max_steps).or(run.max_steps);
    max.filter(|m| *m > 0)
        .map_or(0.0, |m| (f64_of(step) / f64_of(m)).min(1.0))
}

/// `1h02m`, `3m05s` or `42s`.
#[must_use]
pub fn duration_text(seconds: u64) -> String {
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    if h > 0 {
        format!("{h}h{m:02}m")
    } else if m > 0 {
        format!("{m}m{s:02}s")
    } else {
        format!("{s}s")
    }
}

/// The Training view.
#[derive(Debug, Clone)]
pub struct TrainingView {
    theme: Theme,
    /// The runs, oldest first.
    pub runs: Vec<RunRecord>,
    selected: usize,
    /// What the TUI saw of each run it followed, by run ID.
    pub live: BTreeMap<String, Live>,
    /// Runs a task of the TUI follows now.
    pub followed: BTreeSet<String>,
    /// Runs with a stop or cancel under way, and what it is (`stopping`, `cancelling`).
    pub busy: BTreeMap<String, &'static str>,
    /// The start confirmation's lines (target, model, data), or why `t` is refused.
    pub start: Result<Vec<String>, String>,
    /// Whether a start is under way (one at a time).
    pub starting: bool,
    /// A run to select once listed.
    wanted: Option<String>,
    /// The selected run's progress bar as drawn, and that run (TUI-72).
    bar: (Eased, Option<String>),
    /// The redraw tick's frame, for the followed run's pulse (TUI-72).
    pub frame: u64,
}

const KEYS: &[(&str, &str)] = &[
    ("j/k", "select"),
    ("t", "start"),
    ("s", "stop"),
    ("T", "resume"),
    ("c", "cancel"),
    ("a", "attach"),
];

impl TrainingView {
    /// An empty view; `start` as for [`TrainingView::start`].
    #[must_use]
    pub fn new(theme: Theme, start: Result<Vec<String>, String>) -> Self {
        Self {
            theme,
            runs: Vec::new(),
            selected: 0,
            live: BTreeMap::new(),
            followed: BTreeSet::new(),
            busy: BTreeMap::new(),
            start,
            starting: false,
            bar: (Eased::default(), None),
            frame: 0,
            wanted: None,
        }
    }

    /// Replaces the runs list, selecting the run [`TrainingView::select`] asked for once it
    /// is listed, else keeping the selected run when it is still there, else the newest.
    pub fn set_runs(&mut self, runs: Vec<RunRecord>) {
        let id = self.selected_run().map(|r| r.id.clone());
        self.runs = runs;
        if let Some(at) = self
            .wanted
            .as_ref()
            .and_then(|wanted| self.runs.iter().position(|r| r.id == *wanted))
        {
            self.selected = at;
            self.wanted = None;
            return;
        }
        self.selected = id
            .and_then(|id| self.runs.iter().position(|r| r.id == id))
            .unwrap_or_else(|| self.runs.len().saturating_sub(1));
    }

    /// Selects run `id`, now when listed, else as soon as a re-read lists it (a run the
    /// TUI just started).
    pub fn select(&mut self, id: &str) {
        if let Some(i) = self.runs.iter().position(|r| r.id == id) {
            self.selected = i;
            self.wanted = None;
        } else {
            self.wanted = Some(id.to_owned());
        }
    }

    /// The selected run.
    #[must_use]
    pub fn selected_run(&self) -> Option<&RunRecord> {
        self.runs.get(self.selected)
    }

    /// Moves the selected run's bar toward its progress, easing with motion on; another
    /// run's bar starts where that run is (TUI-72). Whether it still moves.
    pub fn ease(&mut self) -> bool {
        let Some(run) = self.runs.get(self.selected) else {
            self.bar = (Eased::default(), None);
            return false;
        };
        let value = progress(run, self.live.get(&run.id));
        if self.bar.1.as_deref() == Some(run.id.as_str()) {
            self.bar.0.set(value, self.theme.motion);
        } else {
            self.bar = (Eased::at(value), Some(run.id.clone()));
        }
        self.bar.0.step()
    }

    /// The fraction the selected run's bar shows now, once eased at least once.
    #[cfg(test)]
    #[must_use]
    pub fn bar_shown(&self) -> Option<f64> {
        self.bar.1.as_ref().map(|_| self.bar.0.shown())
    }

    /// Whether the selected run's bar is still easing to its progress.
    #[must_use]
    pub fn easing(&self) -> bool {
        if self.theme.motion != Motion::On {
            return false;
        }
        let Some(run) = self.runs.get(self.selected) else {
            return false;
        };
        #[allow(clippy::float_cmp, reason = "the value it was set to")]
        let changed = self.bar.0.target() != progress(run, self.live.get(&run.id));
        self.bar.1.as_deref() != Some(run.id.as_str()) || changed || self.bar.0.moving()
    }

    /// A run event of run `id`.
    pub fn apply(&mut self, id: &str, event: &RunEvent) {
        self.live.entry(id.to_owned()).or_default().apply(event);
    }

    /// The state shown for `run`: the record's, or what the TUI is doing to it.
    fn shown_state(&self, run: &RunRecord) -> String {
        if let Some(busy) = self.busy.get(&run.id) {
            return (*busy).to_owned();
        }
        run.state.name().to_owned()
    }

    fn start_dialog(&self) -> Action {
        if self.starting {
            return Action::refuse("a training run is starting already");
        }
        match &self.start {
            Ok(lines) => Action::Ask(Dialog::new(
                "Start a training run",
                lines.clone(),
                Action::Start { resume_from: None },
            )),
            Err(why) => Action::refuse(why.clone()),
        }
    }

    fn on_selected(&self, key: char) -> Action {
        let Some(run) = self.selected_run() else {
            return Action::refuse("no run selected; `t` starts one");
        };
        let id = run.id.clone();
        let state = run.state;
        if self.busy.contains_key(&id) {
            return Action::refuse(format!("run {id} is {} already", self.busy[&id]));
        }
        // A pending run's job waits in the queue: it is stopped, cancelled or followed
        // as a running one's.
        let running = matches!(state, State::Running | State::Pending) && run.job.is_some();
        match key {
            's' if running => Action::Ask(Dialog::new(
                "Stop with a snapshot",
                vec![
                    format!("Stop run {id} with a snapshot?"),
                    "The job saves a checkpoint and ends; `T` resumes it later.".to_owned(),
                ],
                Action::Stop(id),
            )),
            'c' if running => Action::Ask(Dialog::new(
                "Cancel the run",
                vec![
                    format!("Cancel run {id}?"),
                    "Its job is stopped; its artifacts are retrieved.".to_owned(),
                ],
                Action::Cancel(id),
            )),
            'a' if running && self.followed.contains(&id) => {
                Action::refuse(format!("run {id} is followed already"))
            }
            'a' if running => Action::Attach(id),
            'T' if state == State::Stopped => {
                let mut lines = vec![format!("Resume run {id} in a new run?")];
                if let Some(snapshot) = &run.snapshot {
                    lines.push(format!(
                        "From its snapshot {} at step {}.",
                        snapshot.checkpoint, snapshot.step
                    ));
                }
                if let Ok(start) = &self.start {
                    lines.extend(start.iter().cloned());
                }
                if self.starting {
                    return Action::refuse("a training run is starting already");
                }
                Action::Ask(Dialog::new(
                    "Resume a stopped run",
                    lines,
                    Action::Start {
                        resume_from: Some(id),
                    },
                ))
            }
            'T' => Action::refuse(format!(
                "run {id} is {}; only a stopped run resumes",
                state.name()
            )),
            _ => Action::refuse(format!(
                "run {id} is {}; only a running run can be {}",
                state.name(),
                match key {
                    's' => "stopped",
                    'c' => "cancelled",
                    _ => "attached",
                }
            )),
        }
    }

    fn render_list(&self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let items: Vec<ListItem<'_>> = self
            .runs
            .iter()
            .map(|run| {
                let (mark, style) = if self.followed.contains(&run.id) {
                    // A slow pulse in 24-bit colour with motion on (TUI-72).
                    let style = pulse(t, self.frame).map_or_else(ratatui::style::Style::new, |c| {
                        ratatui::style::Style::new().fg(c)
                    });
                    ("●", style)
                } else {
                    (" ", ratatui::style::Style::new())
                };
                let state = self.shown_state(run);
                ListItem::new(Line::from(vec![
                    Span::styled(mark, style),
                    Span::raw(format!(" {} ", run.id)),
                    Span::styled(state, t.state(run.state)),
                ]))
            })
            .collect();
        let block = Block::new()
            .borders(Borders::ALL)
            .title(Span::styled(" runs ", t.title()));
        if items.is_empty() {
            Paragraph::new(vec![
                Line::styled("No runs yet.", t.dim()),
                Line::styled("`t` starts one.", t.dim()),
            ])
            .block(block)
            .render(area, buf);
            return;
        }
        let mut state = ListState::default().with_selected(Some(self.selected));
        StatefulWidget::render(
            List::new(items).block(block).highlight_style(t.selected()),
            area,
            buf,
            &mut state,
        );
    }

    fn detail_lines(&self, run: &RunRecord, live: Option<&Live>) -> Vec<Line<'static>> {
        let t = self.theme;
        let mut lines = vec![Line::from(vec![
            Span::styled(run.id.clone(), t.title()),
            Span::raw("  "),
            Span::styled(self.shown_state(run), t.state(run.state)),
            Span::raw(format!("  target {}", run.target)),
        ])];
        let step = seen_step(live).or(run.last_step);
        let max = live.and_then(|l| l.max_steps).or(run.max_steps);
        let mut progress = format!(
            "step {}/{}",
            step.map_or_else(|| "?".into(), |s| s.to_string()),
            max.map_or_else(|| "?".into(), |s| s.to_string())
        );
        if let Some(eta) = live
            .filter(|_| !run.state.is_terminal())
            .and_then(Live::eta_seconds)
        {
            let _ = write!(progress, "  ETA {}", duration_text(eta));
        }
        let loss = live
            .and_then(|l| l.loss.last().map(|p| p.1))
            .or(run.last_loss);
        if let Some(loss) = loss {
            let _ = write!(progress, "  loss {loss:.4}");
        }
        let eval = live
            .and_then(|l| l.eval.last().map(|p| p.1))
            .or(run.last_eval_loss);
        if let Some(eval) = eval {
            let _ = write!(progress, "  eval_loss {eval:.4}");
        }
        lines.push(Line::raw(progress));
        if let Some(phase) = live
            .and_then(|l| l.phase.as_ref())
            .filter(|_| !run.state.is_terminal())
        {
            lines.push(Line::styled(format!("phase: {phase}"), t.dim()));
        }
        if let Some(from) = &run.resumed_from {
            lines.push(Line::styled(format!("resumed from {from}"), t.dim()));
        }
        if run.state == State::Stopped {
            if let Some(snapshot) = &run.snapshot {
                let reason = serde_json::to_value(snapshot.reason)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                lines.push(Line::styled(
                    format!(
                        "stopped at step {} ({reason}); output/ holds a partial model; T resumes it",
                        snapshot.step
                    ),
                    t.warn(),
                ));
            }
        } else if let Some(message) = run
            .message
            .as_ref()
            .filter(|_| run.state != State::Succeeded)
        {
            lines.push(Line::styled(message.clone(), t.dim()));
        }
        lines
    }

    fn render_detail(&self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let Some(run) = self.selected_run() else {
            Paragraph::new(Line::styled(
                "Select a run, or start one with `t`.",
                t.dim(),
            ))
            .block(Block::new().borders(Borders::ALL))
            .render(area, buf);
            return;
        };
        let live = self.live.get(&run.id);
        let lines = self.detail_lines(run, live);
        let rows = Layout::vertical([
            Constraint::Length(u16::try_from(lines.len() + 2).unwrap_or(6)),
            Constraint::Length(1),
            Constraint::Min(4),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .split(area);
        Paragraph::new(lines)
            .wrap(ratatui::widgets::Wrap { trim: false })
            .render(rows[0], buf);
        let max = live.and_then(|l| l.max_steps).or(run.max_steps);
        let ratio = progress(run, live);
        // The bar eases to a new step with motion on (TUI-72); its label is the step's.
        let drawn = match &self.bar {
            (bar, Some(id)) if *id == run.id && self.theme.motion == Motion::On => bar.shown(),
            _ => ratio,
        };
        Gauge::default()
            .ratio(drawn)
            .gauge_style(t.loss())
            .label(format!("{:.0}%", ratio * 100.0))
            .use_unicode(true)
            .render(rows[1], buf);
        self.render_chart(live, max, rows[2], buf);
        let spark = |label: &str, values: &[f64], area: Rect, buf: &mut Buffer| {
            let [label_area, graph] =
                Layout::horizontal([Constraint::Length(10), Constraint::Min(1)]).areas(area);
            Paragraph::new(Span::styled(label.to_owned(), t.dim())).render(label_area, buf);
            let width = usize::from(graph.width);
            let top = values.iter().copied().fold(0.0_f64, f64::max);
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "scaled to 0..=1000"
            )]
            let data: Vec<u64> = values[values.len().saturating_sub(width)..]
                .iter()
                .map(|v| {
                    if top > 0.0 {
                        (v / top * 1000.0) as u64
                    } else {
                        0
                    }
                })
                .collect();
            if data.is_empty() {
                Paragraph::new(Span::styled("no values yet", t.dim())).render(graph, buf);
            } else {
                Sparkline::default()
                    .data(&data)
                    .max(1000)
                    .style(t.loss())
                    .render(graph, buf);
            }
        };
        let empty = Vec::new();
        spark(
            "lr",
            live.map_or(&empty, |l| &l.learning_rate),
            rows[3],
            buf,
        );
        spark(
            "grad norm",
            live.map_or(&empty, |l| &l.grad_norm),
            rows[4],
            buf,
        );
    }

    fn render_chart(&self, live: Option<&Live>, max: Option<u64>, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let block = Block::new()
            .borders(Borders::TOP)
            .title(Span::styled(" loss ", t.title()));
        let Some(live) = live.filter(|l| !l.loss.is_empty() || !l.eval.is_empty()) else {
            Paragraph::new(Line::styled(
                "The loss chart fills while the TUI follows the run (`a` attaches).",
                t.dim(),
            ))
            .block(block)
            .render(area, buf);
            return;
        };
        let columns = usize::from(area.width.saturating_sub(8)).max(1);
        let loss = downsample(&live.loss, columns);
        let eval = downsample(&live.eval, columns);
        let first = live.loss.first().or(live.eval.first()).map_or(0.0, |p| p.0);
        let last = live
            .loss
            .last()
            .map_or(0.0, |p| p.0)
            .max(live.eval.last().map_or(0.0, |p| p.0));
        let x = match max {
            Some(max) => [0.0, f64_of(max).max(1.0)],
            None => [first, last.max(first + 1.0)],
        };
        let y = y_bounds([loss.as_slice(), eval.as_slice()]);
        let datasets = vec![
            Dataset::default()
                .name("loss")
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(t.loss())
                .data(&loss),
            Dataset::default()
                .name("eval_loss")
                .marker(Marker::Dot)
                .graph_type(GraphType::Scatter)
                .style(t.eval())
                .data(&eval),
        ];
        Chart::new(datasets)
            .block(block)
            .x_axis(
                Axis::default()
                    .bounds(x)
                    .labels([format!("{:.0}", x[0]), format!("{:.0}", x[1])])
                    .style(t.dim()),
            )
            .y_axis(
                Axis::default()
                    .bounds(y)
                    .labels([format!("{:.2}", y[0]), format!("{:.2}", y[1])])
                    .style(t.dim()),
            )
            .render(area, buf);
    }
}

impl View for TrainingView {
    fn title(&self) -> &'static str {
        "Training"
    }

    fn keys(&self) -> &'static [(&'static str, &'static str)] {
        KEYS
    }

    fn handle_key(&mut self, key: KeyEvent) -> Option<Action> {
        match key.code {
            KeyCode::Char('j') | KeyCode::Down => {
                self.selected = super::step(self.selected, self.runs.len(), 1);
                None
            }
            KeyCode::Char('k') | KeyCode::Up => {
                self.selected = super::step(self.selected, self.runs.len(), -1);
                None
            }
            KeyCode::Char('t') => Some(self.start_dialog()),
            KeyCode::Char(c @ ('s' | 'c' | 'a' | 'T')) => Some(self.on_selected(c)),
            _ => None,
        }
    }
}

impl Widget for &TrainingView {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let width = if area.width >= 120 { 44 } else { 36 };
        let [list, detail] =
            Layout::horizontal([Constraint::Length(width), Constraint::Min(20)]).areas(area);
        self.render_list(list, buf);
        let inner = Rect {
            x: detail.x + 1,
            width: detail.width.saturating_sub(1),
            ..detail
        };
        self.render_detail(inner, buf);
    }
}

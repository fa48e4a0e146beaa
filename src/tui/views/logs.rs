//! The Logs view (`5`, TUI-2, TUI-55): the captured `tracing` lines (job logs among them at
//! `debug`), newest at the bottom. Scrolling pins the view; `G`/End follows again; `f` cycles
//! the shown level (error, warn, info, debug, trace) and resumes following.
//!
//! `x` writes the lines shown (at the shown level or more severe, oldest first) to a new
//! `.overbrainer/logs-<YYYYMMDDTHHMMSSZ>.log` (TUI-56). `s` switches to the pod log of the
//! run selected in the Training view (`runs/<run-id>/.pod/pod.log`, read again every 2 s:
//! time, source, redacted text), where `x` writes `logs-pod-<run-id>-<time>.log` and `f`
//! does not apply; `s` again returns (TUI-57).

use std::collections::VecDeque;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};
use tracing::Level;

use super::super::action::Action;
use super::super::theme::Theme;
use super::View;

/// Lines kept; older ones are dropped.
pub const RETAINED: usize = 10_000;

const LEVELS: [Level; 5] = [
    Level::ERROR,
    Level::WARN,
    Level::INFO,
    Level::DEBUG,
    Level::TRACE,
];

/// The Logs view.
#[derive(Debug, Clone)]
pub struct LogsView {
    theme: Theme,
    lines: VecDeque<(Level, String)>,
    level: usize,
    /// Lines scrolled up from the newest; `None` follows the newest.
    pinned: Option<usize>,
    height: std::cell::Cell<usize>,
    /// The pod log shown instead, when `s` switched to it.
    pod: Option<PodLog>,
}

/// A run's pod log as last read.
#[derive(Debug, Clone)]
struct PodLog {
    run: String,
    lines: Vec<String>,
    /// Why the last read failed, or `None` while not read yet.
    read: Option<Result<(), String>>,
}

const KEYS: &[(&str, &str)] = &[
    ("j/k PgUp/PgDn", "scroll"),
    ("G End", "follow"),
    ("f", "level"),
    ("x", "export"),
    ("s", "pod log"),
];

impl LogsView {
    /// An empty view showing `info` and more severe.
    #[must_use]
    pub fn new(theme: Theme) -> Self {
        Self {
            theme,
            lines: VecDeque::new(),
            level: 2,
            pinned: None,
            height: std::cell::Cell::new(20),
            pod: None,
        }
    }

    /// Shows the pod log of run `run` (read by the caller).
    pub fn show_pod(&mut self, run: String) {
        self.pod = Some(PodLog {
            run,
            lines: Vec::new(),
            read: None,
        });
        self.pinned = None;
    }

    /// The run whose pod log is shown.
    #[must_use]
    pub fn pod_run(&self) -> Option<&str> {
        self.pod.as_ref().map(|p| p.run.as_str())
    }

    /// The pod log of run `run` read again.
    pub fn set_pod_lines(&mut self, run: &str, lines: Result<Vec<String>, String>) {
        let Some(pod) = self.pod.as_mut().filter(|p| p.run == run) else {
            return;
        };
        match lines {
            Ok(lines) => {
                pod.lines = lines;
                pod.read = Some(Ok(()));
            }
            Err(why) => pod.read = Some(Err(why)),
        }
    }

    /// Takes in one captured line.
    pub fn push(&mut self, level: Level, text: String) {
        if self.lines.len() == RETAINED {
            self.lines.pop_front();
        }
        self.lines.push_back((level, text));
    }

    fn shown(&self) -> Vec<&(Level, String)> {
        let level = LEVELS[self.level];
        self.lines.iter().filter(|(l, _)| *l <= level).collect()
    }

    fn scroll(&mut self, delta: isize) {
        let len = self
            .pod
            .as_ref()
            .map_or_else(|| self.shown().len(), |p| p.lines.len());
        let up = self
            .pinned
            .unwrap_or(0)
            .saturating_add_signed(-delta)
            .min(len.saturating_sub(1));
        self.pinned = (up > 0).then_some(up);
    }
}

impl View for LogsView {
    fn title(&self) -> &'static str {
        "Logs"
    }

    fn keys(&self) -> &'static [(&'static str, &'static str)] {
        KEYS
    }

    fn handle_key(&mut self, key: KeyEvent) -> Option<Action> {
        let page = isize::try_from(self.height.get().max(1)).unwrap_or(20);
        match key.code {
            KeyCode::Char('j') | KeyCode::Down => self.scroll(1),
            KeyCode::Char('k') | KeyCode::Up => self.scroll(-1),
            KeyCode::PageDown => self.scroll(page),
            KeyCode::PageUp => self.scroll(-page),
            KeyCode::Char('G') | KeyCode::End => self.pinned = None,
            KeyCode::Char('s') => {
                if self.pod.take().is_some() {
                    self.pinned = None;
                    return Some(Action::Say {
                        ok: true,
                        text: "overbrainer's own log".to_owned(),
                    });
                }
                return Some(Action::ShowPodLog);
            }
            KeyCode::Char('x') if self.pod.is_some() => {
                let pod = self.pod.as_ref()?;
                if pod.lines.is_empty() {
                    return Some(Action::refuse(format!(
                        "no pod log lines for run {}; no file written",
                        pod.run
                    )));
                }
                return Some(Action::ExportPodLog {
                    run: pod.run.clone(),
                    lines: pod.lines.clone(),
                });
            }
            KeyCode::Char('f') if self.pod.is_some() => {
                return Some(Action::refuse(
                    "`f` does not apply to the pod log; `s` returns to overbrainer's log"
                        .to_owned(),
                ));
            }
            KeyCode::Char('x') => {
                let shown = self.shown();
                if shown.is_empty() {
                    return Some(Action::refuse(format!(
                        "no log lines at {} or more severe; no file written",
                        LEVELS[self.level].as_str().to_lowercase()
                    )));
                }
                return Some(Action::ExportLogs(
                    shown
                        .iter()
                        .map(|(level, text)| format!("{:>5} {text}", level.as_str()))
                        .collect(),
                ));
            }
            KeyCode::Char('f') => {
                self.level = (self.level + 1) % LEVELS.len();
                self.pinned = None;
                return Some(Action::Say {
                    ok: true,
                    text: format!("showing {} and more severe", LEVELS[self.level]),
                });
            }
            _ => {}
        }
        None
    }
}

impl LogsView {
    /// `lines` in a frame titled `title`, `, pinned` added while scrolled up.
    fn framed(&self, lines: Vec<Line<'_>>, title: &str, area: Rect, buf: &mut Buffer) {
        let pinned = if self.pinned.is_some() {
            ", pinned"
        } else {
            ""
        };
        Paragraph::new(lines)
            .block(Block::new().borders(Borders::ALL).title(Span::styled(
                format!("{title}{pinned} "),
                self.theme.title(),
            )))
            .render(area, buf);
    }
}

impl Widget for &LogsView {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let height = usize::from(area.height.saturating_sub(2));
        self.height.set(height);
        if let Some(pod) = &self.pod {
            let end = pod.lines.len().saturating_sub(self.pinned.unwrap_or(0));
            let start = end.saturating_sub(height);
            let lines: Vec<Line<'_>> = match &pod.read {
                None => vec![Line::styled("Reading the pod log…", t.dim())],
                Some(Err(why)) => vec![Line::styled(
                    format!("Cannot read the pod log: {why}"),
                    t.error(),
                )],
                Some(Ok(())) if pod.lines.is_empty() => vec![Line::styled(
                    format!(
                        "No pod log for run {}: not a Runpod run, or nothing copied from its pod yet.",
                        pod.run
                    ),
                    t.dim(),
                )],
                Some(Ok(())) => pod.lines[start..end]
                    .iter()
                    .map(|l| Line::raw(l.as_str()))
                    .collect(),
            };
            let title = format!(" pod log of run {}", pod.run);
            self.framed(lines, &title, area, buf);
            return;
        }
        let shown = self.shown();
        let end = shown.len().saturating_sub(self.pinned.unwrap_or(0));
        let start = end.saturating_sub(height);
        let lines: Vec<Line<'_>> = if shown.is_empty() {
            vec![Line::styled("No log lines at this level yet.", t.dim())]
        } else {
            shown[start..end]
                .iter()
                .map(|(level, text)| {
                    let style = match *level {
                        Level::ERROR => t.error(),
                        Level::WARN => t.warn(),
                        Level::INFO => t.text(),
                        _ => t.dim(),
                    };
                    Line::from(vec![
                        Span::styled(format!("{:>5} ", level.as_str()), style),
                        Span::raw(text.as_str()),
                    ])
                })
                .collect()
        };
        let title = format!(
            " log: {} and more severe",
            LEVELS[self.level].as_str().to_lowercase()
        );
        self.framed(lines, &title, area, buf);
    }
}

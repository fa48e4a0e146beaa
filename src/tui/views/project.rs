//! The Project view (`1`, TUI-7, TUI-8, TUI-26): the effective configuration by section,
//! each row with where its value came from (`(toml)` for `overbrainer.toml`, `(env)`, or
//! `(default)`, drawn dim), then the value; secrets show only `set`, `unset` or `vault ref`. On the right, the
//! project's runs by state.
//!
//! Not built yet: editing (TUI-9..TUI-25); Enter says so and names the file to edit.

use std::collections::BTreeMap;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, Borders, List, ListItem, ListState, Paragraph, StatefulWidget, Widget,
};

use super::super::action::Action;
use super::super::theme::Theme;
use super::View;
use crate::config::{Entry, Source};

/// One row of the list: a section heading or a field.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Row {
    Section(String),
    Field(Entry),
}

/// The Project view.
#[derive(Debug, Clone)]
pub struct ProjectView {
    theme: Theme,
    rows: Vec<Row>,
    selected: usize,
    /// Runs by state name, once read.
    pub runs_by_state: Option<BTreeMap<&'static str, usize>>,
}

const KEYS: &[(&str, &str)] = &[("j/k PgUp/PgDn Home/End", "select")];

/// The section of a dotted key: `topics.0`, `providers.x`, `targets.x`, else its first part.
fn section(key: &str) -> String {
    let mut parts = key.split('.');
    let first = parts.next().unwrap_or_default();
    match (first, parts.next()) {
        ("topics" | "providers" | "targets", Some(second)) => format!("{first}.{second}"),
        _ => first.to_owned(),
    }
}

impl ProjectView {
    /// The view of `entries` (as `config check` lists them).
    #[must_use]
    pub fn new(theme: Theme, entries: Vec<Entry>) -> Self {
        let mut rows = Vec::new();
        let mut current = None;
        for entry in entries {
            let section = section(&entry.key);
            if current.as_ref() != Some(&section) {
                rows.push(Row::Section(section.clone()));
                current = Some(section);
            }
            rows.push(Row::Field(entry));
        }
        let selected = rows
            .iter()
            .position(|r| matches!(r, Row::Field(_)))
            .unwrap_or(0);
        Self {
            theme,
            rows,
            selected,
            runs_by_state: None,
        }
    }

    /// The selected field.
    #[must_use]
    pub fn selected_entry(&self) -> Option<&Entry> {
        match self.rows.get(self.selected) {
            Some(Row::Field(entry)) => Some(entry),
            _ => None,
        }
    }

    /// Moves the selection by `delta` fields, skipping headings.
    fn move_by(&mut self, delta: isize) {
        let fields: Vec<usize> = (0..self.rows.len())
            .filter(|i| matches!(self.rows[*i], Row::Field(_)))
            .collect();
        let Some(at) = fields.iter().position(|i| *i == self.selected) else {
            return;
        };
        self.selected = fields[super::step(at, fields.len(), delta)];
    }

    fn row_line(&self, row: &Row) -> Line<'static> {
        let t = self.theme;
        match row {
            Row::Section(name) => Line::styled(format!("[{name}]"), t.title()),
            Row::Field(entry) => {
                let value = if entry.value == "(unset)" {
                    "unset".to_owned()
                } else {
                    entry.value.clone()
                };
                let (source, style) = match &entry.source {
                    Source::Default => ("(default)", t.dim()),
                    Source::File => ("(toml)", t.text()),
                    Source::DotEnv { .. } | Source::Env { .. } => ("(env)", t.warn()),
                };
                // The source first, in a column of its own, so a long value never hides it.
                let mut spans = vec![
                    Span::styled(
                        format!("  {source:<10}"),
                        if entry.source == Source::Default {
                            t.dim()
                        } else {
                            t.warn()
                        },
                    ),
                    Span::styled(format!("{} = ", entry.key), style),
                    Span::styled(value, style),
                ];
                if let Some(ignored) = &entry.ignored {
                    spans.push(Span::styled(format!("  ({ignored})"), t.dim()));
                }
                Line::from(spans)
            }
        }
    }
}

impl View for ProjectView {
    fn title(&self) -> &'static str {
        "Project"
    }

    fn keys(&self) -> &'static [(&'static str, &'static str)] {
        KEYS
    }

    fn handle_key(&mut self, key: KeyEvent) -> Option<Action> {
        match key.code {
            KeyCode::Char('j') | KeyCode::Down => self.move_by(1),
            KeyCode::Char('k') | KeyCode::Up => self.move_by(-1),
            KeyCode::PageDown => self.move_by(10),
            KeyCode::PageUp => self.move_by(-10),
            KeyCode::Home => self.move_by(isize::MIN / 2),
            KeyCode::End => self.move_by(isize::MAX / 2),
            KeyCode::Enter => {
                let entry = self.selected_entry()?;
                return Some(Action::refuse(match &entry.source {
                    Source::DotEnv { var } | Source::Env { var } => {
                        format!("`{}` is set by `{var}`; change it in `.env`", entry.key)
                    }
                    _ => format!(
                        "editing in the TUI is not built yet; edit `{}` in overbrainer.toml",
                        entry.key
                    ),
                }));
            }
            _ => {}
        }
        None
    }
}

impl Widget for &ProjectView {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let right_width = if area.width >= 120 { 40 } else { 26 };
        let [left, right] =
            Layout::horizontal([Constraint::Min(40), Constraint::Length(right_width)]).areas(area);
        let [list, detail] =
            Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(left);
        let items: Vec<ListItem<'_>> = self
            .rows
            .iter()
            .map(|r| ListItem::new(self.row_line(r)))
            .collect();
        let mut state = ListState::default().with_selected(Some(self.selected));
        StatefulWidget::render(
            List::new(items)
                .block(
                    Block::new()
                        .borders(Borders::ALL)
                        .title(Span::styled(" configuration ", t.title())),
                )
                .highlight_style(t.selected()),
            list,
            buf,
            &mut state,
        );
        if let Some(entry) = self.selected_entry() {
            let from = match &entry.source {
                Source::Default => "the default".to_owned(),
                Source::File => "overbrainer.toml".to_owned(),
                Source::DotEnv { var } => format!("`{var}` in .env"),
                Source::Env { var } => format!("`{var}` in the environment"),
            };
            Paragraph::new(Line::styled(format!(" {} from {from}", entry.key), t.dim()))
                .render(detail, buf);
        }
        let mut lines = vec![Line::styled("runs", t.title())];
        match &self.runs_by_state {
            None => lines.push(Line::styled("not read yet", t.dim())),
            Some(states) if states.is_empty() => lines.push(Line::styled("no runs", t.dim())),
            Some(states) => {
                for (state, count) in states {
                    lines.push(Line::raw(format!("{state:>12} {count}")));
                }
            }
        }
        lines.push(Line::raw(""));
        lines.push(Line::styled("cost and dataset counts", t.title()));
        lines.push(Line::styled(
            "not shown yet: `overbrainer history`",
            t.dim(),
        ));
        Paragraph::new(lines)
            .block(
                Block::new()
                    .borders(Borders::ALL)
                    .title(Span::styled(" stats ", t.title())),
            )
            .render(right, buf);
    }
}

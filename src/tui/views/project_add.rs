//! Adding a topic, provider or target from the Project view (`a`, TUI-11): what to add,
//! then its name (`^[a-z0-9_]+$`, new), then a provider's protocol or a target's kind.
//! The table is written as one change: a topic with the `init` template's counts (5
//! subtopics, 10 questions each), a provider with its protocol, a target with its kind (a
//! Runpod target with `gpu_types = "auto"` and `max_hours = 4`, so it validates as added;
//! an SSH or Slurm target needs its host in `.env`, which the refusal names). The whole
//! configuration is checked before the write, as for any change.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};
use toml_edit::Value;

use super::super::action::Action;
use super::super::theme::Theme;
use crate::config::edit::Change;

/// What can be added.
const WHAT: [&str; 3] = ["topic", "provider", "target"];
/// A provider's protocols.
const PROTOCOLS: [&str; 2] = ["openai", "anthropic"];
/// A target's kinds.
const KINDS: [&str; 4] = ["local", "ssh", "slurm", "runpod"];

/// What a key did to the add flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The flow goes on.
    Stay,
    /// The last step is done: write this change.
    Write(Action),
    /// Esc: the flow closes, nothing is written.
    Cancelled,
}

/// The add flow, step by step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adding {
    /// What is added, once chosen.
    what: Option<&'static str>,
    /// Its name, once accepted.
    name: Option<String>,
    /// The entry selected in a list.
    choice: usize,
    /// The name being typed.
    pub input: String,
    /// Why the last step was refused.
    pub error: Option<String>,
    /// Whether the table is being written.
    pub saving: bool,
}

impl Adding {
    /// A new flow, asking what to add.
    #[must_use]
    pub fn new() -> Self {
        Self {
            what: None,
            name: None,
            choice: 0,
            input: String::new(),
            error: None,
            saving: false,
        }
    }

    /// The choices of the current step, when it is a list.
    fn choices(&self) -> Option<&'static [&'static str]> {
        match (self.what, &self.name) {
            (None, _) => Some(&WHAT),
            (Some("provider"), Some(_)) => Some(&PROTOCOLS),
            (Some("target"), Some(_)) => Some(&KINDS),
            _ => None,
        }
    }

    /// A key; `taken` says whether `name` is in use for `what`.
    pub fn key(&mut self, key: KeyEvent, taken: impl Fn(&str, &str) -> bool) -> Step {
        if self.saving {
            return Step::Stay;
        }
        if key.code == KeyCode::Esc {
            return Step::Cancelled;
        }
        if let Some(choices) = self.choices() {
            match key.code {
                KeyCode::Char('j') | KeyCode::Down => {
                    self.choice = (self.choice + 1).min(choices.len() - 1);
                }
                KeyCode::Char('k') | KeyCode::Up => self.choice = self.choice.saturating_sub(1),
                KeyCode::Enter => {
                    let picked = choices[self.choice];
                    self.choice = 0;
                    if self.what.is_none() {
                        self.what = Some(picked);
                    } else {
                        return Step::Write(self.finish(Some(picked)));
                    }
                }
                _ => {}
            }
            return Step::Stay;
        }
        match key.code {
            KeyCode::Enter => {
                let what = self.what.unwrap_or("topic");
                let name = self.input.trim().to_owned();
                if !crate::config::valid_name(&name) {
                    self.error = Some(format!(
                        "`{name}` is not a name: lowercase letters, digits and `_` only"
                    ));
                } else if taken(what, &name) {
                    self.error = Some(format!("a {what} `{name}` exists already"));
                } else {
                    self.error = None;
                    self.name = Some(name);
                    if what == "topic" {
                        return Step::Write(self.finish(None));
                    }
                }
            }
            KeyCode::Backspace => {
                self.input.pop();
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.input.push(c);
            }
            _ => {}
        }
        Step::Stay
    }

    /// The change that adds the table, with `picked` the protocol or kind.
    fn finish(&mut self, picked: Option<&str>) -> Action {
        self.saving = true;
        let name = self.name.clone().unwrap_or_default();
        let pair = |key: &str, value: Value| (key.to_owned(), value);
        Action::EditConfig(vec![match (self.what, picked) {
            (Some("provider"), Some(protocol)) => Change::Table(
                format!("providers.{name}"),
                vec![pair("protocol", Value::from(protocol))],
            ),
            (Some("target"), Some(kind)) => {
                let mut values = vec![pair("kind", Value::from(kind))];
                if kind == "runpod" {
                    // Its two required keys, as the `init` template writes them.
                    values.push(pair("gpu_types", Value::from("auto")));
                    values.push(pair("max_hours", Value::from(4)));
                }
                Change::Table(format!("targets.{name}"), values)
            }
            _ => Change::Push(
                "topics".to_owned(),
                vec![
                    pair("name", Value::from(name)),
                    pair("subtopics", Value::from(5)),
                    pair("questions_per_subtopic", Value::from(10)),
                ],
            ),
        }])
    }

    /// The write was refused: the last step shows why.
    pub fn refused(&mut self, error: String) {
        self.error = Some(error);
        self.saving = false;
    }

    /// Draws the step in `area`.
    pub fn render(&self, area: Rect, buf: &mut Buffer, t: Theme) {
        let mut lines = Vec::new();
        let title = match (self.what, &self.name) {
            (None, _) => " add: what? ".to_owned(),
            (Some(what), None) => format!(" add a {what}: its name "),
            (Some("provider"), Some(name)) => format!(" add provider `{name}`: protocol "),
            (Some(_), Some(name)) => format!(" add target `{name}`: kind "),
        };
        if let Some(choices) = self.choices() {
            let row: Vec<Span<'static>> = choices
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    Span::styled(
                        format!(" {c} "),
                        if i == self.choice {
                            t.selected()
                        } else {
                            t.text()
                        },
                    )
                })
                .collect();
            lines.push(Line::from(row));
        } else {
            lines.push(Line::from(vec![
                Span::styled(self.input.clone(), t.text()),
                Span::styled(if self.saving { " saving…" } else { "▏" }, t.dim()),
            ]));
        }
        lines.push(match &self.error {
            Some(error) => Line::styled(error.clone(), t.error()),
            None => Line::styled(
                if self.choices().is_some() {
                    "j/k choose, Enter next, Esc cancel"
                } else {
                    "lowercase letters, digits and `_`; Enter next, Esc cancel"
                },
                t.dim(),
            ),
        });
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(
                Block::new()
                    .borders(Borders::ALL)
                    .title(Span::styled(title, t.title())),
            )
            .render(area, buf);
    }
}

impl Default for Adding {
    fn default() -> Self {
        Self::new()
    }
}

//! The Project view (`1`, TUI-7..TUI-20, TUI-26): the effective configuration by
//! section, each row with where its value came from (`(toml)` for `overbrainer.toml`,
//! `(env)`, or `(default)`, drawn dim), then the value; secrets show only `set`, `unset` or
//! `vault ref`. On the right, the project's runs by state.
//!
//! Editing (TUI-9..TUI-17): Enter toggles a boolean, cycles a choice, or opens a one-line
//! form (validated on Enter); every change is one write through `config::edit`, `u`
//! undoes the last. Fields the environment sets, or that only it may set, are read-only;
//! the `training` table and its target are while a run starts or is followed (TUI-19).
//! `E` hands the whole file to `$VISUAL`/`$EDITOR` (TUI-18); `a` adds a topic, provider or
//! target (`project_add`), `d` deletes one after a question (TUI-11, TUI-12). Enter on a
//! Runpod target's `gpu_types`, `data_center_ids`, `network_volume_id` or `image` opens
//! the catalog picker (TUI-21..TUI-23, the app's `runpod` module).

use std::collections::BTreeMap;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, Borders, List, ListItem, ListState, Paragraph, StatefulWidget, Widget, Wrap,
};

use super::super::action::Action;
use super::super::theme::Theme;
use super::View;
use crate::config::edit::{self, Change};
use crate::config::{Entry, Source};

/// One row of the list: a section heading or a field.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Row {
    Section(String),
    Field(Entry),
}

/// A field being typed (TUI-10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Form {
    /// The dotted key.
    pub key: String,
    /// The value shown when the form opened (its kind decides how input reads).
    shown: String,
    /// What is typed.
    pub input: String,
    /// Why the last submission was refused.
    pub error: Option<String>,
    /// Whether a submission is being written.
    pub saving: bool,
}

/// The Project view.
#[derive(Debug, Clone)]
pub struct ProjectView {
    theme: Theme,
    rows: Vec<Row>,
    selected: usize,
    /// Runs by state name, once read.
    pub runs_by_state: Option<BTreeMap<&'static str, usize>>,
    /// The form open on a field.
    pub form: Option<Form>,
    /// The problems of an invalid change on disk, by key (TUI-20).
    pub problems: BTreeMap<String, String>,
    /// Who uses the keys under each prefix, read-only meanwhile (TUI-19):
    /// `("training.", "run 20260101-…")`.
    pub used: Vec<(String, String)>,
    /// The ledger's spend, once read (TUI-26).
    pub spend: Option<crate::budget::Summary>,
    /// The dataset's counts, once read (TUI-26).
    pub dataset: Option<Counts>,
    /// The add flow, when open (TUI-11).
    pub adding: Option<super::project_add::Adding>,
    /// The hint under the selected field (a Runpod target's `gpu_count` or `max_hours`,
    /// TUI-24).
    pub hint: Option<String>,
}

/// The dataset's counts (TUI-26): topics with records, then each file's records (`None`
/// when the file does not exist).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts {
    topics: usize,
    files: Vec<(&'static str, Option<usize>)>,
}

impl Counts {
    /// The counts of `listing`.
    #[must_use]
    pub fn of(listing: &crate::dataset::listing::Listing) -> Self {
        let topics: std::collections::BTreeSet<&str> = listing
            .subtopics
            .iter()
            .map(|s| s.topic.as_str())
            .chain(listing.rows.iter().map(|r| r.topic.as_str()))
            .collect();
        Self {
            topics: topics.len(),
            files: listing.files.iter().map(|f| (f.name, f.records)).collect(),
        }
    }
}

const KEYS: &[(&str, &str)] = &[
    ("j/k", "select"),
    ("Enter", "edit"),
    ("u", "undo"),
    ("E", "editor"),
    ("a", "add"),
    ("d", "delete"),
    ("A", "auto"),
];
const FORM_KEYS: &[(&str, &str)] = &[("Enter", "save"), ("Esc", "cancel")];

/// The rows of `entries`, a heading before each section.
fn rows_of(entries: Vec<Entry>) -> Vec<Row> {
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
    rows
}

/// What a form opens with for a field showing `shown`: text unquoted, nothing for unset.
fn form_text(shown: &str) -> String {
    if shown == "(unset)" {
        return String::new();
    }
    match shown.parse::<toml_edit::Value>() {
        Ok(toml_edit::Value::String(text)) => text.value().clone(),
        _ => shown.to_owned(),
    }
}

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
        let rows = rows_of(entries);
        let selected = rows
            .iter()
            .position(|r| matches!(r, Row::Field(_)))
            .unwrap_or(0);
        Self {
            theme,
            rows,
            selected,
            runs_by_state: None,
            form: None,
            problems: BTreeMap::new(),
            used: Vec::new(),
            spend: None,
            dataset: None,
            adding: None,
            hint: None,
        }
    }

    /// Shows `entries` (a configuration written or read again), keeping the selected key
    /// when it is still there.
    pub fn set_entries(&mut self, entries: Vec<Entry>) {
        let key = self.selected_entry().map(|e| e.key.clone());
        self.rows = rows_of(entries);
        let fields = || {
            self.rows
                .iter()
                .enumerate()
                .filter(|(_, r)| matches!(r, Row::Field(_)))
        };
        self.selected = fields()
            .find(|(_, r)| matches!(r, Row::Field(e) if Some(&e.key) == key.as_ref()))
            .or_else(|| fields().take_while(|(i, _)| *i <= self.selected).last())
            .or_else(|| fields().next())
            .map_or(0, |(i, _)| i);
    }

    /// Who uses `key`, when it is read-only for that (TUI-19).
    #[must_use]
    pub fn used_by(&self, key: &str) -> Option<&str> {
        self.used
            .iter()
            .find(|(prefix, _)| key.starts_with(prefix.as_str()))
            .map(|(_, user)| user.as_str())
    }

    /// The value shown for `key`, unquoted; `None` when unset or not shown.
    #[must_use]
    pub fn value(&self, key: &str) -> Option<String> {
        self.rows.iter().find_map(|r| match r {
            Row::Field(e) if e.key == key && e.value != "(unset)" => Some(form_text(&e.value)),
            _ => None,
        })
    }

    /// The value shown for `key` as TOML (`"auto"`, `["a", "b"]`); `None` when unset or
    /// not shown.
    #[must_use]
    pub fn shown(&self, key: &str) -> Option<&str> {
        self.rows.iter().find_map(|r| match r {
            Row::Field(e) if e.key == key && e.value != "(unset)" => Some(e.value.as_str()),
            _ => None,
        })
    }

    /// Where the value of `key` comes from.
    #[must_use]
    pub fn source(&self, key: &str) -> Option<&Source> {
        self.rows.iter().find_map(|r| match r {
            Row::Field(e) if e.key == key => Some(&e.source),
            _ => None,
        })
    }

    /// The dotted keys shown.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.rows.iter().filter_map(|r| match r {
            Row::Field(e) => Some(e.key.as_str()),
            Row::Section(_) => None,
        })
    }

    /// A Runpod target's field that Enter picks from a listing (TUI-21..TUI-23):
    /// `(target, field)`.
    #[must_use]
    pub fn runpod_pick(&self, key: &str) -> Option<(String, String)> {
        let (target, field) = key.strip_prefix("targets.")?.split_once('.')?;
        let picked = matches!(
            field,
            "gpu_types" | "data_center_ids" | "network_volume_id" | "image"
        );
        (picked && self.value(&format!("targets.{target}.kind")).as_deref() == Some("runpod"))
            .then(|| (target.to_owned(), field.to_owned()))
    }

    /// Opens the form on `key` (`t` in a picker: the value typed instead).
    pub fn open_form(&mut self, key: &str) {
        if let Some(at) = self
            .rows
            .iter()
            .position(|r| matches!(r, Row::Field(e) if e.key == key))
        {
            self.selected = at;
            if let Some(Row::Field(entry)) = self.rows.get(at) {
                self.form = Some(Form {
                    key: entry.key.clone(),
                    input: form_text(&entry.value),
                    shown: entry.value.clone(),
                    error: None,
                    saving: false,
                });
            }
        }
    }

    /// A save ended: the form closes, or shows why it was refused.
    pub fn saved(&mut self, refused: Option<String>) {
        if let Some(adding) = self.adding.as_mut() {
            match refused {
                None => self.adding = None,
                Some(error) => adding.refused(error),
            }
            return;
        }
        match (refused, self.form.as_mut()) {
            (None, _) => self.form = None,
            (Some(error), Some(form)) => {
                form.error = Some(error);
                form.saving = false;
            }
            (Some(_), None) => {}
        }
    }

    /// Whether a `what` (topic, provider, target) named `name` is configured.
    fn taken(&self, what: &str, name: &str) -> bool {
        self.rows.iter().any(|r| match r {
            Row::Field(e) => match what {
                "topic" => {
                    let parts: Vec<&str> = e.key.split('.').collect();
                    matches!(parts.as_slice(), ["topics", _, "name"]) && form_text(&e.value) == name
                }
                "provider" => e.key.starts_with(&format!("providers.{name}.")),
                _ => e.key.starts_with(&format!("targets.{name}.")),
            },
            Row::Section(_) => false,
        })
    }

    /// `d` (TUI-12): asks before deleting the selected topic, provider or target; a
    /// configuration that still names it is refused on save, naming the key.
    fn delete(&self) -> Action {
        let Some(entry) = self.selected_entry() else {
            return Action::refuse("nothing selected");
        };
        let table = section(&entry.key);
        let (what, name) = match table.split_once('.') {
            Some(("topics", _)) => (
                "topic",
                self.value(&format!("{table}.name")).unwrap_or_default(),
            ),
            Some(("providers", name)) => ("provider", name.to_owned()),
            Some(("targets", name)) => ("target", name.to_owned()),
            _ => {
                return Action::refuse(format!(
                    "only a topic, provider or target can be deleted; `{}` is in [{table}]",
                    entry.key
                ));
            }
        };
        if let Some(user) = self
            .used
            .iter()
            .find(|(prefix, _)| {
                let table = format!("{table}.");
                prefix.starts_with(&table) || table.starts_with(prefix.as_str())
            })
            .map(|(_, user)| user)
        {
            return Action::refuse(format!("{what} `{name}` is used by {user}"));
        }
        let mut lines = vec![format!(
            "Removes the {what} from overbrainer.toml (`u` undoes it)."
        )];
        if what == "topic" {
            lines.push("What data/ holds of it stays; the Dataset view marks it [o].".into());
        } else {
            lines.push("Refused if a role or `training.target` still names it.".into());
        }
        Action::Ask(super::super::action::Dialog::new(
            format!("Delete {what} `{name}`?"),
            lines,
            Action::EditConfig(vec![Change::Unset(table)]),
        ))
    }

    /// What Enter on the selected field does (TUI-9, TUI-10, TUI-19).
    fn edit(&mut self) -> Option<Action> {
        let entry = self.selected_entry()?.clone();
        let key = entry.key.as_str();
        if let Source::DotEnv { var } | Source::Env { var } = &entry.source {
            return Some(Action::refuse(format!(
                "`{key}` is set by `{var}`; change it in `.env`"
            )));
        }
        if let Some(var) = edit::env_only_var(key) {
            return Some(Action::refuse(format!(
                "`{key}` may only be set in the environment; set `{var}` in `.env`"
            )));
        }
        if let Some(user) = self.used_by(key) {
            return Some(Action::refuse(format!(
                "`{key}` is used by {user}; it can change once that ends"
            )));
        }
        if key == "training.axolotl_extra" || key.starts_with("training.axolotl_extra.") {
            return Some(Action::refuse(
                "`training.axolotl_extra` is edited in the file: `E` opens it in $EDITOR",
            ));
        }
        if self.runpod_pick(key).is_some() {
            return Some(Action::Pick(entry.key.clone()));
        }
        if let Some(next) = edit::next_choice(key, &entry.value) {
            return Some(Action::EditConfig(vec![match next {
                Some(value) => Change::Set(entry.key.clone(), value),
                None => Change::Unset(entry.key.clone()),
            }]));
        }
        if let "true" | "false" = entry.value.as_str() {
            let flipped = entry.value == "false";
            return Some(Action::EditConfig(vec![Change::Set(
                entry.key.clone(),
                toml_edit::Value::from(flipped),
            )]));
        }
        self.open_form(&entry.key);
        None
    }

    /// A key while the form is open: typing, Enter submits, Esc closes.
    fn form_key(&mut self, key: KeyEvent) -> Option<Action> {
        // TUI-15, TUI-25: a list of GPU types unsets the `auto`-only limits set beside it,
        // in the same write.
        let limits: Vec<String> = self
            .form
            .as_ref()
            .and_then(|f| f.key.strip_suffix(".gpu_types"))
            .map(|target| {
                ["min_vram_gb", "max_price_per_hour"]
                    .iter()
                    .map(|limit| format!("{target}.{limit}"))
                    .filter(|key| self.value(key).is_some())
                    .collect()
            })
            .unwrap_or_default();
        let form = self.form.as_mut()?;
        match key.code {
            KeyCode::Esc => self.form = None,
            KeyCode::Enter if !form.saving => {
                match edit::parse_field(&form.key, &form.shown, &form.input) {
                    Ok(value) => {
                        form.error = None;
                        form.saving = true;
                        let list = matches!(value, Some(toml_edit::Value::Array(_)));
                        let mut changes = vec![match value {
                            Some(value) => Change::Set(form.key.clone(), value),
                            None => Change::Unset(form.key.clone()),
                        }];
                        if list {
                            changes.extend(limits.into_iter().map(Change::Unset));
                        }
                        return Some(Action::EditConfig(changes));
                    }
                    Err(error) => form.error = Some(error),
                }
            }
            KeyCode::Backspace => {
                form.input.pop();
            }
            KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                form.input.clear();
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                form.input.push(c);
            }
            _ => {}
        }
        None
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
                if let Some(user) = self.used_by(&entry.key) {
                    spans.push(Span::styled(format!("  (used by {user})"), t.dim()));
                }
                if let Some(problem) = self.problems.get(&entry.key) {
                    spans.push(Span::styled(format!("  ✗ {problem}"), t.error()));
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
        if self.form.is_some() || self.adding.is_some() {
            FORM_KEYS
        } else {
            KEYS
        }
    }

    fn typing(&self) -> bool {
        self.form.is_some() || self.adding.is_some()
    }

    fn handle_key(&mut self, key: KeyEvent) -> Option<Action> {
        if self.form.is_some() {
            return self.form_key(key);
        }
        if let Some(mut adding) = self.adding.take() {
            let step = adding.key(key, |what, name| self.taken(what, name));
            return match step {
                super::project_add::Step::Cancelled => None,
                super::project_add::Step::Stay => {
                    self.adding = Some(adding);
                    None
                }
                super::project_add::Step::Write(action) => {
                    self.adding = Some(adding);
                    Some(action)
                }
            };
        }
        match key.code {
            KeyCode::Char('j') | KeyCode::Down => self.move_by(1),
            KeyCode::Char('k') | KeyCode::Up => self.move_by(-1),
            KeyCode::PageDown => self.move_by(10),
            KeyCode::PageUp => self.move_by(-10),
            KeyCode::Home => self.move_by(isize::MIN / 2),
            KeyCode::End => self.move_by(isize::MAX / 2),
            KeyCode::Enter => return self.edit(),
            KeyCode::Char('u') => return Some(Action::UndoConfig),
            KeyCode::Char('E') => return Some(Action::EditFile),
            KeyCode::Char('A') => return Some(Action::AskAuto),
            KeyCode::Char('a') => self.adding = Some(super::project_add::Adding::new()),
            KeyCode::Char('d') => return Some(self.delete()),
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
        // A refusal below the input wraps: the form grows to show it whole (up to 5 rows).
        let error_rows = self
            .form
            .as_ref()
            .and_then(|f| f.error.as_ref())
            .map_or(1, |error| {
                let width = usize::from(left.width.saturating_sub(2).max(1));
                u16::try_from(error.chars().count().div_ceil(width))
                    .unwrap_or(5)
                    .clamp(1, 5)
            });
        let form_height = if self.form.is_some() {
            3 + error_rows
        } else if self.adding.is_some() {
            4
        } else {
            0
        };
        let [list, form, detail] = Layout::vertical([
            Constraint::Min(3),
            Constraint::Length(form_height),
            Constraint::Length(
                1 + self.hint.as_ref().map_or(0, |h| {
                    // The hint wraps under the key's line.
                    let width = usize::from(left.width.max(2) - 1);
                    u16::try_from(h.chars().count().div_ceil(width)).unwrap_or(1)
                }),
            ),
        ])
        .areas(left);
        if let Some(open) = &self.form {
            self.render_form(open, form, buf);
        }
        if let Some(adding) = &self.adding {
            adding.render(form, buf, t);
        }
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
            let mut lines = vec![Line::styled(format!(" {} from {from}", entry.key), t.dim())];
            if let Some(hint) = &self.hint {
                lines.push(Line::styled(format!(" {hint}"), t.text()));
            }
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .render(detail, buf);
        }
        let lines = self.stats_lines();
        Paragraph::new(lines)
            .block(
                Block::new()
                    .borders(Borders::ALL)
                    .title(Span::styled(" stats ", t.title())),
            )
            .render(right, buf);
    }
}

impl ProjectView {
    /// The right pane (TUI-26): runs by state, the spend by stage with tokens, the pods'
    /// estimated spend, the spend by model, then the dataset's counts; a group not known
    /// yet says so instead of zeros.
    fn stats_lines(&self) -> Vec<Line<'static>> {
        let t = self.theme;
        let usd = crate::budget::usd;
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
        lines.push(Line::styled("spend", t.title()));
        let unpriced = |spend: &crate::budget::Spend| {
            if spend.unpriced > 0 { "+" } else { "" }
        };
        match &self.spend {
            None => lines.push(Line::styled("ledger not read yet", t.dim())),
            Some(spend) if spend.total.events == 0 => {
                lines.push(Line::styled("nothing spent", t.dim()));
            }
            Some(spend) => {
                for (stage, group) in &spend.by_stage {
                    let name = if stage == "train" {
                        "pods (est.)"
                    } else {
                        stage
                    };
                    lines.push(Line::raw(format!(
                        "{name:>12} {}{}",
                        usd(group.usd),
                        unpriced(group)
                    )));
                }
                lines.push(Line::raw(format!(
                    "{:>12} {}{}",
                    "total",
                    usd(spend.total.usd),
                    unpriced(&spend.total)
                )));
                for (name, tokens) in [
                    ("tokens in", spend.total.input_tokens),
                    ("out", spend.total.output_tokens),
                ] {
                    lines.push(Line::styled(format!("{name:>12} {tokens}"), t.dim()));
                }
                if !spend.by_model.is_empty() {
                    lines.push(Line::styled("by model", t.title()));
                    for (model, group) in &spend.by_model {
                        lines.push(Line::raw(format!(" {}", super::truncate(model, 36))));
                        lines.push(Line::raw(format!(
                            "{:>12} {}{}",
                            "",
                            usd(group.usd),
                            unpriced(group)
                        )));
                    }
                }
            }
        }
        lines.push(Line::raw(""));
        lines.push(Line::styled("dataset", t.title()));
        match &self.dataset {
            None => lines.push(Line::styled("data/ not read yet", t.dim())),
            Some(counts) if counts.files.iter().all(|(_, n)| n.is_none()) => {
                lines.push(Line::styled("nothing generated yet", t.dim()));
            }
            Some(counts) => {
                lines.push(Line::raw(format!("{:>12} {}", "topics", counts.topics)));
                for (file, records) in &counts.files {
                    let name = file.trim_end_matches(".jsonl");
                    let value = records.map_or_else(|| "-".to_owned(), |n| n.to_string());
                    lines.push(Line::raw(format!("{name:>12} {value}")));
                }
            }
        }
        lines
    }

    /// The form below the list: what is typed, then what the field accepts or why the
    /// last submission was refused.
    fn render_form(&self, form: &Form, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let cursor = if form.saving { " saving…" } else { "▏" };
        let second = match &form.error {
            Some(error) => Line::styled(error.clone(), t.error()),
            None => Line::styled(format!("accepts {}", edit::accepts(&form.shown)), t.dim()),
        };
        Paragraph::new(vec![
            Line::from(vec![
                Span::styled(form.input.clone(), t.text()),
                Span::styled(cursor, t.dim()),
            ]),
            second,
        ])
        .wrap(ratatui::widgets::Wrap { trim: false })
        .block(
            Block::new()
                .borders(Borders::ALL)
                .title(Span::styled(format!(" {} ", form.key), t.title())),
        )
        .render(area, buf);
    }
}

#[cfg(test)]
#[path = "project_tests.rs"]
mod tests;

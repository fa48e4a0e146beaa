//! The init wizard (TUI-73..TUI-77): what `tui` shows where there is no
//! `overbrainer.toml`. Seven screens ask for the project's name, its provider and key, the
//! models, the topics and where training runs, then a summary writes the files `init`
//! writes with the answers filled in ([`crate::project::wizard`]), and a last screen asks
//! whether to start auto mode.
//!
//! [`Wizard`] holds the answers and every decision: keys in, an [`Outcome`] once done; it
//! is drawn from `&self` ([`render`]). [`run`] is its loop over the terminal.

pub mod fields;
pub mod render;
pub mod text;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use futures_util::StreamExt as _;
use secrecy::SecretString;

use crate::config::Rules;
use crate::env::EnvSnapshot;
use crate::project::init::{PromptFile, first_existing, write_new};
use crate::project::wizard::{self as answers, Answers, Key, PRESETS, Topic, Training};
use fields::{Field, Id, Kind, TOPIC_FIELDS};

/// The screens' titles, in order; the last screen (auto mode now?) comes after them.
pub const TITLES: [&str; 7] = [
    "Project", "Provider", "Key", "Models", "Topics", "Training", "Summary",
];
/// The topics screen.
pub const TOPICS: usize = 4;
/// The summary screen.
pub const SUMMARY: usize = 6;
/// The last screen, once the files are written.
pub const START: usize = 7;

/// The base model offered first.
pub const DEFAULT_BASE_MODEL: &str = "Qwen/Qwen2.5-0.5B-Instruct";

/// How the wizard ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Quit before writing: nothing was written.
    Quit,
    /// Ctrl-C once the files are written: leave without opening the TUI.
    Leave,
    /// The files are written: open the TUI, on auto mode's confirmation when `auto`.
    Open {
        /// Start auto mode now.
        auto: bool,
    },
}

/// The topic being added or edited.
#[derive(Debug, Clone, Default)]
pub struct TopicForm {
    /// The topic edited, or `None` for a new one.
    pub editing: Option<usize>,
    /// The values of [`TOPIC_FIELDS`].
    pub values: [String; 4],
    /// The field being typed.
    pub focus: usize,
    /// The cursor in it.
    pub cursor: usize,
    /// The field refused and why.
    pub refused: Option<(usize, String)>,
}

/// What the summary will write, or why nothing can be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Summary {
    /// Not built yet.
    None,
    /// The lines to show; Enter writes.
    Ready(Vec<String>),
    /// Why nothing will be written.
    Refused(String),
}

/// The wizard's state.
pub struct Wizard {
    dir: PathBuf,
    env: EnvSnapshot,
    rules: Rules,
    prompts: Vec<PromptFile>,
    /// The screen shown (0-based; [`START`] once written).
    pub screen: usize,
    values: BTreeMap<Id, String>,
    /// The field being typed on this screen.
    pub focus: usize,
    /// The cursor in it, a char index.
    pub cursor: usize,
    /// The terminal is below 80x24: keys other than Ctrl-C wait.
    pub too_small: bool,
    /// The field refused on this screen and why (TUI-75).
    pub refused: Option<(Id, String)>,
    /// The topics so far.
    pub topics: Vec<Topic>,
    /// The topic selected.
    pub selected: usize,
    /// Why the topics screen cannot be left.
    pub topics_refused: Option<String>,
    /// The topic form, when open.
    pub form: Option<TopicForm>,
    /// The quit question is open.
    pub quitting: bool,
    /// The summary.
    pub summary: Summary,
    /// The files written.
    pub written: Vec<String>,
    outcome: Option<Outcome>,
}

/// Never prints a key.
impl std::fmt::Debug for Wizard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wizard")
            .field("dir", &self.dir)
            .field("screen", &self.screen)
            .finish_non_exhaustive()
    }
}

impl Wizard {
    /// A wizard writing into `dir`, whose configuration is checked with `rules` against
    /// `env`, writing `prompts` under `prompts/`.
    #[must_use]
    pub fn new(dir: &Path, env: EnvSnapshot, rules: Rules, prompts: Vec<PromptFile>) -> Self {
        let name = crate::project::init::project_name(dir).unwrap_or_default();
        let (generator, parent) = PRESETS[0].models;
        let values = [
            (Id::Name, name.as_str()),
            (Id::Preset, PRESETS[0].name),
            (Id::Protocol, "openai"),
            (Id::KeySource, fields::KEY_SOURCES[0]),
            (Id::Generator, generator),
            (Id::Parent, parent),
            (Id::Reasoning, "on"),
            (Id::Training, "local"),
            (Id::Runtime, "native"),
            (Id::RunpodKeySource, fields::KEY_SOURCES[0]),
            (Id::GpuTypes, "auto"),
            (Id::BaseModel, DEFAULT_BASE_MODEL),
            (Id::Adapter, "lora"),
        ]
        .into_iter()
        .map(|(id, v)| (id, v.to_owned()))
        .collect();
        Self {
            dir: dir.to_owned(),
            env,
            rules,
            prompts,
            screen: 0,
            cursor: name.chars().count(),
            too_small: false,
            values,
            focus: 0,
            refused: None,
            topics: Vec::new(),
            selected: 0,
            topics_refused: None,
            form: None,
            quitting: false,
            summary: Summary::None,
            written: Vec::new(),
            outcome: None,
        }
    }

    /// The terminal's size: below 80x24 only its notice is drawn and keys wait.
    pub fn set_size(&mut self, width: u16, height: u16) {
        let (min_width, min_height) = crate::tui::app::MIN_SIZE;
        self.too_small = width < min_width || height < min_height;
    }

    /// The directory written into.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The outcome, once the wizard is done.
    #[must_use]
    pub fn outcome(&self) -> Option<&Outcome> {
        self.outcome.as_ref()
    }

    /// The value of `id` (empty when unset).
    #[must_use]
    pub fn value(&self, id: Id) -> &str {
        self.values.get(&id).map_or("", String::as_str)
    }

    /// The fields of the screen shown.
    #[must_use]
    pub fn fields(&self) -> Vec<Field> {
        let get = |id| self.value(id);
        fields::of_screen(self.screen, &get)
    }

    /// The files the wizard writes, relative to its directory: every one must be absent.
    fn file_names(&self) -> Vec<String> {
        let mut names = vec![
            crate::config::FILE_NAME.to_owned(),
            ".env.example".to_owned(),
        ];
        names.extend(self.prompts.iter().map(|(n, _)| format!("prompts/{n}")));
        names.push(crate::config::DOTENV_NAME.to_owned());
        names
    }

    /// The first file the wizard would write that exists already (TUI-73).
    #[must_use]
    pub fn existing(&self) -> Option<PathBuf> {
        first_existing(&self.dir, self.file_names().iter().map(String::as_str))
    }

    /// Why the wizard cannot write into its directory, whatever the answers: a file it
    /// would write exists, or `prompts` is not a directory (TUI-73).
    #[must_use]
    pub fn refusal(&self) -> Option<String> {
        let prompts = self.dir.join("prompts");
        if prompts.symlink_metadata().is_ok() && !prompts.is_dir() {
            return Some(format!(
                "`{}` is a file, not a directory; the wizard writes the prompt templates there",
                prompts.display()
            ));
        }
        self.existing().map(|path| {
            format!(
                "`{}` already exists; the wizard never replaces a file, so nothing will be written",
                path.display()
            )
        })
    }

    /// Handles a key (TUI-75).
    pub fn handle_key(&mut self, key: KeyEvent) {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            if self.screen == START {
                self.outcome = Some(Outcome::Leave);
            } else {
                self.quitting = true;
            }
            return;
        }
        if self.too_small {
            return;
        }
        if self.quitting {
            match key.code {
                KeyCode::Char('y') => self.outcome = Some(Outcome::Quit),
                KeyCode::Char('n') | KeyCode::Esc | KeyCode::Enter => self.quitting = false,
                _ => {}
            }
            return;
        }
        if self.screen == START {
            match key.code {
                KeyCode::Char('y') => self.outcome = Some(Outcome::Open { auto: true }),
                KeyCode::Char('n') | KeyCode::Esc | KeyCode::Enter => {
                    self.outcome = Some(Outcome::Open { auto: false });
                }
                _ => {}
            }
            return;
        }
        if self.form.is_some() {
            self.form_key(key);
            return;
        }
        let choice = self
            .fields()
            .get(self.focus)
            .is_some_and(|f| matches!(f.kind, Kind::Choice(_)));
        match key.code {
            KeyCode::Enter | KeyCode::Tab => self.next(),
            KeyCode::BackTab | KeyCode::Esc => self.previous(),
            KeyCode::Up => self.move_focus(false),
            KeyCode::Down => self.move_focus(true),
            KeyCode::Char(c) if self.screen == TOPICS => {
                if key.modifiers.difference(KeyModifiers::SHIFT).is_empty() {
                    self.topics_key(c);
                }
            }
            KeyCode::Left | KeyCode::Right if choice => self.cycle(key.code == KeyCode::Right),
            _ if self.screen == TOPICS => {}
            _ => self.edit(key),
        }
    }

    /// An editing key in the focused field, when it is typed (not a choice).
    fn edit(&mut self, key: KeyEvent) {
        let Some(field) = self.fields().get(self.focus).copied() else {
            return;
        };
        if matches!(field.kind, Kind::Choice(_)) {
            return;
        }
        let text = self.values.entry(field.id).or_default();
        let before = text.clone();
        text::Editing {
            text,
            cursor: &mut self.cursor,
        }
        .key(key);
        if *text != before && self.refused.as_ref().is_some_and(|(id, _)| *id == field.id) {
            self.refused = None;
        }
    }

    /// The cursor at the end of the focused field.
    fn cursor_to_end(&mut self) {
        self.cursor = self
            .fields()
            .get(self.focus)
            .map_or(0, |f| self.value(f.id).chars().count());
    }

    /// A paste goes into the field being typed at its cursor (TUI-75), line breaks dropped.
    pub fn paste(&mut self, text: &str) {
        if self.quitting || self.too_small {
            return;
        }
        if let Some(form) = &mut self.form {
            if let Some(value) = form.values.get_mut(form.focus) {
                text::Editing {
                    text: value,
                    cursor: &mut form.cursor,
                }
                .insert(text);
            }
            return;
        }
        let Some(field) = self.fields().get(self.focus).copied() else {
            return;
        };
        if matches!(field.kind, Kind::Choice(_)) || self.screen == TOPICS {
            return;
        }
        self.refused = None;
        text::Editing {
            text: self.values.entry(field.id).or_default(),
            cursor: &mut self.cursor,
        }
        .insert(text);
    }

    fn move_focus(&mut self, down: bool) {
        if self.screen == TOPICS {
            let last = self.topics.len().saturating_sub(1);
            self.selected = if down {
                (self.selected + 1).min(last)
            } else {
                self.selected.saturating_sub(1)
            };
            return;
        }
        let last = self.fields().len().saturating_sub(1);
        self.focus = if down {
            (self.focus + 1).min(last)
        } else {
            self.focus.saturating_sub(1)
        };
        self.cursor_to_end();
    }

    /// ←/→ on a choice.
    fn cycle(&mut self, forward: bool) {
        let Some(field) = self.fields().get(self.focus).copied() else {
            return;
        };
        let Kind::Choice(choices) = field.kind else {
            return;
        };
        let at = choices
            .iter()
            .position(|c| *c == self.value(field.id))
            .unwrap_or(0);
        let next = if forward {
            (at + 1) % choices.len()
        } else {
            (at + choices.len() - 1) % choices.len()
        };
        let old = self.value(field.id).to_owned();
        self.values.insert(field.id, choices[next].to_owned());
        if field.id == Id::Preset {
            self.preset_changed(&old, choices[next]);
        }
    }

    /// A new preset offers its models where the old preset's (or nothing) stood.
    fn preset_changed(&mut self, old: &str, new: &str) {
        let models = |name: &str| PRESETS.iter().find(|p| p.name == name).map(|p| p.models);
        let old = models(old).unwrap_or(("", ""));
        let new = models(new).unwrap_or(("", ""));
        for (id, was, now) in [(Id::Generator, old.0, new.0), (Id::Parent, old.1, new.1)] {
            let value = self.value(id);
            if value.is_empty() || value == was {
                self.values.insert(id, now.to_owned());
            }
        }
    }

    /// Enter or Tab: the next screen, once every field of this one is accepted.
    fn next(&mut self) {
        if self.screen == TOPICS {
            if self.topics.is_empty() {
                self.topics_refused = Some("add at least one topic with `a`".to_owned());
                return;
            }
        } else if self.screen == SUMMARY {
            self.write();
            return;
        } else {
            for (index, field) in self.fields().iter().enumerate() {
                if let Some(problem) = fields::problem(field, self.value(field.id)) {
                    self.focus = index;
                    self.refused = Some((field.id, problem));
                    self.cursor_to_end();
                    return;
                }
            }
        }
        self.refused = None;
        self.topics_refused = None;
        self.screen += 1;
        self.focus = 0;
        self.cursor_to_end();
        if self.screen == SUMMARY {
            self.summary = self.prepare();
        }
    }

    /// Shift-Tab or Esc: the previous screen, every value kept.
    fn previous(&mut self) {
        if self.screen > 0 {
            self.screen -= 1;
            self.focus = 0;
            self.refused = None;
            self.cursor_to_end();
        }
    }

    fn topics_key(&mut self, c: char) {
        match c {
            'a' => {
                self.form = Some(TopicForm {
                    values: [
                        String::new(),
                        String::new(),
                        "5".to_owned(),
                        "10".to_owned(),
                    ],
                    ..TopicForm::default()
                });
            }
            'e' => {
                if let Some(topic) = self.topics.get(self.selected) {
                    self.form = Some(TopicForm {
                        editing: Some(self.selected),
                        cursor: topic.name.chars().count(),
                        values: [
                            topic.name.clone(),
                            topic.description.clone(),
                            topic.subtopics.to_string(),
                            topic.questions.to_string(),
                        ],
                        ..TopicForm::default()
                    });
                }
            }
            'd' if self.selected < self.topics.len() => {
                self.topics.remove(self.selected);
                self.selected = self.selected.min(self.topics.len().saturating_sub(1));
            }
            _ => {}
        }
        self.topics_refused = None;
    }

    fn form_key(&mut self, key: KeyEvent) {
        let Some(form) = &mut self.form else {
            return;
        };
        match key.code {
            KeyCode::Esc => self.form = None,
            KeyCode::Up | KeyCode::BackTab => {
                form.focus = form.focus.saturating_sub(1);
                form.cursor = form.values[form.focus].chars().count();
            }
            KeyCode::Down | KeyCode::Tab => {
                form.focus = (form.focus + 1).min(TOPIC_FIELDS.len() - 1);
                form.cursor = form.values[form.focus].chars().count();
            }
            KeyCode::Enter => self.save_topic(),
            _ => {
                let value = &mut form.values[form.focus];
                let before = value.clone();
                text::Editing {
                    text: value,
                    cursor: &mut form.cursor,
                }
                .key(key);
                if *value != before {
                    form.refused = None;
                }
            }
        }
    }

    /// Enter in the topic form: the topic is added or replaced once every field is accepted.
    fn save_topic(&mut self) {
        let Some(form) = &mut self.form else {
            return;
        };
        for (index, field) in TOPIC_FIELDS.iter().enumerate() {
            if let Some(problem) = fields::problem(field, &form.values[index]) {
                form.focus = index;
                form.cursor = form.values[index].chars().count();
                form.refused = Some((index, problem));
                return;
            }
        }
        let name = form.values[0].trim().to_owned();
        let taken = self
            .topics
            .iter()
            .enumerate()
            .any(|(i, t)| t.name == name && Some(i) != form.editing);
        if taken {
            form.focus = 0;
            form.cursor = form.values[0].chars().count();
            form.refused = Some((0, format!("a topic is named `{name}` already")));
            return;
        }
        let number = |i: usize| form.values[i].trim().parse::<u32>().unwrap_or(1);
        let topic = Topic {
            name,
            description: form.values[1].trim().to_owned(),
            subtopics: number(2),
            questions: number(3),
        };
        match form.editing {
            Some(index) if index < self.topics.len() => self.topics[index] = topic,
            _ => {
                self.topics.push(topic);
                self.selected = self.topics.len() - 1;
            }
        }
        self.form = None;
    }

    /// The answers as typed.
    #[must_use]
    pub fn answers(&self) -> Answers {
        let text = |id| self.value(id).trim().to_owned();
        let key = |source: Id, typed: Id, vault: Id| match self.value(source) {
            "type it" => Key::Typed(SecretString::from(self.value(typed).trim().to_owned())),
            "vault reference" => Key::Vault(text(vault)),
            _ => Key::Later,
        };
        let preset = PRESETS.iter().find(|p| p.name == self.value(Id::Preset));
        let provider = answers::Provider {
            name: preset.map_or_else(|| text(Id::CustomName), |p| p.name.to_owned()),
            protocol: preset.map_or_else(|| text(Id::Protocol), |p| p.protocol.to_owned()),
            base_url: preset.map_or_else(|| text(Id::BaseUrl), |p| p.base_url.to_owned()),
            key: key(Id::KeySource, Id::Key, Id::KeyVault),
        };
        let docker = self.value(Id::Runtime) == "docker";
        let training = match self.value(Id::Training) {
            "local" => Training::Local { docker },
            "ssh" => Training::Ssh {
                host: text(Id::Host),
                docker,
            },
            "runpod" => Training::Runpod {
                key: key(Id::RunpodKeySource, Id::RunpodKey, Id::RunpodVault),
                gpu_types: fields::gpu_types(self.value(Id::GpuTypes)).unwrap_or(None),
            },
            _ => Training::Skip,
        };
        let embedder = text(Id::Embedder);
        let openai = provider.protocol == "openai";
        Answers {
            name: text(Id::Name),
            provider,
            generator: text(Id::Generator),
            parent: text(Id::Parent),
            reasoning: self.value(Id::Reasoning) == "on",
            embedder: (openai && !embedder.is_empty()).then_some(embedder),
            topics: self.topics.clone(),
            training,
            base_model: text(Id::BaseModel),
            adapter: text(Id::Adapter),
        }
    }

    /// The summary's lines, or why nothing can be written (TUI-74, TUI-76).
    fn prepare(&self) -> Summary {
        if let Some(why) = self.refusal() {
            return Summary::Refused(why);
        }
        let answers = self.answers();
        if let Err(error) = answers::files(&self.dir, &answers, &self.env, self.rules) {
            return Summary::Refused(crate::runs::start::error_chain(&error));
        }
        Summary::Ready(summary_lines(&answers, &self.prompts, &self.dir))
    }

    /// Enter on the summary: the files are written, or the refusal shown.
    fn write(&mut self) {
        if let Some(why) = self.refusal() {
            self.summary = Summary::Refused(why);
            return;
        }
        let answers = self.answers();
        let result = answers::files(&self.dir, &answers, &self.env, self.rules)
            .map_err(|error| crate::runs::start::error_chain(&error))
            .and_then(|files| {
                let mut public = vec![
                    (crate::config::FILE_NAME.to_owned(), files.config),
                    (".env.example".to_owned(), files.env_example),
                ];
                public.extend(
                    self.prompts
                        .iter()
                        .map(|(n, t)| (format!("prompts/{n}"), (*t).to_owned())),
                );
                let private = vec![(crate::config::DOTENV_NAME.to_owned(), files.env)];
                write_new(&self.dir, &answers.name, &public, &private)
                    .map_err(|error| crate::runs::start::error_chain(&error))
            });
        match result {
            Ok(report) => {
                self.written = report.written;
                if report.gitignore_added > 0 {
                    self.written.push(".gitignore".to_owned());
                }
                self.screen = START;
            }
            Err(why) => self.summary = Summary::Refused(why),
        }
    }
}

/// What the summary says will be written.
fn summary_lines(answers: &Answers, prompts: &[PromptFile], dir: &Path) -> Vec<String> {
    let provider = &answers.provider;
    let key = |key: &Key| match key {
        Key::Later => "empty: fill it in later",
        Key::Typed(_) => "typed",
        Key::Vault(_) => "Vault reference",
    };
    let mut lines = vec![
        format!("project    {} in {}", answers.name, dir.display()),
        format!(
            "provider   {} ({}, {}), key {}",
            provider.name,
            provider.protocol,
            provider.base_url,
            key(&provider.key)
        ),
        format!("generator  {}", answers.generator),
        format!(
            "parent     {} (reasoning {})",
            answers.parent,
            if answers.reasoning { "on" } else { "off" }
        ),
    ];
    if let Some(embedder) = &answers.embedder {
        lines.push(format!("embedder   {embedder}"));
    }
    let topics: Vec<String> = answers
        .topics
        .iter()
        .map(|t| format!("{} ({}x{})", t.name, t.subtopics, t.questions))
        .collect();
    lines.push(format!("topics     {}", topics.join(", ")));
    lines.push(match &answers.training {
        Training::Skip => "training   skipped: auto mode stops after split".to_owned(),
        Training::Local { docker } => format!(
            "training   this machine ({}), {}, {}",
            if *docker { "docker" } else { "native" },
            answers.base_model,
            answers.adapter
        ),
        Training::Ssh { host, docker } => format!(
            "training   {host} over SSH ({}), {}, {}",
            if *docker { "docker" } else { "native" },
            answers.base_model,
            answers.adapter
        ),
        Training::Runpod { key: k, gpu_types } => format!(
            "training   Runpod ({}; key {}), {}, {}",
            gpu_types
                .as_ref()
                .map_or_else(|| "auto".to_owned(), |t| t.join(", ")),
            key(k),
            answers.base_model,
            answers.adapter
        ),
    });
    lines.push(String::new());
    lines.push("Enter writes:".to_owned());
    lines.push("  overbrainer.toml  the init template with these answers".to_owned());
    lines.push("  .env              mode 600, with:".to_owned());
    for (name, _) in answers::variables(answers) {
        lines.push(format!("                      {name}"));
    }
    lines.push("  .env.example      the same variables, no secret".to_owned());
    lines.push(format!(
        "  prompts/          {} prompt templates",
        prompts.len()
    ));
    lines.push("  .gitignore        .env and /.overbrainer/ when missing".to_owned());
    lines
}

/// Runs the wizard on the terminal until it is done (TUI-73..TUI-77). It installs no signal
/// handler: a SIGTERM or SIGHUP may leave the terminal raw (TUI-75).
///
/// # Errors
///
/// When the terminal fails (it is restored all the same).
pub async fn run(mut wizard: Wizard) -> std::io::Result<(Wizard, Outcome)> {
    let mut terminal = super::terminal::enter()?;
    let _ = crossterm::execute!(std::io::stdout(), crossterm::event::EnableBracketedPaste);
    let result = event_loop(&mut wizard, &mut terminal).await;
    let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableBracketedPaste);
    super::terminal::restore();
    result.map(|outcome| (wizard, outcome))
}

async fn event_loop(
    wizard: &mut Wizard,
    terminal: &mut super::terminal::Term,
) -> std::io::Result<Outcome> {
    let mut events = EventStream::new();
    let size = terminal.size()?;
    wizard.set_size(size.width, size.height);
    loop {
        terminal.draw(|frame| render::render(wizard, frame))?;
        if let Some(outcome) = wizard.outcome() {
            return Ok(outcome.clone());
        }
        match events.next().await {
            Some(Ok(Event::Key(key))) if key.kind != KeyEventKind::Release => {
                wizard.handle_key(key);
            }
            Some(Ok(Event::Paste(text))) => wizard.paste(&text),
            Some(Ok(Event::Resize(width, height))) => wizard.set_size(width, height),
            Some(Ok(_)) => {}
            Some(Err(error)) => return Err(error),
            // The terminal is gone: nothing more can be asked.
            None => return Ok(wizard.outcome().cloned().unwrap_or(Outcome::Quit)),
        }
    }
}

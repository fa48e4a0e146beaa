//! The app's state: the six views, the dialog and help overlays, the footer message and the
//! tasks it runs. Keys and flow events change it; [`App::render`] draws it from `&self`.
//! It never runs anything itself: what needs doing comes back as [`Work`] for the event
//! loop to spawn, so every decision here is testable without a terminal or a runtime.

use std::collections::BTreeMap;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Tabs, Widget, Wrap};
use tokio_util::sync::CancellationToken;
use tracing::Level;

use super::action::Action;
use super::components::dialog::{Answer, Dialog};
use super::components::footer::{Footer, Message, SpendShown};
use super::components::help;
use super::config_write::{ConfigNews, UndoPoint};
use super::event::{FlowEvent, TaskEnd};
use super::stages::{Chain, StageNews};
use super::theme::Theme;
use super::views::View;
use super::views::compare::CompareView;
use super::views::dataset::DatasetView;
use super::views::logs::LogsView;
use super::views::pipeline::PipelineView;
use super::views::project::ProjectView;
use super::views::training::TrainingView;
use crate::pipeline::Stage;
use crate::runs::RunRecord;

mod fade;
mod runpod;

pub use runpod::{Purpose, RunpodAsk};

/// The smallest terminal the layout is made for (TUI-3).
pub const MIN_SIZE: (u16, u16) = (80, 24);

/// What a task does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Start (or resume) a run and follow it.
    Train,
    /// Follow a run again.
    Attach,
    /// Stop a run with a snapshot and follow it to its end.
    Stop,
    /// Cancel a run's job.
    Cancel,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Self::Train => "train",
            Self::Attach => "follow",
            Self::Stop => "stop",
            Self::Cancel => "cancel",
        }
    }
}

/// Work for the event loop to spawn.
#[derive(Debug, Clone)]
pub enum Work {
    /// Run task `task` of `kind` on `run` (`resume_from` for a start), cancelled by `cancel`.
    Task {
        /// Task number, echoed in its events.
        task: u64,
        /// What it does.
        kind: Kind,
        /// The run (the stopped run to resume for a start, or none).
        run: Option<String>,
        /// Cancelled on quit: a follower detaches.
        cancel: CancellationToken,
        /// The VRAM estimate the start confirmation showed, for a start (POD-19).
        vram_estimate: Option<f64>,
    },
    /// Re-read `runs/` (and `data/`).
    ReadRuns,
    /// Read a Runpod listing for a picker or the start confirmation (TUI-21..TUI-23,
    /// TUI-43).
    ReadRunpod(RunpodAsk),
    /// Re-read `data/` alone, for the Dataset and Pipeline views when shown (TUI-31).
    ReadDataset,
    /// Write `lines` to a new `.overbrainer/logs-<time>.log`.
    ExportLogs(Vec<String>),
    /// Read the kept pod log of a run (`runs/<run-id>/.pod/pod.log`, TUI-57).
    ReadPodLog(String),
    /// Write a run's pod log lines to a new `.overbrainer/logs-pod-<run-id>-<time>.log`.
    ExportPodLog {
        /// The run.
        run: String,
        /// The lines.
        lines: Vec<String>,
    },
    /// Delete a dataset item with its dependents, split again, re-read `data/`.
    DeleteData(crate::dataset::delete::Target),
    /// Write a change made on the configuration of `generation` (TUI-13).
    SaveConfig {
        /// The change.
        changes: Vec<crate::config::edit::Change>,
        /// The configuration it was made on.
        generation: u64,
    },
    /// Write back `overbrainer.toml` as it was before the last write (TUI-17).
    UndoConfig(UndoPoint),
    /// Read `overbrainer.toml` and `.env` again if they changed (every 2 s, TUI-20).
    RereadConfig,
    /// Hand `overbrainer.toml` to the user's editor; the event loop does it, as it owns
    /// the terminal (TUI-18).
    EditFile,
    /// Edit a dataset item or an answer in the user's editor; the event loop does it
    /// (TUI-32).
    EditData(super::dataset_edit::DataEdit),
    /// Apply what the editor left in `path` to the edited item, split again, re-read
    /// `data/` (TUI-33, TUI-35).
    ApplyDataEdit {
        /// What was edited, as shown.
        edit: super::dataset_edit::DataEdit,
        /// The edited file.
        path: std::path::PathBuf,
    },
    /// Run the dataset stages of `chain` as task `task`, cancelled by `cancel`.
    Stages {
        /// Task number, echoed in its news.
        task: u64,
        /// What it runs.
        chain: Chain,
        /// Interrupts the running stage and ends the chain.
        cancel: CancellationToken,
    },
}

/// The `r` menu's entries, in order (TUI-5).
pub const MENU: [Chain; 6] = [
    Chain::Auto,
    Chain::One(Stage::Subtopics),
    Chain::One(Stage::Questions),
    Chain::One(Stage::Answers),
    Chain::One(Stage::Split),
    Chain::Run,
];

/// The dataset stages running (one chain at a time).
#[derive(Debug)]
struct StageTask {
    task: u64,
    chain: Chain,
    cancel: CancellationToken,
}

#[derive(Debug)]
struct Task {
    kind: Kind,
    run: Option<String>,
    cancel: CancellationToken,
    /// Whether its run events are the run's (a start's are once its job began).
    following: bool,
}

/// The whole TUI's state.
#[derive(Debug)]
pub struct App {
    theme: Theme,
    tab: usize,
    /// The Project view.
    pub project: ProjectView,
    dataset: DatasetView,
    pipeline: PipelineView,
    /// The Training view.
    pub training: TrainingView,
    /// The Logs view.
    pub logs: LogsView,
    /// The Compare view.
    pub compare: CompareView,
    dialog: Option<Dialog>,
    help: bool,
    message: Option<Message>,
    spend: Option<SpendShown>,
    tasks: BTreeMap<u64, Task>,
    next_task: u64,
    /// What to do to a run once its follower detached (`s` or `c` on a followed run).
    after_detach: BTreeMap<String, Kind>,
    /// The spinner's frame, turned by the redraw tick while work runs.
    spinner: u64,
    /// The fade of what appeared last (TUI-72).
    fade: Option<super::motion::Fade>,
    quitting: bool,
    /// Runs detached on quit, for the attach hint.
    pub detached: Vec<String>,
    done: bool,
    /// The writes of `overbrainer.toml`.
    config: ConfigWrites,
    /// The dataset stages running.
    stages: Option<StageTask>,
    /// The `r` menu, open on this entry.
    menu: Option<usize>,
    /// The training task auto mode started, whose end names the output (TUI-39).
    auto_train: Option<u64>,
    /// Dataset deletions and edits being written (the data lock, TUI-64).
    data_writes: usize,
    /// The Runpod picker, when open (TUI-21..TUI-23, TUI-44).
    picker: Option<super::components::picker::Picker>,
    /// The start confirmation of a Runpod run, when open (TUI-43).
    confirm: Option<super::start_confirm::StartConfirm>,
    /// The account's network volumes, as last listed (TUI-22).
    volumes: Option<Vec<crate::runpod::catalog::wire::NetworkVolume>>,
    /// The hints of Runpod targets' `gpu_count` and `max_hours` by target: the
    /// configuration's generation each was read for, and its text once read (TUI-24).
    hints: BTreeMap<String, (u64, Option<String>)>,
    /// Runpod reads asked so far (each read's number).
    runpod_reads: u64,
    /// The read a picker waits for (one at a time).
    pick_awaited: Option<u64>,
}

/// The writes of `overbrainer.toml` from the Project view.
#[derive(Debug, Default)]
struct ConfigWrites {
    /// A write runs (one at a time, TUI-16).
    saving: bool,
    /// What `u` writes back (TUI-17).
    undo: Option<UndoPoint>,
    /// The generation of the configuration shown.
    generation: u64,
}

impl App {
    /// An app opening on the Project view.
    #[must_use]
    pub fn new(theme: Theme, project: ProjectView, training: TrainingView) -> Self {
        Self {
            theme,
            tab: 0,
            project,
            dataset: super::views::dataset::new(theme),
            pipeline: super::views::pipeline::new(theme),
            training,
            logs: LogsView::new(theme),
            compare: super::views::compare::new(theme),
            dialog: None,
            help: false,
            message: None,
            spend: None,
            tasks: BTreeMap::new(),
            next_task: 1,
            after_detach: BTreeMap::new(),
            spinner: 0,
            fade: None,
            quitting: false,
            detached: Vec::new(),
            done: false,
            config: ConfigWrites::default(),
            stages: None,
            menu: None,
            auto_train: None,
            data_writes: 0,
            picker: None,
            confirm: None,
            volumes: None,
            hints: BTreeMap::new(),
            runpod_reads: 0,
            pick_awaited: None,
        }
    }

    /// Whether the loop should end: quit asked and every task ended.
    #[must_use]
    pub fn done(&self) -> bool {
        self.done
    }

    /// The current view's number (0-based).
    #[must_use]
    pub fn tab(&self) -> usize {
        self.tab
    }

    /// Whether the current view takes every key as typed text.
    #[must_use]
    pub fn view_typing(&self) -> bool {
        self.view().typing()
    }

    /// Whether a dialog is open.
    #[must_use]
    pub fn dialog(&self) -> Option<&Dialog> {
        self.dialog.as_ref()
    }

    /// The footer message.
    #[must_use]
    pub fn message(&self) -> Option<&Message> {
        self.message.as_ref()
    }

    /// Whether anything shown moves by itself (a task runs), so the tick redraws.
    #[must_use]
    pub fn busy(&self) -> bool {
        !self.tasks.is_empty() || self.stages.is_some() || self.reading_runpod()
    }

    /// The work of the 2 s re-read (TUI-20, TUI-31): the configuration, and `data/` while a
    /// stage the TUI started runs and the Dataset or Pipeline view is shown.
    #[must_use]
    pub fn every_two_seconds(&self) -> Vec<Work> {
        let mut work = vec![Work::RereadConfig];
        if self.stages.is_some() && matches!(self.tab, 1 | 2) {
            work.push(Work::ReadDataset);
        }
        // TUI-57: the pod log shown is read again every 2 s.
        if let (4, Some(run)) = (self.tab, self.logs.pod_run()) {
            work.push(Work::ReadPodLog(run.to_owned()));
        }
        work
    }

    /// The `r` menu's selected entry, when open.
    #[must_use]
    pub fn menu(&self) -> Option<usize> {
        self.menu
    }

    /// Clears the footer message (10 s after it was set).
    pub fn expire_message(&mut self) {
        self.message = None;
    }

    /// Shows view `tab`; the Dataset and Pipeline views read `data/` again whenever shown
    /// (TUI-31).
    fn show(&mut self, tab: usize) -> Vec<Work> {
        let shown = self.tab == tab;
        self.tab = tab;
        if !shown && matches!(tab, 1 | 2) {
            vec![Work::ReadDataset]
        } else {
            Vec::new()
        }
    }

    fn view(&self) -> &dyn View {
        match self.tab {
            0 => &self.project,
            1 => &self.dataset,
            2 => &self.pipeline,
            3 => &self.training,
            4 => &self.logs,
            _ => &self.compare,
        }
    }

    fn view_mut(&mut self) -> &mut dyn View {
        match self.tab {
            0 => &mut self.project,
            1 => &mut self.dataset,
            2 => &mut self.pipeline,
            3 => &mut self.training,
            4 => &mut self.logs,
            _ => &mut self.compare,
        }
    }

    /// Takes in a key; returns the work it starts.
    pub fn handle_key(&mut self, key: KeyEvent) -> Vec<Work> {
        let before = self.appearance();
        let mut work = self.key_work(key);
        self.note_appearance(&before);
        self.sync_used();
        work.extend(self.hint_work());
        self.project.hint = self.hint().map(str::to_owned);
        work
    }

    /// Marks the `training` table and its target used while a run starts or is followed
    /// (TUI-19).
    fn sync_used(&mut self) {
        let user = if self.training.starting {
            Some("the run starting".to_owned())
        } else {
            self.training
                .followed
                .iter()
                .next()
                .map(|id| format!("run {id}"))
        };
        let mut marked = Vec::new();
        if let Some(user) = user {
            marked.push(("training.".to_owned(), user.clone()));
            if let Some(target) = self.project.value("training.target") {
                marked.push((format!("targets.{target}."), user));
            }
        }
        // TUI-19: a stage's roles and their providers.
        if let Some(running) = &self.stages {
            let roles: &[&str] = match running.chain {
                Chain::One(Stage::Subtopics | Stage::Questions) => &["generator", "embedder"],
                Chain::One(Stage::Answers) => &["parent"],
                Chain::One(Stage::Split) => &[],
                Chain::Run | Chain::Auto => &["generator", "embedder", "parent"],
            };
            let user = format!("stage `{}`", running.chain.name());
            // Every stage runs on every topic.
            marked.push(("topics.".to_owned(), user.clone()));
            for role in roles {
                marked.push((format!("roles.{role}."), user.clone()));
                if let Some(provider) = self.project.value(&format!("roles.{role}.provider")) {
                    marked.push((format!("providers.{provider}."), user.clone()));
                }
            }
        }
        self.project.used = marked;
    }

    /// The `r` menu's keys: move, Enter picks, Esc closes.
    fn menu_key(&mut self, key: KeyEvent, at: usize) -> Vec<Work> {
        match key.code {
            KeyCode::Char('j') | KeyCode::Down => self.menu = Some((at + 1).min(MENU.len() - 1)),
            KeyCode::Char('k') | KeyCode::Up => self.menu = Some(at.saturating_sub(1)),
            KeyCode::Enter => {
                self.menu = None;
                let action = match MENU[at] {
                    Chain::Auto => Action::AskAuto,
                    chain => Action::RunChain(chain),
                };
                let work = self.apply(action);
                self.sync_used();
                return work;
            }
            KeyCode::Esc | KeyCode::Char('q' | 'r') => self.menu = None,
            _ => {}
        }
        Vec::new()
    }

    /// Turns the spinner one frame (the redraw tick, while work runs).
    pub fn advance_spinner(&mut self) {
        self.spinner = self.spinner.wrapping_add(1);
        self.training.frame = self.spinner;
    }

    /// What quitting does to each piece of work running now (TUI-65); empty when nothing
    /// runs.
    fn quit_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if self.stages.is_some() {
            let stage = self.pipeline.current().map_or("the stage", Stage::name);
            lines.push(format!(
                "`{stage}` stops and picks up where it left off next time; the requests it has in flight are paid for but lost."
            ));
        }
        for task in self.tasks.values() {
            let run = task.run.as_deref().unwrap_or("the new run");
            lines.push(match (task.kind, task.following) {
                (Kind::Train, false) => format!(
                    "{run} is starting: the TUI waits until its job exists, then leaves it running."
                ),
                (Kind::Train | Kind::Attach, _) => format!(
                    "{run} goes on on its target; `overbrainer train attach {run}` follows it again."
                ),
                (Kind::Stop, _) => format!("The stop of {run} is waited for."),
                (Kind::Cancel, _) => format!("The cancel of {run} is waited for."),
            });
        }
        if self.data_writes > 0 {
            lines.push("The dataset edit being written is waited for.".to_owned());
        }
        if self.config.saving {
            lines.push("The write of overbrainer.toml is waited for.".to_owned());
        }
        lines
    }

    /// Once quitting: done when nothing the TUI waits for runs any more (TUI-65): tasks
    /// (followers detach), the stage chain, dataset writes and a configuration write.
    fn settle_quit(&mut self) {
        self.done = self.quitting
            && self.tasks.is_empty()
            && self.stages.is_none()
            && self.data_writes == 0
            && !self.config.saving;
    }

    /// A dataset deletion or edit starts: `work` runs it, holding the data lock until
    /// [`FlowEvent::DataWritten`].
    pub fn data_write(&mut self, work: Work) -> Vec<Work> {
        self.data_writes += 1;
        vec![work]
    }

    /// Why `r`, `A`, `t`, `d` and `e` must wait (TUI-64): a stage runs, a dataset edit is
    /// written, a training run starts, or the TUI quits.
    fn data_locked(&self) -> Option<String> {
        if self.quitting {
            Some("the TUI is quitting".into())
        } else if self.data_writes > 0 {
            Some("a dataset edit is being written".into())
        } else if let Some(running) = &self.stages {
            Some(format!(
                "`{}` runs; `c` in the Pipeline view cancels it",
                running.chain.name()
            ))
        } else if self.training.starting {
            Some("a training run is starting".into())
        } else {
            None
        }
    }

    /// The auto mode question (TUI-38).
    fn ask_auto(&self) -> Action {
        let mut lines = vec![
            "Runs subtopics → questions → answers → split on every topic, each only after"
                .to_owned(),
            "the previous one ended without failed items, then:".to_owned(),
        ];
        match &self.training.start {
            Ok(start) => {
                lines.push("starts a training run as `t` does:".to_owned());
                lines.extend(start.iter().map(|l| format!("  {l}")));
            }
            Err(why) => lines.push(format!("ends after split ({why})")),
        }
        Action::Ask(super::action::Dialog::new(
            "Auto mode?",
            lines,
            Action::RunChain(Chain::Auto),
        ))
    }

    /// Starts `chain` (TUI-6, TUI-39).
    fn run_chain(&mut self, chain: Chain) -> Vec<Work> {
        let task = self.next_task;
        self.next_task += 1;
        let cancel = CancellationToken::new();
        self.stages = Some(StageTask {
            task,
            chain,
            cancel: cancel.clone(),
        });
        self.pipeline.begin(chain);
        self.tab = 2;
        vec![Work::Stages {
            task,
            chain,
            cancel,
        }]
    }

    /// News of the stage chain of `task`.
    fn on_stage(&mut self, task: u64, news: &StageNews) -> Vec<Work> {
        if self.stages.as_ref().is_none_or(|s| s.task != task) {
            return Vec::new();
        }
        self.pipeline.apply(news);
        match news {
            StageNews::Event(crate::pipeline::Event::Warning(text)) => {
                self.logs.push(Level::WARN, text.clone());
                Vec::new()
            }
            StageNews::Event(crate::pipeline::Event::ItemFailed {
                stage,
                item,
                reason,
            }) => {
                self.logs.push(
                    Level::WARN,
                    format!("{}: {item} failed: {reason}", stage.name()),
                );
                Vec::new()
            }
            StageNews::Ended { line, .. } => {
                self.logs.push(Level::INFO, line.clone());
                vec![Work::ReadDataset]
            }
            StageNews::Finished { ok } => self.chain_finished(*ok),
            StageNews::Began(_) | StageNews::Event(_) => Vec::new(),
        }
    }

    fn chain_finished(&mut self, ok: bool) -> Vec<Work> {
        let Some(ended) = self.stages.take() else {
            return Vec::new();
        };
        let mut work = vec![Work::ReadDataset];
        if self.quitting {
            self.settle_quit();
            return work;
        }
        if !ok {
            let (stage, why) = self
                .pipeline
                .failure()
                .unwrap_or_else(|| (ended.chain.name().to_owned(), "interrupted".to_owned()));
            self.say(
                false,
                format!(
                    "`{stage}` stopped: {why}; `r` runs it again and picks up where it stopped"
                ),
            );
            return work;
        }
        match ended.chain {
            Chain::Auto => match &self.training.start {
                Ok(_) => {
                    self.say(
                        true,
                        "auto: the dataset is ready; the training run starts".into(),
                    );
                    let start = self.apply(Action::Start { resume_from: None });
                    self.auto_train = start.iter().find_map(|w| match w {
                        Work::Task { task, .. } => Some(*task),
                        _ => None,
                    });
                    work.extend(start);
                }
                Err(why) => self.say(
                    true,
                    format!("auto: the dataset is ready; the chain ends after split ({why})"),
                ),
            },
            Chain::Run => self.say(
                true,
                "`run` done: data/train.jsonl and data/eval.jsonl are ready; `t` trains".into(),
            ),
            Chain::One(stage) => self.say(true, format!("`{}` done", stage.name())),
        }
        work
    }

    /// A key's work, before the used keys are marked again.
    fn key_work(&mut self, key: KeyEvent) -> Vec<Work> {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            // TUI-66: like `q` from any context, leaving it first; a second Ctrl-C answers
            // the quit question.
            let asked = self
                .dialog
                .take()
                .is_some_and(|d| *d.yes == Action::QuitNow);
            self.menu = None;
            self.help = false;
            self.picker = None;
            // A confirmed start whose choice is being saved goes on (TUI-44).
            if !self.confirm.as_ref().is_some_and(|c| c.saving) {
                self.confirm = None;
            }
            return self.apply(if asked { Action::QuitNow } else { Action::Quit });
        }
        // The overlay may cover a picker or the start confirmation: it closes first.
        if self.help {
            if matches!(key.code, KeyCode::Esc | KeyCode::Char('?' | 'q')) {
                self.help = false;
            }
            return Vec::new();
        }
        // `?` over the menu or a dialog shows their keys (TUI-5).
        if key.code == KeyCode::Char('?') && (self.menu.is_some() || self.dialog.is_some()) {
            self.help = true;
            return Vec::new();
        }
        if let Some(at) = self.menu {
            return self.menu_key(key, at);
        }
        if self.picker.is_some() {
            return self.picker_key(key);
        }
        if self.confirm.is_some() {
            return self.confirm_key(key);
        }
        if let Some(dialog) = &self.dialog {
            return match dialog.handle_key(key) {
                Answer::Yes(action) => {
                    self.dialog = None;
                    self.apply(action)
                }
                Answer::No => {
                    self.dialog = None;
                    Vec::new()
                }
                Answer::Pending => Vec::new(),
            };
        }
        let global = if self.view().typing() {
            None
        } else {
            global_action(key)
        };
        match global.or_else(|| self.view_mut().handle_key(key)) {
            Some(action) => self.apply(action),
            None => Vec::new(),
        }
    }

    fn task(&mut self, kind: Kind, run: Option<String>) -> Work {
        let task = self.next_task;
        self.next_task += 1;
        let cancel = CancellationToken::new();
        self.tasks.insert(
            task,
            Task {
                kind,
                run: run.clone(),
                cancel: cancel.clone(),
                following: kind != Kind::Train,
            },
        );
        Work::Task {
            task,
            kind,
            run,
            cancel,
            vram_estimate: None,
        }
    }

    /// The task following run `id`, if any.
    fn follower_of(&self, id: &str) -> Option<&Task> {
        self.tasks
            .values()
            .find(|t| t.run.as_deref() == Some(id) && matches!(t.kind, Kind::Train | Kind::Attach))
    }

    /// Stops or cancels run `id`: a follower of the TUI detaches first (TUI-47).
    fn act_on_run(&mut self, kind: Kind, id: String) -> Vec<Work> {
        self.training.busy.insert(
            id.clone(),
            if kind == Kind::Stop {
                "stopping"
            } else {
                "cancelling"
            },
        );
        if let Some(follower) = self.follower_of(&id) {
            follower.cancel.cancel();
            self.after_detach.insert(id, kind);
            return Vec::new();
        }
        vec![self.task(kind, Some(id))]
    }

    /// Carries out `action`; returns the work it starts.
    pub fn apply(&mut self, action: Action) -> Vec<Work> {
        if self.quitting && !matches!(action, Action::Say { .. }) {
            return Vec::new();
        }
        match action {
            Action::Quit | Action::QuitNow => {
                // TUI-65: at once when nothing runs, else a question saying what happens
                // to each piece of work.
                if action == Action::Quit {
                    let lines = self.quit_lines();
                    if !lines.is_empty() {
                        self.dialog = Some(Dialog::new("Quit?", lines, Action::QuitNow));
                        return Vec::new();
                    }
                }
                self.quitting = true;
                self.after_detach.clear();
                for task in self.tasks.values() {
                    task.cancel.cancel();
                }
                if let Some(running) = &self.stages {
                    running.cancel.cancel();
                }
                self.settle_quit();
                if !self.done {
                    self.say(true, "detaching: the jobs go on".to_owned());
                }
            }
            Action::Menu => match self.data_locked() {
                Some(why) => self.say(false, format!("`r` must wait: {why}")),
                None => self.menu = Some(0),
            },
            Action::AskAuto => match self.data_locked() {
                Some(why) => self.say(false, format!("auto mode must wait: {why}")),
                None => return self.apply(self.ask_auto()),
            },
            Action::RunChain(chain) => match self.data_locked() {
                Some(why) => self.say(false, format!("`{}` must wait: {why}", chain.name())),
                None => return self.run_chain(chain),
            },
            Action::EditData(edit) => match self.data_locked() {
                Some(why) => self.say(false, format!("`{}` must wait: {why}", edit.key())),
                None => return vec![Work::EditData(edit)],
            },
            Action::CancelStages => {
                if let Some(running) = &self.stages {
                    running.cancel.cancel();
                    self.say(true, format!("cancelling `{}`…", running.chain.name()));
                }
            }
            Action::Start { .. } | Action::DeleteData(_)
                if self.stages.is_some() || self.data_writes > 0 =>
            {
                let why = self.data_locked().unwrap_or_default();
                self.say(false, format!("must wait: {why}"));
            }
            Action::View(n) => return self.show(n.min(5)),
            Action::NextView => return self.show((self.tab + 1) % 6),
            Action::PrevView => return self.show((self.tab + 5) % 6),
            Action::Help => self.help = true,
            Action::Reload => return vec![Work::ReadRuns],
            Action::Ask(dialog) => return self.ask(dialog),
            Action::Pick(key) => return self.open_picker(key),
            Action::Say { ok, text } => self.say(ok, text),
            Action::Start { resume_from } => {
                self.training.starting = true;
                self.tab = 3;
                return vec![self.task(Kind::Train, resume_from)];
            }
            Action::Attach(id) => return vec![self.task(Kind::Attach, Some(id))],
            Action::Stop(id) => return self.act_on_run(Kind::Stop, id),
            Action::Cancel(id) => return self.act_on_run(Kind::Cancel, id),
            Action::ExportLogs(lines) => return vec![Work::ExportLogs(lines)],
            Action::ExportPodLog { run, lines } => return vec![Work::ExportPodLog { run, lines }],
            Action::ShowPodLog => match self.training.selected_run().map(|r| r.id.clone()) {
                Some(run) => {
                    self.logs.show_pod(run.clone());
                    self.say(true, format!("the pod log of run {run}; `s` returns"));
                    return vec![Work::ReadPodLog(run)];
                }
                None => self.say(
                    false,
                    "select a run in the Training view (4) first: `s` shows its pod log".to_owned(),
                ),
            },
            Action::EditConfig(changes) => return self.edit_config(changes),
            Action::UndoConfig => return self.undo_config(),
            Action::EditFile => return self.edit_file(),
            Action::DeleteData(target) => {
                self.say(
                    true,
                    format!("deleting {}…", super::dataset_delete::describe(&target)),
                );
                return self.data_write(Work::DeleteData(target));
            }
        }
        Vec::new()
    }

    /// Why a write touching `keys` must wait, if it must: another write runs, or a run
    /// uses one of them (TUI-16, TUI-19).
    fn write_refused<'k>(&self, mut keys: impl Iterator<Item = &'k str>) -> Option<String> {
        if self.config.saving {
            return Some("a change to overbrainer.toml is being written; try again".into());
        }
        keys.find_map(|key| {
            self.project
                .used_by(key)
                .map(|user| format!("`{key}` is used by {user}; it can change once that ends"))
        })
    }

    fn edit_config(&mut self, changes: Vec<crate::config::edit::Change>) -> Vec<Work> {
        self.sync_used();
        let changes = self.with_volume_center(changes);
        if let Some(why) = self
            .write_refused(changes.iter().map(crate::config::edit::Change::key))
            .or_else(|| self.volume_refusal(&changes))
        {
            self.project.saved(Some(why.clone()));
            self.say(false, why);
            return Vec::new();
        }
        self.config.saving = true;
        vec![Work::SaveConfig {
            changes,
            generation: self.config.generation,
        }]
    }

    /// `E`: refused while a write runs or a training run starts or is followed (TUI-18);
    /// the undo point is forgotten.
    fn edit_file(&mut self) -> Vec<Work> {
        let why = if self.config.saving {
            Some("a change to overbrainer.toml is being written".to_owned())
        } else if let Some(running) = &self.stages {
            Some(format!("`{}` runs", running.chain.name()))
        } else if self.data_writes > 0 {
            Some("a dataset edit is being written".to_owned())
        } else if self.training.starting {
            Some("a training run is starting".to_owned())
        } else {
            self.training
                .followed
                .iter()
                .next()
                .map(|id| format!("run {id} is followed"))
        };
        if let Some(why) = why {
            self.say(false, format!("`E` must wait: {why}"));
            return Vec::new();
        }
        self.config.undo = None;
        vec![Work::EditFile]
    }

    fn undo_config(&mut self) -> Vec<Work> {
        self.sync_used();
        let Some(point) = self.config.undo.clone() else {
            self.say(
                false,
                "nothing to undo: the TUI wrote no change since overbrainer.toml was read".into(),
            );
            return Vec::new();
        };
        if let Some(why) = self.write_refused(point.keys.iter().map(String::as_str)) {
            self.say(false, format!("not undone: {why}"));
            return Vec::new();
        }
        self.config.saving = true;
        vec![Work::UndoConfig(point)]
    }

    /// A write or re-read of the configuration ended (TUI-13..TUI-20).
    fn on_config(&mut self, news: ConfigNews) -> Vec<Work> {
        let confirm = match &news {
            ConfigNews::Written { .. } => Some((true, None)),
            ConfigNews::Refused { error, .. } => Some((false, Some(error.clone()))),
            ConfigNews::Reread(_) | ConfigNews::Invalid { .. } => None,
        };
        self.config_news(news);
        self.settle_quit();
        match confirm {
            Some((written, why)) => self.confirm_saved(written, why.as_deref()),
            None => self.refresh_confirm(),
        }
    }

    fn config_news(&mut self, news: ConfigNews) {
        let show = |app: &mut Self, shown: super::config_write::Shown| {
            app.config.generation = shown.generation;
            app.project.set_entries(shown.entries);
            app.training.start = shown.start;
            app.project.problems.clear();
        };
        match news {
            ConfigNews::Written { shown, undo, said } => {
                self.config.saving = false;
                show(self, *shown);
                self.project.saved(None);
                self.config.undo = undo;
                self.say(true, said);
            }
            ConfigNews::Refused {
                error,
                reread,
                invalid,
            } => {
                self.config.saving = false;
                if let Some(shown) = reread {
                    show(self, *shown);
                    self.config.undo = None;
                }
                if !invalid.is_empty() {
                    // The file changed on disk and is not valid: its fields are marked.
                    self.project.problems = invalid.into_iter().collect();
                }
                if self.project.form.is_some() || self.project.adding.is_some() {
                    self.project.saved(Some(error));
                } else {
                    self.say(false, error);
                }
            }
            ConfigNews::Reread(shown) => {
                show(self, *shown);
                // A reload forgets the undo point (TUI-17).
                self.config.undo = None;
                self.say(
                    true,
                    "overbrainer.toml or .env changed on disk: read again".into(),
                );
            }
            ConfigNews::Invalid { problems } => {
                let first = problems
                    .first()
                    .map(|(key, message)| format!("`{key}`: {message}"))
                    .unwrap_or_default();
                self.project.problems = problems.into_iter().collect();
                self.say(
                    false,
                    format!(
                        "overbrainer.toml or .env changed on disk and is not valid ({first}); \
                         the configuration shown stays in use"
                    ),
                );
            }
        }
    }

    fn say(&mut self, ok: bool, text: String) {
        self.message = Some(Message { ok, text });
    }

    /// Takes in a captured log line.
    pub fn log(&mut self, level: Level, text: String) {
        self.logs.push(level, text);
    }

    /// Takes in a flow event; returns the work it starts.
    pub fn on_flow(&mut self, event: FlowEvent) -> Vec<Work> {
        let before = self.appearance();
        let work = self.flow_work(event);
        self.note_appearance(&before);
        self.sync_used();
        self.project.hint = self.hint().map(str::to_owned);
        work
    }

    fn flow_work(&mut self, event: FlowEvent) -> Vec<Work> {
        match event {
            FlowEvent::Config(news) => self.on_config(news),
            FlowEvent::Runpod { ask, read } => self.on_runpod(ask, read),
            FlowEvent::Stage { task, news } => self.on_stage(task, &news),
            FlowEvent::DataWritten => {
                self.data_writes = self.data_writes.saturating_sub(1);
                self.settle_quit();
                Vec::new()
            }
            FlowEvent::Log(level, text) => {
                self.logs.push(level, text);
                Vec::new()
            }
            FlowEvent::PodLog { run, lines } => {
                self.logs.set_pod_lines(&run, lines);
                Vec::new()
            }
            FlowEvent::Said { ok, text } => {
                self.say(ok, text);
                Vec::new()
            }
            FlowEvent::Spend(spend) => {
                self.spend = Some(spend);
                Vec::new()
            }
            FlowEvent::Ledger(summary) => {
                self.project.spend = Some(*summary);
                Vec::new()
            }
            FlowEvent::Dataset(listing) => {
                self.project.dataset = Some(super::views::project::Counts::of(&listing));
                self.pipeline.set_listing(listing.clone());
                self.dataset.set_listing(listing);
                Vec::new()
            }
            FlowEvent::Compares(compares) => {
                self.compare.set_compares(compares);
                Vec::new()
            }
            FlowEvent::Runs(runs) => {
                let mut states = BTreeMap::new();
                for run in &runs {
                    *states.entry(run.state.name()).or_insert(0) += 1;
                }
                self.project.runs_by_state = Some(states);
                self.training.set_runs(runs);
                Vec::new()
            }
            FlowEvent::Run { task, event } => self.on_run_event(task, &event),
            FlowEvent::Ended { task, end } => self.on_end(task, end),
        }
    }

    fn on_run_event(&mut self, task: u64, event: &crate::runs::RunEvent) -> Vec<Work> {
        use crate::runs::RunEvent;
        let Some(entry) = self.tasks.get_mut(&task) else {
            return Vec::new();
        };
        if let RunEvent::Following { run_id, .. } = event {
            let fresh = entry.kind == Kind::Train;
            // A resume's task named the stopped run; from here on it is the new run's.
            entry.run = Some(run_id.clone());
            entry.following = true;
            self.training.followed.insert(run_id.clone());
            if fresh {
                self.training.starting = false;
                self.training.live.remove(run_id);
            }
            self.training.select(run_id);
            return vec![Work::ReadRuns];
        }
        entry.following |= matches!(event, RunEvent::Following { .. });
        if let (true, Some(id)) = (entry.following, entry.run.clone()) {
            self.training.apply(&id, event);
        }
        // The run went `pending` or `running` (issue 33): `run.json` says so already.
        if matches!(event, RunEvent::Pending(_) | RunEvent::Started) {
            return vec![Work::ReadRuns];
        }
        Vec::new()
    }

    fn on_end(&mut self, task: u64, end: TaskEnd) -> Vec<Work> {
        let Some(ended) = self.tasks.remove(&task) else {
            return Vec::new();
        };
        if ended.kind == Kind::Train {
            self.training.starting = false;
        }
        let mut work = vec![Work::ReadRuns];
        if let Some(id) = &ended.run {
            // A stop follows its run to the end too; either way no task follows it now.
            self.training.followed.remove(id);
            if matches!(ended.kind, Kind::Stop | Kind::Cancel) {
                self.training.busy.remove(id);
            }
        }
        let auto = self.auto_train == Some(task);
        if auto {
            self.auto_train = None;
        }
        match end {
            TaskEnd::Ended(record) if auto && record.state == crate::runs::State::Succeeded => {
                let output = format!("runs/{}/output", record.id);
                let merged = if record.merge {
                    format!(" (merged model in {output}/merged)")
                } else {
                    String::new()
                };
                self.say(
                    true,
                    format!(
                        "auto: run {} succeeded; its output is in {output}{merged}",
                        record.id
                    ),
                );
            }
            TaskEnd::Ended(record) => self.say(
                !matches!(
                    record.state,
                    crate::runs::State::Failed
                        | crate::runs::State::MergeFailed
                        | crate::runs::State::Cancelled
                ),
                ended_text(&record),
            ),
            TaskEnd::Detached(record) => {
                if self.quitting {
                    self.detached.push(record.id.clone());
                } else if let Some(kind) = self.after_detach.remove(&record.id) {
                    work.push(self.task(kind, Some(record.id.clone())));
                } else {
                    self.say(
                        true,
                        format!("detached from run {}; `a` follows it again", record.id),
                    );
                }
            }
            TaskEnd::Failed(error) => {
                if let Some(id) = &ended.run {
                    self.training.busy.remove(id);
                    self.after_detach.remove(id);
                }
                self.say(false, format!("{}: {error}", ended.kind.label()));
            }
        }
        self.settle_quit();
        work
    }

    /// The labels of the running work, for the footer.
    fn work_labels(&self) -> Vec<String> {
        let stage =
            self.stages
                .as_ref()
                .map(|running| match (running.chain, self.pipeline.current()) {
                    (Chain::One(stage), _) => stage.name().to_owned(),
                    (chain, Some(stage)) => format!("{}: {}", chain.name(), stage.name()),
                    (chain, None) => chain.name().to_owned(),
                });
        stage
            .into_iter()
            .chain(self.tasks.values().map(|t| match &t.run {
                Some(run) => format!("{} {run}", t.kind.label()),
                None => t.kind.label().to_owned(),
            }))
            .chain(self.reading_runpod().then(|| "Runpod catalog".to_owned()))
            .collect()
    }

    /// Draws the whole screen.
    pub fn render(&self, frame: &mut Frame<'_>) {
        let area = frame.area();
        self.draw(area, frame.buffer_mut());
    }

    /// Draws the whole screen into `buf`.
    pub fn draw(&self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        buf.set_style(area, t.base());
        if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
            Paragraph::new(vec![
                Line::styled("The terminal is too small.", t.warn()),
                Line::raw(format!(
                    "overbrainer tui needs at least {}x{}; this one is {}x{}.",
                    MIN_SIZE.0, MIN_SIZE.1, area.width, area.height
                )),
                Line::raw("Enlarge it, or press q to quit."),
            ])
            .wrap(Wrap { trim: true })
            .render(area, buf);
            return;
        }
        let keys: &[(&str, &str)] = if self.picker.is_some() {
            &[("Enter", "keep"), ("Esc", "cancel")]
        } else if self.confirm.is_some() {
            &[("y", "yes"), ("g c", "pick"), ("n Esc Enter", "no")]
        } else if self.menu.is_some() {
            &[("j/k", "move"), ("Enter", "run"), ("Esc", "close")]
        } else if self.dialog.is_some() {
            &[("y", "yes"), ("n Esc Enter", "no")]
        } else if self.help {
            &[("Esc ? q", "close")]
        } else {
            self.view().keys()
        };
        let shown_footer = Footer {
            keys,
            message: self.message.as_ref(),
            work: self.work_labels(),
            spend: self.spend,
            covered: self.dialog.is_some()
                || self.help
                || self.menu.is_some()
                || self.picker.is_some()
                || self.confirm.is_some(),
            spinner: t.spinner(self.spinner),
            locked: self.data_locked().is_some() && !self.quitting,
        };
        // A long message takes up to six rows, read whole.
        let [tabs, body, footer] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(shown_footer.rows(area.width)),
        ])
        .areas(area);
        let titles: Vec<Line<'_>> = [
            self.project.title(),
            self.dataset.title(),
            self.pipeline.title(),
            self.training.title(),
            self.logs.title(),
            self.compare.title(),
        ]
        .iter()
        .enumerate()
        .map(|(i, title)| Line::raw(format!("{} {title}", i + 1)))
        .collect();
        Tabs::new(titles)
            .select(self.tab)
            .highlight_style(t.title().patch(t.selected()))
            .divider(Span::raw("│"))
            .render(tabs, buf);
        match self.tab {
            0 => self.project.render(body, buf),
            1 => self.dataset.render(body, buf),
            2 => self.pipeline.render(body, buf),
            3 => self.training.render(body, buf),
            4 => self.logs.render(body, buf),
            _ => self.compare.render(body, buf),
        }
        shown_footer.render(footer, buf, t);
        let under = self
            .fade
            .filter(|f| f.appearing == super::motion::Appearing::Overlay)
            .map(|_| buf.clone());
        if let Some(at) = self.menu {
            super::components::menu::render(&MENU.map(Chain::name), at, body, buf, t);
        }
        if let Some(dialog) = &self.dialog {
            dialog.render(body, buf, t);
        }
        if let Some(confirm) = &self.confirm {
            confirm.render(body, buf, t);
        }
        if let Some(picker) = &self.picker {
            picker.render(body, buf, t);
        }
        if self.help {
            self.draw_help(body, buf);
        }
        self.draw_fade(buf, (body, footer), under.as_ref());
    }

    /// The `?` overlay: the keys of the picker or the start confirmation it covers, else
    /// the view's and every view's (TUI-5).
    fn draw_help(&self, body: Rect, buf: &mut Buffer) {
        let t = self.theme;
        if let Some(picker) = &self.picker {
            help::render(("picker", false), &picker.keys(), body, buf, t);
        } else if self.confirm.is_some() {
            let keys = super::start_confirm::KEYS;
            help::render(("start confirmation", false), keys, body, buf, t);
        } else if self.menu.is_some() {
            let keys = [("j/k", "move"), ("Enter", "run it"), ("Esc", "close")];
            help::render(("menu", false), &keys, body, buf, t);
        } else if self.dialog.is_some() {
            let keys = [("y", "yes, do it"), ("n Esc Enter", "no: nothing is done")];
            help::render(("question", false), &keys, body, buf, t);
        } else {
            let view = (self.view().title(), true);
            help::render(view, self.view().keys(), body, buf, t);
        }
    }
}

/// The app's own keys, taken in every view (TUI-5).
fn global_action(key: KeyEvent) -> Option<Action> {
    match key.code {
        KeyCode::Char('q') => Some(Action::Quit),
        KeyCode::Char('?') => Some(Action::Help),
        KeyCode::Char('R') => Some(Action::Reload),
        KeyCode::Char('r') => Some(Action::Menu),
        KeyCode::Tab => Some(Action::NextView),
        KeyCode::BackTab => Some(Action::PrevView),
        KeyCode::Char(c @ '1'..='6') => Some(Action::View(usize::from(c as u8 - b'1'))),
        _ => None,
    }
}

/// The status line of a run's end.
#[must_use]
pub fn ended_text(record: &RunRecord) -> String {
    let step = record
        .last_step
        .map_or_else(|| "?".into(), |s| s.to_string());
    match (&record.snapshot, record.state) {
        (Some(snapshot), crate::runs::State::Stopped) => format!(
            "run {} stopped at step {}; `T` resumes it",
            record.id, snapshot.step
        ),
        _ => format!("run {} {} at step {step}", record.id, record.state.name()),
    }
}

//! The flows the TUI starts, each a spawned task through the same library calls the
//! command line uses (`runs::train::train`, `runs::control::{attach, stop, cancel}`): its
//! run events are pumped onto the loop's one channel, tagged with the task, and its end
//! follows them. Reading `runs/` and writing a log export run on the blocking pool. Nothing here waits in the
//! event loop.

use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;
use tracing::Level;

use super::app::{Kind, Work};
use super::event::{FlowEvent, TaskEnd};
use crate::config::{EnvSnapshot, Provenance, Settings};
use crate::pipeline::pump::pump;
use crate::project::Project;
use crate::runs::control::{CancelOutcome, StopOutcome};
use crate::runs::start::StartOptions;
use crate::runs::{Outcome, RunError, RunEvent, RunWarning};

/// What the flows run on: the project (whose lock the TUI holds) and its configuration.
#[derive(Debug)]
pub struct FlowContext {
    /// The project.
    pub project: Project,
    /// Its configuration, as loaded at start.
    pub settings: Settings,
    /// Where each setting came from.
    pub provenance: Provenance,
    /// The environment with `.env`'s names added, for the runs.
    pub env: EnvSnapshot,
    /// The process environment alone, which the configuration is loaded against.
    pub process_env: EnvSnapshot,
    /// The text of `overbrainer.toml` that `settings` was loaded from.
    pub text: String,
    /// The text of `.env` when `settings` was loaded (empty without one).
    pub dotenv: String,
}

/// What a task's life looks like to an observer (the Prometheus endpoint, MET-3).
#[derive(Debug)]
pub enum Observed<'a> {
    /// Task `0` began.
    Began(u64),
    /// Task `0` reported an event.
    Event(u64, &'a RunEvent),
    /// Task `0` ended.
    Ended(u64),
}

/// What the front end lends the flows: how a warning reads (as the command line words
/// it) and an observer of every task.
#[derive(Clone)]
pub struct Hooks {
    /// A warning, in words.
    pub warning_text: fn(&RunWarning) -> String,
    /// Sees every task's life.
    pub observe: Arc<dyn Fn(Observed<'_>) + Send + Sync>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hooks")
    }
}

/// Spawns [`Work`].
#[derive(Debug, Clone)]
pub struct Flows {
    config: Arc<super::config_write::Current>,
    hooks: Hooks,
    sender: UnboundedSender<FlowEvent>,
    /// Held by a dataset write (deletion and split) while it runs: writes run one at a
    /// time, so two quick deletions never interleave their read-modify-write of a file.
    data_write: Arc<std::sync::Mutex<()>>,
}

impl Flows {
    /// Flows on `context`, reporting on `sender`.
    #[must_use]
    pub fn new(context: FlowContext, hooks: Hooks, sender: UnboundedSender<FlowEvent>) -> Self {
        Self {
            config: Arc::new(super::config_write::Current::new(context)),
            hooks,
            sender,
            data_write: Arc::default(),
        }
    }

    /// The configured topics' names, for the orphaned marker (TUI-31).
    fn topics(&self) -> Vec<String> {
        self.config
            .get()
            .settings
            .topics
            .iter()
            .map(|t| t.name.clone())
            .collect()
    }

    /// Deletes `target` and splits again on the blocking pool, then reads `data/` again
    /// (TUI-34, TUI-35).
    fn spawn_delete(&self, target: crate::dataset::delete::Target) {
        self.spawn_data_write(move |context| {
            super::dataset_delete::delete_then_split(
                context.project.root(),
                &context.settings,
                &context.env,
                &target,
            )
        });
    }

    /// Applies an edited dataset item and splits again on the blocking pool, then reads
    /// `data/` again (TUI-33, TUI-35).
    fn spawn_data_edit(&self, edit: super::dataset_edit::DataEdit, path: std::path::PathBuf) {
        self.spawn_data_write(move |context| {
            super::dataset_edit::apply(
                context.project.root(),
                &context.settings,
                &context.env,
                &edit,
                &path,
            )
        });
    }

    /// Runs a dataset write (`write` gives the status line and warnings, or why it
    /// failed) on the blocking pool, one at a time, then frees the data lock, says how it
    /// went and reads `data/` again.
    fn spawn_data_write(
        &self,
        write: impl FnOnce(&FlowContext) -> Result<(String, Vec<String>), String> + Send + 'static,
    ) {
        let context = self.config.get();
        let topics = self.topics();
        let sender = self.sender.clone();
        let data_write = Arc::clone(&self.data_write);
        tokio::task::spawn_blocking(move || {
            // A poisoned lock only means an earlier write panicked; the files are whole
            // (each replaced atomically), so this one goes ahead.
            let _writing = data_write
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let said = match write(&context) {
                Ok((text, warnings)) => {
                    for warning in warnings {
                        let _ = sender.send(FlowEvent::Log(Level::WARN, warning));
                    }
                    FlowEvent::Said { ok: true, text }
                }
                Err(text) => FlowEvent::Said { ok: false, text },
            };
            let _ = sender.send(FlowEvent::DataWritten);
            let _ = sender.send(said);
            let data = crate::dataset::DataFiles::new(&context.project.data_dir());
            let _ = sender.send(FlowEvent::Dataset(crate::dataset::listing::list(
                &data, &topics,
            )));
        });
    }

    /// The configuration the flows use, for the editor hand-off (TUI-18).
    #[must_use]
    pub fn config(&self) -> Arc<super::config_write::Current> {
        Arc::clone(&self.config)
    }

    /// How long an editor that outlives the TUI has after SIGTERM before SIGKILL
    /// (TUI-68): 2 s, on the test time factor.
    #[must_use]
    pub fn editor_grace(&self) -> std::time::Duration {
        crate::env::TimeScale::from_env(&self.config.get().env)
            .scale(std::time::Duration::from_secs(2))
    }

    /// Writes or re-reads `overbrainer.toml` on the blocking pool (TUI-13..TUI-20).
    fn spawn_config(&self, work: Work) {
        let config = Arc::clone(&self.config);
        let sender = self.sender.clone();
        tokio::task::spawn_blocking(move || {
            let news = match work {
                Work::SaveConfig {
                    changes,
                    generation,
                } => Some(config.save(&changes, generation)),
                Work::UndoConfig(point) => Some(config.undo(&point)),
                _ => config.reread(),
            };
            if let Some(news) = news {
                let _ = sender.send(FlowEvent::Config(news));
            }
        });
    }

    /// Reads the kept pod log of run `run` on the blocking pool (TUI-57).
    fn spawn_read_pod_log(&self, run: String) {
        let dir = self.config.get().project.run_dir(&run);
        let sender = self.sender.clone();
        tokio::task::spawn_blocking(move || {
            let options = crate::runpod::logs::show::ShowOptions {
                tail: Some(super::views::logs::RETAINED),
                ..Default::default()
            };
            let lines =
                crate::runpod::logs::show::kept(&dir, &options, &crate::llm::Redactor::new())
                    .map(|(lines, _)| lines)
                    .map_err(|error| error.to_string());
            let _ = sender.send(FlowEvent::PodLog { run, lines });
        });
    }

    /// Reads `data/` on the blocking pool (TUI-31).
    fn spawn_read_dataset(&self) {
        let data = crate::dataset::DataFiles::new(&self.config.get().project.data_dir());
        let topics = self.topics();
        let sender = self.sender.clone();
        tokio::task::spawn_blocking(move || {
            let _ = sender.send(FlowEvent::Dataset(crate::dataset::listing::list(
                &data, &topics,
            )));
        });
    }

    /// Reads a Runpod listing with the configuration in use (TUI-21..TUI-23, TUI-43).
    fn spawn_read_runpod(&self, ask: super::app::RunpodAsk) {
        let context = self.config.get();
        let sender = self.sender.clone();
        tokio::spawn(async move {
            let read = crate::runs::pod::preview::read(
                &context.settings,
                &context.env,
                ask.listing.clone(),
            )
            .await;
            let _ = sender.send(FlowEvent::Runpod { ask, read });
        });
    }

    /// Writes `lines` to a new `.overbrainer/<prefix>-<time>.log` on the blocking pool
    /// (TUI-56, TUI-57).
    fn spawn_export(&self, prefix: String, lines: Vec<String>) {
        let dir = self.config.get().project.state_dir();
        let sender = self.sender.clone();
        tokio::task::spawn_blocking(move || {
            let stamp = jiff::Timestamp::now()
                .strftime("%Y%m%dT%H%M%SZ")
                .to_string();
            let path = dir.join(format!("{prefix}-{stamp}.log"));
            let said = match export_logs(&path, &lines) {
                Ok(()) => FlowEvent::Said {
                    ok: true,
                    text: format!("{} lines written to {}", lines.len(), path.display()),
                },
                Err(error) => FlowEvent::Said {
                    ok: false,
                    text: format!(
                        "no log file written: cannot create `{}`: {error}",
                        path.display()
                    ),
                },
            };
            let _ = sender.send(said);
        });
    }

    /// Runs a stage chain; one that panics still ends, so the TUI can quit and start
    /// another.
    fn spawn_chain(
        &self,
        task: u64,
        chain: super::stages::Chain,
        cancel: tokio_util::sync::CancellationToken,
    ) {
        let chain = tokio::spawn(super::stages::run_chain(
            Arc::clone(&self.config),
            chain,
            task,
            self.sender.clone(),
            cancel,
        ));
        let sender = self.sender.clone();
        tokio::spawn(async move {
            if let Err(error) = chain.await {
                let _ = sender.send(FlowEvent::Log(
                    Level::ERROR,
                    format!("the stage chain stopped: {error}"),
                ));
                let _ = sender.send(FlowEvent::Stage {
                    task,
                    news: super::stages::StageNews::Finished { ok: false },
                });
            }
        });
    }

    /// Starts `work` in the background.
    pub fn spawn(&self, work: Work) {
        match work {
            Work::ReadRuns => {
                let context = self.config.get();
                let dir = context.project.runs_dir();
                let root = context.project.root().to_path_buf();
                let budget = context.settings.budget.clone();
                let data = crate::dataset::DataFiles::new(&context.project.data_dir());
                let topics = self.topics();
                let sender = self.sender.clone();
                tokio::task::spawn_blocking(move || {
                    let _ = sender.send(FlowEvent::Dataset(crate::dataset::listing::list(
                        &data, &topics,
                    )));
                    let (runs, warnings) = crate::runs::record::list(&dir);
                    for warning in warnings {
                        let _ = sender.send(FlowEvent::Log(Level::WARN, warning));
                    }
                    let _ = sender.send(FlowEvent::Runs(runs));
                    let (compares, warnings) = crate::compare::listing::list(&dir);
                    for warning in warnings {
                        let _ = sender.send(FlowEvent::Log(Level::WARN, warning));
                    }
                    let _ = sender.send(FlowEvent::Compares(compares));
                    send_spend(&sender, &root, &budget);
                });
            }
            Work::ReadDataset => self.spawn_read_dataset(),
            Work::DeleteData(target) => self.spawn_delete(target),
            work @ (Work::SaveConfig { .. } | Work::UndoConfig(_) | Work::RereadConfig) => {
                self.spawn_config(work);
            }
            // The event loop hands the terminal over itself.
            Work::EditFile | Work::EditData(_) => {}
            Work::ApplyDataEdit { edit, path } => self.spawn_data_edit(edit, path),
            Work::Stages {
                task,
                chain,
                cancel,
            } => self.spawn_chain(task, chain, cancel),
            Work::ExportLogs(lines) => self.spawn_export("logs".to_owned(), lines),
            Work::ExportPodLog { run, lines } => {
                self.spawn_export(format!("logs-pod-{run}"), lines);
            }
            Work::ReadPodLog(run) => self.spawn_read_pod_log(run),
            Work::ReadRunpod(ask) => self.spawn_read_runpod(ask),
            Work::Task {
                task,
                kind,
                run,
                cancel,
                vram_estimate,
            } => {
                let context = self.config.get();
                let hooks = self.hooks.clone();
                let sender = self.sender.clone();
                tokio::spawn(async move {
                    (hooks.observe)(Observed::Began(task));
                    let (events, mut receiver) = unbounded_channel();
                    let flow = Box::pin(run_task(
                        &context,
                        (kind, run, vram_estimate),
                        &events,
                        &cancel,
                    ));
                    let end = pump(&mut receiver, flow, |event| {
                        (hooks.observe)(Observed::Event(task, &event));
                        let message = match event {
                            RunEvent::JobLog(line) => {
                                tracing::debug!(target: "overbrainer::job", "{line}");
                                return;
                            }
                            RunEvent::Warning(warning) => {
                                FlowEvent::Log(Level::WARN, (hooks.warning_text)(&warning))
                            }
                            RunEvent::Upload(summary) => FlowEvent::Log(
                                Level::INFO,
                                format!("uploading the base model: {summary}"),
                            ),
                            event => FlowEvent::Run {
                                task,
                                event: Box::new(event),
                            },
                        };
                        let _ = sender.send(message);
                    })
                    .await;
                    (hooks.observe)(Observed::Ended(task));
                    let end = match end {
                        Ok(end) => end,
                        Err(error) => TaskEnd::Failed(crate::runs::start::error_chain(&error)),
                    };
                    let _ = sender.send(FlowEvent::Ended { task, end });
                });
            }
        }
    }
}

/// Writes `lines` into a new file at `path`; an existing file is never replaced (TUI-56).
fn export_logs(path: &std::path::Path, lines: &[String]) -> std::io::Result<()> {
    use std::io::Write as _;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    let mut text = lines.join("\n");
    text.push('\n');
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

fn outcome(outcome: Outcome) -> TaskEnd {
    match outcome {
        Outcome::Ended(record) => TaskEnd::Ended(record),
        Outcome::Detached { record, .. } => TaskEnd::Detached(record),
    }
}

async fn run_task(
    context: &FlowContext,
    (kind, run, vram_estimate): (Kind, Option<String>, Option<f64>),
    events: &crate::runs::Events,
    cancel: &CancellationToken,
) -> Result<TaskEnd, RunError> {
    let FlowContext {
        project,
        settings,
        provenance,
        env,
        ..
    } = context;
    let id = run.clone().unwrap_or_default();
    match kind {
        Kind::Train => {
            let options = StartOptions {
                target: None,
                resume_from: run,
                keep_pod: false,
                over_budget: false,
                vram_estimate,
            };
            let ended = crate::runs::train::train(
                project, settings, provenance, env, &options, events, cancel,
            )
            .await?;
            Ok(outcome(ended))
        }
        Kind::Attach => Ok(outcome(
            crate::runs::control::attach(project, settings, env, &id, events, cancel).await?,
        )),
        Kind::Stop => {
            match crate::runs::control::stop(project, settings, env, &id, false, events, cancel)
                .await?
            {
                StopOutcome::Followed(ended) => Ok(outcome(ended)),
                StopOutcome::RequestOnly { record, .. } => Ok(TaskEnd::Ended(record)),
            }
        }
        Kind::Cancel => Ok(
            match crate::runs::control::cancel(project, settings, env, &id, events).await? {
                CancelOutcome::Cancelled { record, .. }
                | CancelOutcome::OnTarget { record, .. }
                | CancelOutcome::AlreadyEnded { record, .. }
                | CancelOutcome::MergeCancelled { record, .. } => TaskEnd::Ended(record),
            },
        ),
    }
}

/// Sends the project's spend from its ledger against `budget` for the footer, each
/// skipped (torn) ledger line as a warning, or a warning naming the ledger when it cannot
/// be read.
fn send_spend(
    sender: &UnboundedSender<FlowEvent>,
    root: &std::path::Path,
    budget: &crate::config::Budget,
) {
    match crate::budget::report(root, budget) {
        Ok((report, skipped)) => {
            for line in skipped {
                let _ = sender.send(FlowEvent::Log(Level::WARN, line.to_string()));
            }
            let _ = sender.send(FlowEvent::Ledger(Box::new(report.summary.clone())));
            let _ = sender.send(FlowEvent::Spend(super::components::footer::SpendShown {
                total: report.summary.total,
                max_usd: report.max_usd,
                warn_at: report.warn_at,
            }));
        }
        Err(error) => {
            let _ = sender.send(FlowEvent::Log(Level::WARN, error.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_export_creates_its_file_and_never_replaces_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".overbrainer/logs-20260101T000000Z.log");
        export_logs(&path, &[" WARN first".into(), " INFO second".into()]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            " WARN first\n INFO second\n"
        );
        let again = export_logs(&path, &["other".into()]).unwrap_err();
        assert_eq!(again.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            " WARN first\n INFO second\n"
        );
    }
}

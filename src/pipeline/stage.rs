//! What every stage shares: its [`Context`] (settings, project paths, key resolution,
//! prices, the event channel, cancellation), its typed [`Event`]s, the running
//! [`Progress`], the [`StageReport`] it returns, and the [`StageError`]s that stop it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::config::{Protocol, Role, Settings};
use crate::dataset::DataFiles;
use crate::dataset::jsonl::{JsonlError, SkippedLine};
use crate::history::{Detail, HistoryLine, Status};
use crate::llm::retry::RetryPolicy;
use crate::llm::{self, Client, Usage};
use crate::pricing::{Cost, PriceBook};
use crate::secrets::{Resolver, SecretError};

use super::templates::TemplateError;

/// The four dataset stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// `subtopics`.
    Subtopics,
    /// `questions`.
    Questions,
    /// `answers`.
    Answers,
    /// `split`.
    Split,
}

impl Stage {
    /// The command and history name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Subtopics => "subtopics",
            Self::Questions => "questions",
            Self::Answers => "answers",
            Self::Split => "split",
        }
    }
}

/// Everything a stage runs with. A stage keeps the settings it started with (RLD-4).
#[derive(Clone)]
pub struct Context {
    /// The effective settings.
    pub settings: Arc<Settings>,
    /// The project directory (holds `overbrainer.toml`, `data/`, `prompts/`,
    /// `.overbrainer/`).
    pub root: PathBuf,
    /// Resolves provider keys (literal or `vault:`), lazily, once per process (SEC-3).
    pub secrets: Arc<Resolver>,
    /// Prices, read once per provider per command.
    pub prices: PriceBook,
    /// Where the stage sends its events.
    pub events: UnboundedSender<Event>,
    /// Cancelled on Ctrl-C: the stage stops, keeps what it has and reports `interrupted`.
    pub cancel: CancellationToken,
    /// How long one second of a retry wait lasts: 1 s in the product (PRV-11); the test
    /// suite shrinks it (`OVERBRAINER_TEST_BACKOFF_MS`) so real waits pass quickly.
    pub backoff_base: Duration,
    /// The secrets resolved so far (every client's key joins it), removed from every
    /// server text before it is stored or shown (SEC-5).
    pub redactor: llm::Redactor,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl Context {
    /// The dataset files.
    #[must_use]
    pub fn data(&self) -> DataFiles {
        DataFiles::new(&self.root.join("data"))
    }

    /// `prompts/`.
    #[must_use]
    pub fn prompts(&self) -> PathBuf {
        self.root.join("prompts")
    }

    /// `.overbrainer/history.jsonl`.
    #[must_use]
    pub fn history_path(&self) -> PathBuf {
        self.root.join(".overbrainer").join("history.jsonl")
    }

    /// Sends an event; a closed channel (the front end went away) is ignored.
    pub fn emit(&self, event: Event) {
        let _ = self.events.send(event);
    }

    /// Warns about lines skipped while reading a file (LAY-3).
    pub fn warn_skipped(&self, skipped: &[SkippedLine]) {
        for line in skipped {
            self.emit(Event::Warning(line.to_string()));
        }
    }

    /// Checks that `topic` (from `--topic`) is configured (PIPE-2).
    ///
    /// # Errors
    ///
    /// [`StageError::UnknownTopic`] when it is not, with the configured names.
    pub fn check_topic(&self, topic: Option<&str>) -> Result<(), StageError> {
        match topic {
            Some(name) if !self.settings.topics.iter().any(|t| t.name == name) => {
                Err(StageError::UnknownTopic {
                    name: name.to_owned(),
                    known: self
                        .settings
                        .topics
                        .iter()
                        .map(|t| t.name.clone())
                        .collect(),
                })
            }
            _ => Ok(()),
        }
    }

    /// The client and settings of role `name` (`generator`, `parent`, `embedder`).
    ///
    /// # Errors
    ///
    /// [`StageError`] when the role is missing (CFG-7), its provider is not declared, has
    /// no `base_url` (CFG-5), or its key cannot be resolved.
    pub async fn role_client(
        &self,
        name: &'static str,
        role: Option<&Role>,
    ) -> Result<RoleClient, StageError> {
        let role = role.ok_or(StageError::MissingRole(name))?.clone();
        let provider = self.settings.providers.get(&role.provider).ok_or_else(|| {
            StageError::UnknownProvider {
                role: name,
                provider: role.provider.clone(),
            }
        })?;
        let base_url = provider
            .base_url
            .as_deref()
            .filter(|url| !url.is_empty())
            .ok_or_else(|| StageError::MissingBaseUrl {
                variable: format!(
                    "OVERBRAINER_PROVIDERS__{}__BASE_URL",
                    role.provider.to_uppercase()
                ),
            })?;
        let key = match provider.api_key.as_ref() {
            None => None,
            Some(reference) => {
                let what = format!("providers.{}.api_key", role.provider);
                Some(
                    self.secrets
                        .resolve(&what, reference)
                        .await
                        .map_err(|error| StageError::Secret(Box::new(error)))?,
                )
            }
        };
        let policy = RetryPolicy {
            max_wait: Duration::from_secs(self.settings.pipeline.max_retry_wait_secs),
            second: self.backoff_base,
            ..RetryPolicy::new(self.settings.pipeline.max_retries)
        };
        let timeout = Duration::from_secs(self.settings.pipeline.request_timeout_secs);
        let endpoint = llm::Endpoint {
            name: &role.provider,
            protocol: provider.protocol,
            base_url,
            key,
        };
        let client = Client::new(endpoint, timeout, policy, self.redactor.clone())
            .map_err(StageError::Client)?;
        Ok(RoleClient {
            client: Arc::new(client),
            provider: role.provider.clone(),
            protocol: provider.protocol,
            role,
        })
    }
}

/// A role's model settings with a client for its provider.
#[derive(Debug, Clone)]
pub struct RoleClient {
    /// The client.
    pub client: Arc<Client>,
    /// The provider's name.
    pub provider: String,
    /// The provider's protocol.
    pub protocol: Protocol,
    /// The role's settings.
    pub role: Role,
}

impl RoleClient {
    /// The model's price, read once per provider per command; `None` when unknown.
    pub async fn price(&self, prices: &PriceBook) -> Option<crate::pricing::Price> {
        prices
            .price(&self.provider, &self.client, &self.role.model)
            .await
    }
}

/// What a stage reports while it runs. Only front ends render events.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The stage starts: `total` items to do, `skipped` already on disk.
    Started {
        /// The stage.
        stage: Stage,
        /// Items to do.
        total: u64,
        /// Items already complete.
        skipped: u64,
    },
    /// The counters changed.
    Progress {
        /// The stage.
        stage: Stage,
        /// The counters now.
        progress: Progress,
    },
    /// A warning for the user (skipped lines, hidden reasoning, …).
    Warning(String),
    /// A request waits [`SHOWN_WAIT`] or longer before its retry (shown at the default log
    /// level, so a long rate limit never looks like a hang).
    Waiting {
        /// The stage.
        stage: Stage,
        /// The item whose request waits.
        item: String,
        /// The wait, as the server or the backoff set it.
        wait: Duration,
        /// The failure that is retried.
        reason: String,
    },
    /// An item failed after its retries; sent exactly once per item (PIPE-14).
    ItemFailed {
        /// The stage.
        stage: Stage,
        /// The item (topic, subtopic or question ID).
        item: String,
        /// Why.
        reason: String,
    },
}

/// A stage's running counters.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Progress {
    /// Items completed (for `answers`, excluded answers included).
    pub done: u64,
    /// Items failed.
    pub failed: u64,
    /// Answers excluded.
    pub excluded: u64,
    /// Requests awaiting a reply.
    pub in_flight: u64,
    /// Requests now between a failed attempt and their retry's outcome.
    pub retrying: u64,
    /// Retries made.
    pub retries: u64,
    /// Records added (subtopics or questions written).
    pub added: u64,
    /// Input tokens over every request.
    pub input_tokens: u64,
    /// Output tokens over every request.
    pub output_tokens: u64,
    /// Cost over every request.
    pub cost: Cost,
}

/// Shared counters that send a [`Event::Progress`] on every change.
#[derive(Debug)]
pub struct Tracker {
    stage: Stage,
    progress: Mutex<Progress>,
    events: UnboundedSender<Event>,
}

impl Tracker {
    /// New counters for `stage`.
    #[must_use]
    pub fn new(stage: Stage, events: UnboundedSender<Event>) -> Arc<Self> {
        Arc::new(Self {
            stage,
            progress: Mutex::new(Progress::default()),
            events,
        })
    }

    /// Changes the counters and reports them.
    pub fn update(&self, change: impl FnOnce(&mut Progress)) {
        let snapshot = {
            let mut progress = self
                .progress
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            change(&mut progress);
            *progress
        };
        let _ = self.events.send(Event::Progress {
            stage: self.stage,
            progress: snapshot,
        });
    }

    /// Counts the tokens and cost of a request.
    pub fn spend(&self, usage: Usage, price: Option<crate::pricing::Price>) {
        self.update(|p| {
            p.input_tokens += usage.input_tokens;
            p.output_tokens += usage.output_tokens;
            p.cost.add(price, usage);
        });
    }

    /// Counts a request in flight for `item` until the guard is dropped (also when the
    /// request is abandoned); the guard's [`RequestGuard::on_retry`] counts its retries and
    /// reports its long waits.
    #[must_use]
    pub fn request(&self, item: &str) -> RequestGuard<'_> {
        self.update(|p| p.in_flight += 1);
        RequestGuard {
            tracker: self,
            item: item.to_owned(),
            retrying: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The counters now.
    #[must_use]
    pub fn snapshot(&self) -> Progress {
        *self
            .progress
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The shortest retry wait that is shown as [`Event::Waiting`]; shorter ones show only in
/// the progress counters.
pub const SHOWN_WAIT: Duration = Duration::from_secs(5);

/// One request in flight, counted by its [`Tracker`].
#[derive(Debug)]
pub struct RequestGuard<'a> {
    tracker: &'a Tracker,
    item: String,
    retrying: std::sync::atomic::AtomicBool,
}

impl RequestGuard<'_> {
    /// Counts a retry of this request and reports a wait of [`SHOWN_WAIT`] or more (pass
    /// as the client's `on_retry`).
    pub fn on_retry(&self, error: &crate::llm::Error, wait: Duration) {
        if wait >= SHOWN_WAIT {
            let _ = self.tracker.events.send(Event::Waiting {
                stage: self.tracker.stage,
                item: self.item.clone(),
                wait,
                reason: error.to_string(),
            });
        }
        let first = !self
            .retrying
            .swap(true, std::sync::atomic::Ordering::Relaxed);
        self.tracker.update(|p| {
            p.retries += 1;
            if first {
                p.retrying += 1;
            }
        });
    }
}

impl Drop for RequestGuard<'_> {
    fn drop(&mut self) {
        let retrying = u64::from(*self.retrying.get_mut());
        self.tracker.update(|p| {
            p.in_flight -= 1;
            p.retrying -= retrying;
        });
    }
}

/// An error that stops a stage (PIPE-15) or keeps it from starting.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    /// `--topic` names no configured topic.
    #[error("`{name}` is not a topic of this project; {}", known_topics(known))]
    UnknownTopic {
        /// The name given.
        name: String,
        /// The configured topics, in file order.
        known: Vec<String>,
    },
    /// The stage's role is not configured (CFG-7).
    #[error("`roles.{0}` is not set in `overbrainer.toml`")]
    MissingRole(&'static str),
    /// The role names an undeclared provider.
    #[error(
        "`roles.{role}` names provider `{provider}`, which is not declared under `[providers]`"
    )]
    UnknownProvider {
        /// The role.
        role: &'static str,
        /// The provider's name.
        provider: String,
    },
    /// The provider has no base URL (CFG-5).
    #[error("the provider has no base URL; set `{variable}`")]
    MissingBaseUrl {
        /// The variable to set.
        variable: String,
    },
    /// The provider's `vault:` key cannot be resolved.
    #[error(transparent)]
    Secret(Box<SecretError>),
    /// The HTTP client cannot be built.
    #[error("cannot build the HTTP client")]
    Client(#[source] llm::Error),
    /// A template cannot be read or rendered (TPL-1).
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// The provider refused the key or failed in a way every item would (PIPE-15). The
    /// cause is part of the message, not a separate source, so it prints once.
    #[error("stopped: {0}")]
    Provider(llm::Error),
    /// The provider asked for a wait longer than `pipeline.max_retry_wait_secs`
    /// ([`llm::Error::WaitTooLong`]): the stage stopped rather than sleep, with what is
    /// done saved, and says how to go on.
    #[error(
        "stopped: {error}; what is done is saved: run `overbrainer {}` (or `overbrainer run`) again after that time to go on from there",
        stage.name()
    )]
    Paused {
        /// The stage that stopped.
        stage: Stage,
        /// The wait it was asked for.
        error: llm::Error,
    },
    /// A data file cannot be read or written.
    #[error(transparent)]
    Data(#[from] JsonlError),
}

impl StageError {
    /// The error that stops `stage` after a fatal provider failure.
    #[must_use]
    pub fn stopped(stage: Stage, error: llm::Error) -> Self {
        if matches!(error, llm::Error::WaitTooLong { .. }) {
            Self::Paused { stage, error }
        } else {
            Self::Provider(error)
        }
    }
}

/// The sentence listing the configured topics, for [`StageError::UnknownTopic`].
fn known_topics(known: &[String]) -> String {
    if known.is_empty() {
        return "it has none: add `[[topics]]` to `overbrainer.toml`".to_owned();
    }
    let names: Vec<String> = known.iter().map(|name| format!("`{name}`")).collect();
    format!("its topics are {}", names.join(", "))
}

/// How a stage ended.
#[derive(Debug)]
pub struct StageReport {
    /// The stage.
    pub stage: Stage,
    /// `ok`, `failed` or `interrupted`.
    pub status: Status,
    /// Items already complete before the stage.
    pub skipped: u64,
    /// The final counters.
    pub progress: Progress,
    /// The main role's provider and model (empty when it never got that far).
    pub provider: String,
    /// The main role's model.
    pub model: String,
    /// The error that stopped the stage early, if any.
    pub error: Option<StageError>,
    /// An error writing the history line, if any (reported besides `error`).
    pub history_error: Option<JsonlError>,
}

impl StageReport {
    /// Whether the command should exit 0.
    #[must_use]
    pub fn succeeded(&self) -> bool {
        self.status == Status::Ok && self.error.is_none() && self.history_error.is_none()
    }
}

/// The file a generating stage writes, and the JSON key that identifies an item in it
/// (`None` for whole lines), for [`replacing`].
pub(crate) struct Output<'a> {
    /// The JSONL file.
    pub path: PathBuf,
    /// The item key, for example `id` for answers.
    pub item: Option<&'a str>,
}

/// Runs one generating stage from its start (`started_at`) to its report: checks the
/// topic, runs `generate` with the stage's counters, the skipped count and the main
/// role's `(provider, model)`, replacing the selected topics' old output with `force`
/// (PIPE-3), then appends the history line through [`finish`].
pub(crate) async fn run_stage(
    ctx: &Context,
    (stage, started_at): (Stage, jiff::Timestamp),
    (topic, force): (Option<&str>, bool),
    output: Output<'_>,
    generate: impl AsyncFnOnce(&Arc<Tracker>, &mut u64, &mut (String, String)) -> Result<(), StageError>,
) -> StageReport {
    let tracker = Tracker::new(stage, ctx.events.clone());
    let mut skipped = 0;
    let mut who = (String::new(), String::new());
    let result = async {
        ctx.check_topic(topic)?;
        let body = generate(&tracker, &mut skipped, &mut who);
        replacing(
            ctx,
            &tracker,
            (&output.path, output.item),
            (topic, force),
            body,
        )
        .await
    }
    .await;
    finish(
        ctx,
        stage,
        started_at,
        skipped,
        tracker.snapshot(),
        who,
        result.err(),
    )
}

/// Finishes a stage: decides its status, appends its history line (HIST-1) and builds the
/// report.
#[allow(clippy::too_many_arguments)]
pub(crate) fn finish(
    ctx: &Context,
    stage: Stage,
    started_at: jiff::Timestamp,
    skipped: u64,
    progress: Progress,
    (provider, model): (String, String),
    error: Option<StageError>,
) -> StageReport {
    let status = if ctx.cancel.is_cancelled() && error.is_none() {
        Status::Interrupted
    } else if error.is_some() || progress.failed > 0 {
        Status::Failed
    } else {
        Status::Ok
    };
    let line = HistoryLine {
        stage: stage.name().to_owned(),
        status,
        started_at,
        ended_at: jiff::Timestamp::now(),
        done: progress.done,
        skipped,
        failed: progress.failed,
        excluded: progress.excluded,
        detail: Detail::Provider {
            provider: provider.clone(),
            model: model.clone(),
            input_tokens: progress.input_tokens,
            output_tokens: progress.output_tokens,
            cost_usd: progress.cost.usd(),
            cost_partial: progress.cost.is_partial(),
        },
    };
    let history_error = crate::history::append(&ctx.history_path(), &line).err();
    StageReport {
        stage,
        status,
        skipped,
        progress,
        provider,
        model,
        error,
        history_error,
    }
}

/// Whether `topic` is selected by `--topic` (all when `None`).
pub(crate) fn selected(filter: Option<&str>, topic: &str) -> bool {
    filter.is_none_or(|name| name == topic)
}

/// Whether a JSONL line belongs to a topic selected by `filter` (its `topic` field).
pub(crate) fn line_selected(filter: Option<&str>, line: &serde_json::Value) -> bool {
    line.get("topic")
        .and_then(serde_json::Value::as_str)
        .is_some_and(|topic| selected(filter, topic))
}

/// Runs `body`, a stage that with `force` regenerates the selected topics' output in
/// `path` (PIPE-3) and must plan as if that old output were gone. The old lines stay in
/// the file until the stage ends well (no error, no failed item, no Ctrl-C), and are
/// dropped only then: a refused key, a failed item or Ctrl-C never loses data, and the
/// user is told the old lines were kept beside the new ones. With `item` (the field that
/// names an item, `id` for answers), an old line whose item got a new line goes in any
/// case, so an item never has two.
///
/// # Errors
///
/// The stage's own error, else [`StageError::Data`] when the old lines cannot be
/// counted or dropped.
pub(crate) async fn replacing(
    ctx: &Context,
    tracker: &Tracker,
    (path, item): (&Path, Option<&str>),
    (topic, force): (Option<&str>, bool),
    body: impl std::future::Future<Output = Result<(), StageError>>,
) -> Result<(), StageError> {
    use crate::dataset::jsonl::{count_lines, drop_old_lines, lines_after};
    if !force {
        return body.await;
    }
    let (lines, old) = count_lines(path, |line| line_selected(topic, line))?;
    let result = body.await;
    if old == 0 {
        return result;
    }
    let ended_well = result.is_ok() && tracker.snapshot().failed == 0 && !ctx.cancel.is_cancelled();
    if ended_well {
        drop_old_lines(path, lines, |line| line_selected(topic, line))?;
        return result;
    }
    let mut dropped = 0;
    if let Some(field) = item {
        let name = |line: &serde_json::Value| {
            line.get(field)
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        let renewed: std::collections::HashSet<String> =
            lines_after(path, lines)?.iter().filter_map(name).collect();
        if !renewed.is_empty() {
            dropped = drop_old_lines(path, lines, |line| {
                line_selected(topic, line) && name(line).is_some_and(|n| renewed.contains(&n))
            })?;
        }
    }
    if old > dropped {
        ctx.emit(Event::Warning(format!(
            "`--force` kept {} old lines of `{}` beside the new ones because the stage did not end well; run it again with `--force` to replace them",
            old - dropped,
            path.display()
        )));
    }
    result
}

/// Reads a JSONL file, warning about skipped lines.
pub(crate) fn read<T: serde::de::DeserializeOwned>(
    ctx: &Context,
    path: &Path,
) -> Result<Vec<T>, StageError> {
    let (records, skipped) = crate::dataset::read_jsonl(path)?;
    ctx.warn_skipped(&skipped);
    Ok(records)
}

/// How one item (a topic, a subtopic) of a stage ended.
pub(crate) enum Outcome {
    /// Complete, or stopped short without failing.
    Done,
    /// Failed after its retries, with the reason.
    Failed(String),
    /// Failed in a way every item would (PIPE-15).
    Fatal(crate::llm::Error),
    /// Cancelled before it finished.
    Stopped,
}

/// Waits for every item task, counting and reporting outcomes; a fatal one cancels the
/// others through `stop` and is returned.
pub(crate) async fn collect(
    ctx: &Context,
    stage: Stage,
    tracker: &Tracker,
    mut tasks: tokio::task::JoinSet<(String, Outcome)>,
    stop: &tokio_util::sync::CancellationToken,
) -> Result<(), StageError> {
    let mut fatal = None;
    while let Some(joined) = tasks.join_next().await {
        let Ok((item, outcome)) = joined else {
            continue;
        };
        match outcome {
            Outcome::Done => tracker.update(|p| p.done += 1),
            Outcome::Stopped => {}
            Outcome::Failed(reason) => {
                tracker.update(|p| p.failed += 1);
                ctx.emit(Event::ItemFailed {
                    stage,
                    item,
                    reason,
                });
            }
            Outcome::Fatal(error) => {
                stop.cancel();
                fatal.get_or_insert(error);
            }
        }
    }
    match fatal {
        Some(error) => Err(StageError::stopped(stage, error)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_guards_count_in_flight_and_retrying_until_dropped() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let tracker = Tracker::new(Stage::Answers, tx);
        let guard = tracker.request("question `q`");
        let error = crate::llm::Error::Timeout(Duration::from_secs(1));
        guard.on_retry(&error, Duration::from_millis(10));
        guard.on_retry(&error, Duration::from_millis(10));
        let p = tracker.snapshot();
        assert_eq!((p.in_flight, p.retrying, p.retries), (1, 1, 2));
        drop(guard);
        let p = tracker.snapshot();
        assert_eq!((p.in_flight, p.retrying, p.retries), (0, 0, 2));
        let mut events = 0;
        while let Ok(Event::Progress { .. }) = rx.try_recv() {
            events += 1;
        }
        assert_eq!(events, 4);
    }

    #[test]
    fn waits_of_a_few_seconds_or_more_are_reported_with_their_item() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let tracker = Tracker::new(Stage::Answers, tx);
        let guard = tracker.request("question `q7`");
        let error = crate::llm::Error::RateLimited { retry_after: None };
        guard.on_retry(&error, Duration::from_millis(4999));
        guard.on_retry(&error, Duration::from_secs(45));
        drop(guard);
        let waits: Vec<Event> = std::iter::from_fn(|| rx.try_recv().ok())
            .filter(|e| matches!(e, Event::Waiting { .. }))
            .collect();
        assert_eq!(
            waits,
            vec![Event::Waiting {
                stage: Stage::Answers,
                item: "question `q7`".to_owned(),
                wait: Duration::from_secs(45),
                reason: "rate limited (HTTP 429)".to_owned(),
            }]
        );
    }

    #[test]
    fn a_too_long_wait_stops_the_stage_saying_how_to_go_on() {
        let error = crate::llm::Error::WaitTooLong {
            wait: Duration::from_secs(3 * 3600),
            limit: Duration::from_secs(600),
            resets_at: "2026-12-01T15:00:00Z".parse().unwrap(),
        };
        let text = StageError::stopped(Stage::Answers, error).to_string();
        assert!(text.contains("2026-12-01 15:00:00 UTC"), "{text}");
        assert!(text.contains("run `overbrainer answers`"), "{text}");
        assert!(matches!(
            StageError::stopped(
                Stage::Answers,
                crate::llm::Error::Auth {
                    status: 401,
                    provider: "p".into()
                }
            ),
            StageError::Provider(_)
        ));
    }
}

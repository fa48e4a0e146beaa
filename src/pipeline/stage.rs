//! What every stage shares: its [`Context`] (settings, project paths, key resolution,
//! prices, the event channel, cancellation), the client of a role, the [`StageReport`]
//! it returns, and the [`StageError`]s that stop it. Its events and counters are in
//! [`super::progress`], the steps every generating stage runs in `pipeline/runner.rs`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

pub use super::progress::Stage;
use super::progress::{Event, Progress};
use super::templates::TemplateError;
use crate::config::{Protocol, Role, Settings};
use crate::dataset::DataFiles;
use crate::dataset::jsonl::{JsonlError, SkippedLine};
use crate::history::Status;
use crate::llm::retry::RetryPolicy;
use crate::llm::{self, Client};
use crate::pricing::PriceBook;
use crate::secrets::{Resolver, SecretError};

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
    /// suite shrinks it (`OVERBRAINER_TEST_SECOND_MS`) so real waits pass quickly.
    pub backoff_base: Duration,
    /// The secrets resolved so far (every client's key joins it), removed from every
    /// server text before it is stored or shown (SEC-5).
    pub redactor: llm::Redactor,
    /// `--over-budget`: a start whose estimate passes `budget.max_usd` goes ahead (the
    /// hard cap still holds).
    pub over_budget: bool,
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
            fixed_price: provider.fixed_price(),
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
    /// The provider's price from the configuration (`price_in`, `price_out`), which
    /// replaces its listing.
    pub fixed_price: Option<crate::pricing::Price>,
    /// The role's settings.
    pub role: Role,
}

impl RoleClient {
    /// The model's price: the configured one, else read once per provider per command;
    /// `None` when unknown.
    pub async fn price(&self, prices: &PriceBook) -> Option<crate::pricing::Price> {
        if let Some(price) = self.fixed_price {
            return Some(price);
        }
        prices
            .price(&self.provider, &self.client, &self.role.model)
            .await
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
        "stopped: {error}; what is done is saved: run {} again after that time to go on from there",
        rerun_hint(*stage, rerun)
    )]
    Paused {
        /// The stage that stopped.
        stage: Stage,
        /// The wait it was asked for.
        error: llm::Error,
        /// The options the stage ran with, repeated in the hint.
        rerun: Rerun,
    },
    /// A data file cannot be read or written.
    #[error(transparent)]
    Data(#[from] JsonlError),
    /// The budget's ledger cannot be read or written.
    #[error(transparent)]
    Budget(#[from] crate::budget::BudgetError),
    /// Under `budget.max_usd`, the stage's model has no price (issue 20).
    #[error(
        "`{}` cannot start: `{provider}` lists no price for `{model}`, so its cost cannot be held to `budget.max_usd`; set `budget.allow_unpriced = true` to run it anyway (its cost then counts as unknown)",
        stage.name()
    )]
    Unpriced {
        /// The stage.
        stage: Stage,
        /// The provider.
        provider: String,
        /// The model.
        model: String,
    },
    /// The estimate of the work, with the spend, passes the cap (issue 20).
    #[error(
        "`{}` is estimated at {} for {items} items ({}), and with {} already spent that passes the cap of {} (`budget.max_usd`); nothing was sent: raise the cap, or pass `--over-budget` to accept it (the cap still stops it)",
        stage.name(),
        crate::budget::usd(*estimate),
        if *seen { "from the tokens per item so far" } else { "from the `max_tokens` bound, before any item was done" },
        crate::budget::usd(*spent),
        crate::budget::usd(*cap)
    )]
    OverBudget {
        /// The stage.
        stage: Stage,
        /// Items left.
        items: u64,
        /// USD.
        estimate: f64,
        /// Whether from the tokens seen so far (else the bound).
        seen: bool,
        /// USD spent.
        spent: f64,
        /// The cap.
        cap: f64,
    },
    /// The hard cap stopped the stage (issue 20).
    #[error(
        "stopped at the budget: {} spent, and the next request could cost up to {} with {} in flight or held by other spenders, past the cap of {} (`budget.max_usd`); what is done is saved: once `overbrainer budget` shows room (what is held ends with the requests and pods holding it), or with a raised cap, run `overbrainer {}` again to go on from there",
        crate::budget::usd(reached.spent),
        crate::budget::usd(reached.next),
        crate::budget::usd(reached.in_flight),
        crate::budget::usd(reached.max_usd),
        stage.name()
    )]
    CapReached {
        /// The stage.
        stage: Stage,
        /// The figures when it stopped.
        reached: crate::budget::CapReached,
    },
    /// `split` found no answers file while train or eval files hold lines: splitting
    /// nothing would empty them (a pre-split dataset, like the demo's).
    #[error(
        "`{}` does not exist, and splitting nothing would empty the `train.jsonl` and `eval.jsonl` already there: they are left as they are; run `overbrainer answers` first",
        path.display()
    )]
    NoAnswers {
        /// The missing answers file.
        path: std::path::PathBuf,
    },
}

/// The options of a stage's command that a hint to run it again repeats: its
/// `--topic` and `--force`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rerun {
    /// `--topic NAME`.
    pub topic: Option<String>,
    /// `--force`.
    pub force: bool,
}

/// The command that runs `stage` again with the options of `rerun`; without options,
/// `overbrainer run` goes on from there too.
fn rerun_hint(stage: Stage, rerun: &Rerun) -> String {
    let mut command = format!("overbrainer {}", stage.name());
    if let Some(topic) = &rerun.topic {
        command.push_str(" --topic ");
        command.push_str(&crate::exec::quote(topic));
    }
    if rerun.force {
        command.push_str(" --force");
    }
    if rerun == &Rerun::default() {
        format!("`{command}` (or `overbrainer run`)")
    } else {
        format!("`{command}`")
    }
}

impl StageError {
    /// The error that stops `stage` after a fatal provider failure.
    #[must_use]
    pub fn stopped(stage: Stage, error: llm::Error) -> Self {
        if matches!(error, llm::Error::WaitTooLong { .. }) {
            Self::Paused {
                stage,
                error,
                rerun: Rerun::default(),
            }
        } else {
            Self::Provider(error)
        }
    }

    /// This error, its hint to run the stage again given the options it ran with.
    #[must_use]
    pub fn ran_with(self, topic: Option<&str>, force: bool) -> Self {
        match self {
            Self::Paused { stage, error, .. } => Self::Paused {
                stage,
                error,
                rerun: Rerun {
                    topic: topic.map(str::to_owned),
                    force,
                },
            },
            other => other,
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
    /// The summary line the stage's command prints (PIPE-13).
    #[must_use]
    pub fn summary_line(&self) -> String {
        use std::fmt::Write as _;
        let p = &self.progress;
        let mut line = format!(
            "{}: {} done, {} skipped, {} failed",
            self.stage.name(),
            p.done,
            self.skipped,
            p.failed
        );
        if self.stage == super::Stage::Answers {
            let _ = write!(line, ", {} excluded", p.excluded);
        } else {
            let _ = write!(line, ", {} added", p.added);
        }
        let _ = write!(
            line,
            ", {} input tokens, {} output tokens, {}",
            p.input_tokens, p.output_tokens, p.cost
        );
        match self.status {
            Status::Ok => {}
            Status::Failed => line.push_str(" [failed]"),
            Status::Interrupted => line.push_str(" [interrupted]"),
        }
        line
    }

    /// Whether the command should exit 0.
    #[must_use]
    pub fn succeeded(&self) -> bool {
        self.status == Status::Ok && self.error.is_none() && self.history_error.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_too_long_wait_stops_the_stage_saying_how_to_go_on() {
        let error = crate::llm::Error::WaitTooLong {
            wait: Duration::from_secs(3 * 3600),
            limit: Duration::from_secs(600),
            resets_at: "2026-12-01T15:00:00Z".parse().unwrap(),
        };
        let text = StageError::stopped(Stage::Answers, error).to_string();
        assert!(text.contains("2026-12-01 15:00:00 UTC"), "{text}");
        assert!(
            text.contains("run `overbrainer answers` (or `overbrainer run`) again"),
            "{text}"
        );
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

    // Tester defect 4: the hint to run a stage again repeats the options it ran with;
    // `--force` is never dropped.
    #[test]
    fn regression_the_rerun_hint_keeps_force_and_topic() {
        let error = || crate::llm::Error::WaitTooLong {
            wait: Duration::from_secs(3 * 3600),
            limit: Duration::from_secs(600),
            resets_at: "2026-12-01T15:00:00Z".parse().unwrap(),
        };
        let forced = StageError::stopped(Stage::Questions, error())
            .ran_with(None, true)
            .to_string();
        assert!(
            forced.contains("run `overbrainer questions --force` again"),
            "{forced}"
        );
        let both = StageError::stopped(Stage::Answers, error())
            .ran_with(Some("rust lang"), true)
            .to_string();
        assert!(
            both.contains("run `overbrainer answers --topic 'rust lang' --force` again"),
            "{both}"
        );
    }
}

//! The init wizard's answers turned into the files `init` writes (TUI-74, TUI-76): the
//! `init` template with the answers filled in (its comments kept, through `toml_edit`),
//! `.env` with the variables the choices need (mode 600), `.env.example` with the same
//! variables and no secret. The front end asks; this module only builds and checks text.

use std::fmt::Write as _;
use std::path::Path;

use secrecy::{ExposeSecret as _, SecretString};
use toml_edit::{DocumentMut, InlineTable, Item, Table, Value};

use crate::config::Rules;
use crate::env::EnvSnapshot;

/// A provider the wizard fills in by name: its protocol and public base URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    /// The provider's name in `[providers.<name>]`.
    pub name: &'static str,
    /// `openai` or `anthropic`.
    pub protocol: &'static str,
    /// The API's base URL.
    pub base_url: &'static str,
    /// The generator and parent models offered first (empty: none), as the provider names them.
    pub models: (&'static str, &'static str),
}

/// The presets, in the order the wizard offers them (then `custom`).
pub const PRESETS: [Preset; 4] = [
    Preset {
        name: "openrouter",
        protocol: "openai",
        base_url: "https://openrouter.ai/api/v1",
        models: ("openai/gpt-4o-mini", "deepseek/deepseek-r1"),
    },
    Preset {
        name: "nanogpt",
        protocol: "openai",
        base_url: "https://nano-gpt.com/api/v1",
        models: ("openai/gpt-4o-mini", "deepseek-ai/DeepSeek-R1"),
    },
    Preset {
        name: "openai",
        protocol: "openai",
        base_url: "https://api.openai.com/v1",
        models: ("gpt-4o-mini", "o3-mini"),
    },
    Preset {
        name: "anthropic",
        protocol: "anthropic",
        base_url: "https://api.anthropic.com/v1",
        models: ("claude-3-5-haiku-latest", "claude-sonnet-4-5"),
    },
];

/// Where a key comes from.
#[derive(Clone)]
pub enum Key {
    /// Left empty: an empty assignment in `.env` to fill in.
    Later,
    /// Typed in the wizard.
    Typed(SecretString),
    /// A `vault:<mount>/<path>#<field>` reference.
    Vault(String),
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Later => f.write_str("Later"),
            Self::Typed(_) => f.write_str("Typed(set)"),
            Self::Vault(reference) => write!(f, "Vault({reference})"),
        }
    }
}

/// The provider every role uses.
#[derive(Debug, Clone)]
pub struct Provider {
    /// `[providers.<name>]`.
    pub name: String,
    /// `openai` or `anthropic`.
    pub protocol: String,
    /// Its base URL (written to `.env`).
    pub base_url: String,
    /// Its API key.
    pub key: Key,
}

/// A topic of `[[topics]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topic {
    /// Its name.
    pub name: String,
    /// What it covers.
    pub description: String,
    /// Subtopics to generate.
    pub subtopics: u32,
    /// Questions kept per subtopic.
    pub questions: u32,
}

/// Where training runs.
#[derive(Debug, Clone)]
pub enum Training {
    /// No `[training]`: auto mode stops after split.
    Skip,
    /// This machine (`[targets.this_machine]`), in Docker or natively.
    Local {
        /// `runtime = "docker"`.
        docker: bool,
    },
    /// An SSH host (`[targets.gpu_box]`).
    Ssh {
        /// `user@host` or an alias, written to `.env`.
        host: String,
        /// `runtime = "docker"`.
        docker: bool,
    },
    /// Runpod (`[targets.gpu_cloud]`).
    Runpod {
        /// The account's API key.
        key: Key,
        /// GPU types in order; `None` is `auto`.
        gpu_types: Option<Vec<String>>,
    },
}

/// Everything the wizard asks.
#[derive(Debug, Clone)]
pub struct Answers {
    /// `project.name`.
    pub name: String,
    /// The one provider.
    pub provider: Provider,
    /// `roles.generator.model`.
    pub generator: String,
    /// `roles.parent.model`.
    pub parent: String,
    /// `roles.parent.reasoning`.
    pub reasoning: bool,
    /// `roles.embedder.model`, when set.
    pub embedder: Option<String>,
    /// At least one.
    pub topics: Vec<Topic>,
    /// The target, or none.
    pub training: Training,
    /// `training.base_model`.
    pub base_model: String,
    /// `training.adapter`.
    pub adapter: String,
}

/// The texts to write.
pub struct Files {
    /// `overbrainer.toml`.
    pub config: String,
    /// `.env` (holds secrets: mode 600).
    pub env: String,
    /// `.env.example`: the same variables, no secret.
    pub env_example: String,
}

/// Why the answers make no valid project.
#[derive(Debug, thiserror::Error)]
pub enum WizardError {
    /// The filled-in template does not validate; the message names the key.
    #[error("the answers make no valid configuration")]
    Invalid(#[source] crate::config::ConfigError),
    /// A value cannot go into `.env` (a line break or NUL); names the variable only.
    #[error("`{0}` cannot hold a line break or a NUL byte")]
    EnvValue(String),
}

/// Target names the wizard writes, by kind.
pub const LOCAL_TARGET: &str = "this_machine";
/// The SSH target's name.
pub const SSH_TARGET: &str = "gpu_box";
/// The Runpod target's name.
pub const RUNPOD_TARGET: &str = "gpu_cloud";

/// Whether `name` may name a provider or a topic (`^[a-z0-9_]+$`, ENV-8).
pub use crate::config::valid_name;

/// The files for `answers` in `dir`, the configuration checked whole with `rules` against
/// `env` plus the `.env` it comes with.
///
/// # Errors
///
/// [`WizardError::Invalid`] naming the problem, [`WizardError::EnvValue`].
pub fn files(
    dir: &Path,
    answers: &Answers,
    env: &EnvSnapshot,
    rules: Rules,
) -> Result<Files, WizardError> {
    let config = config_text(answers);
    let variables = variables(answers);
    for (name, value) in &variables {
        if value.expose_secret().contains(['\n', '\r', '\0']) {
            return Err(WizardError::EnvValue(name.clone()));
        }
    }
    // Checked as `config check` will see it: the shell's environment wins over `.env`.
    // An empty key is left out (as empty it is "not set" once filled in later).
    let pairs: Vec<(&str, &str)> = variables
        .iter()
        .map(|(n, v)| (n.as_str(), v.expose_secret()))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    crate::config::load_text(dir, &config, &env.with_fallbacks(pairs), rules)
        .map_err(WizardError::Invalid)?;
    Ok(Files {
        config,
        env: env_text(&variables, true),
        env_example: env_text(&variables, false),
    })
}

/// `overbrainer.toml`: the `init` template with the answers filled in.
#[must_use]
pub fn config_text(answers: &Answers) -> String {
    let template = super::init::config_text(&answers.name);
    // The template is valid TOML (tested); a broken one would be returned unfilled and
    // refused by the validation that follows.
    let Ok(mut document) = template.parse::<DocumentMut>() else {
        return template;
    };
    fill_topics(&mut document, &answers.topics);
    fill_provider(&mut document, &answers.provider);
    fill_roles(&mut document, answers);
    fill_training(&mut document, answers);
    document.to_string()
}

/// The template's first topic becomes the first answer (its comments kept); the others follow.
fn fill_topics(document: &mut DocumentMut, topics: &[Topic]) {
    let Some(Item::ArrayOfTables(tables)) = document.get_mut("topics") else {
        return;
    };
    let template = tables.get(0).cloned();
    tables.clear();
    for (index, topic) in topics.iter().enumerate() {
        let mut table = match (&template, index) {
            (Some(first), 0) => first.clone(),
            _ => Table::new(),
        };
        set(&mut table, "name", topic.name.as_str().into());
        set(&mut table, "description", topic.description.as_str().into());
        set(&mut table, "subtopics", i64::from(topic.subtopics).into());
        set(
            &mut table,
            "questions_per_subtopic",
            i64::from(topic.questions).into(),
        );
        tables.push(table);
    }
}

/// Sets `key` of `table`, keeping the old value's spacing and trailing comment.
fn set(table: &mut Table, key: &str, mut value: Value) {
    if let Some(Item::Value(old)) = table.get_mut(key) {
        *value.decor_mut() = old.decor().clone();
        *old = value;
    } else {
        table.insert(key, Item::Value(value));
    }
}

/// One `[providers.<name>]` in place of the template's two, keeping its comment.
fn fill_provider(document: &mut DocumentMut, provider: &Provider) {
    let Some(providers) = document.get_mut("providers").and_then(Item::as_table_mut) else {
        return;
    };
    let template = providers
        .get("openrouter")
        .and_then(Item::as_table)
        .cloned();
    let names: Vec<String> = providers.iter().map(|(k, _)| k.to_owned()).collect();
    for name in names {
        providers.remove(&name);
    }
    let mut table = template.unwrap_or_default();
    set(&mut table, "protocol", provider.protocol.as_str().into());
    providers.insert(&provider.name, Item::Table(table));
}

fn role(provider: &str, model: &str, reasoning: Option<bool>) -> Value {
    let mut table = InlineTable::new();
    table.insert("provider", provider.into());
    table.insert("model", model.into());
    if let Some(reasoning) = reasoning {
        table.insert("reasoning", reasoning.into());
    }
    Value::InlineTable(table)
}

fn fill_roles(document: &mut DocumentMut, answers: &Answers) {
    let Some(roles) = document.get_mut("roles").and_then(Item::as_table_mut) else {
        return;
    };
    let provider = answers.provider.name.as_str();
    set(roles, "generator", role(provider, &answers.generator, None));
    set(
        roles,
        "parent",
        role(provider, &answers.parent, Some(answers.reasoning)),
    );
    if let Some(embedder) = &answers.embedder {
        set(roles, "embedder", role(provider, embedder, None));
    }
}

/// `[training]` and its target, after the template's commented examples of both.
fn fill_training(document: &mut DocumentMut, answers: &Answers) {
    let (target, mut values): (&str, Vec<(&str, Value)>) = match &answers.training {
        Training::Skip => return,
        Training::Local { docker } => (
            LOCAL_TARGET,
            vec![("kind", "local".into()), ("runtime", runtime(*docker))],
        ),
        Training::Ssh { docker, .. } => (
            SSH_TARGET,
            vec![("kind", "ssh".into()), ("runtime", runtime(*docker))],
        ),
        Training::Runpod { gpu_types, .. } => (
            RUNPOD_TARGET,
            vec![
                ("kind", "runpod".into()),
                (
                    "gpu_types",
                    gpu_types.as_ref().map_or_else(
                        || "auto".into(),
                        |types| Value::Array(types.iter().map(String::as_str).collect()),
                    ),
                ),
                ("max_hours", 4.into()),
            ],
        ),
    };
    let mut training = Table::new();
    training.insert("target", target.into());
    training.insert("base_model", answers.base_model.as_str().into());
    training.insert("adapter", answers.adapter.as_str().into());
    document.insert("training", Item::Table(training));
    let mut table = Table::new();
    for (key, value) in values.drain(..) {
        table.insert(key, Item::Value(value));
    }
    let mut targets = Table::new();
    targets.set_implicit(true);
    targets.insert(target, Item::Table(table));
    document.insert("targets", Item::Table(targets));
}

fn runtime(docker: bool) -> Value {
    if docker { "docker" } else { "native" }.into()
}

/// The `.env` variables the answers need, in order, with their values (empty for a key to
/// fill in later).
#[must_use]
pub fn variables(answers: &Answers) -> Vec<(String, SecretString)> {
    let provider = answers.provider.name.to_ascii_uppercase();
    let mut variables = vec![
        (
            format!("OVERBRAINER_PROVIDERS__{provider}__BASE_URL"),
            SecretString::from(answers.provider.base_url.clone()),
        ),
        (
            format!("OVERBRAINER_PROVIDERS__{provider}__API_KEY"),
            key_value(&answers.provider.key),
        ),
    ];
    match &answers.training {
        Training::Ssh { host, .. } => variables.push((
            format!(
                "OVERBRAINER_TARGETS__{}__HOST",
                SSH_TARGET.to_ascii_uppercase()
            ),
            SecretString::from(host.clone()),
        )),
        Training::Runpod { key, .. } => {
            variables.push(("OVERBRAINER_RUNPOD__API_KEY".to_owned(), key_value(key)));
        }
        Training::Skip | Training::Local { .. } => {}
    }
    variables
}

fn key_value(key: &Key) -> SecretString {
    match key {
        Key::Later => SecretString::default(),
        Key::Typed(secret) => secret.clone(),
        Key::Vault(reference) => SecretString::from(reference.clone()),
    }
}

/// Whether a variable holds a secret (a key, not a URL or a host).
fn secret(name: &str) -> bool {
    name.ends_with("API_KEY")
}

/// `.env` text with the values (`with_values`), or `.env.example`'s with every secret
/// empty and the other values as examples.
fn env_text(variables: &[(String, SecretString)], with_values: bool) -> String {
    let mut text = String::from(if with_values {
        "# Written by `overbrainer tui`'s init wizard. Private (mode 600, git-ignored): it holds\n# keys. The shell environment wins over this file.\n"
    } else {
        "# Copy to `.env` (git-ignored) and fill in. The shell environment wins over this file.\n# Secrets may be literals or Vault references: vault:<mount>/<path>#<field>\n"
    });
    for (name, value) in variables {
        let value = value.expose_secret();
        if with_values {
            let _ = writeln!(text, "{name}={}", quote(value));
        } else if secret(name) || value.is_empty() {
            let _ = writeln!(text, "{name}=");
        } else {
            let _ = writeln!(text, "{name}={}", quote(value));
        }
    }
    text
}

/// A value as `dotenvy` reads it back unchanged: bare when it is plain, else single-quoted
/// (taken literally), else double-quoted with `\`, `"` and `$` escaped.
fn quote(value: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:@+,%".contains(c);
    if value.chars().all(plain) {
        value.to_owned()
    } else if !value.contains('\'') {
        format!("'{value}'")
    } else {
        let mut quoted = String::from("\"");
        for c in value.chars() {
            if matches!(c, '\\' | '"' | '$') {
                quoted.push('\\');
            }
            quoted.push(c);
        }
        quoted.push('"');
        quoted
    }
}

#[cfg(test)]
#[path = "wizard_tests.rs"]
mod tests;

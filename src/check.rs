//! Loading and checking the configuration, as flows any front end can call.
//!
//! [`load`] is how every command and flow loads it: `config::load` with the rules of
//! the layers above (`train::rules`, what Axolotl accepts), so that each problem is
//! reported at loading whichever command runs. [`check`] is
//! `config check` (CHK-1..CHK-6): every effective
//! setting with its source, whether its secret was resolved, and for each role's
//! `reasoning` key the reasoning rule its model falls under (`llm::reasoning::rule`).
//! Once `data/train.jsonl` exists it also refuses Axolotl settings that need eval data
//! when `data/eval.jsonl` is missing or empty, as `train` does, and a
//! `training.upload_base_model` whose `base_model` is not a local directory. Never takes the project
//! lock; without `resolve` it makes no network request.

use std::path::Path;

use crate::config::{
    ConfigError, Entry, EnvSnapshot, Loaded, Problem, Provenance, Settings, Target, entries,
};
use crate::llm::reasoning::ReasoningRule;
use crate::project::Project;
use crate::secrets::{Resolver, SecretError, SecretRef};

/// Loads and validates the configuration of the project in `root` (`config::load`) with
/// every layer's rules: the sections' own and Axolotl's (`train::rules::check`).
///
/// # Errors
///
/// [`ConfigError`] as `config::load` returns it, listing every problem.
pub fn load(root: &Path, env: &EnvSnapshot) -> Result<Loaded, ConfigError> {
    crate::config::load(root, env, rules)
}

/// The rules [`load`] applies, for an edit checked before it is written
/// (`config::edit::save`).
pub const RULES: crate::config::Rules = rules;

/// The rules of the layers above the configuration: what Axolotl accepts
/// (`train::rules::check`), and the pre-tokenizer names the pinned llama.cpp knows, so
/// that `config check` refuses a misspelt `export.pre_tokenizer` as `export` would. The
/// value is never repeated (CFG-2).
fn rules(settings: &Settings, provenance: &Provenance, problems: &mut Vec<Problem>) {
    crate::train::rules::check(settings, provenance, problems);
    let key = "export.pre_tokenizer";
    let unknown = settings
        .export
        .pre_tokenizer
        .as_deref()
        .is_some_and(|pre| !crate::gguf::llama::PRE_TOKENIZERS.contains(&pre));
    // The section's own rule may have said more already (`gpt2` for `gpt-2`).
    if unknown && !problems.iter().any(|p| p.key == key) {
        problems.push(Problem::new(
            key,
            format!(
                "not a pre-tokenizer llama.cpp b{} knows (it would be written into the GGUF and refused by llama-server); use one of its names, such as `gpt-2`, `llama-bpe`, `qwen2`",
                crate::gguf::llama::LLAMA_BUILD
            ),
        ));
    }
}

/// One checked setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The setting, its value (secrets masked) and its source.
    pub entry: Entry,
    /// Its secret was resolved (with `resolve` only).
    pub resolved: bool,
    /// For `roles.<role>.reasoning`: the rule of the role's model.
    pub rule: Option<ReasoningRule>,
}

/// Why the check fails.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// Eval settings without eval data (as `train` refuses them).
    #[error("{0}")]
    EvalData(String),
    /// `training.upload_base_model` names no local directory (as `train` refuses it).
    #[error("{0}")]
    BaseModel(String),
    /// A secret cannot be resolved (SEC-4).
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// SSH targets without a `host`, by name: loading accepts them (the host is set
    /// only on the machines that use the target, through a variable), `config check`
    /// says what every run on them would be refused for.
    #[error("{}", missing_hosts(.0))]
    MissingHost(Vec<String>),
}

/// One line per SSH target of `names` without a `host`, naming its key and variable.
fn missing_hosts(names: &[String]) -> String {
    names
        .iter()
        .map(|name| {
            format!(
                "`targets.{name}.host` is missing: an ssh target needs `user@host` or a `~/.ssh/config` alias; set `{}` in `.env` or the environment",
                crate::config::var_name(&["targets", name, "host"])
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks the configuration `loaded` of `project`; with `resolve` it resolves every
/// configured secret too, stopping at the first that cannot be.
///
/// # Errors
///
/// [`CheckError`]: the eval data problem, SSH targets without a `host`, or the first
/// secret that cannot be resolved.
pub async fn check(
    project: &Project,
    loaded: &Loaded,
    resolve: bool,
) -> Result<Vec<Checked>, CheckError> {
    if let Some(problem) =
        crate::runs::start::eval_data_problem(project, &loaded.settings, &loaded.provenance)
    {
        return Err(CheckError::EvalData(problem));
    }
    if let Some(problem) =
        crate::runs::start::base_model_problem(project, &loaded.settings, &loaded.env)
    {
        return Err(CheckError::BaseModel(problem));
    }
    let hostless: Vec<String> = loaded
        .settings
        .targets
        .iter()
        .filter(|(_, target)| matches!(target, Target::Ssh(ssh) if ssh.host.is_none()))
        .map(|(name, _)| name.clone())
        .collect();
    if !hostless.is_empty() {
        return Err(CheckError::MissingHost(hostless));
    }
    let resolved = if resolve {
        resolve_all(loaded).await?
    } else {
        Vec::new()
    };
    let rules = reasoning_rules(loaded);
    Ok(entries(loaded)
        .into_iter()
        .map(|entry| Checked {
            resolved: resolved.contains(&entry.key),
            rule: rules
                .iter()
                .find(|(key, _)| *key == entry.key)
                .map(|(_, rule)| *rule),
            entry,
        })
        .collect())
}

/// The reasoning rule of each role whose provider is declared, by its `reasoning` key.
fn reasoning_rules(loaded: &Loaded) -> Vec<(String, ReasoningRule)> {
    let settings = &loaded.settings;
    let roles = &settings.roles;
    [
        ("generator", &roles.generator),
        ("parent", &roles.parent),
        ("judge", &roles.judge),
    ]
    .into_iter()
    .filter_map(|(name, role)| {
        let role = role.as_ref()?;
        let provider = settings.providers.get(&role.provider)?;
        Some((
            format!("roles.{name}.reasoning"),
            crate::llm::reasoning::rule(provider.protocol, &role.model),
        ))
    })
    .collect()
}

/// Every configured secret, by key.
fn secrets(loaded: &Loaded) -> Vec<(String, &SecretRef)> {
    let settings = &loaded.settings;
    let mut out: Vec<(String, &SecretRef)> = settings
        .providers
        .iter()
        .filter_map(|(name, p)| Some((format!("providers.{name}.api_key"), p.api_key.as_ref()?)))
        .collect();
    if let Some(key) = &settings.runpod.api_key {
        out.push(("runpod.api_key".to_owned(), key));
    }
    if let Some(token) = &settings.hf_token {
        out.push(("hf_token".to_owned(), token));
    }
    out
}

/// Resolves every secret (SEC-4); returns the keys resolved.
async fn resolve_all(loaded: &Loaded) -> Result<Vec<String>, SecretError> {
    let resolver = Resolver::new(&loaded.env);
    let mut done = Vec::new();
    for (key, reference) in secrets(loaded) {
        resolver.resolve(&key, reference).await?;
        done.push(key);
    }
    Ok(done)
}

//! `overbrainer config check [--resolve]`: print every effective setting with its source,
//! secrets masked (CHK-1..CHK-6). Never takes the project lock; without `--resolve` it
//! makes no network request. Each role's `reasoning` line says which reasoning rule its
//! model falls under (`llm::reasoning::rule`): whether its reasoning or thinking blocks
//! count as raw or as a summary, and why. Once `data/train.jsonl` exists it also refuses Axolotl
//! settings that need eval data when `data/eval.jsonl` is missing or empty, as `train`
//! does.

use std::process::ExitCode;

use super::Context;
use crate::config::{Entry, Loaded, Source, entries};
use crate::secrets::{Resolver, SecretRef};

/// Arguments of `config check`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Also resolve every configured secret (Vault references included); fails on the first
    /// one that cannot be resolved.
    #[arg(long)]
    pub resolve: bool,
}

/// Loads, validates and prints the configuration.
///
/// # Errors
///
/// When there is no project, the configuration is invalid (every problem listed), or with
/// `--resolve` a secret cannot be resolved.
pub async fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let (project, loaded) = ctx.load()?;
    for warning in &loaded.warnings {
        tracing::warn!("{warning}");
    }
    if let Some(problem) = crate::runs::start::eval_data_problem(&project, &loaded.settings) {
        anyhow::bail!("{problem}");
    }
    let resolved = if args.resolve {
        resolve_all(&loaded).await?
    } else {
        Vec::new()
    };
    let rules = reasoning_rules(&loaded);
    let mut section = None;
    for Entry {
        key,
        value,
        source,
        ignored,
    } in entries(&loaded)
    {
        let top = key.split('.').next().unwrap_or_default().to_owned();
        if section.as_ref().is_some_and(|s| *s != top) {
            outln!();
        }
        let mut note = if resolved.contains(&key) {
            ", resolved".to_owned()
        } else {
            String::new()
        };
        if let Some((_, rule)) = rules.iter().find(|(k, _)| *k == key) {
            note = format!("{note}; {rule}");
        }
        // CFG-8: a key the target's runtime ignores says so instead of a plain default.
        let origin = match (ignored, &source) {
            (Some(ignored), Source::Default) => ignored,
            (Some(ignored), _) => format!("{source}, {ignored}"),
            (None, _) => source.to_string(),
        };
        outln!("{key} = {value}  ({origin}{note})");
        section = Some(top);
    }
    Ok(ExitCode::SUCCESS)
}

/// The reasoning rule of each role whose provider is declared, by its `reasoning` key.
fn reasoning_rules(loaded: &Loaded) -> Vec<(String, crate::llm::reasoning::ReasoningRule)> {
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
async fn resolve_all(loaded: &Loaded) -> anyhow::Result<Vec<String>> {
    let resolver = Resolver::new(&loaded.env);
    let mut done = Vec::new();
    for (key, reference) in secrets(loaded) {
        resolver.resolve(&key, reference).await?;
        done.push(key);
    }
    Ok(done)
}

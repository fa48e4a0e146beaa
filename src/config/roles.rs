//! `[roles]`: which provider and model plays each part, with the rules of each role
//! (spec/config.md, table 2.4).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::providers::{Protocol, Provider};
use super::rules::Check;

/// `[roles]`: which provider and model plays each part.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Roles {
    /// Writes subtopics and questions.
    #[serde(default)]
    pub generator: Option<Role>,
    /// Answers the questions with its reasoning.
    #[serde(default)]
    pub parent: Option<Role>,
    /// Embeds questions for similarity dedup (openai protocol only).
    #[serde(default)]
    pub embedder: Option<Role>,
    /// Judges child against parent in `compare`; the parent judges when unset.
    #[serde(default)]
    pub judge: Option<Role>,
}

/// Reasoning effort asked of an openai-protocol model.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    /// Sends no reasoning request.
    None,
    /// Low effort.
    Low,
    /// Medium effort.
    Medium,
    /// High effort.
    High,
}

/// One role's model and sampling settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Role {
    /// Name of a declared provider.
    pub provider: String,
    /// Model name as the provider spells it.
    pub model: String,
    /// Ask for reasoning.
    #[serde(default)]
    pub reasoning: bool,
    /// Bound on generated tokens, reasoning included.
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    /// Sampling temperature, 0..=2; unset leaves the provider's default.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Reasoning effort (openai protocol).
    #[serde(default)]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Thinking budget in tokens (anthropic protocol); unset is adaptive thinking.
    #[serde(default)]
    pub thinking_budget: Option<u32>,
}

fn default_max_tokens() -> u32 {
    16_384
}

/// The rules of `[roles]`, each role against the provider it names.
pub(super) fn check(check: &mut Check<'_>, roles: &Roles, providers: &BTreeMap<String, Provider>) {
    for (role_name, role) in [
        ("generator", &roles.generator),
        ("parent", &roles.parent),
        ("embedder", &roles.embedder),
        ("judge", &roles.judge),
    ] {
        if let Some(role) = role {
            check_role(check, providers, role_name, role);
        }
    }
}

fn check_role(
    check: &mut Check<'_>,
    providers: &BTreeMap<String, Provider>,
    name: &str,
    role: &Role,
) {
    let key = |k: &str| format!("roles.{name}.{k}");
    let protocol = providers.get(&role.provider).map(|p| p.protocol);
    if protocol.is_none() && !check.declared().providers.contains(&role.provider) {
        check.fail(
            key("provider"),
            format!(
                "names provider `{}`, which is not declared under `[providers]`",
                role.provider
            ),
        );
    }
    check.non_empty(&key("model"), &role.model);
    check.at_least(&key("max_tokens"), role.max_tokens.into(), 1);
    if let Some(t) = role.temperature {
        check.temperature(&key("temperature"), t);
        if role.reasoning && protocol == Some(Protocol::Anthropic) {
            check.fail(
                key("temperature"),
                "cannot be set with `reasoning = true` on the `anthropic` protocol",
            );
        }
    }
    if let Some(effort) = role.reasoning_effort {
        if effort != ReasoningEffort::None && !role.reasoning {
            check.fail(
                key("reasoning_effort"),
                "`low`, `medium` and `high` require `reasoning = true`",
            );
        }
    }
    if let Some(budget) = role.thinking_budget {
        if protocol == Some(Protocol::Openai) {
            check.fail(key("thinking_budget"), "only for the `anthropic` protocol");
        }
        if !role.reasoning {
            check.fail(key("thinking_budget"), "requires `reasoning = true`");
        }
        if budget < 1024 || budget >= role.max_tokens {
            check.fail(
                key("thinking_budget"),
                "out of range: must be at least 1024 and below `max_tokens`",
            );
        }
        if role.reasoning_effort.is_some() {
            check.fail(
                key("thinking_budget"),
                "cannot be combined with `reasoning_effort`",
            );
        }
    }
    if name == "embedder" && protocol.is_some_and(|p| p != Protocol::Openai) {
        check.fail(
            key("provider"),
            "the embedder needs a provider with `protocol = \"openai\"`",
        );
    }
}

//! `[providers.<name>]`: the LLM endpoints and their wire protocol, with their rules
//! (spec/config.md, table 2.3). URLs and keys come from the environment only (ENV-7).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::rules::{Check, url_problem, valid_name};
use crate::secrets::SecretRef;

/// Wire protocol of a provider.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// OpenAI-compatible chat completions (`/chat/completions`, `/embeddings`, `/models`).
    Openai,
    /// Anthropic Messages API (`/v1/messages`).
    Anthropic,
}

/// `[providers.<name>]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Provider {
    /// Wire protocol.
    pub protocol: Protocol,
    /// Base URL; env only (`OVERBRAINER_PROVIDERS__<NAME>__BASE_URL`).
    #[serde(default)]
    pub base_url: Option<String>,
    /// Key, a literal or a `vault:` reference; env only
    /// (`OVERBRAINER_PROVIDERS__<NAME>__API_KEY`). Unset: no authentication.
    /// An empty value is unset.
    #[serde(default, deserialize_with = "crate::secrets::optional")]
    pub api_key: Option<SecretRef>,
}

/// The rules of `[providers]`: valid names and URLs.
pub(super) fn check(check: &mut Check<'_>, providers: &BTreeMap<String, Provider>) {
    for (name, provider) in providers {
        if !valid_name(name) {
            check.fail(
                format!("providers.{name}"),
                "invalid name: use only `a-z`, `0-9` and `_`",
            );
        }
        if let Some(url) = &provider.base_url {
            if let Some(message) = url_problem(url, false) {
                check.fail(format!("providers.{name}.base_url"), message);
            }
        }
    }
}

//! `[providers.<name>]`: the LLM endpoints and their wire protocol, with their rules
//! (spec/config.md, table 2.3). URLs and keys come from the environment only (ENV-7).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::rules::{Check, url_problem, valid_name};
use crate::pricing::Price;
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
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
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
    /// USD per million input tokens, for every model of this provider, in place of its
    /// `/models` listing (PRV-14): `0` for a model you run yourself, which the budget then
    /// counts as free rather than unpriced. Set with `price_out` or not at all.
    #[serde(default)]
    pub price_in: Option<f64>,
    /// USD per million output tokens; see `price_in`.
    #[serde(default)]
    pub price_out: Option<f64>,
}

impl Provider {
    /// The price set in the configuration, in USD per token, when both halves are set.
    #[must_use]
    pub fn fixed_price(&self) -> Option<Price> {
        Some(Price {
            input: self.price_in? / 1e6,
            output: self.price_out? / 1e6,
        })
    }
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
        for (key, price) in [
            ("price_in", provider.price_in),
            ("price_out", provider.price_out),
        ] {
            if price.is_some_and(|p| !p.is_finite() || p < 0.0) {
                check.fail(
                    format!("providers.{name}.{key}"),
                    "must be a number of USD per million tokens, 0 or more",
                );
            }
        }
        if provider.price_in.is_some() != provider.price_out.is_some() {
            let (set, unset) = if provider.price_in.is_some() {
                ("price_in", "price_out")
            } else {
                ("price_out", "price_in")
            };
            check.fail(
                format!("providers.{name}.{unset}"),
                format!("`{set}` is set, so `{unset}` must be too (USD per million tokens; 0 for a model you run yourself)"),
            );
        }
    }
}

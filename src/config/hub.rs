//! `[hub]`: publishing to the Hugging Face Hub, with defaults and rules
//! (spec/config.md, table 2.9).

use serde::{Deserialize, Serialize};

use super::rules::{Check, url_problem};

/// `[hub]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct Hub {
    /// `NAMESPACE/NAME`.
    pub repo: Option<String>,
    /// Create new repositories private.
    pub private: bool,
    /// Push each run that succeeded and came back.
    pub after_training: bool,
    /// Hub endpoint; env only (`OVERBRAINER_HUB__BASE_URL`).
    pub base_url: Option<String>,
}

/// Default Hugging Face Hub endpoint (spec/config.md, ENV-7).
pub const DEFAULT_HUB_BASE_URL: &str = "https://huggingface.co";

impl Hub {
    /// The Hub endpoint in effect: `OVERBRAINER_HUB__BASE_URL`, else
    /// [`DEFAULT_HUB_BASE_URL`].
    #[must_use]
    pub fn endpoint(&self) -> &str {
        self.base_url.as_deref().unwrap_or(DEFAULT_HUB_BASE_URL)
    }
}

impl Default for Hub {
    fn default() -> Self {
        Self {
            repo: None,
            private: true,
            after_training: false,
            base_url: None,
        }
    }
}

/// The rules of `[hub]`.
pub(super) fn check(check: &mut Check<'_>, hub: &Hub) {
    if let Some(repo) = &hub.repo {
        let ok = repo.split_once('/').is_some_and(|(ns, n)| {
            !ns.is_empty()
                && !n.is_empty()
                && !n.contains('/')
                && !repo.contains(char::is_whitespace)
        });
        if !ok {
            check.fail("hub.repo", "invalid value: expected `NAMESPACE/NAME`");
        }
    }
    if let Some(url) = &hub.base_url {
        if let Some(message) = url_problem(url, true) {
            check.fail("hub.base_url", message);
        }
    }
}

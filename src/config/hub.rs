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

/// The Hub's longest repo name (the part after `/`).
pub const MAX_REPO_NAME: usize = 96;

/// What is wrong with `repo` by the Hub's rules, or `None`: `NAMESPACE/NAME`, each part
/// of letters, digits, `-`, `_`, `.`, without `--` or `..`, not starting or ending with
/// `-` or `.`; the name at most [`MAX_REPO_NAME`] characters and not ending `.git`.
#[must_use]
pub fn repo_problem(repo: &str) -> Option<String> {
    let Some((namespace, name)) = repo.split_once('/') else {
        return Some("expected `NAMESPACE/NAME`".to_owned());
    };
    for (what, part) in [("namespace", namespace), ("name", name)] {
        if part.is_empty() {
            return Some(format!("expected `NAMESPACE/NAME`: the {what} is empty"));
        }
        if !part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Some(format!(
                "the {what} may use only letters, digits, `-`, `_` and `.`"
            ));
        }
        if part.contains("--") || part.contains("..") {
            return Some(format!("the {what} may not contain `--` or `..`"));
        }
        if part.starts_with(['-', '.']) || part.ends_with(['-', '.']) {
            return Some(format!("the {what} may not start or end with `-` or `.`"));
        }
    }
    if name.len() > MAX_REPO_NAME {
        return Some(format!(
            "the name has {} characters; the Hub allows at most {MAX_REPO_NAME}",
            name.len()
        ));
    }
    if name.to_ascii_lowercase().ends_with(".git") {
        return Some("the name may not end with `.git`".to_owned());
    }
    None
}

/// The rules of `[hub]`.
pub(super) fn check(check: &mut Check<'_>, hub: &Hub) {
    if let Some(problem) = hub.repo.as_deref().and_then(repo_problem) {
        check.fail("hub.repo", format!("invalid value: {problem}"));
    }
    if let Some(url) = &hub.base_url {
        if let Some(message) = url_problem(url, true) {
            check.fail("hub.base_url", message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_names_follow_the_hub_rules_git_suffix_and_96_characters_included() {
        for good in [
            "me/demo",
            "Org_1/demo-child.v2",
            &format!("me/{}", "a".repeat(96)),
        ] {
            assert_eq!(repo_problem(good), None, "{good}");
        }
        let long = format!("me/{}", "a".repeat(97));
        for (bad, says) in [
            ("me/demo.git", "`.git`"),
            ("me/demo.GIT", "`.git`"),
            (long.as_str(), "at most 96"),
            ("demo", "NAMESPACE/NAME"),
            ("me/", "name is empty"),
            ("/demo", "namespace is empty"),
            ("me/a/b", "only letters"),
            ("me/de mo", "only letters"),
            ("me/de--mo", "`--`"),
            ("me/de..mo", "`..`"),
            ("me/-demo", "start or end"),
            ("me/demo.", "start or end"),
            ("-me/demo", "start or end"),
        ] {
            let problem = repo_problem(bad).unwrap_or_else(|| panic!("{bad} passed"));
            assert!(problem.contains(says), "{bad}: {problem}");
        }
    }
}

//! The one place where text from a provider is cleaned of secrets (SEC-5, LOG-4): every
//! key the process resolved is registered in a [`Redactor`], and every piece of server
//! text the clients keep (error bodies, replies, listings) passes through it before it is
//! stored, logged or shown.
//!
//! Providers echo keys back in their error bodies, whole or in part (OpenAI's "Incorrect
//! API key provided: sk-abc***wxyz", a proxy echoing the `Authorization` header), so
//! server error text loses every run of [`FRAGMENT`] or more characters that also occurs
//! inside a key; replies (dataset content) lose only whole keys, so that an answer that
//! mentions a key prefix such as `sk-or-v1-` stays intact.

use std::sync::{Arc, RwLock};

use secrecy::{ExposeSecret, SecretString};

/// What a redacted secret becomes.
pub const MARK: &str = "[redacted]";

/// The shortest part of a key (in characters) removed from server error text.
pub const FRAGMENT: usize = 8;

/// The known secret values of the process, shared by every client that needs them.
/// Cloning shares the set. Debug output shows only how many values it holds.
#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Arc<RwLock<Vec<SecretString>>>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} secrets)", self.values().len())
    }
}

impl Redactor {
    /// An empty set.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `secret`; values shorter than 4 characters are ignored (they would match
    /// ordinary text and protect nothing).
    pub fn add(&self, secret: &SecretString) {
        let value = secret.expose_secret();
        if value.chars().count() < 4 {
            return;
        }
        let mut secrets = self
            .secrets
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !secrets.iter().any(|s| s.expose_secret() == value) {
            secrets.push(secret.clone());
        }
    }

    fn values(&self) -> Vec<SecretString> {
        self.secrets
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// `text` with every whole occurrence of a known secret replaced by [`MARK`]. For
    /// replies: dataset content keeps everything but the keys themselves.
    #[must_use]
    pub fn whole(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in self.values() {
            let value = secret.expose_secret();
            if text.contains(value) {
                text = text.replace(value, MARK);
            }
        }
        text
    }

    /// `text` with every whole secret and every run of at least [`FRAGMENT`] characters
    /// that occurs inside a secret replaced by [`MARK`]. For server error text, which is
    /// short (quadratic in its length times the keys' lengths).
    #[must_use]
    pub fn server_text(&self, text: &str) -> String {
        let mut text = self.whole(text);
        for secret in self.values() {
            text = remove_fragments(&text, secret.expose_secret());
        }
        text
    }
}

/// `text` with each longest run of at least [`FRAGMENT`] characters that is also a
/// substring of `secret` replaced by [`MARK`].
fn remove_fragments(text: &str, secret: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut start = 0;
    while start < chars.len() {
        // The longest run starting here that occurs in the secret.
        let mut end = start;
        let mut probe = String::new();
        for (offset, c) in chars[start..].iter().enumerate() {
            probe.push(*c);
            if !secret.contains(probe.as_str()) {
                break;
            }
            end = start + offset + 1;
        }
        if end - start >= FRAGMENT {
            out.push_str(MARK);
            start = end;
        } else {
            out.push(chars[start]);
            start += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-CANARY-Hq7Wm3Xv9Kp2Tz5Rb8Nd";

    fn redactor() -> Redactor {
        let r = Redactor::new();
        r.add(&SecretString::from(KEY));
        r.add(&SecretString::from("ab"));
        r
    }

    #[test]
    fn whole_keys_go_everywhere_and_debug_shows_none() {
        let r = redactor();
        assert_eq!(
            r.whole(&format!("bad key Bearer {KEY}!")),
            "bad key Bearer [redacted]!"
        );
        // A short value is not registered: ordinary text stays.
        assert_eq!(r.whole("ab cd"), "ab cd");
        assert!(!format!("{r:?}").contains(KEY));
        // A clone shares the set.
        let other = r.clone();
        other.add(&SecretString::from("second-secret-value"));
        assert_eq!(r.whole("x second-secret-value"), "x [redacted]");
    }

    #[test]
    fn server_text_loses_partial_echoes_but_replies_keep_prefixes() {
        let r = redactor();
        let echoed = "Incorrect API key provided: sk-CANARY-H***b8Nd";
        let clean = r.server_text(echoed);
        assert!(!clean.contains("sk-CANARY-H"), "{clean}");
        assert!(clean.starts_with("Incorrect API key provided: [redacted]"));
        // Short fragments and unrelated text stay.
        assert_eq!(r.server_text("sk-CAN is fine"), "sk-CAN is fine");
        // Replies keep fragments (dataset content), only whole keys go.
        assert_eq!(r.whole(echoed), echoed);
        assert_eq!(r.server_text(&format!("é{KEY}é")), "é[redacted]é");
    }
}

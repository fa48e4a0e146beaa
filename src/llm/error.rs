//! Errors of a provider request, classified by what the caller does next: retry
//! (PRV-11), fail the item (PRV-12, PRV-13) or stop the stage (PIPE-15).

use std::time::Duration;

/// A failed provider request. Messages never contain the key nor the provider's reply:
/// error bodies are logged at `debug` only, redacted (LOG-4, [`super::Redactor`]).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// HTTP 401 or 403: the key was refused. Fatal for the stage (PIPE-15).
    #[error(
        "`providers.{provider}` refused the key (HTTP {status}); check `{}` ({DEBUG_HINT})",
        key_variable(provider)
    )]
    Auth {
        /// HTTP status.
        status: u16,
        /// The provider's name (its `[providers.NAME]` table).
        provider: String,
    },
    /// HTTP 429. Retried, after `retry_after` when the server gave one.
    #[error("rate limited (HTTP 429)")]
    RateLimited {
        /// The server's `Retry-After`, when present and readable.
        retry_after: Option<Duration>,
    },
    /// HTTP 5xx. Retried.
    #[error("server error (HTTP {status})")]
    Server {
        /// HTTP status.
        status: u16,
        /// The server's `Retry-After`, when present and readable.
        retry_after: Option<Duration>,
    },
    /// Another 4xx: retrying cannot fix it; the item fails (PRV-12).
    #[error("request rejected (HTTP {status}; {DEBUG_HINT})")]
    Rejected {
        /// HTTP status.
        status: u16,
    },
    /// No reply within `request_timeout_secs`. Retried.
    #[error("no reply within {} s", .0.as_secs())]
    Timeout(Duration),
    /// The connection failed or broke. Retried.
    #[error("cannot reach the provider")]
    Connect(#[source] reqwest::Error),
    /// The reply is not what the protocol or the stage expects. Retried (PRV-13).
    #[error("invalid reply: {0}")]
    InvalidReply(String),
}

/// Where the user finds the provider's own words about a failed request.
const DEBUG_HINT: &str = "`OVERBRAINER_LOG=debug` shows the provider's reply";

/// The environment variable that sets the key of provider `name` (ENV-2 layering:
/// `OVERBRAINER_` + the dotted key in upper case with `__` between its parts).
#[must_use]
pub fn key_variable(name: &str) -> String {
    format!("OVERBRAINER_PROVIDERS__{}__API_KEY", name.to_uppercase())
}

impl Error {
    /// Whether another attempt may succeed (PRV-11, PRV-13).
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::RateLimited { .. }
                | Self::Server { .. }
                | Self::Timeout(_)
                | Self::Connect(_)
                | Self::InvalidReply(_)
        )
    }

    /// Whether every other request would fail the same way (PIPE-15).
    #[must_use]
    pub fn is_fatal(&self) -> bool {
        matches!(self, Self::Auth { .. })
    }

    /// The wait the server asked for, if any.
    #[must_use]
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after, .. } | Self::Server { retry_after, .. } => {
                *retry_after
            }
            _ => None,
        }
    }
}

/// The most characters of a provider's error message kept in an [`Error`].
const MESSAGE_LIMIT: usize = 300;

/// The human part of an error body: `error.message` (both protocols), `message`, or the
/// start of the raw text, cleaned of secrets by `redactor` before it is shortened (so no
/// cut can hide a key from it).
pub(crate) fn error_message(body: &[u8], redactor: &super::Redactor) -> String {
    let text = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(value) => value
            .pointer("/error/message")
            .or_else(|| value.get("message"))
            .or_else(|| value.get("error"))
            .and_then(serde_json::Value::as_str)
            .map_or_else(|| String::from_utf8_lossy(body).into_owned(), str::to_owned),
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    };
    let text = redactor.server_text(text.trim());
    let text = text.trim();
    if text.is_empty() {
        return "no message".to_owned();
    }
    let mut short: String = text.chars().take(MESSAGE_LIMIT).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_message_prefers_the_nested_message_and_redacts() {
        let r = super::super::Redactor::new();
        assert_eq!(
            error_message(br#"{"error":{"message":"bad model"}}"#, &r),
            "bad model"
        );
        assert_eq!(error_message(br#"{"error":"flat"}"#, &r), "flat");
        assert_eq!(error_message(b"plain text", &r), "plain text");
        assert_eq!(error_message(b"", &r), "no message");
        assert!(
            error_message("x".repeat(1000).as_bytes(), &r)
                .chars()
                .count()
                <= MESSAGE_LIMIT + 1
        );
        r.add(&secrecy::SecretString::from("sk-redact-me-0123456789"));
        let body = format!("{}bad key sk-redact-me-0123456789", "y".repeat(290));
        let message = error_message(body.as_bytes(), &r);
        assert!(!message.contains("sk-redact"), "{message}");
    }

    #[test]
    fn messages_name_the_provider_and_its_variable_but_no_reply() {
        let auth = Error::Auth {
            status: 401,
            provider: "open-router".into(),
        };
        let text = auth.to_string();
        assert!(text.contains("`providers.open-router`"), "{text}");
        assert!(
            text.contains("OVERBRAINER_PROVIDERS__OPEN-ROUTER__API_KEY"),
            "{text}"
        );
        assert_eq!(text.matches("HTTP 401").count(), 1, "{text}");
    }

    #[test]
    fn classification() {
        let auth = Error::Auth {
            status: 401,
            provider: String::new(),
        };
        assert!(auth.is_fatal() && !auth.is_retryable());
        let rejected = Error::Rejected { status: 400 };
        assert!(!rejected.is_fatal() && !rejected.is_retryable());
        assert!(Error::Timeout(Duration::from_secs(1)).is_retryable());
        assert!(Error::InvalidReply(String::new()).is_retryable());
    }
}

//! Errors of a provider request, classified by what the caller does next: retry
//! (PRV-11), fail the item (PRV-12, PRV-13) or stop the stage (PIPE-15).

use std::time::Duration;

/// A failed provider request. Messages never contain the key.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// HTTP 401 or 403: the key was refused. Fatal for the stage (PIPE-15).
    #[error(
        "the provider refused the key (HTTP {status}): {message}; check the provider's `API_KEY`"
    )]
    Auth {
        /// HTTP status.
        status: u16,
        /// The provider's error message.
        message: String,
    },
    /// HTTP 429. Retried, after `retry_after` when the server gave one.
    #[error("rate limited (HTTP 429): {message}")]
    RateLimited {
        /// The server's `Retry-After`, when present and readable.
        retry_after: Option<Duration>,
        /// The provider's error message.
        message: String,
    },
    /// HTTP 5xx. Retried.
    #[error("server error (HTTP {status}): {message}")]
    Server {
        /// HTTP status.
        status: u16,
        /// The provider's error message.
        message: String,
        /// The server's `Retry-After`, when present and readable.
        retry_after: Option<Duration>,
    },
    /// Another 4xx: retrying cannot fix it; the item fails (PRV-12).
    #[error("request rejected (HTTP {status}): {message}")]
    Rejected {
        /// HTTP status.
        status: u16,
        /// The provider's error message.
        message: String,
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
/// start of the raw text.
pub(crate) fn error_message(body: &[u8]) -> String {
    let text = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(value) => value
            .pointer("/error/message")
            .or_else(|| value.get("message"))
            .or_else(|| value.get("error"))
            .and_then(serde_json::Value::as_str)
            .map_or_else(|| String::from_utf8_lossy(body).into_owned(), str::to_owned),
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    };
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
    fn error_message_prefers_the_nested_message() {
        assert_eq!(
            error_message(br#"{"error":{"message":"bad model"}}"#),
            "bad model"
        );
        assert_eq!(error_message(br#"{"error":"flat"}"#), "flat");
        assert_eq!(error_message(b"plain text"), "plain text");
        assert_eq!(error_message(b""), "no message");
        assert!(error_message("x".repeat(1000).as_bytes()).chars().count() <= MESSAGE_LIMIT + 1);
    }

    #[test]
    fn classification() {
        let auth = Error::Auth {
            status: 401,
            message: String::new(),
        };
        assert!(auth.is_fatal() && !auth.is_retryable());
        let rejected = Error::Rejected {
            status: 400,
            message: String::new(),
        };
        assert!(!rejected.is_fatal() && !rejected.is_retryable());
        assert!(Error::Timeout(Duration::from_secs(1)).is_retryable());
        assert!(Error::InvalidReply(String::new()).is_retryable());
    }
}

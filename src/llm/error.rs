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
    /// HTTP 429 whose message says that this one request is larger than the
    /// tokens-per-minute limit (OpenAI's and Groq's "Request too large … on tokens per min
    /// (TPM): Limit N, Requested M"): no wait lets it through, so the item fails at once.
    #[error(
        "the request alone exceeds the provider's tokens-per-minute limit (HTTP 429{}), so no retry can succeed; lower the role's `max_tokens`, shorten the prompt or raise the limit",
        tpm_numbers(*limit, *requested)
    )]
    OverRateLimit {
        /// The limit the provider named, in tokens per minute.
        limit: Option<u64>,
        /// The tokens the provider counted for the request.
        requested: Option<u64>,
    },
    /// The server asked to wait longer than `pipeline.max_retry_wait_secs` before the next
    /// request (a `Retry-After` of hours): the stage stops with what is done saved instead
    /// of sleeping. Fatal for the stage.
    #[error(
        "the provider asks to wait {} before the next request (`Retry-After`), longer than `pipeline.max_retry_wait_secs` ({} s); its limit resets at {}",
        human_duration(*wait),
        limit.as_secs(),
        resets_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    )]
    WaitTooLong {
        /// The wait the server asked for.
        wait: Duration,
        /// `pipeline.max_retry_wait_secs`.
        limit: Duration,
        /// When the wait ends (the request time plus the wait).
        resets_at: jiff::Timestamp,
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

/// `; limit N, requested M tokens` when the provider named them.
fn tpm_numbers(limit: Option<u64>, requested: Option<u64>) -> String {
    match (limit, requested) {
        (Some(limit), Some(requested)) => {
            format!("; limit {limit} tokens per minute, request {requested} tokens")
        }
        (Some(limit), None) => format!("; limit {limit} tokens per minute"),
        _ => String::new(),
    }
}

/// A wait for people: `45 s`, `12 min 5 s`, `3 h 20 min`.
#[must_use]
pub fn human_duration(wait: Duration) -> String {
    let secs = wait.as_secs();
    match (secs / 3600, secs % 3600 / 60, secs % 60) {
        (0, 0, s) => format!("{s} s"),
        (0, m, 0) => format!("{m} min"),
        (0, m, s) => format!("{m} min {s} s"),
        (h, 0, _) => format!("{h} h"),
        (h, m, _) => format!("{h} h {m} min"),
    }
}

/// Whether a 429's message says the single request exceeds the tokens-per-minute limit,
/// with the limit and the request's size when it names them. Only the explicit shapes
/// count: "request too large" about tokens per minute, or `Limit N, Requested M` with
/// M > N; numbers that say the request fits (M <= N) win over the wording. A limit that this request only shares with others ("Rate limit reached … Used
/// 29000, Requested 2000", Anthropic's "would exceed the rate limit") is an ordinary rate
/// limit that a wait fixes.
pub(crate) fn exceeds_limit_alone(message: &str) -> Option<(Option<u64>, Option<u64>)> {
    let lower = message.to_lowercase();
    let per_minute =
        lower.contains("tokens per min") || lower.contains("(tpm)") || lower.contains(" tpm");
    if !per_minute {
        return None;
    }
    let limit = number_after(&lower, "limit ");
    let requested = number_after(&lower, "requested ");
    let alone = match (limit, requested) {
        (Some(limit), Some(requested)) => requested > limit,
        _ => lower.contains("request too large"),
    };
    alone.then_some((limit, requested))
}

/// The integer (digits and thousands commas) right after the first `label` in `text` that
/// a number follows.
fn number_after(text: &str, label: &str) -> Option<u64> {
    text.match_indices(label).find_map(|(at, _)| {
        let digits: String = text[at + label.len()..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .filter(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    })
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

    /// Whether every other request would fail the same way, or the stage must stop
    /// (PIPE-15, a too long `Retry-After`).
    #[must_use]
    pub fn is_fatal(&self) -> bool {
        matches!(self, Self::Auth { .. } | Self::WaitTooLong { .. })
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
        let over = Error::OverRateLimit {
            limit: None,
            requested: None,
        };
        assert!(!over.is_fatal() && !over.is_retryable());
        let wait = Error::WaitTooLong {
            wait: Duration::from_secs(7200),
            limit: Duration::from_secs(600),
            resets_at: "2026-12-01T12:00:00Z".parse().unwrap(),
        };
        assert!(wait.is_fatal() && !wait.is_retryable());
        let text = wait.to_string();
        assert!(text.contains("2 h"), "{text}");
        assert!(
            text.contains("`pipeline.max_retry_wait_secs` (600 s)"),
            "{text}"
        );
        assert!(text.contains("2026-12-01 12:00:00 UTC"), "{text}");
    }

    #[test]
    fn regression_a_429_for_a_request_larger_than_the_tpm_limit_is_told_apart_from_a_passing_one() {
        // OpenAI (and Groq) when the one request is larger than the limit.
        let alone = "Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 342,389. The input or output tokens must be reduced in order to run successfully.";
        assert_eq!(
            exceeds_limit_alone(alone),
            Some((Some(30000), Some(342_389)))
        );
        let groq = "Request too large for model `llama-3.3-70b` in organization `org_x` service tier `on_demand` on tokens per minute (TPM): Limit 6000, Requested 7012, please reduce your message size and try again.";
        assert_eq!(exceeds_limit_alone(groq), Some((Some(6000), Some(7012))));
        let bare = "Requested 50000 tokens exceeds the TPM Limit 40000";
        assert_eq!(exceeds_limit_alone(bare), Some((Some(40000), Some(50000))));
        // Limits shared with other requests pass after a wait.
        for passing in [
            "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.",
            "This request would exceed the rate limit for your organization of 20,000 input tokens per minute.",
            "Rate limit reached for requests",
            "Rate limit reached on tokens per min (TPM): Limit 100, Used 90, Requested 20.",
            // The wording says too large, the numbers say it fits: a wait can fix it.
            "Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 2000.",
            "",
        ] {
            assert_eq!(exceeds_limit_alone(passing), None, "{passing}");
        }
    }

    #[test]
    fn waits_read_as_people_say_them() {
        assert_eq!(human_duration(Duration::from_secs(45)), "45 s");
        assert_eq!(human_duration(Duration::from_secs(600)), "10 min");
        assert_eq!(human_duration(Duration::from_secs(725)), "12 min 5 s");
        assert_eq!(human_duration(Duration::from_secs(3 * 3600)), "3 h");
        assert_eq!(
            human_duration(Duration::from_secs(3 * 3600 + 1260)),
            "3 h 21 min"
        );
    }
}

//! Errors of the Runpod REST v2 client: RFC 9457 problem bodies parsed into typed
//! errors, every provider text redacted (SEC-5, LOG-4), and the retry table of
//! `POST /v2/pods` as [`ApiError::refusal`].

use std::time::Duration;

use serde::Deserialize;

use crate::llm::Redactor;
use crate::runpod::lifecycle::Refusal;

/// The phrases of a capacity failure in a 400's `detail` (wire-facts A.6: the v2 detail
/// text, its variants, and what runpodctl treats as capacity), lowercase.
const CAPACITY_PHRASES: [&str; 5] = [
    "no longer any instances available",
    "no instances available",
    "not enough free gpus",
    "out of capacity",
    "insufficient capacity",
];

/// An RFC 9457 problem body (`application/problem+json`): `title`, `status`, `detail`,
/// `errors`. A v1-style `{"message"}` or `{"error"}` body is read as its `detail`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Problem {
    /// HTTP status of the answer.
    pub status: u16,
    /// `title`, redacted.
    pub title: String,
    /// `detail` (or `message`, `error`), redacted.
    pub detail: String,
    /// `errors`, redacted.
    pub errors: Vec<String>,
}

#[derive(Deserialize)]
struct RawProblem {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    detail: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    errors: Vec<serde_json::Value>,
}

impl Problem {
    /// The problem of an answer with `status` and `body`, every text through
    /// `redactor` (a body that is no problem JSON becomes its first 200 characters).
    #[must_use]
    pub fn parse(status: u16, body: &[u8], redactor: &Redactor) -> Self {
        let clean = |text: &str| clean(redactor, text);
        let Ok(raw) = serde_json::from_slice::<RawProblem>(body) else {
            let text: String = String::from_utf8_lossy(body).chars().take(200).collect();
            return Self {
                status,
                detail: clean(&text),
                ..Self::default()
            };
        };
        Self {
            status,
            title: raw.title.as_deref().map(clean).unwrap_or_default(),
            detail: raw
                .detail
                .or(raw.message)
                .or(raw.error)
                .as_deref()
                .map(clean)
                .unwrap_or_default(),
            errors: raw
                .errors
                .iter()
                .map(|e| match e {
                    serde_json::Value::String(text) => clean(text),
                    other => clean(&other.to_string()),
                })
                .collect(),
        }
    }

    /// The reason in one line: `detail`, then `errors`, else `title`.
    #[must_use]
    pub fn reason(&self) -> String {
        let mut reason = if self.detail.is_empty() {
            self.title.clone()
        } else {
            self.detail.clone()
        };
        if !self.errors.is_empty() {
            if !reason.is_empty() {
                reason.push_str(": ");
            }
            reason.push_str(&self.errors.join("; "));
        }
        if reason.is_empty() {
            reason = format!("HTTP {}", self.status);
        }
        reason
    }

    /// Whether a 400 says that no instance is available (the only 400 that moves to
    /// the next GPU type).
    #[must_use]
    pub fn is_capacity(&self) -> bool {
        let text = self.reason().to_lowercase();
        CAPACITY_PHRASES.iter().any(|p| text.contains(p))
    }
}

/// Provider text made safe to keep: known keys and their fragments removed, control
/// characters turned into spaces.
fn clean(redactor: &Redactor, text: &str) -> String {
    let text: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    redactor.server_text(text.trim())
}

/// Errors of the Runpod client. Messages carry redacted provider text only, never the
/// key or a request body.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The HTTP client could not be built (TLS setup).
    #[error("cannot set up the Runpod HTTP client")]
    Setup(#[source] reqwest::Error),
    /// An ID from an answer that cannot be a path segment.
    #[error("invalid Runpod ID `{0}` in an API path")]
    Url(String),
    /// The key cannot be sent in an HTTP header (a line break, a control character).
    #[error("`OVERBRAINER_RUNPOD__API_KEY` is not a valid HTTP header value")]
    BadKey,
    /// No answer within the timeout.
    #[error("Runpod API `{what}` timed out after {}s", timeout.as_secs_f64())]
    Timeout {
        /// The call, such as `POST /pods`.
        what: String,
        /// The bound.
        timeout: Duration,
    },
    /// The connection failed or broke.
    #[error("Runpod API `{what}` could not be reached: {}", innermost(source))]
    Connect {
        /// The call.
        what: String,
        /// Why (without the URL).
        #[source]
        source: reqwest::Error,
    },
    /// 429: rate limited.
    #[error("Runpod API `{what}` is rate limited{}", retry_after.map(|d| format!(" (retry after {}s)", d.as_secs())).unwrap_or_default())]
    RateLimited {
        /// The call.
        what: String,
        /// `Retry-After`.
        retry_after: Option<Duration>,
    },
    /// Any other failure status, with its problem body.
    #[error(
        "Runpod API `{what}` answered {}: {}{}",
        problem.status,
        problem.reason(),
        if problem.status == 401 || problem.status == 403 {
            " (the API key was refused: check or renew `OVERBRAINER_RUNPOD__API_KEY`)"
        } else {
            ""
        }
    )]
    Problem {
        /// The call.
        what: String,
        /// The parsed, redacted body.
        problem: Problem,
    },
    /// A success answer whose body is not what v2 documents.
    #[error("Runpod API `{what}` answered an unreadable body: {cause}")]
    Decode {
        /// The call.
        what: String,
        /// The parser's message (no body text).
        cause: String,
    },
}

impl ApiError {
    /// The HTTP status of the answer, if one came.
    #[must_use]
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::RateLimited { .. } => Some(429),
            Self::Problem { problem, .. } => Some(problem.status),
            _ => None,
        }
    }

    /// The retry table of `POST /v2/pods` (wire-facts A.2, issue 12): capacity 400 and
    /// 403 move to the next type; 402, 422 and other 4xx stop; 429 waits; 5xx, timeouts
    /// and lost connections are ambiguous (a pod may exist). An unreadable success body
    /// is ambiguous too: the pod may have been created.
    #[must_use]
    pub fn refusal(&self) -> Refusal {
        match self {
            Self::RateLimited { retry_after, .. } => Refusal::RateLimited(*retry_after),
            Self::Problem { problem, .. } => {
                let reason = problem.reason();
                match problem.status {
                    400 if problem.is_capacity() => Refusal::Capacity(reason),
                    403 => Refusal::Forbidden(reason),
                    402 => Refusal::NoCredit(reason),
                    422 => Refusal::Invalid(reason),
                    500..=599 => Refusal::Ambiguous(self.to_string()),
                    status => Refusal::Rejected {
                        status: Some(status),
                        reason,
                    },
                }
            }
            Self::Setup(_) | Self::Url(_) | Self::BadKey => Refusal::Rejected {
                status: None,
                reason: self.to_string(),
            },
            Self::Timeout { .. } | Self::Connect { .. } | Self::Decode { .. } => {
                Refusal::Ambiguous(self.to_string())
            }
        }
    }
}

/// The deepest cause of `error` (for a refused connection, the system's own words), as
/// its text: reqwest's own message only says that a request could not be sent.
fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut deepest = error;
    while let Some(next) = deepest.source() {
        deepest = next;
    }
    deepest.to_string()
}

#[cfg(test)]
mod tests {
    use secrecy::SecretString;

    use super::*;

    const KEY: &str = "rpa_CANARY7Hq2Wm9Xv4Kp8Tz3Rb6Nd1Lc5Jf0";

    fn redactor() -> Redactor {
        let r = Redactor::new();
        r.add(&SecretString::from(KEY));
        r
    }

    fn problem(status: u16, body: &str) -> ApiError {
        ApiError::Problem {
            what: "POST /pods".into(),
            problem: Problem::parse(status, body.as_bytes(), &redactor()),
        }
    }

    #[test]
    fn problem_bodies_are_parsed_with_their_errors() {
        let p = Problem::parse(
            422,
            br#"{"title":"Unprocessable Entity","status":422,"detail":"Request validation failed.","errors":["$: additional properties 'bogus' not allowed"]}"#,
            &redactor(),
        );
        assert_eq!(p.title, "Unprocessable Entity");
        assert_eq!(
            p.reason(),
            "Request validation failed.: $: additional properties 'bogus' not allowed"
        );
        // v1-style bodies and bodies that are no JSON.
        assert_eq!(
            Problem::parse(500, br#"{"error":"Something went wrong."}"#, &redactor()).reason(),
            "Something went wrong."
        );
        assert_eq!(
            Problem::parse(502, b"<html>bad\ngateway</html>", &redactor()).reason(),
            "<html>bad gateway</html>"
        );
        assert_eq!(Problem::parse(503, b"", &redactor()).reason(), "HTTP 503");
    }

    #[test]
    fn regression_an_echoed_key_never_reaches_an_error() {
        let echoed = format!(
            r#"{{"title":"Unauthorized","status":401,"detail":"bad key {KEY} (rpa_CANARY7Hq2***)","errors":["{KEY}"]}}"#
        );
        let error = problem(401, &echoed);
        let text = format!("{error} {error:?}");
        // A refused key says which variable to check, never its value.
        assert!(
            error.to_string().ends_with(
                "(the API key was refused: check or renew `OVERBRAINER_RUNPOD__API_KEY`)"
            ),
            "{error}"
        );
        assert!(!problem(422, "{}").to_string().contains("API key"));
        assert!(!text.contains(KEY), "{text}");
        assert!(!text.contains("rpa_CANARY7Hq2"), "{text}");
        assert!(!text.contains("Wm9Xv4Kp8Tz3"), "{text}");
    }

    #[test]
    fn the_create_retry_table_classifies_answers() {
        let capacity = r#"{"detail":"There are no longer any instances available with the requested specifications. Please refresh and try again.","status":400,"title":"Bad Request"}"#;
        let cases: [(ApiError, &str); 9] = [
            (
                problem(401, r#"{"detail":"missing bearer token"}"#),
                "Rejected { status: Some(401)",
            ),
            (problem(400, capacity), "Capacity"),
            (
                problem(
                    400,
                    r#"{"detail":"There are not enough free GPUs on the host machine to start this pod."}"#,
                ),
                "Capacity",
            ),
            (
                problem(400, r#"{"detail":"exactly one of gpu or cpu"}"#),
                "Rejected { status: Some(400)",
            ),
            (problem(403, r#"{"detail":"access denied"}"#), "Forbidden"),
            (
                problem(402, r#"{"detail":"insufficient balance"}"#),
                "NoCredit",
            ),
            (
                problem(422, r#"{"detail":"Request validation failed."}"#),
                "Invalid",
            ),
            (problem(500, r#"{"detail":"internal"}"#), "Ambiguous"),
            (
                ApiError::Timeout {
                    what: "POST /pods".into(),
                    timeout: Duration::from_secs(30),
                },
                "Ambiguous",
            ),
        ];
        for (error, want) in cases {
            let got = format!("{:?}", error.refusal());
            assert!(got.starts_with(want), "{error}: {got}");
        }
        let limited = ApiError::RateLimited {
            what: "POST /pods".into(),
            retry_after: Some(Duration::from_secs(3)),
        };
        assert_eq!(
            limited.refusal(),
            Refusal::RateLimited(Some(Duration::from_secs(3)))
        );
    }
}

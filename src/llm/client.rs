//! The HTTP client of one provider: sends a request through its [`WireProtocol`],
//! classifies the failure (PRV-11, PRV-12, PIPE-15) and retries what can be retried.
//!
//! Two rate limits no retry fixes end at once: a 429 that says the one request is larger
//! than the tokens-per-minute limit fails its item ([`Error::OverRateLimit`]), and a
//! `Retry-After` longer than the policy's `max_wait` ends the request with
//! [`Error::WaitTooLong`], which stops the stage instead of sleeping for hours.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};

use super::error::{error_message, exceeds_limit_alone};
use super::retry::{RetryPolicy, parse_retry_after};
use super::{ChatRequest, Completion, Error, Redactor, Role, Usage, WireProtocol, openai};

/// The outcome of a request with its retries: the result, the tokens billed over every
/// attempt that got a reply (PRV-15), and how many retries it took.
#[derive(Debug)]
pub struct Attempted<T> {
    /// The final result.
    pub result: Result<T, Error>,
    /// Tokens of every attempt that the provider answered, the final one included.
    pub usage: Usage,
    /// Retries made (0 when the first attempt settled it).
    pub retries: u32,
}

/// A client of one provider.
#[derive(Debug)]
pub struct Client {
    name: String,
    http: reqwest::Client,
    base_url: String,
    key: Option<SecretString>,
    protocol: Box<dyn WireProtocol>,
    policy: RetryPolicy,
    timeout: Duration,
    redactor: Redactor,
}

/// Where a client sends its requests and how it authenticates.
#[derive(Debug)]
pub struct Endpoint<'a> {
    /// The provider's name (its `[providers.NAME]` table), for messages.
    pub name: &'a str,
    /// The protocol it speaks.
    pub protocol: crate::config::Protocol,
    /// Base URL; paths are appended to it (PRV-1).
    pub base_url: &'a str,
    /// The key, or `None` for no authentication (PRV-2).
    pub key: Option<SecretString>,
}

impl Client {
    /// A client for `endpoint`, with a per-request `timeout` and the retry `policy`. The
    /// key joins `redactor`, the process's known secrets, which cleans every server text
    /// this client keeps.
    ///
    /// # Errors
    ///
    /// [`Error::Connect`] when the HTTP client cannot be built (no TLS backend).
    pub fn new(
        endpoint: Endpoint<'_>,
        timeout: Duration,
        policy: RetryPolicy,
        redactor: Redactor,
    ) -> Result<Self, Error> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(Error::Connect)?;
        if let Some(key) = &endpoint.key {
            redactor.add(key);
        }
        Ok(Self {
            name: endpoint.name.to_owned(),
            http,
            base_url: endpoint.base_url.trim_end_matches('/').to_owned(),
            key: endpoint.key,
            protocol: super::protocol(endpoint.protocol),
            policy,
            timeout,
            redactor,
        })
    }

    /// The retry policy in use.
    #[must_use]
    pub fn policy(&self) -> RetryPolicy {
        self.policy
    }

    fn post(&self, path: &str, body: &serde_json::Value) -> reqwest::RequestBuilder {
        self.authenticated(
            self.http
                .post(format!("{}{path}", self.base_url))
                .json(body),
        )
    }

    /// `builder` with the protocol's authentication and version headers; the key's is
    /// marked sensitive, so it never shows in a log or Debug output.
    fn authenticated(&self, mut builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        for (name, value, sensitive) in self
            .protocol
            .headers(self.key.as_ref().map(ExposeSecret::expose_secret))
        {
            if let Ok(mut value) = reqwest::header::HeaderValue::from_str(&value) {
                value.set_sensitive(sensitive);
                builder = builder.header(name, value);
            }
        }
        builder
    }

    /// Sends one chat request and checks the reply with `check` (the stage's validity
    /// rule, PRV-13: an `Err` there counts as a failed attempt and is retried). Calls
    /// `on_retry` with the failure and the wait before each retry.
    pub async fn chat<T>(
        &self,
        role: &Role,
        request: &ChatRequest,
        check: impl Fn(&Completion) -> Result<T, String>,
        on_retry: &(dyn Fn(&Error, Duration) + Sync),
    ) -> Attempted<(Completion, T)> {
        let body = self.protocol.chat_body(role, request);
        let path = self.protocol.chat_path();
        self.with_retries(
            || self.post(path, &body),
            |bytes| {
                let mut completion = self
                    .protocol
                    .parse_chat(role, bytes)
                    .map_err(|error| (error, Usage::default()))?;
                self.redact(&mut completion);
                let usage = completion.usage;
                match check(&completion) {
                    Ok(value) => Ok(((completion, value), usage)),
                    Err(reason) => Err((Error::InvalidReply(reason), usage)),
                }
            },
            on_retry,
        )
        .await
    }

    /// Removes known secrets from the server's text in `completion` (its answer, reasoning
    /// and stop reason), before anyone stores or shows it.
    fn redact(&self, completion: &mut Completion) {
        completion.text = self.redactor.whole(&completion.text);
        if let Some(reasoning) = &mut completion.reasoning {
            *reasoning = self.redactor.whole(reasoning);
        }
        if let Some(reason) = &mut completion.finish_reason {
            *reason = self.redactor.whole(reason);
        }
    }

    /// Embeds `inputs` with `model` through `POST /embeddings` (openai protocol only).
    pub async fn embed(
        &self,
        model: &str,
        inputs: &[String],
        on_retry: &(dyn Fn(&Error, Duration) + Sync),
    ) -> Attempted<Vec<Vec<f32>>> {
        let body = openai::embeddings_body(model, inputs);
        self.with_retries(
            || self.post("/embeddings", &body),
            |bytes| {
                openai::parse_embeddings(bytes, inputs.len())
                    .map_err(|error| (error, Usage::default()))
            },
            on_retry,
        )
        .await
    }

    /// Reads `GET /models` once, within `cap`, without retries (PRV-14).
    ///
    /// # Errors
    ///
    /// The request's [`Error`] when it fails, times out or is not JSON.
    pub async fn models(&self, cap: Duration) -> Result<serde_json::Value, Error> {
        let builder = self.authenticated(
            self.http
                .get(format!("{}/models", self.base_url))
                .timeout(cap),
        );
        let bytes = self.send_once(builder, cap).await?;
        let text = self.redactor.whole(&String::from_utf8_lossy(&bytes));
        serde_json::from_str(&text)
            .map_err(|error| Error::InvalidReply(format!("not JSON: {error}")))
    }

    async fn with_retries<T>(
        &self,
        build: impl Fn() -> reqwest::RequestBuilder,
        decode: impl Fn(&[u8]) -> Result<(T, Usage), (Error, Usage)>,
        on_retry: &(dyn Fn(&Error, Duration) + Sync),
    ) -> Attempted<T> {
        let mut usage = Usage::default();
        let mut retries = 0;
        loop {
            let error = match self.send_once(build(), self.timeout).await {
                Ok(bytes) => match decode(&bytes) {
                    Ok((value, spent)) => {
                        usage.add(spent);
                        return Attempted {
                            result: Ok(value),
                            usage,
                            retries,
                        };
                    }
                    Err((error, spent)) => {
                        usage.add(spent);
                        error
                    }
                },
                Err(error) => error,
            };
            if !error.is_retryable() || retries >= self.policy.max_retries {
                return Attempted {
                    result: Err(error),
                    usage,
                    retries,
                };
            }
            let asked = error.retry_after();
            if let (true, Some(wait)) = (self.policy.too_long(asked), asked) {
                return Attempted {
                    result: Err(Error::WaitTooLong {
                        wait,
                        limit: self.policy.max_wait,
                        resets_at: reset_time(wait),
                    }),
                    usage,
                    retries,
                };
            }
            let wait = self.policy.wait(retries, asked);
            tracing::debug!(%error, wait_ms = wait.as_millis(), "retrying a provider request");
            on_retry(&error, wait);
            retries += 1;
            tokio::time::sleep(self.policy.sleep_for(wait)).await;
        }
    }

    /// Sends a request once and classifies its failure; the body of a failure is logged
    /// at `debug` only, redacted (LOG-4).
    async fn send_once(
        &self,
        builder: reqwest::RequestBuilder,
        timeout: Duration,
    ) -> Result<Vec<u8>, Error> {
        let classify = |error: reqwest::Error| {
            if error.is_timeout() {
                Error::Timeout(timeout)
            } else {
                Error::Connect(error.without_url())
            }
        };
        let response = builder.send().await.map_err(classify)?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| parse_retry_after(value, jiff::Timestamp::now()));
        let bytes = response.bytes().await.map_err(classify)?;
        if status.is_success() {
            return Ok(bytes.to_vec());
        }
        let status = status.as_u16();
        let message = error_message(&bytes, &self.redactor);
        tracing::debug!(
            provider = self.name,
            status,
            reply = message,
            "provider error reply"
        );
        Err(match status {
            401 | 403 => Error::Auth {
                status,
                provider: self.name.clone(),
            },
            429 => match exceeds_limit_alone(&message) {
                Some((limit, requested)) => Error::OverRateLimit { limit, requested },
                None => Error::RateLimited { retry_after },
            },
            500..=599 => Error::Server {
                status,
                retry_after,
            },
            _ => Error::Rejected { status },
        })
    }
}

/// When a wait asked for now ends, to the second.
fn reset_time(wait: Duration) -> jiff::Timestamp {
    let now = jiff::Timestamp::now();
    let end = jiff::SignedDuration::try_from(wait)
        .ok()
        .and_then(|wait| now.checked_add(wait).ok())
        .unwrap_or(jiff::Timestamp::MAX);
    end.round(jiff::Unit::Second).unwrap_or(end)
}

#[cfg(test)]
mod tests;

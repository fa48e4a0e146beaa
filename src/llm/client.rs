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
        let mut builder = self
            .http
            .post(format!("{}{path}", self.base_url))
            .json(body);
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
        let mut builder = self
            .http
            .get(format!("{}/models", self.base_url))
            .timeout(cap);
        for (name, value, sensitive) in self
            .protocol
            .headers(self.key.as_ref().map(ExposeSecret::expose_secret))
        {
            if let Ok(mut value) = reqwest::header::HeaderValue::from_str(&value) {
                value.set_sensitive(sensitive);
                builder = builder.header(name, value);
            }
        }
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
mod tests {
    use super::*;
    use crate::config::Protocol;
    use serde_json::json;
    use std::sync::atomic::{AtomicU32, Ordering};
    use wiremock::matchers::{header, header_exists, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    const KEY: &str = "sk-distinctive-J5hT8qW2xN7cV4mR9kP3";

    fn role(model: &str) -> Role {
        Role {
            provider: "p".into(),
            model: model.into(),
            reasoning: true,
            max_tokens: 64,
            temperature: None,
            reasoning_effort: None,
            thinking_budget: None,
        }
    }

    fn fast(max_retries: u32) -> RetryPolicy {
        RetryPolicy {
            max_retries,
            base: Duration::from_millis(10),
            cap: Duration::from_millis(20),
            max_wait: Duration::from_secs(600),
            second: Duration::from_millis(1),
        }
    }

    fn client(server: &MockServer, protocol: Protocol, retries: u32, timeout: Duration) -> Client {
        Client::new(
            Endpoint {
                name: "p",
                protocol,
                base_url: &server.uri(),
                key: Some(SecretString::from(KEY)),
            },
            timeout,
            fast(retries),
            Redactor::new(),
        )
        .unwrap()
    }

    fn request() -> ChatRequest {
        ChatRequest {
            system: Some("sys".into()),
            user: "q".into(),
        }
    }

    fn ok_reply() -> ResponseTemplate {
        ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"message": {"content": "A", "reasoning": "R"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 2, "completion_tokens": 3}}))
    }

    #[tokio::test]
    async fn openai_happy_path_sends_bearer_key() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/chat/completions"))
            .and(header("authorization", format!("Bearer {KEY}").as_str()))
            .respond_with(ok_reply())
            .expect(1)
            .mount(&server)
            .await;
        let c = client(&server, Protocol::Openai, 0, Duration::from_secs(5));
        assert!(!format!("{c:?}").contains(KEY));
        let out = c
            .chat(&role("r1"), &request(), |_| Ok(()), &|_, _| {})
            .await;
        let (completion, ()) = out.result.unwrap();
        assert_eq!(completion.text, "A");
        assert_eq!(completion.reasoning.as_deref(), Some("R"));
        assert_eq!(
            out.usage,
            Usage {
                input_tokens: 2,
                output_tokens: 3
            }
        );
    }

    #[tokio::test]
    async fn anthropic_happy_path_sends_its_headers() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/messages"))
            .and(header("x-api-key", KEY))
            .and(header(
                "anthropic-version",
                super::super::anthropic::API_VERSION,
            ))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "content": [{"type": "thinking", "thinking": "T"}, {"type": "text", "text": "A"}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 4, "output_tokens": 5}})))
            .expect(1)
            .mount(&server)
            .await;
        let c = client(&server, Protocol::Anthropic, 0, Duration::from_secs(5));
        let out = c
            .chat(&role("claude-x"), &request(), |_| Ok(()), &|_, _| {})
            .await;
        let (completion, ()) = out.result.unwrap();
        assert_eq!(completion.reasoning.as_deref(), Some("T"));
        assert_eq!(out.usage.output_tokens, 5);
    }

    #[tokio::test]
    async fn no_key_sends_no_authentication() {
        let server = MockServer::start().await;
        Mock::given(header_exists("authorization"))
            .respond_with(ResponseTemplate::new(401))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ok_reply())
            .mount(&server)
            .await;
        let c = Client::new(
            Endpoint {
                name: "p",
                protocol: Protocol::Openai,
                base_url: &server.uri(),
                key: None,
            },
            Duration::from_secs(5),
            fast(0),
            Redactor::new(),
        )
        .unwrap();
        assert!(
            c.chat(&role("m"), &request(), |_| Ok(()), &|_, _| {})
                .await
                .result
                .is_ok()
        );
    }

    #[tokio::test]
    async fn retries_rate_limits_and_server_errors() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "0"))
            .up_to_n_times(1)
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(500).set_body_string("boom"))
            .up_to_n_times(1)
            .with_priority(2)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ok_reply())
            .with_priority(3)
            .mount(&server)
            .await;
        let c = client(&server, Protocol::Openai, 5, Duration::from_secs(5));
        let seen = AtomicU32::new(0);
        let out = c
            .chat(&role("m"), &request(), |_| Ok(()), &|_, _| {
                seen.fetch_add(1, Ordering::SeqCst);
            })
            .await;
        assert!(out.result.is_ok());
        assert_eq!(out.retries, 2);
        assert_eq!(seen.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn regression_a_429_for_a_request_over_the_tpm_limit_fails_at_once() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(429).set_body_json(json!({"error": {
                "message": "Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 342389. The input or output tokens must be reduced in order to run successfully.",
                "type": "tokens", "code": "rate_limit_exceeded"}})))
            .expect(1)
            .mount(&server)
            .await;
        let c = client(&server, Protocol::Openai, 5, Duration::from_secs(5));
        let out = c.chat(&role("m"), &request(), |_| Ok(()), &|_, _| {}).await;
        assert_eq!(out.retries, 0);
        let error = out.result.unwrap_err();
        assert!(
            matches!(
                error,
                Error::OverRateLimit {
                    limit: Some(30000),
                    requested: Some(342_389)
                }
            ),
            "{error:?}"
        );
        assert!(!error.is_fatal());
        assert!(
            error.to_string().contains("limit 30000 tokens per minute"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn regression_a_retry_after_longer_than_max_wait_ends_the_request_instead_of_sleeping() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "7200"))
            .expect(1)
            .mount(&server)
            .await;
        // A real second per second: the test would hang for two hours if it slept.
        let policy = RetryPolicy {
            second: Duration::from_secs(1),
            ..fast(5)
        };
        let c = Client::new(
            Endpoint {
                name: "p",
                protocol: Protocol::Openai,
                base_url: &server.uri(),
                key: None,
            },
            Duration::from_secs(5),
            policy,
            Redactor::new(),
        )
        .unwrap();
        let before = jiff::Timestamp::now();
        let out = c.chat(&role("m"), &request(), |_| Ok(()), &|_, _| {}).await;
        let after = jiff::Timestamp::now();
        let Err(Error::WaitTooLong {
            wait,
            limit,
            resets_at,
        }) = out.result
        else {
            panic!("{:?}", out.result);
        };
        assert_eq!(
            (wait, limit),
            (Duration::from_secs(7200), Duration::from_secs(600))
        );
        let span = jiff::SignedDuration::from_secs(7200);
        assert!(
            resets_at
                >= (before + span).round(jiff::Unit::Second).unwrap()
                    - jiff::SignedDuration::from_secs(1)
        );
        assert!(resets_at <= (after + span).round(jiff::Unit::Second).unwrap());
    }

    #[tokio::test]
    async fn on_retry_hears_the_wait_the_server_asked_for() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(503).insert_header("retry-after", "30"))
            .up_to_n_times(1)
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ok_reply())
            .with_priority(2)
            .mount(&server)
            .await;
        let c = client(&server, Protocol::Openai, 5, Duration::from_secs(5));
        let waits = std::sync::Mutex::new(Vec::new());
        let out = c
            .chat(&role("m"), &request(), |_| Ok(()), &|_, wait| {
                waits.lock().unwrap().push(wait);
            })
            .await;
        assert!(out.result.is_ok());
        assert_eq!(*waits.lock().unwrap(), vec![Duration::from_secs(30)]);
    }

    #[tokio::test]
    async fn timeouts_are_retried_then_fail() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ok_reply().set_delay(Duration::from_secs(3)))
            .mount(&server)
            .await;
        let c = client(&server, Protocol::Openai, 1, Duration::from_millis(200));
        let out = c.chat(&role("m"), &request(), |_| Ok(()), &|_, _| {}).await;
        assert!(matches!(out.result, Err(Error::Timeout(_))));
        assert_eq!(out.retries, 1);
    }

    #[tokio::test]
    async fn auth_and_bad_requests_are_not_retried() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(401)
                    .set_body_json(json!({"error": {"message": "invalid key"}})),
            )
            .expect(1)
            .mount(&server)
            .await;
        let c = client(&server, Protocol::Openai, 5, Duration::from_secs(5));
        let out = c.chat(&role("m"), &request(), |_| Ok(()), &|_, _| {}).await;
        let error = out.result.unwrap_err();
        assert!(error.is_fatal());
        assert!(
            !error.to_string().contains("invalid key"),
            "the body is debug only"
        );
        assert!(error.to_string().contains("`providers.p`"));
        assert!(!format!("{error:?}").contains(KEY));

        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(400)
                    .set_body_json(json!({"error": {"message": "thinking not supported"}})),
            )
            .expect(1)
            .mount(&server)
            .await;
        let c = client(&server, Protocol::Openai, 5, Duration::from_secs(5));
        let out = c.chat(&role("m"), &request(), |_| Ok(()), &|_, _| {}).await;
        assert!(matches!(
            out.result,
            Err(Error::Rejected { status: 400, .. })
        ));
    }

    #[tokio::test]
    async fn invalid_replies_are_retried_and_their_tokens_counted() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ok_reply())
            .expect(3)
            .mount(&server)
            .await;
        let c = client(&server, Protocol::Openai, 2, Duration::from_secs(5));
        let out = c
            .chat(
                &role("m"),
                &request(),
                |_| Err::<(), _>("no JSON array".to_owned()),
                &|_, _| {},
            )
            .await;
        assert!(matches!(out.result, Err(Error::InvalidReply(_))));
        assert_eq!(
            out.usage,
            Usage {
                input_tokens: 6,
                output_tokens: 9
            }
        );
    }

    #[tokio::test]
    async fn embeddings_and_models() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/embeddings"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "data": [{"index": 0, "embedding": [1.0, 0.0]}], "usage": {"prompt_tokens": 3}})))
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/models"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": []})))
            .mount(&server)
            .await;
        let c = client(&server, Protocol::Openai, 0, Duration::from_secs(5));
        let out = c.embed("e", &["x".to_owned()], &|_, _| {}).await;
        assert_eq!(out.result.unwrap(), vec![vec![1.0, 0.0]]);
        assert_eq!(out.usage.input_tokens, 3);
        assert_eq!(
            c.models(Duration::from_secs(1)).await.unwrap(),
            json!({"data": []})
        );
    }
}

//! The client against a local stand-in provider (wiremock): authentication, retries,
//! the failures that end at once, and the tokens counted over every attempt.

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
            ResponseTemplate::new(401).set_body_json(json!({"error": {"message": "invalid key"}})),
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
    // The cap only bounds the wait: generous, so that a loaded machine does not fail it.
    assert_eq!(
        c.models(Duration::from_secs(30)).await.unwrap(),
        json!({"data": []})
    );
}

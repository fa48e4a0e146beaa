//! Provider replies that other tools got wrong, through the real binary against stand-in
//! providers (issue 8, "Provider replies"): reasoning before a lone `</think>`, Anthropic
//! thinking judged by model, a 429 that no retry fixes, a `Retry-After` of hours, and long
//! waits shown at the default log level.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::pipeline::{
    lines, openai_reply, overbrainer, project, stdout, user_text, write_questions,
};
use crate::util::output_text;

/// A project whose parent is `model` on provider `other` speaking `protocol`, with
/// `reasoning = true`, one request at a time and the given `[pipeline]` lines.
fn config(protocol: &str, model: &str, pipeline: &str) -> String {
    format!(
        r#"[project]
name = "p"

[[topics]]
name = "rust"
subtopics = 1
questions_per_subtopic = 1

[providers.stand]
protocol = "openai"

[providers.other]
protocol = "{protocol}"

[roles]
generator = {{ provider = "stand", model = "gen-model" }}
parent = {{ provider = "other", model = "{model}", reasoning = true }}

[pipeline]
max_retries = 3
request_timeout_secs = 5
{pipeline}
"#
    )
}

/// Requests seen per question.
type Attempts = Arc<Mutex<HashMap<String, u32>>>;

/// Counts the requests per question; the reply comes from `reply(question, attempt)`.
fn counting(
    reply: impl Fn(&str, u32) -> ResponseTemplate + Send + Sync + 'static,
) -> (
    Attempts,
    impl Fn(&Request) -> ResponseTemplate + Send + Sync + 'static,
) {
    let attempts: Attempts = Arc::default();
    let seen = attempts.clone();
    let responder = move |request: &Request| {
        let question = user_text(request);
        let attempt = {
            let mut map = seen.lock().unwrap();
            let n = map.entry(question.clone()).or_default();
            *n += 1;
            *n
        };
        reply(&question, attempt)
    };
    (attempts, responder)
}

fn answers_by_id(project: &crate::util::TestProject) -> HashMap<String, Value> {
    lines(project, "data/answers.jsonl")
        .into_iter()
        .map(|a| (a["id"].as_str().unwrap().to_owned(), a))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn regression_a_server_that_sends_only_the_closing_think_tag_gives_usable_answers() {
    // A Qwen deployment without a reasoning parser: its template pre-fills `<think>`, so
    // the content is the reasoning, a lone `</think>`, then the answer.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(|request: &Request| {
            let question = user_text(request);
            openai_reply(
                &json!({"content": format!("Thinking about {question}.\nStep two.\n</think>\n\nAnswer to {question}")}),
                "stop",
            )
        })
        .expect(2)
        .mount(&server)
        .await;
    let project = project(&config("openai", "Qwen/Qwen3-32B", ""));
    write_questions(&project, &["q1", "q2"]);
    let output = overbrainer(&project, &server, &["answers"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    assert!(
        stdout(&output).starts_with("answers: 2 done, 0 skipped, 0 failed, 0 excluded"),
        "{}",
        output_text(&output)
    );
    for (id, answer) in answers_by_id(&project) {
        assert_eq!(answer["meta"]["excluded"], Value::Null, "{id}");
        assert_eq!(answer["meta"]["reasoning_kind"], "raw", "{id}");
        assert_eq!(answer["messages"][1]["content"], format!("Answer to {id}"));
        assert_eq!(
            answer["messages"][1]["reasoning_content"],
            format!("Thinking about {id}.\nStep two.")
        );
    }
    let split = overbrainer(&project, &server, &["split"]).await;
    assert!(
        stdout(&split).contains("0 excluded"),
        "{}",
        output_text(&split)
    );
}

/// An anthropic-protocol parent `model` answering with a thinking block.
async fn anthropic_thinking(model: &str) -> (crate::util::TestProject, std::process::Output) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/messages"))
        .respond_with(|_: &Request| {
            ResponseTemplate::new(200).set_body_json(json!({
                "content": [{"type": "thinking", "thinking": "T", "signature": "s"},
                            {"type": "text", "text": "A"}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 4}}))
        })
        .expect(1)
        .mount(&server)
        .await;
    let project = project(&config("anthropic", model, ""));
    write_questions(&project, &["q1"]);
    let output = overbrainer(&project, &server, &["answers"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    (project, output)
}

#[tokio::test(flavor = "multi_thread")]
async fn regression_anthropic_thinking_is_excluded_as_summarized_only_for_models_documented_to_summarize()
 {
    for model in ["claude-3-7-sonnet-20250219", "MiniMax-M2"] {
        let (project, output) = anthropic_thinking(model).await;
        let answer = &answers_by_id(&project)["q1"];
        assert_eq!(answer["meta"]["excluded"], Value::Null, "{model}");
        assert_eq!(answer["meta"]["reasoning_kind"], "raw", "{model}");
        assert_eq!(answer["messages"][1]["reasoning_content"], "T", "{model}");
        assert!(
            !output_text(&output).contains("does not return raw reasoning"),
            "{model}: {}",
            output_text(&output)
        );
    }
    let (project, output) = anthropic_thinking("claude-sonnet-4-5-20250929").await;
    let answer = &answers_by_id(&project)["q1"];
    assert_eq!(answer["meta"]["excluded"], "no_raw_reasoning");
    assert_eq!(answer["meta"]["reasoning_kind"], "summary");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("Claude 4 and later"), "{stderr}");
}

#[test]
fn config_check_names_the_reasoning_rule_of_each_role() {
    let cases = [
        (
            "anthropic",
            "claude-opus-4-6",
            "summaries: Anthropic documents summarized thinking for Claude 4 and later",
        ),
        (
            "anthropic",
            "claude-3-7-sonnet-20250219",
            "raw: Anthropic documents full thinking for Claude Sonnet 3.7",
        ),
        (
            "anthropic",
            "MiniMax-M2",
            "raw: not a Claude model documented to summarize",
        ),
        (
            "openai",
            "google/gemini-2.5-pro",
            "summary: Claude, Gemini and OpenAI models hide",
        ),
        ("openai", "Qwen/Qwen3-32B", "reasoning is raw"),
    ];
    for (protocol, model, rule) in cases {
        let project = project(&config(protocol, model, ""));
        let output = project.cmd().args(["config", "check"]).output().unwrap();
        assert!(output.status.success(), "{}", output_text(&output));
        let line = stdout(&output)
            .lines()
            .find(|l| l.starts_with("roles.parent.reasoning = true"))
            .map(str::to_owned)
            .unwrap_or_default();
        assert!(line.contains(rule), "{model}: {line}");
        let generator = stdout(&output)
            .lines()
            .find(|l| l.starts_with("roles.generator.reasoning = false"))
            .map(str::to_owned)
            .unwrap_or_default();
        assert!(generator.contains("reasoning is raw"), "{generator}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn regression_a_429_for_a_request_over_the_tpm_limit_fails_its_item_at_once() {
    let server = MockServer::start().await;
    let (attempts, responder) = counting(|question, _| {
        match question {
        "big" => ResponseTemplate::new(429).set_body_json(json!({"error": {
            "message": "Request too large for parent-model in organization org-x on tokens per min (TPM): Limit 30000, Requested 342389. The input or output tokens must be reduced in order to run successfully.",
            "type": "tokens", "code": "rate_limit_exceeded"}})),
        _ => openai_reply(&json!({"content": "A", "reasoning": "R"}), "stop"),
    }
    });
    Mock::given(method("POST"))
        .respond_with(responder)
        .mount(&server)
        .await;
    let project = project(&config("openai", "parent-model", ""));
    write_questions(&project, &["small", "big", "other"]);
    let output = overbrainer(&project, &server, &["answers"]).await;
    assert!(!output.status.success(), "{}", output_text(&output));
    assert!(
        stdout(&output).starts_with("answers: 2 done, 0 skipped, 1 failed"),
        "{}",
        output_text(&output)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("question `big` failed: the request alone exceeds the provider's tokens-per-minute limit"),
        "{stderr}"
    );
    assert!(stderr.contains("limit 30000 tokens per minute"), "{stderr}");
    assert_eq!(attempts.lock().unwrap()["big"], 1, "retried in vain");
    let ids: Vec<String> = answers_by_id(&project).into_keys().collect();
    assert!(!ids.contains(&"big".to_owned()), "{ids:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn regression_a_retry_after_of_hours_stops_the_stage_with_what_is_done_saved() {
    let server = MockServer::start().await;
    let limited = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let still = limited.clone();
    let (attempts, responder) = counting(move |question, _| {
        if question == "q2" && still.load(std::sync::atomic::Ordering::SeqCst) {
            // Two hours: longer than `max_retry_wait_secs = 60` below.
            ResponseTemplate::new(429).insert_header("retry-after", "7200")
        } else {
            openai_reply(&json!({"content": "A", "reasoning": "R"}), "stop")
        }
    });
    Mock::given(method("POST"))
        .respond_with(responder)
        .mount(&server)
        .await;
    let project = project(&config(
        "openai",
        "parent-model",
        "concurrency = 1\nmax_retry_wait_secs = 60",
    ));
    write_questions(&project, &["q1", "q2", "q3"]);
    let before = jiff::Timestamp::now();
    let output = overbrainer(&project, &server, &["answers"]).await;
    assert!(!output.status.success(), "{}", output_text(&output));
    let text = output_text(&output);
    assert!(stdout(&output).contains("[failed]"), "{text}");
    assert!(stdout(&output).contains("0 failed"), "{text}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the provider asks to wait 2 h before the next request"),
        "{stderr}"
    );
    assert!(
        stderr.contains("`pipeline.max_retry_wait_secs` (60 s)"),
        "{stderr}"
    );
    assert!(stderr.contains("run `overbrainer answers`"), "{stderr}");
    // The reset time is the request time plus two hours, to the second.
    let reset = stderr
        .split("resets at ")
        .nth(1)
        .and_then(|rest| rest.get(..19))
        .unwrap_or_default();
    let reset: jiff::civil::DateTime = reset.parse().unwrap_or_else(|_| panic!("{stderr}"));
    let reset = reset.to_zoned(jiff::tz::TimeZone::UTC).unwrap().timestamp();
    let expected = before + jiff::SignedDuration::from_secs(7200);
    assert!(
        reset >= expected - jiff::SignedDuration::from_secs(1),
        "{reset} before {expected}"
    );
    assert_eq!(attempts.lock().unwrap()["q2"], 1, "it waited and retried");
    let done = answers_by_id(&project);
    assert!(!done.contains_key("q2"));
    // The history records the stop; a rerun once the limit has reset asks only for the rest.
    limited.store(false, std::sync::atomic::Ordering::SeqCst);
    let asked_before: u32 = attempts.lock().unwrap().values().sum();
    let rerun = overbrainer(&project, &server, &["answers"]).await;
    assert!(rerun.status.success(), "{}", output_text(&rerun));
    assert_eq!(answers_by_id(&project).len(), 3);
    let asked: u32 = attempts.lock().unwrap().values().sum();
    assert_eq!(asked - asked_before, 3 - u32::try_from(done.len()).unwrap());
}

#[tokio::test(flavor = "multi_thread")]
async fn waits_of_a_few_seconds_or_more_are_shown_at_the_default_log_level() {
    let server = MockServer::start().await;
    let (attempts, responder) = counting(|question, attempt| match (question, attempt) {
        // Thirty seconds by the rules; `OVERBRAINER_TEST_SECOND_MS=10` makes it 0.3 s.
        ("slow", 1) => ResponseTemplate::new(429).insert_header("retry-after", "30"),
        ("quick", 1) => ResponseTemplate::new(503).insert_header("retry-after", "1"),
        _ => openai_reply(&json!({"content": "A", "reasoning": "R"}), "stop"),
    });
    Mock::given(method("POST"))
        .respond_with(responder)
        .mount(&server)
        .await;
    let project = project(&config("openai", "parent-model", ""));
    write_questions(&project, &["slow", "quick"]);
    let output = overbrainer(&project, &server, &["answers"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "answers: question `slow` waits 30 s before its retry: rate limited (HTTP 429)"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("question `quick` waits"), "{stderr}");
    let attempts = attempts.lock().unwrap();
    assert_eq!((attempts["slow"], attempts["quick"]), (2, 2));
}

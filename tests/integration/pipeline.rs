//! The dataset pipeline through the real binary against stand-in providers (wiremock
//! servers speaking the openai and anthropic wire protocols), scripted per test: resume,
//! retries, exclusions, fatal errors, Ctrl-C, rejected items and damaged JSONL files
//! (spec/pipeline.md).

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt as _;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::util::{TestProject, output_text};

/// A key that must never appear in any output or file.
pub(crate) const KEY: &str = "sk-pipeline-R6tY2wQ9mK4xZ7vB3nH8";

/// Prompts that the stand-ins can parse.
const SUBTOPICS_PROMPT: &str = "SUBTOPICS|{{ topic }}|{{ count }}";
const QUESTIONS_PROMPT: &str =
    "QUESTIONS|{{ topic }}|{{ subtopic }}|{{ count }}|{{ accepted | length }}";
const SYSTEM_PROMPT: &str = "EXPERT|{{ topic }}|{{ description }}";

pub(crate) fn config(protocol: &str, parent_model: &str, reasoning: bool, extra: &str) -> String {
    format!(
        r#"[project]
name = "p"

[[topics]]
name = "rust"
description = "The Rust language"
subtopics = 2
questions_per_subtopic = 3

[providers.stand]
protocol = "openai"

[providers.other]
protocol = "{protocol}"

[roles]
generator = {{ provider = "stand", model = "gen-model" }}
parent = {{ provider = "other", model = "{parent_model}", reasoning = {reasoning} }}

[pipeline]
concurrency = 4
max_retries = 3
request_timeout_secs = 1
{extra}
"#
    )
}

/// A project with the parseable prompts and `config`.
pub(crate) fn project(config: &str) -> TestProject {
    let project = TestProject::with_config(config);
    project.write("prompts/subtopics.txt", SUBTOPICS_PROMPT);
    project.write("prompts/questions.txt", QUESTIONS_PROMPT);
    project.write("prompts/answer_system.txt", SYSTEM_PROMPT);
    project
}

/// Runs `overbrainer <args>` in `project` against `server` (both providers), off the async
/// runtime so the stand-in keeps serving.
pub(crate) async fn overbrainer(
    project: &TestProject,
    server: &MockServer,
    args: &[&str],
) -> std::process::Output {
    let mut cmd = project.cmd();
    cmd.args(args)
        .env("OVERBRAINER_PROVIDERS__STAND__BASE_URL", server.uri())
        .env("OVERBRAINER_PROVIDERS__STAND__API_KEY", KEY)
        .env("OVERBRAINER_PROVIDERS__OTHER__BASE_URL", server.uri())
        .env("OVERBRAINER_PROVIDERS__OTHER__API_KEY", KEY)
        .env("OVERBRAINER_TEST_SECOND_MS", "10");
    let output = tokio::task::spawn_blocking(move || cmd.output().expect("run overbrainer"))
        .await
        .expect("join");
    assert!(
        !output_text(&output).contains(KEY),
        "the key leaked: {}",
        output_text(&output)
    );
    output
}

pub(crate) fn lines(project: &TestProject, relative: &str) -> Vec<Value> {
    let path = project.path().join(relative);
    if !path.exists() {
        return Vec::new();
    }
    project
        .read(relative)
        .lines()
        .map(|l| serde_json::from_str(l).expect("valid JSON line"))
        .collect()
}

pub(crate) fn user_text(request: &Request) -> String {
    let body: Value = serde_json::from_slice(&request.body).expect("JSON body");
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

pub(crate) fn openai_reply(message: &Value, finish: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "choices": [{"message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 20}
    }))
}

/// A generator: subtopic names `sub0`, `sub1`, … and questions made of fresh words only.
fn generator(delay: Duration) -> impl Fn(&Request) -> ResponseTemplate + Send + Sync + 'static {
    let counter = Arc::new(AtomicU32::new(0));
    move |request: &Request| {
        let text = user_text(request);
        let parts: Vec<&str> = text.split('|').collect();
        let items: Vec<String> = match parts[0] {
            "SUBTOPICS" => {
                let count: u32 = parts[2].parse().unwrap();
                (0..count)
                    .map(|_| format!("sub{}", counter.fetch_add(1, Ordering::SeqCst)))
                    .collect()
            }
            "QUESTIONS" => {
                let count: u32 = parts[3].parse().unwrap();
                (0..count)
                    .map(|_| {
                        let n = counter.fetch_add(1, Ordering::SeqCst);
                        format!("alpha{n} beta{n} gamma{n} delta{n}?")
                    })
                    .collect()
            }
            other => panic!("unexpected prompt {other}"),
        };
        openai_reply(
            &json!({"content": format!("Here you go: {}", json!(items))}),
            "stop",
        )
        .set_delay(delay)
    }
}

pub(crate) async fn mount_generator(server: &MockServer, delay: Duration) {
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .and(wiremock::matchers::body_string_contains("gen-model"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(generator(delay))
        .mount(server)
        .await;
}

/// A parent on the openai protocol answering with raw reasoning.
pub(crate) async fn mount_parent(server: &MockServer) {
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .and(wiremock::matchers::body_string_contains("parent-model"))
        .respond_with(|request: &Request| {
            let question = user_text(request);
            openai_reply(
                &json!({"content": format!("Answer to {question}"), "reasoning": "thinking"}),
                "stop",
            )
        })
        .mount(server)
        .await;
}

pub(crate) fn write_questions(project: &TestProject, ids: &[&str]) {
    let mut text = String::new();
    for id in ids {
        text.push_str(
            &json!({"id": id, "topic": "rust", "subtopic": "s", "question": id}).to_string(),
        );
        text.push('\n');
    }
    project.write("data/questions.jsonl", &text);
}

pub(crate) fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn run_builds_the_dataset_then_resumes_without_requests() {
    let server = MockServer::start().await;
    mount_generator(&server, Duration::ZERO).await;
    mount_parent(&server).await;
    let project = project(&config("openai", "parent-model", true, ""));
    let output = overbrainer(&project, &server, &["run"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    let out = stdout(&output);
    for stage in ["subtopics:", "questions:", "answers:", "split:"] {
        assert_eq!(
            out.lines().filter(|l| l.starts_with(stage)).count(),
            1,
            "{out}"
        );
    }
    assert!(
        out.contains("split: 5 train, 1 eval, 0 excluded, 0 orphaned"),
        "{out}"
    );
    assert!(out.contains("cost unknown"), "{out}");
    assert_eq!(lines(&project, "data/subtopics.jsonl").len(), 2);
    let questions = lines(&project, "data/questions.jsonl");
    assert_eq!(questions.len(), 6);
    assert!(
        questions
            .iter()
            .all(|q| q["id"].as_str().unwrap().len() == 32)
    );
    let answers = lines(&project, "data/answers.jsonl");
    assert_eq!(answers.len(), 6);
    for answer in &answers {
        assert_eq!(answer["meta"]["reasoning_kind"], "raw");
        assert_eq!(answer["meta"]["excluded"], Value::Null);
        assert_eq!(answer["messages"][1]["reasoning_content"], "thinking");
        assert_eq!(answer["meta"]["input_tokens"], 10);
    }
    assert_eq!(
        lines(&project, "data/train.jsonl").len() + lines(&project, "data/eval.jsonl").len(),
        6
    );
    let history = lines(&project, ".overbrainer/history.jsonl");
    let stages: Vec<&str> = history
        .iter()
        .map(|h| h["stage"].as_str().unwrap())
        .collect();
    assert_eq!(stages, ["subtopics", "questions", "answers", "split"]);
    assert!(history.iter().all(|h| h["status"] == "ok"));

    let before = server.received_requests().await.unwrap().len();
    let again = overbrainer(&project, &server, &["run"]).await;
    assert!(again.status.success(), "{}", output_text(&again));
    let chat_requests = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .skip(before)
        .filter(|r| r.url.path() == "/chat/completions")
        .count();
    assert_eq!(chat_requests, 0, "a rerun asked again");
    assert!(
        stdout(&again).contains("answers: 0 done, 6 skipped"),
        "{}",
        stdout(&again)
    );

    let history_out = project.cmd().arg("history").output().unwrap();
    assert!(history_out.status.success());
    let text = stdout(&history_out);
    assert!(text.contains("answers: 2 executions, 6 items"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("total:")), "{text}");
    let all = project.cmd().args(["history", "--all"]).output().unwrap();
    assert_eq!(stdout(&all).lines().count(), 8);
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_parent_with_reasoning_is_excluded_and_warned() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/messages"))
        .and(header("x-api-key", KEY))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(|request: &Request| {
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            assert_eq!(body["thinking"], json!({"type": "adaptive"}));
            assert_eq!(body["system"], "EXPERT|rust|The Rust language");
            ResponseTemplate::new(200).set_body_json(json!({
                "content": [{"type": "thinking", "thinking": "summary"}, {"type": "text", "text": "A"}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 4}}))
        })
        .expect(2)
        .mount(&server)
        .await;
    let project = project(&config(
        "anthropic",
        "claude-opus-4-6",
        true,
        "include_system_prompt = true",
    ));
    write_questions(&project, &["q1", "q2"]);
    let output = overbrainer(&project, &server, &["answers"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no_raw_reasoning"), "{stderr}");
    assert!(stdout(&output).starts_with(
        "answers: 2 done, 0 skipped, 0 failed, 2 excluded, 6 input tokens, 8 output tokens"
    ));
    for answer in lines(&project, "data/answers.jsonl") {
        assert_eq!(answer["meta"]["excluded"], "no_raw_reasoning");
        assert_eq!(answer["meta"]["reasoning_kind"], "summary");
        assert_eq!(answer["meta"]["finish_reason"], "end_turn");
        assert_eq!(answer["messages"][0]["role"], "system");
        assert_eq!(answer["messages"][2]["reasoning_content"], "summary");
    }
    let split = overbrainer(&project, &server, &["split"]).await;
    assert!(
        stdout(&split)
            .contains("split: 0 train, 0 eval, 2 excluded (no_raw_reasoning 2), 0 orphaned"),
        "{}",
        stdout(&split)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_retry_rate_limits_server_errors_and_timeouts() {
    let server = MockServer::start().await;
    let attempts: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let seen = attempts.clone();
    Mock::given(method("POST"))
        .respond_with(move |request: &Request| {
            let question = user_text(request);
            let attempt = {
                let mut map = seen.lock().unwrap();
                let n = map.entry(question.clone()).or_default();
                *n += 1;
                *n
            };
            match (question.as_str(), attempt) {
                ("rate", 1) => ResponseTemplate::new(429).insert_header("retry-after", "0"),
                ("flaky", 1) => ResponseTemplate::new(500).set_body_string("boom"),
                ("slow", 1) => openai_reply(&json!({"content": "late"}), "stop")
                    .set_delay(Duration::from_secs(3)),
                _ => openai_reply(&json!({"content": "A", "reasoning": "R"}), "stop"),
            }
        })
        .mount(&server)
        .await;
    let project = project(&config("openai", "parent-model", true, ""));
    write_questions(&project, &["rate", "flaky", "slow", "plain"]);
    let output = overbrainer(&project, &server, &["answers"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    assert!(
        stdout(&output).starts_with("answers: 4 done, 0 skipped, 0 failed, 0 excluded"),
        "{}",
        stdout(&output)
    );
    let attempts = attempts.lock().unwrap();
    assert_eq!(
        (
            attempts["rate"],
            attempts["flaky"],
            attempts["slow"],
            attempts["plain"]
        ),
        (2, 2, 2, 1)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_excluded_and_reasoning_shapes() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(|request: &Request| match user_text(request).as_str() {
            "truncated" => openai_reply(&json!({"content": "A", "reasoning": "R"}), "length"),
            "refused" => openai_reply(&json!({"content": "", "refusal": "no"}), "stop"),
            "empty" => openai_reply(&json!({"content": "<think>R</think>  "}), "stop"),
            "details" => openai_reply(
                &json!({"content": "A", "reasoning_details": [{"type": "reasoning.text", "text": "R"}]}),
                "stop",
            ),
            "content" => openai_reply(&json!({"content": "A", "reasoning_content": "R"}), "stop"),
            "think" => openai_reply(&json!({"content": "<think>R</think>A"}), "stop"),
            "none" => openai_reply(&json!({"content": "A"}), "stop"),
            _ => openai_reply(&json!({"content": "A", "reasoning": "R"}), "stop"),
        })
        .mount(&server)
        .await;
    let project = project(&config("openai", "parent-model", true, ""));
    let ids = [
        "truncated",
        "refused",
        "empty",
        "details",
        "content",
        "think",
        "reasoning",
        "none",
    ];
    write_questions(&project, &ids);
    let output = overbrainer(&project, &server, &["answers"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    let by_id: HashMap<String, Value> = lines(&project, "data/answers.jsonl")
        .into_iter()
        .map(|a| (a["id"].as_str().unwrap().to_owned(), a))
        .collect();
    let expected = [
        ("truncated", json!("truncated")),
        ("refused", json!("refused")),
        ("empty", json!("empty")),
        ("details", Value::Null),
        ("content", Value::Null),
        ("think", Value::Null),
        ("reasoning", Value::Null),
        ("none", json!("no_raw_reasoning")),
    ];
    for (id, excluded) in expected {
        assert_eq!(by_id[id]["meta"]["excluded"], excluded, "{id}");
    }
    for id in ["details", "content", "think", "reasoning"] {
        assert_eq!(by_id[id]["messages"][1]["content"], "A", "{id}");
        assert_eq!(by_id[id]["messages"][1]["reasoning_content"], "R", "{id}");
    }
    let split = overbrainer(&project, &server, &["split"]).await;
    let line = stdout(&split);
    assert!(
        line.contains("4 excluded (truncated 1, refused 1, empty 1, no_raw_reasoning 1)"),
        "{line}"
    );
    assert!(line.contains("3 train, 1 eval"), "{line}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_key_midway_stops_answers_and_keeps_what_came() {
    let server = MockServer::start().await;
    let calls = Arc::new(AtomicU32::new(0));
    let counter = calls.clone();
    Mock::given(method("POST"))
        .respond_with(move |_: &Request| {
            if counter.fetch_add(1, Ordering::SeqCst) < 2 {
                openai_reply(&json!({"content": "A", "reasoning": "R"}), "stop")
            } else {
                ResponseTemplate::new(401)
                    .set_body_json(json!({"error": {"message": "invalid api key"}}))
            }
        })
        .mount(&server)
        .await;
    let project = project(
        &config("openai", "parent-model", true, "").replace("concurrency = 4", "concurrency = 1"),
    );
    write_questions(&project, &["q1", "q2", "q3", "q4", "q5"]);
    let output = overbrainer(&project, &server, &["answers"]).await;
    assert!(!output.status.success());
    assert!(
        stdout(&output).starts_with(
            "answers: 2 done, 0 skipped, 0 failed, 0 excluded, 20 input tokens, 40 output tokens"
        ),
        "{}",
        output_text(&output)
    );
    // The provider's body is for `debug` only (LOG-4); the message names who refused.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("invalid api key"), "{stderr}");
    assert!(
        stderr.contains("`providers.other` refused the key (HTTP 401)"),
        "{stderr}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3, "retried a refused key");
    assert_eq!(lines(&project, "data/answers.jsonl").len(), 2);
    let history = lines(&project, ".overbrainer/history.jsonl");
    assert_eq!(history[0]["status"], "failed");
    assert!(!project.read(".overbrainer/history.jsonl").contains(KEY));
}

#[tokio::test(flavor = "multi_thread")]
async fn questions_interrupted_then_resumed_asks_only_for_what_is_missing() {
    let server = MockServer::start().await;
    mount_generator(&server, Duration::from_millis(500)).await;
    let project = project(
        &config("openai", "parent-model", false, "question_batch_size = 1")
            .replace("concurrency = 4", "concurrency = 1"),
    );
    project.write(
        "data/subtopics.jsonl",
        "{\"topic\":\"rust\",\"subtopic\":\"a\"}\n{\"topic\":\"rust\",\"subtopic\":\"b\"}\n",
    );
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_overbrainer"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", project.home())
        .env("OVERBRAINER_PROVIDERS__STAND__BASE_URL", server.uri())
        .env("OVERBRAINER_PROVIDERS__STAND__API_KEY", KEY)
        .env("OVERBRAINER_PROVIDERS__OTHER__BASE_URL", server.uri())
        .arg("-C")
        .arg(project.path())
        .arg("questions")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    crate::util::poll_async(Duration::from_secs(30), "two questions", || async {
        let written = lines(&project, "data/questions.jsonl").len();
        if written >= 2 { Ok(()) } else { Err(written) }
    })
    .await;
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let output = tokio::task::spawn_blocking(move || {
        crate::util::wait_output(
            child,
            std::time::Duration::from_secs(300),
            "the interrupted command",
        )
    })
    .await
    .unwrap();
    assert!(!output.status.success());
    assert!(
        stdout(&output).starts_with("questions:"),
        "{}",
        output_text(&output)
    );
    let kept = lines(&project, "data/questions.jsonl").len();
    assert!((2..6).contains(&kept), "{kept}");
    let history = lines(&project, ".overbrainer/history.jsonl");
    assert_eq!(history.last().unwrap()["status"], "interrupted");

    let before = server.received_requests().await.unwrap().len();
    let output = overbrainer(&project, &server, &["questions"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    let questions = lines(&project, "data/questions.jsonl");
    assert_eq!(questions.len(), 6);
    for sub in ["a", "b"] {
        assert_eq!(questions.iter().filter(|q| q["subtopic"] == sub).count(), 3);
    }
    let requests = server.received_requests().await.unwrap();
    let asked: u32 = requests[before..]
        .iter()
        .filter(|r| r.url.path() == "/chat/completions")
        .map(|r| {
            user_text(r)
                .split('|')
                .nth(3)
                .unwrap()
                .parse::<u32>()
                .unwrap()
        })
        .sum();
    assert_eq!(
        asked as usize,
        6 - kept,
        "the rerun asked for more than was missing"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rejected_questions_and_parallel_duplicates_are_never_kept() {
    let server = MockServer::start().await;
    // Every subtopic gets the same candidates, the rejected one among them.
    Mock::given(method("POST"))
        .respond_with(|_: &Request| {
            openai_reply(
                &json!({"content": json!(["Why is the sky BLUE", "How do tides work?", "What is a monad?", "How does rust borrow checking work?"]).to_string()}),
                "stop",
            )
        })
        .mount(&server)
        .await;
    let extra = "question_batch_size = 4";
    let project = project(
        &config("openai", "parent-model", false, extra)
            .replace("questions_per_subtopic = 3", "questions_per_subtopic = 2")
            .replace("subtopics = 2", "subtopics = 3"),
    );
    project.write(
        "data/subtopics.jsonl",
        "{\"topic\":\"rust\",\"subtopic\":\"a\"}\n{\"topic\":\"rust\",\"subtopic\":\"b\"}\n{\"topic\":\"rust\",\"subtopic\":\"c\"}\n",
    );
    project.write("data/rejected.jsonl", "{\"kind\":\"question\",\"topic\":\"rust\",\"subtopic\":\"a\",\"text\":\"why is the sky blue?\"}\n");
    let output = overbrainer(&project, &server, &["questions"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    let texts: Vec<String> = lines(&project, "data/questions.jsonl")
        .iter()
        .map(|q| q["question"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(texts.len(), 3, "{texts:?}");
    let unique: std::collections::HashSet<&String> = texts.iter().collect();
    assert_eq!(unique.len(), 3, "{texts:?}");
    assert!(
        !texts.iter().any(|t| t.to_lowercase().contains("sky")),
        "{texts:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn damaged_jsonl_last_lines_are_kept_or_skipped() {
    let server = MockServer::start().await;
    mount_parent(&server).await;
    let project = project(&config("openai", "parent-model", true, ""));
    // A valid last line without its newline is kept.
    project.write(
        "data/questions.jsonl",
        "{\"id\":\"q1\",\"topic\":\"rust\",\"subtopic\":\"s\",\"question\":\"one\"}\n{\"id\":\"q2\",\"topic\":\"rust\",\"subtopic\":\"s\",\"question\":\"two\"}",
    );
    let output = overbrainer(&project, &server, &["answers"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    assert_eq!(lines(&project, "data/answers.jsonl").len(), 2);
    // A torn last line is skipped with a warning naming the file and the line.
    let torn = format!(
        "{}{{\"id\":\"q3\",\"topic\":\"ru",
        project.read("data/questions.jsonl").trim_end().to_owned() + "\n"
    );
    project.write("data/questions.jsonl", &torn);
    let output = overbrainer(&project, &server, &["answers"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("line 3") && stderr.contains("questions.jsonl"),
        "{stderr}"
    );
    assert!(
        stdout(&output).starts_with("answers: 0 done, 2 skipped"),
        "{}",
        stdout(&output)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_topic_and_missing_base_url_are_reported() {
    let server = MockServer::start().await;
    let project = project(&config("openai", "parent-model", true, ""));
    write_questions(&project, &["q1"]);
    let output = overbrainer(&project, &server, &["answers", "--topic", "nope"]).await;
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("`nope` is not a topic of this project; its topics are `rust`")
    );
    let output = project.cmd().arg("answers").output().unwrap();
    assert!(!output.status.success());
    assert!(
        output_text(&output).contains("OVERBRAINER_PROVIDERS__OTHER__BASE_URL"),
        "{}",
        output_text(&output)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn embeddings_reject_paraphrases_and_listed_prices_give_a_cost() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(|_: &Request| {
            let candidates = json!([
                "How do lifetimes work?",
                "Explain lifetimes to me",
                "What is a trait object?"
            ]);
            openai_reply(&json!({"content": candidates.to_string()}), "stop")
        })
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/embeddings"))
        .respond_with(|request: &Request| {
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            assert_eq!(body["model"], "embed-model");
            let inputs = body["input"].as_array().unwrap();
            let data: Vec<Value> = inputs
                .iter()
                .enumerate()
                .map(|(index, text)| {
                    let text = text.as_str().unwrap();
                    let vector = if text.contains("lifetimes") { [1.0, 0.0] } else { [0.0, 1.0] };
                    json!({"index": index, "embedding": vector})
                })
                .collect();
            ResponseTemplate::new(200).set_body_json(json!({"data": data, "usage": {"prompt_tokens": inputs.len(), "total_tokens": inputs.len()}}))
        })
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/models"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": [
            {"id": "gen-model", "pricing": {"prompt": "0.001", "completion": "0.002"}},
            {"id": "embed-model", "pricing": {"prompt": "0.0001", "completion": "0"}}]})))
        .mount(&server)
        .await;
    let config = config("openai", "parent-model", false, "").replace(
        "parent = {",
        "embedder = { provider = \"stand\", model = \"embed-model\" }\nparent = {",
    );
    let project = project(&config.replace("subtopics = 2", "subtopics = 1"));
    project.write(
        "data/subtopics.jsonl",
        "{\"topic\":\"rust\",\"subtopic\":\"a\"}\n",
    );
    project.write(
        "data/questions.jsonl",
        "{\"id\":\"x\",\"topic\":\"rust\",\"subtopic\":\"a\",\"question\":\"Why do lifetimes exist?\"}\n",
    );
    let output = overbrainer(&project, &server, &["questions"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    let texts: Vec<String> = lines(&project, "data/questions.jsonl")
        .iter()
        .map(|q| q["question"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        texts,
        ["Why do lifetimes exist?", "What is a trait object?"]
    );
    let line = stdout(&output);
    assert!(
        line.starts_with("questions: 1 done, 0 skipped, 0 failed, 1 added"),
        "{line}"
    );
    assert!(line.contains('$') && !line.contains("unknown"), "{line}");
    let requests = server.received_requests().await.unwrap();
    let seed_embeddings = requests
        .iter()
        .filter(|r| {
            r.url.path() == "/embeddings"
                && String::from_utf8_lossy(&r.body).contains("Why do lifetimes exist?")
        })
        .count();
    assert_eq!(
        seed_embeddings, 1,
        "the seed questions were embedded more than once"
    );
    let listings = requests
        .iter()
        .filter(|r| r.url.path() == "/models")
        .count();
    assert_eq!(
        listings, 1,
        "the price listing was read more than once per provider"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_item_fails_the_stage_and_a_rerun_asks_only_for_it_then_force_asks_all() {
    let server = MockServer::start().await;
    let first = Arc::new(AtomicU32::new(0));
    let seen = first.clone();
    Mock::given(method("POST"))
        .respond_with(move |request: &Request| {
            if user_text(request) == "bad" && seen.fetch_add(1, Ordering::SeqCst) == 0 {
                ResponseTemplate::new(400)
                    .set_body_json(json!({"error": {"message": "model does not support this"}}))
            } else {
                openai_reply(&json!({"content": "A", "reasoning": "R"}), "stop")
            }
        })
        .mount(&server)
        .await;
    let project = project(&config("openai", "parent-model", true, ""));
    write_questions(&project, &["good", "bad", "fine"]);
    let output = overbrainer(&project, &server, &["answers"]).await;
    assert!(!output.status.success());
    assert!(
        stdout(&output).starts_with("answers: 2 done, 0 skipped, 1 failed"),
        "{}",
        output_text(&output)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.matches("request rejected (HTTP 400").count(),
        1,
        "{stderr}"
    );
    assert!(!stderr.contains("model does not support this"), "{stderr}");
    assert_eq!(first.load(Ordering::SeqCst), 1, "a 400 was retried");
    let chats = |requests: &[Request]| {
        requests
            .iter()
            .filter(|r| r.url.path() == "/chat/completions")
            .count()
    };
    let before = chats(&server.received_requests().await.unwrap());
    let output = overbrainer(&project, &server, &["answers"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    assert!(
        stdout(&output).starts_with("answers: 1 done, 2 skipped, 0 failed"),
        "{}",
        stdout(&output)
    );
    assert_eq!(
        chats(&server.received_requests().await.unwrap()) - before,
        1
    );
    let output = overbrainer(
        &project,
        &server,
        &["answers", "--force", "--topic", "rust"],
    )
    .await;
    assert!(output.status.success(), "{}", output_text(&output));
    assert!(
        stdout(&output).starts_with("answers: 3 done, 0 skipped"),
        "{}",
        stdout(&output)
    );
    assert_eq!(lines(&project, "data/answers.jsonl").len(), 3);
    let history = lines(&project, ".overbrainer/history.jsonl");
    let statuses: Vec<&str> = history
        .iter()
        .map(|h| h["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["failed", "ok", "ok"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn subtopics_drop_rejected_and_repeated_names_and_fail_when_nothing_new_comes() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(|_: &Request| {
            let names = json!(["Ownership", "ownership", " ", "Lifetimes", " Traits "]);
            openai_reply(&json!({"content": format!("Sure [1]: {names}")}), "stop")
        })
        .mount(&server)
        .await;
    let project = project(
        &config("openai", "parent-model", false, "").replace("subtopics = 2", "subtopics = 3"),
    );
    project.write(
        "data/rejected.jsonl",
        "{\"kind\":\"subtopic\",\"topic\":\"rust\",\"subtopic\":\"lifetimes\"}\n",
    );
    let output = overbrainer(&project, &server, &["subtopics"]).await;
    assert!(!output.status.success());
    assert!(
        stdout(&output).starts_with("subtopics: 0 done, 0 skipped, 1 failed, 2 added"),
        "{}",
        output_text(&output)
    );
    let names: Vec<Value> = lines(&project, "data/subtopics.jsonl")
        .iter()
        .map(|s| s["subtopic"].clone())
        .collect();
    assert_eq!(names, [json!("Ownership"), json!("Traits")]);
    // One request that added names, then `max_retries` + 1 that brought nothing new.
    let chats = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.method.as_str() == "POST")
        .count();
    assert_eq!(chats, 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn split_counts_one_topic_and_warns_when_everything_is_orphaned() {
    let server = MockServer::start().await;
    mount_parent(&server).await;
    let project = project(&config("openai", "parent-model", true, ""));
    write_questions(&project, &["q1", "q2", "q3"]);
    assert!(
        overbrainer(&project, &server, &["answers"])
            .await
            .status
            .success()
    );
    let output = overbrainer(&project, &server, &["split", "--topic", "rust"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    assert!(
        stdout(&output).contains("2 train, 1 eval, 0 excluded, 0 orphaned (topic `rust`)"),
        "{}",
        stdout(&output)
    );
    let train = project.read("data/train.jsonl");
    let output = overbrainer(&project, &server, &["split"]).await;
    assert!(output.status.success());
    assert_eq!(
        project.read("data/train.jsonl"),
        train,
        "the split is not deterministic"
    );
    std::fs::remove_file(project.path().join("data/questions.jsonl")).unwrap();
    let output = overbrainer(&project, &server, &["split"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    assert!(
        stdout(&output).contains("0 train, 0 eval, 0 excluded, 3 orphaned"),
        "{}",
        stdout(&output)
    );
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("train and eval are empty"),
        "{}",
        output_text(&output)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn regression_split_without_an_answers_file_refuses_and_keeps_a_pre_split_dataset() {
    // The demo ships `train.jsonl` and `eval.jsonl` without `answers.jsonl`; `split` used
    // to rewrite both as empty files and exit 0 (tester).
    let server = MockServer::start().await;
    let project = project(&config("openai", "parent-model", true, ""));
    let train = "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"a\"}]}\n";
    std::fs::create_dir_all(project.path().join("data")).unwrap();
    std::fs::write(project.path().join("data/train.jsonl"), train).unwrap();
    std::fs::write(project.path().join("data/eval.jsonl"), train).unwrap();
    let output = overbrainer(&project, &server, &["split"]).await;
    assert!(!output.status.success(), "{}", output_text(&output));
    assert!(
        output_text(&output).contains("answers.jsonl` does not exist"),
        "{}",
        output_text(&output)
    );
    assert_eq!(project.read("data/train.jsonl"), train);
    assert_eq!(project.read("data/eval.jsonl"), train);
}

#[tokio::test(flavor = "multi_thread")]
async fn run_reloads_a_changed_config_and_stops_on_an_invalid_one() {
    for valid in [true, false] {
        let server = MockServer::start().await;
        let project = project(&config("openai", "parent-model", true, ""));
        let config_path = project.path().join("overbrainer.toml");
        let edited = Arc::new(AtomicU32::new(0));
        let inner_generator = generator(Duration::ZERO);
        let (path, flag) = (config_path.clone(), edited.clone());
        Mock::given(method("POST"))
            .and(wiremock::matchers::body_string_contains("gen-model"))
            .respond_with(move |request: &Request| {
                // The first subtopics request edits the configuration of the running `run`.
                if flag.fetch_add(1, Ordering::SeqCst) == 0 {
                    let text = std::fs::read_to_string(&path).unwrap();
                    let text = if valid {
                        text.replace("concurrency = 4", "concurrency = 12")
                    } else {
                        text.replace("concurrency = 4", "concurrency = 0")
                    };
                    std::fs::write(&path, text).unwrap();
                }
                inner_generator(request)
            })
            .mount(&server)
            .await;
        mount_parent(&server).await;
        let output = overbrainer(&project, &server, &["run"]).await;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if valid {
            assert!(output.status.success(), "{}", output_text(&output));
            assert!(stderr.contains("reloaded"), "{stderr}");
        } else {
            assert!(!output.status.success());
            assert!(stderr.contains("pipeline.concurrency"), "{stderr}");
            assert!(
                !stdout(&output).contains("questions:"),
                "{}",
                stdout(&output)
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_question_is_recorded_and_never_generated_again() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(|_: &Request| {
            let candidates = json!([
                "First alpha question?",
                "Second beta question?",
                "Third gamma question?"
            ]);
            openai_reply(&json!({"content": candidates.to_string()}), "stop")
        })
        .mount(&server)
        .await;
    let config = config("openai", "parent-model", false, "")
        .replace("subtopics = 2", "subtopics = 1")
        .replace("questions_per_subtopic = 3", "questions_per_subtopic = 2");
    let project = project(&config);
    project.write(
        "data/subtopics.jsonl",
        "{\"topic\":\"rust\",\"subtopic\":\"a\"}\n",
    );
    assert!(
        overbrainer(&project, &server, &["questions"])
            .await
            .status
            .success()
    );
    let first = lines(&project, "data/questions.jsonl");
    assert_eq!(first.len(), 2);
    let id = first[0]["id"].as_str().unwrap().to_owned();
    let files = overbrainer::dataset::DataFiles::new(&project.path().join("data"));
    let deleted = overbrainer::dataset::delete::delete_question(&files, &id)
        .unwrap()
        .unwrap();
    assert_eq!(deleted.question, "First alpha question?");
    assert!(
        project
            .read("data/rejected.jsonl")
            .contains("First alpha question?")
    );
    let output = overbrainer(&project, &server, &["questions"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    let texts: Vec<Value> = lines(&project, "data/questions.jsonl")
        .iter()
        .map(|q| q["question"].clone())
        .collect();
    assert_eq!(
        texts,
        [
            json!("Second beta question?"),
            json!("Third gamma question?")
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_template_error_stops_the_stage_before_any_request() {
    let server = MockServer::start().await;
    mount_parent(&server).await;
    let project = project(&config("openai", "parent-model", true, ""));
    project.write(
        "prompts/answer_system.txt",
        "EXPERT|{{ topic }}|{{ undefined_thing }}",
    );
    write_questions(&project, &["q1"]);
    let output = overbrainer(&project, &server, &["answers"]).await;
    assert!(!output.status.success());
    assert!(
        stdout(&output).starts_with("answers: 0 done"),
        "{}",
        output_text(&output)
    );
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("prompts/answer_system.txt"),
        "{}",
        output_text(&output)
    );
    let chats = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.method.as_str() == "POST")
        .count();
    assert_eq!(chats, 0);
    assert!(!project.path().join("data/answers.jsonl").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn questions_first_completes_short_topics_with_their_own_history_line() {
    let server = MockServer::start().await;
    mount_generator(&server, Duration::ZERO).await;
    let project = project(&config("openai", "parent-model", false, ""));
    project.write(
        "data/subtopics.jsonl",
        "{\"topic\":\"rust\",\"subtopic\":\"given\"}\n",
    );
    let output = overbrainer(&project, &server, &["questions", "--topic", "rust"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    let out = stdout(&output);
    assert!(
        out.lines()
            .next()
            .unwrap()
            .starts_with("subtopics: 1 done, 0 skipped, 0 failed, 1 added"),
        "{out}"
    );
    assert!(
        out.lines()
            .nth(1)
            .unwrap()
            .starts_with("questions: 2 done, 0 skipped, 0 failed, 6 added"),
        "{out}"
    );
    let history = lines(&project, ".overbrainer/history.jsonl");
    let stages: Vec<&str> = history
        .iter()
        .map(|h| h["stage"].as_str().unwrap())
        .collect();
    assert_eq!(stages, ["subtopics", "questions"]);
    assert_eq!(history[0]["input_tokens"], 10);
    assert_eq!(history[1]["input_tokens"], 20);
}

/// A stand-in `axolotl` for the chaining test: `train` writes an adapter file into the
/// output directory named by `axolotl.yaml`, a train and an end metric line (as the
/// metrics plugin would) and exits 0. It only shows that `run` hands
/// over to training; real Axolotl runs in the training tests.
fn stand_in_axolotl(dir: &std::path::Path) -> std::path::PathBuf {
    let venv = dir.join("venv");
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    let program = venv.join("bin/axolotl");
    std::fs::write(
        &program,
        concat!(
            "#!/bin/sh\nset -e\n",
            "out=$(sed -n 's/^output_dir: *//p' \"$2\" | tr -d \"'\\\"\")\n",
            "mkdir -p \"${out:-output}\"\n",
            "echo '{}' > \"${out:-output}/adapter_config.json\"\n",
            "echo '{\"kind\":\"train\",\"ts\":1,\"step\":1,\"max_steps\":1,\"epoch\":1.0,\"loss\":1.5}' >> metrics.jsonl\n",
            "echo '{\"kind\":\"end\",\"ts\":2,\"step\":1}' >> metrics.jsonl\n",
        ),
    )
    .unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    venv
}

#[tokio::test(flavor = "multi_thread")]
async fn run_trains_after_the_split_when_training_is_configured() {
    let server = MockServer::start().await;
    mount_generator(&server, Duration::ZERO).await;
    mount_parent(&server).await;
    let project = project(&config("openai", "parent-model", true, ""));
    let venv = stand_in_axolotl(&project.home());
    let text = project.read("overbrainer.toml")
        + &format!(
            "\n[training]\ntarget = \"here\"\nbase_model = \"/models/tiny\"\nadapter = \"lora\"\n\n[targets.here]\nkind = \"local\"\nvenv = \"{}\"\n",
            venv.display()
        );
    project.write("overbrainer.toml", &text);
    let output = overbrainer(&project, &server, &["run"]).await;
    let out = stdout(&output);
    assert!(
        out.contains("split: 5 train, 1 eval"),
        "{}",
        output_text(&output)
    );
    assert!(output.status.success(), "{}", output_text(&output));
    assert!(out.contains("train: adapter in runs/"), "{out}");
    let runs: Vec<_> = std::fs::read_dir(project.path().join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("run.json").is_file())
        .collect();
    assert_eq!(runs.len(), 1);
    assert!(runs[0].join("output/adapter_config.json").is_file());
    assert_eq!(
        std::fs::read_to_string(runs[0].join("train.jsonl")).unwrap(),
        project.read("data/train.jsonl"),
        "the run did not train on the split it just wrote"
    );
}

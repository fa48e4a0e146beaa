//! `compare`'s judging speed (issue 15, "Speed"): 48 questions, each judged in both orders
//! (every question is in the swap sample at 50 or fewer), at `pipeline.concurrency` 16
//! against a stand-in openai judge that answers each request after 200 ms. A question's
//! two requests go one after the other, so the ideal is 48 / 16 × 2 × 0.2 s = 1.2 s;
//! target: within 1.2 × that. Each verdict is appended (and synced) as it comes. Run with
//! `cargo bench --bench compare`; the child's side is `bench/compare.sh`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::too_many_lines,
    reason = "a benchmark: failing loudly is the point, and figures are approximate"
)]

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use overbrainer::compare::judge::{Judge, judge_missing};
use overbrainer::compare::setup::{ChildAnswer, Gguf, Question, Setup};
use overbrainer::config::{Protocol, Role};
use overbrainer::llm::retry::RetryPolicy;
use overbrainer::llm::{Client, Endpoint, Redactor};
use overbrainer::pipeline::templates::{Prompt, Template};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const QUESTIONS: usize = 48;
const CONCURRENCY: usize = 16;
const DELAY: Duration = Duration::from_millis(200);

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(bench());
}

async fn bench() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({
                    "choices": [{"message": {"content": "{\"verdict\": \"tie\", \"reason\": \"Both fine.\"}"}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 200, "completion_tokens": 20}}))
                .set_delay(DELAY),
        )
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().expect("temp dir");
    let questions: Vec<Question> = (0..QUESTIONS)
        .map(|n| Question {
            id: format!("q{n}"),
            topic: "t".into(),
            subtopic: "s".into(),
            system: None,
            user: format!("Question {n}?"),
            parent_answer: format!("The parent's answer {n}."),
            parent_input_tokens: 10,
            parent_output_tokens: 20,
            parent_latency_secs: None,
            parent_ttft_secs: None,
        })
        .collect();
    let answers: HashMap<String, ChildAnswer> = questions
        .iter()
        .map(|q| {
            let answer = ChildAnswer {
                id: q.id.clone(),
                text: "The child's answer.".into(),
                ttft_secs: Some(0.1),
                total_secs: Some(1.0),
                output_tokens: Some(10),
                tokens_per_second: Some(10.0),
                cut: false,
                error: None,
            };
            (q.id.clone(), answer)
        })
        .collect();
    let setup = Setup {
        compare_id: "compare_bench".into(),
        run_id: "run".into(),
        base_model: "m".into(),
        target: "local".into(),
        gguf: Gguf {
            file: "f.gguf".into(),
            kind: "Q8_0".into(),
            sha256: String::new(),
            llama_cpp: "b11434".into(),
            export_id: "e".into(),
        },
        seed: 7,
        max_tokens: 64,
        temperature: 0.0,
        context: 256,
        limit: None,
        questions,
    };
    let client = Client::new(
        Endpoint {
            name: "stand",
            protocol: Protocol::Openai,
            base_url: &server.uri(),
            key: None,
        },
        Duration::from_secs(30),
        RetryPolicy::new(0),
        Redactor::new(),
    )
    .expect("client");
    let judge = Judge {
        client: Arc::new(client),
        role: Role {
            provider: "stand".into(),
            model: "judge".into(),
            reasoning: false,
            max_tokens: 100,
            temperature: None,
            reasoning_effort: None,
            thinking_budget: None,
        },
        prompt: Prompt::load(dir.path(), Template::Judge).expect("prompt"),
        concurrency: CONCURRENCY,
        // No cap: the judge's requests are only written to the ledger.
        budget: overbrainer::compare::budget::JudgeBudget {
            meter: overbrainer::budget::Meter::open(
                dir.path(),
                &overbrainer::config::Budget::default(),
            )
            .expect("meter")
            .0,
            provider: "stand".into(),
            model: "judge".into(),
            price: None,
            max_output: 100,
        },
        // The flow's events go nowhere here: the bench times the judging alone.
        events: tokio::sync::mpsc::unbounded_channel().0,
    };
    let file = dir.path().join("verdicts-bench.jsonl");
    let start = Instant::now();
    let lines = judge_missing(
        &judge,
        &Arc::new(setup),
        &Arc::new(answers),
        &HashSet::new(),
        &file,
        &CancellationToken::new(),
        &|_| {},
    )
    .await
    .expect("judging");
    let elapsed = start.elapsed().as_secs_f64();
    assert_eq!(lines.len(), QUESTIONS);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap().lines().count(),
        QUESTIONS
    );
    let ideal = (QUESTIONS as f64 / CONCURRENCY as f64).ceil() * 2.0 * DELAY.as_secs_f64();
    println!(
        "compare judging: {QUESTIONS} questions x 2 orders at concurrency {CONCURRENCY}, {} ms per reply: {elapsed:.2} s, ideal {ideal:.2} s, ratio {:.3} (target <= 1.2)",
        DELAY.as_millis(),
        elapsed / ideal
    );
}

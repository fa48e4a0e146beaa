//! `answers` speed: 2,000 questions at `concurrency = 64` against a stand-in openai
//! provider that answers each request after 200 ms. Target: within 1.15 × the ideal
//! 2,000 / 64 × 0.2 s = 6.25 s. Run with `cargo bench --bench answers`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_precision_loss,
    reason = "a benchmark: failing loudly is the point, and figures are approximate"
)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use overbrainer::config::{
    EnvSnapshot, Pipeline, Protocol, Provider, Role, Roles, Settings, Topic,
};
use overbrainer::pipeline::{Context, answers};
use overbrainer::pricing::PriceBook;
use overbrainer::secrets::Resolver;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const QUESTIONS: usize = 2_000;
const CONCURRENCY: u32 = 64;
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
                    "choices": [{"message": {"content": "An answer of a few words."}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 20, "completion_tokens": 30}}))
                .set_delay(DELAY),
        )
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("data")).expect("data dir");
    let mut questions = String::new();
    for n in 0..QUESTIONS {
        questions.push_str(&json!({"id": format!("q{n}"), "topic": "t", "subtopic": "s", "question": format!("question {n}?")}).to_string());
        questions.push('\n');
    }
    std::fs::write(dir.path().join("data/questions.jsonl"), questions).expect("questions");

    let settings = Settings {
        topics: vec![Topic {
            name: "t".into(),
            description: String::new(),
            subtopics: 1,
            questions_per_subtopic: 1,
        }],
        providers: BTreeMap::from([(
            "stand".to_owned(),
            Provider {
                protocol: Protocol::Openai,
                base_url: Some(server.uri()),
                api_key: None,
                price_in: None,
                price_out: None,
            },
        )]),
        roles: Roles {
            parent: Some(Role {
                provider: "stand".into(),
                model: "m".into(),
                reasoning: false,
                max_tokens: 100,
                temperature: None,
                reasoning_effort: None,
                thinking_budget: None,
            }),
            ..Roles::default()
        },
        pipeline: Pipeline {
            concurrency: CONCURRENCY,
            ..Pipeline::default()
        },
        ..Settings::default()
    };
    let (events, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let drain = tokio::spawn(async move { while receiver.recv().await.is_some() {} });
    let context = Context {
        settings: Arc::new(settings),
        root: dir.path().to_path_buf(),
        secrets: Arc::new(Resolver::new(&EnvSnapshot::from_pairs(Vec::<(
            String,
            String,
        )>::new()))),
        prices: PriceBook::new(),
        events,
        cancel: CancellationToken::new(),
        backoff_base: Duration::from_secs(1),
        redactor: overbrainer::llm::Redactor::new(),
        over_budget: false,
    };
    let start = Instant::now();
    let report = answers::run(&context, None, false).await;
    let elapsed = start.elapsed();
    drop(context);
    let _ = drain.await;
    assert!(report.error.is_none(), "{:?}", report.error);
    assert_eq!(report.progress.done, QUESTIONS as u64);
    #[allow(clippy::cast_precision_loss)]
    let ideal = QUESTIONS as f64 / f64::from(CONCURRENCY) * DELAY.as_secs_f64();
    println!(
        "answers: {QUESTIONS} questions at concurrency {CONCURRENCY}, {} ms per reply: {:.2} s, ideal {ideal:.2} s, ratio {:.3} (target <= 1.15)",
        DELAY.as_millis(),
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() / ideal
    );
}

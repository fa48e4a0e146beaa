//! One budget (issue 20) through the real binary against a stand-in provider whose
//! `/models` listing prices the parent: the hard cap reached in the middle of `answers`
//! (the stand-in's own bill never past the cap, the answers so far kept), a rerun after
//! raising the cap that repeats no request, the estimate refused before any request,
//! `--over-budget`, an unpriced model under a cap, a torn last ledger line, and
//! `overbrainer budget`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::pipeline::{
    lines, openai_reply, overbrainer, project, stdout, user_text, write_questions,
};
use crate::util::{TestProject, output_text};

/// USD per input and output token of the parent; every reply is 10 in and 20 out, so
/// each request costs exactly [`REQUEST_USD`].
const PRICE_IN: f64 = 0.001;
const PRICE_OUT: f64 = 0.002;
const REQUEST_USD: f64 = 10.0 * PRICE_IN + 20.0 * PRICE_OUT;

fn config(budget: &str) -> String {
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
protocol = "openai"

[roles]
generator = {{ provider = "stand", model = "gen-model" }}
parent = {{ provider = "other", model = "parent-model", max_tokens = 50 }}

[pipeline]
concurrency = 4
max_retries = 3
request_timeout_secs = 5

[budget]
{budget}
"#
    )
}

/// The stand-in's bill: every chat request it answered, by question.
#[derive(Clone, Default)]
struct Bill(Arc<Mutex<HashMap<String, u32>>>);

impl Bill {
    fn requests(&self) -> u32 {
        self.0.lock().unwrap().values().sum()
    }

    fn usd(&self) -> f64 {
        f64::from(self.requests()) * REQUEST_USD
    }

    fn repeated(&self) -> Vec<String> {
        let map = self.0.lock().unwrap();
        map.iter()
            .filter(|(_, n)| **n > 1)
            .map(|(q, _)| q.clone())
            .collect()
    }
}

/// A stand-in whose listing prices `parent-model` when `priced`, answering every chat
/// request with 10 input and 20 output tokens and counting it.
async fn stand_in(priced: bool) -> (MockServer, Bill) {
    let server = MockServer::start().await;
    let bill = Bill::default();
    let models = if priced {
        json!({"data": [{"id": "parent-model", "pricing": {"prompt": PRICE_IN.to_string(), "completion": PRICE_OUT.to_string()}}]})
    } else {
        json!({"data": [{"id": "another-model", "pricing": {"prompt": "1", "completion": "1"}}]})
    };
    Mock::given(method("GET"))
        .and(path("/models"))
        .respond_with(ResponseTemplate::new(200).set_body_json(models))
        .mount(&server)
        .await;
    let counter = bill.clone();
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(move |request: &Request| {
            let question = user_text(request);
            *counter
                .0
                .lock()
                .unwrap()
                .entry(question.clone())
                .or_default() += 1;
            openai_reply(&json!({"content": format!("Answer to {question}")}), "stop")
        })
        .mount(&server)
        .await;
    (server, bill)
}

const IDS: [&str; 10] = ["q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8", "q9"];

/// The ledger's requests: their USD and their count (its reservation lines left out).
fn ledger_usd(project: &TestProject) -> (f64, usize) {
    let mut lines = lines(project, ".overbrainer/ledger.jsonl");
    lines.retain(|line| line["kind"] == "request");
    let usd = lines
        .iter()
        .filter_map(|line| line["cost_usd"].as_f64())
        .sum();
    (usd, lines.len())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cap_reached_mid_answers_keeps_the_answers_and_a_raised_cap_completes_without_repeats() {
    let (server, bill) = stand_in(true).await;
    let project = project(&config("max_usd = 0.5"));
    write_questions(&project, &IDS);
    // The `max_tokens` bound puts the estimate past the cap: accepted knowingly, the
    // hard cap still holds.
    let output = overbrainer(&project, &server, &["answers", "--over-budget"]).await;
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("accepted with `--over-budget`"), "{text}");
    assert!(text.contains("stopped at the budget"), "{text}");
    assert!(
        text.contains("with a raised cap, run `overbrainer answers` again"),
        "{text}"
    );
    let sent = bill.requests();
    assert!(
        sent >= 1 && (sent as usize) < IDS.len(),
        "{sent} requests: {text}"
    );
    assert!(
        bill.usd() <= 0.5 + 1e-9,
        "the stand-in billed {}",
        bill.usd()
    );
    // Every answered request is saved and in the ledger.
    assert_eq!(lines(&project, "data/answers.jsonl").len(), sent as usize);
    let (usd, count) = ledger_usd(&project);
    assert_eq!(count, sent as usize);
    assert!(
        (usd - bill.usd()).abs() < 1e-9,
        "ledger {usd}, bill {}",
        bill.usd()
    );
    assert_eq!(
        lines(&project, ".overbrainer/history.jsonl")[0]["status"],
        "failed"
    );

    // Raised: the rest, and nothing asked twice.
    project.write("overbrainer.toml", &config("max_usd = 10.0"));
    let output = overbrainer(&project, &server, &["answers"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    assert_eq!(bill.requests() as usize, IDS.len());
    assert!(
        bill.repeated().is_empty(),
        "asked again: {:?}",
        bill.repeated()
    );
    assert_eq!(lines(&project, "data/answers.jsonl").len(), IDS.len());
    let (usd, count) = ledger_usd(&project);
    assert_eq!(count, IDS.len());
    assert!((usd - bill.usd()).abs() < 1e-9);
    // `history` counts the same requests at the same prices.
    let history: f64 = lines(&project, ".overbrainer/history.jsonl")
        .iter()
        .filter_map(|line| line["cost_usd"].as_f64())
        .sum();
    assert!(
        (history - usd).abs() < 1e-9,
        "history {history}, ledger {usd}"
    );
    let output = overbrainer(&project, &server, &["budget"]).await;
    let text = stdout(&output);
    assert!(text.contains("stage answers: $0.5000 over 10"), "{text}");
    assert!(
        text.contains("model other/parent-model: $0.5000 over 10"),
        "{text}"
    );
    assert!(
        text.contains("cap: $10.0000 (`budget.max_usd`), $9.5000 remaining"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_estimate_over_the_cap_is_refused_before_any_request_with_both_figures_and_the_cap() {
    let (server, bill) = stand_in(true).await;
    let project = project(&config("max_usd = 0.5"));
    write_questions(&project, &IDS);
    let output = overbrainer(&project, &server, &["answers"]).await;
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    assert_eq!(bill.requests(), 0, "{text}");
    assert!(text.contains("`answers` is estimated at $"), "{text}");
    assert!(text.contains("for 10 items"), "{text}");
    assert!(text.contains("$0.0000 already spent"), "{text}");
    assert!(
        text.contains("the cap of $0.5000 (`budget.max_usd`)"),
        "{text}"
    );
    assert!(text.contains("`--over-budget`"), "{text}");
    assert!(lines(&project, "data/answers.jsonl").is_empty());
    assert_eq!(ledger_usd(&project).1, 0);

    // After some answers, the estimate is the tokens per item seen so far: 2 left at
    // 0.05 each fit under a cap that the `max_tokens` bound of 2 would pass.
    write_questions(&project, &IDS[..8]);
    project.write("overbrainer.toml", &config("max_usd = 100.0"));
    let output = overbrainer(&project, &server, &["answers"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    write_questions(&project, &IDS);
    // 8 x 0.05 spent and 2 x 0.05 estimated fit under 0.6, where the bound of 2 (2 x
    // 0.163) would not; the hard cap then admits one request (0.4 + 0.163 of worst case)
    // and not a second beside it.
    project.write("overbrainer.toml", &config("max_usd = 0.6"));
    let output = overbrainer(&project, &server, &["answers"]).await;
    let text = output_text(&output);
    assert!(!text.contains("is estimated at"), "{text}");
    assert!(text.contains("stopped at the budget"), "{text}");
    assert_eq!(bill.requests(), 9, "{text}");
    assert!(bill.usd() <= 0.6 + 1e-9);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unpriced_parent_under_a_cap_is_refused_unless_allow_unpriced() {
    let (server, bill) = stand_in(false).await;
    let project = project(&config("max_usd = 5.0"));
    write_questions(&project, &IDS[..2]);
    let output = overbrainer(&project, &server, &["answers"]).await;
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains("`other` lists no price for `parent-model`"),
        "{text}"
    );
    assert!(text.contains("budget.allow_unpriced = true"), "{text}");
    assert_eq!(bill.requests(), 0);

    project.write(
        "overbrainer.toml",
        &config("max_usd = 5.0\nallow_unpriced = true"),
    );
    let output = overbrainer(&project, &server, &["answers"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    let ledger = lines(&project, ".overbrainer/ledger.jsonl");
    assert_eq!(ledger.len(), 2);
    assert!(ledger.iter().all(|line| line["cost_usd"] == Value::Null));
    let output = overbrainer(&project, &server, &["budget", "--json"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    let summary: Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    assert_eq!(summary["total"]["unpriced"], 2);
    assert_eq!(summary["total"]["usd"], 0.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_parent_priced_at_zero_in_the_configuration_is_free_not_unpriced_under_a_cap() {
    // The stand-in lists no price for the parent: without `price_in`/`price_out` the cap
    // refuses it as unpriced (the test above).
    let (server, bill) = stand_in(false).await;
    let config = config("max_usd = 5.0").replace(
        "[providers.other]\nprotocol = \"openai\"\n",
        "[providers.other]\nprotocol = \"openai\"\nprice_in = 0\nprice_out = 0\n",
    );
    assert!(config.contains("price_in = 0"), "{config}");
    let project = project(&config);
    write_questions(&project, &IDS[..2]);
    let output = overbrainer(&project, &server, &["answers"]).await;
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("$0.0000") && !text.contains("unknown"),
        "{text}"
    );
    assert_eq!(bill.requests(), 2);
    let ledger = lines(&project, ".overbrainer/ledger.jsonl");
    let requests: Vec<&Value> = ledger.iter().filter(|l| l["kind"] == "request").collect();
    assert_eq!(requests.len(), 2, "{ledger:?}");
    assert!(requests.iter().all(|l| l["cost_usd"] == 0.0), "{ledger:?}");
    let output = overbrainer(&project, &server, &["budget", "--json"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    let summary: Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    assert_eq!(summary["total"]["unpriced"], 0, "{summary}");
    assert_eq!(summary["total"]["usd"], 0.0, "{summary}");
    // The configured price replaces the listing: it is not read for that provider.
    let listings = server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|r| r.url.path() == "/models")
        .count();
    assert_eq!(listings, 0);
}

/// A ledger line of an `answers` request to `other/parent-model` costing `usd`.
fn request_line(usd: f64) -> Value {
    json!({"kind": "request", "at": "2026-01-01T00:00:00Z", "stage": "answers",
        "provider": "other", "model": "parent-model", "input_tokens": 1, "output_tokens": 1,
        "cost_usd": usd})
}

#[tokio::test(flavor = "multi_thread")]
async fn regression_a_torn_last_ledger_line_is_skipped_with_a_warning_and_the_rest_counts() {
    let (server, bill) = stand_in(true).await;
    // The ledger's 0.25 is past the warning share already: one warning, at the start.
    let project = project(&config("max_usd = 10.0\nwarn_at = 0.02"));
    write_questions(&project, &IDS[..1]);
    let kept = request_line(0.25);
    project.write(
        ".overbrainer/ledger.jsonl",
        &format!("{kept}\n{{\"kind\":\"request\",\"at\":\"2026-01-01T0"),
    );
    let output = overbrainer(&project, &server, &["answers"]).await;
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("skipped line 2 of"), "{text}");
    assert!(text.contains("ledger.jsonl"), "{text}");
    assert_eq!(
        text.matches("$0.2500 spent of the cap of $10.0000 (`budget.max_usd`)")
            .count(),
        1,
        "{text}"
    );
    assert_eq!(text.matches("the budget is at ").count(), 1, "{text}");
    assert_eq!(bill.requests(), 1);
    // The torn line stays skipped; the new line starts a line of its own.
    let output = overbrainer(&project, &server, &["budget", "--json"]).await;
    let text = output_text(&output);
    assert!(text.contains("skipped line 2 of"), "{text}");
    let summary: Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    let total = summary["total"]["usd"].as_f64().unwrap();
    assert!((total - (0.25 + REQUEST_USD)).abs() < 1e-9, "{total}");
    assert_eq!(summary["max_usd"], 10.0);
    assert!((summary["remaining_usd"].as_f64().unwrap() - (10.0 - total)).abs() < 1e-9);
    assert_eq!(summary["by_stage"]["answers"]["events"], 2);
    assert_eq!(summary["by_model"]["other/parent-model"]["events"], 2);
}

// Issue 20 (found by a new user): a damaged ledger line that is not a line cut short
// (not JSON, or a negative cost) lost its spend from the sum and from the cap with only a
// warning. Now `answers` under a cap refuses before any request and `budget` fails, each
// naming the file and the line; the ledger is left as it was.
#[tokio::test(flavor = "multi_thread")]
async fn regression_a_damaged_ledger_line_is_refused_naming_it_and_nothing_is_sent() {
    let (server, bill) = stand_in(true).await;
    let project = project(&config("max_usd = 10.0"));
    write_questions(&project, &IDS[..1]);
    let (kept, negative) = (request_line(9.5), request_line(-100.0));
    for (ledger, reason) in [
        (format!("{kept}\nnot json at all\n{kept}\n"), "line 2 of"),
        (
            format!("{kept}\n{negative}\n"),
            "a request costing -100 USD",
        ),
    ] {
        project.write(".overbrainer/ledger.jsonl", &ledger);
        for args in [&["answers"][..], &["budget"][..]] {
            let output = overbrainer(&project, &server, args).await;
            let text = output_text(&output);
            assert!(!output.status.success(), "{args:?}: {text}");
            assert!(text.contains("ledger.jsonl"), "{args:?}: {text}");
            assert!(text.contains("is damaged"), "{args:?}: {text}");
            assert!(text.contains(reason), "{args:?}: {text}");
        }
        assert_eq!(project.read(".overbrainer/ledger.jsonl"), ledger);
        assert_eq!(bill.requests(), 0);
    }
}

// Issue 20: a ledger line is synced before the answer it paid for is saved, so a
// `SIGKILL` in the middle of `answers` leaves every saved answer with its ledger line,
// and no line the stand-in did not bill.
#[tokio::test(flavor = "multi_thread")]
async fn a_killed_answers_keeps_a_ledger_line_for_every_saved_answer() {
    let server = MockServer::start().await;
    let bill = Bill::default();
    Mock::given(method("GET"))
        .and(path("/models"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"data": [{"id": "parent-model",
            "pricing": {"prompt": PRICE_IN.to_string(), "completion": PRICE_OUT.to_string()}}]})),
        )
        .mount(&server)
        .await;
    let counter = bill.clone();
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(move |request: &Request| {
            let question = user_text(request);
            *counter
                .0
                .lock()
                .unwrap()
                .entry(question.clone())
                .or_default() += 1;
            openai_reply(&json!({"content": format!("Answer to {question}")}), "stop")
                .set_delay(std::time::Duration::from_millis(150))
        })
        .mount(&server)
        .await;
    let project = project(&config("max_usd = 100.0").replace("concurrency = 4", "concurrency = 2"));
    let ids: Vec<String> = (0..40).map(|n| format!("k{n}")).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    write_questions(&project, &ids);
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_overbrainer"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", project.home())
        .arg("-C")
        .arg(project.path())
        .arg("answers")
        .env("OVERBRAINER_PROVIDERS__STAND__BASE_URL", server.uri())
        .env("OVERBRAINER_PROVIDERS__OTHER__BASE_URL", server.uri())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let child = cmd.spawn().unwrap();
    crate::util::poll_async(
        std::time::Duration::from_secs(60),
        "three answers",
        || async {
            let saved = lines(&project, "data/answers.jsonl").len();
            if saved >= 3 { Ok(()) } else { Err(saved) }
        },
    )
    .await;
    kill_and_wait(child, "the killed answers").await;
    let saved = lines(&project, "data/answers.jsonl").len();
    let ledger = project.read(".overbrainer/ledger.jsonl");
    let recorded = ledger
        .lines()
        .filter(|l| serde_json::from_str::<Value>(l).is_ok_and(|l| l["kind"] == "request"))
        .count();
    assert!(saved < ids.len(), "the kill came after the end");
    assert!(
        saved <= recorded,
        "{saved} answers saved, {recorded} ledger lines"
    );
    assert!(
        u32::try_from(recorded).unwrap() <= bill.requests(),
        "{recorded} lines, {} billed",
        bill.requests()
    );
}

// Issue 33: one cap for two spenders in two processes. A pod of the Runpod stand-in is
// started by `train`, which is then killed (`SIGKILL`), so no process follows it; the
// test plays its watchdog, deleting it at its deadline (`max_hours`, the bound its
// record gives). Meanwhile `answers` runs under the same cap. The stand-ins' own counts
// (the provider's bill and the pod's life at its rate) stay within the cap, and the
// pod's `final` ledger line is written once, by the first later command that sees it
// gone (`pod ls`), so `budget` does not understate the spend.

/// The Runpod stand-in's key (never in a file or a log).
const POD_KEY_OF_ACCOUNT: &str = "rpa_CANARY5Lq2Wd8Zt1Xn4Hb7Mc0Jk3Vf6Pr9Ga";
/// One rule second lasts 20 ms: an hour is 72 s.
const SECOND_MS: u32 = 20;
/// The stand-in's pods cost this much an hour (its `cost`).
const POD_RATE: f64 = 0.74;

fn pod_config(max_usd: f64) -> String {
    let config = config(&format!("max_usd = {max_usd}"));
    format!(
        r#"{config}
[training]
target = "pod"
base_model = "org/tiny-model"
adapter = "lora"
epochs = 1
learning_rate = 1e-3
lora_r = 4
lora_alpha = 8
sequence_len = 256
micro_batch_size = 8
gradient_accumulation_steps = 1
optimizer = "adamw_torch"
sample_packing = false
merge = false

[targets.pod]
kind = "runpod"
gpu_types = ["A"]
max_hours = 0.39
image = "pod-image:1"
venv = "/opt/venv"
container_disk_gb = 20
"#
    )
}

/// The binary in `project` with the Runpod stand-in's and the provider's variables.
fn pod_cmd(
    project: &TestProject,
    runpod: &crate::runpod_standin::Standin,
    server: &MockServer,
    args: &[&str],
) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_overbrainer"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", project.home())
        .arg("-C")
        .arg(project.path())
        .args(args)
        .env("OVERBRAINER_RUNPOD__API_KEY", POD_KEY_OF_ACCOUNT)
        .env("OVERBRAINER_RUNPOD__BASE_URL", runpod.base())
        .env("OVERBRAINER_TEST_SECOND_MS", SECOND_MS.to_string())
        .env("OVERBRAINER_PROVIDERS__STAND__BASE_URL", server.uri())
        .env("OVERBRAINER_PROVIDERS__OTHER__BASE_URL", server.uri());
    cmd
}

async fn run_pod_cmd(
    project: &TestProject,
    runpod: &crate::runpod_standin::Standin,
    server: &MockServer,
    args: &[&str],
) -> std::process::Output {
    let mut cmd = pod_cmd(project, runpod, server, args);
    let output = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert!(
        !output_text(&output).contains(&POD_KEY_OF_ACCOUNT[4..24]),
        "the key leaked"
    );
    output
}

/// The only run's `pod.json`, once it names a pod and its deadline.
fn pod_json(project: &TestProject) -> Option<Value> {
    let runs = std::fs::read_dir(project.path().join("runs")).ok()?;
    let run = runs.flatten().next()?.path();
    let pod: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("pod.json")).ok()?).ok()?;
    (pod["pod_id"].is_string() && pod["deadline_at"].is_string()).then_some(pod)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_detached_pod_and_answers_running_together_stay_within_one_cap() {
    const CAP: f64 = 0.3;
    let (server, bill) = stand_in(true).await;
    let runpod = crate::runpod_standin::Standin::start(POD_KEY_OF_ACCOUNT).await;
    // The pod never gets its SSH endpoint: it lives, unfollowed, until its watchdog.
    runpod.state().faults.ssh_after_polls = 1_000_000;
    let project = project(&pod_config(CAP));
    let demo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo/data");
    for name in ["train.jsonl", "eval.jsonl"] {
        project.write(
            &format!("data/{name}"),
            &std::fs::read_to_string(demo.join(name)).unwrap(),
        );
    }
    write_questions(&project, &IDS);

    // The pod: made, then its `train` killed, so nothing follows it.
    let mut train = pod_cmd(&project, &runpod, &server, &["train", "--target", "pod"]);
    train
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let child = train.spawn().unwrap();
    let pod = crate::util::poll_async(
        std::time::Duration::from_secs(120),
        "a pod in pod.json",
        || async { pod_json(&project).ok_or(()) },
    )
    .await;
    kill_and_wait(child, "the killed train").await;
    assert_eq!(runpod.state().pods.len(), 1);
    assert!(runpod.state().pods[0].deleted.is_none());

    // Its watchdog deletes it at its deadline, while `answers` runs.
    let deadline: jiff::Timestamp = pod["deadline_at"].as_str().unwrap().parse().unwrap();
    let answers = run_pod_cmd(&project, &runpod, &server, &["answers", "--over-budget"]).await;
    let answers = output_text(&answers);
    let wait = (deadline - jiff::Timestamp::now())
        .total(jiff::Unit::Second)
        .unwrap_or(0.0)
        .max(0.0);
    tokio::time::sleep(std::time::Duration::from_secs_f64(wait)).await;
    runpod.state().pods[0].deleted = Some(std::time::SystemTime::now());

    // The stand-ins' own counts: what the provider billed and what the pod's life cost.
    let hour = 3600.0 * f64::from(SECOND_MS) / 1000.0;
    let pod_usd = {
        let state = runpod.state();
        let pod = &state.pods[0];
        let lived = pod.deleted.unwrap().duration_since(pod.created).unwrap();
        lived.as_secs_f64() / hour * POD_RATE
    };
    assert!(pod_usd > 0.25, "the pod cost only {pod_usd}");
    assert!(
        bill.usd() + pod_usd <= CAP + 1e-9,
        "the stand-ins billed {} for requests and {pod_usd} for the pod, past the cap of {CAP}\n{answers}",
        bill.usd()
    );

    // The first later command that sees the pod gone writes its end, once.
    for _ in 0..2 {
        let listed = run_pod_cmd(&project, &runpod, &server, &["pod", "ls"]).await;
        assert!(listed.status.success(), "{}", output_text(&listed));
    }
    let finals: Vec<Value> = lines(&project, ".overbrainer/ledger.jsonl")
        .into_iter()
        .filter(|line| line["kind"] == "pod" && line["final"] == true)
        .collect();
    assert_eq!(finals.len(), 1, "{finals:?}");
    let output = run_pod_cmd(&project, &runpod, &server, &["budget", "--json"]).await;
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{}", output_text(&output)));
    let total = report["total"]["usd"].as_f64().unwrap();
    assert!(
        total >= bill.usd() + pod_usd - 1e-3 && total <= CAP + 1e-9,
        "`budget` shows {total}, the stand-ins billed {} and {pod_usd}",
        bill.usd()
    );
}

/// `SIGKILL` to `child`, then its end awaited (60 s at most), named `what`.
async fn kill_and_wait(child: std::process::Child, what: &'static str) {
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    crate::util::wait_status_async(child, std::time::Duration::from_secs(60), what).await;
}

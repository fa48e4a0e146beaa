//! The Prometheus endpoint scraped by a real Prometheus (Debian 12's 2.42, started by the
//! test on 127.0.0.1 with its own configuration and storage, scrape interval 1 s), while
//! the binary trains the demo with real Axolotl after a pipeline stage against a stand-in
//! provider (spec/metrics.md; issue 18). What Prometheus stored is checked against the
//! run's `metrics.jsonl` and the project's `history.jsonl`; the target must be `up` with
//! no scrape error (Prometheus parses our OpenMetrics strictly). Canaries planted in the
//! topic, the provider's answers and the API key never reach a label.

use std::collections::BTreeMap;
use std::io::BufRead as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::hub_standin::canary;
use crate::training::{DEADLINE, Setup, Training};
use crate::util::{TestProject, output_text, poll_async};

/// The command that installs what these tests run.
const INSTALL: &str =
    "sudo apt-get install -y prometheus (or `make test`, which runs scripts/test-deps.sh)";

/// A Prometheus of the test's own, stopped with the test.
struct Prometheus {
    child: Child,
    base: String,
    dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Prometheus {
    /// Starts Prometheus scraping `target` (`host:port`) every second; fails naming the
    /// install command when `prometheus` is missing.
    fn start(target: &str) -> Self {
        let version = Command::new("prometheus").arg("--version").output();
        let version = match version {
            Ok(output) if output.status.success() => output_text(&output),
            _ => panic!("`prometheus` is not installed: {INSTALL}"),
        };
        assert!(
            version.contains("version 2."),
            "unexpected Prometheus: {version}"
        );
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: overbrainer\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let port = free_port();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("prometheus.log")).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start prometheus ({e}): {INSTALL}"));
        Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
            dir,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    async fn api(&self, path: &str, query: &[(&str, &str)]) -> Result<Value, String> {
        let response = reqwest::Client::new()
            .get(format!("{}{path}", self.base))
            .query(query)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let body: Value = response.json().await.map_err(|e| e.to_string())?;
        if body["status"] != "success" {
            return Err(body.to_string());
        }
        Ok(body["data"].clone())
    }

    /// The instant vector of `query` now, as (labels, value) pairs.
    async fn query(&self, query: &str) -> Vec<(BTreeMap<String, String>, f64)> {
        let data = self
            .api("/api/v1/query", &[("query", query)])
            .await
            .unwrap_or_else(|e| panic!("query {query}: {e}"));
        data["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|series| {
                let labels = series["metric"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                    .collect();
                let value: f64 = series["value"][1].as_str().unwrap().parse().unwrap();
                (labels, value)
            })
            .collect()
    }

    /// The one value of `query`.
    async fn value(&self, query: &str) -> f64 {
        let result = self.query(query).await;
        assert_eq!(result.len(), 1, "{query}: {result:?}");
        result[0].1
    }
}

/// A stand-in generator and parent, priced: subtopic names and answers carry
/// `answer_canary`, questions are made of fresh words (so none is a near-duplicate).
async fn stand_in(answer_canary: &str) -> MockServer {
    let server = MockServer::start().await;
    let canary = answer_canary.to_owned();
    let fresh = std::sync::atomic::AtomicU32::new(0);
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(move |request: &Request| {
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            let user = body["messages"]
                .as_array()
                .and_then(|m| m.last())
                .and_then(|m| m["content"].as_str())
                .unwrap_or_default()
                .to_owned();
            let parts: Vec<&str> = user.split('|').collect();
            let content = match parts[0] {
                "SUBTOPICS" => {
                    let count: usize = parts[3].trim().parse().unwrap();
                    json!(
                        (0..count)
                            .map(|n| format!("{canary} part {n}"))
                            .collect::<Vec<_>>()
                    )
                    .to_string()
                }
                "QUESTIONS" => {
                    let count: usize = parts[3].trim().parse().unwrap();
                    let questions: Vec<String> = (0..count)
                        .map(|_| {
                            let n = fresh.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            format!("alpha{n} beta{n} gamma{n} delta{n}?")
                        })
                        .collect();
                    json!(questions).to_string()
                }
                _ => format!("The answer, {canary}, to: {user}"),
            };
            ResponseTemplate::new(200).set_body_json(json!({
                "choices": [{"message": {"content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 23}
            }))
        })
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/models"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": [
            {"id": "gen-model", "pricing": {"prompt": "0.001", "completion": "0.002"}},
            {"id": "parent-model", "pricing": {"prompt": "0.003", "completion": "0.004"}}]})))
        .mount(&server)
        .await;
    server
}

/// The pipeline's part of the project: one topic whose description is a canary, a
/// stand-in provider whose key is set by variable.
fn pipeline_config(topic_canary: &str) -> String {
    format!(
        r#"
[[topics]]
name = "rust"
description = "{topic_canary}"
subtopics = 3
questions_per_subtopic = 12

[providers.stand]
protocol = "openai"

[roles]
generator = {{ provider = "stand", model = "gen-model" }}
parent = {{ provider = "stand", model = "parent-model" }}
"#
    )
}

/// Every run of at least 8 characters of `canary` that appears in `text`.
fn leaks(text: &str, canaries: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for canary in canaries {
        let bytes = canary.as_bytes();
        for start in 0..bytes.len().saturating_sub(12) {
            let piece = &canary[start..start + 12];
            if text.contains(piece) {
                found.push(piece.to_owned());
            }
        }
    }
    found
}

/// Sums a field of the history's lines of `stage`.
fn history_sum(lines: &[Value], stage: &str, field: &str) -> f64 {
    lines
        .iter()
        .filter(|line| line["stage"] == stage)
        .map(|line| line[field].as_f64().unwrap_or(0.0))
        .sum()
}

fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l.trim_start_matches('\u{feff}')).unwrap())
        .collect()
}

/// The binary in the background with `listen`, its stderr read line by line; returns the
/// child, the endpoint's URL from the MET-2 line, and the rest of stderr as it comes.
fn spawn_serving(
    training: &Training,
    args: &[&str],
    key: &str,
    server: &MockServer,
) -> (Child, String, mpsc::Receiver<String>) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_overbrainer"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", training.project.home())
        .env("CUDA_VISIBLE_DEVICES", "")
        .env("HF_HUB_OFFLINE", "1")
        .env("OVERBRAINER_METRICS__LISTEN", "127.0.0.1:0")
        .env("OVERBRAINER_PROVIDERS__STAND__BASE_URL", server.uri())
        .env("OVERBRAINER_PROVIDERS__STAND__API_KEY", key)
        .arg("-C")
        .arg(training.project.path())
        .args(args)
        .stdin(Stdio::null())
        // Nobody reads its standard output: a pipe would fill and stop the command.
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in &training.extra_env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn overbrainer");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let url = loop {
        let line = rx
            .recv_timeout(DEADLINE)
            .unwrap_or_else(|_| panic!("no `metrics: serving` line in {seen:?}"));
        if let Some(url) = line.split("metrics: serving ").nth(1) {
            break url.trim().to_owned();
        }
        seen.push(line);
    };
    (child, url, rx)
}

/// The scrape target once it is up with no scrape error. A scrape that times out on a
/// loaded machine is the machine's, not the endpoint's: this waits for a clean scrape
/// rather than taking the first it sees. A command that ends before it is scraped fails
/// the test at once with its own lines, rather than leaving the poll to wait out its
/// deadline.
async fn target_up(
    prometheus: &Prometheus,
    child: &std::sync::Mutex<Child>,
    stderr: &mpsc::Receiver<String>,
) -> Value {
    let alive = || {
        if let Some(status) = child.lock().unwrap().try_wait().unwrap() {
            let lines: Vec<String> = stderr.try_iter().collect();
            panic!(
                "the followed command ended ({status}) before it was scraped:\n{}",
                lines.join("\n")
            );
        }
    };
    let (p, alive) = (prometheus, &alive);
    poll_async(
        DEADLINE,
        "the target up with no scrape error",
        move || async move {
            alive();
            let targets = p.api("/api/v1/targets", &[]).await?;
            let active = targets["activeTargets"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let Some(first) = active.first() else {
                return Err("no active target".to_owned());
            };
            if first["health"] != "up" || first["lastError"] != "" {
                return Err(format!("{first}\n{}", p.log()));
            }
            Ok(first.clone())
        },
    )
    .await
}

/// The training gauges and the phase series Prometheus stored for `run_id`, as of its last
/// scrape of them, against the run's `metrics.jsonl` (MET-10, MET-11).
async fn training_series(prometheus: &Prometheus, training: &Training, run_id: &str) {
    // What Prometheus stored, as of its last scrape of the run's series.
    let last = |name: &str| format!("last_over_time({name}{{run_id=\"{run_id}\"}}[1h])");
    let step = prometheus.value(&last("overbrainer_train_step")).await;
    let loss = prometheus.value(&last("overbrainer_train_loss")).await;
    let lines = jsonl(&training.runs().join(run_id).join("metrics.jsonl"));
    let train_lines: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "train").collect();
    let line = train_lines
        .iter()
        .rev()
        .find(|l| l["step"].as_f64() == Some(step))
        .unwrap_or_else(|| panic!("step {step} is no train line of {lines:?}"));
    let line_loss = line["loss"].as_f64().unwrap();
    assert!(same(loss, line_loss), "{loss} != {line_loss}");
    let max_steps = prometheus.value(&last("overbrainer_train_max_steps")).await;
    assert_eq!(Some(max_steps), line["max_steps"].as_f64());
    let lr = prometheus.value(&last("overbrainer_learning_rate")).await;
    assert_eq!(Some(lr), line["learning_rate"].as_f64());

    // One phase series per phase, at most one of them 1 at any scrape, and the phases seen
    // at 1 are phases of this job (no export was asked for).
    let phases = prometheus.query(&last("overbrainer_train_phase")).await;
    let names: Vec<&str> = phases.iter().map(|(l, _)| l["phase"].as_str()).collect();
    for phase in [
        "training",
        "evaluating",
        "finalizing",
        "merging",
        "exporting",
        "retrieving",
    ] {
        assert!(names.contains(&phase), "{phase} missing: {phases:?}");
    }
    assert_eq!(phases.len(), 6, "{phases:?}");
    let most = prometheus
        .query(&format!(
            "max_over_time(sum(overbrainer_train_phase{{run_id=\"{run_id}\"}})[1h:1s])"
        ))
        .await;
    assert!(most.iter().all(|(_, v)| *v <= 1.0), "{most:?}");
    let seen = prometheus
        .query(&format!(
            "max_over_time(overbrainer_train_phase{{run_id=\"{run_id}\"}}[1h]) == 1"
        ))
        .await;
    assert!(!seen.is_empty(), "no phase was ever 1: {phases:?}");
    assert!(
        seen.iter().all(|(l, _)| l["phase"] != "exporting"),
        "{seen:?}"
    );

    // MET-13, MET-14: the local target's sample, what it reports and nothing more.
    for name in [
        "overbrainer_target_memory_used_bytes",
        "overbrainer_target_memory_limit_bytes",
        "overbrainer_target_cpus",
        "overbrainer_target_cpu_load1",
        "overbrainer_target_sample_timestamp_seconds",
    ] {
        let value = prometheus.value(&last(name)).await;
        assert!(value > 0.0, "{name} = {value}");
    }
    let disks = prometheus
        .query(&last("overbrainer_target_disk_size_bytes"))
        .await;
    assert!(!disks.is_empty() && disks.len() <= 2, "{disks:?}");
    let mounts: Vec<&str> = disks.iter().map(|(l, _)| l["mount"].as_str()).collect();
    assert!(mounts.windows(2).all(|w| w[0] != w[1]), "{mounts:?}");
    let has_nvidia_smi = Command::new("sh")
        .args(["-c", "command -v nvidia-smi"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_nvidia_smi {
        let gpus = prometheus
            .query(&format!(
                "last_over_time({{__name__=~\"overbrainer_gpu_.+\",run_id=\"{run_id}\"}}[1h])"
            ))
            .await;
        assert!(gpus.is_empty(), "GPU series without nvidia-smi: {gpus:?}");
    }
}

fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(1.0)
}

/// The counters Prometheus stored against the history's lines (MET-7, MET-9, MET-18,
/// MET-20): what the earlier command recorded (seeded) plus what this one counted live.
async fn counters(prometheus: &Prometheus, history: &[Value]) {
    let last = |query: &str| format!("last_over_time({query}[1h])");
    for stage in ["subtopics", "questions", "answers", "split"] {
        for result in ["done", "skipped", "failed", "excluded"] {
            let recorded = history_sum(history, stage, result);
            let series = prometheus
                .query(&last(&format!(
                    "overbrainer_stage_items_total{{stage=\"{stage}\",result=\"{result}\"}}"
                )))
                .await;
            let value = series.first().map_or(0.0, |(_, v)| *v);
            assert!(
                same(value, recorded),
                "{stage} {result}: {value} != {recorded}"
            );
        }
    }
    for (stage, model) in [
        ("subtopics", "gen-model"),
        ("questions", "gen-model"),
        ("answers", "parent-model"),
    ] {
        let lines: Vec<Value> = history
            .iter()
            .filter(|l| l["stage"] == stage)
            .cloned()
            .collect();
        assert!(!lines.is_empty(), "no {stage} line in {history:?}");
        assert!(lines.iter().all(|l| l["model"] == model), "{lines:?}");
        for (direction, field) in [("in", "input_tokens"), ("out", "output_tokens")] {
            let tokens = prometheus
                .value(&last(&format!(
                    "overbrainer_tokens_total{{stage=\"{stage}\",model=\"{model}\",direction=\"{direction}\"}}"
                )))
                .await;
            let recorded = history_sum(history, stage, field);
            assert!(
                recorded > 0.0 && same(tokens, recorded),
                "{stage} {direction}: {tokens} != {recorded}"
            );
        }
        let cost = prometheus
            .value(&last(&format!(
                "overbrainer_cost_usd_total{{stage=\"{stage}\",model=\"{model}\"}}"
            )))
            .await;
        let recorded = history_sum(history, stage, "cost_usd");
        assert!(
            recorded > 0.0 && same(cost, recorded),
            "{stage}: {cost} != {recorded}"
        );
    }
    let version = prometheus.query(&last("overbrainer_build_info")).await;
    assert_eq!(version.len(), 1);
    assert_eq!(version[0].0["version"], env!("CARGO_PKG_VERSION"));
    assert!(same(version[0].1, 1.0), "{version:?}");
}

/// The demo training project with the pipeline's part: prompts the stand-in reads, the
/// demo data removed (the `split` of `run` writes it).
fn pipeline_training(topic_canary: &str) -> Training {
    let training = Training::new(&Setup::default());
    let mut config = training.project.read("overbrainer.toml");
    config.push_str(&pipeline_config(topic_canary));
    training.project.write("overbrainer.toml", &config);
    training.project.write(
        "prompts/subtopics.txt",
        "SUBTOPICS|{{ topic }}|{{ description }}|{{ count }}",
    );
    training.project.write(
        "prompts/questions.txt",
        "QUESTIONS|{{ topic }}|{{ subtopic }}|{{ count }}",
    );
    training
        .project
        .write("prompts/answer_system.txt", "EXPERT|{{ topic }}");
    // The demo data is what `split` replaces.
    std::fs::remove_file(training.project.path().join("data/train.jsonl")).unwrap();
    std::fs::remove_file(training.project.path().join("data/eval.jsonl")).unwrap();

    training
}

// MET-1..MET-4, MET-7, MET-9..MET-11, MET-15, MET-16, MET-20 with a real Prometheus.
#[tokio::test(flavor = "multi_thread")]
async fn a_real_prometheus_scrapes_training_and_stage_series_that_match_metrics_jsonl_and_the_history()
 {
    let key = canary("sk-metrics-");
    let topic_canary = canary("topic-");
    let answer_canary = canary("answer-");
    let server = stand_in(&answer_canary).await;
    let training = pipeline_training(&topic_canary);

    // A pipeline stage against the stand-in: its lines seed the counters of the next command.
    let mut subtopics = training.cmd();
    subtopics
        .arg("subtopics")
        .env("OVERBRAINER_PROVIDERS__STAND__BASE_URL", server.uri())
        .env("OVERBRAINER_PROVIDERS__STAND__API_KEY", &key);
    let output = tokio::task::spawn_blocking(move || subtopics.output().unwrap())
        .await
        .unwrap();
    assert!(output.status.success(), "{}", output_text(&output));
    assert_eq!(
        jsonl(&training.project.path().join(".overbrainer/history.jsonl")).len(),
        1
    );

    // `run`: questions, answers and split counted live, then the training followed.
    let (child, url, stderr) = spawn_serving(&training, &["run"], &key, &server);
    let target = url
        .strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("not an endpoint URL: {url}"))
        .to_owned();
    assert!(
        target.starts_with("127.0.0.1:") && !target.ends_with(":0"),
        "{target}"
    );
    let prometheus = Prometheus::start(&target);

    // While the run goes on: the target is up with no scrape error.
    let child = std::sync::Mutex::new(child);
    let up = target_up(&prometheus, &child, &stderr).await;
    let p = &prometheus;
    assert_eq!(up["scrapeUrl"], url.as_str(), "{up}");
    // Once the run is followed its series are scraped; asked over the past hour, so a
    // run that ends between two polls is still seen.
    let steps = poll_async(
        DEADLINE,
        "a scraped overbrainer_train_step",
        move || async move {
            let steps = p.query("last_over_time(overbrainer_train_step[1h])").await;
            if steps.is_empty() {
                return Err(format!("no overbrainer_train_step yet\n{}", p.log()));
            }
            Ok(steps)
        },
    )
    .await;
    let run_id = steps[0].0["run_id"].clone();

    let status = crate::util::wait_status_async(
        child.into_inner().unwrap(),
        std::time::Duration::from_secs(600),
        "the followed command",
    )
    .await;
    let rest: Vec<String> = stderr.try_iter().collect();
    assert!(status.success(), "run failed: {}", rest.join("\n"));
    assert_eq!(training.run_ids(), std::slice::from_ref(&run_id));

    training_series(&prometheus, &training, &run_id).await;
    let history = jsonl(&training.project.path().join(".overbrainer/history.jsonl"));
    counters(&prometheus, &history).await;
    // MET-15: no canary in any label Prometheus stored.
    let series = prometheus
        .api(
            "/api/v1/series",
            &[
                ("match[]", "{__name__=~\"overbrainer_.+\"}"),
                ("start", "0"),
            ],
        )
        .await
        .unwrap()
        .to_string();
    assert!(series.contains(&run_id));
    let found = leaks(&series, &[&key, &topic_canary, &answer_canary]);
    assert!(found.is_empty(), "canaries in labels: {found:?}");
    // The canaries did reach the data, so their absence means something.
    assert!(
        training
            .project
            .read("data/subtopics.jsonl")
            .contains(&answer_canary)
    );
    drop(prometheus);
}

// MET-6: a port that is taken warns and the command carries on without the endpoint.
#[test]
fn a_taken_port_warns_and_the_command_goes_on() {
    let project = TestProject::init();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap();
    let output = project
        .cmd()
        .arg("split")
        .env("OVERBRAINER_METRICS__LISTEN", address.to_string())
        .output()
        .unwrap();
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("split: 0 train"), "{text}");
    assert!(
        text.contains(&format!(
            "the metrics endpoint is off: cannot listen on `{address}` (`metrics.listen`)"
        )),
        "{text}"
    );
}

// MET-5, CHK-6: `config check` shows the key and its source, warns about a non-loopback
// address and serves nothing.
#[test]
fn config_check_shows_the_listen_address_with_its_source_and_warns_beyond_loopback() {
    let project = TestProject::init();
    let port = free_port();
    let output = project
        .cmd()
        .args(["config", "check"])
        .env("OVERBRAINER_METRICS__LISTEN", format!("0.0.0.0:{port}"))
        .output()
        .unwrap();
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        String::from_utf8_lossy(&output.stdout)
            .contains(&format!("metrics.listen = \"0.0.0.0:{port}\"  (env)")),
        "{text}"
    );
    assert!(text.contains("not a loopback address"), "{text}");
    assert!(!text.contains("metrics: serving"), "{text}");
    let output = project
        .cmd()
        .args(["config", "check"])
        .env("OVERBRAINER_METRICS__LISTEN", "localhost:9464")
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        output_text(&output).contains("metrics.listen"),
        "{}",
        output_text(&output)
    );
}

// MET-2, MET-3: a serving command logs the URL with the port it bound; read-only commands
// serve nothing.
#[test]
fn serving_commands_log_their_url_and_read_only_commands_serve_nothing() {
    let project = TestProject::init();
    let run = |args: &[&str]| {
        let output = project
            .cmd()
            .args(args)
            .env("OVERBRAINER_METRICS__LISTEN", "127.0.0.1:0")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{args:?}: {}",
            output_text(&output)
        );
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let stderr = run(&["split"]);
    let url = stderr
        .split("metrics: serving http://127.0.0.1:")
        .nth(1)
        .unwrap_or_else(|| panic!("no URL in {stderr}"));
    let port: u16 = url.split('/').next().unwrap().parse().unwrap();
    assert_ne!(port, 0, "{stderr}");
    assert!(url.starts_with(&format!("{port}/metrics")), "{stderr}");
    for args in [
        &["history"][..],
        &["runs", "ls"],
        &["config", "check"],
        &["pod", "ls"],
    ] {
        let output = project
            .cmd()
            .args(args)
            .env("OVERBRAINER_METRICS__LISTEN", "127.0.0.1:0")
            .output()
            .unwrap();
        assert!(
            !output_text(&output).contains("metrics: serving"),
            "{args:?}: {}",
            output_text(&output)
        );
    }
}

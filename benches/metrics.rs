//! Scrape speed of the Prometheus endpoint (issue 18): 10 followed runs (each with its
//! training gauges, phases, a system sample with 8 GPUs and two file systems, and a
//! `pod.json` whose spend is computed at each scrape) and counters seeded from 10,000
//! history lines. Target: a scrape under 5 ms. Measures the encoding alone and a whole
//! `GET /metrics` over loopback HTTP. Run with `cargo bench --bench metrics`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use overbrainer::env::TimeScale;
use overbrainer::project::Project;
use overbrainer::runs::RunEvent;
use overbrainer::system::{Cpu, Disk, DiskRole, Gpu, Memory, Sample};
use overbrainer::train::metrics::{EvalLine, TrainLine, Value};
use overbrainer::train::phase::Phase;

const RUNS: usize = 10;
const HISTORY_LINES: usize = 10_000;

fn history(dir: &std::path::Path) {
    let stages = ["subtopics", "questions", "answers", "split"];
    let mut text = String::new();
    for n in 0..HISTORY_LINES {
        let stage = stages[n % 4];
        if stage == "split" {
            let _ = writeln!(
                text,
                r#"{{"stage":"split","status":"ok","started_at":"2026-01-01T00:00:00Z","ended_at":"2026-01-01T00:00:01Z","done":100,"skipped":0,"failed":0,"excluded":3,"train":90,"eval":10,"orphaned":0}}"#
            );
        } else {
            let _ = writeln!(
                text,
                r#"{{"stage":"{stage}","status":"ok","started_at":"2026-01-01T00:00:00Z","ended_at":"2026-01-01T00:00:01Z","done":{n},"skipped":1,"failed":0,"excluded":0,"provider":"p","model":"model-{}","input_tokens":1000,"output_tokens":2000,"cost_usd":0.01}}"#,
                n % 5
            );
        }
    }
    std::fs::create_dir_all(dir.join(".overbrainer")).unwrap();
    std::fs::write(dir.join(".overbrainer/history.jsonl"), text).unwrap();
}

fn pod_json(run_id: &str) -> String {
    format!(
        r#"{{"version":1,"run_id":"{run_id}","pod_name":"overbrainer-{run_id}","state":"running","pod_id":"pod{run_id}","gpu_type":"NVIDIA H100 80GB HBM3","data_center_ids":[],"network_volume_id":null,"rate_usd_per_hour":2.5,"created_at":"2026-01-01T00:00:00Z","keep_pod":false,"attempts":[],"retrieved":false}}"#
    )
}

fn sample() -> Sample {
    Sample {
        node: None,
        slurm_job: None,
        at: SystemTime::now(),
        gpus: (0..8)
            .map(|index| Gpu {
                index,
                name: "NVIDIA H100 80GB HBM3".to_owned(),
                utilization: Some(0.9),
                memory_used_bytes: Some(60 << 30),
                memory_total_bytes: Some(80 << 30),
                temperature_celsius: Some(70.0),
                power_watts: Some(650.0),
                power_limit_watts: Some(700.0),
            })
            .collect(),
        cpu: Some(Cpu {
            cpus: Some(32.0),
            container: true,
            load1: Some(12.5),
            usage: Some(0.4),
            busy_seconds: Some(100.0),
            total_seconds: None,
        }),
        memory: Some(Memory {
            used_bytes: 100 << 30,
            limit_bytes: 200 << 30,
            container: true,
        }),
        disks: vec![
            Disk {
                role: DiskRole::Run,
                mount: "/workspace".to_owned(),
                fs_type: "ext4".to_owned(),
                size_bytes: 1 << 40,
                used_bytes: 1 << 38,
                shared: false,
            },
            Disk {
                role: DiskRole::Root,
                mount: "/".to_owned(),
                fs_type: "overlay".to_owned(),
                size_bytes: 1 << 36,
                used_bytes: 1 << 34,
                shared: false,
            },
        ],
    }
}

fn report(what: &str, mut times: Vec<Duration>) {
    times.sort();
    let median = times[times.len() / 2];
    let p99 = times[times.len() * 99 / 100];
    println!(
        "metrics: {what}: median {median:.3?}, p99 {p99:.3?}, max {:.3?} over {} scrapes (target: under 5 ms){}",
        times[times.len() - 1],
        times.len(),
        if p99 < Duration::from_millis(5) {
            ""
        } else {
            "  TOO SLOW"
        }
    );
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(
        root.join("overbrainer.toml"),
        "[project]\nname = \"bench\"\n",
    )
    .unwrap();
    history(root);
    let run_ids: Vec<String> = (0..RUNS)
        .map(|n| format!("20260101-0000{n:02}-bench"))
        .collect();
    for id in &run_ids {
        let run = root.join("runs").join(id);
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join("pod.json"), pod_json(id)).unwrap();
    }
    let project = Project::open(root).unwrap();

    let seeding = Instant::now();
    let (metrics, unread) = overbrainer::metrics::project_metrics(&project, TimeScale::REAL);
    assert!(unread.is_none(), "{unread:?}");
    println!(
        "metrics: seeded from {HISTORY_LINES} history lines in {:.2?}",
        seeding.elapsed()
    );
    for id in &run_ids {
        let follower = metrics.follower();
        metrics.run_event(
            follower,
            &RunEvent::Following {
                run_id: id.clone(),
                target: "pod".to_owned(),
            },
        );
        metrics.run_event(follower, &RunEvent::Phase(Phase::Training));
        metrics.run_event(
            follower,
            &RunEvent::Train(TrainLine {
                ts: 1.0,
                step: 1234,
                max_steps: Some(5000),
                epoch: Some(Value(1.2)),
                loss: Some(Value(0.75)),
                learning_rate: Some(Value(2e-4)),
                grad_norm: Some(Value(1.0)),
            }),
        );
        metrics.run_event(
            follower,
            &RunEvent::Eval(EvalLine {
                ts: 2.0,
                step: 1200,
                eval_loss: Some(Value(0.8)),
                other: std::collections::BTreeMap::new(),
            }),
        );
        metrics.run_event(follower, &RunEvent::Sample(Box::new(sample())));
    }
    let text = metrics.encode();
    let spends = text
        .lines()
        .filter(|l| l.starts_with("overbrainer_runpod_spend_usd{"))
        .count();
    assert_eq!(spends, RUNS, "{text}");
    assert!(text.ends_with("# EOF\n"));
    println!(
        "metrics: {} samples, {} bytes per scrape",
        text.lines().filter(|l| !l.starts_with('#')).count(),
        text.len()
    );

    let encode: Vec<Duration> = (0..1000)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(metrics.encode());
            start.elapsed()
        })
        .collect();
    report("encoding (pod.json files read included)", encode);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let metrics = Arc::new(metrics);
    let http: Vec<Duration> = runtime.block_on(async {
        let endpoint = overbrainer::metrics::server::bind("127.0.0.1:0".parse().unwrap(), metrics)
            .await
            .unwrap();
        let client = reqwest::Client::new();
        let url = endpoint.url();
        let mut times = Vec::new();
        for _ in 0..500 {
            let start = Instant::now();
            let body = client.get(&url).send().await.unwrap().text().await.unwrap();
            times.push(start.elapsed());
            assert!(body.ends_with("# EOF\n"));
        }
        times
    });
    report("GET /metrics over loopback HTTP", http);
}

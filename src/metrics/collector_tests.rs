//! The encoded text of each family (MET-16): names, types, units, labels, `# EOF`.

use super::*;
use std::time::UNIX_EPOCH;

use crate::runs::RunEvent;
use crate::system::{Cpu, Disk, DiskRole, Gpu, Memory, Sample};
use crate::train::metrics::{EvalLine, TrainLine, Value};

pub(super) fn sample_lines(text: &str, family: &str) -> Vec<String> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter(|line| {
            line.strip_prefix(family)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .map(str::to_owned)
        .collect()
}

pub(super) fn descriptor(text: &str, name: &str) -> Vec<String> {
    text.lines()
        .filter(|line| {
            line.starts_with(&format!("# TYPE {name} "))
                || line.starts_with(&format!("# UNIT {name} "))
                || line.starts_with(&format!("# HELP {name} "))
        })
        .map(|line| line.split_once(" help").map_or(line, |(a, _)| a).to_owned())
        .collect()
}

pub(super) fn train_line(step: u64, loss: f64) -> TrainLine {
    TrainLine {
        ts: 1.0,
        step,
        max_steps: Some(10),
        epoch: Some(Value(0.5)),
        loss: Some(Value(loss)),
        learning_rate: Some(Value(0.001)),
        grad_norm: None,
    }
}

pub(super) fn sample(gpus: Vec<Gpu>, root_mount: &str) -> Sample {
    Sample {
        node: None,
        slurm_job: None,
        at: UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000),
        gpus,
        cpu: Some(Cpu {
            cpus: Some(4.0),
            container: false,
            load1: Some(0.5),
            usage: None,
            busy_seconds: None,
            total_seconds: None,
        }),
        memory: Some(Memory {
            used_bytes: 1024,
            limit_bytes: 4096,
            container: false,
        }),
        disks: vec![
            Disk {
                role: DiskRole::Run,
                mount: "/work".to_owned(),
                fs_type: "ext4".to_owned(),
                size_bytes: 1000,
                used_bytes: 10,
                shared: false,
            },
            Disk {
                role: DiskRole::Root,
                mount: root_mount.to_owned(),
                fs_type: "ext4".to_owned(),
                size_bytes: 2000,
                used_bytes: 20,
                shared: false,
            },
        ],
    }
}

pub(super) fn gpu() -> Gpu {
    Gpu {
        index: 0,
        name: "NVIDIA H100 80GB HBM3".to_owned(),
        utilization: Some(0.75),
        memory_used_bytes: Some(1 << 30),
        memory_total_bytes: Some(80 << 30),
        temperature_celsius: Some(61.0),
        power_watts: None,
        power_limit_watts: Some(700.0),
    }
}

pub(super) fn following(metrics: &Metrics, run_id: &str) -> Follower {
    let follower = metrics.follower();
    metrics.run_event(
        follower,
        &RunEvent::Following {
            run_id: run_id.to_owned(),
            target: "local".to_owned(),
        },
    );
    follower
}

#[test]
fn a_fresh_endpoint_has_build_info_idle_stages_and_zero_retries_and_ends_with_eof() {
    let text = Metrics::new("9.8.7", None).encode();
    assert!(text.ends_with("# EOF\n"), "{text}");
    assert_eq!(
        sample_lines(&text, "overbrainer_build_info"),
        ["overbrainer_build_info{version=\"9.8.7\"} 1"]
    );
    assert_eq!(
        descriptor(&text, "overbrainer_build_info"),
        [
            "# HELP overbrainer_build_info Always 1; version is overbrainer's.",
            "# TYPE overbrainer_build_info gauge"
        ]
    );
    let mut running = sample_lines(&text, "overbrainer_stage_running");
    running.sort();
    assert_eq!(
        running,
        [
            "overbrainer_stage_running{stage=\"answers\"} 0",
            "overbrainer_stage_running{stage=\"questions\"} 0",
            "overbrainer_stage_running{stage=\"split\"} 0",
            "overbrainer_stage_running{stage=\"subtopics\"} 0",
        ]
    );
    assert_eq!(
        sample_lines(&text, "overbrainer_item_retries_total").len(),
        4
    );
    assert!(
        text.contains("# TYPE overbrainer_item_retries counter\n"),
        "{text}"
    );
    // Nothing followed: no run series at all.
    for family in [
        "overbrainer_train_step",
        "overbrainer_train_phase",
        "overbrainer_gpu_info",
    ] {
        assert!(!text.contains(family), "{family} in {text}");
    }
}

pub(super) fn history_line(json: &str) -> HistoryLine {
    serde_json::from_str(json).unwrap()
}

#[test]
fn counters_are_seeded_from_every_history_line_and_count_on_from_the_stage_events() {
    let metrics = Metrics::new("1", None);
    metrics.seed(&[
        history_line(
            r#"{"stage":"answers","status":"ok","started_at":"2026-01-01T00:00:00Z","ended_at":"2026-01-01T00:01:00Z","done":5,"skipped":2,"failed":1,"excluded":1,"provider":"p","model":"parent-m","input_tokens":100,"output_tokens":50,"cost_usd":0.25}"#,
        ),
        history_line(
            r#"{"stage":"answers","status":"interrupted","started_at":"2026-01-01T00:00:00Z","ended_at":"2026-01-01T00:01:00Z","done":1,"skipped":0,"failed":0,"excluded":0,"provider":"p","model":"parent-m","input_tokens":10,"output_tokens":5,"cost_usd":null}"#,
        ),
        history_line(
            r#"{"stage":"split","status":"ok","started_at":"2026-01-01T00:00:00Z","ended_at":"2026-01-01T00:01:00Z","done":4,"skipped":0,"failed":0,"excluded":2,"train":3,"eval":1,"orphaned":0}"#,
        ),
    ]);
    metrics.stage_event(&Event::Started {
        stage: Stage::Answers,
        total: 3,
        skipped: 6,
    });
    metrics.stage_event(&Event::Spent {
        stage: Stage::Answers,
        model: "parent-m".to_owned(),
        input_tokens: 7,
        output_tokens: 3,
        cost_usd: Some(0.5),
    });
    metrics.stage_event(&Event::Progress {
        stage: Stage::Answers,
        progress: Progress {
            done: 2,
            retries: 3,
            excluded: 1,
            ..Progress::default()
        },
    });
    let text = metrics.encode();
    let mut items = sample_lines(&text, "overbrainer_stage_items_total");
    items.sort();
    assert!(
        items.contains(
            &"overbrainer_stage_items_total{stage=\"answers\",result=\"done\"} 8".to_owned()
        ),
        "{items:?}"
    );
    assert!(
        items.contains(
            &"overbrainer_stage_items_total{stage=\"answers\",result=\"skipped\"} 8".to_owned()
        ),
        "{items:?}"
    );
    assert!(
        items.contains(
            &"overbrainer_stage_items_total{stage=\"answers\",result=\"excluded\"} 2".to_owned()
        ),
        "{items:?}"
    );
    assert!(
        items.contains(
            &"overbrainer_stage_items_total{stage=\"split\",result=\"excluded\"} 2".to_owned()
        ),
        "{items:?}"
    );
    let mut tokens = sample_lines(&text, "overbrainer_tokens_total");
    tokens.sort();
    assert_eq!(
        tokens,
        [
            "overbrainer_tokens_total{stage=\"answers\",model=\"parent-m\",direction=\"in\"} 117",
            "overbrainer_tokens_total{stage=\"answers\",model=\"parent-m\",direction=\"out\"} 58",
        ]
    );
    assert_eq!(
        sample_lines(&text, "overbrainer_cost_usd_total"),
        ["overbrainer_cost_usd_total{stage=\"answers\",model=\"parent-m\"} 0.75"]
    );
    assert_eq!(
        descriptor(&text, "overbrainer_cost_usd"),
        [
            "# HELP overbrainer_cost_usd Cost in USD of the requests with a known price.",
            "# TYPE overbrainer_cost_usd counter",
            "# UNIT overbrainer_cost_usd usd"
        ]
    );
    assert!(
        text.contains("overbrainer_item_retries_total{stage=\"answers\"} 3\n"),
        "{text}"
    );
    assert!(
        text.contains("overbrainer_stage_running{stage=\"answers\"} 1\n"),
        "{text}"
    );
    metrics.stage_ended(Stage::Answers);
    assert!(
        metrics
            .encode()
            .contains("overbrainer_stage_running{stage=\"answers\"} 0\n")
    );
}

#[test]
fn judge_requests_count_under_stage_compare_with_the_judges_model_and_an_unknown_price_adds_no_cost()
 {
    let metrics = Metrics::new("1", None);
    let usage = |input_tokens, output_tokens| crate::llm::Usage {
        input_tokens,
        output_tokens,
    };
    metrics.judge_spent("judge-m", usage(10, 5), Some(0.25));
    metrics.judge_spent("judge-m", usage(4, 2), None);
    let text = metrics.encode();
    let mut tokens = sample_lines(&text, "overbrainer_tokens_total");
    tokens.sort();
    assert_eq!(
        tokens,
        [
            "overbrainer_tokens_total{stage=\"compare\",model=\"judge-m\",direction=\"in\"} 14",
            "overbrainer_tokens_total{stage=\"compare\",model=\"judge-m\",direction=\"out\"} 7",
        ]
    );
    assert_eq!(
        sample_lines(&text, "overbrainer_cost_usd_total"),
        ["overbrainer_cost_usd_total{stage=\"compare\",model=\"judge-m\"} 0.25"]
    );
}

#[test]
fn split_reads_running_from_its_start_to_its_end() {
    let metrics = Metrics::new("1", None);
    let running = |metrics: &Metrics| {
        let mut lines = sample_lines(&metrics.encode(), "overbrainer_stage_running");
        lines.sort();
        lines
    };
    metrics.split_started();
    assert_eq!(
        running(&metrics),
        [
            "overbrainer_stage_running{stage=\"answers\"} 0",
            "overbrainer_stage_running{stage=\"questions\"} 0",
            "overbrainer_stage_running{stage=\"split\"} 1",
            "overbrainer_stage_running{stage=\"subtopics\"} 0",
        ]
    );
    metrics.stages_idle();
    assert!(
        running(&metrics).iter().all(|line| line.ends_with(" 0")),
        "{:?}",
        running(&metrics)
    );
}

#[test]
fn a_second_tracker_of_a_stage_counts_from_zero_again() {
    let metrics = Metrics::new("1", None);
    for done in [3, 5, 2] {
        metrics.stage_event(&Event::Progress {
            stage: Stage::Questions,
            progress: Progress {
                done,
                ..Progress::default()
            },
        });
    }
    // 3, then +2, then a new tracker's 2.
    assert!(
        metrics
            .encode()
            .contains("overbrainer_stage_items_total{stage=\"questions\",result=\"done\"} 7\n")
    );
}

/// The families of MET-16 and their OpenMetrics types.
const MET_16_TYPES: [&str; 28] = [
    "overbrainer_stage_items counter",
    "overbrainer_tokens counter",
    "overbrainer_cost_usd counter",
    "overbrainer_stage_running gauge",
    "overbrainer_item_retries counter",
    "overbrainer_train_step gauge",
    "overbrainer_train_max_steps gauge",
    "overbrainer_train_phase gauge",
    "overbrainer_train_loss gauge",
    "overbrainer_eval_loss gauge",
    "overbrainer_learning_rate gauge",
    "overbrainer_runpod_spend_usd gauge",
    "overbrainer_target_disk_used_bytes gauge",
    "overbrainer_target_disk_size_bytes gauge",
    "overbrainer_target_cpu_usage_ratio gauge",
    "overbrainer_target_cpu_load1 gauge",
    "overbrainer_target_cpus gauge",
    "overbrainer_target_memory_used_bytes gauge",
    "overbrainer_target_memory_limit_bytes gauge",
    "overbrainer_target_sample_timestamp_seconds gauge",
    "overbrainer_gpu_utilization_ratio gauge",
    "overbrainer_gpu_memory_used_bytes gauge",
    "overbrainer_gpu_memory_total_bytes gauge",
    "overbrainer_gpu_temperature_celsius gauge",
    "overbrainer_gpu_power_watts gauge",
    "overbrainer_gpu_power_limit_watts gauge",
    "overbrainer_gpu_info gauge",
    "overbrainer_build_info gauge",
];

/// The families of MET-16 whose names end in a unit, with that unit (`# UNIT` lines).
const MET_16_UNITS: [&str; 14] = [
    "overbrainer_cost_usd usd",
    "overbrainer_runpod_spend_usd usd",
    "overbrainer_target_disk_used_bytes bytes",
    "overbrainer_target_disk_size_bytes bytes",
    "overbrainer_target_cpu_usage_ratio ratio",
    "overbrainer_target_memory_used_bytes bytes",
    "overbrainer_target_memory_limit_bytes bytes",
    "overbrainer_target_sample_timestamp_seconds seconds",
    "overbrainer_gpu_utilization_ratio ratio",
    "overbrainer_gpu_memory_used_bytes bytes",
    "overbrainer_gpu_memory_total_bytes bytes",
    "overbrainer_gpu_temperature_celsius celsius",
    "overbrainer_gpu_power_watts watts",
    "overbrainer_gpu_power_limit_watts watts",
];

#[test]
fn the_unit_table_names_every_met_16_family_whose_name_ends_in_a_unit() {
    // OpenMetrics: a family whose name ends in its unit declares that unit. Kept apart from
    // the table so a family added to MET-16 with a unit cannot be left out of it.
    let units = ["usd", "bytes", "seconds", "ratio", "celsius", "watts"];
    let mut derived: Vec<String> = MET_16_TYPES
        .iter()
        .filter_map(|line| line.split_once(' '))
        .filter_map(|(name, _)| {
            let suffix = name.rsplit('_').next()?;
            units.contains(&suffix).then(|| format!("{name} {suffix}"))
        })
        .collect();
    derived.sort();
    let mut table = MET_16_UNITS.to_vec();
    table.sort_unstable();
    assert_eq!(derived, table);
}

#[test]
fn the_endpoint_exposes_exactly_the_families_of_met_16_with_their_types() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("r-6");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(
        run.join("pod.json"),
        r#"{"version":1,"run_id":"r-6","pod_name":"p","state":"running","pod_id":"x","gpu_type":"g","data_center_ids":[],"network_volume_id":null,"rate_usd_per_hour":2.0,"created_at":"2026-01-01T00:00:00Z","keep_pod":false,"attempts":[],"retrieved":false}"#,
    )
    .unwrap();
    let spend = super::super::spend::Spend::new(
        dir.path().to_path_buf(),
        std::time::Duration::from_secs(3600),
    );
    let metrics = Metrics::new("1", Some(spend));
    metrics.stage_event(&Event::Spent {
        stage: Stage::Answers,
        model: "m".to_owned(),
        input_tokens: 1,
        output_tokens: 1,
        cost_usd: Some(0.1),
    });
    let follower = following(&metrics, "r-6");
    metrics.run_event(follower, &RunEvent::Train(train_line(1, 1.0)));
    metrics.run_event(
        follower,
        &RunEvent::Eval(EvalLine {
            ts: 1.0,
            step: 1,
            eval_loss: Some(Value(1.0)),
            other: std::collections::BTreeMap::new(),
        }),
    );
    let mut full = sample(
        vec![Gpu {
            power_watts: Some(100.0),
            ..gpu()
        }],
        "/",
    );
    if let Some(cpu) = full.cpu.as_mut() {
        cpu.usage = Some(0.5);
    }
    metrics.run_event(follower, &RunEvent::Sample(Box::new(full)));
    let text = metrics.encode();
    let mut types: Vec<String> = text
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .map(str::to_owned)
        .collect();
    types.sort();
    let mut expected = MET_16_TYPES.to_vec();
    expected.sort_unstable();
    assert_eq!(types, expected, "{text}");
    // Every family whose name ends in a unit declares it, and no other does.
    let mut units: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("# UNIT "))
        .collect();
    units.sort_unstable();
    let mut expected_units = MET_16_UNITS.to_vec();
    expected_units.sort_unstable();
    assert_eq!(units, expected_units, "{text}");
    assert!(
        text.contains("overbrainer_runpod_spend_usd{run_id=\"r-6\"} "),
        "{text}"
    );
    assert!(
        text.contains("# UNIT overbrainer_runpod_spend_usd usd\n"),
        "{text}"
    );
    // Counters carry `_total` on their samples only.
    for counter in [
        "overbrainer_stage_items",
        "overbrainer_tokens",
        "overbrainer_cost_usd",
        "overbrainer_item_retries",
    ] {
        assert!(
            text.contains(&format!("\n{counter}_total{{")),
            "{counter} in {text}"
        );
        assert!(
            !text.contains(&format!("\n{counter}{{")),
            "{counter} in {text}"
        );
    }
}

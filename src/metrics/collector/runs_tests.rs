//! The run gauges (MET-10, MET-11, MET-13, MET-14): training, phase, target and GPU
//! series that follow a run and go with its last follower.

use super::super::tests::{following, gpu, sample, sample_lines, train_line};
use crate::metrics::collector::Metrics;
use crate::runs::RunEvent;
use crate::train::metrics::{EvalLine, Value};
use crate::train::phase::Phase;

#[test]
fn training_gauges_and_one_phase_series_per_phase_follow_the_run_and_go_with_it() {
    let metrics = Metrics::new("1", None);
    let follower = following(&metrics, "r-1");
    let text = metrics.encode();
    assert_eq!(
        sample_lines(&text, "overbrainer_train_phase").len(),
        6,
        "{text}"
    );
    assert!(text.contains("overbrainer_train_phase{run_id=\"r-1\",phase=\"training\"} 0\n"));
    metrics.run_event(follower, &RunEvent::Phase(Phase::Training));
    metrics.run_event(follower, &RunEvent::Train(train_line(3, 1.25)));
    metrics.run_event(
        follower,
        &RunEvent::Eval(EvalLine {
            ts: 2.0,
            step: 3,
            eval_loss: Some(Value(1.5)),
            other: std::collections::BTreeMap::new(),
        }),
    );
    metrics.run_event(
        follower,
        &RunEvent::Phase(Phase::FinalEvaluation {
            done: 1,
            total: None,
        }),
    );
    let text = metrics.encode();
    for line in [
        "overbrainer_train_step{run_id=\"r-1\"} 3",
        "overbrainer_train_max_steps{run_id=\"r-1\"} 10",
        "overbrainer_train_loss{run_id=\"r-1\"} 1.25",
        "overbrainer_eval_loss{run_id=\"r-1\"} 1.5",
        "overbrainer_learning_rate{run_id=\"r-1\"} 0.001",
        "overbrainer_train_phase{run_id=\"r-1\",phase=\"finalizing\"} 1",
        "overbrainer_train_phase{run_id=\"r-1\",phase=\"training\"} 0",
    ] {
        assert!(text.contains(&format!("{line}\n")), "{line} not in {text}");
    }
    assert!(text.contains("# TYPE overbrainer_train_loss gauge\n"));
    metrics.unfollow(follower);
    let text = metrics.encode();
    assert!(!text.contains("r-1"), "{text}");
    assert!(text.ends_with("# EOF\n"));
}

#[test]
fn a_run_followed_twice_keeps_its_series_until_the_last_follower_leaves() {
    let metrics = Metrics::new("1", None);
    let first = following(&metrics, "r-2");
    let second = following(&metrics, "r-2");
    metrics.run_event(first, &RunEvent::Train(train_line(1, 2.0)));
    metrics.unfollow(first);
    assert!(
        metrics
            .encode()
            .contains("overbrainer_train_step{run_id=\"r-2\"} 1\n")
    );
    metrics.unfollow(second);
    assert!(!metrics.encode().contains("r-2"));
}

#[test]
fn target_and_gpu_series_are_what_the_last_sample_reports_and_go_when_the_follower_moves_on() {
    let metrics = Metrics::new("1", None);
    let follower = following(&metrics, "r-3");
    metrics.run_event(
        follower,
        &RunEvent::Sample(Box::new(sample(vec![gpu()], "/"))),
    );
    let text = metrics.encode();
    for line in [
        "overbrainer_target_disk_used_bytes{run_id=\"r-3\",mount=\"/work\"} 10.0",
        "overbrainer_target_disk_size_bytes{run_id=\"r-3\",mount=\"/\"} 2000.0",
        "overbrainer_target_cpu_load1{run_id=\"r-3\"} 0.5",
        "overbrainer_target_cpus{run_id=\"r-3\"} 4.0",
        "overbrainer_target_memory_used_bytes{run_id=\"r-3\"} 1024.0",
        "overbrainer_target_memory_limit_bytes{run_id=\"r-3\"} 4096.0",
        "overbrainer_target_sample_timestamp_seconds{run_id=\"r-3\"} 1700000000.0",
        "overbrainer_gpu_utilization_ratio{run_id=\"r-3\",gpu=\"0\"} 0.75",
        "overbrainer_gpu_memory_total_bytes{run_id=\"r-3\",gpu=\"0\"} 85899345920.0",
        "overbrainer_gpu_temperature_celsius{run_id=\"r-3\",gpu=\"0\"} 61.0",
        "overbrainer_gpu_power_limit_watts{run_id=\"r-3\",gpu=\"0\"} 700.0",
        "overbrainer_gpu_info{run_id=\"r-3\",gpu=\"0\",name=\"NVIDIA H100 80GB HBM3\"} 1",
    ] {
        assert!(text.contains(&format!("{line}\n")), "{line} not in {text}");
    }
    for (name, unit) in [
        ("overbrainer_target_disk_used_bytes", "bytes"),
        ("overbrainer_gpu_temperature_celsius", "celsius"),
        ("overbrainer_gpu_utilization_ratio", "ratio"),
        ("overbrainer_gpu_power_limit_watts", "watts"),
        ("overbrainer_target_sample_timestamp_seconds", "seconds"),
    ] {
        assert!(
            text.contains(&format!("# UNIT {name} {unit}\n")),
            "{name} in {text}"
        );
    }
    // Not reported, so no series: CPU usage without a previous sample, power draw.
    assert!(
        !text.contains("overbrainer_target_cpu_usage_ratio{"),
        "{text}"
    );
    assert!(!text.contains("overbrainer_gpu_power_watts{"), "{text}");

    // The next sample: no GPU, `/` is the run directory's file system.
    let mut next = sample(Vec::new(), "/work");
    next.disks[0].mount = "/work".to_owned();
    metrics.run_event(follower, &RunEvent::Sample(Box::new(next)));
    let text = metrics.encode();
    assert!(!text.contains("gpu=\"0\""), "{text}");
    assert_eq!(
        sample_lines(&text, "overbrainer_target_disk_used_bytes").len(),
        1,
        "{text}"
    );

    // A network file system has no disk series.
    let mut shared = sample(Vec::new(), "/work");
    shared.disks[0].shared = true;
    metrics.run_event(follower, &RunEvent::Sample(Box::new(shared)));
    assert!(
        !metrics
            .encode()
            .contains("overbrainer_target_disk_used_bytes{")
    );

    // The same follower follows another run: the first run's series go.
    metrics.run_event(
        follower,
        &RunEvent::Following {
            run_id: "r-4".to_owned(),
            target: "local".to_owned(),
        },
    );
    let text = metrics.encode();
    assert!(!text.contains("r-3"), "{text}");
    assert!(
        text.contains("overbrainer_train_phase{run_id=\"r-4\""),
        "{text}"
    );
}

#[test]
fn an_infinite_loss_leaves_no_series_since_openmetrics_cannot_carry_it_as_encoded() {
    let metrics = Metrics::new("1", None);
    let follower = following(&metrics, "r-5");
    metrics.run_event(follower, &RunEvent::Train(train_line(1, 2.0)));
    metrics.run_event(follower, &RunEvent::Train(train_line(2, f64::INFINITY)));
    let text = metrics.encode();
    assert!(!text.contains("overbrainer_train_loss{"), "{text}");
    assert!(text.contains("overbrainer_train_step{run_id=\"r-5\"} 2\n"));
}

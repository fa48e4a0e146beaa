//! `pod.json`: written from the lifecycle's state, read back to the same facts, refused
//! with the file and line when broken.

use std::time::Duration;

use super::*;
use crate::env::TimeScale;
use crate::runpod::lifecycle::tests::{target, view};
use crate::runpod::lifecycle::{Effect, Event, Handshake, PodStatus, Refusal, Rules, handle};

fn context() -> PodContext {
    PodContext {
        run_id: "r_20261201-130000-ab12".into(),
        pod_name: "overbrainer-r_20261201-130000-ab12".into(),
        data_center_ids: vec!["EU-RO-1".into()],
        network_volume_id: None,
        host_key_secret_id: Some("sec_1".into()),
    }
}

/// 2026-12-01T13:00:00.123456789Z on the driver's clock.
fn t0() -> Duration {
    Duration::new(1_796_130_000, 123_456_789)
}

fn rules() -> Rules {
    Rules::new(&target(2.0, Some(1.0)), false, TimeScale::REAL)
}

#[test]
fn pod_json_before_a_create_call_records_it_as_sent() {
    let mut state = PodState::new(rules(), vec!["A".into(), "B".into()]);
    let fx = handle(&mut state, Event::Began { at: t0() });
    let record = fx.iter().position(|e| *e == Effect::Record).unwrap();
    let create = fx
        .iter()
        .position(|e| matches!(e, Effect::Create(_)))
        .unwrap();
    assert!(record < create, "{fx:?}");
    let pod = PodRecord::new(&context(), &state);
    assert_eq!(pod.state, "creating");
    assert_eq!(pod.attempts.len(), 1);
    assert_eq!(
        (
            pod.attempts[0].gpu_type.as_str(),
            pod.attempts[0].outcome.as_str()
        ),
        ("A", "sent")
    );
    assert_eq!(pod.pod_id, None);
}

#[test]
fn pod_json_round_trips_the_facts_of_a_pod_deleted_by_the_client() {
    let mut state = PodState::new(rules(), vec!["A".into(), "B".into()]);
    let _ = handle(&mut state, Event::Began { at: t0() });
    let _ = handle(
        &mut state,
        Event::CreateFailed {
            at: t0() + Duration::from_secs(1),
            refusal: Refusal::Capacity("no longer any instances available".into()),
        },
    );
    let mut pod = view("pod1", PodStatus::Running, false);
    pod.created_at = Some(t0() + Duration::from_secs(2));
    let _ = handle(
        &mut state,
        Event::Created {
            at: t0() + Duration::from_secs(2),
            pod,
        },
    );
    let mut booted = view("pod1", PodStatus::Running, true);
    booted.created_at = Some(t0() + Duration::from_secs(2));
    let at = t0() + Duration::from_secs(30);
    let _ = handle(
        &mut state,
        Event::Polled {
            at,
            pod: Ok(Some(booted)),
        },
    );
    let _ = handle(
        &mut state,
        Event::Handshook {
            at,
            result: Handshake::Pinned,
        },
    );
    assert_eq!(state.phase, Phase::Transmitting);
    state.facts.job_started_at = Some(t0() + Duration::from_secs(60));
    state.facts.retrieved = true;
    state.facts.deleted = Some((t0() + Duration::from_secs(3602), Deleter::Client));
    state.phase = Phase::Gone;

    let dir = tempfile::tempdir().unwrap();
    let written = PodRecord::new(&context(), &state);
    written.save(dir.path()).unwrap();
    let read = PodRecord::read(dir.path()).unwrap().unwrap();
    assert_eq!(read, written);
    assert_eq!(read.facts().unwrap(), state.facts);

    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join(POD_FILE)).unwrap()).unwrap();
    assert_eq!(json["state"], "deleted");
    assert_eq!(json["pod_id"], "pod1");
    assert_eq!(json["gpu_type"], "B");
    assert_eq!(json["rate_usd_per_hour"], 0.5);
    assert_eq!(json["created_at"], "2026-12-01T13:00:02.123456789Z");
    assert_eq!(json["deadline_at"], "2026-12-01T15:00:02.123456789Z");
    // One USD at 0.5 an hour: deleted at two hours, snapshot at min(0.95 x 2 h, 2 h - 15 min).
    assert_eq!(json["cost_cap_at"], "2026-12-01T15:00:02.123456789Z");
    assert_eq!(json["cost_snapshot_at"], "2026-12-01T14:45:02.123456789Z");
    assert_eq!(json["attempts"][0]["outcome"], "refused");
    assert_eq!(json["attempts"][1]["outcome"], "created");
    assert_eq!(json["attempts"][1]["detail"], "pod1");
    assert_eq!(json["deleted"]["by"], "client");
    assert_eq!(json["deleted"]["uptime_s"], 3600.0);
    assert_eq!(json["deleted"]["cost_usd"], 0.5);
    assert_eq!(json["keep_pod"], false);
    assert_eq!(json["data_center_ids"][0], "EU-RO-1");
}

#[test]
fn a_run_without_pod_json_has_no_pod_record() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(PodRecord::read(dir.path()).unwrap(), None);
}

#[test]
fn a_broken_pod_json_is_refused_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(POD_FILE),
        "{\n  \"version\": 1,\n  oops\n}\n",
    )
    .unwrap();
    let text = PodRecord::read(dir.path()).unwrap_err().to_string();
    assert!(
        text.contains("pod.json") && text.contains("line 3"),
        "{text}"
    );
}

#[test]
fn a_pod_json_with_an_unknown_attempt_outcome_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut state = PodState::new(rules(), vec!["A".into()]);
    let _ = handle(&mut state, Event::Began { at: t0() });
    let mut record = PodRecord::new(&context(), &state);
    record.attempts[0].outcome = "exploded".into();
    record.save(dir.path()).unwrap();
    let text = PodRecord::read(dir.path()).unwrap_err().to_string();
    assert!(
        text.contains("pod.json") && text.contains("`exploded`"),
        "{text}"
    );
}

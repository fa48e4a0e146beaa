//! A pod's log stream read into `.pod/pod.log` against the stand-in's
//! `GET /v2/pods/{id}/logs` (issue 13, POD-55, POD-57, POD-59): the first read's backfill,
//! a connection dropped mid-event, a later attach from the cursor, a refused event ID,
//! and planted secrets of every shape that never reach the copy.

use std::path::Path;
use std::time::Duration;

use overbrainer::llm::Redactor;
use overbrainer::runpod::api::{RunpodClient, pod_name};
use overbrainer::runpod::logs::copy::{LOG_FILE, PodLogCopy};
use overbrainer::runpod::logs::read::{ReadEnd, drain, read_once};
use tokio_util::sync::CancellationToken;

use crate::runpod_standin::{Standin, bare_body};

/// A canary key: long, random.
const KEY: &str = "rpa_CANARY7Hd2Kq9Wz4Xn6Lb1Vt8Mr3Pc5Jf0Gs";

/// Secrets of each POD-59 shape, each holding a long random canary.
const PLANTED: [(&str, &str); 8] = [
    (
        "the key rpa_CANARY7Hd2Kq9Wz4Xn6Lb1Vt8Mr3Pc5Jf0Gs here",
        "Hd2Kq9Wz4Xn6",
    ),
    (
        "other rps_CANARY3Lk8Qw1Zx5Vn9Bm2Hj6Tg4Rf7 key",
        "Lk8Qw1Zx5Vn9",
    ),
    ("hf token hf_CANARYp4Xq9Zk2Wn7Lm3Vb8Tj1Hd6", "p4Xq9Zk2Wn7L"),
    ("export WANDB_API_KEY=CANARY-Vr5Tn8Qz2Kw6Xm", "Vr5Tn8Qz2Kw6"),
    ("\"db_password\": \"CANARY-Zp3Lq7Wk1Rt9Xs\"", "Zp3Lq7Wk1Rt9"),
    (
        "-----BEGIN OPENSSH PRIVATE KEY----- CANARY-Mf6Hs2Jd8Lq4Np",
        "Mf6Hs2Jd8Lq4",
    ),
    (
        "MIIEvQIBADANBgkqhkiGCANARYq8Wz3Xn7Kd1Lr5Vt9Bm2Hj6",
        "q8Wz3Xn7Kd1L",
    ),
    ("an extra job secret CANARY-Gw4Pk9Tz1Xq6Rm3", "Gw4Pk9Tz1Xq6"),
];

/// The job's own secret, registered as the run registers its HF token.
const JOB_SECRET: &str = "CANARY-Gw4Pk9Tz1Xq6Rm3";

async fn pod(standin: &Standin) -> (RunpodClient, String) {
    let client = standin.client(Duration::from_secs(10));
    let pod = client
        .create_pod(&bare_body("r_20261205-080000-lg01"))
        .await
        .expect("a pod");
    assert_eq!(pod.name, pod_name("r_20261205-080000-lg01"));
    (client, pod.id)
}

fn plant(standin: &Standin, pod: &str, lines: std::ops::Range<usize>) {
    let mut state = standin.state();
    for n in lines {
        let ts = format!("2026-12-05T08:{:02}:{:02}Z", n / 60, n % 60);
        let source = if n % 5 == 4 { "system" } else { "container" };
        state.log(pod, &ts, source, &format!("line {n}"));
    }
}

fn copied(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join(LOG_FILE))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            v["line"].as_str().unwrap_or_default().to_owned()
        })
        .collect()
}

fn numbered(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|n| format!("line {n}")).collect()
}

async fn read(client: &RunpodClient, pod: &str, dir: &Path, known: &Redactor) -> ReadEnd {
    let mut copy = PodLogCopy::open(dir).expect("the copy");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    read_once(
        client,
        pod,
        &mut copy,
        known,
        Some(deadline),
        &CancellationToken::new(),
    )
    .await
    .expect("a read")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_logs_first_read_backfills_then_a_later_attach_goes_on_from_the_cursor() {
    let standin = Standin::start(KEY).await;
    let (client, pod) = pod(&standin).await;
    plant(&standin, &pod, 0..120);
    let dir = tempfile::tempdir().unwrap();
    let known = Redactor::new();
    assert_eq!(
        read(&client, &pod, dir.path(), &known).await,
        ReadEnd::Ended
    );
    // The first read asks for the last 5000 lines (the stand-in's default is 100).
    assert_eq!(copied(dir.path()), numbered(0..120));
    // A detach, more lines, an attach: only the new lines, asked for after the cursor.
    plant(&standin, &pod, 120..130);
    assert_eq!(
        read(&client, &pod, dir.path(), &known).await,
        ReadEnd::Ended
    );
    assert_eq!(copied(dir.path()), numbered(0..130));
    let reads = standin.state().log_reads.clone();
    // The key travels in the Authorization header only, never in the query.
    assert!(reads.iter().all(|(query, _)| !query.contains(&KEY[8..20])));
    let last_first = standin.state().logs[&pod][119].id.clone();
    assert_eq!(reads[0], ("tail=5000".to_owned(), None));
    assert_eq!(reads[1], (String::new(), Some(last_first)));
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(dir.path().join(LOG_FILE))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_logs_a_dropped_connection_then_a_reconnect_duplicates_no_line() {
    let standin = Standin::start(KEY).await;
    let (client, pod) = pod(&standin).await;
    plant(&standin, &pod, 0..10);
    standin.state().faults.log_drops = vec![4, 2];
    let dir = tempfile::tempdir().unwrap();
    let known = Redactor::new();
    assert_eq!(
        read(&client, &pod, dir.path(), &known).await,
        ReadEnd::Ended
    );
    // The event cut off is not kept: it comes again with the next read.
    assert_eq!(copied(dir.path()), numbered(0..4));
    assert_eq!(
        read(&client, &pod, dir.path(), &known).await,
        ReadEnd::Ended
    );
    assert_eq!(copied(dir.path()), numbered(0..6));
    assert_eq!(
        read(&client, &pod, dir.path(), &known).await,
        ReadEnd::Ended
    );
    assert_eq!(copied(dir.path()), numbered(0..10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_logs_a_refused_event_id_restarts_once_from_its_time() {
    let standin = Standin::start(KEY).await;
    let (client, pod) = pod(&standin).await;
    plant(&standin, &pod, 0..5);
    let dir = tempfile::tempdir().unwrap();
    let known = Redactor::new();
    read(&client, &pod, dir.path(), &known).await;
    plant(&standin, &pod, 5..8);
    standin.state().faults.refused_event_ids = 1;
    assert_eq!(
        read(&client, &pod, dir.path(), &known).await,
        ReadEnd::Ended
    );
    // Line 4 comes again from its time, and is not written twice.
    assert_eq!(copied(dir.path()), numbered(0..8));
    let reads = standin.state().log_reads.clone();
    assert_eq!(reads.len(), 3);
    assert!(reads[1].1.is_some());
    assert_eq!(
        reads[2],
        ("since=2026-12-05T08%3A00%3A04Z".to_owned(), None)
    );
    // Refused twice: a clear error, nothing written.
    standin.state().faults.refused_event_ids = 2;
    let mut copy = PodLogCopy::open(dir.path()).unwrap();
    let error = read_once(
        &client,
        &pod,
        &mut copy,
        &known,
        None,
        &CancellationToken::new(),
    )
    .await;
    // The restart from a time carries no event ID, so it is served: still no duplicate.
    assert!(error.is_ok(), "{error:?}");
    assert_eq!(copied(dir.path()), numbered(0..8));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_logs_planted_secrets_of_every_shape_never_reach_the_copy() {
    let standin = Standin::start(KEY).await;
    let (client, pod) = pod(&standin).await;
    {
        let mut state = standin.state();
        for (n, (line, _)) in PLANTED.iter().enumerate() {
            state.log(
                &pod,
                &format!("2026-12-05T08:01:{n:02}Z"),
                "container",
                line,
            );
        }
        let long = "QUJD".repeat(70);
        state.log(
            &pod,
            "2026-12-05T08:02:00Z",
            "system",
            &format!("blob {long}"),
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let known = Redactor::new();
    known.add(&secrecy::SecretString::from(JOB_SECRET.to_owned()));
    read(&client, &pod, dir.path(), &known).await;
    let text = std::fs::read_to_string(dir.path().join(LOG_FILE)).unwrap();
    assert_eq!(text.lines().count(), PLANTED.len() + 1);
    for (_, canary) in PLANTED {
        assert!(!text.contains(canary), "{canary} in {text}");
    }
    assert!(!text.contains("QUJDQUJD"), "{text}");
    assert!(text.contains("***"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_logs_drain_reads_what_is_left_within_its_bound_and_stops_when_the_pod_is_gone() {
    let standin = Standin::start(KEY).await;
    let (client, pod) = pod(&standin).await;
    plant(&standin, &pod, 0..3);
    let dir = tempfile::tempdir().unwrap();
    let known = Redactor::new();
    let started = std::time::Instant::now();
    drain(
        &client,
        &pod,
        dir.path(),
        &known,
        Duration::from_secs(5),
        None,
    )
    .await
    .unwrap();
    assert_eq!(copied(dir.path()), numbered(0..3));
    assert!(started.elapsed() < Duration::from_secs(5));
    client.delete_pod(&pod).await.unwrap();
    assert_eq!(read(&client, &pod, dir.path(), &known).await, ReadEnd::Gone);
}

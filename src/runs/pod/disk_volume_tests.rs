//! Issue 13: a network volume filling up during a followed run, end to end through the
//! watch: its use as the watchdog's `du` reports it (`.pod/volume_du`, KiB), its size
//! from a Runpod v2 volume API (`GET /v2/network-volumes`, `PATCH
//! /v2/network-volumes/{id}`, a volume only grows), the warnings, the grow, the size
//! written for the watchdog, and the `disk` snapshot once it cannot grow. Time runs
//! scaled (a rule minute is 0.3 s here).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::*;

const KEY: &str = "rpa_unit_Vq7Lz2Pn8Xw4Kt1Rd6Hm3Bc9";
const VOLUME: &str = "vol4k2q8z";

/// The account's one network volume: its size, and how many grows it accepts.
struct Volumes {
    size: Mutex<u64>,
    grows: Mutex<u32>,
    patches: Mutex<Vec<u64>>,
}

/// The volume API answering from [`Volumes`].
struct Api(Arc<Volumes>);

impl Respond for Api {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let volumes = &self.0;
        let bearer = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        if bearer != Some(&format!("Bearer {KEY}")) {
            return ResponseTemplate::new(401);
        }
        let mut size = volumes.size.lock().unwrap();
        match (request.method.as_str(), request.url.path()) {
            ("GET", "/v2/network-volumes") => ResponseTemplate::new(200).set_body_json(json!({
                "networkVolumes": [
                    {"id": VOLUME, "name": "models", "size": *size, "dataCenterId": "EU-RO-1"}
                ]
            })),
            ("PATCH", path) if path == format!("/v2/network-volumes/{VOLUME}") => {
                let asked = serde_json::from_slice::<Value>(&request.body)
                    .ok()
                    .and_then(|body| body.get("size").and_then(Value::as_u64));
                let Some(asked) = asked else {
                    return ResponseTemplate::new(400);
                };
                volumes.patches.lock().unwrap().push(asked);
                let mut grows = volumes.grows.lock().unwrap();
                if *grows == 0 || asked <= *size {
                    return ResponseTemplate::new(400).set_body_json(json!({
                        "title": "Bad Request", "status": 400,
                        "detail": "network volume size can only be increased within the account's quota"
                    }));
                }
                *grows -= 1;
                *size = asked;
                ResponseTemplate::new(200).set_body_json(
                    json!({"id": VOLUME, "name": "models", "size": asked, "dataCenterId": "EU-RO-1"}),
                )
            }
            _ => ResponseTemplate::new(404),
        }
    }
}

/// The volume's usable bytes at `gb` GB (94%).
fn usable(gb: u64) -> u64 {
    gb * GB * 94 / 100
}

/// Writes the watchdog's `du` of the volume: `percent` of the usable bytes at `gb`.
fn used(run_dir: &std::path::Path, percent: u64, gb: u64) {
    let kib = usable(gb) * percent / 100 / 1024;
    std::fs::write(run_dir.join(".pod/volume_du"), format!("{kib}\n")).unwrap();
}

/// Waits for a disk warning containing `text`, failing after a deadline, naming it;
/// returns the warnings seen on the way, that one last.
async fn until(
    warnings: &mut tokio::sync::mpsc::UnboundedReceiver<RunEvent>,
    text: &str,
) -> Vec<String> {
    let mut seen = Vec::new();
    let found = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(event) = warnings.recv().await {
            if let RunEvent::Warning(RunWarning::Disk(warning)) = event {
                let done = warning.contains(text);
                seen.push(warning);
                if done {
                    return true;
                }
            }
        }
        false
    })
    .await;
    assert_eq!(
        found,
        Ok(true),
        "no disk warning with `{text}` within 30 s: {seen:?}"
    );
    seen
}

/// Follows the volume of run `r1` in `dir` with `grows` grows accepted, from 10 GB,
/// `max_volume_gb` 20, while `drive` writes its use and reads the warnings.
async fn follow_volume<F, Fut>(grows: u32, drive: F) -> (Arc<Volumes>, tempfile::TempDir)
where
    F: FnOnce(std::path::PathBuf, tokio::sync::mpsc::UnboundedReceiver<RunEvent>) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".pod")).unwrap();
    let volumes = Arc::new(Volumes {
        size: Mutex::new(10),
        grows: Mutex::new(grows),
        patches: Mutex::new(Vec::new()),
    });
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(Api(Arc::clone(&volumes)))
        .mount(&server)
        .await;
    let client = RunpodClient::new(
        &format!("{}/v2", server.uri()),
        secrecy::SecretString::from(KEY),
        crate::llm::Redactor::new(),
        Duration::from_secs(5),
    )
    .unwrap();
    let plan = Plan {
        client: &client,
        volume: Some((VOLUME.to_owned(), Some(20))),
        scale: TimeScale::with_second(Duration::from_millis(5)),
    };
    let executor = AnyExecutor::Local(crate::exec::LocalExecutor::new(dir.path()).unwrap());
    let (events, warnings) = tokio::sync::mpsc::unbounded_channel();
    // The container disk stays at a tenth used; its samples never end the watch.
    let (samples, rx) = tokio::sync::mpsc::unbounded_channel();
    samples.send((10 * GB, 100 * GB)).unwrap();
    let stop = CancellationToken::new();
    let run_dir = dir.path().to_string_lossy().into_owned();
    let watching = watch(&plan, &executor, ("r1", &run_dir), rx, &events, &stop);
    let driving = async {
        drive(dir.path().to_path_buf(), warnings).await;
        stop.cancel();
    };
    tokio::join!(watching, driving);
    drop(samples);
    (volumes, dir)
}

#[tokio::test]
async fn a_filling_volume_warns_grows_once_then_stops_with_the_disk_snapshot() {
    let (volumes, dir) = follow_volume(1, |run_dir, mut warnings| async move {
        used(&run_dir, 86, 10);
        let seen = until(&mut warnings, "85% used or more").await;
        assert!(
            seen.last().unwrap().contains(&format!(
                "network volume `{VOLUME}` of run `r1` is 85% used or more"
            )),
            "{seen:?}"
        );
        used(&run_dir, 93, 10);
        let seen = until(&mut warnings, "growing it from 10 GB to 20 GB").await;
        assert!(
            seen.last().unwrap().contains("a grow is permanent"),
            "{seen:?}"
        );
        // The watchdog learns the new size.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while std::fs::read_to_string(run_dir.join(VOLUME_GB_FILE))
            .ok()
            .as_deref()
            != Some("20\n")
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "`{VOLUME_GB_FILE}` never said 20 GB"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            !run_dir.join(SNAPSHOT_REQUEST).exists(),
            "grown, not stopped"
        );
        // Full again at the cap: no grow left, so the snapshot.
        used(&run_dir, 93, 20);
        let seen = until(&mut warnings, "is full").await;
        assert!(
            seen.last()
                .unwrap()
                .contains("stopping the job with a snapshot (reason `disk`)"),
            "{seen:?}"
        );
    })
    .await;
    assert_eq!(*volumes.patches.lock().unwrap(), [20]);
    assert_eq!(*volumes.size.lock().unwrap(), 20);
    assert_eq!(
        std::fs::read_to_string(dir.path().join(SNAPSHOT_REQUEST)).unwrap(),
        "disk\n"
    );
}

#[tokio::test]
async fn a_refused_grow_says_so_and_stops_with_the_disk_snapshot() {
    let (volumes, dir) = follow_volume(0, |run_dir, mut warnings| async move {
        used(&run_dir, 93, 10);
        let seen = until(&mut warnings, "is full").await;
        let refused = seen
            .iter()
            .find(|w| w.contains("Runpod did not grow"))
            .unwrap_or_else(|| panic!("no refusal said: {seen:?}"));
        assert!(refused.contains(VOLUME), "{refused}");
        assert!(refused.contains("only be increased"), "{refused}");
        assert!(!seen.concat().contains(KEY), "{seen:?}");
    })
    .await;
    assert_eq!(*volumes.patches.lock().unwrap(), [20]);
    assert_eq!(*volumes.size.lock().unwrap(), 10);
    assert_eq!(
        std::fs::read_to_string(dir.path().join(SNAPSHOT_REQUEST)).unwrap(),
        "disk\n"
    );
}

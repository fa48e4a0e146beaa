//! The pod's watchdog script (`runpod::watchdog`) run by real `bash` and `curl` against
//! the stand-in, with the pod-scoped key and pod ID the pod would get: its self-check
//! (POD-29), the retrieved mark (POD-50), the boot grace, the deadline snapshot and the
//! deletion at `max_hours` (POD-40), postponed while a lease is fresh (POD-35) unless
//! the job stalled (issue 21: the same bound as the follower's, from `metrics.jsonl`); a
//! 429 on its self-check is asked again, one on its delete sent again (issue 34). The key
//! reaches `curl` on its standard input only and no log of the watchdog.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use overbrainer::runpod::api::RunpodClient;
use overbrainer::runpod::driver::now;
use overbrainer::runpod::watchdog::WATCHDOG;

use crate::runpod_standin::{DELETE_POD, GET_POD, Standin};
use crate::util::poll;

const KEY: &str = "rpa_CANARY3Jx8Tm5Wq1Zv7Kd4Nb9Hs2Lc6Pg0Fr";

/// A pod on the stand-in (no container: the watchdog runs here) and its client.
async fn pod(standin: &Standin, run: &str) -> (RunpodClient, String) {
    let client = standin.client(Duration::from_secs(30));
    let body = crate::runpod_standin::bare_body(run);
    let id = client.create_pod(&body).await.unwrap().id;
    (client, id)
}

/// Starts the watchdog for pod `id` with run directory `run_dir`, the key `key` and these
/// bounds (whole seconds; a one-second tick).
fn watchdog(
    standin: &Standin,
    id: &str,
    key: &str,
    run_dir: &Path,
    deadline_in: u64,
    bounds: &[(&str, &str)],
) -> Child {
    let mut command = Command::new("bash");
    command
        .args(["-c", WATCHDOG])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("RUNPOD_API_KEY", key)
        .env("RUNPOD_POD_ID", id)
        .env("OVERBRAINER_RUN_DIR", run_dir)
        .env("OVERBRAINER_API_BASE", standin.base())
        .env(
            "OVERBRAINER_DEADLINE_AT",
            (now().as_secs() + deadline_in).to_string(),
        )
        .env("OVERBRAINER_KEEP_POD", "0")
        .env("OVERBRAINER_TICK_S", "1")
        .env("OVERBRAINER_BOOT_GRACE_S", "3600")
        .env("OVERBRAINER_RETRIEVE_GRACE_S", "3600")
        .env("OVERBRAINER_LEASE_FRESH_S", "3600")
        .env("OVERBRAINER_SNAPSHOT_LEAD_S", "1")
        .env("OVERBRAINER_SNAPSHOT_WINDOW_S", "1")
        .env("OVERBRAINER_STALL_S", "0")
        .env("OVERBRAINER_STALL_FLOOR_S", "3600")
        .env("OVERBRAINER_STALL_FIRST_S", "3600")
        .env("OVERBRAINER_STALL_FACTOR", "20")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (name, value) in bounds {
        command.env(name, value);
    }
    command
        .spawn()
        .expect("bash and curl: install them with `apt-get install bash curl`")
}

fn log(run_dir: &Path) -> String {
    std::fs::read_to_string(run_dir.join(".pod/watchdog.log")).unwrap_or_default()
}

/// Waits for the watchdog to exit; its status code.
fn exited(mut child: Child) -> Option<i32> {
    poll(
        Duration::from_secs(120),
        "the watchdog's exit",
        || match child.try_wait() {
            Ok(Some(status)) => Ok(status),
            Ok(None) => Err("running".to_owned()),
            Err(error) => Err(error.to_string()),
        },
    )
    .code()
}

async fn assert_gone(client: &RunpodClient, id: &str, run_dir: &Path) {
    assert_eq!(
        client.gone(id).await.unwrap(),
        (false, false),
        "{}",
        log(run_dir)
    );
    assert!(!log(run_dir).contains(&KEY[4..24]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_watchdog_deletes_its_pod_once_the_results_are_retrieved() {
    let standin = Standin::start(KEY).await;
    let (client, id) = pod(&standin, "r_20261201-140000-wd01").await;
    let run = tempfile::tempdir().unwrap();
    std::fs::create_dir(run.path().join(".pod")).unwrap();
    std::fs::write(run.path().join("job.pid"), "1\n").unwrap();
    std::fs::write(run.path().join(".pod/retrieved"), "1\n").unwrap();
    let child = watchdog(&standin, &id, KEY, run.path(), 3600, &[]);
    assert_eq!(exited(child), Some(0), "{}", log(run.path()));
    assert!(log(run.path()).contains("the results were retrieved"));
    assert_eq!(
        std::fs::read_to_string(run.path().join(".pod/selfcheck")).unwrap(),
        "ok\n"
    );
    assert_gone(&client, &id, run.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_watchdog_asks_again_after_a_429_on_its_self_check_and_on_its_delete() {
    let standin = Standin::start(KEY).await;
    let (client, id) = pod(&standin, "r_20261204-234800-wd429").await;
    {
        let mut state = standin.state();
        state.faults.retry_after = 1;
        state.faults.limited.insert(GET_POD, 2);
        state.faults.limited.insert(DELETE_POD, 1);
    }
    let run = tempfile::tempdir().unwrap();
    std::fs::create_dir(run.path().join(".pod")).unwrap();
    std::fs::write(run.path().join("job.pid"), "1\n").unwrap();
    std::fs::write(run.path().join(".pod/retrieved"), "1\n").unwrap();
    let child = watchdog(&standin, &id, KEY, run.path(), 3600, &[]);
    assert_eq!(exited(child), Some(0), "{}", log(run.path()));
    let log = log(run.path());
    // Not a failed self-check: the pod's key can read its pod.
    assert_eq!(
        log.matches("self-check rate limited (HTTP 429)").count(),
        2,
        "{log}"
    );
    assert_eq!(
        std::fs::read_to_string(run.path().join(".pod/selfcheck")).unwrap(),
        "ok\n"
    );
    assert!(log.contains("delete refused (HTTP 429)"), "{log}");
    assert!(log.contains("the results were retrieved"), "{log}");
    assert_gone(&client, &id, run.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_watchdog_deletes_a_pod_whose_job_never_started_after_the_boot_grace() {
    let standin = Standin::start(KEY).await;
    let (client, id) = pod(&standin, "r_20261201-140000-wd02").await;
    let run = tempfile::tempdir().unwrap();
    let child = watchdog(
        &standin,
        &id,
        KEY,
        run.path(),
        3600,
        &[("OVERBRAINER_BOOT_GRACE_S", "1")],
    );
    assert_eq!(exited(child), Some(0), "{}", log(run.path()));
    assert!(log(run.path()).contains("no job started within boot_grace_minutes"));
    assert_gone(&client, &id, run.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_watchdog_snapshots_then_deletes_at_the_deadline_once_no_lease_holds() {
    let standin = Standin::start(KEY).await;
    let (client, id) = pod(&standin, "r_20261201-140000-wd03").await;
    let run = tempfile::tempdir().unwrap();
    std::fs::create_dir(run.path().join(".pod")).unwrap();
    std::fs::write(run.path().join("job.pid"), "1\n").unwrap();
    std::fs::write(
        run.path().join(".pod/lease"),
        format!("{}\n", now().as_secs()),
    )
    .unwrap();
    let deadline = now().as_secs() + 1;
    let child = watchdog(&standin, &id, KEY, run.path(), 1, &[]);
    // A fresh lease holds the pod past its deadline: checks go by, the pod stays.
    poll(
        Duration::from_secs(60),
        "two checks under the lease",
        || {
            let held = log(run.path()).matches("lease fresh: 1").count();
            if held >= 2 { Ok(()) } else { Err(held) }
        },
    );
    assert_eq!(client.gone(&id).await.unwrap(), (true, true));
    assert!(!run.path().join("snapshot.request").exists());
    // Following stops: the lease goes, the snapshot is requested, the pod deleted.
    std::fs::remove_file(run.path().join(".pod/lease")).unwrap();
    assert_eq!(exited(child), Some(0), "{}", log(run.path()));
    assert_eq!(
        std::fs::read_to_string(run.path().join("snapshot.request")).unwrap(),
        "deadline\n"
    );
    assert!(log(run.path()).contains("max_hours reached"));
    let deleted = standin.state().pods[0].deleted.unwrap();
    let deleted = deleted.duration_since(std::time::UNIX_EPOCH).unwrap();
    assert!(deleted.as_secs() >= deadline, "deleted before its deadline");
    assert_gone(&client, &id, run.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_watchdog_with_a_refused_key_writes_its_failed_self_check_and_keeps_the_key_out_of_its_log()
 {
    let standin = Standin::start(KEY).await;
    let (client, id) = pod(&standin, "r_20261201-140000-wd04").await;
    let run = tempfile::tempdir().unwrap();
    let wrong = "rpa_CANARY9Qe4Wr7Ty2Ui5Op8As3Df6Gh1Jk0Lz";
    let mut child = watchdog(&standin, &id, wrong, run.path(), 3600, &[]);
    let check = run.path().join(".pod/selfcheck");
    let text = poll(Duration::from_secs(60), "the failed self-check", || {
        std::fs::read_to_string(&check).map_err(|e| e.to_string())
    });
    assert_eq!(text, "failed 401\n");
    // Its delete is refused as well: the pod is left to the client guard.
    poll(Duration::from_secs(60), "a refused delete", || {
        if log(run.path()).contains("delete refused (HTTP 401)") {
            Ok(())
        } else {
            Err(())
        }
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(client.gone(&id).await.unwrap(), (true, true));
    assert!(
        !log(run.path()).contains(&wrong[4..24]),
        "{}",
        log(run.path())
    );
    client.delete_pod(&id).await.unwrap();
    standin.assert_nothing_left();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_watchdog_requests_the_cost_snapshot_and_deletes_at_the_cap_whatever_the_lease() {
    let standin = Standin::start(KEY).await;
    let (client, id) = pod(&standin, "r_20261201-140000-wd05").await;
    let run = tempfile::tempdir().unwrap();
    std::fs::create_dir(run.path().join(".pod")).unwrap();
    std::fs::write(run.path().join("job.pid"), "1\n").unwrap();
    let at = now().as_secs();
    for (file, value) in [("lease", at), ("snapshot_at", at), ("cost_cap_at", at + 2)] {
        std::fs::write(run.path().join(".pod").join(file), format!("{value}\n")).unwrap();
    }
    let child = watchdog(&standin, &id, KEY, run.path(), 3600, &[]);
    assert_eq!(exited(child), Some(0), "{}", log(run.path()));
    assert_eq!(
        std::fs::read_to_string(run.path().join("snapshot.request")).unwrap(),
        "cost\n"
    );
    let text = log(run.path());
    assert!(
        text.contains("cost snapshot requested") && text.contains("max_cost_usd reached"),
        "{text}"
    );
    let deleted = standin.state().pods[0].deleted.unwrap();
    let deleted = deleted.duration_since(std::time::UNIX_EPOCH).unwrap();
    assert!(deleted.as_secs() >= at + 2, "deleted before the cap");
    assert_gone(&client, &id, run.path()).await;
}

/// A training line of `metrics.jsonl` at UNIX time `ts`, as the plugin writes it.
fn train_line(step: u64, ts: u64) -> String {
    format!(
        "{{\"kind\": \"train\", \"ts\": {ts}.25, \"step\": {step}, \"max_steps\": 100, \"loss\": 1.0}}\n"
    )
}

// Issue 21: a stalled job (alive, no step within the bound) holds no lease, whatever its
// follower writes: the pod past its deadline gets its snapshot request and goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_watchdog_ignores_the_fresh_lease_of_a_stalled_job() {
    let standin = Standin::start(KEY).await;
    let (client, id) = pod(&standin, "r_20261201-140000-wd06").await;
    let run = tempfile::tempdir().unwrap();
    std::fs::create_dir(run.path().join(".pod")).unwrap();
    std::fs::write(run.path().join("job.pid"), "1\n").unwrap();
    let at = now().as_secs();
    // Three steps a second apart, the last 100 s ago: past a 10 s bound.
    let lines: String = (1..=3).map(|n| train_line(n, at - 102 + n)).collect();
    std::fs::write(run.path().join("metrics.jsonl"), lines).unwrap();
    std::fs::write(run.path().join(".pod/lease"), format!("{at}\n")).unwrap();
    let child = watchdog(
        &standin,
        &id,
        KEY,
        run.path(),
        1,
        &[
            ("OVERBRAINER_STALL_FLOOR_S", "10"),
            ("OVERBRAINER_STALL_FIRST_S", "30"),
        ],
    );
    assert_eq!(exited(child), Some(0), "{}", log(run.path()));
    let text = log(run.path());
    assert!(
        text.contains("the job stalled: no training step or evaluation progress for")
            && text.contains("s after step 3; the lease no longer holds the pod"),
        "{text}"
    );
    assert!(text.contains("max_hours reached"), "{text}");
    assert_eq!(
        std::fs::read_to_string(run.path().join("snapshot.request")).unwrap(),
        "deadline\n"
    );
    assert_gone(&client, &id, run.path()).await;
}

// Issue 21: a job whose steps keep coming keeps its lease past the deadline: slow steps
// (20 s apart in its history) are no stall at a 10 s floor, 20 median step times hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_watchdog_keeps_the_lease_of_a_slow_but_progressing_job() {
    let standin = Standin::start(KEY).await;
    let (client, id) = pod(&standin, "r_20261201-140000-wd07").await;
    let run = tempfile::tempdir().unwrap();
    std::fs::create_dir(run.path().join(".pod")).unwrap();
    std::fs::write(run.path().join("job.pid"), "1\n").unwrap();
    let at = now().as_secs();
    // Steps 20 s apart, the last 15 s ago: longer than the floor, well within 400 s.
    let lines: String = (1..=3).map(|n| train_line(n, at - 75 + 20 * n)).collect();
    std::fs::write(run.path().join("metrics.jsonl"), lines).unwrap();
    std::fs::write(run.path().join(".pod/lease"), format!("{at}\n")).unwrap();
    let mut child = watchdog(
        &standin,
        &id,
        KEY,
        run.path(),
        1,
        &[
            ("OVERBRAINER_STALL_FLOOR_S", "10"),
            ("OVERBRAINER_STALL_FIRST_S", "30"),
        ],
    );
    poll(
        Duration::from_secs(60),
        "three checks under the lease",
        || {
            let held = log(run.path()).matches("lease fresh: 1").count();
            if held >= 3 {
                Ok(())
            } else {
                Err(log(run.path()))
            }
        },
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let text = log(run.path());
    assert!(!text.contains("stalled"), "{text}");
    assert!(!run.path().join("snapshot.request").exists(), "{text}");
    assert_eq!(client.gone(&id).await.unwrap(), (true, true));
    client.delete_pod(&id).await.unwrap();
    standin.assert_nothing_left();
}

/// POD-48: with nothing following, a full network volume (its last background `du`
/// against `.pod/volume_gb`, which wins over the size at pod creation) gets the disk
/// snapshot request, once; a `du` that answers is stood in by one on `PATH`.
#[tokio::test]
async fn runpod_watchdog_requests_the_disk_snapshot_when_the_network_volume_is_full() {
    let standin = Standin::start(KEY).await;
    let (client, id) = pod(&standin, "r_20261201-140000-wd08").await;
    let run = tempfile::tempdir().unwrap();
    std::fs::create_dir(run.path().join(".pod")).unwrap();
    std::fs::write(run.path().join("job.pid"), "1\n").unwrap();
    // 1 GB, of which 94% is usable: 917 968 KiB; 900 000 KiB is 98% of it.
    std::fs::write(run.path().join(".pod/volume_gb"), "1\n").unwrap();
    let bin = tempfile::tempdir().unwrap();
    let du = bin.path().join("du");
    std::fs::write(&du, "#!/bin/sh\nprintf '900000\\t%s\\n' \"$3\"\n").unwrap();
    let mut mode = std::fs::metadata(&du).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
    std::fs::set_permissions(&du, mode).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let volume = tempfile::tempdir().unwrap();
    let volume_path = volume.path().to_string_lossy().into_owned();
    let child = watchdog(
        &standin,
        &id,
        KEY,
        run.path(),
        3600,
        &[
            ("PATH", &path),
            ("OVERBRAINER_VOLUME_PATH", &volume_path),
            ("OVERBRAINER_VOLUME_GB", "1000"),
        ],
    );
    let request = run.path().join("snapshot.request");
    poll(Duration::from_secs(60), "the disk snapshot request", || {
        std::fs::read_to_string(&request).map_err(|e| format!("{e}: {}", log(run.path())))
    });
    assert_eq!(std::fs::read_to_string(&request).unwrap(), "disk\n");
    let text = log(run.path());
    assert!(
        text.contains("disk snapshot requested: the network volume is 98% used"),
        "{text}"
    );
    std::fs::write(run.path().join(".pod/retrieved"), "").unwrap();
    assert_eq!(exited(child), Some(0), "{}", log(run.path()));
    assert_eq!(
        log(run.path()).matches("disk snapshot requested").count(),
        1
    );
    assert_gone(&client, &id, run.path()).await;
}

//! Stall detection by training progress (issue 21), through the real binary on the
//! local target with the real rules on the test clock (`OVERBRAINER_TEST_SECOND_MS`):
//! a stand-in job whose plugin stops writing steps but stays alive is declared stalled
//! once the bound passed, for each `training.on_stall` (`warn` goes on, `snapshot` stops
//! at a snapshot with reason `stall`, `cancel` cancels saying why), a slow but
//! progressing job is never flagged, and real Axolotl paused with `SIGSTOP` is caught.
//! Nothing waits for a time: the tests wait for what `run.json` records.

use std::path::{Path, PathBuf};

use crate::training::{DEADLINE, Setup, Training, finish, training_env};
use crate::util::{output_text, poll, signal};

/// One rule second, in milliseconds, for the stand-in runs: the 10-minute floor is 6 s,
/// the first-step bound 18 s.
const SECOND_MS: &str = "10";

/// A stand-in venv in `dir` whose `bin/axolotl train` writes three training steps at
/// once (with the real time as their `ts`, as the plugin does), then lives on without
/// another line; a `snapshot.request` is honoured as the plugin honours it at a step's
/// end (a complete `checkpoint-3`, the `snapshot` line with the request's reason,
/// `snapshot.json`). With `dir/slow` holding a number of seconds, it writes four steps
/// that far apart instead, then the `end` line and an adapter, and exits 0.
fn stalling_venv(dir: &Path) -> PathBuf {
    let venv = dir.join("venv");
    let bin = venv.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!(
        r#"#!/bin/sh
step() {{
  printf '{{"kind": "train", "ts": %s, "step": %s, "max_steps": 10, "epoch": 0.1, "loss": 1.5, "learning_rate": 0.001, "grad_norm": 1.0}}\n' "$(date +%s.%N)" "$1" >> metrics.jsonl
}}
[ "$1" = train ] || exit 0
mkdir -p output
if [ -e '{d}/slow' ]; then
  pause=$(cat '{d}/slow')
  for n in 1 2 3 4; do step "$n"; [ "$n" = 4 ] || sleep "$pause"; done
  printf '{{"kind": "end", "ts": %s, "step": 4}}\n' "$(date +%s.%N)" >> metrics.jsonl
  echo adapter > output/adapter_model.safetensors
  echo '{{}}' > output/adapter_config.json
  exit 0
fi
for n in 1 2 3; do step "$n"; done
while [ ! -e snapshot.request ]; do sleep 0.05; done
reason=$(head -n 1 snapshot.request)
mkdir -p output/checkpoint-3
for f in adapter_model.safetensors adapter_config.json optimizer.pt scheduler.pt rng_state.pth; do
  echo x > "output/checkpoint-3/$f"
done
echo '{{"global_step": 3}}' > output/checkpoint-3/trainer_state.json
echo adapter > output/adapter_model.safetensors
echo '{{}}' > output/adapter_config.json
printf '{{"kind": "snapshot", "ts": %s, "step": 3, "checkpoint": "checkpoint-3", "reason": "%s"}}\n' "$(date +%s.%N)" "$reason" >> metrics.jsonl
printf '{{"checkpoint": "checkpoint-3", "step": 3}}\n' > snapshot.json
exit 0
"#,
        d = dir.display()
    );
    let axolotl = bin.join("axolotl");
    std::fs::write(&axolotl, script).unwrap();
    std::fs::set_permissions(
        &axolotl,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    venv
}

/// A training project on the local target under `on_stall`, its job from `venv`, its
/// rules on `second_ms`.
fn stall_project(venv: Option<&Path>, on_stall: &str, max_steps: u32, second_ms: &str) -> Training {
    let mut training = Training::new(&Setup {
        venv,
        merge: false,
        max_steps,
        ..Setup::default()
    });
    let config = training.project.read("overbrainer.toml");
    let config = config.replacen(
        "merge = false\n",
        &format!("merge = false\non_stall = \"{on_stall}\"\n"),
        1,
    );
    assert!(config.contains("on_stall"), "{config}");
    training.project.write("overbrainer.toml", &config);
    training.extra_env.push((
        "OVERBRAINER_TEST_SECOND_MS".to_owned(),
        second_ms.to_owned(),
    ));
    training
}

/// Waits until the run records a stall; returns the record.
fn wait_stalled(training: &Training, id: &str) -> serde_json::Value {
    poll(DEADLINE, "a stall in run.json", || {
        let record = training.record(id);
        if record["stalled"].is_object() {
            Ok(record)
        } else {
            Err(record)
        }
    })
}

/// What every stall of the stand-in says: after step 3, and not before the 10-minute
/// floor (6 s on this clock) had passed without a line.
fn assert_stall(record: &serde_json::Value, on_stall: &str) {
    let stalled = &record["stalled"];
    assert_eq!(stalled["last_step"], 3, "{record}");
    assert_eq!(stalled["on_stall"], on_stall, "{record}");
    assert!(stalled["last_step_at"].is_string(), "{record}");
    assert!(stalled["at"].is_string(), "{record}");
    let silent = stalled["silent_seconds"].as_f64().unwrap();
    assert!(silent >= 6.0, "declared before the bound: {record}");
}

#[test]
fn a_job_that_stops_writing_steps_is_warned_about_and_goes_on_with_on_stall_warn() {
    let fake = tempfile::tempdir().unwrap();
    let training = stall_project(Some(&stalling_venv(fake.path())), "warn", 10, SECOND_MS);
    let mut follower = training.spawn(&["train"]);
    let id = training.wait_running(&mut follower);
    let record = wait_stalled(&training, &id);
    assert_stall(&record, "warn");
    assert_eq!(record["state"], "running", "{record}");
    // `runs ls` notes the stall.
    let ls = training.cmd().args(["runs", "ls"]).output().unwrap();
    let listing = String::from_utf8_lossy(&ls.stdout).into_owned();
    assert!(
        listing.lines().any(|l| l.starts_with(&id)
            && l.contains("stalled after step 3")
            && l.contains("on_stall warn")),
        "{listing}"
    );
    // The job goes on; a cancel from another terminal ends it (LCK-9).
    let cancel = training
        .cmd()
        .args(["train", "cancel", &id])
        .output()
        .unwrap();
    assert!(cancel.status.success(), "{}", output_text(&cancel));
    let output = finish(follower);
    let all = output_text(&output);
    let warning = all
        .lines()
        .find(|l| l.contains(&format!("run `{id}` stalled")))
        .unwrap_or_else(|| panic!("no stall warning:\n{all}"));
    assert!(warning.contains("last step 3 at "), "{warning}");
    assert!(warning.contains("system "), "{warning}");
    assert!(warning.contains("on_stall = \"warn\""), "{warning}");
    let record = training.record(&id);
    assert_eq!(record["state"], "cancelled", "{record}");
    assert!(
        record["message"].as_str().unwrap().contains("train cancel"),
        "{record}"
    );
}

#[test]
fn a_job_that_stops_writing_steps_stops_at_a_snapshot_with_on_stall_snapshot() {
    let fake = tempfile::tempdir().unwrap();
    let training = stall_project(Some(&stalling_venv(fake.path())), "snapshot", 10, SECOND_MS);
    let mut follower = training.spawn(&["train"]);
    let id = training.wait_running(&mut follower);
    let output = finish(follower);
    let all = output_text(&output);
    let record = training.record(&id);
    assert_eq!(record["state"], "stopped", "{record}\n{all}");
    assert_stall(&record, "snapshot");
    assert_eq!(record["snapshot"]["reason"], "stall", "{record}");
    assert_eq!(record["snapshot"]["checkpoint"], "checkpoint-3", "{record}");
    assert!(all.contains("on_stall = \"snapshot\""), "{all}");
    assert!(all.contains("stopped at step 3 (stall)"), "{all}");
}

#[test]
fn a_job_that_stops_writing_steps_is_cancelled_saying_why_with_on_stall_cancel() {
    let fake = tempfile::tempdir().unwrap();
    let training = stall_project(Some(&stalling_venv(fake.path())), "cancel", 10, SECOND_MS);
    let mut follower = training.spawn(&["train"]);
    let id = training.wait_running(&mut follower);
    let pid = u32::try_from(training.record(&id)["job"]["pid"].as_u64().unwrap()).unwrap();
    let output = finish(follower);
    let all = output_text(&output);
    assert!(!output.status.success(), "{all}");
    let record = training.record(&id);
    assert_eq!(record["state"], "cancelled", "{record}\n{all}");
    assert_stall(&record, "cancel");
    let message = record["message"].as_str().unwrap();
    assert!(
        message.contains("stalled after step 3")
            && message.contains("`training.on_stall` is `cancel`"),
        "{record}"
    );
    assert!(
        !crate::training::group_alive(pid),
        "the stalled job lives on"
    );
}

#[test]
fn a_slow_but_progressing_job_is_never_flagged() {
    // Steps 8 s apart: more than the 10-minute floor on this clock (6 s), so an
    // idleness bound would fire; 20 median step times (160 s) do not.
    let fake = tempfile::tempdir().unwrap();
    std::fs::write(fake.path().join("slow"), "8").unwrap();
    let training = stall_project(Some(&stalling_venv(fake.path())), "cancel", 4, SECOND_MS);
    let output = training.cmd().arg("train").output().unwrap();
    let all = output_text(&output);
    assert!(output.status.success(), "{all}");
    let id = training.run_ids().remove(0);
    let record = training.record(&id);
    assert_eq!(record["state"], "succeeded", "{record}");
    assert_eq!(record["last_step"], 4, "{record}");
    assert!(record.get("stalled").is_none(), "{record}");
    assert!(!all.contains("stalled"), "{all}");
}

/// Stops (`SIGSTOP`) every Python process of the job's process group `pgid`: the
/// trainer lives, and writes nothing more. Returns how many were stopped.
fn stop_trainer(pgid: u32) -> usize {
    let mut count = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(member) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() < 3 || fields[2] != pgid.to_string() {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains("python") && signal(member, "STOP") {
            count += 1;
        }
    }
    count
}

// Real Axolotl 0.19 on the CPU, paused with SIGSTOP once it trains: its processes live,
// no step comes, and `on_stall = "cancel"` ends it saying why.
#[test]
fn real_axolotl_paused_with_sigstop_is_caught_as_a_stall_and_cancelled() {
    training_env();
    // One rule second is 100 ms: the first-step bound is 180 s (Axolotl's start on a
    // loaded machine), the 10-minute floor 60 s.
    let training = stall_project(None, "cancel", 2000, "100");
    let mut follower = training.spawn(&["train"]);
    let id = training.wait_running(&mut follower);
    let pid = u32::try_from(training.record(&id)["job"]["pid"].as_u64().unwrap()).unwrap();
    poll(DEADLINE, "two training steps", || {
        let record = training.record(&id);
        assert_eq!(record["state"], "running", "the run ended before its steps");
        if record["last_step"].as_u64().is_some_and(|s| s >= 2) {
            Ok(())
        } else {
            Err(record)
        }
    });
    poll(DEADLINE, "the trainer stopped", || {
        if stop_trainer(pid) > 0 {
            Ok(())
        } else {
            Err("no python process in the job's group")
        }
    });
    let output = finish(follower);
    let all = output_text(&output);
    let record = training.record(&id);
    assert_eq!(record["state"], "cancelled", "{record}\n{all}");
    let stalled = &record["stalled"];
    assert_eq!(stalled["on_stall"], "cancel", "{record}");
    assert!(
        stalled["last_step"].as_u64().is_some_and(|s| s >= 2),
        "{record}"
    );
    assert!(
        stalled["silent_seconds"].as_f64().unwrap() >= 60.0,
        "declared before the bound: {record}"
    );
    assert!(
        record["message"]
            .as_str()
            .unwrap()
            .contains("stalled after step"),
        "{record}"
    );
    assert!(all.contains(&format!("run `{id}` stalled")), "{all}");
    assert!(
        !crate::training::group_alive(pid),
        "the stopped trainer lives on"
    );
}

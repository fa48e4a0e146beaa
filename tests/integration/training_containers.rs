//! The `docker` runtime for real (issue 11): training runs of the demo inside containers
//! of real Podman and real Docker, with real Axolotl on the CPU (the image of
//! `scripts/container-env.sh`, which holds the Axolotl venv of `scripts/training-env.sh`),
//! driven through the real `overbrainer` binary on a local target. Each test runs on
//! both engines (one `#[test]` per engine).
//!
//! The engine reaches overbrainer through the environment only (`CONTAINERS_CONF`,
//! `CONTAINERS_STORAGE_CONF`, `DOCKER_HOST`), so its command lines stay as a user's.
//! Real-Axolotl runs are few and shared between assertions: one run proves the named
//! container per stage, the secret, the killed follower and `train attach`; one stopped
//! run and its resumed run prove the snapshot, `--resume-from` and `train cancel`; one
//! run fails.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::engines::{
    TestEngine, container_env, files_holding, processes_with_cmdline, processes_with_env,
};
use crate::training::{
    DEADLINE, Setup, Training, assert_file, assert_merged_run, finish, group_alive, wait_for,
};
use crate::util::output_text;

/// A training project on a local target with `runtime = "docker"` on `engine`, its image
/// the Axolotl test image, and `OVERBRAINER_HF_TOKEN` set to `token`.
fn container_training(engine: TestEngine, setup: Setup<'_>, token: &str) -> Training {
    static PROJECTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let env = container_env();
    let mut training = Training::new(&Setup {
        runtime: "docker",
        engine: engine.name(),
        image: Some(env.axolotl_image()),
        ..setup
    });
    // A project name of its own: run IDs are the project's name and the second, and the
    // container is `overbrainer-<run-id>` in one engine, so two tests starting in the
    // same second must not share a name.
    let n = PROJECTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let config = training.project.read("overbrainer.toml");
    assert!(config.contains("name = \"tiny test\""), "{config}");
    training.project.write(
        "overbrainer.toml",
        &config.replacen(
            "name = \"tiny test\"",
            &format!("name = \"tiny test {} {n}\"", engine.name()),
            1,
        ),
    );
    training.extra_env.extend(engine.env());
    training
        .extra_env
        .push(("OVERBRAINER_HF_TOKEN".to_owned(), token.to_owned()));
    training
}

/// The engine's own state on this machine: storage, run state, events, daemon log.
fn engine_state_dir(engine: TestEngine) -> PathBuf {
    let conf = PathBuf::from(container_env().get("CONTAINERS_CONF"));
    let base = conf
        .parent()
        .and_then(Path::parent)
        .expect("containers dir")
        .to_owned();
    base.join(match engine {
        TestEngine::Podman => "podman",
        TestEngine::Docker => "docker",
    })
}

/// Process IDs whose environment is the job's inside its container: `HF_TOKEN` holds
/// `token` and `HF_HOME` is the container's cache mount (set with `-e` only there).
fn container_processes_with(token: &str) -> Vec<u32> {
    let token_pids = processes_with_env(&format!("HF_TOKEN={token}"));
    let inside = processes_with_env("HF_HOME=/workspace/hf-cache");
    token_pids
        .into_iter()
        .filter(|pid| inside.contains(pid))
        .collect()
}

/// The name of run `id`'s container, `overbrainer-<run-id>-<container_suffix>`, with
/// the suffix its `run.json` records.
fn container_name(training: &Training, id: &str) -> String {
    let path = training
        .project
        .path()
        .join("runs")
        .join(id)
        .join("run.json");
    let text = std::fs::read_to_string(&path).expect("run.json");
    let record: serde_json::Value = serde_json::from_str(&text).expect("run.json is JSON");
    let suffix = record["container_suffix"]
        .as_str()
        .expect("run.json records `container_suffix`");
    format!("overbrainer-{id}-{suffix}")
}

/// Asserts that nothing of the run `id` is left: no container of the engine, no
/// process holding `token`, no file changed since `since` holding it (the test's
/// project and home, the engine's storage and logs).
fn assert_nothing_left(
    training: &Training,
    engine: TestEngine,
    id: &str,
    token: &str,
    since: SystemTime,
) {
    let name = container_name(training, id);
    assert!(
        !engine.containers().contains(&name),
        "{engine:?}: {name} is left ({:?})",
        engine.containers()
    );
    assert_eq!(
        processes_with_env(token),
        Vec::<u32>::new(),
        "{engine:?}: a process of the job is left"
    );
    let temp = training.project.path().parent().expect("temp dir");
    for root in [temp.to_path_buf(), engine_state_dir(engine)] {
        assert_eq!(
            files_holding(&root, token, since),
            Vec::<PathBuf>::new(),
            "{engine:?}: the secret is in a file under {}",
            root.display()
        );
    }
}

// Issue 11: a native-runtime-equivalent run inside containers, with a secret, a follower
// killed with SIGKILL and `train attach`.
fn a_container_run_keeps_its_secret_survives_a_killed_follower_and_attach_collects_it(
    engine: TestEngine,
) {
    let since = SystemTime::now();
    let token = crate::engines::canary();
    let training = container_training(
        engine,
        Setup {
            max_steps: 8,
            ..Setup::default()
        },
        &token,
    );
    let mut follower = training.spawn(&["train"]);
    let id = training.wait_running(&mut follower);
    let name = container_name(&training, &id);
    engine.wait_running(&name, DEADLINE);
    // The secret reaches the job inside its container, and no command line.
    wait_for("the job's process in its container", || {
        !container_processes_with(&token).is_empty()
    });
    assert_eq!(
        processes_with_cmdline(&token),
        Vec::<u32>::new(),
        "{engine:?}: the secret is on a command line"
    );
    follower.kill().unwrap(); // SIGKILL: no detach
    let _ = follower.wait();
    let pid = u32::try_from(training.record(&id)["job"]["pid"].as_u64().unwrap()).unwrap();
    assert!(group_alive(pid) || training.runs().join(&id).join("exit_code").exists());
    assert_eq!(training.record(&id)["state"], "running");
    let attach = training
        .cmd()
        .args(["train", "attach", &id])
        .output()
        .unwrap();
    assert!(
        attach.status.success(),
        "{engine:?}: {}",
        output_text(&attach)
    );
    // Training and merge ran in the container (the metrics plugin imported from the run
    // directory, the merged model written through the mount).
    assert_merged_run(&training, &id);
    let record = training.record(&id);
    assert_eq!(
        record["job"]["container"]["name"],
        name.as_str(),
        "{record}"
    );
    assert_eq!(
        record["job"]["container"]["engine"],
        engine.name(),
        "{record}"
    );
    let log = std::fs::read_to_string(training.runs().join(&id).join("job.log")).unwrap();
    assert!(
        !log.contains(&token),
        "{engine:?}: the secret is in job.log"
    );
    assert_nothing_left(&training, engine, &id, &token, since);
}

#[test]
fn a_container_run_keeps_its_secret_survives_a_killed_follower_and_attach_collects_it_podman() {
    a_container_run_keeps_its_secret_survives_a_killed_follower_and_attach_collects_it(
        TestEngine::Podman,
    );
}

#[test]
fn a_container_run_keeps_its_secret_survives_a_killed_follower_and_attach_collects_it_docker() {
    a_container_run_keeps_its_secret_survives_a_killed_follower_and_attach_collects_it(
        TestEngine::Docker,
    );
}

// Issue 11: `train stop` with a snapshot, `--resume-from` in a new container, then
// `train cancel` of the resumed run while it trains: its container is stopped and
// removed, and nothing of the job is left on the host.
fn a_container_run_stops_at_a_snapshot_resumes_and_its_cancel_leaves_nothing(engine: TestEngine) {
    let since = SystemTime::now();
    let token = crate::engines::canary();
    let training = container_training(
        engine,
        Setup {
            // Far more steps than the test waits for: the resumed run is cancelled
            // while it trains.
            max_steps: 5000,
            ..Setup::default()
        },
        &token,
    );
    let mut follower = training.spawn(&["train"]);
    let id = training.wait_running(&mut follower);
    let stop = training
        .cmd()
        .args(["train", "stop", &id])
        .output()
        .unwrap();
    assert!(stop.status.success(), "{engine:?}: {}", output_text(&stop));
    let output = finish(follower);
    let text = output_text(&output);
    let record = training.record(&id);
    assert_eq!(record["state"], "stopped", "{engine:?}: {record}\n{text}");
    let snapshot_step = record["snapshot"]["step"].as_u64().unwrap();
    let checkpoint = record["snapshot"]["checkpoint"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_file(
        &training
            .runs()
            .join(&id)
            .join(format!("output/{checkpoint}/optimizer.pt")),
    );
    assert!(!training.runs().join(&id).join("output/merged").exists());
    assert!(
        !engine
            .containers()
            .contains(&container_name(&training, &id)),
        "{engine:?}"
    );

    let mut resumed = training.spawn(&["train", "--resume-from", &id]);
    let mut new_id = String::new();
    wait_for("the resumed run to run", || {
        if let Ok(Some(status)) = resumed.try_wait() {
            panic!("{engine:?}: the resumed run ended early ({status})");
        }
        training.run_ids().into_iter().any(|other| {
            let record = training.record(&other);
            let found = other != id && record["state"] == "running" && !record["job"].is_null();
            if found {
                new_id = other;
            }
            found
        })
    });
    // It trains on from the snapshot's next step, in its own container.
    let metrics = training.runs().join(&new_id).join("metrics.jsonl");
    let first_step = || {
        std::fs::read_to_string(&metrics)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|v| v["kind"] == "train")
            .and_then(|v| v["step"].as_u64())
    };
    wait_for("the resumed run's first step", || first_step().is_some());
    assert_eq!(first_step(), Some(snapshot_step + 1), "{engine:?}");
    let name = container_name(&training, &new_id);
    assert!(engine.is_running(&name), "{engine:?}");
    let pid = u32::try_from(training.record(&new_id)["job"]["pid"].as_u64().unwrap()).unwrap();
    // Ctrl-C detaches the follower; the cancel then proceeds.
    let interrupt = std::process::Command::new("kill")
        .args(["-s", "INT", &resumed.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupt.success());
    let output = finish(resumed);
    assert_eq!(output.status.code(), Some(130), "{}", output_text(&output));
    assert!(engine.is_running(&name), "{engine:?}: detaching stopped it");
    let cancel = training
        .cmd()
        .args(["train", "cancel", &new_id])
        .output()
        .unwrap();
    assert!(
        cancel.status.success(),
        "{engine:?}: {}",
        output_text(&cancel)
    );
    let record = training.record(&new_id);
    assert_eq!(record["state"], "cancelled", "{engine:?}: {record}");
    assert_eq!(record["retrieved"], true, "{record}");
    assert!(!group_alive(pid), "{engine:?}: the job's group is alive");
    assert_nothing_left(&training, engine, &new_id, &token, since);
}

#[test]
fn a_container_run_stops_at_a_snapshot_resumes_and_its_cancel_leaves_nothing_podman() {
    a_container_run_stops_at_a_snapshot_resumes_and_its_cancel_leaves_nothing(TestEngine::Podman);
}

#[test]
fn a_container_run_stops_at_a_snapshot_resumes_and_its_cancel_leaves_nothing_docker() {
    a_container_run_stops_at_a_snapshot_resumes_and_its_cancel_leaves_nothing(TestEngine::Docker);
}

// Tester defect 2: `train cancel` from a shell whose engine configuration differs from
// the one `train` started the run with (another `CONTAINERS_CONF` and storage) read the
// run's live container as gone: the job's processes went, the container trained on.
// The cancel runs the engine with the environment of the start and stops it; the
// follower records the run cancelled, and nothing of it is left.
#[test]
fn regression_a_train_cancel_with_another_engine_configuration_stops_the_container_podman() {
    let engine = TestEngine::Podman;
    let since = SystemTime::now();
    let token = crate::engines::canary();
    let training = container_training(
        engine,
        Setup {
            // Far more steps than the test waits for: the run is cancelled while it
            // trains.
            max_steps: 5000,
            merge: false,
            ..Setup::default()
        },
        &token,
    );
    let mut follower = training.spawn(&["train"]);
    let id = training.wait_running(&mut follower);
    let name = container_name(&training, &id);
    engine.wait_running(&name, DEADLINE);
    let elsewhere = tempfile::tempdir().unwrap();
    let mut cancel = training.cmd();
    for (key, value) in engine.env_elsewhere(elsewhere.path()) {
        cancel.env(key, value);
    }
    let cancel = cancel.args(["train", "cancel", &id]).output().unwrap();
    let still_running = engine.is_running(&name);
    if still_running {
        engine.remove(&name);
    }
    assert!(cancel.status.success(), "{}", output_text(&cancel));
    assert!(
        !still_running,
        "the cancel read the live container {name} as gone: {}",
        output_text(&cancel)
    );
    let output = finish(follower);
    let record = training.record(&id);
    assert_eq!(
        record["state"],
        "cancelled",
        "{record}\n{}",
        output_text(&output)
    );
    assert_nothing_left(&training, engine, &id, &token, since);
}

// Issue 11: the job's own non-zero exit code comes out of the container; the run fails
// pointing at its log.
fn a_container_job_that_exits_non_zero_fails_pointing_at_its_log(engine: TestEngine) {
    let since = SystemTime::now();
    let token = crate::engines::canary();
    let training = container_training(
        engine,
        Setup {
            base_model: Some("/nonexistent/base-model"),
            ..Setup::default()
        },
        &token,
    );
    let output = training.cmd().arg("train").output().unwrap();
    let text = output_text(&output);
    assert!(!output.status.success(), "{engine:?}: {text}");
    let id = &training.run_ids()[0];
    let record = training.record(id);
    assert_eq!(record["state"], "failed", "{engine:?}: {record}");
    // Axolotl's own code, not one of the engine's (125 failed, 126/127 cannot run).
    let code: i32 = std::fs::read_to_string(training.runs().join(id).join("exit_code"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        code != 0 && !(125..=127).contains(&code),
        "{engine:?}: {code}"
    );
    let message = record["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("exited with code {code}")),
        "{engine:?}: {message}"
    );
    assert!(
        message.contains(&format!("runs/{id}/job.log` lines")),
        "{message}"
    );
    let log = std::fs::read_to_string(training.runs().join(id).join("job.log")).unwrap();
    assert!(log.contains("/nonexistent/base-model"), "{engine:?}: {log}");
    assert_nothing_left(&training, engine, id, &token, since);
}

#[test]
fn a_container_job_that_exits_non_zero_fails_pointing_at_its_log_podman() {
    a_container_job_that_exits_non_zero_fails_pointing_at_its_log(TestEngine::Podman);
}

#[test]
fn a_container_job_that_exits_non_zero_fails_pointing_at_its_log_docker() {
    a_container_job_that_exits_non_zero_fails_pointing_at_its_log(TestEngine::Docker);
}

// Defect 1: a container target whose engine is not installed is refused before a run
// exists, naming the engine's program and the target's `engine` key; nothing is left in
// `runs/` (no run directory, no staged temporary).
fn a_missing_engine_is_refused_before_a_run_exists_naming_it_and_its_key(engine: TestEngine) {
    let training = Training::new(&Setup {
        runtime: "docker",
        engine: engine.name(),
        ..Setup::default()
    });
    // A `PATH` holding `sh` alone: no engine of either kind.
    let bin = training.project.home().join("no-engine-bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink("/bin/sh", bin.join("sh")).unwrap();
    let output = training
        .cmd()
        .env("PATH", &bin)
        .arg("train")
        .output()
        .unwrap();
    let text = output_text(&output);
    assert!(!output.status.success(), "{engine:?}: {text}");
    assert!(
        text.contains(&format!(
            "the container engine `{}` of target `local` is not on its `PATH`",
            engine.name()
        )),
        "{engine:?}: {text}"
    );
    assert!(
        text.contains("`targets.local.engine`"),
        "{engine:?}: {text}"
    );
    assert!(!text.contains("job.pid"), "{engine:?}: {text}");
    assert_eq!(training.run_ids(), Vec::<String>::new(), "{engine:?}");
    let left: Vec<String> = std::fs::read_dir(training.runs())
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|name| name != ".hf-cache")
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(left, Vec::<String>::new(), "{engine:?}: left in runs/");
}

#[test]
fn regression_a_missing_engine_is_refused_before_a_run_exists_naming_it_and_its_key_podman() {
    a_missing_engine_is_refused_before_a_run_exists_naming_it_and_its_key(TestEngine::Podman);
}

#[test]
fn regression_a_missing_engine_is_refused_before_a_run_exists_naming_it_and_its_key_docker() {
    a_missing_engine_is_refused_before_a_run_exists_naming_it_and_its_key(TestEngine::Docker);
}

// Issue 21: a local target's job in a container sees its run directory only: an
// uploaded base model (`upload_base_model`) is linked into `runs/<id>/base_model/`
// and `base_model` names it relative to the run directory, where the job runs.
#[test]
fn a_container_run_trains_on_a_base_model_linked_into_its_run_directory_podman() {
    a_container_run_trains_on_a_base_model_linked_into_its_run_directory(TestEngine::Podman);
}

#[test]
fn a_container_run_trains_on_a_base_model_linked_into_its_run_directory_docker() {
    a_container_run_trains_on_a_base_model_linked_into_its_run_directory(TestEngine::Docker);
}

fn a_container_run_trains_on_a_base_model_linked_into_its_run_directory(engine: TestEngine) {
    let training = container_training(
        engine,
        Setup {
            max_steps: 2,
            merge: false,
            base_model: Some("models/tiny"),
            ..Setup::default()
        },
        "hf_Lb7Qz2Wm",
    );
    crate::upload_train::upload_tiny_model(&training);
    let output = training.cmd().arg("train").output().unwrap();
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    let id = &training.run_ids()[0];
    let run = training.runs().join(id);
    let yaml = std::fs::read_to_string(run.join("axolotl.yaml")).unwrap();
    assert!(yaml.contains("base_model: \"./base_model\""), "{yaml}");
    assert_file(&run.join("base_model/model.safetensors"));
    assert_file(&run.join("output/adapter_model.safetensors"));
    assert_eq!(training.record(id)["state"], "succeeded");
}

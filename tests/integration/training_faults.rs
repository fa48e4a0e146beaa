//! Runs that meet faults, and the way back, through the real binary (issue 8): a
//! snapshot checkpoint that lacks what a resume needs is refused before anything starts
//! and never recorded `stopped`; a merge that fails after training ends the run
//! `merge_failed` with its adapter kept, and `train merge RUN_ID` redoes the merge
//! alone, with a stand-in Axolotl (local and over a real `sshd`) and with the real
//! Axolotl 0.19; metric lines with Python's bare `NaN` and `Infinity` are read and
//! flagged, not dropped.

use std::path::{Path, PathBuf};

use crate::sshd::Options;
use crate::training::{Setup, Training, assert_file, group_alive, training_env, wait_for};
use crate::util::output_text;

/// A stand-in venv in `dir` whose `bin/axolotl` plays Axolotl in the run directory and
/// appends each command's name to `dir/calls`:
///
/// - `train` writes a metric line, an adapter and, when `dir/snapshot` exists, a
///   snapshot checkpoint `checkpoint-1` without the files listed in `dir/omit`, as the
///   plugin does after `train stop`; with `dir/python-numbers`, its metric lines are
///   what Python's `json.dumps` writes for non-finite values (bare `Infinity`, `NaN`),
///   the first after a byte-order mark;
/// - `merge-lora` waits while `dir/hold-merge` exists, then fails after writing a
///   partial `output/merged/` while `dir/fail-merge` exists, else writes a merged model.
fn stand_in_venv(dir: &Path) -> PathBuf {
    let venv = dir.join("venv");
    let bin = venv.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!(
        r#"#!/bin/sh
printf '%s\n' "$1" >> '{d}/calls'
case "$1" in
  train)
    mkdir -p output
    if [ -e '{d}/python-numbers' ]; then
      printf '\357\273\277{{"kind":"train","ts":1,"step":1,"max_steps":2,"epoch":0.5,"loss":1.5,"learning_rate":0.001,"grad_norm":Infinity}}\n' >> metrics.jsonl
      printf '{{"kind": "train", "ts": 2, "step": 2, "max_steps": 2, "epoch": 1.0, "loss": NaN, "learning_rate": 0.001, "grad_norm": -Infinity}}\n' >> metrics.jsonl
    else
      printf '{{"kind":"train","ts":1,"step":1,"max_steps":2,"epoch":0.5,"loss":1.5,"learning_rate":0.001,"grad_norm":1.0}}\n' >> metrics.jsonl
    fi
    echo adapter > output/adapter_model.safetensors
    echo '{{}}' > output/adapter_config.json
    if [ -e '{d}/snapshot' ]; then
      mkdir -p output/checkpoint-1
      for f in adapter_model.safetensors adapter_config.json optimizer.pt scheduler.pt rng_state.pth trainer_state.json; do
        grep -qx "$f" '{d}/omit' 2>/dev/null && continue
        echo x > "output/checkpoint-1/$f"
      done
      grep -qx trainer_state.json '{d}/omit' 2>/dev/null || echo '{{"global_step": 1}}' > output/checkpoint-1/trainer_state.json
      printf '{{"kind":"snapshot","ts":2,"step":1,"checkpoint":"checkpoint-1"}}\n' >> metrics.jsonl
      printf '{{"checkpoint":"checkpoint-1","step":1}}\n' > snapshot.json
    else
      printf '{{"kind":"end","ts":2,"step":2}}\n' >> metrics.jsonl
    fi ;;
  merge-lora)
    mkdir -p output/merged
    while [ -e '{d}/hold-merge' ]; do sleep 0.05; done
    if [ -e '{d}/fail-merge' ]; then
      echo partial > output/merged/partial.safetensors
      echo 'Traceback (most recent call last):'
      echo '  File "lora_merge.py", line 9, in do_merge_lora'
      echo 'OSError: [Errno 28] No space left on device'
      exit 1
    fi
    echo merged > output/merged/model.safetensors ;;
esac
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

/// The commands the stand-in ran, in order.
fn calls(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("calls"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn message(training: &Training, id: &str) -> String {
    training.record(id)["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Trains on the `remote` target of `training` with the stand-in's merge failing;
/// checks the run ends `merge_failed` with its adapter, and returns its ID.
fn a_run_whose_merge_failed(training: &Training) -> String {
    let output = training
        .cmd()
        .args(["train", "--target", "remote"])
        .output()
        .unwrap();
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    let id = training.run_ids().remove(0);
    let record = training.record(&id);
    assert_eq!(record["state"], "merge_failed", "{record}");
    assert_eq!(record["retrieved"], true, "{record}");
    let message = message(training, &id);
    assert!(
        message.contains("training succeeded, then `axolotl merge-lora` exited with code 1"),
        "{message}"
    );
    assert!(
        message.contains(&format!(
            "`runs/{id}/job.log` lines 1-3: OSError: [Errno 28] No space left on device"
        )),
        "{message}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!(
            "redo the merge alone with: overbrainer train merge {id}"
        )),
        "{stdout}"
    );
    // The adapter is the usable result; the merge's partial output stayed behind.
    let run = training.runs().join(&id);
    assert_file(&run.join("output/adapter_model.safetensors"));
    assert!(
        !run.join("output/merged").exists(),
        "a partial merge came back"
    );
    let ls = training.cmd().args(["runs", "ls"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&ls.stdout).contains("merge_failed"),
        "{}",
        output_text(&ls)
    );
    id
}

#[test]
fn a_failed_merge_keeps_the_adapter_and_train_merge_redoes_only_the_merge() {
    let fake = tempfile::tempdir().unwrap();
    let venv = stand_in_venv(fake.path());
    std::fs::write(fake.path().join("fail-merge"), "").unwrap();
    let training = Training::new(&Setup {
        venv: Some(&venv),
        ssh: Some(Options::default()),
        ..Setup::default()
    });
    let id = a_run_whose_merge_failed(&training);
    let run = training.runs().join(&id);

    // A merge that fails again leaves the run as it was, pointing at its own log.
    let again = training
        .cmd()
        .args(["train", "merge", &id])
        .output()
        .unwrap();
    let text = output_text(&again);
    assert!(!again.status.success(), "{text}");
    assert_eq!(training.record(&id)["state"], "merge_failed");
    let message = self::message(&training, &id);
    assert!(
        message.contains("`train merge` failed: `axolotl merge-lora` exited with code 1"),
        "{message}"
    );
    assert!(
        message.contains(&format!("`runs/{id}/merge-1/job.log` lines 1-3: OSError")),
        "{message}"
    );
    assert_eq!(calls(fake.path()), ["train", "merge-lora", "merge-lora"]);

    // Once the cause is gone, the merge alone runs, in a directory of its own.
    std::fs::remove_file(fake.path().join("fail-merge")).unwrap();
    let merged = training
        .cmd()
        .args(["train", "merge", &id])
        .output()
        .unwrap();
    let text = output_text(&merged);
    assert!(merged.status.success(), "{text}");
    let stdout = String::from_utf8_lossy(&merged.stdout);
    assert!(
        stdout.contains(&format!("train: {id} succeeded")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("merged model in runs/{id}/output/merged")),
        "{stdout}"
    );
    assert!(text.contains("train: merging adapter"), "{text}");
    let record = training.record(&id);
    assert_eq!(record["state"], "succeeded", "{record}");
    assert!(record["merge_job"].is_null(), "{record}");
    assert_eq!(
        std::fs::read_to_string(run.join("output/merged/model.safetensors")).unwrap(),
        "merged\n"
    );
    assert!(!run.join("output/merged/partial.safetensors").exists());
    assert_file(&run.join("merge-2/job.log"));
    assert_eq!(
        calls(fake.path()),
        ["train", "merge-lora", "merge-lora", "merge-lora"],
        "training ran again"
    );
    // The training job's own files are as it left them.
    assert_eq!(
        std::fs::read_to_string(run.join("exit_code"))
            .unwrap()
            .trim(),
        "1"
    );

    let done = training
        .cmd()
        .args(["train", "merge", &id])
        .output()
        .unwrap();
    let text = output_text(&done);
    assert!(!done.status.success(), "{text}");
    assert!(text.contains("is already merged"), "{text}");
}

#[test]
fn an_interrupted_train_merge_leaves_the_merge_running_and_the_next_one_collects_it() {
    let fake = tempfile::tempdir().unwrap();
    let venv = stand_in_venv(fake.path());
    std::fs::write(fake.path().join("fail-merge"), "").unwrap();
    let training = Training::new(&Setup {
        venv: Some(&venv),
        ssh: Some(Options::default()),
        ..Setup::default()
    });
    let id = a_run_whose_merge_failed(&training);
    std::fs::remove_file(fake.path().join("fail-merge")).unwrap();
    let hold = fake.path().join("hold-merge");
    std::fs::write(&hold, "").unwrap();
    let merging = training.spawn(&["train", "merge", &id]);
    wait_for("the merge job in run.json", || {
        !training.record(&id)["merge_job"].is_null()
    });
    assert!(crate::util::signal(merging.id(), "INT"));
    let output = crate::util::wait_output(
        merging,
        std::time::Duration::from_secs(600),
        "the interrupted merge",
    );
    let text = output_text(&output);
    assert_eq!(output.status.code(), Some(130), "{text}");
    assert!(
        text.contains(&format!(
            "detached from the merge of run {id} (interrupted); the merge goes on"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("overbrainer train merge {id}")),
        "{text}"
    );
    let record = training.record(&id);
    assert_eq!(record["state"], "merge_failed", "{record}");
    let job_dir = record["merge_job"]["dir"].as_str().unwrap().to_owned();
    assert!(job_dir.ends_with("/merge-1"), "{job_dir}");

    // The merge goes on without a follower; the next `train merge` collects it.
    std::fs::remove_file(&hold).unwrap();
    let exit_code = Path::new(&job_dir).join("exit_code");
    wait_for("the merge's exit code", || exit_code.exists());
    let collect = training
        .cmd()
        .args(["train", "merge", &id])
        .output()
        .unwrap();
    let text = output_text(&collect);
    assert!(collect.status.success(), "{text}");
    assert_eq!(training.record(&id)["state"], "succeeded");
    assert_file(
        &training
            .runs()
            .join(&id)
            .join("output/merged/model.safetensors"),
    );
    assert_eq!(
        calls(fake.path()),
        ["train", "merge-lora", "merge-lora"],
        "a second merge started"
    );
}

/// A `merge_failed` run over SSH whose `train merge` job is held running, followed by
/// the returned `train merge` process; with the stand-in's `dir`, and the merge job's
/// process group.
fn a_held_train_merge(fake: &Path) -> (Training, String, std::process::Child, u32) {
    let venv = stand_in_venv(fake);
    std::fs::write(fake.join("fail-merge"), "").unwrap();
    let training = Training::new(&Setup {
        venv: Some(&venv),
        ssh: Some(Options::default()),
        ..Setup::default()
    });
    let id = a_run_whose_merge_failed(&training);
    std::fs::remove_file(fake.join("fail-merge")).unwrap();
    std::fs::write(fake.join("hold-merge"), "").unwrap();
    let merging = training.spawn(&["train", "merge", &id]);
    wait_for("the merge job in run.json", || {
        !training.record(&id)["merge_job"].is_null()
    });
    let pid = training.record(&id)["merge_job"]["pid"].as_u64().unwrap();
    let pid = u32::try_from(pid).unwrap();
    wait_for("the merge job's process group", || group_alive(pid));
    (training, id, merging, pid)
}

// Issue 9 (issue 8's leftover): `train cancel` of a run whose `train merge` job runs
// cancels that job; the run stays `merge_failed` and the next `train merge` starts anew.
#[test]
fn a_cancel_of_a_run_whose_train_merge_job_runs_cancels_that_job() {
    let fake = tempfile::tempdir().unwrap();
    let (training, id, merging, pid) = a_held_train_merge(fake.path());
    let status = std::process::Command::new("kill")
        .args(["-s", "INT", &merging.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = crate::util::wait_output(
        merging,
        std::time::Duration::from_secs(600),
        "the interrupted merge",
    );
    assert_eq!(output.status.code(), Some(130), "{}", output_text(&output));
    assert!(group_alive(pid), "the detach stopped the merge");

    let cancel = training
        .cmd()
        .args(["train", "cancel", &id])
        .output()
        .unwrap();
    let text = output_text(&cancel);
    assert!(cancel.status.success(), "{text}");
    assert!(
        text.contains(&format!("the merge of run {id} was cancelled")),
        "{text}"
    );
    assert!(!text.contains("had already ended"), "{text}");
    wait_for("the merge job's process group to end", || !group_alive(pid));
    let record = training.record(&id);
    assert_eq!(record["state"], "merge_failed", "{record}");
    let message = message(&training, &id);
    assert!(
        message.contains("the merge started with `train merge` was cancelled"),
        "{message}"
    );

    // The next `train merge` starts a new merge job and succeeds.
    std::fs::remove_file(fake.path().join("hold-merge")).unwrap();
    let merge = training
        .cmd()
        .args(["train", "merge", &id])
        .output()
        .unwrap();
    assert!(merge.status.success(), "{}", output_text(&merge));
    assert_eq!(training.record(&id)["state"], "succeeded");
    assert_eq!(
        calls(fake.path()),
        ["train", "merge-lora", "merge-lora", "merge-lora"]
    );
}

// LCK-9 for `train merge`: a cancel from another terminal while `train merge` follows
// cancels the merge job on the target, and `train merge` records the cancelled merge.
#[test]
fn a_cancel_while_train_merge_follows_cancels_the_merge_and_train_merge_records_it() {
    let fake = tempfile::tempdir().unwrap();
    let (training, id, merging, pid) = a_held_train_merge(fake.path());
    let cancel = training
        .cmd()
        .args(["train", "cancel", &id])
        .output()
        .unwrap();
    let text = output_text(&cancel);
    assert!(cancel.status.success(), "{text}");
    assert!(
        text.contains(&format!("the job of run {id} was cancelled on the target")),
        "{text}"
    );
    let output = crate::util::wait_output(
        merging,
        std::time::Duration::from_secs(600),
        "the interrupted merge",
    );
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    assert!(!group_alive(pid), "the merge job outlived the cancel");
    let record = training.record(&id);
    assert_eq!(record["state"], "merge_failed", "{record}");
    let message = message(&training, &id);
    assert!(message.contains("the merge was cancelled"), "{message}");
}

#[test]
fn a_merged_model_that_fails_verification_is_retried_by_the_next_train_merge() {
    // The manifest's hashing tools first on the target's PATH (`openssl dgst`, and
    // `sha256sum` where openssl is missing or for odd names), each of which, while
    // `corrupt-once` exists, changes a merge job's `job.log` right after hashing it, once:
    // that file then differs from the manifest when it is downloaded.
    let tools = tempfile::tempdir().unwrap();
    let marker = tools.path().join("corrupt-once");
    crate::util::hash_tools_corrupting_once(tools.path(), &marker, "*merge-*/job.log");
    let fake = tempfile::tempdir().unwrap();
    let venv = stand_in_venv(fake.path());
    std::fs::write(fake.path().join("fail-merge"), "").unwrap();
    let training = Training::new(&Setup {
        venv: Some(&venv),
        ssh: Some(Options {
            path_prefix: Some(tools.path().to_owned()),
            ..Options::default()
        }),
        ..Setup::default()
    });
    let id = a_run_whose_merge_failed(&training);
    std::fs::remove_file(fake.path().join("fail-merge")).unwrap();
    std::fs::write(&marker, "").unwrap();
    let output = training
        .cmd()
        .args(["train", "merge", &id])
        .output()
        .unwrap();
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    assert!(!marker.exists(), "the stand-in never ran: {text}");
    assert!(
        text.contains(&format!(
            "retrieval of the merged model of run `{id}` failed"
        )),
        "{text}"
    );
    assert!(
        text.contains("does not match the target's manifest"),
        "{text}"
    );
    assert!(
        text.contains(&format!("`overbrainer train merge {id}` retries")),
        "{text}"
    );
    let record = training.record(&id);
    assert_eq!(record["state"], "merge_failed", "{record}");
    assert!(
        record["message"]
            .as_str()
            .unwrap()
            .contains("pending retrieval"),
        "{record}"
    );
    let run = training.runs().join(&id);
    assert!(
        !run.join("output/merged").exists(),
        "an unverified model came back"
    );
    let again = training
        .cmd()
        .args(["train", "merge", &id])
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", output_text(&again));
    assert_eq!(training.record(&id)["state"], "succeeded");
    assert_file(&run.join("output/merged/model.safetensors"));
    assert_eq!(
        calls(fake.path()),
        ["train", "merge-lora", "merge-lora"],
        "the merge ran again instead of being collected"
    );
}

/// A stand-in `docker` in `dir` that records its arguments in `dir/engine-args` and
/// plays Axolotl in the mounted run directory; its `merge-lora` fails while
/// `dir/fail-merge` exists.
fn stand_in_docker(dir: &Path) {
    let script = format!(
        r#"#!/bin/sh
printf '%s\n' "$*" >> '{d}/engine-args'
[ "$1" = run ] || exit 0
run_dir=""
prev=""
for a in "$@"; do
  case "$prev" in -v) case "$a" in *:/workspace/run) run_dir="${{a%:/workspace/run}}";; esac;; esac
  prev="$a"
done
cd "$run_dir" || exit 9
case "$*" in
  *" train axolotl.yaml"*)
    mkdir -p output
    printf '{{"kind":"train","ts":1,"step":1,"max_steps":1,"epoch":1.0,"loss":1.5,"learning_rate":0.001,"grad_norm":1.0}}\n{{"kind":"end","ts":2,"step":1}}\n' >> metrics.jsonl
    echo adapter > output/adapter_model.safetensors
    echo '{{}}' > output/adapter_config.json ;;
  *merge-lora*)
    [ -e '{d}/fail-merge' ] && {{ echo 'RuntimeError: CUDA out of memory'; exit 1; }}
    mkdir -p output/merged && echo merged > output/merged/model.safetensors ;;
esac
exit 0
"#,
        d = dir.display()
    );
    let path = dir.join("docker");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

#[test]
fn train_merge_runs_the_merge_in_the_run_container_of_the_docker_runtime() {
    let tools = tempfile::tempdir().unwrap();
    stand_in_docker(tools.path());
    std::fs::write(tools.path().join("fail-merge"), "").unwrap();
    let training = Training::new(&Setup {
        runtime: "docker",
        ..Setup::default()
    });
    let path = format!(
        "{}:{}",
        tools.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = training
        .cmd()
        .env("PATH", &path)
        .arg("train")
        .output()
        .unwrap();
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    let id = training.run_ids().remove(0);
    assert_eq!(training.record(&id)["state"], "merge_failed", "{text}");
    std::fs::remove_file(tools.path().join("fail-merge")).unwrap();
    let merged = training
        .cmd()
        .env("PATH", &path)
        .args(["train", "merge", &id])
        .output()
        .unwrap();
    let text = output_text(&merged);
    assert!(merged.status.success(), "{text}");
    assert_eq!(training.record(&id)["state"], "succeeded");
    assert_file(
        &training
            .runs()
            .join(&id)
            .join("output/merged/model.safetensors"),
    );
    let args = std::fs::read_to_string(tools.path().join("engine-args")).unwrap();
    let merge_calls: Vec<&str> = args.lines().filter(|l| l.contains("merge-lora")).collect();
    assert_eq!(merge_calls.len(), 2, "{args}");
    let run_dir = std::fs::canonicalize(training.runs().join(&id)).unwrap();
    for part in [
        format!("--name overbrainer-{id}"),
        format!("-v {}:/workspace/run", run_dir.display()),
        "-w /workspace/run".to_owned(),
        "-e PYTHONPATH=/workspace/run".to_owned(),
        "axolotl merge-lora axolotl.yaml".to_owned(),
    ] {
        assert!(
            merge_calls[1].contains(&part),
            "{part} not in {}",
            merge_calls[1]
        );
    }
    assert_eq!(
        args.lines()
            .filter(|l| l.contains(" train axolotl.yaml"))
            .count(),
        1
    );
}

#[test]
fn train_merge_refuses_a_run_whose_merge_did_not_fail() {
    let fake = tempfile::tempdir().unwrap();
    let venv = stand_in_venv(fake.path());
    let training = Training::new(&Setup {
        merge: false,
        venv: Some(&venv),
        ..Setup::default()
    });
    let output = training.cmd().arg("train").output().unwrap();
    assert!(output.status.success(), "{}", output_text(&output));
    let id = training.run_ids().remove(0);
    let before = std::fs::read(training.runs().join(&id).join("run.json")).unwrap();
    for (args, expected) in [
        (
            vec!["train", "merge", id.as_str()],
            "succeeded without a merge",
        ),
        (vec!["train", "merge", "nope_1"], "no run `nope_1`"),
        (vec!["train", "merge", "../x"], "`../x` is not a run ID"),
    ] {
        let output = training.cmd().args(&args).output().unwrap();
        let text = output_text(&output);
        assert!(!output.status.success(), "{args:?}: {text}");
        assert!(text.contains(expected), "{args:?}: {text}");
    }
    assert_eq!(
        std::fs::read(training.runs().join(&id).join("run.json")).unwrap(),
        before
    );
    assert_eq!(calls(fake.path()), ["train"]);
}

#[test]
fn a_stop_at_an_incomplete_checkpoint_is_recorded_failed_and_never_resumed() {
    let fake = tempfile::tempdir().unwrap();
    let venv = stand_in_venv(fake.path());
    std::fs::write(fake.path().join("snapshot"), "").unwrap();
    std::fs::write(fake.path().join("omit"), "optimizer.pt\nrng_state.pth\n").unwrap();
    let training = Training::new(&Setup {
        venv: Some(&venv),
        ssh: Some(Options::default()),
        ..Setup::default()
    });
    let output = training
        .cmd()
        .args(["train", "--target", "remote"])
        .output()
        .unwrap();
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    let id = training.run_ids().remove(0);
    let record = training.record(&id);
    assert_eq!(record["state"], "failed", "{record}");
    assert!(record["snapshot"].is_null(), "{record}");
    assert_eq!(record["last_step"], 1, "{record}");
    let message = message(&training, &id);
    assert!(
        message.contains(
            "stopped at step 1, but its snapshot checkpoint `checkpoint-1` cannot be resumed: it lacks `optimizer.pt`"
        ),
        "{message}"
    );
    assert!(message.contains("`rng_state.pth`"), "{message}");
    assert!(
        message.contains(&format!(
            "`runs/{id}/output` holds a partial model at step 1"
        )),
        "{message}"
    );
    assert!(text.contains(&message), "{text}");
    assert!(!text.contains("--resume-from"), "{text}");
    let resume = training
        .cmd()
        .args(["train", "--resume-from", &id])
        .output()
        .unwrap();
    let text = output_text(&resume);
    assert!(!resume.status.success(), "{text}");
    assert!(text.contains("is failed, not stopped"), "{text}");
    assert_eq!(training.run_ids().len(), 1);
}

#[test]
fn a_resume_from_a_checkpoint_that_lost_its_trainer_state_is_refused_before_anything_starts() {
    let fake = tempfile::tempdir().unwrap();
    let venv = stand_in_venv(fake.path());
    std::fs::write(fake.path().join("snapshot"), "").unwrap();
    let training = Training::new(&Setup {
        venv: Some(&venv),
        ..Setup::default()
    });
    let output = training.cmd().arg("train").output().unwrap();
    let text = output_text(&output);
    let id = training.run_ids().remove(0);
    assert_eq!(training.record(&id)["state"], "stopped", "{text}");
    assert!(
        text.contains(&format!(
            "resume with: overbrainer train --resume-from {id}"
        )),
        "{text}"
    );
    let checkpoint = training.runs().join(&id).join("output/checkpoint-1");
    for (file, named) in [
        (
            "trainer_state.json",
            "`trainer_state.json` (the trainer's state)",
        ),
        ("scheduler.pt", "`scheduler.pt`"),
    ] {
        let kept = std::fs::read(checkpoint.join(file)).unwrap();
        std::fs::remove_file(checkpoint.join(file)).unwrap();
        let resume = training
            .cmd()
            .args(["train", "--resume-from", &id])
            .output()
            .unwrap();
        let text = output_text(&resume);
        assert!(!resume.status.success(), "{text}");
        assert!(
            text.contains(&format!(
                "run `{id}` cannot be resumed: its checkpoint `runs/{id}/output/checkpoint-1` lacks {named}"
            )),
            "{text}"
        );
        assert_eq!(training.run_ids().len(), 1, "a run was created");
        std::fs::write(checkpoint.join(file), kept).unwrap();
    }
    assert_eq!(calls(fake.path()), ["train"], "something started");
}

/// A venv whose `bin/axolotl` runs the real Axolotl, except `merge-lora` while
/// `fail` exists: that fails as a full disk would.
fn real_venv_with_a_failing_merge(dir: &Path, fail: &Path) -> PathBuf {
    let real = &training_env().venv;
    let venv = dir.join("venv");
    let bin = venv.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!(
        r#"#!/bin/sh
if [ "$1" = merge-lora ] && [ -e '{fail}' ]; then
  echo 'OSError: [Errno 28] No space left on device' >&2
  exit 1
fi
PATH='{real}/bin':"$PATH"; export PATH
exec '{real}/bin/axolotl' "$@"
"#,
        fail = fail.display(),
        real = real.display()
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

#[test]
fn a_merge_redone_with_real_axolotl_gives_the_merged_model_without_training_again() {
    let dir = tempfile::tempdir().unwrap();
    let fail = dir.path().join("fail-merge");
    std::fs::write(&fail, "").unwrap();
    let venv = real_venv_with_a_failing_merge(dir.path(), &fail);
    let training = Training::new(&Setup {
        max_steps: 2,
        venv: Some(&venv),
        ..Setup::default()
    });
    let output = training.cmd().arg("train").output().unwrap();
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    let id = training.run_ids().remove(0);
    assert_eq!(training.record(&id)["state"], "merge_failed", "{text}");
    let run = training.runs().join(&id);
    assert_file(&run.join("output/adapter_model.safetensors"));
    let metrics = std::fs::read(run.join("metrics.jsonl")).unwrap();

    std::fs::remove_file(&fail).unwrap();
    let merged = training
        .cmd()
        .args(["train", "merge", &id])
        .output()
        .unwrap();
    let text = output_text(&merged);
    assert!(merged.status.success(), "{text}");
    let record = training.record(&id);
    assert_eq!(record["state"], "succeeded", "{record}");
    assert_file(&run.join("output/merged/model.safetensors"));
    assert_file(&run.join("output/merged/config.json"));
    assert_eq!(
        std::fs::read(run.join("metrics.jsonl")).unwrap(),
        metrics,
        "training ran again"
    );
    let log = std::fs::read_to_string(run.join("merge-1/job.log")).unwrap();
    assert!(log.contains("lora_merge"), "{log}");
}

#[test]
fn python_style_non_finite_metrics_are_read_and_flagged_not_dropped() {
    let fake = tempfile::tempdir().unwrap();
    let venv = stand_in_venv(fake.path());
    std::fs::write(fake.path().join("python-numbers"), "").unwrap();
    let training = Training::new(&Setup {
        merge: false,
        venv: Some(&venv),
        ..Setup::default()
    });
    let output = training.cmd().arg("train").output().unwrap();
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains(
            "metrics.jsonl line 2: bare `Infinity` (not JSON) read as a non-finite value"
        ),
        "{text}"
    );
    assert!(
        text.contains("metrics.jsonl line 3: bare `NaN`, `-Infinity` (not JSON)"),
        "{text}"
    );
    assert!(!text.contains("skipped"), "{text}");
    let id = training.run_ids().remove(0);
    let record = training.record(&id);
    // Both lines counted (the first after a byte-order mark): the last step and epoch
    // come from the line with `NaN`, whose loss is not finite and so not recorded.
    assert_eq!(record["last_step"], 2, "{record}");
    assert_eq!(record["epoch"], 1.0, "{record}");
    assert!(record["last_loss"].is_null(), "{record}");
}

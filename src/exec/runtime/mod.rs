//! How a job's commands run on its target: directly (`native`, from a virtual
//! environment or `PATH`) or inside a container (`docker` runtime, with Docker or
//! Podman) (spec/training.md: TGT-3..TGT-5).
//!
//! The executor layer gets a job's script and its environment from the layer above
//! (`train::job` decides a training job's stages and their commands); this file only
//! knows how to run one command line in the runtime: the environment and search path
//! of a native job, and for a container the engine's command line with its GPU flags,
//! mounts and secrets on standard input. [`JobSpec::job`] puts [`JobSpec::prelude`]
//! before the script and hands back the [`JobCommand`] for [`super::Executor::spawn`].

use std::fmt::Write as _;

use super::{CONTAINER_ID_FILE, Container, JobCommand};
use crate::config::Engine;
use crate::shell::quote;
use secrecy::SecretString;

/// Directory where a container job sees its run directory (TGT-4).
pub const CONTAINER_RUN_DIR: &str = "/workspace/run";
/// Directory where a container job sees the target's Hugging Face cache (TGT-4,
/// TGT-5).
pub const CONTAINER_HF_HOME: &str = "/workspace/hf-cache";
/// Directory where a container job sees the target's llama.cpp cache (EXP-9).
pub const CONTAINER_TOOLS_CACHE: &str = "/workspace/cache";

/// Where a job's programs come from on the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobRuntime {
    /// Programs installed on the host (TGT-3).
    Native {
        /// Directory holding the programs under `bin/` on the target (a virtual
        /// environment), as a target path (see [`shell_path`]); `None` runs them from
        /// `PATH`.
        venv: Option<String>,
    },
    /// Programs inside a container of `image` (TGT-4).
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

/// One job on a target: what [`stage_command`] and [`JobSpec::job`] need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSpec {
    /// Run ID, which names the container `overbrainer-<run-id>`.
    pub run_id: String,
    /// Appended to the container's name as `overbrainer-<run-id>-<suffix>` (the run
    /// record's `container_suffix`), so that equal run IDs of two projects on one
    /// machine do not collide; `None` names it `overbrainer-<run-id>`.
    pub container_suffix: Option<String>,
    /// Run directory on the target, absolute. A training job's working directory; in
    /// both runtimes it is on the job's `PYTHONPATH`, so its programs import modules
    /// from it.
    pub run_dir: String,
    /// The target's shared Hugging Face cache, absolute: `runs/.hf-cache` locally,
    /// `<workdir>/.hf-cache` over SSH (TGT-5). `HF_HOME` points there.
    pub hf_home: String,
    /// How the programs run.
    pub runtime: JobRuntime,
    /// Names of the job's secret variables (for example `HF_TOKEN`) that must reach
    /// the programs. A container gets them on its standard input, one line each, read
    /// into its main process's environment by `sh` in the image (see
    /// [`stage_command`]): never on a command line, and never in the engine's own
    /// records of the container (`-e NAME` would put the value there, and Docker's
    /// containerd keeps it in its metadata database even after the container is
    /// removed).
    pub secret_names: Vec<String>,
    /// The job's fixed environment, names and plain values (never secrets), given to
    /// every command: exported by a native job's [`JobSpec::prelude`], passed with
    /// `-e NAME=VALUE` to a container. The layer above decides it (a training job's:
    /// `train::job::JOB_ENV`).
    pub env: Vec<(String, String)>,
}

impl JobSpec {
    /// Name of the job's container, `overbrainer-<run-id>[-<suffix>]`.
    #[must_use]
    pub fn container_name(&self) -> String {
        match &self.container_suffix {
            Some(suffix) => format!("overbrainer-{}-{suffix}", self.run_id),
            None => format!("overbrainer-{}", self.run_id),
        }
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

    /// What every script of this job starts with, wherever it runs (it depends on no
    /// working directory):
    ///
    /// - Native: the venv's `bin` first on `PATH` (a program started by another, such
    ///   as `accelerate`, is found there too), [`JobSpec::run_dir`] first on
    ///   `PYTHONPATH`, `HF_HOME` and [`JobSpec::env`], all exported.
    /// - Container: [`container_prelude`], then `mkdir -p` of the mounted caches
    ///   (Podman refuses a bind mount whose source is missing; Docker creates it).
    #[must_use]
    pub fn prelude(&self) -> String {
        let mut script = String::new();
        match &self.runtime {
            JobRuntime::Native { venv } => {
                if let Some(venv) = venv {
                    let _ = writeln!(
                        script,
                        "PATH={}/bin:\"$PATH\"; export PATH",
                        shell_path(venv.trim_end_matches('/'))
                    );
                }
                let _ = writeln!(
                    script,
                    "PYTHONPATH={}\"${{PYTHONPATH:+:$PYTHONPATH}}\"; export PYTHONPATH",
                    shell_path(&self.run_dir)
                );
                let _ = writeln!(
                    script,
                    "HF_HOME={}; export HF_HOME",
                    shell_path(&self.hf_home)
                );
                for (name, value) in &self.env {
                    let _ = writeln!(script, "{name}={}; export {name}", quote(value));
                }
            }
            JobRuntime::Container {
                engine,
                tools_cache,
                ..
            } => {
                script.push_str(&container_prelude(*engine));
                script.push_str("mkdir -p ");
                script.push_str(&shell_path(&self.hf_home));
                if let Some(cache) = tools_cache {
                    script.push(' ');
                    script.push_str(&shell_path(cache));
                }
                script.push('\n');
            }
        }
        script
    }

    /// The [`JobCommand`] running `script` for this job in [`JobSpec::run_dir`] with
    /// `secrets`: [`JobSpec::prelude`], then `script`, rendered once here.
    #[must_use]
    pub fn job(&self, script: &str, secrets: Vec<(String, SecretString)>) -> JobCommand {
        let mut text = self.prelude();
        text.push_str(script);
        JobCommand {
            dir: self.run_dir.clone(),
            script: text,
            secrets,
            container: self.container(),
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

/// The shell command that runs `program <args>` for `spec`, in the run directory,
/// after [`JobSpec::prelude`] (which [`JobSpec::job`] puts first).
///
/// - Native: `<venv>/bin/<program> <args>` (or `<program>` from `PATH`); the
///   prelude set its environment.
/// - Container: `<engine> run --rm --name overbrainer-<run-id> --cidfile
///   <job dir>/job.container` ([`CONTAINER_ID_FILE`], removed first: the engine
///   refuses an existing one; the cancel stops only the container of that ID) with
///   the GPUs that
///   [`container_prelude`] detected (`--gpus all` for Docker, `--device
///   nvidia.com/gpu=all` for Podman, nothing where the target has no NVIDIA device),
///   `--stop-signal SIGINT` (the program is the container's PID 1, where Python
///   ignores `SIGTERM` but turns `SIGINT` into `KeyboardInterrupt`: `<engine> stop`
///   then ends it at once instead of waiting out its timeout and killing it),
///   `--ipc host`, the run directory at [`CONTAINER_RUN_DIR`] as working directory,
///   the Hugging Face cache at [`CONTAINER_HF_HOME`] with `HF_HOME` pointing there, the
///   tools cache when set, `PYTHONPATH` set to [`CONTAINER_RUN_DIR`] (as the native
///   prelude puts the run directory there), [`JobSpec::env`], then the image and
///   `<program> <args>`. With secret names, the values are piped into `<engine> run
///   -i` (`printf`, a shell builtin, so they reach no command line) and the image's
///   `sh` runs `IFS= read -r NAME && export NAME` for each before it `exec`s
///   `<program> <args>`: the image needs `/bin/sh`, and a value must be one line (the
///   executor refuses others). When the engine itself fails (exit 125..127) after
///   GPUs were requested, a line in the job's log says what the engine needs for
///   them.
///
/// The program and its arguments are quoted; a path argument relative to the run
/// directory works in both runtimes.
#[must_use]
pub fn stage_command(spec: &JobSpec, program: &str, args: &[&str]) -> String {
    let args = args.iter().fold(String::new(), |mut words, arg| {
        words.push(' ');
        words.push_str(&quote(arg));
        words
    });
    match &spec.runtime {
        JobRuntime::Native { venv } => {
            let program = venv.as_ref().map_or_else(
                || quote(program),
                |venv| {
                    format!(
                        "{}/bin/{}",
                        shell_path(venv.trim_end_matches('/')),
                        quote(program)
                    )
                },
            );
            format!("{program}{args}")
        }
        JobRuntime::Container {
            engine,
            image,
            tools_cache,
        } => {
            let mut command = format!(
                "{} run --rm --name {} --cidfile \"$ob_cid\" --stop-signal SIGINT ${{ob_gpu_flag:+\"$ob_gpu_flag\" \"$ob_gpu_value\"}} --ipc host -v {}:{CONTAINER_RUN_DIR} -w {CONTAINER_RUN_DIR} -v {}:{CONTAINER_HF_HOME} -e HF_HOME={CONTAINER_HF_HOME}",
                engine.program(),
                quote(&spec.container_name()),
                shell_path(&spec.run_dir),
                shell_path(&spec.hf_home),
            );
            if let Some(cache) = tools_cache {
                let _ = write!(command, " -v {}:{CONTAINER_TOOLS_CACHE}", shell_path(cache));
            }
            let _ = write!(command, " -e PYTHONPATH={CONTAINER_RUN_DIR}");
            for (name, value) in &spec.env {
                let _ = write!(command, " -e {name}={}", quote(value));
            }
            if spec.secret_names.is_empty() {
                return format!(
                    "rm -f -- \"$ob_cid\"; {command} {} {}{args} || ob_engine_failed $?",
                    quote(image),
                    quote(program)
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
            let inner = format!("{} && exec \"$@\"", reads.join(" && "));
            format!(
                "rm -f -- \"$ob_cid\"; printf '%s\\n' {} | {command} -i {} sh -c {} sh {}{args} || ob_engine_failed $?",
                values.join(" "),
                quote(image),
                quote(&inner),
                quote(program)
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
/// - `ob_cid`: the job directory's [`CONTAINER_ID_FILE`], absolute (the prelude runs
///   where the wrapper started the job, before a script changes directory).
/// - `ob_gpu_flag` and `ob_gpu_value`: the GPU flags of `engine` when the target
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
        r#"ob_cid="$PWD"/{id_file}
ob_gpu_flag=
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
        id_file = CONTAINER_ID_FILE,
    )
}

#[cfg(test)]
mod tests;

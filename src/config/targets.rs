//! `[targets.<name>]`: where jobs run (this machine, an SSH host, a Runpod pod) and how
//! (natively or in a container), with the defaults and the rules (spec/config.md,
//! table 2.7; CFG-8, CFG-9). A Runpod target's own keys are in `runpod.rs`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::provenance::Provenance;
use super::rules::{Check, valid_name};
use super::runpod::RunpodTarget;
use super::slurm::SlurmTarget;
use super::ssh_client::SshClient;

use super::runtime::default_image;
pub use super::runtime::{DEFAULT_IMAGE, Engine, Runtime};

/// `[targets.<name>]`, by `kind`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Target {
    /// This machine.
    Local(LocalTarget),
    /// A host reached over SSH.
    Ssh(SshTarget),
    /// A fresh Runpod pod per job.
    Runpod(RunpodTarget),
    /// A Slurm cluster, through its login node (issue 19).
    Slurm(SlurmTarget),
}

/// `kind = "local"`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LocalTarget {
    /// How the job runs.
    #[serde(default)]
    pub runtime: Runtime,
    /// Native runtime: directory holding `bin/axolotl`; unset uses `PATH`.
    #[serde(default)]
    pub venv: Option<String>,
    /// Docker runtime: container engine.
    #[serde(default)]
    pub engine: Engine,
    /// Docker runtime: image reference.
    #[serde(default = "default_image")]
    pub image: String,
    /// A prebuilt llama.cpp tree for export (issue 14): `convert_hf_to_gguf.py` and
    /// `gguf-py/` at its top, `build/bin/llama-quantize` and `build/bin/llama-server`,
    /// checked to be build b11434, of whichever flavour (CPU or CUDA) it was built; unset
    /// builds the pinned one in the target's cache, for CUDA when the target has an NVIDIA
    /// GPU and `nvcc`, else for the CPU (`scripts/llama-env.sh`).
    #[serde(default)]
    pub llama_cpp_dir: Option<String>,
    /// GPUs the train stage uses on this machine, one process each (issue 19): above
    /// 1, Axolotl is launched through accelerate with that many processes; at least 1.
    #[serde(default = "default_gpu_count")]
    pub gpu_count: u32,
}

/// `kind = "ssh"`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SshTarget {
    /// How the job runs.
    #[serde(default)]
    pub runtime: Runtime,
    /// Native runtime: directory holding `bin/axolotl` on the host; unset uses `PATH`.
    #[serde(default)]
    pub venv: Option<String>,
    /// Docker runtime: container engine.
    #[serde(default)]
    pub engine: Engine,
    /// Docker runtime: image reference.
    #[serde(default = "default_image")]
    pub image: String,
    /// A prebuilt llama.cpp tree for export, as for a local target.
    #[serde(default)]
    pub llama_cpp_dir: Option<String>,
    /// Remote directory of the run directories, relative to the remote home.
    #[serde(default = "default_workdir")]
    pub workdir: String,
    /// SSH client.
    #[serde(default)]
    pub ssh_client: SshClient,
    /// `user@host` or a `~/.ssh/config` alias; env only
    /// (`OVERBRAINER_TARGETS__<NAME>__HOST`).
    #[serde(default)]
    pub host: Option<String>,
    /// GPUs the train stage uses on the host, one process each, as for a local target.
    #[serde(default = "default_gpu_count")]
    pub gpu_count: u32,
}

impl Default for LocalTarget {
    fn default() -> Self {
        Self {
            runtime: Runtime::default(),
            venv: None,
            engine: Engine::default(),
            image: default_image(),
            llama_cpp_dir: None,
            gpu_count: default_gpu_count(),
        }
    }
}

fn default_gpu_count() -> u32 {
    1
}

fn default_workdir() -> String {
    "overbrainer".to_owned()
}

impl Target {
    /// The runtime of a local, SSH or Slurm target; `None` for a Runpod target.
    #[must_use]
    pub fn runtime(&self) -> Option<Runtime> {
        match self {
            Self::Local(t) => Some(t.runtime),
            Self::Ssh(t) => Some(t.runtime),
            Self::Slurm(t) => Some(t.runtime),
            Self::Runpod(_) => None,
        }
    }
}

/// The rules of `[targets]`.
pub(super) fn check(check: &mut Check<'_>, targets: &BTreeMap<String, Target>) {
    for (name, target) in targets {
        let key = |k: &str| format!("targets.{name}.{k}");
        if !valid_name(name) {
            check.fail(
                format!("targets.{name}"),
                "invalid name: use only `a-z`, `0-9` and `_`",
            );
        }
        match target {
            Target::Local(local) => {
                if let Some(venv) = &local.venv {
                    check.safe(&key("venv"), venv);
                }
                if let Some(dir) = &local.llama_cpp_dir {
                    check.safe(&key("llama_cpp_dir"), dir);
                }
                check.safe(&key("image"), &local.image);
                check.at_least(&key("gpu_count"), local.gpu_count.into(), 1);
            }
            Target::Ssh(ssh) => {
                if let Some(venv) = &ssh.venv {
                    check.safe(&key("venv"), venv);
                }
                if let Some(dir) = &ssh.llama_cpp_dir {
                    check.safe(&key("llama_cpp_dir"), dir);
                }
                check.safe(&key("image"), &ssh.image);
                check.safe(&key("workdir"), &ssh.workdir);
                check.at_least(&key("gpu_count"), ssh.gpu_count.into(), 1);
                if let Some(host) = &ssh.host {
                    check.non_empty(&key("host"), host);
                    if host.starts_with('-') || host.chars().any(char::is_whitespace) {
                        check.fail(
                            key("host"),
                            "invalid value: expected `user@host` or an alias",
                        );
                    }
                }
            }
            Target::Runpod(runpod) => super::runpod::check(check, name, runpod),
            Target::Slurm(slurm) => super::slurm::check(check, name, slurm),
        }
    }
}

/// Notes for keys ignored under a target's runtime (CHK-5, CFG-8).
pub(super) fn warnings(
    targets: &BTreeMap<String, Target>,
    provenance: &Provenance,
    warnings: &mut Vec<String>,
) {
    for (name, target) in targets {
        let Some(runtime) = target.runtime() else {
            continue;
        };
        for key in runtime.ignored_keys() {
            let full = format!("targets.{name}.{key}");
            if provenance.is_set(&full) {
                warnings.push(format!(
                    "`{full}` is ignored with `runtime = \"{}\"`",
                    runtime.name()
                ));
            }
        }
    }
}

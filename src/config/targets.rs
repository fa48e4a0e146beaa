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

/// How a job runs on a local or SSH target.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Runtime {
    /// `<venv>/bin/axolotl`, or `axolotl` on `PATH`, directly on the host.
    #[default]
    Native,
    /// Inside a container of the target's `image`.
    Docker,
}

impl Runtime {
    /// The target keys this runtime does not use (CFG-8).
    #[must_use]
    pub fn ignored_keys(self) -> &'static [&'static str] {
        match self {
            Self::Native => &["engine", "image"],
            Self::Docker => &["venv"],
        }
    }

    /// The runtime's name in `overbrainer.toml`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Docker => "docker",
        }
    }
}

/// Container engine of the docker runtime.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// Docker (`--gpus all`).
    #[default]
    Docker,
    /// Podman (`--device nvidia.com/gpu=all`, needs a CDI spec).
    Podman,
}

impl Engine {
    /// The engine's program name.
    #[must_use]
    pub fn program(self) -> &'static str {
        match self {
            Self::Docker => "docker",
            Self::Podman => "podman",
        }
    }
}

/// Default container image of local and SSH targets (spec/config.md, table 2.7), fully
/// qualified with `docker.io/`: Podman refuses a short name unless the machine lists
/// unqualified-search registries, and Docker reads both the same.
pub const DEFAULT_IMAGE: &str = "docker.io/axolotlai/axolotl:0.19.0-py3.12-cu130-2.12.1@sha256:9de7c7a5b8830480a7d2eb3b6d49759586615f5f8eb1126d5df29f8bd9fa324b";

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
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
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
    /// checked to be build b11434; unset builds the pinned one in the target's cache.
    #[serde(default)]
    pub llama_cpp_dir: Option<String>,
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
}

pub(super) fn default_image() -> String {
    DEFAULT_IMAGE.to_owned()
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

//! How a target's jobs run (natively or in a container) and with which engine and
//! default image: shared by the local and SSH targets (`targets.rs`) and the Slurm
//! target (`slurm.rs`).

use serde::{Deserialize, Serialize};

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

pub(super) fn default_image() -> String {
    DEFAULT_IMAGE.to_owned()
}

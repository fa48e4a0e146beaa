//! `ssh_client`: which SSH client `ssh` and `runpod` targets use; set per target, or for
//! every target by the env-only `OVERBRAINER_SSH_CLIENT` (CHK-4).

use serde::{Deserialize, Serialize};

/// SSH client used for `ssh` and `runpod` targets.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SshClient {
    /// The system `ssh` with a ControlMaster connection.
    #[default]
    Openssh,
    /// The client built into overbrainer.
    Builtin,
}

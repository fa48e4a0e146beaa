//! A fresh SSH key pair made by this machine's `ssh-keygen` (a Runpod run's client key
//! and pod host key, POD-26). Only `exec/` spawns processes, so the call lives here. The
//! key has no passphrase; nothing secret goes on the command line.

use std::path::Path;

use super::ExecError;

/// The program that makes the keys.
pub const KEYGEN: &str = "ssh-keygen";

/// Writes a new ed25519 key pair at `path` (private, mode 600 as `ssh-keygen` creates
/// it) and `path.pub` with `comment`.
///
/// # Errors
/// [`ExecError::Spawn`] when `ssh-keygen` cannot run (install `openssh-client`),
/// [`ExecError::Command`] (action `keygen`) with its error output when it fails.
#[allow(
    clippy::disallowed_methods,
    reason = "exec/ is where processes are spawned"
)]
pub async fn ed25519_keygen(path: &Path, comment: &str) -> Result<(), ExecError> {
    let output = tokio::process::Command::new(KEYGEN)
        .args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
        .arg(path)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|source| ExecError::Spawn {
            program: format!("{KEYGEN} (install openssh-client)"),
            source,
        })?;
    if output.status.success() {
        return Ok(());
    }
    let message = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    Err(ExecError::Command {
        action: "keygen",
        message: if message.is_empty() {
            output.status.to_string()
        } else {
            message
        },
    })
}

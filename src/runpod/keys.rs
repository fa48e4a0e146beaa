//! A run's SSH access to its pods (POD-26): its own client key pair and its own pod host
//! key pair, made on this machine, under `runs/<run-id>/ssh/` (mode 700):
//! `id_ed25519` (mode 600, through [`secrets::private`](crate::secrets::private)) and `id_ed25519.pub`; the host
//! key's public half as the only entry of `known_hosts`, under the run's host-key alias
//! (so whatever address and port Runpod gives the pod, only that key is accepted); and
//! `config`, the `ssh -F` file that bypasses `~/.ssh/config` and the agent. The host
//! key's private half is kept on no disk of ours: it goes, base64 on one line as the
//! pod's bootstrap reads it, into the run's account secret (POD-26, POD-31). Creating
//! that secret is also the check that the key can manage secrets (POD-21), made before
//! any pod exists.

use std::path::{Path, PathBuf};

use secrecy::{ExposeSecret, SecretString};

use super::api::{ApiError, RunpodClient, Secret, host_key_secret};
use crate::exec::{ExecError, ed25519_keygen};
use crate::secrets::private::{self, PrivateError};

/// The run's SSH directory in its run directory.
pub const SSH_DIR: &str = "ssh";
/// The client's private key in [`SSH_DIR`].
pub const CLIENT_KEY: &str = "id_ed25519";
/// The pinned host key in [`SSH_DIR`].
pub const KNOWN_HOSTS: &str = "known_hosts";
/// The `ssh -F` file in [`SSH_DIR`].
pub const CONFIG: &str = "config";

/// Why a run's SSH access could not be made.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// A private file or directory could not be made.
    #[error(transparent)]
    Private(#[from] PrivateError),
    /// `ssh-keygen` failed.
    #[error("cannot make the run's SSH keys")]
    Keygen(#[source] ExecError),
    /// A public file could not be read or written.
    #[error("cannot access `{}`", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The run already has keys: they are never replaced (a pod may hold them).
    #[error("`{}` already holds SSH keys of this run; nothing was replaced", .0.display())]
    Exists(PathBuf),
    /// A path an `ssh` configuration file cannot hold.
    #[error("`{}` cannot be named in an ssh configuration file (a `\"` or a line break)", .0.display())]
    Path(PathBuf),
    /// POD-21: the key may not manage account secrets.
    #[error(
        "the Runpod key (OVERBRAINER_RUNPOD__API_KEY) cannot manage account secrets (HTTP {status}): give it read and write access to secrets in the Runpod console; no pod was created"
    )]
    NoSecretsAccess {
        /// HTTP status.
        status: u16,
    },
    /// The secret could not be created for another reason.
    #[error("cannot create the run's host-key secret")]
    Secret(#[source] ApiError),
}

/// A run's SSH access, made by [`create`].
#[derive(Debug)]
pub struct RunKeys {
    /// `runs/<run-id>/ssh`.
    pub dir: PathBuf,
    /// The `ssh -F` file.
    pub config: PathBuf,
    /// The client's public key line (the pod's `authorized_keys`).
    pub client_public: String,
    /// The host's public key line.
    pub host_public: String,
    /// The host's private key, base64 on one line: only for the account secret.
    pub host_secret: SecretString,
}

/// The name under which `known_hosts` pins the run's host key.
#[must_use]
pub fn host_alias(run_id: &str) -> String {
    format!("overbrainer-pod-{run_id}")
}

/// Makes the run's keys and `ssh -F` file under `run_dir/ssh` (see the module doc).
///
/// # Errors
/// [`KeyError::Exists`] when the run already has keys; another [`KeyError`] naming the
/// file or the tool. The temporary key files are removed in every case.
pub async fn create(run_dir: &Path, run_id: &str) -> Result<RunKeys, KeyError> {
    let dir = run_dir.join(SSH_DIR);
    let config = dir.join(CONFIG);
    for path in [&dir, &config] {
        if path.to_str().is_none_or(|p| p.contains(['"', '\n', '\r'])) {
            return Err(KeyError::Path(path.clone()));
        }
    }
    private::create_dir(&dir)?;
    if dir.join(CLIENT_KEY).symlink_metadata().is_ok() {
        return Err(KeyError::Exists(dir));
    }
    let scratch = dir.join(format!(".keygen-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    private::create_dir(&scratch)?;
    let made = make(&dir, &scratch, run_id).await;
    let _ = std::fs::remove_dir_all(&scratch);
    let (client_public, host_public, host_secret) = made?;
    let alias = host_alias(run_id);
    let mut pinned = host_public.split_whitespace().take(2).collect::<Vec<_>>();
    pinned.insert(0, &alias);
    write_public(&dir.join(KNOWN_HOSTS), &format!("{}\n", pinned.join(" ")))?;
    write_public(&config, &config_text(&dir, &alias))?;
    Ok(RunKeys {
        dir,
        config,
        client_public,
        host_public,
        host_secret,
    })
}

/// The two key pairs: the client's moved into `dir`, the host's read and forgotten.
async fn make(
    dir: &Path,
    scratch: &Path,
    run_id: &str,
) -> Result<(String, String, SecretString), KeyError> {
    let client = scratch.join("client");
    let host = scratch.join("host");
    ed25519_keygen(&client, &format!("overbrainer {run_id}"))
        .await
        .map_err(KeyError::Keygen)?;
    ed25519_keygen(&host, &format!("overbrainer pod {run_id}"))
        .await
        .map_err(KeyError::Keygen)?;
    let client_private = SecretString::from(read(&client)?);
    private::write_file(
        &dir.join(CLIENT_KEY),
        client_private.expose_secret().as_bytes(),
    )?;
    let client_public = read(&client.with_extension("pub"))?.trim().to_owned();
    write_public(
        &dir.join(format!("{CLIENT_KEY}.pub")),
        &format!("{client_public}\n"),
    )?;
    let host_private = SecretString::from(read(&host)?);
    let host_secret = SecretString::from(base64(host_private.expose_secret().as_bytes()));
    let host_public = read(&host.with_extension("pub"))?.trim().to_owned();
    Ok((client_public, host_public, host_secret))
}

fn read(path: &Path) -> Result<String, KeyError> {
    std::fs::read_to_string(path).map_err(|source| KeyError::Io {
        path: path.to_owned(),
        source,
    })
}

fn write_public(path: &Path, text: &str) -> Result<(), KeyError> {
    std::fs::write(path, text).map_err(|source| KeyError::Io {
        path: path.to_owned(),
        source,
    })
}

/// The `ssh -F` file: the run's key only, no agent, the pinned host key only.
fn config_text(dir: &Path, alias: &str) -> String {
    let dir = dir.display();
    format!(
        "# The ssh configuration of one overbrainer run (POD-26): ssh -F <this file> -p PORT root@HOST\n\
         Host *\n  User root\n  IdentityFile \"{dir}/{CLIENT_KEY}\"\n  IdentitiesOnly yes\n  \
         IdentityAgent none\n  UserKnownHostsFile \"{dir}/{KNOWN_HOSTS}\"\n  GlobalKnownHostsFile \
         /dev/null\n  HostKeyAlias {alias}\n  StrictHostKeyChecking yes\n  \
         PasswordAuthentication no\n  KbdInteractiveAuthentication no\n"
    )
}

/// Creates the run's host-key secret (POD-26), which is also the check that the key can
/// manage secrets (POD-21): a 401 or 403 is [`KeyError::NoSecretsAccess`].
///
/// # Errors
/// See above; [`KeyError::Secret`] for any other failure.
pub async fn create_host_secret(
    client: &RunpodClient,
    run_id: &str,
    keys: &RunKeys,
) -> Result<Secret, KeyError> {
    let description = format!("overbrainer run {run_id}: its pods' SSH host key");
    client
        .create_secret(
            &host_key_secret(run_id),
            &keys.host_secret,
            Some(&description),
        )
        .await
        .map_err(|error| match error.status() {
            Some(status @ (401 | 403)) => KeyError::NoSecretsAccess { status },
            _ => KeyError::Secret(error),
        })
}

/// Standard base64 with padding (RFC 4648), as `base64 -d` reads it.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "keys_tests.rs"]
mod tests;

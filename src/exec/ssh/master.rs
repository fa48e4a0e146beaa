//! The OpenSSH master connection behind an [`SshExecutor`](super::SshExecutor): how it
//! starts (`ssh -M -f -N`, then the `openssh` crate talks to it over its control socket),
//! with the bounds of `timeouts.rs` on its command line and its socket where `socket.rs`
//! puts it, and the end of its log for error messages.
//!
//! The bounds always go on the master's command line with `-o`, so no configuration
//! file lengthens them (see `timeouts.rs`).

use std::path::Path;

use openssh::Session;

use super::cipher::{preferred, resolved_ciphers};
use super::socket::{LOG, SOCKET, control_dir, sweep_stale};
use super::timeouts::parse_resolved;
use super::{MASTER_IDLE, SshDestination, SshError, SshTimeouts};
use crate::exec::ExecError;

/// Most bytes of the master's log kept in [`ExecError::MasterDied`].
const MASTER_LOG_TAIL: usize = 400;

/// What `ssh -G` resolves for `destination`: with its configuration, or with none
/// at all (`-F /dev/null`) when `bare`; none when it fails.
#[allow(
    clippy::disallowed_methods,
    reason = "exec/ is where processes are spawned"
)]
async fn resolved(destination: &SshDestination, bare: bool) -> Option<String> {
    let mut command = tokio::process::Command::new("ssh");
    command.arg("-G");
    if bare {
        command.arg("-F").arg("/dev/null");
    } else if let Some(file) = &destination.config_file {
        command.arg("-F").arg(file);
    }
    if let Some(port) = destination.port {
        command.arg("-p").arg(port.to_string());
    }
    command
        .arg("--")
        .arg(&destination.host)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    match command.output().await {
        Ok(output) if output.status.success() => {
            Some(String::from_utf8_lossy(&output.stdout).into_owned())
        }
        _ => None,
    }
}

/// The arguments of the master's `ssh` for `destination` with `timeouts`, its
/// socket and log in `dir`.
fn master_args(
    destination: &SshDestination,
    timeouts: &SshTimeouts,
    ciphers: Option<&str>,
    dir: &Path,
) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = Vec::new();
    let mut push = |arg: &dyn AsRef<std::ffi::OsStr>| args.push(arg.as_ref().to_owned());
    push(&"-E");
    push(&dir.join(LOG));
    push(&"-S");
    push(&dir.join(SOCKET));
    push(&"-M");
    push(&"-f");
    push(&"-N");
    let mut options = vec![
        format!("ControlPersist={}s", MASTER_IDLE.as_secs()),
        "BatchMode=yes".to_owned(),
        "StrictHostKeyChecking=yes".to_owned(),
    ];
    options.extend(timeouts.options());
    if let Some(ciphers) = ciphers {
        options.push(format!("Ciphers={ciphers}"));
    }
    if destination.identity_file.is_some() {
        options.push("IdentitiesOnly=yes".to_owned());
    }
    for option in &options {
        push(&"-o");
        push(option);
    }
    if let Some(file) = &destination.known_hosts_file {
        let mut option = std::ffi::OsString::from("UserKnownHostsFile=");
        option.push(file);
        push(&"-o");
        push(&option);
    }
    if let Some(file) = &destination.identity_file {
        push(&"-i");
        push(file);
    }
    if let Some(port) = destination.port {
        push(&"-p");
        push(&port.to_string());
    }
    if let Some(file) = &destination.config_file {
        push(&"-F");
        push(file);
    }
    push(&"--");
    push(&destination.host);
    args
}

/// Opens a master connection to `destination` and checks that it answers.
///
/// # Errors
///
/// [`ExecError::Ssh`] with [`SshError::ControlPath`] before anything runs when no
/// control directory fits, [`SshError::Connect`] when `ssh` fails (its log in the
/// source), [`SshError::Unresponsive`] when it neither connects nor fails in time;
/// [`ExecError::MasterDied`] when the master is gone right after it started.
#[allow(
    clippy::disallowed_methods,
    reason = "exec/ is where processes are spawned"
)]
pub(super) async fn open(destination: &SshDestination) -> Result<Session, ExecError> {
    // What killed makers left behind goes first (they could not remove it).
    sweep_stale(&destination.control_dirs);
    // Held until the master answers: until then the directory has no socket.
    let (dir, lock) = control_dir(&destination.control_dirs)?;
    // Boxed: the two `ssh -G` runs would otherwise grow every future that connects.
    let (configured, default) =
        Box::pin(async { tokio::join!(resolved(destination, false), resolved(destination, true)) })
            .await;
    let timeouts = if destination.always_default_keepalive {
        destination.timeouts
    } else {
        let configured = configured
            .as_deref()
            .map(parse_resolved)
            .unwrap_or_default();
        destination.timeouts.capped_by(configured)
    };
    let ciphers = preferred(
        configured.as_deref().and_then(resolved_ciphers),
        default.as_deref().and_then(resolved_ciphers),
    );
    let log = dir.path().join(LOG);
    let mut command = tokio::process::Command::new("ssh");
    command
        .args(master_args(
            destination,
            &timeouts,
            ciphers.as_deref(),
            dir.path(),
        ))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    // `ssh -f` returns once it is connected and authenticated; the keepalive only
    // bounds a connected master, so this bounds the rest.
    let bound = timeouts.connect + timeouts.silence_limit();
    let status = match tokio::time::timeout(bound, command.status()).await {
        Ok(Ok(status)) => status,
        Ok(Err(source)) => {
            return Err(ExecError::Spawn {
                program: "ssh".to_owned(),
                source,
            });
        }
        Err(_) => {
            return Err(ExecError::Ssh(SshError::Unresponsive {
                destination: destination.host.clone(),
                waited_secs: bound.as_secs(),
            }));
        }
    };
    if !status.success() {
        let message = master_log_tail(&log);
        return Err(ExecError::Ssh(SshError::Connect {
            destination: destination.host.clone(),
            source: openssh::Error::Connect(std::io::Error::other(if message.is_empty() {
                format!("ssh exited with {status}")
            } else {
                message
            })),
        }));
    }
    let session = Session::new_native_mux(dir);
    let checked = session.check().await;
    drop(lock);
    if checked.is_err() {
        let log = master_log_tail(&log);
        drop(session);
        return Err(ExecError::MasterDied { log });
    }
    Ok(session)
}

/// The end of the master's log on one line, control characters dropped.
pub(super) fn master_log_tail(path: &Path) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let flat: String = text
        .split(['\n', '\r'])
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" | ")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    let skip = flat.chars().count().saturating_sub(MASTER_LOG_TAIL);
    flat.chars().skip(skip).collect()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn the_master_log_tail_is_one_bounded_line() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        assert_eq!(master_log_tail(&log), "");
        std::fs::write(&log, "first\r\n\nsecond \u{7}bell\n").unwrap();
        assert_eq!(master_log_tail(&log), "first | second bell");
        std::fs::write(&log, "x".repeat(5000)).unwrap();
        assert_eq!(master_log_tail(&log).len(), MASTER_LOG_TAIL);
        let error = ExecError::MasterDied { log: String::new() };
        assert!(error.to_string().ends_with("(ssh log: empty)"), "{error}");
    }

    #[test]
    fn the_master_gets_the_bounds_on_its_command_line() {
        let mut destination = SshDestination::new("-oProxyCommand=evil");
        destination.identity_file = Some(PathBuf::from("/k/id"));
        let strings = |args: Vec<std::ffi::OsString>| -> Vec<String> {
            args.iter()
                .map(|arg| arg.to_string_lossy().into_owned())
                .collect()
        };
        let timeouts = SshTimeouts::default();
        let dir = Path::new("/tmp/ob-x");
        let plain = strings(master_args(&destination, &timeouts, None, dir));
        assert!(
            !plain.iter().any(|arg| arg.starts_with("Ciphers=")),
            "{plain:?}"
        );
        let ciphers = "aes128-gcm@openssh.com,chacha20-poly1305@openssh.com";
        let args = strings(master_args(&destination, &timeouts, Some(ciphers), dir));
        for option in [
            &format!("Ciphers={ciphers}")[..],
            "ServerAliveInterval=15",
            "ServerAliveCountMax=3",
            "ConnectTimeout=30",
            "StrictHostKeyChecking=yes",
            "BatchMode=yes",
        ] {
            let at = args.iter().position(|arg| arg == option);
            assert!(
                at.is_some_and(|at| args[at - 1] == "-o"),
                "{option} in {args:?}"
            );
        }
        // The host comes after `--`: a host that looks like an option stays a host.
        assert_eq!(args[args.len() - 2..], ["--", "-oProxyCommand=evil"]);
    }
}

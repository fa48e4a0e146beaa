//! The OpenSSH master connection behind an [`SshExecutor`](super::SshExecutor): the
//! options that bound every wait on the target, where its control socket lives, and
//! how it starts (`ssh -M -f -N`, then the `openssh` crate talks to it over that
//! socket).
//!
//! Bounded waits (SSH-16, issue 8). `ServerAliveInterval`, `ServerAliveCountMax`
//! and `ConnectTimeout` are always passed with `-o` on the master's command line,
//! which beats every configuration file. A configuration can shorten them (the
//! smaller value wins), never lengthen them: Debian's OpenSSH turns `BatchMode yes`
//! into `ServerAliveInterval 300`, which would otherwise let a wedged target hang a
//! call for 15 minutes. Every command runs over the master, so with the defaults a
//! target that stops answering ends the master, and the call waiting on it, within
//! 45 seconds (15 s × 3) of its last answer; a master that cannot even finish
//! connecting is given up after the connect timeout plus that window.
//!
//! Control socket (issue 8). A Unix socket path holds at most 107 bytes on Linux
//! (103 on macOS and the BSDs), and OpenSSH first binds a name 17 bytes longer
//! than the `ControlPath`, then renames it. The socket lives in a fresh private
//! directory under the first candidate directory (see [`control_dirs`]) short
//! enough for that; when none is, the connection fails before `ssh` runs, naming
//! the limit.

use std::path::{Path, PathBuf};
use std::time::Duration;

use openssh::Session;

use super::ExecError;
use super::ssh::{
    CONNECT_TIMEOUT, KEEPALIVE, KEEPALIVE_COUNT, MASTER_IDLE, SshDestination, SshError,
    master_log_tail,
};

/// Bytes of a Unix socket path, its terminating NUL included (`sun_path`).
const SUN_PATH: usize = if cfg!(any(target_os = "linux", target_os = "android")) {
    108
} else {
    104
};
/// What OpenSSH appends to the `ControlPath` for the socket it binds before renaming
/// it: `.` and 16 random characters.
const OPENSSH_SUFFIX: usize = 17;
/// The longest `ControlPath` OpenSSH can bind: 90 bytes on Linux, 86 on macOS.
pub const MAX_CONTROL_PATH: usize = SUN_PATH - 1 - OPENSSH_SUFFIX;
/// Prefix of the private directory made for each master in the chosen directory.
const DIR_PREFIX: &str = "ob-";
/// Random characters after [`DIR_PREFIX`].
const DIR_RANDOM: usize = 6;
/// The socket's name in that directory (the `openssh` crate expects `master`).
const SOCKET: &str = "master";

/// The bounds on waiting for a target (SSH-16). The defaults are [`KEEPALIVE`],
/// [`KEEPALIVE_COUNT`] and [`CONNECT_TIMEOUT`]; tests shorten them to see a wedged
/// target reported in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SshTimeouts {
    /// `ServerAliveInterval`: a keepalive after this long without data from the
    /// target. Whole seconds, at least one.
    pub alive_interval: Duration,
    /// `ServerAliveCountMax`: unanswered keepalives before the master gives up.
    pub alive_count_max: u32,
    /// `ConnectTimeout`: for the TCP connection and the server's greeting.
    pub connect: Duration,
}

impl Default for SshTimeouts {
    fn default() -> Self {
        Self {
            alive_interval: KEEPALIVE,
            alive_count_max: KEEPALIVE_COUNT,
            connect: CONNECT_TIMEOUT,
        }
    }
}

impl SshTimeouts {
    /// How long a connected target may stay silent before the master ends:
    /// interval × count.
    #[must_use]
    pub fn silence_limit(&self) -> Duration {
        Duration::from_secs(secs(self.alive_interval) * u64::from(self.alive_count_max.max(1)))
    }

    /// These bounds, each lowered to the value `configured` sets, if smaller.
    fn capped_by(self, configured: Configured) -> Self {
        let cap = |ours: Duration, theirs: Option<u64>| match theirs {
            Some(theirs) if theirs > 0 && theirs < secs(ours) => Duration::from_secs(theirs),
            _ => ours,
        };
        Self {
            alive_interval: cap(self.alive_interval, configured.alive_interval),
            alive_count_max: match configured.alive_count_max {
                Some(theirs) if theirs > 0 => self
                    .alive_count_max
                    .min(u32::try_from(theirs).unwrap_or(u32::MAX)),
                _ => self.alive_count_max,
            },
            connect: cap(self.connect, configured.connect),
        }
    }

    /// The `-o` options passing these bounds.
    fn options(&self) -> [String; 3] {
        [
            format!("ServerAliveInterval={}", secs(self.alive_interval)),
            format!("ServerAliveCountMax={}", self.alive_count_max.max(1)),
            format!("ConnectTimeout={}", secs(self.connect)),
        ]
    }
}

/// Whole seconds of `duration`, at least one (OpenSSH reads `0` as "never").
fn secs(duration: Duration) -> u64 {
    duration.as_secs().max(1)
}

/// What the configuration sets for the bounds, as `ssh -G` prints it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Configured {
    alive_interval: Option<u64>,
    alive_count_max: Option<u64>,
    connect: Option<u64>,
}

/// Reads the output of `ssh -G` (`serveraliveinterval 0` and `connecttimeout none`
/// when unset; `serveralivecountmax` is always printed).
fn parse_resolved(text: &str) -> Configured {
    let mut configured = Configured::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(' ') else {
            continue;
        };
        let value = value.trim().parse::<u64>().ok();
        match key {
            "serveraliveinterval" => configured.alive_interval = value,
            "serveralivecountmax" => configured.alive_count_max = value,
            "connecttimeout" => configured.connect = value,
            _ => {}
        }
    }
    configured
}

/// The bounds the configuration of `destination` sets, from `ssh -G`; none when it
/// fails.
async fn configured(destination: &SshDestination) -> Configured {
    let mut command = tokio::process::Command::new("ssh");
    command.arg("-G");
    if let Some(file) = &destination.config_file {
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
            parse_resolved(&String::from_utf8_lossy(&output.stdout))
        }
        _ => Configured::default(),
    }
}

/// The candidate directories for control sockets, in order: `XDG_RUNTIME_DIR` (a
/// private directory meant for sockets), `TMPDIR`, then `/tmp`. Unset, empty and
/// relative values are skipped.
#[must_use]
pub fn control_dirs(xdg_runtime_dir: Option<&str>, tmpdir: Option<&str>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in [xdg_runtime_dir, tmpdir, Some("/tmp")]
        .into_iter()
        .flatten()
    {
        let dir = PathBuf::from(dir.trim_end_matches('/'));
        if dir.is_absolute() && !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// Length in bytes of the control socket path of a master whose directory is made
/// in `base`.
fn control_path_len(base: &Path) -> usize {
    base.as_os_str().len() + 1 + DIR_PREFIX.len() + DIR_RANDOM + 1 + SOCKET.len()
}

/// The candidates of `dirs` short enough for a control socket, in order.
///
/// # Errors
///
/// [`SshError::ControlPath`] naming each candidate and its length when none fits.
fn fitting(dirs: &[PathBuf]) -> Result<Vec<&Path>, SshError> {
    let fit: Vec<&Path> = dirs
        .iter()
        .map(PathBuf::as_path)
        .filter(|dir| control_path_len(dir) <= MAX_CONTROL_PATH)
        .collect();
    if fit.is_empty() {
        let tried = dirs
            .iter()
            .map(|dir| format!("`{}` gives {} bytes", dir.display(), control_path_len(dir)))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(SshError::ControlPath {
            tried: if tried.is_empty() {
                "no candidate directory".to_owned()
            } else {
                tried
            },
            limit: MAX_CONTROL_PATH,
            sun_path: SUN_PATH,
        });
    }
    Ok(fit)
}

/// A new private directory for a master's socket and log, in the first of `dirs`
/// that is short enough and writable.
fn control_dir(dirs: &[PathBuf]) -> Result<tempfile::TempDir, ExecError> {
    let mut last = None;
    for dir in fitting(dirs).map_err(ExecError::Ssh)? {
        match tempfile::Builder::new()
            .prefix(DIR_PREFIX)
            .rand_bytes(DIR_RANDOM)
            .tempdir_in(dir)
        {
            Ok(made) => return Ok(made),
            Err(source) => {
                last = Some(ExecError::Io {
                    path: dir.to_path_buf(),
                    source,
                });
            }
        }
    }
    Err(last.unwrap_or_else(|| {
        ExecError::Ssh(SshError::ControlPath {
            tried: "no candidate directory".to_owned(),
            limit: MAX_CONTROL_PATH,
            sun_path: SUN_PATH,
        })
    }))
}

/// The arguments of the master's `ssh` for `destination` with `timeouts`, its
/// socket and log in `dir`.
fn master_args(
    destination: &SshDestination,
    timeouts: &SshTimeouts,
    dir: &Path,
) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = Vec::new();
    let mut push = |arg: &dyn AsRef<std::ffi::OsStr>| args.push(arg.as_ref().to_owned());
    push(&"-E");
    push(&dir.join("log"));
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
pub(super) async fn open(destination: &SshDestination) -> Result<Session, ExecError> {
    let dir = control_dir(&destination.control_dirs)?;
    let timeouts = if destination.always_default_keepalive {
        destination.timeouts
    } else {
        destination
            .timeouts
            .capped_by(configured(destination).await)
    };
    let log = dir.path().join("log");
    let mut command = tokio::process::Command::new("ssh");
    command
        .args(master_args(destination, &timeouts, dir.path()))
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
    if session.check().await.is_err() {
        let log = master_log_tail(&log);
        drop(session);
        return Err(ExecError::MasterDied { log });
    }
    Ok(session)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debian_batch_mode_keepalive_does_not_lengthen_the_bounds() {
        // `ssh -G` with `BatchMode yes` on Debian, and nothing else set.
        let resolved =
            "batchmode yes\nserveraliveinterval 300\nserveralivecountmax 3\nconnecttimeout none\n";
        let capped = SshTimeouts::default().capped_by(parse_resolved(resolved));
        assert_eq!(capped, SshTimeouts::default());
        assert_eq!(capped.silence_limit(), Duration::from_secs(45));
        let options = capped.options();
        assert_eq!(
            options,
            [
                "ServerAliveInterval=15",
                "ServerAliveCountMax=3",
                "ConnectTimeout=30"
            ]
        );
    }

    #[test]
    fn a_configuration_can_shorten_the_bounds() {
        let resolved = "serveraliveinterval 5\nserveralivecountmax 2\nconnecttimeout 10\n";
        let capped = SshTimeouts::default().capped_by(parse_resolved(resolved));
        assert_eq!(capped.alive_interval, Duration::from_secs(5));
        assert_eq!(capped.alive_count_max, 2);
        assert_eq!(capped.connect, Duration::from_secs(10));
        let unset = "serveraliveinterval 0\nserveralivecountmax 0\nconnecttimeout none\n";
        let kept = SshTimeouts::default().capped_by(parse_resolved(unset));
        assert_eq!(kept, SshTimeouts::default());
    }

    #[test]
    fn the_master_gets_the_bounds_on_its_command_line() {
        let mut destination = SshDestination::new("-oProxyCommand=evil");
        destination.identity_file = Some(PathBuf::from("/k/id"));
        let args = master_args(
            &destination,
            &SshTimeouts::default(),
            Path::new("/tmp/ob-x"),
        );
        let args: Vec<String> = args
            .iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        for option in [
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

    #[test]
    fn control_dirs_come_from_xdg_then_tmpdir_then_tmp() {
        assert_eq!(
            control_dirs(Some("/run/user/1000"), Some("/var/tmp/x/")),
            [
                PathBuf::from("/run/user/1000"),
                PathBuf::from("/var/tmp/x"),
                PathBuf::from("/tmp")
            ]
        );
        assert_eq!(
            control_dirs(Some(""), Some("relative")),
            [PathBuf::from("/tmp")]
        );
        assert_eq!(control_dirs(None, Some("/tmp")), [PathBuf::from("/tmp")]);
    }

    #[test]
    fn a_long_temporary_directory_is_passed_over_and_none_fitting_names_the_limit() {
        let fits =
            "/".to_owned() + &"f".repeat(MAX_CONTROL_PATH - control_path_len(Path::new("/")));
        assert_eq!(control_path_len(Path::new(&fits)), MAX_CONTROL_PATH);
        let long = format!("{fits}x");
        let dirs = [PathBuf::from(&long), PathBuf::from(&fits)];
        assert_eq!(fitting(&dirs).unwrap(), [Path::new(&fits)]);
        let error = fitting(&[PathBuf::from(&long)]).unwrap_err().to_string();
        assert!(
            error.contains(&format!("at most {MAX_CONTROL_PATH} bytes")),
            "{error}"
        );
        assert!(error.contains(&long), "{error}");
        assert!(error.contains("TMPDIR"), "{error}");
    }
}

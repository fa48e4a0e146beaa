//! Where the control socket of an SSH master lives (issue 8).
//!
//! Control socket (issue 8). A Unix socket path holds at most 107 bytes on Linux
//! (103 on macOS and the BSDs), and OpenSSH first binds a name 17 bytes longer
//! than the `ControlPath`, then renames it. The socket lives in a fresh private
//! directory under the first candidate directory (see [`control_dirs`]) short
//! enough for that; when none is, the connection fails before `ssh` runs, naming

use std::path::{Path, PathBuf};

use super::SshError;
use crate::exec::ExecError;

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
pub(super) const SOCKET: &str = "master";
/// The master's log in that directory (`ssh -E`).
pub(super) const LOG: &str = "log";
/// The lock file in that directory: its maker holds an exclusive `flock` on it from
/// right after making the directory until its master answers (see [`control_dir`]),
/// the window in which a live directory has no socket yet. A `flock` ends with its
/// process, `SIGKILL` included.
const LOCK: &str = "lock";
/// How old a directory without a lock file (one that its maker had no time to lock)
/// must be before [`sweep_stale`] may remove it.
const UNLOCKED_AGE: std::time::Duration = std::time::Duration::from_secs(60);

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
/// that is short enough and writable, and the held lock on its [`LOCK`] file: keep it
/// until the master answers on the socket, then drop it (the live socket is the
/// directory's proof of life from then on, see [`sweep_stale`]).
pub(super) fn control_dir(
    dirs: &[PathBuf],
) -> Result<(tempfile::TempDir, std::fs::File), ExecError> {
    let mut last = None;
    for dir in fitting(dirs).map_err(ExecError::Ssh)? {
        match tempfile::Builder::new()
            .prefix(DIR_PREFIX)
            .rand_bytes(DIR_RANDOM)
            .tempdir_in(dir)
        {
            Ok(made) => {
                let lock = lock_new(&made.path().join(LOCK))?;
                return Ok((made, lock));
            }
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

/// Creates the lock file `path` (mode 600, never an existing one) and takes an
/// exclusive `flock` on it.
fn lock_new(path: &Path) -> Result<std::fs::File, ExecError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let io = |source| ExecError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(io)?;
    rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
        .map_err(|errno| io(errno.into()))?;
    Ok(file)
}

/// Removes from each of `dirs` the control directories that a master's maker left
/// behind when it was killed (`SIGKILL` cannot be caught, so its
/// [`tempfile::TempDir`] was never dropped), and only those provably dead. A
/// directory is removed when all of these hold:
///
/// - its name is [`DIR_PREFIX`] and [`DIR_RANDOM`] letters or digits, it is a real
///   directory (no symbolic link) owned by this process's effective user, and it
///   holds nothing but [`SOCKET`], [`LOG`] and [`LOCK`];
/// - no master listens: [`SOCKET`] is missing, or it is a socket that refuses a
///   connection (`ECONNREFUSED`: OpenSSH renames its socket into place only once it
///   listens, so a live master's never refuses);
/// - its maker is gone or done: the [`LOCK`] file's `flock` can be taken at once,
///   or, without a lock file, the directory is older than [`UNLOCKED_AGE`].
///
/// Anything else (another user's directory, a master that answers, a maker still
/// connecting, an entry that cannot be read) is left alone. Failures are ignored:
/// the sweep only tidies, and never fails a connection.
pub(super) fn sweep_stale(dirs: &[PathBuf]) {
    let me = rustix::process::geteuid().as_raw();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            match dead_control_dir(&path, me) {
                Some(Dead::Locked(held)) => {
                    let _ = std::fs::remove_dir_all(&path);
                    drop(held);
                }
                Some(Dead::Unlocked) => {
                    let _ = std::fs::remove_dir_all(&path);
                }
                None => {}
            }
        }
    }
}

/// A control directory that [`sweep_stale`] may remove.
enum Dead {
    /// With its lock file, whose lock is now held here.
    Locked(rustix::fd::OwnedFd),
    /// Without one, and old enough.
    Unlocked,
}

/// A [`Dead`] when `path` is a control directory of the user `uid` that
/// [`sweep_stale`] may remove (see there).
fn dead_control_dir(path: &Path, uid: u32) -> Option<Dead> {
    use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
    let name = path.file_name().and_then(|name| name.to_str())?;
    let random = name.strip_prefix(DIR_PREFIX)?;
    if random.len() != DIR_RANDOM || !random.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_dir() || meta.uid() != uid {
        return None;
    }
    for entry in std::fs::read_dir(path).ok()? {
        let name = entry.ok()?.file_name();
        if ![SOCKET, LOG, LOCK].iter().any(|known| name == *known) {
            return None;
        }
    }
    let socket = path.join(SOCKET);
    match std::fs::symlink_metadata(&socket) {
        Ok(socket_meta) => {
            if !socket_meta.file_type().is_socket() {
                return None;
            }
            match std::os::unix::net::UnixStream::connect(&socket) {
                Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused => {}
                _ => return None,
            }
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) => return None,
    }
    let flags =
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::CLOEXEC;
    match rustix::fs::open(path.join(LOCK), flags, rustix::fs::Mode::empty()) {
        // Held by its maker: still connecting. Taken: held by the caller until the
        // directory is gone, so no one takes it meanwhile.
        Ok(fd) => rustix::fs::flock(&fd, rustix::fs::FlockOperation::NonBlockingLockExclusive)
            .is_ok()
            .then_some(Dead::Locked(fd)),
        Err(rustix::io::Errno::NOENT) => meta
            .modified()
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age > UNLOCKED_AGE)
            .then_some(Dead::Unlocked),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

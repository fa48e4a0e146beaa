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
pub(super) fn control_dir(dirs: &[PathBuf]) -> Result<tempfile::TempDir, ExecError> {
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

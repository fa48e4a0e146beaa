//! Files and directories that hold a secret or a private key (a run's `ssh/` keys, a pod
//! log, a token cache): the one way overbrainer creates them, private from the first byte.
//!
//! A file is created with mode 600 and a directory with mode 700 by the system call that
//! creates it (`open(O_CREAT | O_EXCL, 0600)`, `mkdir(0700)`), so no umask widens them (a
//! umask only removes bits) and there is no moment, however short, in which another user
//! could open them; nothing is `chmod`-ed after the fact. Creating never follows a link
//! left at the path. An existing file or directory that the group or others can read is
//! refused, naming it and the fix, rather than written into.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

/// Mode of a private file.
pub const FILE_MODE: u32 = 0o600;
/// Mode of a private directory.
pub const DIR_MODE: u32 = 0o700;

/// Why a private file or directory could not be created or used.
#[derive(Debug, thiserror::Error)]
pub enum PrivateError {
    /// The file system refused.
    #[error("cannot create `{}` privately", .path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The path exists and the group or others may use it; nothing was written.
    #[error(
        "`{}` exists with mode {mode:03o}, open to other users of this machine; nothing was written: run `chmod {} {}` or remove it",
        .path.display(),
        if *directory { "700" } else { "600" },
        .path.display()
    )]
    Exposed {
        /// The file or directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
        /// Whether it is a directory.
        directory: bool,
    },
    /// Something other than a plain file or directory (a link, a socket) is at the path.
    #[error("`{}` is not a plain {}; nothing was written", .path.display(), if *directory { "directory" } else { "file" })]
    NotPlain {
        /// The path.
        path: PathBuf,
        /// Whether a directory was wanted.
        directory: bool,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PrivateError + '_ {
    move |source| PrivateError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Creates directory `path` with mode 700 (its missing parents get the usual mode). An
/// existing directory is accepted when only its owner may use it.
///
/// # Errors
///
/// [`PrivateError::Exposed`] for an existing directory open to others,
/// [`PrivateError::NotPlain`] for a link or a file at the path, [`PrivateError::Io`] when
/// the file system refuses.
pub fn create_dir(path: &Path) -> Result<(), PrivateError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    match DirBuilder::new().mode(DIR_MODE).create(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            check_existing(path, true)
        }
        Err(source) => Err(PrivateError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Creates the new file `path` with mode 600 for writing; an existing path (a link
/// included) is an error, so nothing already there is ever written through.
///
/// # Errors
///
/// [`PrivateError::Io`] when the path exists or cannot be created.
pub fn create_file(path: &Path) -> Result<File, PrivateError> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(path)
        .map_err(io(path))
}

/// Writes `bytes` as the whole content of `path`, replacing any earlier content: a new
/// private file beside it is written, flushed to disk and renamed over `path`, so `path`
/// holds either the old or the new content and is never readable by others.
///
/// # Errors
///
/// [`PrivateError::Exposed`] or [`PrivateError::NotPlain`] for what is at `path` now;
/// [`PrivateError::Io`] when writing or renaming fails (the temporary file is removed).
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), PrivateError> {
    if path.symlink_metadata().is_ok() {
        check_existing(path, false)?;
    }
    let name = path.file_name().map_or_else(
        || std::ffi::OsString::from("private"),
        std::ffi::OsStr::to_os_string,
    );
    let mut temporary_name = std::ffi::OsString::from(".");
    temporary_name.push(&name);
    temporary_name.push(format!(".{}.tmp", std::process::id()));
    let temporary = path.with_file_name(temporary_name);
    let written = (|| {
        let mut file = create_file(&temporary)?;
        file.write_all(bytes).map_err(io(&temporary))?;
        file.sync_all().map_err(io(&temporary))?;
        std::fs::rename(&temporary, path).map_err(io(path))
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// Opens `path` for appending (a log that may hold secrets), creating it with mode 600.
/// An existing file is accepted when only its owner may read it.
///
/// # Errors
///
/// [`PrivateError::Exposed`] or [`PrivateError::NotPlain`] for an existing path,
/// [`PrivateError::Io`] when the file system refuses.
pub fn append_file(path: &Path) -> Result<File, PrivateError> {
    if path.symlink_metadata().is_ok() {
        check_existing(path, false)?;
    }
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(FILE_MODE)
        .open(path)
        .map_err(io(path))
}

/// Checks that what is at `path` is a plain file (or directory) that only its owner may use.
fn check_existing(path: &Path, directory: bool) -> Result<(), PrivateError> {
    let meta = path.symlink_metadata().map_err(io(path))?;
    let plain = if directory {
        meta.file_type().is_dir()
    } else {
        meta.file_type().is_file()
    };
    if !plain {
        return Err(PrivateError::NotPlain {
            path: path.to_owned(),
            directory,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(PrivateError::Exposed {
            path: path.to_owned(),
            mode,
            directory,
        });
    }
    Ok(())
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests run real programs and read the test environment"
)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn mode(path: &Path) -> u32 {
        path.symlink_metadata().unwrap().permissions().mode() & 0o7777
    }

    /// Creates one of each kind under `root` and checks their modes.
    fn create_and_check(root: &Path) {
        let dir = root.join("runs/r1/ssh");
        create_dir(&dir).unwrap();
        assert_eq!(mode(&dir), DIR_MODE);
        let key = dir.join("id_ed25519");
        let mut file = create_file(&key).unwrap();
        file.write_all(b"-----BEGIN OPENSSH PRIVATE KEY-----")
            .unwrap();
        drop(file);
        assert_eq!(mode(&key), FILE_MODE);
        let token = root.join("token");
        write_file(&token, b"first").unwrap();
        assert_eq!(mode(&token), FILE_MODE);
        write_file(&token, b"second").unwrap();
        assert_eq!(std::fs::read(&token).unwrap(), b"second");
        assert_eq!(mode(&token), FILE_MODE);
        let log = root.join(".pod/pod.log");
        create_dir(log.parent().unwrap()).unwrap();
        append_file(&log).unwrap().write_all(b"a\n").unwrap();
        append_file(&log).unwrap().write_all(b"b\n").unwrap();
        assert_eq!(std::fs::read(&log).unwrap(), b"a\nb\n");
        assert_eq!(mode(&log), FILE_MODE);
        let leftovers: Vec<_> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn private_files_and_directories_are_created_600_and_700() {
        let root = tempfile::tempdir().unwrap();
        create_and_check(root.path());
    }

    /// The variable that makes [`child_creates_private_files_under_umask_000`] run.
    const CHILD_DIR: &str = "OVERBRAINER_TEST_PRIVATE_DIR";

    #[test]
    fn regression_a_umask_of_000_does_not_widen_private_files() {
        // The umask is per process: the check runs in a child (this test binary again)
        // started by a shell with `umask 000`, so no other test sees it.
        let root = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        let output = std::process::Command::new("sh")
            .args(["-c", "umask 000 && exec \"$0\" \"$@\""])
            .arg(exe)
            .args([
                "--exact",
                "secrets::private::tests::child_creates_private_files_under_umask_000",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_DIR, root.path())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(output.status.success(), "{text}");
        assert!(
            text.contains("1 passed"),
            "the child test did not run: {text}"
        );
        assert_eq!(mode(&root.path().join("runs/r1/ssh/id_ed25519")), FILE_MODE);
    }

    #[test]
    #[ignore = "run by regression_a_umask_of_000_does_not_widen_private_files in a child process"]
    fn child_creates_private_files_under_umask_000() {
        let Some(root) = std::env::var_os(CHILD_DIR) else {
            panic!("run through `regression_a_umask_of_000_does_not_widen_private_files`");
        };
        let old = rustix::process::umask(rustix::fs::Mode::empty());
        assert!(old.is_empty(), "the child's umask is {old:?}, not 000");
        // With umask 000 a plain `std::fs::write` makes a file every user may read and
        // write: the helpers must not.
        let plain = Path::new(&root).join("plain");
        std::fs::write(&plain, "x").unwrap();
        assert_eq!(mode(&plain), 0o666);
        create_and_check(Path::new(&root));
    }

    #[test]
    fn existing_paths_open_to_others_or_links_are_refused_and_left_alone() {
        let root = tempfile::tempdir().unwrap();
        let open = root.path().join("token");
        std::fs::write(&open, "old").unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = write_file(&open, b"new").unwrap_err();
        assert!(
            matches!(error, PrivateError::Exposed { mode: 0o644, .. }),
            "{error:?}"
        );
        assert!(error.to_string().contains("chmod 600"), "{error}");
        assert!(append_file(&open).is_err());
        assert_eq!(std::fs::read(&open).unwrap(), b"old");
        assert_eq!(mode(&open), 0o644);

        let wide = root.path().join("wide");
        std::fs::create_dir(&wide).unwrap();
        std::fs::set_permissions(&wide, std::fs::Permissions::from_mode(0o755)).unwrap();
        let error = create_dir(&wide).unwrap_err();
        assert!(error.to_string().contains("chmod 700"), "{error}");

        let target = root.path().join("elsewhere");
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(
            write_file(&link, b"x"),
            Err(PrivateError::NotPlain { .. })
        ));
        assert!(create_file(&link).is_err());
        assert!(append_file(&link).is_err());
        assert!(!target.exists(), "a link was written through");
    }
}

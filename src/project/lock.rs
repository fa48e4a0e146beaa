//! The project lock: an advisory `flock` on the project directory itself, so that it dies
//! with the process (even after `SIGKILL`) and survives deleting `.overbrainer/lock` or
//! renaming `.overbrainer/` (LCK-3, LCK-4). `.overbrainer/lock` only records the holder's
//! PID for the message of a second process (LCK-2).

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use fs4::fs_std::FileExt;

/// The file inside `.overbrainer/` that names the holder.
pub const LOCK_FILE: &str = "lock";

/// Held project lock; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct ProjectLock {
    dir: File,
    pid_file: PathBuf,
}

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds it (LCK-2).
    #[error("another overbrainer process{} is using the project in `{}`; wait for it to finish or stop it", pid_text(*.pid), .dir.display())]
    Held {
        /// The holder's PID, when `.overbrainer/lock` names one.
        pid: Option<u32>,
        /// The project directory.
        dir: PathBuf,
    },
    /// The lock cannot be taken for another reason: `.overbrainer/` cannot be created, a
    /// read-only directory, a file system without locks (LCK-6).
    #[error("cannot lock the project in `{}`: {what}", .dir.display())]
    Unavailable {
        /// The project directory.
        dir: PathBuf,
        /// The step that failed.
        what: &'static str,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

fn pid_text(pid: Option<u32>) -> String {
    pid.map(|pid| format!(" (PID {pid})")).unwrap_or_default()
}

impl ProjectLock {
    pub(super) fn acquire(root: &Path, state_dir: &Path) -> Result<Self, LockError> {
        let unavailable = |what, source| LockError::Unavailable {
            dir: root.to_owned(),
            what,
            source,
        };
        std::fs::create_dir_all(state_dir)
            .map_err(|e| unavailable("cannot create `.overbrainer/`", e))?;
        let dir = File::open(root).map_err(|e| unavailable("cannot open the directory", e))?;
        let pid_file = state_dir.join(LOCK_FILE);
        match dir.try_lock_exclusive() {
            Ok(true) => {}
            Ok(false) => {
                return Err(LockError::Held {
                    pid: read_pid(&pid_file),
                    dir: root.to_owned(),
                });
            }
            Err(e) => return Err(unavailable("the file system refused the lock", e)),
        }
        write_pid(&pid_file).map_err(|e| unavailable("cannot write `.overbrainer/lock`", e))?;
        Ok(Self { dir, pid_file })
    }

    /// `.overbrainer/lock` of the locked project.
    #[must_use]
    pub fn pid_file(&self) -> &Path {
        &self.pid_file
    }
}

impl Drop for ProjectLock {
    fn drop(&mut self) {
        // Closing the descriptor releases the lock; unlocking first makes it immediate
        // even if a child inherited the descriptor.
        let _ = FileExt::unlock(&self.dir);
    }
}

/// The directory inside `.overbrainer/` holding one lock file per followed run.
pub const FOLLOW_DIR: &str = "follow";

/// Held while this process follows a run and will record its end (LCK-9): an
/// advisory `flock` on `.overbrainer/follow/<run-id>`, released when dropped or when
/// the process ends. `train cancel` looks for it when the project lock is held, to
/// tell a follower of that run (which records the cancel) from any other holder.
#[derive(Debug)]
pub struct FollowLock {
    file: File,
}

impl FollowLock {
    pub(super) fn acquire(state_dir: &Path, run_id: &str) -> Result<Self, LockError> {
        let unavailable = |what, source| LockError::Unavailable {
            dir: state_dir.to_owned(),
            what,
            source,
        };
        if !is_file_name(run_id) {
            return Err(unavailable(
                "a run ID names one file",
                std::io::Error::from(std::io::ErrorKind::InvalidInput),
            ));
        }
        let dir = state_dir.join(FOLLOW_DIR);
        std::fs::create_dir_all(&dir)
            .map_err(|e| unavailable("cannot create `.overbrainer/follow/`", e))?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(run_id))
            .map_err(|e| unavailable("cannot open the follow lock", e))?;
        match FileExt::try_lock_exclusive(&file) {
            Ok(true) => Ok(Self { file }),
            Ok(false) => Err(LockError::Held {
                pid: None,
                dir: state_dir.to_owned(),
            }),
            Err(e) => Err(unavailable("the file system refused the lock", e)),
        }
    }

    /// Whether another process holds the follow lock of `run_id` now.
    pub(super) fn held(state_dir: &Path, run_id: &str) -> bool {
        if !is_file_name(run_id) {
            return false;
        }
        let Ok(file) = File::open(state_dir.join(FOLLOW_DIR).join(run_id)) else {
            return false;
        };
        matches!(FileExt::try_lock_shared(&file), Ok(false))
    }
}

impl Drop for FollowLock {
    fn drop(&mut self) {
        let _ = FileExt::unlock(&self.file);
    }
}

/// Whether `name` is one plain file name (no separator, not `.` or `..`).
fn is_file_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

fn read_pid(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn write_pid(path: &Path) -> std::io::Result<()> {
    let mut file = File::create(path)?;
    writeln!(file, "{}", std::process::id())?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::super::Project;
    use super::*;

    fn project() -> (tempfile::TempDir, Project) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("overbrainer.toml"), "").unwrap();
        let project = Project::open(dir.path()).unwrap();
        (dir, project)
    }

    #[test]
    fn a_follow_lock_is_seen_while_held_and_gone_once_dropped() {
        let (_dir, project) = project();
        assert!(!project.is_followed("r1"));
        let held = project.follow_lock("r1").unwrap();
        // flock locks belong to the open file: another descriptor sees it held.
        assert!(project.is_followed("r1"));
        assert!(!project.is_followed("r2"));
        assert!(matches!(
            project.follow_lock("r1"),
            Err(LockError::Held { .. })
        ));
        drop(held);
        assert!(!project.is_followed("r1"));
    }

    #[test]
    fn a_second_lock_fails_naming_the_pid_and_release_frees_it() {
        let (_dir, project) = project();
        let held = project.lock().unwrap();
        let pid = read_pid(held.pid_file());
        assert_eq!(pid, Some(std::process::id()));
        let error = project.lock().unwrap_err();
        assert!(matches!(error, LockError::Held { pid: Some(p), .. } if p == std::process::id()));
        assert!(
            error
                .to_string()
                .contains(&format!("PID {}", std::process::id()))
        );
        drop(held);
        project.lock().unwrap();
    }

    #[test]
    fn deleting_the_pid_file_or_renaming_the_state_dir_keeps_the_lock() {
        let (dir, project) = project();
        let _held = project.lock().unwrap();
        std::fs::remove_file(project.state_dir().join(LOCK_FILE)).unwrap();
        assert!(matches!(
            project.lock().unwrap_err(),
            LockError::Held { pid: None, .. }
        ));
        std::fs::rename(project.state_dir(), dir.path().join("moved")).unwrap();
        assert!(matches!(
            project.lock().unwrap_err(),
            LockError::Held { .. }
        ));
    }

    #[test]
    fn a_state_dir_that_cannot_be_created_is_reported() {
        let (dir, project) = project();
        std::fs::write(dir.path().join(".overbrainer"), "a file in the way").unwrap();
        let error = project.lock().unwrap_err();
        assert!(matches!(error, LockError::Unavailable { .. }), "{error:?}");
    }
}

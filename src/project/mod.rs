//! The project on disk: its directory, the paths of its files (spec/README.md, "Project
//! layout on disk") and the project lock ([`Project::lock`], LCK-1..LCK-8).
//!
//! A directory is a project when it holds `overbrainer.toml` (LAY-1). Every path is
//! resolved from the project directory, never from the current directory.

mod atomic;
pub mod init;
mod lock;
pub mod names;
pub mod wizard;

use std::path::{Path, PathBuf};

pub use atomic::{temporary_for, write_atomic};
pub use lock::{FollowLock, LockError, ProjectLock};

use crate::config::FILE_NAME;

/// A project directory holding `overbrainer.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    root: PathBuf,
}

/// Why a directory is not a usable project.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    /// The directory does not exist (it is never created here, CLI-2).
    #[error("directory `{}` does not exist", .dir.display())]
    NoDirectory {
        /// The directory.
        dir: PathBuf,
    },
    /// The path exists but is a file (or something else), not a directory.
    #[error("`{}` is a file, not a directory; pass the project directory to `-C`", .dir.display())]
    NotADirectory {
        /// The path.
        dir: PathBuf,
    },
    /// No `overbrainer.toml` in the directory (LAY-1).
    #[error("no `overbrainer.toml` found in `{}`; run `overbrainer init` there or pass `-C DIR`", .dir.display())]
    NotAProject {
        /// The directory.
        dir: PathBuf,
    },
}

impl Project {
    /// Opens the project in `dir` (the current directory or `-C DIR`).
    ///
    /// # Errors
    ///
    /// [`ProjectError::NoDirectory`] when `dir` does not exist,
    /// [`ProjectError::NotADirectory`] when it is a file,
    /// [`ProjectError::NotAProject`] when it holds no `overbrainer.toml`.
    pub fn open(dir: &Path) -> Result<Self, ProjectError> {
        if !dir.is_dir() {
            let dir = dir.to_owned();
            return Err(if dir.exists() {
                ProjectError::NotADirectory { dir }
            } else {
                ProjectError::NoDirectory { dir }
            });
        }
        if !dir.join(FILE_NAME).exists() {
            return Err(ProjectError::NotAProject {
                dir: dir.to_owned(),
            });
        }
        Ok(Self {
            root: dir.to_owned(),
        })
    }

    /// The project directory, as given (possibly relative).
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `overbrainer.toml`.
    #[must_use]
    pub fn config_path(&self) -> PathBuf {
        self.root.join(FILE_NAME)
    }

    /// `.env`.
    #[must_use]
    pub fn dotenv_path(&self) -> PathBuf {
        self.root.join(crate::config::DOTENV_NAME)
    }

    /// `data/`: subtopics, questions, answers, train, eval and rejected JSONL files.
    #[must_use]
    pub fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    /// `runs/`: one directory per run.
    #[must_use]
    pub fn runs_dir(&self) -> PathBuf {
        self.root.join("runs")
    }

    /// `runs/<run_id>/`.
    #[must_use]
    pub fn run_dir(&self, run_id: &str) -> PathBuf {
        self.runs_dir().join(run_id)
    }

    /// `.overbrainer/`: history, lock and exported logs.
    #[must_use]
    pub fn state_dir(&self) -> PathBuf {
        self.root.join(STATE_DIR)
    }

    /// `.overbrainer/history.jsonl`.
    #[must_use]
    pub fn history_path(&self) -> PathBuf {
        self.state_dir().join("history.jsonl")
    }

    /// `prompts/`: the minijinja templates.
    #[must_use]
    pub fn prompts_dir(&self) -> PathBuf {
        self.root.join("prompts")
    }

    /// Takes the project lock for as long as the returned guard lives (LCK-1..LCK-6).
    ///
    /// # Errors
    ///
    /// [`LockError::Held`] naming the holder's PID when another process holds it (LCK-2);
    /// [`LockError::Unavailable`] when it cannot be taken for another reason (LCK-6).
    pub fn lock(&self) -> Result<ProjectLock, LockError> {
        ProjectLock::acquire(&self.root, &self.state_dir())
    }

    /// Marks run `run_id` as followed by this process for as long as the returned
    /// guard lives (LCK-9). `run_id` must be a valid run ID.
    ///
    /// # Errors
    ///
    /// [`LockError::Held`] when another process follows it, [`LockError::Unavailable`]
    /// when the lock file cannot be created or locked.
    pub fn follow_lock(&self, run_id: &str) -> Result<FollowLock, LockError> {
        FollowLock::acquire(&self.state_dir(), run_id)
    }

    /// Whether another process follows run `run_id` now (holds its
    /// [`Project::follow_lock`]).
    #[must_use]
    pub fn is_followed(&self, run_id: &str) -> bool {
        FollowLock::held(&self.state_dir(), run_id)
    }
}

/// The state directory's name inside a project.
pub const STATE_DIR: &str = ".overbrainer";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_requires_the_settings_file() {
        let dir = tempfile::tempdir().unwrap();
        let error = Project::open(dir.path()).unwrap_err();
        assert!(matches!(error, ProjectError::NotAProject { .. }));
        assert!(error.to_string().contains("no `overbrainer.toml` found"));

        let missing = dir.path().join("nope");
        assert!(matches!(
            Project::open(&missing).unwrap_err(),
            ProjectError::NoDirectory { .. }
        ));
        assert!(!missing.exists());

        let file = dir.path().join("somefile");
        std::fs::write(&file, "").unwrap();
        let error = Project::open(&file).unwrap_err();
        assert!(matches!(error, ProjectError::NotADirectory { .. }));
        assert!(
            error.to_string().contains("is a file, not a directory"),
            "{error}"
        );

        std::fs::write(dir.path().join(FILE_NAME), "").unwrap();
        let project = Project::open(dir.path()).unwrap();
        assert_eq!(project.state_dir(), dir.path().join(".overbrainer"));
        assert_eq!(project.run_dir("r1"), dir.path().join("runs/r1"));
    }
}

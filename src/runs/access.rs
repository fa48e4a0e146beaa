//! How a command that acts on an existing run stands with the project lock (LCK-1): it
//! takes the lock, or acts beside the process that holds it where the spec allows that:
//! `train stop` places its snapshot request beside any holder (RUN-33, LCK-8), and
//! `train cancel` cancels the job on the target beside a holder that follows that very
//! run (LCK-9). Any other holder refuses (LCK-2).

use super::{Refusal, RunError};
use crate::config::Settings;
use crate::project::{LockError, Project, ProjectLock};

/// The project lock as a run command found it.
#[derive(Debug)]
pub enum Access {
    /// This process holds the project lock until this is dropped.
    Locked(ProjectLock),
    /// Another overbrainer process holds it; this one acts beside it.
    Beside {
        /// The holder's PID, when the lock names one.
        holder: Option<u32>,
    },
}

impl Access {
    /// For `train stop`: the lock, or beside any holder (RUN-33, LCK-8).
    ///
    /// # Errors
    ///
    /// [`RunError::Lock`] when the lock cannot be taken for another reason (LCK-6).
    pub fn for_stop(project: &Project) -> Result<Self, RunError> {
        match project.lock() {
            Ok(lock) => Ok(Self::Locked(lock)),
            Err(LockError::Held { pid, .. }) => Ok(Self::Beside { holder: pid }),
            Err(error) => Err(error.into()),
        }
    }

    /// For `train cancel` of run `run_id`: the lock, or beside a holder that follows that
    /// run (LCK-9). The cancel retrieves artifacts, so the project must have a
    /// `[training]` section.
    ///
    /// # Errors
    ///
    /// [`Refusal::NoTrainingForCancel`] without `[training]`;
    /// [`RunError::HeldNotFollowing`] when another process holds the project without
    /// following the run (LCK-2); [`RunError::Lock`] when the lock cannot be taken for
    /// another reason (LCK-6).
    pub fn for_cancel(
        project: &Project,
        settings: &Settings,
        run_id: &str,
    ) -> Result<Self, RunError> {
        if settings.training.is_none() {
            return Err(Refusal::NoTrainingForCancel.into());
        }
        match project.lock() {
            Ok(lock) => Ok(Self::Locked(lock)),
            Err(LockError::Held { pid, .. })
                if super::id::is_valid(run_id) && project.is_followed(run_id) =>
            {
                Ok(Self::Beside { holder: pid })
            }
            Err(lock @ LockError::Held { .. }) => Err(RunError::HeldNotFollowing {
                lock,
                run_id: run_id.to_owned(),
            }),
            Err(error) => Err(error.into()),
        }
    }

    /// Whether another process holds the lock.
    #[must_use]
    pub fn is_beside(&self) -> bool {
        matches!(self, Self::Beside { .. })
    }

    /// The holder's PID when another process holds the lock and names itself.
    #[must_use]
    pub fn holder(&self) -> Option<u32> {
        match self {
            Self::Locked(_) => None,
            Self::Beside { holder } => *holder,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> (tempfile::TempDir, Project) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("overbrainer.toml"), "").unwrap();
        let project = Project::open(dir.path()).unwrap();
        (dir, project)
    }

    fn training() -> Settings {
        Settings {
            training: Some(
                toml::from_str("target = \"here\"\nbase_model = \"b\"\nadapter = \"lora\"")
                    .unwrap(),
            ),
            ..Settings::default()
        }
    }

    #[test]
    fn stop_acts_beside_any_holder_and_cancel_only_beside_the_runs_follower() {
        let (_dir, project) = project();
        let settings = training();
        assert!(matches!(
            Access::for_cancel(&project, &Settings::default(), "r_1"),
            Err(RunError::Refused(Refusal::NoTrainingForCancel))
        ));
        let access = Access::for_stop(&project).unwrap();
        assert!(!access.is_beside() && access.holder().is_none());
        drop(access);
        assert!(matches!(
            Access::for_cancel(&project, &settings, "r_1"),
            Ok(Access::Locked(_))
        ));

        let _held = project.lock().unwrap();
        let access = Access::for_stop(&project).unwrap();
        assert!(access.is_beside());
        assert_eq!(access.holder(), Some(std::process::id()));
        let error = Access::for_cancel(&project, &settings, "r_1").unwrap_err();
        assert!(
            matches!(error, RunError::HeldNotFollowing { .. }),
            "{error:?}"
        );
        assert!(
            error.to_string().ends_with(
                "; it does not follow run `r_1`: run `overbrainer train cancel r_1` again once it ended"
            ),
            "{error}"
        );
        assert!(matches!(
            Access::for_cancel(&project, &settings, "../r_1"),
            Err(RunError::HeldNotFollowing { .. })
        ));
        let _following = project.follow_lock("r_1").unwrap();
        let access = Access::for_cancel(&project, &settings, "r_1").unwrap();
        assert_eq!(access.holder(), Some(std::process::id()));
    }
}

//! [`AnyExecutor`]: any executor, chosen at run time from the target's kind, and
//! [`JobHandle`]: the handle of a job on any of them. Each [`Executor`] method that
//! moves files is forwarded to the executor inside by one macro, so a new method is one
//! line here (the `delegate!` of the `openssh` crate's `src/session.rs`); a job is
//! started, asked and cancelled through the handle's methods ([`AnyExecutor::spawn_job`]
//! and the rest), since a Slurm job is no [`JobId`].

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{
    Container, ExecError, Executor, FileDigest, JobCommand, JobId, JobStatus, Pid, SlurmJob,
    parse_status, status_script,
};
use super::{LocalExecutor, SlurmExecutor, SshExecutor};

/// The handle of a started job on any target, as `run.json` and an export's record
/// keep it. Its JSON is the one of the handle inside (`dir`, then `pid` or
/// `slurm_job`, and `container`), so records written before the two kinds had their
/// own types read the same.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "HandleRecord", into = "HandleRecord")]
pub enum JobHandle {
    /// A process group on this machine or an SSH host ([`LocalExecutor`],
    /// [`SshExecutor`]).
    Process(JobId),
    /// A job a Slurm scheduler runs ([`SlurmExecutor`]).
    Slurm(SlurmJob),
    /// A job recorded before its start returned (an export's record is written before
    /// its job starts, so a follower killed meanwhile leaves a record to attach to):
    /// its run directory only, no process ID yet. Its status is what the run
    /// directory's markers say, and lost when they say nothing.
    Starting {
        /// Absolute run directory on the target.
        dir: String,
        /// The job's container, when it has one.
        container: Option<Container>,
    },
}

/// A [`JobHandle`] as stored.
#[derive(Serialize, Deserialize)]
struct HandleRecord {
    dir: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pid: Option<Pid>,
    container: Option<Container>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    slurm_job: Option<u64>,
}

impl TryFrom<HandleRecord> for JobHandle {
    type Error = String;

    fn try_from(record: HandleRecord) -> Result<Self, String> {
        let HandleRecord {
            dir,
            pid,
            container,
            slurm_job,
        } = record;
        Ok(match (pid, slurm_job) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "the job in `{dir}` has both a process ID and a Slurm job ID"
                ));
            }
            (Some(pid), None) => Self::Process(JobId {
                dir,
                pid,
                container,
            }),
            (None, Some(slurm_job)) => Self::Slurm(SlurmJob {
                dir,
                container,
                slurm_job,
            }),
            (None, None) => Self::Starting { dir, container },
        })
    }
}

impl From<JobHandle> for HandleRecord {
    fn from(handle: JobHandle) -> Self {
        match handle {
            JobHandle::Process(job) => Self {
                dir: job.dir,
                pid: Some(job.pid),
                container: job.container,
                slurm_job: None,
            },
            JobHandle::Slurm(job) => Self {
                dir: job.dir,
                pid: None,
                container: job.container,
                slurm_job: Some(job.slurm_job),
            },
            JobHandle::Starting { dir, container } => Self {
                dir,
                pid: None,
                container,
                slurm_job: None,
            },
        }
    }
}

impl From<JobId> for JobHandle {
    fn from(job: JobId) -> Self {
        Self::Process(job)
    }
}

impl From<SlurmJob> for JobHandle {
    fn from(job: SlurmJob) -> Self {
        Self::Slurm(job)
    }
}

impl JobHandle {
    /// Absolute run directory on the target.
    #[must_use]
    pub fn dir(&self) -> &str {
        match self {
            Self::Process(job) => &job.dir,
            Self::Slurm(job) => &job.dir,
            Self::Starting { dir, .. } => dir,
        }
    }

    /// The run directory, to rewrite (a record moved between machines).
    pub fn dir_mut(&mut self) -> &mut String {
        match self {
            Self::Process(job) => &mut job.dir,
            Self::Slurm(job) => &mut job.dir,
            Self::Starting { dir, .. } => dir,
        }
    }

    /// The job's container, when it has one.
    #[must_use]
    pub fn container(&self) -> Option<&Container> {
        match self {
            Self::Process(job) => job.container.as_ref(),
            Self::Slurm(job) => job.container.as_ref(),
            Self::Starting { container, .. } => container.as_ref(),
        }
    }

    /// The process ID of the job's leader, for a [`JobHandle::Process`].
    #[must_use]
    pub fn pid(&self) -> Option<Pid> {
        match self {
            Self::Process(job) => Some(job.pid),
            Self::Slurm(_) | Self::Starting { .. } => None,
        }
    }

    /// The Slurm job ID, for a [`JobHandle::Slurm`].
    #[must_use]
    pub fn slurm_job(&self) -> Option<u64> {
        match self {
            Self::Slurm(job) => Some(job.slurm_job),
            Self::Process(_) | Self::Starting { .. } => None,
        }
    }
}

/// Either executor, chosen at run time from the target's kind.
#[derive(Debug)]
pub enum AnyExecutor {
    /// This machine.
    Local(LocalExecutor),
    /// An SSH host (or a Runpod pod).
    Ssh(SshExecutor),
    /// A Slurm cluster through its login node (issue 19); boxed, it is the largest.
    Slurm(Box<SlurmExecutor>),
}

/// Implements each listed `async fn` of [`Executor`] by calling the same method, with
/// the same arguments, on the executor inside.
macro_rules! forward {
    ($(async fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        $(
            async fn $name(&self $(, $arg: $ty)*) -> $ret {
                match self {
                    Self::Local(executor) => executor.$name($($arg),*).await,
                    Self::Ssh(executor) => executor.$name($($arg),*).await,
                    Self::Slurm(executor) => executor.$name($($arg),*).await,
                }
            }
        )*
    };
}

impl Executor for AnyExecutor {
    fn workdir(&self) -> &str {
        match self {
            Self::Local(executor) => executor.workdir(),
            Self::Ssh(executor) => executor.workdir(),
            Self::Slurm(executor) => executor.workdir(),
        }
    }

    fn time_scale(&self) -> crate::env::TimeScale {
        match self {
            Self::Local(executor) => executor.time_scale(),
            Self::Ssh(executor) => executor.time_scale(),
            Self::Slurm(executor) => executor.time_scale(),
        }
    }

    forward! {
        async fn claim(&self, dir: &str, owner: &str) -> Result<bool, ExecError>;
        async fn upload(&self, local: &Path, remote: &str, skip: &[String]) -> Result<(), ExecError>;
        async fn read_from(&self, path: &str, offset: u64, limit: u64) -> Result<Vec<u8>, ExecError>;
        async fn download(&self, remote: &str, local: &Path, entries: &[String], exclude: &[String]) -> Result<(), ExecError>;
        async fn manifest(&self, remote: &str, entries: &[String], exclude: &[String]) -> Result<Vec<FileDigest>, ExecError>;
        async fn probe(&self, script: &str) -> Result<Vec<u8>, ExecError>;
        async fn put_file(&self, path: &str, content: &str) -> Result<(), ExecError>;
    }

    /// Starts `job` on a local or SSH target; refused on a Slurm target, whose jobs
    /// have no process ID when submitted (see [`AnyExecutor::spawn_job`]).
    async fn spawn(&self, job: &JobCommand) -> Result<JobId, ExecError> {
        match self {
            Self::Local(executor) => executor.spawn(job).await,
            Self::Ssh(executor) => executor.spawn(job).await,
            Self::Slurm(_) => Err(submitted(&job.dir)),
        }
    }

    /// What `job` is doing on a local or SSH target; refused on a Slurm target (see
    /// [`AnyExecutor::job_status`]).
    async fn status(&self, job: &JobId) -> Result<JobStatus, ExecError> {
        match self {
            Self::Local(executor) => executor.status(job).await,
            Self::Ssh(executor) => executor.status(job).await,
            Self::Slurm(_) => Err(submitted(&job.dir)),
        }
    }

    /// Stops `job` on a local or SSH target; refused on a Slurm target (see
    /// [`AnyExecutor::cancel_job`]).
    async fn cancel(&self, job: &JobId) -> Result<(), ExecError> {
        match self {
            Self::Local(executor) => executor.cancel(job).await,
            Self::Ssh(executor) => executor.cancel(job).await,
            Self::Slurm(_) => Err(submitted(&job.dir)),
        }
    }
}

/// The refusal of a process handle on a Slurm target.
fn submitted(dir: &str) -> ExecError {
    ExecError::Protocol(format!(
        "the job in `{dir}` runs on a Slurm target: its handle is a Slurm job, not a process"
    ))
}

/// The refusal of a handle that another kind of target made.
fn mismatch(job: &JobHandle) -> ExecError {
    ExecError::Protocol(format!(
        "the job in `{}` was started on another kind of target",
        job.dir()
    ))
}

impl AnyExecutor {
    /// Starts `job` ([`Executor::spawn`]), or on a Slurm target submits it
    /// ([`SlurmExecutor::submit`]), and returns its handle.
    ///
    /// # Errors
    ///
    /// As [`Executor::spawn`] and [`SlurmExecutor::submit`].
    pub async fn spawn_job(&self, job: &JobCommand) -> Result<JobHandle, ExecError> {
        match self {
            Self::Local(executor) => executor.spawn(job).await.map(JobHandle::Process),
            Self::Ssh(executor) => executor.spawn(job).await.map(JobHandle::Process),
            Self::Slurm(executor) => executor.submit(job).await.map(JobHandle::Slurm),
        }
    }

    /// What `job` is doing ([`Executor::status`], [`SlurmExecutor::status`]). A
    /// [`JobHandle::Starting`] reads from its run directory's markers, and as lost
    /// when they settle nothing: no process can be named its own.
    ///
    /// # Errors
    ///
    /// As [`Executor::status`]; [`ExecError::Protocol`] for a handle another kind of
    /// target made.
    pub async fn job_status(&self, job: &JobHandle) -> Result<JobStatus, ExecError> {
        match (self, job) {
            (Self::Local(executor), JobHandle::Process(id)) => executor.status(id).await,
            (Self::Ssh(executor), JobHandle::Process(id)) => executor.status(id).await,
            (Self::Slurm(executor), JobHandle::Slurm(id)) => executor.status(id).await,
            (_, JobHandle::Starting { dir, .. }) => {
                let output = self
                    .probe(&status_script(dir, 0))
                    .await
                    .map_err(|error| error.for_action("status"))?;
                parse_status(&String::from_utf8_lossy(&output))
            }
            _ => Err(mismatch(job)),
        }
    }

    /// Stops `job` ([`Executor::cancel`], [`SlurmExecutor::cancel`]). A
    /// [`JobHandle::Starting`] names no process to signal: nothing is done.
    ///
    /// # Errors
    ///
    /// As [`Executor::cancel`]; [`ExecError::Protocol`] for a handle another kind of
    /// target made.
    pub async fn cancel_job(&self, job: &JobHandle) -> Result<(), ExecError> {
        match (self, job) {
            (Self::Local(executor), JobHandle::Process(id)) => executor.cancel(id).await,
            (Self::Ssh(executor), JobHandle::Process(id)) => executor.cancel(id).await,
            (Self::Slurm(executor), JobHandle::Slurm(id)) => executor.cancel(id).await,
            (_, JobHandle::Starting { .. }) => Ok(()),
            _ => Err(mismatch(job)),
        }
    }

    /// The processes of `job` its last cancel left behind ([`Executor::leftovers`]).
    ///
    /// # Errors
    ///
    /// As [`Executor::leftovers`].
    pub async fn job_leftovers(&self, job: &JobHandle) -> Result<Vec<u32>, ExecError> {
        match (self, job) {
            (Self::Local(executor), JobHandle::Process(id)) => executor.leftovers(id).await,
            (Self::Ssh(executor), JobHandle::Process(id)) => executor.leftovers(id).await,
            (Self::Slurm(executor), JobHandle::Slurm(id)) => executor.leftovers(id).await,
            (_, JobHandle::Starting { .. }) => Ok(Vec::new()),
            _ => Err(mismatch(job)),
        }
    }

    /// A system sample ([`crate::system::probe_script`]) of the machine `job` runs on,
    /// its run directory `dir`: the target itself, or on a Slurm target the job's first
    /// node through the scheduler ([`SlurmExecutor::sample`], issue 33). `None` when
    /// there is no machine to sample yet (a job waiting in the queue) or any more.
    ///
    /// # Errors
    ///
    /// An [`ExecError`] when the probe could not run.
    pub async fn sample(&self, job: &JobHandle, dir: &str) -> Result<Option<Vec<u8>>, ExecError> {
        let probe = crate::system::probe_script(dir);
        match (self, job) {
            (Self::Slurm(executor), JobHandle::Slurm(id)) => executor.sample(id, &probe).await,
            (Self::Slurm(_), _) => Err(mismatch(job)),
            (Self::Local(_) | Self::Ssh(_), _) => self.probe(&probe).await.map(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_of_both_kinds_read_back_as_written() -> Result<(), Box<dyn std::error::Error>> {
        // As `run.json` held them before the two handles had their own types.
        let local = r#"{"dir":"/w/r1","pid":42,"container":null}"#;
        let slurm = r#"{"dir":"/w/r2","container":{"engine":"podman","name":"overbrainer-r2"},"slurm_job":7}"#;
        let starting = r#"{"dir":"/w/r3","pid":null,"container":null,"slurm_job":null}"#;
        let read: JobHandle = serde_json::from_str(local)?;
        assert_eq!(read.pid().map(Pid::get), Some(42));
        assert_eq!(serde_json::to_string(&read)?, local);
        let read: JobHandle = serde_json::from_str(slurm)?;
        assert_eq!(read.slurm_job(), Some(7));
        assert_eq!(read.pid(), None);
        assert_eq!(serde_json::to_string(&read)?, slurm);
        let read: JobHandle = serde_json::from_str(starting)?;
        assert!(matches!(&read, JobHandle::Starting { dir, .. } if dir == "/w/r3"));
        assert!(
            serde_json::from_str::<JobHandle>(r#"{"dir":"/w","pid":1,"container":null}"#).is_err()
        );
        Ok(())
    }

    #[tokio::test]
    async fn any_executor_delegates_with_the_limit() -> Result<(), Box<dyn std::error::Error>> {
        let root = tempfile::tempdir()?;
        let executor = AnyExecutor::Local(LocalExecutor::new(root.path())?);
        let file = Path::new(executor.workdir()).join("data.txt");
        std::fs::write(&file, "0123456789")?;
        let path = file.to_string_lossy().into_owned();
        assert_eq!(executor.read_from(&path, 2, 3).await?, b"234");
        let put = Path::new(executor.workdir()).join("r1/.pod/snapshot.request");
        let put = put.to_string_lossy().into_owned();
        executor.put_file(&put, "deadline").await?;
        executor.put_file(&put, "cost").await?;
        assert_eq!(std::fs::read_to_string(&put)?, "cost");
        Ok(())
    }
}

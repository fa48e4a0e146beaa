//! [`AnyExecutor`]: either executor, chosen at run time from the target's kind. Each
//! [`Executor`] method is forwarded to the executor inside by one macro, so a new method
//! is one line here (the `delegate!` of the `openssh` crate's `src/session.rs`).

use std::path::Path;

use super::{ExecError, Executor, FileDigest, JobCommand, JobId, JobStatus};
use super::{LocalExecutor, SlurmExecutor, SshExecutor};

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
        async fn spawn(&self, job: &JobCommand) -> Result<JobId, ExecError>;
        async fn read_from(&self, path: &str, offset: u64, limit: u64) -> Result<Vec<u8>, ExecError>;
        async fn status(&self, job: &JobId) -> Result<JobStatus, ExecError>;
        async fn cancel(&self, job: &JobId) -> Result<(), ExecError>;
        async fn download(&self, remote: &str, local: &Path, entries: &[String], exclude: &[String]) -> Result<(), ExecError>;
        async fn manifest(&self, remote: &str, entries: &[String], exclude: &[String]) -> Result<Vec<FileDigest>, ExecError>;
        async fn probe(&self, script: &str) -> Result<Vec<u8>, ExecError>;
        async fn put_file(&self, path: &str, content: &str) -> Result<(), ExecError>;
    }
}

impl AnyExecutor {
    /// A system sample ([`crate::system::probe_script`]) of the machine `job` runs on,
    /// its run directory `dir`: the target itself, or on a Slurm target the job's first
    /// node through the scheduler ([`SlurmExecutor::sample`], issue 33). `None` when
    /// there is no machine to sample yet (a job waiting in the queue) or any more.
    ///
    /// # Errors
    ///
    /// An [`ExecError`] when the probe could not run.
    pub async fn sample(&self, job: &JobId, dir: &str) -> Result<Option<Vec<u8>>, ExecError> {
        let probe = crate::system::probe_script(dir);
        match self {
            Self::Slurm(executor) => executor.sample(job, &probe).await,
            Self::Local(_) | Self::Ssh(_) => self.probe(&probe).await.map(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

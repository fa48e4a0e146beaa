//! [`SlurmExecutor`]: the executor of a Slurm target, over its login node. It moves
//! files as the [`Executor`] of its login node does; its jobs are [`SlurmJob`]s.

use std::path::Path;
use std::time::Duration;

use secrecy::ExposeSecret;

use super::SlurmJob;
use super::state::{self, Scheduler, SchedulerJob};
use super::submit::{self, SlurmOptions};
use crate::env::TimeScale;
use crate::exec::{
    CANCEL_FILE, ExecError, Executor, FileDigest, JobCommand, JobStatus, LEFTOVERS_FILE,
    LocalExecutor, SshExecutor, check_job_env,
};
use crate::shell::quote;

/// The login node: this machine, or an SSH host.
#[derive(Debug)]
pub enum Login {
    /// This machine submits.
    Local(LocalExecutor),
    /// The login node over SSH.
    Ssh(SshExecutor),
}

/// Most time a cancel waits for the scheduler to end the job after `scancel`: Slurm
/// sends `SIGTERM`, then `SIGKILL` after the cluster's `KillWait` (30 s by default). A
/// bound against a controller that does not answer, not a lifecycle rule: it stays real.
const CANCEL_WAIT: Duration = Duration::from_secs(180);

/// How often a cancel asks the scheduler whether the job ended.
const CANCEL_POLL: Duration = Duration::from_millis(250);

/// Jobs submitted with `sbatch` on a Slurm cluster (issue 19).
///
/// Files, probes and claims go through the login node, with the same contracts as
/// [`Executor`]'s methods of the same names. [`SlurmExecutor::submit`] writes the
/// batch script (the job wrapper, see `submit::batch_script`) to the run directory
/// and submits it; it returns as soon as Slurm accepted it, with a [`SlurmJob`]: the
/// Slurm job ID and no process ID (the job may wait in the queue). The job's
/// secrets reach `sbatch`'s environment on the launcher's standard input, and the
/// job's through `--export=ALL`; Slurm keeps a job's environment in its controller's
/// state directory until the job is purged, like any job's on that cluster.
/// [`SlurmExecutor::status`] reads the scheduler and the markers in one probe
/// (`state::combine`); [`SlurmExecutor::cancel`] is `scancel`.
#[derive(Debug)]
pub struct SlurmExecutor {
    login: Login,
    options: SlurmOptions,
    /// The scheduler's note at the last [`SlurmExecutor::status`].
    last_note: std::sync::Mutex<Option<String>>,
    /// Whether the last [`SlurmExecutor::status`] found the job waiting in the queue, with
    /// the scheduler's word on why.
    last_queued: std::sync::Mutex<Option<String>>,
}

impl SlurmExecutor {
    /// An executor submitting through `login` with `options`.
    #[must_use]
    pub fn new(login: Login, options: SlurmOptions) -> Self {
        Self {
            login,
            options,
            last_note: std::sync::Mutex::new(None),
            last_queued: std::sync::Mutex::new(None),
        }
    }

    /// The scheduler's note ([`SchedulerJob::note`]) as the last [`SlurmExecutor::status`]
    /// read it: a follower shows it without asking the scheduler again. `None` before
    /// any status, or when the scheduler had nothing to add.
    #[must_use]
    pub fn last_note(&self) -> Option<String> {
        self.last_note
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The scheduler's word on the job as the last [`SlurmExecutor::status`] found it
    /// waiting in the queue ([`SchedulerJob::queued`], `pending on Slurm (reason)`);
    /// `None` when it ran, ended, or the scheduler did not say. [`SlurmExecutor::status`]
    /// reads such a job as running (the executor's contract knows no queue); a
    /// follower records the run `pending` and starts no stall clock (issue 33).
    #[must_use]
    pub fn last_queued(&self) -> Option<String> {
        self.last_queued
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The options it submits with.
    #[must_use]
    pub fn options(&self) -> &SlurmOptions {
        &self.options
    }

    /// The login node.
    #[must_use]
    pub fn login(&self) -> &Login {
        &self.login
    }

    async fn command(
        &self,
        action: &'static str,
        script: &str,
        stdin: &[u8],
    ) -> Result<Vec<u8>, ExecError> {
        match &self.login {
            Login::Local(login) => login.command(action, script, stdin).await,
            Login::Ssh(login) => login.command(action, script, stdin).await,
        }
    }

    /// The cluster's partitions (`sinfo`), to check `partition` before any job.
    ///
    /// # Errors
    ///
    /// [`ExecError::Command`] (action `sinfo`) when `sinfo` fails; another
    /// [`ExecError`] when the login node cannot be reached.
    pub async fn partitions(&self) -> Result<Vec<String>, ExecError> {
        let output = self
            .probe("sinfo -h -o %R")
            .await
            .map_err(|error| error.for_action("sinfo"))?;
        Ok(state::parse_partitions(&String::from_utf8_lossy(&output)))
    }

    /// What the scheduler and the markers say of `job`.
    ///
    /// # Errors
    ///
    /// An [`ExecError`] when the login node cannot be reached or answers nonsense.
    pub async fn scheduler(
        &self,
        job: &SlurmJob,
    ) -> Result<(Scheduler, state::Markers), ExecError> {
        let id = job.slurm_job;
        let output = self
            .probe(&state::status_script(&job.dir, id))
            .await
            .map_err(|error| error.for_action("status"))?;
        state::parse_status(&String::from_utf8_lossy(&output))
    }

    /// A system sample of the node `job` runs on (issue 33): `probe` (a
    /// [`crate::system::probe_script`]) runs inside the job's allocation on its first
    /// node, through `srun --jobid=ID --overlap` from the login node, bounded by
    /// `state::SAMPLE_TIMEOUT_SECONDS`; its output starts with the step's `slurm_job`
    /// line. `None` while the job does not run (queued, ended): a queued job has no
    /// node, and the login node is not the job's machine.
    ///
    /// # Errors
    ///
    /// [`ExecError::Command`] (action `sample`) when `srun` fails or times out; another
    /// [`ExecError`] when the login node cannot be reached.
    pub async fn sample(&self, job: &SlurmJob, probe: &str) -> Result<Option<Vec<u8>>, ExecError> {
        let id = job.slurm_job;
        let output = self
            .command("sample", &state::sample_script(id, probe), &[])
            .await?;
        if output.starts_with(state::NOT_RUNNING.as_bytes()) {
            return Ok(None);
        }
        Ok(Some(output))
    }

    /// The scheduler's word on `job` beyond its status ([`SchedulerJob::note`]): why
    /// it waits, or why Slurm ended it. `None` when the scheduler has nothing to add
    /// or no longer knows the job.
    ///
    /// # Errors
    ///
    /// An [`ExecError`] when the login node cannot be reached.
    pub async fn note(&self, job: &SlurmJob) -> Result<Option<String>, ExecError> {
        Ok(match self.scheduler(job).await?.0 {
            Scheduler::Known(known) => SchedulerJob::note(&known),
            Scheduler::Forgotten | Scheduler::Unreachable(_) => None,
        })
    }
}

/// Calls the same method on the login node's executor.
macro_rules! login {
    ($self:ident.$name:ident($($arg:expr),*)) => {
        match &$self.login {
            Login::Local(login) => login.$name($($arg),*).await,
            Login::Ssh(login) => login.$name($($arg),*).await,
        }
    };
}

/// The login node's [`Executor`] methods, and the job's own.
impl SlurmExecutor {
    /// [`Executor::workdir`] of the login node.
    #[must_use]
    pub fn workdir(&self) -> &str {
        match &self.login {
            Login::Local(login) => login.workdir(),
            Login::Ssh(login) => login.workdir(),
        }
    }

    /// [`Executor::time_scale`] of the login node.
    #[must_use]
    pub fn time_scale(&self) -> TimeScale {
        match &self.login {
            Login::Local(login) => login.time_scale(),
            Login::Ssh(login) => login.time_scale(),
        }
    }

    /// [`Executor::claim`] of the login node.
    ///
    /// # Errors
    ///
    /// As the login node's.
    pub async fn claim(&self, dir: &str, owner: &str) -> Result<bool, ExecError> {
        login!(self.claim(dir, owner))
    }

    /// [`Executor::upload`] of the login node.
    ///
    /// # Errors
    ///
    /// As the login node's.
    pub async fn upload(
        &self,
        local: &Path,
        remote: &str,
        skip: &[String],
    ) -> Result<(), ExecError> {
        login!(self.upload(local, remote, skip))
    }

    /// Submits `job` with `sbatch` and returns its handle as soon as Slurm accepted
    /// it (the job may wait in the queue). The secrets reach `sbatch` on the
    /// launcher's standard input, never its command line.
    ///
    /// # Errors
    ///
    /// [`ExecError::InvalidSecret`], naming the variable only, as
    /// [`Executor::spawn`]; [`ExecError::Command`] (action `sbatch`) when Slurm
    /// refused the job; another [`ExecError`] when the login node cannot be reached.
    pub async fn submit(&self, job: &JobCommand) -> Result<SlurmJob, ExecError> {
        check_job_env(&job.secrets)?;
        let mut input = String::new();
        for (_, value) in &job.secrets {
            input.push_str(value.expose_secret());
            input.push('\n');
        }
        let script = submit::launcher(&self.options, job, self.time_scale());
        let output = self.command("sbatch", &script, input.as_bytes()).await;
        drop(input);
        let id = submit::parse_submitted(&String::from_utf8_lossy(&output?))?;
        Ok(SlurmJob {
            dir: job.dir.clone(),
            container: job.container.clone(),
            slurm_job: id,
        })
    }

    /// [`Executor::read_from`] of the login node.
    ///
    /// # Errors
    ///
    /// As the login node's.
    pub async fn read_from(
        &self,
        path: &str,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<u8>, ExecError> {
        login!(self.read_from(path, offset, limit))
    }

    /// What `job` is doing, from the scheduler and the run directory's markers
    /// (`state::combine`): a job waiting in the queue reads as running.
    ///
    /// # Errors
    ///
    /// [`ExecError::Command`] (action `status`) when the controller did not answer
    /// and the markers do not settle it; another [`ExecError`] when the login node
    /// cannot be reached.
    pub async fn status(&self, job: &SlurmJob) -> Result<JobStatus, ExecError> {
        let (scheduler, markers) = self.scheduler(job).await?;
        if let Scheduler::Known(known) = &scheduler {
            *self
                .last_note
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = known.note();
        }
        *self
            .last_queued
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = match &scheduler {
            Scheduler::Known(known) => known.queued(),
            Scheduler::Forgotten | Scheduler::Unreachable(_) => None,
        };
        state::combine(&scheduler, &markers).ok_or_else(|| ExecError::Command {
            action: "status",
            message: match scheduler {
                Scheduler::Unreachable(message) => format!("scontrol: {message}"),
                _ => "the Slurm controller did not answer".to_owned(),
            },
        })
    }

    /// `scancel`: a job that ended by itself is left as it is; otherwise
    /// `cancelling` first, `scancel ID`, a wait until the scheduler has ended the
    /// job (its `KillWait` between `SIGTERM` and `SIGKILL`), then [`CANCEL_FILE`].
    /// A job in a container has its container stopped and removed first, on its node,
    /// in a step of its allocation (`state::cancel_script`): Slurm's signals reach the
    /// engine's client, not the container.
    ///
    /// # Errors
    ///
    /// [`ExecError::Command`] (action `cancel`) when the job did not end in time after
    /// `scancel`; another [`ExecError`] when the login node cannot be reached.
    pub async fn cancel(&self, job: &SlurmJob) -> Result<(), ExecError> {
        let id = job.slurm_job;
        match self.status(job).await? {
            JobStatus::Exited(_) | JobStatus::Cancelled => return Ok(()),
            JobStatus::Running | JobStatus::Lost => {}
        }
        let dir = quote(&job.dir);
        self.command(
            "cancel",
            &state::cancel_script(&job.dir, id, job.container.as_ref()),
            &[],
        )
        .await?;
        let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
        loop {
            let (scheduler, _) = self.scheduler(job).await?;
            let ended = match &scheduler {
                Scheduler::Known(known) => !known.state.is_active(),
                Scheduler::Forgotten => true,
                Scheduler::Unreachable(_) => false,
            };
            if ended {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ExecError::Command {
                    action: "cancel",
                    message: format!(
                        "Slurm job {id} did not end within {} s of `scancel`",
                        CANCEL_WAIT.as_secs()
                    ),
                });
            }
            tokio::time::sleep(CANCEL_POLL).await;
        }
        self.command(
            "cancel",
            &format!("d={dir}\n[ -d \"$d\" ] || exit 0\n: > \"$d/{CANCEL_FILE}\"\n"),
            &[],
        )
        .await?;
        Ok(())
    }

    /// The processes its last cancel left behind, as [`Executor::leftovers`] reads
    /// them from [`LEFTOVERS_FILE`].
    ///
    /// # Errors
    ///
    /// An [`ExecError`] when the file cannot be read or holds anything but process
    /// IDs.
    pub async fn leftovers(&self, job: &SlurmJob) -> Result<Vec<u32>, ExecError> {
        let path = format!("{}/{LEFTOVERS_FILE}", job.dir);
        let bytes = self.read_from(&path, 0, 64 * 1024).await?;
        crate::exec::script::parse_pids(&String::from_utf8_lossy(&bytes)).ok_or_else(|| {
            ExecError::Protocol(format!("`{path}` holds something else than process IDs"))
        })
    }

    /// [`Executor::download`] of the login node.
    ///
    /// # Errors
    ///
    /// As the login node's.
    pub async fn download(
        &self,
        remote: &str,
        local: &Path,
        entries: &[String],
        exclude: &[String],
    ) -> Result<(), ExecError> {
        login!(self.download(remote, local, entries, exclude))
    }

    /// [`Executor::manifest`] of the login node.
    ///
    /// # Errors
    ///
    /// As the login node's.
    pub async fn manifest(
        &self,
        remote: &str,
        entries: &[String],
        exclude: &[String],
    ) -> Result<Vec<FileDigest>, ExecError> {
        login!(self.manifest(remote, entries, exclude))
    }

    /// [`Executor::probe`] of the login node.
    ///
    /// # Errors
    ///
    /// As the login node's.
    pub async fn probe(&self, script: &str) -> Result<Vec<u8>, ExecError> {
        login!(self.probe(script))
    }

    /// [`Executor::put_file`] of the login node.
    ///
    /// # Errors
    ///
    /// As the login node's.
    pub async fn put_file(&self, path: &str, content: &str) -> Result<(), ExecError> {
        login!(self.put_file(path, content))
    }
}

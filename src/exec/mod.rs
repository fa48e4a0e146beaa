//! The execution layer: starting training jobs on a target, watching and stopping
//! them, and moving files to and from the target. [`Executor`] is the contract;
//! [`LocalExecutor`] (this machine) and [`SshExecutor`] (OpenSSH) implement it.
//!
//! Jobs do not depend on the overbrainer process that started them. Each job is the
//! leader of its own process group (a local process group, or a new session from
//! `setsid nohup` over SSH) and keeps its whole state in its run directory: its
//! output in [`JOB_LOG`], its process ID in [`PID_FILE`], its leader's identity in
//! `job.start`, its run marker in `job.marker`, and its exit code in [`EXIT_FILE`]
//! once it ends. Any later overbrainer process, given only that directory and the
//! [`JobId`], can ask its status, follow its files or cancel it.
//!
//! The job's processes are its process group, when the group's leader is the
//! recorded one (boot ID and start time from `/proc`, or `ps -o lstart=` where
//! `/proc` is missing), and every process whose environment carries its run marker
//! ([`RUN_MARKER_VAR`], found through `/proc/<pid>/environ`), which catches workers
//! that left the group with `setsid`. Zombies are not processes of the job: a group
//! left with zombies only, under a `PID 1` that does not reap them, is gone. Without
//! a recorded identity the group is never the job's, so a process ID that names
//! another process is never read as the job nor signalled.
//!
//! This layer runs what it is given: a job's script and environment come from above
//! (a training job's from `train::job`), and nothing here knows which tools a job runs.
//!
//! Files of this module: `script/` (the POSIX shell scripts every target runs: the
//! shared shell functions, the job wrapper, status, cancel and claim), `digest.rs`
//! (SHA-256 manifests), `blobs/` (the content-addressed blob cache on a target: local
//! digests, and the scripts that check and prune blobs), `lines.rs` (following a file line by line), `tar.rs` (the local
//! side of transfers), `runtime/` (how one command runs on the target: a venv's
//! environment, or a container engine's command line), `engine.rs` (the bounded engine
//! calls that stop a job's container), `scripted.rs` (the executor methods that are
//! one script and its parsed answer, shared by both executors), `local.rs` and `ssh/`
//! (the two executors; `ssh/` by concern: destination, bounded waits, control socket,
//! the OpenSSH master, the executor), `any.rs` ([`AnyExecutor`], either one, chosen at
//! run time).

mod any;
pub mod blobs;
mod digest;
mod editor;
mod engine;
mod error;
mod keygen;
mod lines;
mod local;
mod runtime;
mod script;
#[cfg(test)]
pub(crate) use crate::shell::shellcheck;
mod slurm;
mod ssh;
mod tar;

use std::future::Future;
use std::path::Path;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

pub use crate::shell::quote;
pub use any::{AnyExecutor, JobHandle};
pub use digest::{
    FileDigest, glob_match, local_manifest, manifest_script, parse_manifest, sha256_file,
};
pub use editor::{EditorEnd, run_editor, run_editor_until};
pub use engine::{ENGINE_ENV, ENGINE_ENV_DIR, container_stop};
pub(crate) use error::or_empty;
pub use error::{ExecError, pid_list};
pub use keygen::{KEYGEN, ed25519_keygen};
pub use lines::{LineStream, MAX_TAIL_READ, complete_lines};
pub use local::{LocalExecutor, STRIPPED_ENV_PREFIXES};
pub use runtime::{
    CONTAINER_HF_HOME, CONTAINER_RUN_DIR, CONTAINER_TOOLS_CACHE, JobRuntime, JobSpec,
    container_prelude, shell_path, stage_command,
};
pub use script::{
    DeadlineSignal, GROUP_SIGNAL, batch_job_script, cancel_script, claim_script, job_script,
    parse_cancel, parse_status, status_script,
};
pub use slurm::{
    BATCH_FILE, Login, Markers, SLURM_OUT, Scheduler, SchedulerJob, SchedulerState, SlurmExecutor,
    SlurmJob, SlurmOptions,
};
pub use ssh::{
    CONNECT_TIMEOUT, KEEPALIVE, KEEPALIVE_COUNT, MASTER_IDLE, MAX_CONTROL_PATH, PodEndpoint,
    REQUIRED_TOOLS, SshDestination, SshError, SshExecutor, SshTimeouts, control_dirs,
};
/// The name prefix of a download's staging directory beside its destination.
pub(crate) use tar::STAGING_PREFIX as DOWNLOAD_STAGING_PREFIX;

use crate::config::Engine;
use crate::env::TimeScale;

/// The job's standard output and error, appended, in the run directory.
pub const JOB_LOG: &str = "job.log";
/// The run directory's file holding the process ID of the job's leader (which is also
/// its process group ID), one decimal line.
pub const PID_FILE: &str = "job.pid";
/// The run directory's file holding the job's exit code, one decimal line, written
/// (through a rename) only when the job ends by itself.
pub const EXIT_FILE: &str = "exit_code";
/// The marker [`Executor::cancel`] creates in the run directory before it sends any
/// signal. With this marker and without [`CANCEL_FILE`], [`Executor::status`] says
/// [`JobStatus::Running`] while the process group lives, even when [`EXIT_FILE`]
/// already exists (a container stopped by the cancel lets its wrapper write an exit
/// code before the group is gone). Once the group is gone it says
/// [`JobStatus::Cancelled`] when no [`EXIT_FILE`] was written, without waiting for
/// [`CANCEL_FILE`].
///
/// With the group gone, an [`EXIT_FILE`] beats this marker on purpose: a cancel
/// interrupted just after creating it would otherwise leave it for good, and a job
/// that later ended normally would wrongly read as cancelled.
pub const CANCELLING_FILE: &str = "cancelling";
/// The marker [`Executor::cancel`] creates in the run directory last, after it saw
/// the job's processes gone or wrote those left to [`LEFTOVERS_FILE`]. From then on [`Executor::status`] says
/// [`JobStatus::Cancelled`] whatever else is there: an [`EXIT_FILE`] written during
/// the cancel, or a live process that reuses the job's process ID.
pub const CANCEL_FILE: &str = "cancelled";
/// The run directory's file that [`Executor::cancel`] writes, one process ID a line,
/// when some of the job's processes were still there after `SIGKILL` (a process in
/// uninterruptible sleep, such as one stuck in a GPU driver or frozen by a cgroup
/// freezer, or one owned by another user). It is written before [`CANCEL_FILE`] and
/// removed by a later cancel that finds none left; [`Executor::leftovers`] reads it.
pub const LEFTOVERS_FILE: &str = "cancel.leftovers";
/// The run directory's file holding the ID of the container the job itself started,
/// written by the engine's client (`<engine> run --cidfile`, see [`stage_command`])
/// once it created the container, and removed before each stage's `run`. It lives in
/// the job's own directory (the one its wrapper starts in), so a `train merge` job's
/// container is recorded in its `merge-<n>/`. [`Executor::cancel`] stops and removes
/// only the container of this ID, never one it finds by name: a container named
/// `overbrainer-<run-id>` that the job did not start (one started by hand, or by
/// another tool) is left alone.
pub const CONTAINER_ID_FILE: &str = "job.container";
/// The environment variable that holds a job's run marker in every process of the
/// job, set by the job's wrapper itself. Its name is outside the prefixes a local job
/// never inherits (`OVERBRAINER_`, `VAULT_`), so a job's environment holds no
/// variable of either prefix but its own secrets. A process that clears its
/// environment, or a container started through an engine's daemon, does not carry it.
pub const RUN_MARKER_VAR: &str = "OB_RUN_MARKER";
/// The marker [`Executor::claim`] creates with exclusive creation in a new run
/// directory on the target. Its one line is the owner value of the run that owns
/// the directory.
pub const CLAIM_FILE: &str = ".claim";

/// The container a job runs in; [`Executor::cancel`] stops it through its engine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Container {
    /// Docker or Podman.
    pub engine: Engine,
    /// Name of the container, as given to `<engine> run --name`.
    pub name: String,
}

/// Refuses secrets that no target could hand to a job unchanged (TGT-8). A name must
/// be non-empty, made of ASCII letters, digits and `_`, and not start with a digit.
/// A value must not contain `\n`, `\r` or NUL: over SSH each value is one line read
/// by the remote shell, and an environment cannot hold a NUL byte.
///
/// # Errors
///
/// [`ExecError::InvalidSecret`] with the name (never the value) of the first secret
/// refused.
fn check_job_env(secrets: &[(String, SecretString)]) -> Result<(), ExecError> {
    for (name, value) in secrets {
        let valid_name = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && name.chars().next().is_some_and(|c| !c.is_ascii_digit());
        if !valid_name || value.expose_secret().contains(['\n', '\r', '\0']) {
            return Err(ExecError::InvalidSecret(name.clone()));
        }
    }
    Ok(())
}

/// The process ID of a job's leader; never `0` or `1`. Signalling group `0` means
/// the caller's own group, and `1` is `init` (or a container's first process), so
/// neither can ever name one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Pid(u32);

impl Pid {
    /// Accepts any process ID above `1`.
    ///
    /// # Errors
    ///
    /// [`ExecError::Protocol`] for `0` and `1`.
    pub fn new(pid: u32) -> Result<Self, ExecError> {
        if pid <= 1 {
            return Err(ExecError::Protocol(format!("invalid process id {pid}")));
        }
        Ok(Self(pid))
    }

    /// The process ID as a number.
    #[must_use]
    pub fn get(self) -> u32 {
        self.0
    }
}

impl<'de> Deserialize<'de> for Pid {
    fn deserialize<D>(deserializer: D) -> Result<Self, D::Error>
    where
        D: serde::Deserializer<'de>,
    {
        let raw = u32::deserialize(deserializer)?;
        Self::new(raw).map_err(serde::de::Error::custom)
    }
}

/// What [`Executor::spawn`] starts.
#[derive(Debug, Clone)]
pub struct JobCommand {
    /// Absolute run directory on the target; the job's working directory and the
    /// home of its state files.
    pub dir: String,
    /// The job itself, as POSIX shell commands (see [`JobSpec::job`]).
    pub script: String,
    /// Secret environment variables, as name and value. They are set in the job's
    /// environment and nowhere else: no command line, file or log holds them.
    pub secrets: Vec<(String, SecretString)>,
    /// The container the script runs its work in, when it uses one.
    pub container: Option<Container>,
}

/// Everything needed to find a started job again, from any process; stored in
/// `run.json` (inside a [`JobHandle`]). A job that a scheduler runs has another
/// identity, [`SlurmJob`]: it has no process ID when it is submitted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobId {
    /// Absolute run directory on the target.
    pub dir: String,
    /// Process ID of the job's leader, which is also its process group ID. Never `0`
    /// or `1`.
    pub pid: Pid,
    /// The job's container, when it has one.
    pub container: Option<Container>,
}

/// The state of a job, as [`Executor::status`] reads it from the run directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    /// A process of the job is alive (a zombie is not).
    Running,
    /// The job ended by itself with this exit code.
    Exited(i32),
    /// [`Executor::cancel`] stopped it.
    Cancelled,
    /// Gone without an exit code and without a cancel (killed from outside, the
    /// machine rebooted), its run directory no longer exists, or its identity
    /// cannot be established (no `job.start`, as on a run directory of an older
    /// layout, or one that names another process).
    Lost,
}

impl JobStatus {
    /// True for every state but [`JobStatus::Running`].
    #[must_use]
    pub fn is_finished(self) -> bool {
        self != Self::Running
    }
}

/// A place where jobs run: this machine or an SSH host. Target paths are absolute
/// strings (the target may be another machine, so they are not [`Path`]s).
///
/// Every future is `Send`, so any tokio task can drive it (the CLI and the TUI both
/// do).
pub trait Executor: Send + Sync {
    /// Absolute directory on the target under which run directories live.
    fn workdir(&self) -> &str;

    /// The scale of this executor's lifecycle durations (the graces of its job
    /// wrapper and cancel scripts, see [`Executor::cancel`]): [`TimeScale::REAL`]
    /// unless the test suite set `OVERBRAINER_TEST_SECOND_MS`. A follower of a job on
    /// this executor runs its rules on the same scale. Provided (real time), so an
    /// executor written from the seed alone, which has no such method, still compiles
    /// (issue 32).
    fn time_scale(&self) -> TimeScale {
        TimeScale::REAL
    }

    /// Takes the run directory `dir` for the run identified by `owner` (one line,
    /// RUN-3): creates `dir` with its parents, then creates [`CLAIM_FILE`] there
    /// exclusively with `owner` in it. Returns true for a new claim, and also when
    /// [`CLAIM_FILE`] already holds `owner` (the same run claiming again). Returns
    /// false, touching nothing, when it holds another value: another run, perhaps
    /// from another checkout started in the same second against the same work
    /// directory, owns `dir`.
    ///
    /// # Errors
    ///
    /// An [`ExecError`] when `dir` or the marker cannot be created, or the target
    /// is unreachable.
    fn claim(&self, dir: &str, owner: &str)
    -> impl Future<Output = Result<bool, ExecError>> + Send;

    /// Copies everything inside the local directory `local` into the target
    /// directory `remote`, which is created when missing. Top-level entries of
    /// `local` whose names are in `skip` are not sent at all.
    ///
    /// # Errors
    ///
    /// An [`ExecError`] when `local` cannot be read or the copy fails.
    fn upload(
        &self,
        local: &Path,
        remote: &str,
        skip: &[String],
    ) -> impl Future<Output = Result<(), ExecError>> + Send;

    /// Starts `job` detached and returns its handle, once the job's wrapper recorded
    /// its identity and process ID in the run directory. Neither this process exiting
    /// nor a lost connection stops the job.
    ///
    /// The job's base environment is the target's (TGT-7). Locally it is
    /// overbrainer's own environment without the variables named `OVERBRAINER_*` or
    /// `VAULT_*` (see [`LocalExecutor`]). Over SSH it is what `sshd` gives a
    /// non-interactive `sh -c` for that user, with no login shell and no startup
    /// file read (see [`SshExecutor`]). The secrets are added to that environment
    /// only, and the wrapper adds the job's run marker ([`RUN_MARKER_VAR`]). A program that depends on shell setup (a conda activation, a `PATH`
    /// entry from a profile) may therefore be found locally and not over SSH.
    ///
    /// For a job with a container, the variables of [`ENGINE_ENV`] that this base
    /// environment sets (the secrets left out) are recorded in [`ENGINE_ENV_DIR`] in
    /// the run directory before the wrapper starts, for [`Executor::cancel`].
    ///
    /// # Errors
    ///
    /// [`ExecError::InvalidSecret`], naming the variable only, when a secret has an
    /// invalid name or a line break or NUL byte in its value; nothing starts then.
    /// Another [`ExecError`] when the job cannot be started.
    fn spawn(&self, job: &JobCommand) -> impl Future<Output = Result<JobId, ExecError>> + Send;

    /// At most `limit` bytes of the target file `path`, starting at byte `offset`
    /// (fewer near the end). A file that does not exist reads as no bytes.
    ///
    /// # Errors
    ///
    /// An [`ExecError`] when the file exists but cannot be read, or the target is
    /// unreachable.
    fn read_from(
        &self,
        path: &str,
        offset: u64,
        limit: u64,
    ) -> impl Future<Output = Result<Vec<u8>, ExecError>> + Send;

    /// The current state of `job`, from its run directory and its process group
    /// (the precedence is in [`status_script`]). Over SSH this is one command on the
    /// open connection.
    ///
    /// # Errors
    ///
    /// An [`ExecError`] when the target is unreachable or answers nonsense.
    ///
    /// Provided: [`status_script`] through [`Executor::probe`] (it only reads), the
    /// same for every executor; a failure reads as action `status`.
    fn status(&self, job: &JobId) -> impl Future<Output = Result<JobStatus, ExecError>> + Send {
        let script = status_script(&job.dir, job.pid.get());
        async move {
            let output = self
                .probe(&script)
                .await
                .map_err(|error| error.for_action("status"))?;
            parse_status(&String::from_utf8_lossy(&output))
        }
    }

    /// Stops `job`: first its container through the engine (`<engine> stop -t 30`,
    /// then `rm -f`, until the engine no longer knows it; only the container whose ID
    /// the job recorded in [`CONTAINER_ID_FILE`], never one found by name), then its processes (its
    /// whole process group, and every process carrying its run marker, such as a
    /// worker that left the group with `setsid`) with `SIGTERM`, and `SIGKILL` to
    /// those still alive 10 seconds later, then the container once more (the script
    /// may have started its next stage meanwhile). Processes of the job still there
    /// 10 seconds after `SIGKILL` are leftovers (both graces seconds of
    /// [`Executor::time_scale`]): they are written to
    /// [`LEFTOVERS_FILE`], [`CANCEL_FILE`] is written all the same, and the cancel
    /// fails with [`ExecError::Leftovers`] naming them. A later cancel signals the
    /// leftovers still there again. When the job's identity cannot be established
    /// (see [`JobStatus::Lost`]) nothing is signalled. The container is stopped
    /// whatever the job's state, also for a job that already ended or was
    /// cancelled: it may have outlived its wrapper (TGT-6). Each engine call is
    /// bounded (45 seconds, where the target has `timeout`; see [`container_stop`]).
    /// The engine runs with the environment the job's start recorded
    /// ([`ENGINE_ENV`] in [`ENGINE_ENV_DIR`], written by [`Executor::spawn`] for a job
    /// with a container), not the cancelling shell's.
    ///
    /// A job that already ended by itself is not touched: it stays
    /// [`JobStatus::Exited`] and no marker is written. Otherwise [`CANCELLING_FILE`]
    /// is created before the first signal, so [`Executor::status`] says
    /// [`JobStatus::Running`] while the group is being stopped and
    /// [`JobStatus::Cancelled`] (never [`JobStatus::Lost`]) as soon as it is gone.
    /// [`CANCEL_FILE`] comes last, once the job's processes are seen gone (or the
    /// survivors are written to [`LEFTOVERS_FILE`]), and from then on overrides
    /// everything. A second cancel of a cleanly cancelled job changes nothing.
    ///
    /// For a container job the status can briefly be wrong: between the moment the
    /// engine's `stop` lets the wrapper write [`EXIT_FILE`] and the moment the group
    /// is gone and [`CANCEL_FILE`] exists (about a second, at most the 30-second
    /// stop timeout), it reads [`JobStatus::Exited`]. That is the cost of letting a
    /// real exit code beat a [`CANCELLING_FILE`] orphaned by an interrupted cancel;
    /// [`CANCEL_FILE`] settles it afterwards.
    ///
    /// Let it finish: an interrupted cancel can leave [`CANCELLING_FILE`] behind.
    /// Locally its script runs in a process group of its own, out of reach of a
    /// Ctrl-C at the terminal.
    ///
    /// # Errors
    ///
    /// [`ExecError::Leftovers`] when processes of the job outlived `SIGKILL`;
    /// [`ExecError::Command`] naming the engine command when the engine did not
    /// answer in time (the processes are stopped and the job marked cancelled all
    /// the same, but the container may still run; leftovers, if any, are then read
    /// with [`Executor::leftovers`]); another [`ExecError`] when the target is
    /// unreachable.
    fn cancel(&self, job: &JobId) -> impl Future<Output = Result<(), ExecError>> + Send;

    /// The processes of `job` that its last cancel left behind, as recorded in
    /// [`LEFTOVERS_FILE`]: empty after a clean cancel or when the job was never
    /// cancelled. A follower in another process reads them when the job turns
    /// [`JobStatus::Cancelled`].
    ///
    /// # Errors
    ///
    /// An [`ExecError`] when the file cannot be read, holds anything but process
    /// IDs, or the target is unreachable.
    fn leftovers(&self, job: &JobId) -> impl Future<Output = Result<Vec<u32>, ExecError>> + Send {
        let path = format!("{}/{LEFTOVERS_FILE}", job.dir);
        async move {
            let bytes = self.read_from(&path, 0, 64 * 1024).await?;
            script::parse_pids(&String::from_utf8_lossy(&bytes)).ok_or_else(|| {
                ExecError::Protocol(format!("`{path}` holds something else than process IDs"))
            })
        }
    }

    /// Copies `entries` (files or directories, paths relative to the target directory
    /// `remote`) into the local directory `local`, keeping their relative paths.
    /// Anything whose name matches an `exclude` glob is left out, at any depth (see
    /// [`glob_match`]). Entries that do not exist are ignored; when none exists,
    /// `local` is not even created.
    ///
    /// Names are bytes and arrive as they are. Symbolic links arrive as links when
    /// their target is relative and stays inside `remote` (issue 8). The stream is
    /// extracted into a fresh directory beside `local` and moved into place (merged
    /// when `local` exists) only once all of it was accepted and the target's `tar`
    /// exited 0: a refused stream, or one whose sender failed, leaves nothing of
    /// itself in `local`.
    ///
    /// # Errors
    ///
    /// [`ExecError::Command`] with action `download` and message
    /// `<remote> does not exist` when `remote` is not a directory; another
    /// [`ExecError`] when the copy fails (including [`ExecError::Protocol`] for a
    /// stream entry that would land outside `local` or a symbolic link whose target
    /// is absolute or leaves the tree).
    fn download(
        &self,
        remote: &str,
        local: &Path,
        entries: &[String],
        exclude: &[String],
    ) -> impl Future<Output = Result<(), ExecError>> + Send;

    /// The SHA-256 of every regular file under `entries` (relative to the target
    /// directory `remote`), computed on the target, with the same exclusion rule as
    /// [`Executor::download`]. Missing entries are ignored. Symbolic links are never
    /// followed; since issue 8 they are listed, with their target in
    /// [`FileDigest::link`], so a retrieval that drops one is not verified. Paths
    /// are relative to `remote`, in sorted order; a name that is not UTF-8 keeps its
    /// bytes in [`FileDigest::raw_path`].
    ///
    /// # Errors
    ///
    /// [`ExecError::Command`] with message `<remote> does not exist` when `remote`
    /// is not a directory; [`ExecError::Protocol`] naming a symbolic link whose
    /// target is absolute or leaves `remote`; another [`ExecError`] when a file
    /// cannot be read or the target is unreachable.
    ///
    /// Provided: [`manifest_script`] through [`Executor::probe`] (it only reads), the
    /// same for every executor; a failure reads as action `manifest`.
    fn manifest(
        &self,
        remote: &str,
        entries: &[String],
        exclude: &[String],
    ) -> impl Future<Output = Result<Vec<FileDigest>, ExecError>> + Send {
        let script = manifest_script(remote, entries, exclude);
        async move {
            let output = self
                .probe(&script)
                .await
                .map_err(|error| error.for_action("manifest"))?;
            parse_manifest(&output)
        }
    }

    /// Runs `script`, a POSIX shell script that only reads, on the target and
    /// returns what it printed. The training flow samples the job's machine this
    /// way while the job runs ([`crate::system::probe_script`]), so the script must
    /// leave the target unchanged.
    ///
    /// # Errors
    ///
    /// [`ExecError::Command`] with action `probe` when the script exits with a
    /// failure; another [`ExecError`] when the target is unreachable.
    fn probe(&self, script: &str) -> impl Future<Output = Result<Vec<u8>, ExecError>> + Send;

    /// Sets the content of the small target file `path` to `content`, creating the
    /// directory when needed. The new content goes to a temporary file that is then
    /// renamed over `path`, so readers see either the old or the new content in
    /// full. Used for snapshot requests, a Runpod run's lease and its markers.
    ///
    /// # Errors
    ///
    /// An [`ExecError`] when the file cannot be written or the target is
    /// unreachable.
    fn put_file(
        &self,
        path: &str,
        content: &str,
    ) -> impl Future<Output = Result<(), ExecError>> + Send;

    /// A follower of the target file `path` from byte `offset` that hands out
    /// complete lines only (see [`LineStream::poll`]).
    fn tail(&self, path: &str, offset: u64) -> LineStream<'_, Self>
    where
        Self: Sized,
    {
        LineStream::new(self, path, offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_local_probe_samples_this_machine() -> Result<(), Box<dyn std::error::Error>> {
        let root = tempfile::tempdir()?;
        let executor = AnyExecutor::Local(LocalExecutor::new(root.path())?);
        let script = crate::system::probe_script(executor.workdir());
        let output = executor.probe(&script).await?;
        let sample = crate::system::parse(
            &String::from_utf8_lossy(&output),
            std::time::SystemTime::now(),
            None,
        );
        let disk = sample.run_disk().ok_or("no disk")?;
        assert!(disk.size_bytes > 0, "{sample:?}");
        if cfg!(target_os = "linux") {
            assert!(sample.memory.is_some(), "{sample:?}");
            assert!(
                sample.cpu.as_ref().is_some_and(|cpu| cpu.cpus.is_some()),
                "{sample:?}"
            );
        }
        let failed = executor.probe("exit 3").await;
        assert!(
            matches!(
                failed,
                Err(ExecError::Command {
                    action: "probe",
                    ..
                })
            ),
            "{failed:?}"
        );
        Ok(())
    }

    #[test]
    fn pid_rejects_zero_and_one() {
        assert!(Pid::new(0).is_err());
        assert!(Pid::new(1).is_err());
        assert!(Pid::new(2).is_ok_and(|pid| pid.get() == 2));
    }

    #[test]
    fn deserializing_a_job_id_rejects_an_invalid_pid() -> Result<(), Box<dyn std::error::Error>> {
        let valid: JobId = serde_json::from_str(r#"{"dir":"/w/r1","pid":42,"container":null}"#)?;
        assert_eq!(valid.pid.get(), 42);
        let invalid = serde_json::from_str::<JobId>(r#"{"dir":"/w/r1","pid":1,"container":null}"#);
        assert!(invalid.is_err());
        Ok(())
    }
}

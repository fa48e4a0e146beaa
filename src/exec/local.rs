//! [`LocalExecutor`]: jobs on this machine.
//!
//! Jobs run under `sh -c` in a process group of their own, so they outlive
//! overbrainer and a Ctrl-C at the terminal never reaches them. The status, cancel,
//! claim, manifest and transfer scripts are the same POSIX shell scripts the SSH
//! executor runs on its host, started here in their own process group as well: an
//! interrupted overbrainer cannot cut a cancel in half.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use secrecy::ExposeSecret;
use tokio::io::AsyncWriteExt;

use super::script::{self, cancel_script, claim_script, job_script};
use super::{
    CANCEL_FILE, CANCELLING_FILE, CONTAINER_ID_FILE, EXIT_FILE, ExecError, Executor, JobCommand,
    JobId, LEFTOVERS_FILE, PID_FILE, Pid, check_job_env, tar,
};
use crate::env::TimeScale;

/// Prefixes of the environment variables a local job never inherits: overbrainer's
/// own settings and the Vault credentials (TGT-7).
pub const STRIPPED_ENV_PREFIXES: &[&str] = &["OVERBRAINER_", "VAULT_"];

/// Runs jobs on this machine, under the absolute directory `workdir`.
///
/// A job inherits overbrainer's environment minus every variable whose name starts
/// with `OVERBRAINER_` or `VAULT_`, plus its secrets, which are set on the child's
/// environment only (never on a command line).
#[derive(Debug, Clone)]
pub struct LocalExecutor {
    workdir: String,
    /// Directory searched first for programs, by jobs and scripts alike.
    path_prefix: Option<PathBuf>,
    /// The scale of the job scripts' graces.
    time_scale: TimeScale,
}

impl LocalExecutor {
    /// An executor whose run directories live under `workdir`, which is created
    /// when missing and made absolute.
    ///
    /// # Errors
    ///
    /// Returns [`ExecError::Io`] when `workdir` cannot be created or resolved, and
    /// [`ExecError::Protocol`] when its absolute path is not UTF-8.
    pub fn new(workdir: &Path) -> Result<Self, ExecError> {
        let io = |source| ExecError::Io {
            path: workdir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(workdir).map_err(io)?;
        let absolute = std::fs::canonicalize(workdir).map_err(io)?;
        let workdir = absolute
            .to_str()
            .ok_or_else(|| {
                ExecError::Protocol(format!(
                    "work directory `{}` is not UTF-8",
                    absolute.display()
                ))
            })?
            .to_owned();
        Ok(Self {
            workdir,
            path_prefix: None,
            time_scale: TimeScale::REAL,
        })
    }

    /// Runs the graces of its job wrappers and cancels on `scale` (see
    /// [`Executor::time_scale`]); [`TimeScale::REAL`] unless set.
    #[must_use]
    pub fn with_time_scale(mut self, scale: TimeScale) -> Self {
        self.time_scale = scale;
        self
    }

    /// Searches `dir` first for programs, in jobs and in the status, cancel and
    /// transfer scripts: `dir` is put in front of `PATH`. For example a directory
    /// holding a wrapper of the container engine.
    #[must_use]
    pub fn with_path_prefix(mut self, dir: &Path) -> Self {
        self.path_prefix = Some(dir.to_path_buf());
        self
    }

    /// `PATH` with the prefix in front, when one is set.
    #[allow(
        clippy::disallowed_methods,
        reason = "the job inherits this process's `PATH`, with the prefix in front"
    )]
    fn path(&self) -> Option<std::ffi::OsString> {
        let prefix = self.path_prefix.as_ref()?;
        let mut dirs = vec![prefix.clone()];
        if let Some(path) = std::env::var_os("PATH") {
            dirs.extend(std::env::split_paths(&path));
        }
        std::env::join_paths(dirs).ok()
    }

    /// `sh -c script` in its own process group, not killed when dropped.
    #[allow(
        clippy::disallowed_methods,
        reason = "exec/ is where processes are spawned"
    )]
    fn shell(&self, script: &str) -> tokio::process::Command {
        let mut command = tokio::process::Command::new("sh");
        command
            .arg("-c")
            .arg(script)
            .process_group(0)
            .kill_on_drop(false);
        if let Some(path) = self.path() {
            command.env("PATH", path);
        }
        command
    }

    /// Runs `script` under `sh -c` in its own process group, with `stdin` on its
    /// standard input, and returns its output.
    async fn run(&self, script: &str, stdin: &[u8]) -> Result<Output, ExecError> {
        let mut child = self
            .shell(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(spawn_error)?;
        if let Some(mut input) = child.stdin.take() {
            input.write_all(stdin).await.map_err(spawn_error)?;
            drop(input);
        }
        child.wait_with_output().await.map_err(spawn_error)
    }

    /// Runs `script` and returns its standard output, or [`ExecError::Command`]
    /// with its error output when it fails.
    async fn checked(&self, action: &'static str, script: &str) -> Result<Vec<u8>, ExecError> {
        let output = self.run(script, &[]).await?;
        finish(action, output)
    }

    /// Runs `script`, which may change the target, with `stdin` on its standard input,
    /// and returns its standard output, or [`ExecError::Command`] naming `action` with
    /// its error output when it fails: how the Slurm executor calls `sbatch` and
    /// `scancel` on a login node that is this machine.
    pub(crate) async fn command(
        &self,
        action: &'static str,
        script: &str,
        stdin: &[u8],
    ) -> Result<Vec<u8>, ExecError> {
        let output = self.run(script, stdin).await?;
        finish(action, output)
    }
}

fn spawn_error(source: std::io::Error) -> ExecError {
    ExecError::Spawn {
        program: "sh".to_owned(),
        source,
    }
}

/// The standard output of a finished script, or [`ExecError::Command`] naming
/// `action` with the script's error output (or exit status when it wrote none).
pub(crate) fn finish(action: &'static str, output: Output) -> Result<Vec<u8>, ExecError> {
    if output.status.success() {
        return Ok(output.stdout);
    }
    Err(command_error(action, output.status, &output.stderr))
}

/// The result of a download from what [`tar::drain`](super::tar::drain) made of the stream and how the target's
/// archiving command ended. A refused entry stops the reading, which then breaks the
/// target's `tar`: the refusal is the cause worth reporting. The extracted stream is
/// moved into place only after the command exited 0: a `tar` that failed (a file it
/// could not read, one that changed while read) may have sent a well-formed but
/// incomplete archive, and the destination must keep what it held.
///
/// # Errors
///
/// The refusal; else [`ExecError::Command`] (action `download`) when the command failed,
/// the staged stream removed; else what `drained` holds or placing it fails with.
pub(crate) fn downloaded(
    drained: Result<tar::Extracted, ExecError>,
    output: std::process::Output,
) -> Result<(), ExecError> {
    if let Err(refused @ ExecError::Protocol(_)) = drained {
        return Err(refused);
    }
    finish("download", output)?;
    drained?.place()
}

/// [`ExecError::Command`] for a script that exited with `status` and wrote `stderr`.
pub(crate) fn command_error(
    action: &'static str,
    status: std::process::ExitStatus,
    stderr: &[u8],
) -> ExecError {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    let message = if text.is_empty() {
        format!("exited with {status}")
    } else {
        script::truncate(text, 2000)
    };
    ExecError::Command { action, message }
}

/// Reads the answer of a claim script.
pub(crate) fn parse_claim(output: &[u8]) -> Result<bool, ExecError> {
    match String::from_utf8_lossy(output).trim() {
        "claimed" => Ok(true),
        "taken" => Ok(false),
        other => Err(ExecError::Protocol(format!(
            "claim answer `{}`",
            script::truncate(other, 80)
        ))),
    }
}

/// Files a fresh start removes from the run directory, so a second start there
/// never inherits a previous job's state.
pub(crate) const STALE_FILES: &[&str] = &[
    PID_FILE,
    EXIT_FILE,
    CANCELLING_FILE,
    CANCEL_FILE,
    LEFTOVERS_FILE,
    script::START_FILE,
    script::MARKER_FILE,
    CONTAINER_ID_FILE,
];

impl Executor for LocalExecutor {
    fn workdir(&self) -> &str {
        &self.workdir
    }

    fn time_scale(&self) -> TimeScale {
        self.time_scale
    }

    async fn claim(&self, dir: &str, owner: &str) -> Result<bool, ExecError> {
        let output = self.checked("claim", &claim_script(dir, owner)).await?;
        parse_claim(&output)
    }

    async fn upload(&self, local: &Path, remote: &str, skip: &[String]) -> Result<(), ExecError> {
        let mut child = self
            .shell(&tar::extract_script(remote))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(spawn_error)?;
        let stdin = tar::pipe(child.stdin.take(), "input")?;
        let fed = tar::feed(local, skip, stdin).await;
        let output = child.wait_with_output().await.map_err(spawn_error)?;
        finish("upload", output)?;
        fed
    }

    #[allow(
        clippy::disallowed_methods,
        reason = "exec/ spawns; the job's environment is this process's, less what `inherited` drops"
    )]
    async fn spawn(&self, job: &JobCommand) -> Result<JobId, ExecError> {
        check_job_env(&job.secrets)?;
        let dir = PathBuf::from(&job.dir);
        std::fs::create_dir_all(&dir).map_err(|source| ExecError::Io {
            path: dir.clone(),
            source,
        })?;
        for stale in STALE_FILES {
            let path = dir.join(stale);
            match std::fs::remove_file(&path) {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                    return Err(ExecError::Io {
                        path,
                        source: error,
                    });
                }
                _ => {}
            }
        }
        let mut command = std::process::Command::new("sh");
        command
            .arg("-c")
            .arg(format!(
                "{}{}",
                engine_record(job),
                job_script(&job.dir, &job.script, self.time_scale)
            ))
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        for (name, _) in std::env::vars_os() {
            if !inherited(&name) {
                command.env_remove(&name);
            }
        }
        if let Some(path) = self.path() {
            command.env("PATH", path);
        }
        for (name, value) in &job.secrets {
            command.env(name, value.expose_secret());
        }
        let mut child = command.spawn().map_err(spawn_error)?;
        let pid = Pid::new(child.id())?;
        // As over SSH, the job is started once its wrapper recorded its identity and
        // process ID: until then its status would read `lost`.
        let recorded = wait_recorded(&mut child, &dir.join(PID_FILE)).await;
        // Reap the job when it ends so it never lingers as a zombie of this process.
        std::thread::spawn(move || child.wait());
        recorded?;
        Ok(JobId {
            dir: job.dir.clone(),
            pid,
            container: job.container.clone(),
        })
    }

    async fn read_from(&self, path: &str, offset: u64, limit: u64) -> Result<Vec<u8>, ExecError> {
        use tokio::io::{AsyncReadExt, AsyncSeekExt};
        let io = |source| ExecError::Io {
            path: PathBuf::from(path),
            source,
        };
        let mut file = match tokio::fs::File::open(path).await {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(io(error)),
        };
        file.seek(std::io::SeekFrom::Start(offset))
            .await
            .map_err(io)?;
        let mut bytes = Vec::new();
        file.take(limit).read_to_end(&mut bytes).await.map_err(io)?;
        Ok(bytes)
    }

    async fn cancel(&self, job: &JobId) -> Result<(), ExecError> {
        let output = self
            .checked(
                "cancel",
                &cancel_script(
                    &job.dir,
                    job.pid.get(),
                    job.container.as_ref(),
                    self.time_scale,
                ),
            )
            .await?;
        script::parse_cancel(&String::from_utf8_lossy(&output))
    }

    async fn download(
        &self,
        remote: &str,
        local: &Path,
        entries: &[String],
        exclude: &[String],
    ) -> Result<(), ExecError> {
        let mut child = self
            .shell(&tar::archive_script(remote, entries, exclude))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(spawn_error)?;
        let stdout = tar::pipe(child.stdout.take(), "output")?;
        let drained = tar::drain(stdout, local).await;
        let output = child.wait_with_output().await.map_err(spawn_error)?;
        downloaded(drained, output)
    }

    async fn probe(&self, script: &str) -> Result<Vec<u8>, ExecError> {
        self.checked("probe", script).await
    }

    async fn put_file(&self, path: &str, content: &str) -> Result<(), ExecError> {
        let target = PathBuf::from(path);
        let path_owned = target.clone();
        let content = content.to_owned();
        tokio::task::spawn_blocking(move || write_atomically(&path_owned, content.as_bytes()))
            .await
            .map_err(|error| ExecError::Io {
                path: target,
                source: std::io::Error::other(error.to_string()),
            })?
    }
}

/// Most time a job's wrapper has to write [`PID_FILE`] once started, as over SSH. A bound
/// against a wrapper that never starts, not a lifecycle rule: it stays real under the
/// test suite's [`TimeScale`], so a loaded machine cannot fail a start.
const RECORD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Waits until the wrapper `child` wrote the non-empty `pid_file` (it writes its
/// identity and marker before), polling every 10 ms.
///
/// # Errors
///
/// [`ExecError::Command`] with action `spawn` when the wrapper ended first, or did
/// not write it within [`RECORD_TIMEOUT`].
async fn wait_recorded(child: &mut std::process::Child, pid_file: &Path) -> Result<(), ExecError> {
    let deadline = std::time::Instant::now() + RECORD_TIMEOUT;
    loop {
        if std::fs::metadata(pid_file).is_ok_and(|meta| meta.len() > 0) {
            return Ok(());
        }
        let ended = child.try_wait().map_err(spawn_error)?;
        if ended.is_some() || std::time::Instant::now() > deadline {
            let why = ended.map_or_else(
                || format!("within {} s", RECORD_TIMEOUT.as_secs()),
                |status| format!("before it ended ({status})"),
            );
            return Err(ExecError::Command {
                action: "spawn",
                message: format!("the job did not write {PID_FILE} {why}"),
            });
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// Whether a local job inherits the variable `name` of overbrainer's environment.
fn inherited(name: &std::ffi::OsStr) -> bool {
    let name = name.to_string_lossy();
    !STRIPPED_ENV_PREFIXES
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

/// For a container job, the shell commands that record its engine environment in its
/// directory before its wrapper starts ([`super::engine::record_engine_env`], its
/// secrets left out); nothing for a native job.
pub(crate) fn engine_record(job: &JobCommand) -> String {
    if job.container.is_none() {
        return String::new();
    }
    let secrets: Vec<String> = job.secrets.iter().map(|(name, _)| name.clone()).collect();
    super::engine::record_engine_env(&job.dir, &secrets)
}

/// Writes `content` to a temporary file next to `path`, syncs it and renames it
/// over `path`.
fn write_atomically(path: &Path, content: &[u8]) -> Result<(), ExecError> {
    let io = |source| ExecError::Io {
        path: path.to_path_buf(),
        source,
    };
    let parent = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io)?;
    crate::project::write_atomic(path, content, &crate::project::temporary_for(path, true))
        .map_err(io)
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests run real programs and read the test environment"
)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn overbrainer_and_vault_variables_stay_home() {
        for name in [
            "OVERBRAINER_HF_TOKEN",
            "OVERBRAINER_",
            "VAULT_TOKEN",
            "VAULT_ADDR",
        ] {
            assert!(!inherited(OsStr::new(name)), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "HF_TOKEN",
            "MY_VAULT_TOKEN",
            "overbrainer_x",
        ] {
            assert!(inherited(OsStr::new(name)), "{name}");
        }
    }

    #[test]
    fn claim_answers_are_read_strictly() {
        assert!(parse_claim(b"claimed\n").unwrap());
        assert!(!parse_claim(b"taken\n").unwrap());
        assert!(parse_claim(b"").is_err());
    }
}

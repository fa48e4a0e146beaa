//! [`SshExecutor`]: the [`Executor`] over one master connection. Every command is a
//! script run as `sh -c '<script>'`; a job starts under `setsid nohup` with its secrets
//! on the standard input of its start command.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use openssh::{Session, Stdio};
use secrecy::ExposeSecret;
use tokio::io::AsyncWriteExt;

use super::master::{self, master_log_tail};
use super::{SshDestination, SshError};
use crate::env::TimeScale;
use crate::exec::local::{
    STALE_FILES, command_error, downloaded, engine_record, finish, parse_claim,
};
use crate::exec::runtime::shell_path;
use crate::exec::script::{self, cancel_script, claim_script, job_script};
use crate::exec::{ExecError, Executor, JobCommand, JobId, PID_FILE, Pid, check_job_env, tar};
use crate::shell::quote;

/// Programs an SSH target must have, space-separated (TGT-2): `tar` for transfers,
/// `setsid` and `nohup` to detach jobs, `sha256sum`, `readlink` and `od` for
/// manifests.
pub const REQUIRED_TOOLS: &str = "tar setsid nohup sha256sum readlink od";

/// Runs jobs on an SSH target through one OpenSSH master connection.
///
/// A job gets the environment that the remote user's non-interactive `sh -c`
/// receives from `sshd` (not a login shell), plus its secrets. One caveat: `sshd`
/// always runs the command through the user's login shell, and a `bash` built with
/// `SSH_SOURCE_BASHRC` (Debian and Ubuntu) reads `~/.bashrc` for it, so whatever
/// that file exports before its "not interactive" check reaches the job too, and
/// its run time is added to every command (seen here: 0.25 s from a `pyenv init`).
#[derive(Debug)]
pub struct SshExecutor {
    destination: SshDestination,
    workdir: String,
    session: tokio::sync::Mutex<Option<Arc<Session>>>,
    /// The scale of the job scripts' graces.
    time_scale: TimeScale,
}

impl SshExecutor {
    /// Connects to `destination`, checks that the target has the programs jobs and
    /// transfers need ([`REQUIRED_TOOLS`], TGT-2), and resolves `workdir` on the
    /// target (relative to the remote home, `~/` allowed), creating it.
    ///
    /// # Errors
    ///
    /// Returns [`ExecError::Ssh`] when `ssh` cannot connect (an unknown host key
    /// included), [`ExecError::MasterDied`] when the master ended right after it
    /// started, and [`ExecError::Command`] (action `connect`) when a program is
    /// missing or `workdir` cannot be created.
    pub async fn connect(destination: SshDestination, workdir: &str) -> Result<Self, ExecError> {
        let mut executor = Self {
            destination,
            workdir: String::new(),
            session: tokio::sync::Mutex::new(None),
            time_scale: TimeScale::REAL,
        };
        let script = format!(
            "for ob_t in {REQUIRED_TOOLS}; do command -v \"$ob_t\" >/dev/null 2>&1 || \
             {{ echo \"the target has no \\`$ob_t\\`: install it\" >&2; exit 1; }}; done\n\
             mkdir -p -- {dir} && cd -- {dir} && pwd -P",
            dir = shell_path(workdir)
        );
        let output = executor.checked("connect", &script, &[]).await?;
        let resolved = String::from_utf8_lossy(&output)
            .trim_end_matches('\n')
            .to_owned();
        if !resolved.starts_with('/') {
            return Err(ExecError::Protocol(format!(
                "work directory `{}`",
                script::truncate(&resolved, 200)
            )));
        }
        executor.workdir = resolved;
        Ok(executor)
    }

    /// Runs the graces of its job wrappers and cancels on `scale` (see
    /// [`Executor::time_scale`]); [`TimeScale::REAL`] unless set. The bounds given to
    /// `ssh` itself are [`SshDestination::timeouts`].
    #[must_use]
    pub fn with_time_scale(mut self, scale: TimeScale) -> Self {
        self.time_scale = scale;
        self
    }

    /// The destination this executor connects to.
    #[must_use]
    pub fn destination(&self) -> &SshDestination {
        &self.destination
    }

    /// Control socket of the current master connection, if one is open: for
    /// diagnostics, or `ssh -S <socket> -O check <host>`.
    pub async fn control_socket(&self) -> Option<PathBuf> {
        self.session
            .lock()
            .await
            .as_ref()
            .map(|session| session.control_socket().to_path_buf())
    }

    /// Closes the master connection; the next call opens a new one.
    pub async fn disconnect(&self) {
        let session = self.session.lock().await.take();
        if let Some(session) = session.and_then(|session| Arc::try_unwrap(session).ok()) {
            let _ = session.close().await;
        }
    }

    /// The open session when its master still answers, or a new one: a master that
    /// died and left its socket is replaced here, before the call sends anything.
    async fn session(&self) -> Result<Arc<Session>, ExecError> {
        let mut guard = self.session.lock().await;
        if let Some(session) = guard.as_ref() {
            if session.check().await.is_ok() {
                return Ok(Arc::clone(session));
            }
            tracing::debug!(
                destination = %self.destination.host,
                "the ssh master no longer answers; starting a new one"
            );
            *guard = None;
        }
        let session = Arc::new(master::open(&self.destination).await?);
        *guard = Some(Arc::clone(&session));
        Ok(session)
    }

    /// Turns a failure of `session` into an error. When its master no longer
    /// answers, the session is dropped (the next call reconnects) and the error is
    /// [`SshError::Lost`] with the end of the master's log.
    async fn failed(&self, session: &Arc<Session>, source: openssh::Error) -> ExecError {
        if session.check().await.is_ok() {
            return ExecError::Ssh(SshError::Session {
                destination: self.destination.host.clone(),
                source,
            });
        }
        let log = session
            .control_socket()
            .parent()
            .map(|dir| master_log_tail(&dir.join("log")))
            .unwrap_or_default();
        let mut guard = self.session.lock().await;
        if guard
            .as_ref()
            .is_some_and(|current| Arc::ptr_eq(current, session))
        {
            *guard = None;
        }
        ExecError::Ssh(SshError::Lost {
            destination: self.destination.host.clone(),
            log,
        })
    }

    /// Runs `script` under `sh -c` on the target with `stdin` on its standard input.
    async fn run(&self, script: &str, stdin: &[u8]) -> Result<std::process::Output, ExecError> {
        let session = self.session().await?;
        match run_on(&session, script, stdin).await {
            Ok(output) => Ok(output),
            Err(source) => Err(self.failed(&session, source).await),
        }
    }

    /// Starts `script` under `sh -c` with `stdin` and `stdout` as given (a transfer
    /// streams one of them) and its standard error piped.
    async fn streaming(
        &self,
        script: &str,
        stdin: Stdio,
        stdout: Stdio,
    ) -> Result<(Arc<Session>, openssh::Child<Arc<Session>>), ExecError> {
        let session = self.session().await?;
        let mut command = Session::arc_raw_command(Arc::clone(&session), remote_command(script));
        command.stdin(stdin).stdout(stdout).stderr(Stdio::piped());
        match command.spawn().await {
            Ok(child) => Ok((session, child)),
            Err(source) => Err(self.failed(&session, source).await),
        }
    }

    /// Waits for a command started by [`Self::streaming`] to end.
    async fn ended(
        &self,
        session: &Arc<Session>,
        child: openssh::Child<Arc<Session>>,
    ) -> Result<std::process::Output, ExecError> {
        match child.wait_with_output().await {
            Ok(output) => Ok(output),
            Err(source) => Err(self.failed(session, source).await),
        }
    }

    /// Runs `script`, which may change the target, with `stdin` on its standard input
    /// (secrets travel there), as [`LocalExecutor::command`](crate::exec::LocalExecutor)
    /// does on this machine: the Slurm executor's `sbatch` and `scancel` on the login node.
    pub(crate) async fn command(
        &self,
        action: &'static str,
        script: &str,
        stdin: &[u8],
    ) -> Result<Vec<u8>, ExecError> {
        self.checked(action, script, stdin).await
    }

    async fn checked(
        &self,
        action: &'static str,
        script: &str,
        stdin: &[u8],
    ) -> Result<Vec<u8>, ExecError> {
        let output = self.run(script, stdin).await?;
        finish(action, output)
    }
}

/// The remote command running `script`.
fn remote_command(script: &str) -> String {
    format!("sh -c {}", quote(script))
}

async fn run_on(
    session: &Arc<Session>,
    script: &str,
    stdin: &[u8],
) -> Result<std::process::Output, openssh::Error> {
    let mut command = Session::arc_raw_command(Arc::clone(session), remote_command(script));
    command
        .stdin(if stdin.is_empty() {
            Stdio::null()
        } else {
            Stdio::piped()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().await?;
    if let Some(mut input) = child.stdin().take() {
        input
            .write_all(stdin)
            .await
            .map_err(openssh::Error::ChildIo)?;
        input.shutdown().await.map_err(openssh::Error::ChildIo)?;
    }
    child.wait_with_output().await
}

/// The start command of a job over SSH: prepares `dir`, reads one secret value
/// per line from standard input into the named exported variables, starts the job
/// wrapper under `setsid nohup`, waits for its [`PID_FILE`] and prints it.
fn launcher(job: &JobCommand, time_scale: TimeScale) -> String {
    let mut reads = String::new();
    for (name, _) in &job.secrets {
        reads.push_str("IFS= read -r ob_v || { echo 'secret input ended early' >&2; exit 4; }\n");
        reads.push_str(name);
        reads.push_str("=$ob_v\nexport ");
        reads.push_str(name);
        reads.push('\n');
    }
    let stale: Vec<&str> = STALE_FILES.to_vec();
    format!(
        r#"d={dir}
mkdir -p -- "$d" && cd -- "$d" || exit 1
rm -f -- {stale}
{record}{reads}unset ob_v
setsid nohup sh -c {wrapper} </dev/null >/dev/null 2>&1 &
ob_i=0
while [ ! -s {pid} ]; do
  ob_i=$((ob_i + 1))
  if [ "$ob_i" -gt 300 ]; then echo 'the job did not write {pid}' >&2; exit 5; fi
  sleep 0.1 2>/dev/null || sleep 1
done
cat {pid}
"#,
        dir = quote(&job.dir),
        stale = stale.join(" "),
        record = engine_record(job),
        wrapper = quote(&job_script(&job.dir, &job.script, time_scale)),
        pid = PID_FILE,
    )
}

impl Executor for SshExecutor {
    fn workdir(&self) -> &str {
        &self.workdir
    }

    fn time_scale(&self) -> TimeScale {
        self.time_scale
    }

    async fn claim(&self, dir: &str, owner: &str) -> Result<bool, ExecError> {
        let output = self
            .checked("claim", &claim_script(dir, owner), &[])
            .await?;
        parse_claim(&output)
    }

    async fn upload(&self, local: &Path, remote: &str, skip: &[String]) -> Result<(), ExecError> {
        let script = tar::extract_script(remote);
        let (session, mut child) = self
            .streaming(&script, Stdio::piped(), Stdio::null())
            .await?;
        let stdin = tar::pipe(child.stdin().take(), "input")?;
        let fed = tar::feed(local, skip, stdin).await;
        let output = self.ended(&session, child).await?;
        if !output.status.success() {
            return Err(command_error("upload", output.status, &output.stderr));
        }
        fed
    }

    async fn spawn(&self, job: &JobCommand) -> Result<JobId, ExecError> {
        check_job_env(&job.secrets)?;
        let mut input = String::new();
        for (_, value) in &job.secrets {
            input.push_str(value.expose_secret());
            input.push('\n');
        }
        let output = self
            .checked("spawn", &launcher(job, self.time_scale), input.as_bytes())
            .await;
        drop(input);
        let output = output?;
        let text = String::from_utf8_lossy(&output);
        let pid = text.trim().parse::<u32>().map_err(|_| {
            ExecError::Protocol(format!("job pid `{}`", script::truncate(&text, 80)))
        })?;
        Ok(JobId {
            dir: job.dir.clone(),
            pid: Pid::new(pid)?,
            container: job.container.clone(),
        })
    }

    async fn read_from(&self, path: &str, offset: u64, limit: u64) -> Result<Vec<u8>, ExecError> {
        let script = format!(
            "f={path}\n[ -f \"$f\" ] || exit 0\ntail -c +{start} -- \"$f\" | head -c {limit}\n",
            path = quote(path),
            start = offset.saturating_add(1),
        );
        self.checked("read", &script, &[]).await
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
                &[],
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
        let script = tar::archive_script(remote, entries, exclude);
        let (session, mut child) = self
            .streaming(&script, Stdio::null(), Stdio::piped())
            .await?;
        let stdout = tar::pipe(child.stdout().take(), "output")?;
        let drained = tar::drain(stdout, local).await;
        let output = self.ended(&session, child).await?;
        downloaded(drained, output)
    }

    async fn probe(&self, script: &str) -> Result<Vec<u8>, ExecError> {
        self.checked("probe", script, &[]).await
    }

    async fn put_file(&self, path: &str, content: &str) -> Result<(), ExecError> {
        let script = format!(
            "f={path}\n[ ! -d \"$f\" ] || {{ echo \"$f is a directory\" >&2; exit 1; }}\nmkdir -p -- \"$(dirname -- \"$f\")\" || exit 1\nt=\"$f.tmp.$$\"\n{{ cat > \"$t\" && mv -f -- \"$t\" \"$f\"; }} || {{ rm -f -- \"$t\"; exit 1; }}\n",
            path = quote(path),
        );
        self.checked("put", &script, content.as_bytes())
            .await
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use secrecy::SecretString;

    use super::*;

    #[test]
    fn the_launcher_names_secrets_but_never_holds_their_values() {
        let job = JobCommand {
            dir: "/w/r 1".into(),
            script: "echo hi".into(),
            secrets: vec![(
                "HF_TOKEN".into(),
                SecretString::from("hf_value_K8mQ3xW7vN2tR9zB4p"),
            )],
            container: None,
        };
        let script = launcher(&job, TimeScale::REAL);
        assert!(script.contains("HF_TOKEN=$ob_v"), "{script}");
        assert!(!script.contains("hf_value_K8mQ3xW7vN2tR9zB4p"));
        assert!(!format!("{job:?}").contains("hf_value_K8mQ3xW7vN2tR9zB4p"));
    }
}

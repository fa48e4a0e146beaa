//! [`SshExecutor`]: jobs on another machine over the system OpenSSH client.
//!
//! One `ControlMaster` connection per target (started as `ssh -M -f -N` by
//! `master.rs`; the `openssh` crate talks to it over its control socket) carries
//! every command (SSH-2). The system `ssh` reads `~/.ssh/config`, the agent and
//! `known_hosts`; a host whose key is not already known is refused
//! (`StrictHostKeyChecking=yes`, SSH-1). Every command is a POSIX shell script run
//! as `sh -c '<script>'` by the remote user's login shell, which must therefore
//! understand POSIX single quotes (sh, bash, dash, zsh do; fish does not).
//!
//! Jobs start under `setsid nohup`, so they survive the connection. Their secrets
//! travel on the standard input of the start command, one value per line, and are
//! exported by the remote shell: they never appear on a command line.
//!
//! The master itself (its bounded waits and its control socket) is in `master.rs`.
//! Each call first checks that the master still answers, and starts a fresh one
//! when it does not (a master killed, or ended by its keepalive, leaves its socket
//! behind): the call then goes on over the new master. A master that ends while a
//! command runs fails that command with [`SshError::Lost`], and the next call
//! reconnects.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use openssh::{Session, Stdio};
use secrecy::ExposeSecret;
use tokio::io::AsyncWriteExt;

use super::digest::{self, FileDigest};
use super::local::{STALE_FILES, command_error, finish, parse_claim};
use super::master::{self, SshTimeouts};
use super::runtime::shell_path;
use super::script::{self, cancel_script, claim_script, job_script, quote, status_script};
use super::{ExecError, Executor, JobCommand, JobId, JobStatus, PID_FILE, Pid, check_job_env, tar};

/// Keepalive interval of an SSH connection (SSH-16): 15 seconds. A configuration
/// may set a shorter `ServerAliveInterval`, never a longer one (see `master.rs`).
pub const KEEPALIVE: Duration = Duration::from_secs(15);
/// Unanswered keepalives before the master gives up (SSH-16): 3, so a target that
/// stops answering is given up 45 seconds after its last answer.
pub const KEEPALIVE_COUNT: u32 = 3;
/// Connect timeout (SSH-16): 30 seconds; a configuration may set a shorter one.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// An idle master exits after this long without any command, so a master left
/// behind by a killed overbrainer does not live for ever: 10 minutes.
pub const MASTER_IDLE: Duration = Duration::from_secs(600);
/// Programs an SSH target must have, space-separated (TGT-2): `tar` for transfers,
/// `setsid` and `nohup` to detach jobs, `sha256sum`, `readlink` and `od` for
/// manifests.
pub const REQUIRED_TOOLS: &str = "tar setsid nohup sha256sum readlink od";
/// Most bytes of the master's log kept in [`ExecError::MasterDied`].
const MASTER_LOG_TAIL: usize = 400;

/// Errors of the SSH connection itself.
#[derive(Debug, thiserror::Error)]
pub enum SshError {
    /// `ssh` could not open the master connection: unreachable host, refused or
    /// unknown host key, no accepted key. The source holds `ssh`'s own message.
    #[error("cannot connect to `{destination}`")]
    Connect {
        /// The destination as given.
        destination: String,
        /// Error of the `openssh` crate, with `ssh`'s message.
        #[source]
        source: openssh::Error,
    },
    /// No candidate directory gives a control socket path short enough for a Unix
    /// socket; nothing was started.
    #[error(
        "no directory for the ssh control socket is short enough: {tried} (a control socket path may hold at most {limit} bytes: {sun_path} of a Unix socket path, less its NUL and the 17 bytes OpenSSH appends); set `TMPDIR` or `XDG_RUNTIME_DIR` to a shorter directory"
    )]
    ControlPath {
        /// Each candidate with the length of the path it would give.
        tried: String,
        /// The longest control socket path.
        limit: usize,
        /// Bytes of a Unix socket path on this system, NUL included.
        sun_path: usize,
    },
    /// `ssh` neither connected nor failed within the connect timeout plus the
    /// keepalive window; it was stopped.
    #[error("`{destination}` did not answer within {waited_secs} s")]
    Unresponsive {
        /// The destination as given.
        destination: String,
        /// Seconds waited.
        waited_secs: u64,
    },
    /// The master connection ended while a command ran over it: the target stopped
    /// answering its keepalives, the network dropped, or the master was killed.
    /// `log` is the end of the master's log on one line (OpenSSH writes
    /// `Timeout, server … not responding.` there), empty when there was none.
    #[error("the connection to `{destination}` was lost (ssh log: {})", super::or_empty(.log))]
    Lost {
        /// The destination as given.
        destination: String,
        /// The end of the master's log.
        log: String,
    },
    /// A command could not be run over an open connection, or the connection broke
    /// while it ran.
    #[error("the connection to `{destination}` failed")]
    Session {
        /// The destination as given.
        destination: String,
        /// Error of the `openssh` crate.
        #[source]
        source: openssh::Error,
    },
}

/// Where a Runpod pod's `sshd` listens, as the Runpod API reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodEndpoint {
    /// Public IP address or host name.
    pub host: String,
    /// Public TCP port mapped to the pod's port 22.
    pub port: u16,
}

impl PodEndpoint {
    /// The destination of this pod: `root@host` on `port`, with the run's own
    /// `ssh` configuration file `config_file` (`ssh -F`, which bypasses
    /// `~/.ssh/config`), and the keepalive defaults of SSH-16 always applied.
    #[must_use]
    pub fn destination(&self, config_file: PathBuf) -> SshDestination {
        SshDestination {
            host: format!("root@{}", self.host),
            port: Some(self.port),
            config_file: Some(config_file),
            identity_file: None,
            known_hosts_file: None,
            always_default_keepalive: true,
            timeouts: SshTimeouts::default(),
            control_dirs: master::control_dirs(None, None),
        }
    }
}

/// How to reach an SSH target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshDestination {
    /// `user@host`, `host`, or a `Host` alias of the configuration.
    pub host: String,
    /// Port (`ssh -p`); `None` leaves it to the configuration (default 22).
    pub port: Option<u16>,
    /// Configuration file used instead of `~/.ssh/config` (`ssh -F`).
    pub config_file: Option<PathBuf>,
    /// The only private key to offer (`ssh -i` with `IdentitiesOnly=yes`); `None`
    /// leaves keys to the agent and the configuration.
    pub identity_file: Option<PathBuf>,
    /// Known hosts file used instead of `~/.ssh/known_hosts`
    /// (`UserKnownHostsFile`).
    pub known_hosts_file: Option<PathBuf>,
    /// Apply [`SshDestination::timeouts`] as they are, without asking the
    /// configuration for shorter ones (Runpod pods, SSH-16).
    pub always_default_keepalive: bool,
    /// The bounds on every wait for the target, passed with `-o` so that no
    /// configuration file lengthens them (issue 8); defaults of SSH-16.
    pub timeouts: SshTimeouts,
    /// Directories to try, in order, for the master's control socket (see
    /// [`control_dirs`](super::control_dirs)); the first one short enough for a Unix
    /// socket path is used.
    pub control_dirs: Vec<PathBuf>,
}

impl SshDestination {
    /// A destination with only `host` set: everything else comes from
    /// `~/.ssh/config`, the bounds are those of SSH-16 and the control socket goes
    /// under `/tmp` (the CLI adds `XDG_RUNTIME_DIR` and `TMPDIR` in front).
    #[must_use]
    pub fn new(host: &str) -> Self {
        Self {
            host: host.to_owned(),
            port: None,
            config_file: None,
            identity_file: None,
            known_hosts_file: None,
            always_default_keepalive: false,
            timeouts: SshTimeouts::default(),
            control_dirs: master::control_dirs(None, None),
        }
    }
}

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

/// The end of the master's log on one line, control characters dropped.
pub(super) fn master_log_tail(path: &Path) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let flat: String = text
        .split(['\n', '\r'])
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" | ")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    let skip = flat.chars().count().saturating_sub(MASTER_LOG_TAIL);
    flat.chars().skip(skip).collect()
}

/// The start command of a job over SSH: prepares `dir`, reads one secret value
/// per line from standard input into the named exported variables, starts the job
/// wrapper under `setsid nohup`, waits for its [`PID_FILE`] and prints it.
fn launcher(job: &JobCommand) -> String {
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
{reads}unset ob_v
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
        wrapper = quote(&job_script(&job.dir, &job.script)),
        pid = PID_FILE,
    )
}

impl Executor for SshExecutor {
    fn workdir(&self) -> &str {
        &self.workdir
    }

    async fn claim(&self, dir: &str, owner: &str) -> Result<bool, ExecError> {
        let output = self
            .checked("claim", &claim_script(dir, owner), &[])
            .await?;
        parse_claim(&output)
    }

    async fn upload(&self, local: &Path, remote: &str, skip: &[String]) -> Result<(), ExecError> {
        let session = self.session().await?;
        let mut command = Session::arc_raw_command(
            Arc::clone(&session),
            remote_command(&tar::extract_script(remote)),
        );
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = match command.spawn().await {
            Ok(child) => child,
            Err(source) => return Err(self.failed(&session, source).await),
        };
        let stdin = child
            .stdin()
            .take()
            .ok_or_else(|| ExecError::Protocol("no standard input".to_owned()))?;
        let fed = tar::feed(local, skip, stdin).await;
        let output = match child.wait_with_output().await {
            Ok(output) => output,
            Err(source) => return Err(self.failed(&session, source).await),
        };
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
            .checked("spawn", &launcher(job), input.as_bytes())
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

    async fn status(&self, job: &JobId) -> Result<JobStatus, ExecError> {
        let output = self
            .checked("status", &status_script(&job.dir, job.pid.get()), &[])
            .await?;
        script::parse_status(&String::from_utf8_lossy(&output))
    }

    async fn cancel(&self, job: &JobId) -> Result<(), ExecError> {
        let output = self
            .checked(
                "cancel",
                &cancel_script(&job.dir, job.pid.get(), job.container.as_ref()),
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
        let session = self.session().await?;
        let mut command = Session::arc_raw_command(
            Arc::clone(&session),
            remote_command(&tar::archive_script(remote, entries, exclude)),
        );
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = match command.spawn().await {
            Ok(child) => child,
            Err(source) => return Err(self.failed(&session, source).await),
        };
        let stdout = child
            .stdout()
            .take()
            .ok_or_else(|| ExecError::Protocol("no standard output".to_owned()))?;
        let drained = tar::drain(stdout, local).await;
        let output = match child.wait_with_output().await {
            Ok(output) => output,
            Err(source) => return Err(self.failed(&session, source).await),
        };
        // A refused entry stops the reading, which then breaks the target's `tar`:
        // the refusal is the cause worth reporting.
        if let Err(refused @ ExecError::Protocol(_)) = drained {
            return Err(refused);
        }
        if !output.status.success() {
            return Err(command_error("download", output.status, &output.stderr));
        }
        drained
    }

    async fn manifest(
        &self,
        remote: &str,
        entries: &[String],
        exclude: &[String],
    ) -> Result<Vec<FileDigest>, ExecError> {
        let output = self
            .checked(
                "manifest",
                &digest::manifest_script(remote, entries, exclude),
                &[],
            )
            .await?;
        digest::parse_manifest(&output)
    }

    async fn probe(&self, script: &str) -> Result<Vec<u8>, ExecError> {
        self.checked("probe", script, &[]).await
    }

    async fn put_file(&self, path: &str, content: &str) -> Result<(), ExecError> {
        let script = format!(
            "f={path}\nmkdir -p -- \"$(dirname -- \"$f\")\" || exit 1\nt=\"$f.tmp.$$\"\ncat > \"$t\" && mv -f -- \"$t\" \"$f\"\n",
            path = quote(path),
        );
        self.checked("put", &script, content.as_bytes())
            .await
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::SecretString;

    #[test]
    fn the_master_log_tail_is_one_bounded_line() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        assert_eq!(master_log_tail(&log), "");
        std::fs::write(&log, "first\r\n\nsecond \u{7}bell\n").unwrap();
        assert_eq!(master_log_tail(&log), "first | second bell");
        std::fs::write(&log, "x".repeat(5000)).unwrap();
        assert_eq!(master_log_tail(&log).len(), MASTER_LOG_TAIL);
        let error = ExecError::MasterDied { log: String::new() };
        assert!(error.to_string().ends_with("(ssh log: empty)"), "{error}");
    }

    #[test]
    fn the_launcher_names_secrets_but_never_holds_their_values() {
        let job = JobCommand {
            dir: "/w/r 1".into(),
            script: "echo hi".into(),
            secrets: vec![("HF_TOKEN".into(), SecretString::from("hf_value_123"))],
            container: None,
        };
        let script = launcher(&job);
        assert!(script.contains("HF_TOKEN=$ob_v"), "{script}");
        assert!(!script.contains("hf_value_123"));
        assert!(!format!("{job:?}").contains("hf_value_123"));
    }

    #[test]
    fn a_pod_destination_always_uses_the_keepalive_defaults() {
        let pod = PodEndpoint {
            host: "203.0.113.7".into(),
            port: 40022,
        };
        let destination = pod.destination(PathBuf::from("runs/r1/ssh/config"));
        assert_eq!(destination.host, "root@203.0.113.7");
        assert_eq!(destination.port, Some(40022));
        assert!(destination.always_default_keepalive);
    }
}

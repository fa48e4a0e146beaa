//! The status script and its one-line answer.
use super::functions::GROUP_SIGNAL;
use super::truncate;
use crate::exec::{CANCEL_FILE, CANCELLING_FILE, EXIT_FILE, ExecError, JobStatus};
use crate::shell::quote;

/// A script that prints the status of the job `pid` in `dir` as one line that
/// [`parse_status`] reads: `running`, `exited <code>`, `cancelled` or `lost`.
///
/// Precedence, first match wins:
/// 1. `dir` is missing: `lost`.
/// 2. [`CANCEL_FILE`] exists: `cancelled`.
/// 3. [`CANCELLING_FILE`] exists: `running` while a process of the job lives,
///    else the exit code when [`EXIT_FILE`] holds one, else `cancelled`.
/// 4. [`EXIT_FILE`] exists: `exited <code>`.
/// 5. A process of the job lives (`job_alive` of [`GROUP_SIGNAL`]: a process with
///    its run marker, or a live member of its group whose leader's identity
///    matches `job.start`; zombies do not count): `running`.
/// 6. Otherwise `lost`, which includes a job whose identity cannot be established.
///
/// A job may end while the script looks: its wrapper writes [`EXIT_FILE`] (or a
/// cancel writes [`CANCEL_FILE`]) and exits between the first look at the files and
/// the look at its processes. So when no process lives, the files are read again
/// before the answer, and a job that just ended reads `exited` (or `cancelled`),
/// never `lost`.
#[must_use]
pub fn status_script(dir: &str, pid: u32) -> String {
    format!(
        r#"{GROUP_SIGNAL}d={dir}
p={pid}
if [ ! -d "$d" ]; then echo lost; exit 0; fi
if [ -e "$d/{cancelled}" ]; then echo cancelled; exit 0; fi
ob_code=
ob_reread() {{
  if [ -r "$d/{exit}" ]; then IFS= read -r ob_code < "$d/{exit}" || true; fi
}}
ob_reread
if [ -e "$d/{cancelling}" ]; then
  if job_alive "$d" "$p"; then echo running; exit 0; fi
  ob_reread
  if [ -e "$d/{cancelled}" ]; then echo cancelled
  elif [ -n "$ob_code" ]; then echo "exited $ob_code"
  else echo cancelled
  fi
  exit 0
fi
if [ -e "$d/{exit}" ]; then echo "exited $ob_code"; exit 0; fi
if job_alive "$d" "$p"; then echo running; exit 0; fi
ob_reread
if [ -e "$d/{cancelled}" ]; then echo cancelled
elif [ -e "$d/{exit}" ]; then echo "exited $ob_code"
else echo lost
fi
"#,
        dir = quote(dir),
        cancelled = CANCEL_FILE,
        cancelling = CANCELLING_FILE,
        exit = EXIT_FILE,
    )
}

/// Reads the one-line answer of [`status_script`].
///
/// # Errors
///
/// Returns [`ExecError::Protocol`] for anything but `running`, `cancelled`, `lost`
/// or `exited <code>` with a decimal `i32` code (surrounding whitespace allowed).
pub fn parse_status(output: &str) -> Result<JobStatus, ExecError> {
    let line = output.trim();
    match line {
        "running" => Ok(JobStatus::Running),
        "cancelled" => Ok(JobStatus::Cancelled),
        "lost" => Ok(JobStatus::Lost),
        _ => line
            .strip_prefix("exited ")
            .and_then(|code| code.parse::<i32>().ok())
            .map(JobStatus::Exited)
            .ok_or_else(|| ExecError::Protocol(format!("job status `{}`", truncate(line, 80)))),
    }
}

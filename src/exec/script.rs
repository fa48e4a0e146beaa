//! The POSIX shell scripts that start, inspect, cancel and claim jobs on a target.
//!
//! Every script is rendered by a pure function from plain values, quoted with one
//! [`quote`], and run under `sh -c` (never `bash`), on this machine by
//! [`super::LocalExecutor`] and over SSH by [`super::SshExecutor`]. Both executors
//! run the very same text, so a job started by one can be read and cancelled by
//! the other and the rules of the job's files live in one place.

use super::{
    CANCEL_FILE, CANCELLING_FILE, CLAIM_FILE, Container, EXIT_FILE, ExecError, JOB_LOG, JobStatus,
    PID_FILE,
};

/// File in the run directory holding the start time of the job's leader, in clock
/// ticks since boot (field 22 of Linux `/proc/<pid>/stat`, see `proc(5)`). It tells
/// the job from an unrelated process that got the same process ID after the job
/// ended. Absent on a target without `/proc`.
pub(crate) const START_FILE: &str = "job.start";

/// Seconds [`cancel_script`] waits between `SIGTERM` and `SIGKILL`.
pub(crate) const CANCEL_GRACE_SECONDS: u32 = 10;

/// Seconds [`job_script`] waits, once the job's command has ended, between sending
/// `SIGTERM` to what is left of its process group and sending `SIGKILL`. Shorter
/// than [`CANCEL_GRACE_SECONDS`], so a cancel racing the wrapper's own clean-up
/// never has to escalate because of the wrapper.
pub(crate) const REAP_GRACE_SECONDS: u32 = 5;

/// POSIX shell functions shared by the status and cancel scripts.
///
/// - `job_alive DIR PID` succeeds while the process group `PID` lives and is the
///   job's: when `/proc/PID/stat` and `DIR/job.start` both exist, the leader's start
///   time must match the recorded one, so a recycled process ID never reads as the
///   job.
/// - `group_signal SIGNAL PID` sends `SIGNAL` (a name such as `TERM`) to the whole
///   process group `PID` and ignores a group that is already gone.
///
/// A process group ID is never reused while any member of the group lives (Linux
/// `alloc_pid` keeps it reserved), so a live group without its leader is still the
/// job's.
pub const GROUP_SIGNAL: &str = r#"start_of() {
  [ -r "/proc/$1/stat" ] || return 1
  IFS= read -r ob_stat < "/proc/$1/stat" || return 1
  ob_rest=${ob_stat##*) }
  set -f
  # shellcheck disable=SC2086
  set -- $ob_rest
  set +f
  [ "$#" -ge 20 ] || return 1
  eval "printf '%s\n' \"\${20}\""
}
job_alive() {
  kill -s 0 -- "-$2" 2>/dev/null || return 1
  if [ -r "$1/job.start" ] && ob_now=$(start_of "$2"); then
    IFS= read -r ob_then < "$1/job.start" || return 0
    [ "$ob_now" = "$ob_then" ] || return 1
  fi
  return 0
}
group_signal() {
  kill -s "$1" -- "-$2" 2>/dev/null || true
}
"#;

/// Quotes `text` as one POSIX shell word: inside single quotes, with each `'`
/// written as `'\''`. Any byte string survives: `sh -c "printf %s $(quote x)"`
/// prints `x` back unchanged.
#[must_use]
pub fn quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('\'');
    for c in text.chars() {
        if c == '\'' {
            quoted.push_str("'\\''");
        } else {
            quoted.push(c);
        }
    }
    quoted.push('\'');
    quoted
}

/// The wrapper that runs a job's `script` in the run directory `dir`.
///
/// It changes to `dir`, records its own process ID in [`PID_FILE`] (and its start
/// time in `job.start` where `/proc` exists), both through a rename, runs `script` in
/// a subshell with standard output and error appended to [`JOB_LOG`] and standard
/// input from `/dev/null`, then writes the script's exit code to [`EXIT_FILE`]
/// through a rename. A wrapper killed by a signal writes no exit code. The caller
/// starts it in its own process group (the wrapper is the group's leader) with the
/// job's environment already set.
///
/// Once [`EXIT_FILE`] is written the wrapper stops what is left of its own process
/// group, such as data-loader workers of a main process that the OOM killer took:
/// it ignores `SIGTERM` itself, sends `SIGTERM` to the group, waits up to
/// [`REAP_GRACE_SECONDS`] for every other live member (`/proc/*/stat` field 5,
/// the process group, see `proc(5)`; zombies do not count) to be gone, and sends
/// `SIGKILL` to the group (itself included, its exit code being written) when any
/// is left or when the target has no `/proc` to tell. [`status_script`] reads such
/// a job as exited throughout: [`EXIT_FILE`] wins over a live group when no cancel
/// marker exists.
#[must_use]
pub fn job_script(dir: &str, script: &str) -> String {
    format!(
        r#"cd {dir} || exit 1
{GROUP_SIGNAL}if ob_start=$(start_of $$); then printf '%s\n' "$ob_start" > {start}.tmp && mv -f {start}.tmp {start}; fi
printf '%s\n' $$ > {pid}.tmp && mv -f {pid}.tmp {pid}
( {script}
) >> {log} 2>&1 < /dev/null
ob_code=$?
printf '%s\n' "$ob_code" > {exit}.tmp && mv -f {exit}.tmp {exit}
ob_others() {{
  [ -r "/proc/$$/stat" ] || return 0
  for ob_f in /proc/[0-9]*/stat; do
    [ "$ob_f" = "/proc/$$/stat" ] && continue
    {{ IFS= read -r ob_s < "$ob_f"; }} 2>/dev/null || continue
    ob_r=${{ob_s##*) }}
    set -f
    # shellcheck disable=SC2086
    set -- $ob_r
    set +f
    [ "$#" -ge 3 ] && [ "$3" = "$$" ] && [ "$1" != Z ] && return 0
  done
  return 1
}}
trap '' TERM
group_signal TERM $$
ob_i=0
while ob_others; do
  if [ "$ob_i" -ge {reap_ticks} ]; then group_signal KILL $$; break; fi
  sleep 0.2 2>/dev/null || sleep 1
  ob_i=$((ob_i + 1))
done
"#,
        dir = quote(dir),
        start = START_FILE,
        pid = PID_FILE,
        log = JOB_LOG,
        exit = EXIT_FILE,
        reap_ticks = REAP_GRACE_SECONDS * 5,
    )
}

/// A script that prints the status of the job `pid` in `dir` as one line that
/// [`parse_status`] reads: `running`, `exited <code>`, `cancelled` or `lost`.
///
/// Precedence, first match wins:
/// 1. `dir` is missing: `lost`.
/// 2. [`CANCEL_FILE`] exists: `cancelled`.
/// 3. [`CANCELLING_FILE`] exists: `running` while the group lives, else the exit
///    code when [`EXIT_FILE`] holds one, else `cancelled`.
/// 4. [`EXIT_FILE`] exists: `exited <code>`.
/// 5. The group lives (and is the job's, see [`GROUP_SIGNAL`]): `running`.
/// 6. Otherwise `lost`.
#[must_use]
pub fn status_script(dir: &str, pid: u32) -> String {
    format!(
        r#"{GROUP_SIGNAL}d={dir}
p={pid}
if [ ! -d "$d" ]; then echo lost; exit 0; fi
if [ -e "$d/{cancelled}" ]; then echo cancelled; exit 0; fi
ob_code=
if [ -r "$d/{exit}" ]; then IFS= read -r ob_code < "$d/{exit}" || true; fi
if [ -e "$d/{cancelling}" ]; then
  if job_alive "$d" "$p"; then echo running
  elif [ -n "$ob_code" ]; then echo "exited $ob_code"
  else echo cancelled
  fi
  exit 0
fi
if [ -e "$d/{exit}" ]; then echo "exited $ob_code"; exit 0; fi
if job_alive "$d" "$p"; then echo running; else echo lost; fi
"#,
        dir = quote(dir),
        cancelled = CANCEL_FILE,
        cancelling = CANCELLING_FILE,
        exit = EXIT_FILE,
    )
}

/// A script that cancels the job `pid` in `dir`, following the contract of
/// [`super::Executor::cancel`].
///
/// When there is a `container`, it is stopped and removed
/// ([`super::runtime::container_stop`]) whatever the job's state, so a container
/// that outlived its wrapper is stopped too: at once when the run directory is
/// gone, [`CANCEL_FILE`] exists or the job already exited by itself (then nothing
/// more is done). Otherwise the script writes [`CANCELLING_FILE`], stops the
/// container, sends `SIGTERM` to the group, waits up to 10 seconds, sends `SIGKILL`
/// if it still lives, and once the group is gone stops the container again (the
/// job's script may have started its next stage's container, under the same name,
/// between the first stop and the group's end) and writes [`CANCEL_FILE`]. It exits
/// 3 when the group survives `SIGKILL` for 10 more seconds, and 4, after doing the
/// rest, when the engine did not answer (the message names the command).
#[must_use]
pub fn cancel_script(dir: &str, pid: u32, container: Option<&Container>) -> String {
    let stop = container.map_or_else(|| ":\n".to_owned(), super::runtime::container_stop);
    format!(
        r#"{GROUP_SIGNAL}d={dir}
p={pid}
ob_stop_container() {{
{stop}}}
ob_wait_gone() {{
  ob_i=0
  while job_alive "$d" "$p"; do
    [ "$ob_i" -ge "$1" ] && return 1
    sleep 0.2 2>/dev/null || sleep 1
    ob_i=$((ob_i + 1))
  done
  return 0
}}
[ -d "$d" ] || {{ ob_stop_container; echo gone; exit "${{ob_stop_rc:-0}}"; }}
if [ -e "$d/{cancelled}" ]; then ob_stop_container; echo cancelled; exit "${{ob_stop_rc:-0}}"; fi
if [ ! -e "$d/{cancelling}" ] && [ -e "$d/{exit}" ] && ! job_alive "$d" "$p"; then
  ob_stop_container; echo exited; exit "${{ob_stop_rc:-0}}"
fi
: > "$d/{cancelling}"
ob_stop_container
if job_alive "$d" "$p"; then
  group_signal TERM "$p"
  if ! ob_wait_gone {grace_ticks}; then
    group_signal KILL "$p"
    if ! ob_wait_gone 50; then echo "process group $p survived SIGKILL" >&2; exit 3; fi
  fi
fi
ob_stop_container
: > "$d/{cancelled}"
echo cancelled
exit "${{ob_stop_rc:-0}}"
"#,
        dir = quote(dir),
        cancelled = CANCEL_FILE,
        cancelling = CANCELLING_FILE,
        exit = EXIT_FILE,
        grace_ticks = CANCEL_GRACE_SECONDS * 5,
    )
}

/// A script that claims `dir` for `owner` (one line): creates `dir` and its
/// parents, then [`CLAIM_FILE`] exclusively (`set -C`, which opens with `O_EXCL`)
/// holding `owner`. Prints `claimed` when the claim is new or already held by
/// `owner`, `taken` when [`CLAIM_FILE`] holds anything else.
#[must_use]
pub fn claim_script(dir: &str, owner: &str) -> String {
    format!(
        r#"d={dir}
o={owner}
mkdir -p -- "$d" || exit 1
if (set -C; printf '%s\n' "$o" > "$d/{claim}") 2>/dev/null; then echo claimed; exit 0; fi
[ -f "$d/{claim}" ] || {{ echo "cannot create $d/{claim}" >&2; exit 1; }}
IFS= read -r ob_held < "$d/{claim}" || true
if [ "$ob_held" = "$o" ]; then echo claimed; else echo taken; fi
"#,
        dir = quote(dir),
        owner = quote(owner),
        claim = CLAIM_FILE,
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

/// The first `max` characters of `text`.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sh_echo(word: &str) -> Vec<u8> {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf %s {}", quote(word)))
            .output()
            .unwrap();
        out.stdout
    }

    #[test]
    fn quote_survives_awkward_words() {
        for word in [
            "", "a b", "it's", "'", "-n", "$HOME", "`x`", "a\nb", "\\", "é",
        ] {
            assert_eq!(sh_echo(word), word.as_bytes(), "{word:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn quote_round_trips_through_sh(word in "[^\u{0}]{0,40}") {
            prop_assert_eq!(sh_echo(&word), word.as_bytes());
        }

        #[test]
        fn parse_status_reads_what_the_script_prints(code in any::<i32>(), pick in 0_u8..4) {
            let (text, status) = match pick {
                0 => ("running".to_owned(), JobStatus::Running),
                1 => ("cancelled".to_owned(), JobStatus::Cancelled),
                2 => ("lost".to_owned(), JobStatus::Lost),
                _ => (format!("exited {code}"), JobStatus::Exited(code)),
            };
            prop_assert_eq!(parse_status(&format!("{text}\n")).unwrap(), status);
        }

        #[test]
        fn parse_status_never_panics(text in ".{0,40}") {
            let _ = parse_status(&text);
        }
    }

    #[test]
    fn parse_status_rejects_garbage() {
        for text in [
            "",
            "exited",
            "exited x",
            "exited 99999999999",
            "runnin",
            "Running",
        ] {
            assert!(parse_status(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn scripts_pass_shellcheck_where_installed() {
        let Ok(path) = which_shellcheck() else { return };
        let container = Container {
            engine: crate::config::Engine::Docker,
            name: "overbrainer-r1".into(),
        };
        for script in [
            job_script("/w/r 1", "echo hi"),
            status_script("/w/r 1", 42),
            cancel_script("/w/r 1", 42, Some(&container)),
            claim_script("/w/r 1", "owner"),
        ] {
            let out = std::process::Command::new(&path)
                .args(["-s", "sh", "-e", "SC2016,SC3040", "-"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .and_then(|mut child| {
                    use std::io::Write;
                    child.stdin.take().unwrap().write_all(script.as_bytes())?;
                    child.wait_with_output()
                })
                .unwrap();
            assert!(
                out.status.success(),
                "{script}\n{}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }

    fn which_shellcheck() -> Result<std::path::PathBuf, ()> {
        let candidate = std::path::Path::new("/usr/bin/shellcheck");
        if candidate.exists() {
            Ok(candidate.to_path_buf())
        } else {
            Err(())
        }
    }
}

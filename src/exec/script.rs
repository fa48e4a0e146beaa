//! The POSIX shell scripts that start, inspect, cancel and claim jobs on a target.
//!
//! Every script is rendered by a pure function from plain values, quoted with one
//! [`quote`], and run under `sh -c` (never `bash`), on this machine by
//! [`super::LocalExecutor`] and over SSH by [`super::SshExecutor`]. Both executors
//! run the very same text, so a job started by one can be read and cancelled by
//! the other and the rules of the job's files live in one place.

use super::shell::quote;
use super::{
    CANCEL_FILE, CANCELLING_FILE, CLAIM_FILE, Container, EXIT_FILE, ExecError, JOB_LOG, JobStatus,
    LEFTOVERS_FILE, PID_FILE, RUN_MARKER_VAR,
};

/// File in the run directory holding the identity of the job's leader, one line,
/// written by [`job_script`] before [`PID_FILE`]. It tells the job from an unrelated
/// process that got the same process ID later (after the job ended, or after a
/// reboot). Two forms, one per kind of target:
///
/// - `proc <boot-id> <start>` where `/proc` exists (Linux): the kernel's boot ID
///   (`/proc/sys/kernel/random/boot_id`, `-` when unreadable) and the leader's start
///   time in clock ticks since boot (field 22 of `/proc/<pid>/stat`, see `proc(5)`);
/// - `ps <lstart>` where it does not (macOS, the BSDs): the start time as
///   `LC_ALL=C ps -o lstart= -p <pid>` prints it, blanks collapsed.
///
/// A run directory of an older layout may hold the bare start time in ticks; it is
/// compared with the start time of a `proc` identity. Without this file (or with one
/// that cannot be read) the job's identity cannot be established: the job reads as
/// gone and [`cancel_script`] signals nothing (see [`GROUP_SIGNAL`]).
pub(crate) const START_FILE: &str = "job.start";

/// File in the run directory holding the job's run marker: 32 lowercase hexadecimal
/// digits drawn from `/dev/urandom` by [`job_script`], which exports it as
/// [`RUN_MARKER_VAR`] in the job's subshell only (the wrapper's own helpers, such as
/// the command substitutions of its clean-up, must not carry it, or the clean-up
/// would wait for itself). Every program the job runs inherits it, including workers that leave the job's process group with `setsid`, so the
/// scripts find the job's processes through `/proc/<pid>/environ` as well as through
/// the group. Absent where `/dev/urandom` cannot be read.
pub(crate) const MARKER_FILE: &str = "job.marker";

/// Seconds [`cancel_script`] waits between `SIGTERM` and `SIGKILL`, and again after
/// `SIGKILL` before it names the processes still there as leftovers.
pub(crate) const CANCEL_GRACE_SECONDS: u32 = 10;

/// Seconds [`job_script`] waits, once the job's command has ended, between sending
/// `SIGTERM` to what is left of the job's processes and sending `SIGKILL`. Shorter
/// than [`CANCEL_GRACE_SECONDS`], so a cancel racing the wrapper's own clean-up
/// never has to escalate because of the wrapper.
pub(crate) const REAP_GRACE_SECONDS: u32 = 5;

/// POSIX shell functions shared by the wrapper, status and cancel scripts. Where
/// `/proc` exists they read `/proc` only; elsewhere they use `ps`.
///
/// - `ob_identity PID` prints the identity of process `PID` in the form of
///   [`START_FILE`], and fails when no process has that ID or its identity cannot
///   be read.
/// - `ob_leader DIR PID` compares the identity of `PID` with the one recorded in
///   `DIR/job.start`: `0` when they match, `2` when no process has that ID (the
///   leader is gone), `1` otherwise, which includes a missing or unreadable
///   `job.start` and a process whose identity cannot be read.
/// - `ob_members PGID` prints the live members of process group `PGID`: zombies
///   (state `Z`) do not count, so a group left with zombies under a `PID 1` that
///   does not reap them is gone.
/// - `ob_marked DIR` prints the live processes whose environment holds the job's
///   run marker ([`MARKER_FILE`]), from `/proc/<pid>/environ`; none without `/proc`.
/// - `ob_group_ours DIR PID` succeeds when the process group `PID` is the job's:
///   its leader's identity matches, or the leader is gone while `DIR/job.start`
///   exists. A process group ID is never reused while any member of the group lives
///   (Linux `alloc_pid` keeps it reserved), so a live group without its leader is
///   still the job's.
/// - `job_alive DIR PID` succeeds while any of the job's processes lives: a marked
///   process, or a live member of its group when the group is the job's.
/// - `ob_survivors DIR PID` prints those processes, one ID a line.
/// - `ob_signal SIGNAL DIR PID` sends `SIGNAL` (a name such as `TERM`) to the
///   job's group (`kill -s SIGNAL -- -PID`, only when the group is the job's) and to
///   every marked process.
/// - `group_signal SIGNAL PID` sends `SIGNAL` to the whole process group `PID` and
///   ignores a group that is already gone.
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
ob_identity() {
  if [ -d /proc/self ]; then
    ob_t=$(start_of "$1") || return 1
    ob_b=-
    if [ -r /proc/sys/kernel/random/boot_id ]; then
      IFS= read -r ob_b < /proc/sys/kernel/random/boot_id || ob_b=-
      [ -n "$ob_b" ] || ob_b=-
    fi
    printf 'proc %s %s\n' "$ob_b" "$ob_t"
  else
    ob_l=$(LC_ALL=C ps -o lstart= -p "$1" 2>/dev/null) || return 1
    set -f
    # shellcheck disable=SC2086
    set -- $ob_l
    set +f
    [ "$#" -gt 0 ] || return 1
    printf 'ps %s\n' "$*"
  fi
}
ob_leader() {
  [ -r "$1/job.start" ] || return 1
  ob_then=
  IFS= read -r ob_then < "$1/job.start" || [ -n "$ob_then" ] || return 1
  if ob_now=$(ob_identity "$2"); then
    case $ob_then in
      'proc '*|'ps '*) [ "$ob_now" = "$ob_then" ] && return 0 ;;
      ''|*[!0-9]*) ;;
      *) case $ob_now in 'proc '*) [ "${ob_now##* }" = "$ob_then" ] && return 0 ;; esac ;;
    esac
    return 1
  fi
  kill -s 0 "$2" 2>/dev/null && return 1
  [ -d /proc/self ] && [ -e "/proc/$2" ] && return 1
  return 2
}
ob_members() {
  kill -s 0 -- "-$1" 2>/dev/null || return 0
  ob_g=$1
  if [ -d /proc/self ]; then
    for ob_f in /proc/[0-9]*/stat; do
      { IFS= read -r ob_s < "$ob_f"; } 2>/dev/null || continue
      ob_pid=${ob_f#/proc/}
      ob_pid=${ob_pid%/stat}
      ob_s=${ob_s##*) }
      set -f
      # shellcheck disable=SC2086
      set -- $ob_s
      set +f
      [ "$#" -ge 3 ] && [ "$3" = "$ob_g" ] && [ "$1" != Z ] && [ "$1" != X ] && printf '%s\n' "$ob_pid"
    done
  else
    LC_ALL=C ps -A -o pid= -o pgid= -o stat= 2>/dev/null |
      awk -v g="$ob_g" '$2 == g && $3 !~ /^Z/ { print $1 }'
  fi
  return 0
}
ob_marked() {
  [ -d /proc/self ] && [ -r "$1/job.marker" ] || return 0
  ob_m=
  IFS= read -r ob_m < "$1/job.marker" || [ -n "$ob_m" ] || return 0
  case $ob_m in ''|*[!0-9a-f]*) return 0 ;; esac
  grep -l -z -x -F -e "OVERBRAINER_RUN_MARKER=$ob_m" /proc/[0-9]*/environ 2>/dev/null |
    while IFS= read -r ob_e; do
      ob_pid=${ob_e#/proc/}
      ob_pid=${ob_pid%/environ}
      [ "$ob_pid" = "$$" ] && continue
      { IFS= read -r ob_s < "/proc/$ob_pid/stat"; } 2>/dev/null || continue
      ob_s=${ob_s##*) }
      case $ob_s in Z*|X*) continue ;; esac
      printf '%s\n' "$ob_pid"
    done
  return 0
}
ob_group_ours() {
  ob_leader "$1" "$2"
  [ "$?" -ne 1 ]
}
ob_survivors() {
  { ob_marked "$1"; if ob_group_ours "$1" "$2"; then ob_members "$2"; fi; } | awk '!ob_seen[$0]++'
}
job_alive() {
  [ -n "$(ob_marked "$1")" ] && return 0
  ob_group_ours "$1" "$2" || return 1
  [ -n "$(ob_members "$2")" ]
}
group_signal() {
  kill -s "$1" -- "-$2" 2>/dev/null || true
}
ob_signal() {
  if ob_group_ours "$2" "$3"; then group_signal "$1" "$3"; fi
  for ob_q in $(ob_marked "$2"); do kill -s "$1" "$ob_q" 2>/dev/null || true; done
}
"#;

/// The wrapper that runs a job's `script` in the run directory `dir`.
///
/// It changes to `dir`, draws the job's run marker from `/dev/urandom`, records it in
/// [`MARKER_FILE`] (and exports it as [`RUN_MARKER_VAR`] in the job's subshell), records its own identity
/// in [`START_FILE`] and its process ID in [`PID_FILE`] (each through a rename, the
/// process ID last), runs `script` in a subshell with standard output and error
/// appended to [`JOB_LOG`] and standard input from `/dev/null`, then writes the
/// script's exit code to [`EXIT_FILE`] through a rename. A wrapper killed by a
/// signal writes no exit code. The caller starts it in its own process group (the
/// wrapper is the group's leader) with the job's environment already set; the
/// marker is set here, after the local executor filtered `OVERBRAINER_*` out.
///
/// Once [`EXIT_FILE`] is written the wrapper stops what is left of the job: the
/// other live members of its process group, such as data-loader workers of a main
/// process that the OOM killer took, and every process that carries the run marker,
/// such as a worker that left the group with `setsid`. It ignores `SIGTERM` itself,
/// sends `SIGTERM` to them, waits up to [`REAP_GRACE_SECONDS`] for them to be gone
/// (zombies do not count), and sends `SIGKILL` to those left (to the group last,
/// itself included, its exit code being written). [`status_script`] reads such a
/// job as exited throughout: [`EXIT_FILE`] wins over live processes when no cancel
/// marker exists.
#[must_use]
pub fn job_script(dir: &str, script: &str) -> String {
    format!(
        r#"cd {dir} || exit 1
{GROUP_SIGNAL}ob_marker=$(od -A n -N 16 -t x1 /dev/urandom 2>/dev/null | tr -d ' \n')
case $ob_marker in
  *[!0-9a-f]*) ob_marker= ;;
  ????????????????????????????????)
    printf '%s\n' "$ob_marker" > {marker}.tmp && mv -f {marker}.tmp {marker} ;;
  *) ob_marker= ;;
esac
if ob_id=$(ob_identity $$); then printf '%s\n' "$ob_id" > {start}.tmp && mv -f {start}.tmp {start}; fi
printf '%s\n' $$ > {pid}.tmp && mv -f {pid}.tmp {pid}
( if [ -n "$ob_marker" ]; then {var}=$ob_marker; export {var}; fi
{script}
) >> {log} 2>&1 < /dev/null
ob_code=$?
printf '%s\n' "$ob_code" > {exit}.tmp && mv -f {exit}.tmp {exit}
ob_others() {{
  [ -z "$(ob_marked .)" ] || return 0
  [ -d /proc/self ] || {{ [ -n "$(ob_members $$)" ]; return; }}
  for ob_f in /proc/[0-9]*/stat; do
    [ "$ob_f" = "/proc/$$/stat" ] && continue
    {{ IFS= read -r ob_s < "$ob_f"; }} 2>/dev/null || continue
    ob_s=${{ob_s##*) }}
    set -f
    # shellcheck disable=SC2086
    set -- $ob_s
    set +f
    [ "$#" -ge 3 ] && [ "$3" = "$$" ] && [ "$1" != Z ] && [ "$1" != X ] && return 0
  done
  return 1
}}
ob_stop() {{
  for ob_q in $(ob_marked .); do kill -s "$1" "$ob_q" 2>/dev/null || true; done
  group_signal "$1" $$
}}
trap '' TERM
ob_stop TERM
ob_i=0
while ob_others; do
  if [ "$ob_i" -ge {reap_ticks} ]; then ob_stop KILL; break; fi
  sleep 0.2 2>/dev/null || sleep 1
  ob_i=$((ob_i + 1))
done
"#,
        dir = quote(dir),
        var = RUN_MARKER_VAR,
        marker = MARKER_FILE,
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
/// 3. [`CANCELLING_FILE`] exists: `running` while a process of the job lives,
///    else the exit code when [`EXIT_FILE`] holds one, else `cancelled`.
/// 4. [`EXIT_FILE`] exists: `exited <code>`.
/// 5. A process of the job lives (`job_alive` of [`GROUP_SIGNAL`]: a process with
///    its run marker, or a live member of its group whose leader's identity
///    matches [`START_FILE`]; zombies do not count): `running`.
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

/// A script that cancels the job `pid` in `dir`, following the contract of
/// [`super::Executor::cancel`], and prints one line that [`parse_cancel`] reads.
///
/// When there is a `container`, it is stopped and removed
/// ([`super::engine::container_stop`]) whatever the job's state, so a container
/// that outlived its wrapper is stopped too, and once more after the processes are
/// gone (the job's script may have started its next stage's container, under the
/// same name, between the first stop and the group's end). Then the script prints
/// `gone` when the run directory is gone, `cancelled` and does nothing more when
/// [`CANCEL_FILE`] exists without [`LEFTOVERS_FILE`], and `exited` when the job
/// already exited by itself and none of its processes lives, or none does once the
/// wrapper had the time to stop what was left ([`REAP_GRACE_SECONDS`] and two more).
/// Otherwise it writes [`CANCELLING_FILE`], sends `SIGTERM` to the job's processes
/// (its process group when the group is the job's, and every process carrying its
/// run marker, see [`GROUP_SIGNAL`]), waits up to [`CANCEL_GRACE_SECONDS`], sends
/// `SIGKILL` to those left and waits as long again. Processes still there then
/// (zombies do not count) are written to [`LEFTOVERS_FILE`], one ID a line, and
/// printed as `leftovers <pid>...`; [`CANCEL_FILE`] is written in either case and
/// the answer is `cancelled` when none is left. A later cancel of a job with
/// leftovers signals what is still there again and rewrites [`LEFTOVERS_FILE`]
/// (removing it when none is left).
///
/// When the job's identity cannot be established ([`START_FILE`] is missing or
/// names another process, and no process carries the marker) nothing is
/// signalled. The script exits 4, after doing all the rest, when the engine did not
/// answer in time (its standard error names the command).
#[must_use]
pub fn cancel_script(dir: &str, pid: u32, container: Option<&Container>) -> String {
    let stop = container.map_or_else(|| ":\n".to_owned(), super::engine::container_stop);
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
ob_again=
if [ -e "$d/{cancelled}" ]; then
  if [ -s "$d/{leftovers}" ]; then
    ob_again=1
  else
    ob_stop_container; echo cancelled; exit "${{ob_stop_rc:-0}}"
  fi
fi
if [ -z "$ob_again" ] && [ ! -e "$d/{cancelling}" ] && [ -e "$d/{exit}" ] && ob_wait_gone {settle_ticks}; then
  ob_stop_container; echo exited; exit "${{ob_stop_rc:-0}}"
fi
[ -n "$ob_again" ] || : > "$d/{cancelling}"
ob_stop_container
if job_alive "$d" "$p"; then
  ob_signal TERM "$d" "$p"
  if ! ob_wait_gone {grace_ticks}; then
    ob_signal KILL "$d" "$p"
    ob_wait_gone {grace_ticks} || true
  fi
fi
ob_stop_container
ob_left=$(ob_survivors "$d" "$p" | tr '\n' ' ')
if [ -n "$ob_left" ]; then
  # shellcheck disable=SC2086
  printf '%s\n' $ob_left > "$d/{leftovers}.tmp" && mv -f "$d/{leftovers}.tmp" "$d/{leftovers}"
else
  rm -f "$d/{leftovers}"
fi
[ -e "$d/{cancelled}" ] || : > "$d/{cancelled}"
if [ -n "$ob_left" ]; then echo "leftovers $ob_left"; else echo cancelled; fi
exit "${{ob_stop_rc:-0}}"
"#,
        dir = quote(dir),
        cancelled = CANCEL_FILE,
        cancelling = CANCELLING_FILE,
        leftovers = LEFTOVERS_FILE,
        exit = EXIT_FILE,
        grace_ticks = CANCEL_GRACE_SECONDS * 5,
        settle_ticks = (REAP_GRACE_SECONDS + 2) * 5,
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

/// Reads the one-line answer of [`cancel_script`]: `cancelled`, `exited` (the job
/// had ended by itself) and `gone` (no run directory) are a finished cancel;
/// `leftovers <pid>...` is [`ExecError::Leftovers`] with those process IDs.
///
/// # Errors
///
/// [`ExecError::Leftovers`] as said, and [`ExecError::Protocol`] for anything else.
pub fn parse_cancel(output: &str) -> Result<(), ExecError> {
    let line = output.trim();
    match line {
        "cancelled" | "exited" | "gone" => Ok(()),
        _ => {
            let pids = line
                .strip_prefix("leftovers ")
                .map(parse_pids)
                .filter(|pids| pids.as_ref().is_some_and(|pids| !pids.is_empty()));
            match pids {
                Some(Some(pids)) => Err(ExecError::Leftovers { pids }),
                _ => Err(ExecError::Protocol(format!(
                    "cancel answer `{}`",
                    truncate(line, 80)
                ))),
            }
        }
    }
}

/// Process IDs separated by blanks or line breaks, sorted without duplicates; `None`
/// when any word is not a decimal `u32`.
pub(crate) fn parse_pids(text: &str) -> Option<Vec<u32>> {
    let mut pids = text
        .split_whitespace()
        .map(|word| word.parse::<u32>().ok())
        .collect::<Option<Vec<u32>>>()?;
    pids.sort_unstable();
    pids.dedup();
    Some(pids)
}

/// The first `max` characters of `text`.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests run real programs and read the test environment"
)]
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
    fn parse_cancel_reads_what_the_script_prints() {
        for done in ["cancelled\n", "exited\n", " gone "] {
            assert!(parse_cancel(done).is_ok(), "{done:?}");
        }
        match parse_cancel("leftovers 42 7 42 \n") {
            Err(ExecError::Leftovers { pids }) => assert_eq!(pids, [7, 42]),
            other => panic!("{other:?}"),
        }
        let error = parse_cancel("leftovers 9").unwrap_err();
        assert_eq!(error.to_string(), "cancelled with leftovers: 9");
        for garbage in [
            "",
            "leftovers",
            "leftovers ",
            "leftovers x",
            "leftovers -1",
            "Cancelled",
        ] {
            assert!(
                matches!(parse_cancel(garbage), Err(ExecError::Protocol(_))),
                "{garbage:?}"
            );
        }
    }

    #[test]
    fn parse_pids_sorts_dedups_and_refuses_words() {
        assert_eq!(parse_pids("3\n1 3\n"), Some(vec![1, 3]));
        assert_eq!(parse_pids(""), Some(vec![]));
        assert_eq!(parse_pids("1 x"), None);
    }

    #[test]
    fn the_shell_functions_use_the_files_and_variable_of_this_module() {
        for name in [START_FILE, MARKER_FILE] {
            assert!(GROUP_SIGNAL.contains(&format!("/{name}\"")), "{name}");
        }
        assert!(GROUP_SIGNAL.contains(&format!("{RUN_MARKER_VAR}=$ob_m")));
        let wrapper = job_script("/w/r1", "true");
        assert!(wrapper.contains(&format!("export {RUN_MARKER_VAR}")));
    }

    /// A job that ends while the status script looks (its wrapper writes the exit
    /// code and is gone between the look at the files and the look at its processes)
    /// reads `exited`, never `lost`: seen under load once the wrapper no longer lingers.
    #[test]
    fn regression_a_job_that_ends_while_its_status_is_read_is_exited_not_lost() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_str().unwrap();
        for (marker, expected) in [(None, "exited 3"), (Some(CANCELLING_FILE), "exited 3")] {
            let _ = std::fs::remove_file(dir.path().join(EXIT_FILE));
            if let Some(marker) = marker {
                std::fs::write(dir.path().join(marker), "").unwrap();
            }
            // `job_alive` stands in for the wrapper's last moment: it writes the exit
            // code, then no process of the job is left.
            let start = format!("d={}\n", quote(path));
            let script = status_script(path, 4242).replacen(
                &start,
                &format!(
                    "{start}job_alive() {{ printf '3\\n' > \"$d/{EXIT_FILE}\"; return 1; }}\n"
                ),
                1,
            );
            assert!(script.contains("return 1; }"), "{script}");
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(&script)
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim(),
                expected,
                "{marker:?}"
            );
        }
    }

    /// The wrapper's clean-up must not count its own helpers (the command
    /// substitutions it scans `/proc` from) as what is left of the job: a job that
    /// leaves nothing behind ends its wrapper at once, by itself, never through the
    /// `SIGKILL` that ends a clean-up whose grace ran out.
    #[test]
    fn regression_a_wrapper_whose_job_left_nothing_exits_without_killing_itself() {
        use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_str().unwrap();
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(job_script(path, "echo done"))
            .process_group(0)
            .status()
            .unwrap();
        assert_eq!(
            (status.signal(), status.code()),
            (None, Some(0)),
            "the wrapper waited out its grace and killed its own group"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join(EXIT_FILE)).unwrap(),
            "0\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join(JOB_LOG)).unwrap(),
            "done\n"
        );
    }

    /// Runs the shell functions with `body` in a scratch directory `dir`.
    fn run_functions(dir: &std::path::Path, body: &str) -> (bool, String) {
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{GROUP_SIGNAL}{body}"))
            .current_dir(dir)
            .output()
            .unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    }

    #[test]
    fn ob_leader_tells_the_job_from_another_process_and_a_gone_one() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // This very shell, recorded by its own identity: the leader.
        let (_, out) = run_functions(
            d,
            "ob_identity $$ > job.start; ob_leader . $$; echo \"rc $?\"",
        );
        assert_eq!(out.trim(), "rc 0");
        // Legacy form: the bare start time.
        let (_, out) = run_functions(
            d,
            "ob_identity $$ | { read -r k b t; echo \"$t\"; } > job.start; ob_leader . $$; echo \"rc $?\"",
        );
        assert_eq!(out.trim(), "rc 0");
        // Another identity, then none recorded: not the job.
        std::fs::write(d.join("job.start"), "proc - 1\n").unwrap();
        let (_, out) = run_functions(d, "ob_leader . $$; echo \"rc $?\"");
        assert_eq!(out.trim(), "rc 1");
        std::fs::remove_file(d.join("job.start")).unwrap();
        let (_, out) = run_functions(d, "ob_leader . $$; echo \"rc $?\"");
        assert_eq!(out.trim(), "rc 1");
        // A process ID no process has: the leader is gone.
        std::fs::write(d.join("job.start"), "proc - 1\n").unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let (_, out) = run_functions(d, &format!("ob_leader . {gone}; echo \"rc $?\""));
        assert_eq!(out.trim(), "rc 2");
    }

    #[test]
    fn scripts_pass_shellcheck() {
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
            crate::exec::shellcheck::assert_passes(&script, "SC2016,SC3040");
        }
    }
}

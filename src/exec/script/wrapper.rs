//! The wrapper every job runs in: its identity, run marker and files, and the clean-up
//! of what its command left behind.
use super::functions::GROUP_SIGNAL;
use super::{MARKER_FILE, START_FILE, TICKS_PER_SECOND, tick};
use crate::env::TimeScale;
use crate::exec::{EXIT_FILE, JOB_LOG, PID_FILE, RUN_MARKER_VAR};
use crate::shell::quote;

/// Seconds [`job_script`] waits, once the job's command has ended, between sending
/// `SIGTERM` to what is left of the job's processes and sending `SIGKILL`. Shorter
/// than [`CANCEL_GRACE_SECONDS`](super::cancel::CANCEL_GRACE_SECONDS), so a cancel
/// racing the wrapper's own clean-up never has to escalate because of the wrapper.
pub(crate) const REAP_GRACE_SECONDS: u32 = 5;

/// The wrapper that runs a job's `script` in the run directory `dir`.
///
/// It changes to `dir`, draws the job's run marker from `/dev/urandom`, records it in
/// `job.marker` (and exports it as [`RUN_MARKER_VAR`] in the job's subshell), records its own identity
/// in `job.start` and its process ID in [`PID_FILE`] (each through a rename, the
/// process ID last), runs `script` in a subshell with standard output and error
/// appended to [`JOB_LOG`] and standard input from `/dev/null`, then writes the
/// script's exit code to [`EXIT_FILE`] through a rename. A wrapper killed by a
/// signal writes no exit code. The caller starts it in its own process group (the
/// wrapper is the group's leader) with the job's environment already set; the
/// marker is set here, in the job's subshell only.
///
/// Once [`EXIT_FILE`] is written the wrapper stops what is left of the job: the
/// other live members of its process group, such as data-loader workers of a main
/// process that the OOM killer took, and every process that carries the run marker,
/// such as a worker that left the group with `setsid`. It ignores `SIGTERM` itself,
/// sends `SIGTERM` to them, waits up to `REAP_GRACE_SECONDS` (5 seconds of `scale`)
/// for them to be gone (zombies do not count), and sends `SIGKILL` to those left (to
/// the group last, itself included, its exit code being written).
/// [`status_script`](super::status_script) reads such a job as exited throughout: [`EXIT_FILE`] wins over live processes when no cancel
/// marker exists.
#[must_use]
pub fn job_script(dir: &str, script: &str, scale: TimeScale) -> String {
    wrapper(dir, script, scale, None, false)
}

/// What a job's wrapper does when its batch shell receives `SIGUSR1` (issue 19): the
/// scheduler's warning before the time limit (`sbatch --signal=B:USR1@SECONDS`). The
/// wrapper writes `content` to `file` in the run directory, through a rename.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadlineSignal {
    /// File name in the run directory (the snapshot request of a training job).
    pub file: String,
    /// Its content (the request's reason).
    pub content: String,
}

/// [`job_script`] for a job whose wrapper is the batch shell of a Slurm job (issue 19).
///
/// With `deadline`, the job's subshell runs in the background and is waited for, so
/// that `SIGUSR1` is handled at once (a shell runs a trap only once its foreground
/// command ended): its trap writes `deadline`'s file. The wait goes on after the trap
/// while the subshell lives, and the exit code is the subshell's. The subshell's
/// `SIGINT` is ignored, as for any background command of a non-interactive shell; the
/// scheduler stops a job with `SIGTERM` and `SIGKILL`.
///
/// Slurm signals a job's processes one at a time, not as one process group, so the
/// job's command can end while the wrapper still runs when the scheduler stops the job
/// (a cancel's `scancel`, the time limit, a preemption): killed by its `SIGTERM`, or
/// ending normally because the children it waited for were killed first (`wait`
/// then returns 0). [`EXIT_FILE`] is only for a job that ended by itself, so before
/// writing it the wrapper asks the controller (`scontrol -o show job $SLURM_JOB_ID`,
/// bounded by `SCHEDULER_ASK_SECONDS` where `timeout` exists) and writes nothing when
/// the job is in any state but running: the controller marks a job it ends
/// `COMPLETING` (with its reason: `TimeLimit`...) before the first signal leaves,
/// while a job ending by itself is still running until its batch shell, this
/// wrapper, exits. When the controller cannot be asked, the code is written, as
/// before. A job in a container stopped by a cancel (its engine's `stop`, while the
/// scheduler still runs the job) writes its code, which the cancel waits for.
#[must_use]
pub fn batch_job_script(
    dir: &str,
    script: &str,
    scale: TimeScale,
    deadline: Option<&DeadlineSignal>,
) -> String {
    wrapper(dir, script, scale, deadline, true)
}

/// Seconds a Slurm batch wrapper waits at most for the controller's answer before it
/// writes its job's exit code ([`batch_job_script`]).
pub(crate) const SCHEDULER_ASK_SECONDS: u32 = 30;

/// The shell function a Slurm batch wrapper asks before it writes its job's exit code:
/// true when the scheduler is ending the job, so that the end is not the job's own.
fn scheduler_ended() -> String {
    format!(
        r#"ob_scheduler_ended() {{
  [ -n "${{SLURM_JOB_ID:-}}" ] || return 1
  ob_t=
  if command -v timeout >/dev/null 2>&1; then ob_t="timeout -k 5 {SCHEDULER_ASK_SECONDS}"; fi
  case " $($ob_t scontrol -o show job "$SLURM_JOB_ID" 2>/dev/null | head -n 1) " in
    *" JobState=RUNNING "*|*" JobState=CONFIGURING "*|*" JobState=SUSPENDED "*) return 1 ;;
    *" JobState="*) return 0 ;;
  esac
  return 1
}}
"#
    )
}

fn wrapper(
    dir: &str,
    script: &str,
    scale: TimeScale,
    deadline: Option<&DeadlineSignal>,
    batch: bool,
) -> String {
    let (trap, background, wait) = match deadline {
        None => (String::new(), "", "ob_code=$?\n".to_owned()),
        Some(signal) => {
            let file = quote(&signal.file);
            let tmp = quote(&format!("{}.tmp", signal.file));
            (
                format!(
                    "ob_deadline() {{\n  {{ printf '%s\\n' {content} > {tmp} && mv -f {tmp} {file}; }} 2>/dev/null || rm -f {tmp}\n}}\ntrap ob_deadline USR1\n",
                    content = quote(&signal.content),
                ),
                " &",
                "ob_child=$!\nwhile :; do\n  wait \"$ob_child\"\n  ob_code=$?\n  kill -s 0 \"$ob_child\" 2>/dev/null || break\ndone\ntrap '' USR1\n".to_owned(),
            )
        }
    };
    let (functions, keep) = if batch {
        (scheduler_ended(), "ob_scheduler_ended || ")
    } else {
        (String::new(), "")
    };
    format!(
        r#"cd {dir} || exit 1
{GROUP_SIGNAL}{functions}ob_marker=$(od -A n -N 16 -t x1 /dev/urandom 2>/dev/null | tr -d ' \n')
case $ob_marker in
  *[!0-9a-f]*) ob_marker= ;;
  ????????????????????????????????)
    {{ printf '%s\n' "$ob_marker" > {marker}.tmp && mv -f {marker}.tmp {marker}; }} || rm -f {marker}.tmp ;;
  *) ob_marker= ;;
esac
if ob_id=$(ob_identity $$); then {{ printf '%s\n' "$ob_id" > {start}.tmp && mv -f {start}.tmp {start}; }} || rm -f {start}.tmp; fi
{{ printf '%s\n' $$ > {pid}.tmp && mv -f {pid}.tmp {pid}; }} || rm -f {pid}.tmp
{trap}( if [ -n "$ob_marker" ]; then {var}=$ob_marker; export {var}; fi
{script}
) >> {log} 2>&1 < /dev/null{background}
{wait}{keep}{{ printf '%s\n' "$ob_code" > {exit}.tmp && mv -f {exit}.tmp {exit}; }} || rm -f {exit}.tmp
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
  sleep {tick} 2>/dev/null || sleep 1
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
        reap_ticks = REAP_GRACE_SECONDS * TICKS_PER_SECOND,
        tick = tick(scale),
        trap = trap,
        background = background,
        wait = wait,
        keep = keep,
    )
}

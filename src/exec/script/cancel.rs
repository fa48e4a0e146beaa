//! The cancel script and its one-line answer.
use super::functions::GROUP_SIGNAL;
use super::wrapper::REAP_GRACE_SECONDS;
use super::{TICKS_PER_SECOND, tick, truncate};
use crate::env::TimeScale;
use crate::exec::{
    CANCEL_FILE, CANCELLING_FILE, CONTAINER_ID_FILE, Container, EXIT_FILE, ExecError,
    LEFTOVERS_FILE,
};
use crate::shell::quote;

/// Seconds [`cancel_script`] waits between `SIGTERM` and `SIGKILL`, and again after
/// `SIGKILL` before it names the processes still there as leftovers.
pub(crate) const CANCEL_GRACE_SECONDS: u32 = 10;

/// How long a cancel waits, after stopping a job's container, for the job to end by
/// itself before it signals the job's processes (scaled as every wait of the script).
const CONTAINER_SETTLE_SECONDS: u32 = 3;

/// A script that cancels the job `pid` in `dir`, following the contract of
/// [`crate::exec::Executor::cancel`], and prints one line that [`parse_cancel`] reads.
///
/// When there is a `container`, the container whose ID the job recorded in
/// [`CONTAINER_ID_FILE`] (read again at each stop) is stopped and removed
/// ([`crate::exec::container_stop`]) whatever the job's state, and no other: a
/// container of the job's name that the job never started is left alone. The engine
/// runs with the environment the job's start recorded
/// ([`ENGINE_ENV_DIR`](crate::exec::ENGINE_ENV_DIR)), not the cancelling shell's, so a
/// cancel from a shell with another `CONTAINERS_CONF` or `DOCKER_HOST` still finds
/// the container. A container
/// that outlived its wrapper is stopped too, and once more after the processes are
/// gone (the job's script may have started its next stage's container, under the
/// same name, between the first stop and the group's end). Then the script prints
/// `gone` when the run directory is gone, `cancelled` and does nothing more when
/// [`CANCEL_FILE`] exists without [`LEFTOVERS_FILE`], and `exited` when the job
/// already exited by itself and none of its processes lives, or none does once the
/// wrapper had the time to stop what was left (the wrapper's reap grace of 5 seconds, and two more).
/// Otherwise it writes [`CANCELLING_FILE`], sends `SIGTERM` to the job's processes
/// (its process group when the group is the job's, and every process carrying its
/// run marker, see [`GROUP_SIGNAL`]), waits up to `CANCEL_GRACE_SECONDS` (10 seconds
/// of `scale`, as every wait of this script), sends
/// `SIGKILL` to those left and waits as long again. Processes still there then
/// (zombies do not count) are written to [`LEFTOVERS_FILE`], one ID a line, and
/// printed as `leftovers <pid>...`; [`CANCEL_FILE`] is written in either case and
/// the answer is `cancelled` when none is left. A later cancel of a job with
/// leftovers signals what is still there again and rewrites [`LEFTOVERS_FILE`]
/// (removing it when none is left).
///
/// When the job's identity cannot be established (its `job.start` file is missing or
/// names another process, and no process carries the marker) nothing is
/// signalled. The script exits 4, after doing all the rest, when the engine did not
/// answer in time (its standard error names the command).
#[must_use]
pub fn cancel_script(
    dir: &str,
    pid: u32,
    container: Option<&Container>,
    scale: TimeScale,
) -> String {
    let stop = container.map_or_else(
        || ":\n".to_owned(),
        |container| {
            format!(
                "{}{}{}",
                crate::exec::engine::read_container_id(&format!("\"$d/{CONTAINER_ID_FILE}\"")),
                crate::exec::engine::restore_engine_env("\"$d\""),
                crate::exec::engine::container_stop(container)
            )
        },
    );
    // A job whose container was just stopped ends by itself once its engine client
    // returns: it is given that time before any signal, so the container is stopped
    // first and the job's own shell never sees TERM (under load the client can take
    // seconds to return).
    let after_stop = if container.is_some() {
        format!(
            "ob_wait_gone {} || true\n",
            CONTAINER_SETTLE_SECONDS * TICKS_PER_SECOND
        )
    } else {
        String::new()
    };
    format!(
        r#"{GROUP_SIGNAL}d={dir}
p={pid}
ob_stop_container() {{
{stop}}}
ob_wait_gone() {{
  ob_i=0
  while job_alive "$d" "$p"; do
    [ "$ob_i" -ge "$1" ] && return 1
    sleep {tick} 2>/dev/null || sleep 1
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
{after_stop}if job_alive "$d" "$p"; then
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
        grace_ticks = CANCEL_GRACE_SECONDS * TICKS_PER_SECOND,
        settle_ticks = (REAP_GRACE_SECONDS + 2) * TICKS_PER_SECOND,
        after_stop = after_stop,
        tick = tick(scale),
    )
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

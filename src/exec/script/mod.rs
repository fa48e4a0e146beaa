//! The POSIX shell scripts that start, inspect, cancel and claim jobs on a target.
//!
//! Every script is rendered by a pure function from plain values, quoted with one
//! [`quote`], and run under `sh -c` (never `bash`), on this machine by
//! [`super::LocalExecutor`] and over SSH by [`super::SshExecutor`]. Both executors
//! run the very same text, so a job started by one can be read and cancelled by
//! the other and the rules of the job's files live in one place.
//!
//! By concern: `functions.rs` ([`GROUP_SIGNAL`], the shell functions that find and
//! signal a job's processes), `wrapper.rs` ([`job_script`]), `status.rs`
//! ([`status_script`] and its answer), `cancel.rs` ([`cancel_script`] and its answer),
//! `claim.rs` ([`claim_script`]). Their waiting loops tick five times a rule second,
//! each tick one fifth of the executor's [`TimeScale`] second.

mod cancel;
mod claim;
mod functions;
mod status;
#[cfg(test)]
mod tests;
mod wrapper;

use std::time::Duration;

use crate::env::TimeScale;

pub(crate) use cancel::parse_pids;
pub use cancel::{cancel_script, parse_cancel};
pub use claim::claim_script;
pub use functions::GROUP_SIGNAL;
pub use status::{parse_status, status_script};
pub use wrapper::{DeadlineSignal, batch_job_script, job_script};

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

/// Ticks of the scripts' waiting loops in one rule second.
const TICKS_PER_SECOND: u32 = 5;

/// One tick of the scripts' waiting loops on `scale`, as `sleep`'s argument in
/// seconds with three decimals (`0.200` in real time). Where `sleep` takes whole
/// seconds only, the scripts sleep `1` instead.
fn tick(scale: TimeScale) -> String {
    let millis = scale
        .scale(Duration::from_secs(1) / TICKS_PER_SECOND)
        .as_millis();
    format!("{}.{:03}", millis / 1000, millis % 1000)
}

/// The first `max` characters of `text`.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

//! The jobs beside a run (an export, a compare): a job directory of its own inside the
//! run directory (`exports/export_<stamp>/`, `compares/compare_<stamp>/`, named
//! `<prefix>_<YYYYMMDD>-<HHMMSS>` in UTC, with `_2`, `_3`, … when another process claimed
//! that one first; EXP-2, CMP-4), and following such a job to its end.

use tokio_util::sync::CancellationToken;

use crate::exec::{AnyExecutor, ExecError, Executor as _, JOB_LOG, JobHandle, JobStatus};

/// Claims `<run_dir>/<parent>/<prefix>_<stamp>[_<n>]/` on the target; returns its ID and
/// its directory.
///
/// # Errors
///
/// An [`ExecError`] when the target cannot be reached or the directory made.
pub async fn stamped(
    executor: &AnyExecutor,
    run_dir: &str,
    parent: &str,
    prefix: &str,
) -> Result<(String, String), ExecError> {
    let owner = format!("{} {:016x}", std::process::id(), rand::random::<u64>());
    let stamp = jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S").to_string();
    let mut n = 1_u32;
    loop {
        let id = if n == 1 {
            format!("{prefix}_{stamp}")
        } else {
            format!("{prefix}_{stamp}_{n}")
        };
        let dir = format!("{run_dir}/{parent}/{id}");
        if executor.claim(&dir, &owner).await? {
            return Ok((id, dir));
        }
        n += 1;
    }
}

/// How often a side job's log and status are read (scaled by the test-only time factor).
const SIDE_JOB_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// Follows `job` until it ends, handing each new line of its `job.log` to `on_line`;
/// [`JobStatus::Running`] when `cancel` fired first (the caller cancels the job).
///
/// # Errors
///
/// An [`ExecError`] when its status cannot be read.
pub async fn follow(
    executor: &AnyExecutor,
    job: &JobHandle,
    cancel: &CancellationToken,
    mut on_line: impl FnMut(String),
) -> Result<JobStatus, ExecError> {
    let mut log = executor.tail(&format!("{}/{JOB_LOG}", job.dir()), 0);
    // A side job takes seconds to minutes: a training run's 1 s poll would add half of
    // one to each on average (issue 14's speed goal).
    let poll = executor.time_scale().poll(SIDE_JOB_POLL);
    loop {
        if let Ok(lines) = log.poll().await {
            lines.into_iter().for_each(&mut on_line);
        }
        let status = executor.job_status(job).await?;
        if status.is_finished() {
            if let Ok(lines) = log.poll().await {
                lines.into_iter().for_each(&mut on_line);
            }
            return Ok(status);
        }
        tokio::select! {
            () = cancel.cancelled() => return Ok(JobStatus::Running),
            () = tokio::time::sleep(poll) => {}
        }
    }
}

/// The step a job's log line announces (`<prefix>step <what>`), if it is one.
#[must_use]
pub fn step<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    line.trim().strip_prefix(prefix)?.strip_prefix("step ")
}

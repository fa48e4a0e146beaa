//! What the scheduler and the run directory say of a Slurm job (issue 19): the status
//! script (one probe: `scontrol -o show job ID`, then the markers), its parsed answer,
//! and the executor's precedence over both. Pure, table-tested.

use crate::exec::{CANCEL_FILE, CANCELLING_FILE, EXIT_FILE, ExecError, JobStatus};
use crate::shell::quote;

/// A Slurm job state (`JobState=` of `scontrol`), grouped by what it means for a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchedulerState {
    /// Waiting for resources, priority, a node...
    Pending,
    /// Allocated: running, configuring, completing, suspended, requeued.
    Running,
    /// Ended by itself (its batch script's exit status is the wrapper's).
    Completed,
    /// Ended with a non-zero exit status, or launching it failed.
    Failed,
    /// Cancelled (`scancel`, or by an administrator).
    Cancelled,
    /// Killed at its time limit.
    Timeout,
    /// One of its nodes failed.
    NodeFail,
    /// Preempted by another job.
    Preempted,
    /// Killed for using more memory than it asked for.
    OutOfMemory,
    /// Its nodes could not be booted.
    BootFail,
    /// It passed its `--deadline`.
    Deadline,
    /// A state this version does not know, as printed.
    Other(String),
}

impl SchedulerState {
    /// Reads `JobState=`'s value.
    #[must_use]
    pub fn parse(word: &str) -> Self {
        match word {
            "PENDING" => Self::Pending,
            "RUNNING" | "CONFIGURING" | "COMPLETING" | "SUSPENDED" | "REQUEUED"
            | "REQUEUE_HOLD" | "REQUEUE_FED" | "RESIZING" | "SIGNALING" | "STAGE_OUT"
            | "STOPPED" | "RESV_DEL_HOLD" => Self::Running,
            "COMPLETED" => Self::Completed,
            "FAILED" => Self::Failed,
            "CANCELLED" => Self::Cancelled,
            "TIMEOUT" => Self::Timeout,
            "NODE_FAIL" => Self::NodeFail,
            "PREEMPTED" => Self::Preempted,
            "OUT_OF_MEMORY" => Self::OutOfMemory,
            "BOOT_FAIL" => Self::BootFail,
            "DEADLINE" => Self::Deadline,
            other => Self::Other(other.to_owned()),
        }
    }

    /// Whether the job may still run: pending or allocated (an unknown state counts,
    /// so it is never taken for an end).
    #[must_use]
    pub fn is_active(&self) -> bool {
        matches!(self, Self::Pending | Self::Running | Self::Other(_))
    }
}

/// A job as `scontrol -o show job` prints it: its state, the scheduler's reason (the
/// `Reason=` of a pending job: `Priority`, `Resources`, `ReqNodeNotAvail`...) and the
/// batch script's exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulerJob {
    /// `JobState=`.
    pub state: SchedulerState,
    /// `Reason=`, unless `None`.
    pub reason: Option<String>,
    /// `ExitCode=`, as printed (`0:0`, `1:0`, `0:15`).
    pub exit_code: Option<String>,
}

impl SchedulerJob {
    /// Reads one line of `scontrol -o show job ID`; `None` when it holds no
    /// `JobState=`.
    #[must_use]
    pub fn parse(line: &str) -> Option<Self> {
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|word| word.strip_prefix(name))
                .map(str::to_owned)
        };
        let state = SchedulerState::parse(&field("JobState=")?);
        let reason = field("Reason=").filter(|reason| reason != "None");
        Some(Self {
            state,
            reason: reason.map(|reason| reason.replace('_', " ")),
            exit_code: field("ExitCode="),
        })
    }

    /// The scheduler's word on a job that waits in its queue (`pending on Slurm
    /// (reason)`); `None` once it was allocated or ended. A waiting job counts as
    /// running for the executor (`combine`), but a run shows it `pending` and starts
    /// no stall clock for it (issue 33).
    #[must_use]
    pub fn queued(&self) -> Option<String> {
        match self.state {
            SchedulerState::Pending => self.note(),
            _ => None,
        }
    }

    /// What a run says of this job beyond its status: why it waits, or why the
    /// scheduler ended it. `None` for a job running, completed, cancelled or failed
    /// (its exit code says it).
    #[must_use]
    pub fn note(&self) -> Option<String> {
        let text = match &self.state {
            SchedulerState::Pending => {
                return Some(match &self.reason {
                    Some(reason) => format!("pending on Slurm ({reason})"),
                    None => "pending on Slurm".to_owned(),
                });
            }
            SchedulerState::Timeout => {
                "Slurm killed the job at its time limit (`max_hours`) before it saved a snapshot"
            }
            SchedulerState::NodeFail => "a node of the Slurm job failed",
            SchedulerState::Preempted => "Slurm preempted the job",
            SchedulerState::OutOfMemory => {
                "Slurm killed the job for using more memory than it asked for (`mem_gb`)"
            }
            SchedulerState::BootFail => "Slurm could not boot the job's nodes",
            SchedulerState::Deadline => "the Slurm job passed its deadline",
            SchedulerState::Running
            | SchedulerState::Failed
            | SchedulerState::Completed
            | SchedulerState::Cancelled
            | SchedulerState::Other(_) => return None,
        };
        Some(text.to_owned())
    }
}

/// What the scheduler answered for a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scheduler {
    /// It knows the job.
    Known(SchedulerJob),
    /// It no longer knows it (`Invalid job id`: it forgot the job after `MinJobAge`).
    Forgotten,
    /// It could not be asked (the controller is down or restarting); the message.
    Unreachable(String),
}

/// The run directory's markers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Markers {
    /// The run directory exists.
    pub dir: bool,
    /// [`CANCEL_FILE`] exists.
    pub cancelled: bool,
    /// [`CANCELLING_FILE`] exists.
    pub cancelling: bool,
    /// [`EXIT_FILE`]'s code.
    pub exit: Option<i32>,
}

/// The status probe: the scheduler first, then the markers, so that a job the
/// scheduler reports ended has written its exit code before the markers are read.
#[must_use]
pub fn status_script(dir: &str, job: u64) -> String {
    format!(
        r#"ob_s=$(scontrol -o show job {job} 2>&1)
ob_r=$?
printf 'scheduler %s ' "$ob_r"
printf '%s\n' "$ob_s" | head -n 1
d={dir}
if [ -d "$d" ]; then echo dir; fi
if [ -e "$d/{cancelled}" ]; then echo cancelled; fi
if [ -e "$d/{cancelling}" ]; then echo cancelling; fi
if [ -r "$d/{exit}" ]; then ob_c=; IFS= read -r ob_c < "$d/{exit}" || true; echo "exit $ob_c"; fi
"#,
        dir = quote(dir),
        cancelled = CANCEL_FILE,
        cancelling = CANCELLING_FILE,
        exit = EXIT_FILE,
    )
}

/// Seconds a sample's `srun` may take on the login node before it is abandoned
/// (`timeout`, then `SIGKILL` 5 s later): a step that cannot start (the controller
/// slow, step creation held back) costs the follower one bounded wait, not its polls.
pub const SAMPLE_TIMEOUT_SECONDS: u32 = 20;

/// The first line of [`sample_script`]'s answer when the job does not run (waiting in
/// the queue, ended, forgotten): no node to sample, so no sample.
pub const NOT_RUNNING: &str = "ob_not_running";

/// The sample of a running job's node (issue 33), run on the login node: when
/// `scontrol` says the job runs, `probe` runs in a step of its allocation on its first
/// node (`srun --jobid --overlap --nodes=1 --ntasks=1`, beside the job's own steps),
/// after a `slurm_job` line from the step's environment; otherwise, or without
/// `timeout` to bound it, [`NOT_RUNNING`]. overbrainer's own variables are unset first:
/// `srun` carries the caller's environment into the step.
#[must_use]
pub fn sample_script(job: u64, probe: &str) -> String {
    let step = format!("echo \"slurm_job ${{SLURM_JOB_ID:-}}\"\n{probe}");
    format!(
        r#"if ! command -v timeout >/dev/null 2>&1; then echo {NOT_RUNNING}; exit 0; fi
ob_t="timeout -k 5 {SAMPLE_TIMEOUT_SECONDS}"
case " $($ob_t scontrol -o show job {job} 2>/dev/null | head -n 1) " in
  *" JobState=RUNNING "*) ;;
  *) echo {NOT_RUNNING}; exit 0 ;;
esac
{strip}
exec $ob_t srun --jobid={job} --overlap --nodes=1 --ntasks=1 --job-name=overbrainer-sample --quiet sh -c {step} </dev/null
"#,
        step = quote(&step),
        strip = super::submit::strip_line(),
    )
}

/// Seconds the container stop of [`cancel_script`] may take on the login node
/// (`timeout`, then `SIGKILL` 5 s later): the engine's `stop -t 30`, `rm -f` and its
/// wait for the container to be gone (each bounded on the node), and a margin.
pub const CANCEL_STOP_SECONDS: u32 = 150;

/// Ticks of a fifth of a second the node's step of [`cancel_script`] waits, once the
/// container is stopped, for the job's wrapper to write its exit code: the job then
/// ends by itself (its engine client returned) and its shell never sees `SIGTERM`.
const CANCEL_SETTLE_TICKS: u32 = 50;

/// The step of [`cancel_script`] on the job's node: stops and removes the job's
/// container, then waits for the job's exit code.
fn cancel_step(dir: &str, container: &crate::exec::Container) -> String {
    format!(
        "d={dir}\n{read}{restore}{stop}ob_i=0\nwhile [ ! -e \"$d/{exit}\" ] && [ \"$ob_i\" -lt {CANCEL_SETTLE_TICKS} ]; do\n  sleep 0.2 2>/dev/null || sleep 1\n  ob_i=$((ob_i + 1))\ndone\nexit \"${{ob_stop_rc:-0}}\"\n",
        dir = quote(dir),
        read = crate::exec::engine::read_container_id(&format!(
            "\"$d/{}\"",
            crate::exec::CONTAINER_ID_FILE
        )),
        restore = crate::exec::engine::restore_engine_env("\"$d\""),
        stop = crate::exec::engine::container_stop(container),
        exit = EXIT_FILE,
    )
}

/// The cancel of Slurm job `job` in the run directory `dir`, run on the login node:
/// nothing when `dir` is gone; otherwise [`CANCELLING_FILE`] first, then, for a
/// job that runs in a `container` while `scontrol` says the job runs, a step in its
/// allocation on its first node (`srun --jobid --overlap --nodes=1 --ntasks=1`, as
/// [`sample_script`] does) that stops and removes the container whose ID the job
/// recorded ([`crate::exec::CONTAINER_ID_FILE`]) with the engine environment of its
/// start, as the cancel of a local or ssh job does
/// ([`crate::exec::engine::container_stop`]), then waits up to 10 s for the job's
/// exit code. The container is no child of the job (Podman's `conmon`, Docker's
/// daemon): `scancel` alone reaches the engine's client and leaves it running. The
/// step is bounded by `timeout` ([`CANCEL_STOP_SECONDS`]) where the login node has it;
/// its failure (the job ended meanwhile) is no error. Then `scancel`, whose failure
/// is an error only while the scheduler still has the job queued or running.
#[must_use]
pub fn cancel_script(dir: &str, job: u64, container: Option<&crate::exec::Container>) -> String {
    let stop = container.map_or_else(String::new, |container| {
        let step = cancel_step(dir, container);
        format!(
            r#"{strip}
ob_t=
if command -v timeout >/dev/null 2>&1; then ob_t="timeout -k 5 {CANCEL_STOP_SECONDS}"; fi
case " $($ob_t scontrol -o show job {job} 2>/dev/null | head -n 1) " in
  *" JobState=RUNNING "*)
    $ob_t srun --jobid={job} --overlap --nodes=1 --ntasks=1 --job-name=overbrainer-cancel --quiet sh -c {step} </dev/null >&2 || true ;;
esac
"#,
            strip = super::submit::strip_line(),
            step = quote(&step),
        )
    });
    format!(
        r#"d={dir}
[ -d "$d" ] || exit 0
: > "$d/{CANCELLING_FILE}" || exit 1
{stop}ob_out=$(scancel {job} 2>&1) || {{
  case " $(scontrol -o show job {job} 2>/dev/null | head -n 1) " in
    *" JobState=PENDING "*|*" JobState=RUNNING "*|*" JobState=CONFIGURING "*|*" JobState=SUSPENDED "*)
      printf '%s\n' "$ob_out" >&2; exit 1 ;;
  esac
}}
"#,
        dir = quote(dir),
    )
}

/// Reads the answer of [`status_script`].
///
/// # Errors
///
/// [`ExecError::Protocol`] when its first line is not the scheduler's.
pub fn parse_status(output: &str) -> Result<(Scheduler, Markers), ExecError> {
    let mut lines = output.lines();
    let first = lines.next().unwrap_or_default();
    let Some(rest) = first.strip_prefix("scheduler ") else {
        return Err(ExecError::Protocol(format!(
            "slurm status `{}`",
            crate::exec::script::truncate(first, 80)
        )));
    };
    let (code, text) = rest.split_once(' ').unwrap_or((rest, ""));
    let scheduler = match (code, SchedulerJob::parse(text)) {
        ("0", Some(job)) => Scheduler::Known(job),
        _ if text.contains("Invalid job id") => Scheduler::Forgotten,
        _ => Scheduler::Unreachable(crate::exec::script::truncate(text.trim(), 200)),
    };
    let mut markers = Markers::default();
    for line in lines {
        match line.trim() {
            "dir" => markers.dir = true,
            "cancelled" => markers.cancelled = true,
            "cancelling" => markers.cancelling = true,
            other => {
                if let Some(code) = other.strip_prefix("exit ") {
                    markers.exit = code.trim().parse().ok();
                }
            }
        }
    }
    Ok((scheduler, markers))
}

/// The job's status from both, with the executor's precedence (the markers first, as
/// [`crate::exec::status_script`] reads them, and the scheduler where a local target
/// looks at processes): no run directory: lost; [`CANCEL_FILE`]: cancelled; a
/// cancel under way while the scheduler still has the job: running; an exit code:
/// exited, unless it is a signal's death the scheduler dealt (cancelled, timed out,
/// preempted...); a cancel under way: cancelled; the scheduler has the job (pending counts):
/// running; otherwise lost. `None` when only the scheduler can say and it cannot be
/// asked: the caller fails the status rather than guess.
#[must_use]
pub fn combine(scheduler: &Scheduler, markers: &Markers) -> Option<JobStatus> {
    let active = match scheduler {
        Scheduler::Known(job) => Some(job.state.is_active()),
        Scheduler::Forgotten => Some(false),
        Scheduler::Unreachable(_) => None,
    };
    if !markers.dir {
        return Some(JobStatus::Lost);
    }
    if markers.cancelled {
        return Some(JobStatus::Cancelled);
    }
    if markers.cancelling && active != Some(false) {
        return active.map(|_| JobStatus::Running);
    }
    if let Some(code) = markers
        .exit
        .filter(|&code| !killed_by_scheduler(scheduler, code))
    {
        return Some(JobStatus::Exited(code));
    }
    if markers.cancelling {
        return Some(JobStatus::Cancelled);
    }
    if active? {
        Some(JobStatus::Running)
    } else {
        Some(JobStatus::Lost)
    }
}

/// Whether an exit code is a signal's death (above 128) that the scheduler dealt: it
/// cancelled the job, or killed it at its time limit, deadline, preemption or a node's
/// failure. The batch wrapper does not write such a code when it sees the scheduler
/// ending the job (`batch_job_script`); one written before the controller could be
/// asked does not count either, and the job reads as the scheduler's end.
fn killed_by_scheduler(scheduler: &Scheduler, code: i32) -> bool {
    let Scheduler::Known(job) = scheduler else {
        return false;
    };
    code > 128
        && matches!(
            job.state,
            SchedulerState::Cancelled
                | SchedulerState::Timeout
                | SchedulerState::Deadline
                | SchedulerState::Preempted
                | SchedulerState::NodeFail
        )
}

/// The partitions in `sinfo -h -o %R`'s answer, one a line.
#[must_use]
pub fn parse_partitions(output: &str) -> Vec<String> {
    let mut names: Vec<String> = output
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(|line| line.trim_end_matches('*').to_owned())
        .collect();
    names.dedup();
    names
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;

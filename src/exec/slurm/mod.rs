//! [`SlurmExecutor`] (issue 19): jobs submitted with `sbatch` through a cluster's login
//! node, which is this machine ([`super::LocalExecutor`]) or an SSH host
//! ([`super::SshExecutor`]); files move through that login node, whose `workdir` is on
//! the file system the nodes share. The batch shell is the job wrapper, so the run
//! directory holds `job.log`, `job.pid`, `exit_code` and the cancel markers as on any
//! target, written on the node.
//!
//! By concern: `submit.rs` (the options, the batch script, the launcher, `sbatch`'s
//! answer), `state.rs` (`scontrol -o show job` and the markers, and the precedence
//! over both), `job.rs` (the handle of a submitted job), `executor.rs` (the
//! executor).

mod executor;
mod job;
mod state;
mod submit;

pub use executor::{Login, SlurmExecutor};
pub use job::SlurmJob;
pub use state::{Markers, Scheduler, SchedulerJob, SchedulerState};
pub use submit::{BATCH_FILE, SLURM_OUT, SlurmOptions};

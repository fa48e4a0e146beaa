//! [`SlurmJob`]: the handle of a job a Slurm scheduler runs, beside the executor
//! contract's [`crate::exec::JobId`] of a job this process started.

use serde::{Deserialize, Serialize};

use crate::exec::Container;

/// Everything needed to find a submitted Slurm job again, from any process; stored in
/// `run.json` (inside a [`crate::exec::JobHandle`]). Unlike a
/// [`crate::exec::JobId`] it holds no process ID: the job may wait in the queue, its
/// wrapper starts on a node later, and its processes are the scheduler's to signal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlurmJob {
    /// Absolute run directory, on the file system the login node and the nodes share.
    pub dir: String,
    /// The job's container, when it has one.
    pub container: Option<Container>,
    /// The Slurm job ID `sbatch` answered.
    pub slurm_job: u64,
}

//! What the spawned flows send back to the event loop, on one channel.

use tracing::Level;

use crate::runs::{RunEvent, RunRecord};

/// One message from a flow task to the loop.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "a handful per run: an end carries the run's record"
)]
pub enum FlowEvent {
    /// A run event of task `task`.
    Run {
        /// The task.
        task: u64,
        /// The event.
        event: Box<RunEvent>,
    },
    /// Task `task` ended.
    Ended {
        /// The task.
        task: u64,
        /// How.
        end: TaskEnd,
    },
    /// The runs of `runs/`, freshly read.
    Runs(Vec<RunRecord>),
    /// The compares with a report, freshly read with the runs, newest first.
    Compares(Vec<crate::compare::listing::Listed>),
    /// The dataset under `data/`, freshly read with the runs (issue 17).
    Dataset(crate::dataset::listing::Listing),
    /// The project's spend from its ledger against `budget.max_usd` (issue 20), freshly
    /// read with the runs.
    Spend(super::components::footer::SpendShown),
    /// The ledger summed by stage, run and model, read with the spend (TUI-26).
    Ledger(Box<crate::budget::Summary>),
    /// News of the stage chain of task `task` (TUI-36..TUI-40).
    Stage {
        /// The task.
        task: u64,
        /// What happened.
        news: super::stages::StageNews,
    },
    /// A dataset deletion or edit ended (its status line follows): the data lock is free.
    DataWritten,
    /// A write or re-read of `overbrainer.toml` ended (TUI-13..TUI-20).
    Config(super::config_write::ConfigNews),
    /// The kept pod log of run `run`, read again (TUI-57): its lines, or why not.
    PodLog {
        /// The run.
        run: String,
        /// The lines, redacted and without terminal controls, or why they could not be read.
        lines: Result<Vec<String>, String>,
    },
    /// A Runpod read for a picker or the start confirmation ended.
    Runpod {
        /// What was asked.
        ask: super::app::RunpodAsk,
        /// What was read, or why not.
        read: Result<crate::runs::pod::preview::Read, String>,
    },
    /// A line for the Logs view (a flow's warning, in words).
    Log(Level, String),
    /// A message for the status line (a log export's file, or why none was written).
    Said {
        /// Success or failure.
        ok: bool,
        /// The message.
        text: String,
    },
}

/// How a task ended.
#[derive(Debug)]
pub enum TaskEnd {
    /// The run reached this record (a terminal state, or as a cancel left it).
    Ended(RunRecord),
    /// The follower detached; the job goes on.
    Detached(RunRecord),
    /// The flow failed or refused, in words.
    Failed(String),
}

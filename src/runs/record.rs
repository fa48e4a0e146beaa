//! `runs/<run-id>/run.json`: a run's record and its states (spec/training.md, RUN-8,
//! RUN-9), replaced through a rename (LAY-4); listing the runs of a project (RUN-44).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::RunError;
use crate::exec::JobHandle;

/// File name of a run's record, in its local run directory.
pub const RUN_JSON: &str = "run.json";

/// How a local record stores its directories: relative to the project.
const RELATIVE_RUNS: &str = "runs/";

/// `runs_dir` as the local executor names it (canonical), or as given when it cannot
/// be resolved.
fn canonical(runs_dir: &Path) -> String {
    std::fs::canonicalize(runs_dir)
        .unwrap_or_else(|_| runs_dir.to_path_buf())
        .to_string_lossy()
        .trim_end_matches('/')
        .to_owned()
}

/// A run's recorded state (RUN-9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Directory created, job not yet running.
    Starting,
    /// The job was submitted and waits in the scheduler's queue (a `slurm` target):
    /// `message` gives the scheduler's reason. No stall clock runs until it starts
    /// (issue 33) \[design\].
    Pending,
    /// Job started (or ended, results pending retrieval).
    Running,
    /// Job exited 0 with metrics; results retrieved and verified.
    Succeeded,
    /// Start error, non-zero exit, no metric line, or job lost.
    Failed,
    /// Cancelled by `train cancel`.
    Cancelled,
    /// Ended at a snapshot whose checkpoint was retrieved and is complete.
    Stopped,
    /// Training succeeded and its adapter was retrieved, but `axolotl merge-lora`
    /// failed: the adapter in `output/` is the usable result, and `train merge` redoes
    /// the merge alone \[design\].
    #[serde(rename = "merge_failed")]
    MergeFailed,
}

impl State {
    /// Whether the state is a terminal one: the four of RUN-9 and `merge_failed`.
    #[must_use]
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Succeeded | Self::Failed | Self::Cancelled | Self::Stopped | Self::MergeFailed
        )
    }

    /// The state's name as recorded.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Stopped => "stopped",
            Self::MergeFailed => "merge_failed",
        }
    }
}

/// Why a run stopped at a snapshot (RUN-8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SnapshotReason {
    /// `train stop`.
    Requested,
    /// A pod deadline (Runpod).
    Deadline,
    /// A pod cost limit (Runpod).
    Cost,
    /// A disk limit.
    Disk,
    /// The job stalled and `training.on_stall = "snapshot"` (issue 21).
    Stall,
}

impl SnapshotReason {
    /// The reason a snapshot line or request names (`requested`, `deadline`, `cost`,
    /// `disk`, `stall`); `None` for anything else.
    #[must_use]
    pub fn from_word(word: &str) -> Option<Self> {
        match word {
            "requested" => Some(Self::Requested),
            "deadline" => Some(Self::Deadline),
            "cost" => Some(Self::Cost),
            "disk" => Some(Self::Disk),
            "stall" => Some(Self::Stall),
            _ => None,
        }
    }
}

/// The snapshot of a stopped run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Directory name under `output/`, `checkpoint-N`.
    pub checkpoint: String,
    /// Optimizer step.
    pub step: u64,
    /// Why.
    pub reason: SnapshotReason,
}

/// A stall of the run's job, as its follower declared it (issue 21): the process group
/// lived but no new training step or eval progress line came within the bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stalled {
    /// UTC time the stall was declared.
    pub at: jiff::Timestamp,
    /// The last training step before it, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_step: Option<u64>,
    /// UTC time of that step's metric line (the target's clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_step_at: Option<jiff::Timestamp>,
    /// Seconds without progress when it was declared.
    pub silent_seconds: f64,
    /// What the follower did: `warn`, `snapshot` or `cancel` (`training.on_stall`).
    pub on_stall: crate::config::OnStall,
}

/// Kind of target a run ran on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    /// This machine.
    Local,
    /// A host over SSH.
    Ssh,
    /// A Runpod pod.
    Runpod,
    /// A Slurm cluster, through its login node (issue 19).
    Slurm,
}

/// `run.json` (RUN-8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Run ID.
    pub id: String,
    /// UTC creation time (RFC 3339).
    pub created: jiff::Timestamp,
    /// Target name.
    pub target: String,
    /// Target kind.
    pub target_kind: TargetKind,
    /// Run directory on the target, absolute \[design\]. A local target's (and its
    /// jobs' directories) are stored relative to the project (`runs/<id>`) and made
    /// absolute again by [`RunRecord::load`], so a copied or moved project works in its
    /// own run directories; an older record's absolute local paths are read as this
    /// project's.
    pub dir: String,
    /// The run's owner value in the target's `.claim` (RUN-3) \[design\].
    pub owner: String,
    /// Random suffix of the run's container names, `overbrainer-<run-id>-<suffix>`, so
    /// that two projects of one name starting a run in the same second on one machine
    /// do not collide \[design\]; absent in older records (their containers are named
    /// `overbrainer-<run-id>`, and each job's container is in its `job` anyway).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_suffix: Option<String>,
    /// The executor's job handle, once the job started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobHandle>,
    /// State.
    pub state: State,
    /// Reason of the last state change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Always `true`: the plugin honours `snapshot.request`.
    pub snapshots: bool,
    /// Snapshot of a stopped run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<Snapshot>,
    /// The stopped run this run resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_from: Option<String>,
    /// Whether `merge = true` was in effect at start \[design\].
    #[serde(default)]
    pub merge: bool,
    /// The job of the last `train merge` of a `merge_failed` run, once one started; its
    /// run directory is `<dir>/merge-<n>` \[design\].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_job: Option<JobHandle>,
    /// Steps in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u64>,
    /// Last step seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_step: Option<u64>,
    /// Last epoch seen \[design\].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<f64>,
    /// Last training loss (absent when unknown or not finite).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_loss: Option<f64>,
    /// Last eval loss (absent when unknown or not finite).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_eval_loss: Option<f64>,
    /// Whether the results came back and were verified.
    #[serde(default)]
    pub retrieved: bool,
    /// The job's last stall, when it stalled while followed (issue 21) \[design\].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalled: Option<Box<Stalled>>,
}

impl RunRecord {
    /// The record of a new run `id` in `dir` on `target` (of kind `target_kind`), as
    /// it is before its job starts: `starting`, owned by `owner`, nothing seen yet.
    /// The caller sets what its kind of start knows besides (a container suffix, the
    /// stopped run it resumes, whether it merges).
    #[must_use]
    pub fn starting(
        id: &str,
        created: jiff::Timestamp,
        target: &str,
        target_kind: TargetKind,
        dir: &str,
    ) -> Self {
        Self {
            id: id.to_owned(),
            created,
            target: target.to_owned(),
            target_kind,
            dir: dir.to_owned(),
            owner: id.to_owned(),
            container_suffix: None,
            job: None,
            state: State::Starting,
            message: None,
            snapshots: true,
            snapshot: None,
            resumed_from: None,
            merge: false,
            merge_job: None,
            max_steps: None,
            last_step: None,
            epoch: None,
            last_loss: None,
            last_eval_loss: None,
            retrieved: false,
            stalled: None,
        }
    }

    /// Writes the record to `runs/<id>/run.json` under `runs_dir`, through a rename.
    ///
    /// # Errors
    ///
    /// [`RunError::Io`] when the file cannot be written.
    pub fn save(&self, runs_dir: &Path) -> Result<(), RunError> {
        let path = runs_dir.join(&self.id).join(RUN_JSON);
        let mut stored = self.clone();
        if stored.target_kind == TargetKind::Local {
            let runs = canonical(runs_dir);
            stored.map_local_dirs(|dir| {
                dir.strip_prefix(&runs)
                    .and_then(|rest| rest.strip_prefix('/'))
                    .map(|rest| format!("{RELATIVE_RUNS}{rest}"))
            });
        }
        let mut text = serde_json::to_string_pretty(&stored).map_err(|e| RunError::Io {
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        text.push('\n');
        write_atomic(&path, text.as_bytes())
    }

    /// Reads `runs/<id>/run.json` under `runs_dir`.
    ///
    /// # Errors
    ///
    /// [`RunError::UnknownRun`] when the run does not exist, [`RunError::BadRecord`] when
    /// its record cannot be read.
    pub fn load(runs_dir: &Path, id: &str) -> Result<Self, RunError> {
        if !super::id::is_valid(id) {
            return Err(RunError::BadRunId(id.to_owned()));
        }
        let path = runs_dir.join(id).join(RUN_JSON);
        let text = match std::fs::read(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(RunError::UnknownRun(id.to_owned()));
            }
            Err(source) => return Err(RunError::Io { path, source }),
        };
        let text = crate::dataset::jsonl::strip_bom(&text);
        let mut record: Self =
            serde_json::from_slice(text).map_err(|error| RunError::BadRecord {
                path,
                reason: error.to_string(),
            })?;
        if record.target_kind == TargetKind::Local {
            record.absolute_local_dirs(&canonical(runs_dir));
        }
        Ok(record)
    }

    /// Applies `change` to the run directory and the job directories of a local
    /// record; `None` keeps a path as it is.
    fn map_local_dirs(&mut self, change: impl Fn(&str) -> Option<String>) {
        let paths = std::iter::once(&mut self.dir)
            .chain(self.job.as_mut().map(JobHandle::dir_mut))
            .chain(self.merge_job.as_mut().map(JobHandle::dir_mut));
        for path in paths {
            if let Some(changed) = change(path) {
                *path = changed;
            }
        }
    }

    /// A local record's directories as this project's, absolute under `runs` (the
    /// canonical `runs/`): a stored `runs/<id>/...` joined to it, and an older
    /// record's absolute `<elsewhere>/<id>/...` (a copied or moved project) moved
    /// under it.
    fn absolute_local_dirs(&mut self, runs: &str) {
        let old_root = self
            .dir
            .trim_end_matches('/')
            .strip_suffix(&format!("/{}", self.id))
            .filter(|root| root.starts_with('/') && *root != runs)
            .map(str::to_owned);
        self.map_local_dirs(|dir| {
            if let Some(rest) = dir.strip_prefix(RELATIVE_RUNS) {
                return Some(format!("{runs}/{rest}"));
            }
            let rest = dir.strip_prefix(old_root.as_deref()?)?;
            rest.starts_with('/').then(|| format!("{runs}{rest}"))
        });
    }

    /// Sets the metric summary fields, keeping only finite losses.
    pub fn set_summary(&mut self, summary: &crate::train::metrics::Summary) {
        let finite = |v: Option<f64>| v.filter(|v| v.is_finite());
        self.max_steps = summary.max_steps.or(self.max_steps);
        self.last_step = summary.last_step.or(self.last_step);
        self.epoch = finite(summary.epoch).or(self.epoch);
        self.last_loss = finite(summary.last_loss).or(self.last_loss);
        self.last_eval_loss = finite(summary.last_eval_loss).or(self.last_eval_loss);
    }
}

/// Replaces `path` with `bytes` through a temporary file in the same directory and a
/// rename (LAY-4). The temporary file is `.<name>.tmp`: the project lock (LCK-1) makes
/// this process the only writer, and a file left by a crashed writer is overwritten.
///
/// # Errors
///
/// [`RunError::Io`] when the file cannot be written.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RunError> {
    let io = |source| RunError::Io {
        path: path.to_owned(),
        source,
    };
    crate::project::write_atomic(path, bytes, &crate::project::temporary_for(path, false))
        .map_err(io)
}

/// Every readable run record under `runs_dir`, oldest first, and a warning for each
/// directory whose record cannot be read (RUN-5, RUN-44).
#[must_use]
pub fn list(runs_dir: &Path) -> (Vec<RunRecord>, Vec<String>) {
    let mut records = Vec::new();
    let mut warnings = Vec::new();
    let Ok(entries) = std::fs::read_dir(runs_dir) else {
        return (records, warnings);
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        match RunRecord::load(runs_dir, name) {
            Ok(record) => records.push(record),
            Err(error) => warnings.push(format!("skipped run `{name}`: {error}")),
        }
    }
    records.sort_by(|a, b| a.created.cmp(&b.created).then_with(|| a.id.cmp(&b.id)));
    (records, warnings)
}

/// A record of run `id` in `state` on target `local`, created 2026-01-02, for tests:
/// no job, nothing retrieved; callers change what they need.
#[cfg(test)]
pub(crate) fn fixture(id: &str, state: State) -> RunRecord {
    RunRecord {
        owner: "o".into(),
        state,
        ..RunRecord::starting(
            id,
            "2026-01-02T00:00:00Z".parse().expect("a timestamp"),
            "local",
            TargetKind::Local,
            &format!("/w/{id}"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, created: &str) -> RunRecord {
        RunRecord {
            created: created.parse().unwrap(),
            ..fixture(id, State::Starting)
        }
    }

    #[test]
    fn save_load_and_list() {
        let dir = tempfile::tempdir().unwrap();
        for (id, created) in [
            ("b_1", "2026-01-02T00:00:00Z"),
            ("a_1", "2026-01-03T00:00:00Z"),
        ] {
            std::fs::create_dir(dir.path().join(id)).unwrap();
            record(id, created).save(dir.path()).unwrap();
        }
        std::fs::create_dir(dir.path().join("broken")).unwrap();
        std::fs::write(dir.path().join("broken/run.json"), "{").unwrap();
        let loaded = RunRecord::load(dir.path(), "b_1").unwrap();
        // The fixture's local `/w/b_1` is read as this project's run directory.
        assert_eq!(
            loaded,
            RunRecord {
                dir: format!("{}/b_1", canonical(dir.path())),
                ..record("b_1", "2026-01-02T00:00:00Z")
            }
        );
        let text = std::fs::read_to_string(dir.path().join("b_1/run.json")).unwrap();
        assert!(text.contains("\"state\": \"starting\""), "{text}");
        assert!(
            text.contains("\"created\": \"2026-01-02T00:00:00Z\""),
            "{text}"
        );
        let (records, warnings) = list(dir.path());
        let ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["b_1", "a_1"]);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(matches!(
            RunRecord::load(dir.path(), "nope"),
            Err(RunError::UnknownRun(_))
        ));
        assert!(matches!(
            RunRecord::load(dir.path(), "../x"),
            Err(RunError::BadRunId(_))
        ));
    }

    #[test]
    fn a_local_record_stores_its_directories_relative_to_the_project_and_old_ones_move_with_it() {
        let project = tempfile::tempdir().unwrap();
        let runs_dir = project.path().join("runs");
        std::fs::create_dir_all(runs_dir.join("r_1")).unwrap();
        let runs = canonical(&runs_dir);
        let job = |dir: String| {
            crate::exec::JobId {
                dir,
                pid: crate::exec::Pid::new(7).unwrap(),
                container: None,
            }
            .into()
        };
        let record = RunRecord {
            dir: format!("{runs}/r_1"),
            job: Some(job(format!("{runs}/r_1"))),
            merge_job: Some(job(format!("{runs}/r_1/merge-1"))),
            ..fixture("r_1", State::Succeeded)
        };
        record.save(&runs_dir).unwrap();
        let text = std::fs::read_to_string(runs_dir.join("r_1/run.json")).unwrap();
        assert!(text.contains("\"dir\": \"runs/r_1\""), "{text}");
        assert!(text.contains("\"dir\": \"runs/r_1/merge-1\""), "{text}");
        assert!(!text.contains(&runs), "{text}");
        assert_eq!(RunRecord::load(&runs_dir, "r_1").unwrap(), record);
        // A copy of the project reads the copy's directories.
        let copy = tempfile::tempdir().unwrap();
        let copy_runs = copy.path().join("runs");
        std::fs::create_dir_all(copy_runs.join("r_1")).unwrap();
        std::fs::copy(
            runs_dir.join("r_1/run.json"),
            copy_runs.join("r_1/run.json"),
        )
        .unwrap();
        let copied = RunRecord::load(&copy_runs, "r_1").unwrap();
        let moved = canonical(&copy_runs);
        assert_eq!(copied.dir, format!("{moved}/r_1"));
        assert_eq!(
            copied.merge_job.unwrap().dir(),
            format!("{moved}/r_1/merge-1")
        );
        // An older record with absolute paths of another project is read as this one's.
        let old = serde_json::to_string(&record).unwrap();
        std::fs::write(copy_runs.join("r_1/run.json"), old).unwrap();
        let copied = RunRecord::load(&copy_runs, "r_1").unwrap();
        assert_eq!(copied.dir, format!("{moved}/r_1"));
        assert_eq!(copied.job.unwrap().dir(), format!("{moved}/r_1"));
        // An SSH record's directories are the target's and stay as they are.
        let ssh = RunRecord {
            target_kind: TargetKind::Ssh,
            ..record.clone()
        };
        ssh.save(&copy_runs).unwrap();
        assert_eq!(RunRecord::load(&copy_runs, "r_1").unwrap(), ssh);
    }

    #[test]
    fn merge_failed_is_terminal_and_recorded_by_its_name() {
        let mut r = record("a", "2026-01-01T00:00:00Z");
        r.state = State::MergeFailed;
        assert!(r.state.is_terminal());
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains("\"state\":\"merge_failed\""), "{text}");
        assert_eq!(serde_json::from_str::<RunRecord>(&text).unwrap(), r);
        assert_eq!(State::MergeFailed.name(), "merge_failed");
    }

    #[test]
    fn pending_is_a_live_state_recorded_by_its_name() {
        let mut r = record("a", "2026-01-01T00:00:00Z");
        r.state = State::Pending;
        r.message = Some("pending on Slurm (Resources)".into());
        assert!(!r.state.is_terminal());
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains("\"state\":\"pending\""), "{text}");
        assert_eq!(serde_json::from_str::<RunRecord>(&text).unwrap(), r);
        assert_eq!(State::Pending.name(), "pending");
    }

    #[test]
    fn summary_keeps_finite_losses() {
        let mut r = record("a", "2026-01-01T00:00:00Z");
        let summary = crate::train::metrics::Summary {
            last_loss: Some(f64::NAN),
            last_eval_loss: Some(1.5),
            last_step: Some(3),
            ..Default::default()
        };
        r.set_summary(&summary);
        assert_eq!(r.last_loss, None);
        assert_eq!(r.last_eval_loss, Some(1.5));
        assert_eq!(r.last_step, Some(3));
    }
}

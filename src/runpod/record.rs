//! `runs/<run-id>/pod.json` (POD-24, POD-36, POD-52): what a run's pod is, written from
//! the lifecycle's [`PodFacts`] and [`Phase`] before each create call and at every change
//! of the pod's life, atomically (a temporary file and a rename), and read back by a
//! later process (`train attach`, `pod ls`, `pod rm`). Times are RFC 3339 UTC with their
//! full precision, so a record read back gives the same facts.
//!
//! Fields (POD-52 leaves their names to the design): `version`; `run_id`; `pod_name`;
//! `state` (the pod's phase, see [`state_name`]: `running` once the job started,
//! `deleted` once confirmed gone); `pod_id`; `gpu_type`; `data_center_ids` and
//! `network_volume_id` as the create body asked; `host_key_secret_id` (the run's host-key secret, for its deletion by a later process); `rate_usd_per_hour`; `created_at`;
//! `deadline_at` (`max_hours` after creation); `cost_snapshot_at` and `cost_cap_at`
//! (POD-41, with `max_cost_usd`); `keep_pod`; `attempts` (each create call: `gpu_type`,
//! `at`, `outcome` of `sent`, `created`, `refused`, `ambiguous`, and its `detail`);
//! `job_started_at`; `retrieved`; `deleted` (`at`, `by` of `client` or `watchdog`,
//! `uptime_s`, `cost_usd`). No secret is ever part of it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::lifecycle::{Attempt, AttemptOutcome, Deleter, Phase, PodFacts, PodState};

/// The file's name in the run directory.
pub const POD_FILE: &str = "pod.json";
/// The layout version this code writes.
pub const VERSION: u32 = 1;

/// Errors of `pod.json`.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// It could not be written.
    #[error("cannot write `{path}`: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// It could not be read.
    #[error("cannot read `{path}`: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// It is no pod record this code can read.
    #[error("`{path}` is no pod record: {cause}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, with its line and column.
        cause: String,
    },
}

/// One create call (POD-52).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRecord {
    /// GPU type ID.
    pub gpu_type: String,
    /// When it was sent.
    pub at: jiff::Timestamp,
    /// `sent`, `created`, `refused` or `ambiguous`.
    pub outcome: String,
    /// The pod ID, the API's reason or the cause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The pod's deletion, once confirmed gone (POD-36, POD-52).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeletedRecord {
    /// When it was confirmed gone.
    pub at: jiff::Timestamp,
    /// `client` or `watchdog`.
    pub by: String,
    /// Seconds from creation to deletion.
    pub uptime_s: f64,
    /// What it cost at its rate, when the rate is known.
    pub cost_usd: Option<f64>,
}

/// What the run's create body asked for beyond the facts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodContext {
    /// The run (or export, compare) ID.
    pub run_id: String,
    /// The pod's name.
    pub pod_name: String,
    /// The data centers asked for.
    pub data_center_ids: Vec<String>,
    /// The network volume mounted.
    pub network_volume_id: Option<String>,
    /// The ID of the run's host-key secret, so that a later process deletes it with the
    /// run's last pod (POD-31; the API lists no secrets).
    pub host_key_secret_id: Option<String>,
}

/// `pod.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PodRecord {
    /// Layout version.
    pub version: u32,
    /// Run ID.
    pub run_id: String,
    /// Pod name.
    pub pod_name: String,
    /// The pod's phase ([`state_name`]).
    pub state: String,
    /// Pod ID, once one exists.
    pub pod_id: Option<String>,
    /// GPU type.
    pub gpu_type: Option<String>,
    /// Data centers asked for.
    #[serde(default)]
    pub data_center_ids: Vec<String>,
    /// Network volume ID.
    pub network_volume_id: Option<String>,
    /// The ID of the run's host-key secret (its name is `overbrainer_host_key_<run-id>`).
    #[serde(default)]
    pub host_key_secret_id: Option<String>,
    /// Hourly rate in USD.
    pub rate_usd_per_hour: Option<f64>,
    /// Creation time.
    pub created_at: Option<jiff::Timestamp>,
    /// `max_hours` after creation.
    pub deadline_at: Option<jiff::Timestamp>,
    /// When the cost snapshot is requested (POD-41).
    pub cost_snapshot_at: Option<jiff::Timestamp>,
    /// When the pod is deleted at the cost cap (POD-41).
    pub cost_cap_at: Option<jiff::Timestamp>,
    /// When the follower last wrote the pod's lease (POD-35): read by every other
    /// process of the project, whose reconciliation then leaves the pod to its lease
    /// (issue 34).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_at: Option<jiff::Timestamp>,
    /// `--keep-pod`.
    pub keep_pod: bool,
    /// Every create call.
    #[serde(default)]
    pub attempts: Vec<AttemptRecord>,
    /// When the job started.
    pub job_started_at: Option<jiff::Timestamp>,
    /// Whether the results were retrieved and verified.
    #[serde(default)]
    pub retrieved: bool,
    /// The deletion, once confirmed gone.
    pub deleted: Option<DeletedRecord>,
}

/// The name `pod.json` gives `phase`.
#[must_use]
pub fn state_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Idle => "new",
        Phase::Creating => "creating",
        Phase::Adopting => "adopting",
        Phase::Booting => "booting",
        Phase::Transmitting => "transmitting",
        Phase::Ready => "ready",
        Phase::Running => "running",
        Phase::Snapshotting => "snapshotting",
        Phase::Retrieving => "retrieving",
        Phase::Deleting => "deleting",
        Phase::ConfirmingGone => "confirming_gone",
        Phase::Kept => "kept",
        Phase::Detached => "detached",
        Phase::Gone => "deleted",
        Phase::Lingering => "lingering",
    }
}

/// A time on the driver's clock (UNIX time) as a timestamp.
fn stamp(at: Duration) -> jiff::Timestamp {
    i128::try_from(at.as_nanos())
        .ok()
        .and_then(|n| jiff::Timestamp::from_nanosecond(n).ok())
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

/// A timestamp on the driver's clock; `None` before 1970.
pub(crate) fn unix(at: jiff::Timestamp) -> Option<Duration> {
    u64::try_from(at.as_nanosecond())
        .ok()
        .map(Duration::from_nanos)
}

impl PodRecord {
    /// The record of `state` for the run of `context`.
    #[must_use]
    pub fn new(context: &PodContext, state: &PodState) -> Self {
        let facts = &state.facts;
        let deleted = match (facts.pod.as_ref(), facts.deleted) {
            (Some(_), Some((at, by))) => {
                let uptime = at.saturating_sub(facts.created_at.unwrap_or(at));
                Some(DeletedRecord {
                    at: stamp(at),
                    by: match by {
                        Deleter::Client => "client",
                        Deleter::Watchdog => "watchdog",
                    }
                    .to_owned(),
                    uptime_s: uptime.as_secs_f64(),
                    // Rates are per hour of the rules' clock (the test-only factor).
                    cost_usd: facts
                        .rate
                        .map(|rate| rate * uptime.as_secs_f64() / state.rules.hour.as_secs_f64()),
                })
            }
            _ => None,
        };
        let cost = state.cost_times();
        Self {
            version: VERSION,
            run_id: context.run_id.clone(),
            pod_name: context.pod_name.clone(),
            state: state_name(state.phase).to_owned(),
            pod_id: facts.pod.clone(),
            gpu_type: facts.gpu_type.clone(),
            data_center_ids: context.data_center_ids.clone(),
            network_volume_id: context.network_volume_id.clone(),
            host_key_secret_id: context.host_key_secret_id.clone(),
            rate_usd_per_hour: facts.rate,
            created_at: facts.created_at.map(stamp),
            deadline_at: state.deadline().map(stamp),
            cost_snapshot_at: cost.map(|(snapshot, _)| stamp(snapshot)),
            cost_cap_at: cost.map(|(_, cap)| stamp(cap)),
            lease_at: state.lease_at().map(stamp),
            keep_pod: state.rules.keep_pod,
            attempts: facts.attempts.iter().map(attempt_record).collect(),
            job_started_at: facts.job_started_at.map(stamp),
            retrieved: facts.retrieved,
            deleted,
        }
    }

    /// The lifecycle's facts again, to take the pod up in a later process
    /// ([`PodState::attached`]).
    ///
    /// # Errors
    /// An attempt's outcome this code does not know, naming it.
    pub fn facts(&self) -> Result<PodFacts, String> {
        let attempts = self
            .attempts
            .iter()
            .map(|a| {
                let detail = a.detail.clone().unwrap_or_default();
                let outcome = match a.outcome.as_str() {
                    "sent" => AttemptOutcome::Sent,
                    "created" => AttemptOutcome::Created(detail),
                    "refused" => AttemptOutcome::Refused(detail),
                    "ambiguous" => AttemptOutcome::Ambiguous(detail),
                    other => return Err(format!("attempt outcome `{other}`")),
                };
                Ok(Attempt {
                    gpu_type: a.gpu_type.clone(),
                    at: unix(a.at).unwrap_or_default(),
                    outcome,
                })
            })
            .collect::<Result<_, _>>()?;
        let deleted = match &self.deleted {
            None => None,
            Some(d) => {
                let by = match d.by.as_str() {
                    "client" => Deleter::Client,
                    "watchdog" => Deleter::Watchdog,
                    other => return Err(format!("deleter `{other}`")),
                };
                Some((unix(d.at).unwrap_or_default(), by))
            }
        };
        Ok(PodFacts {
            pod: self.pod_id.clone(),
            gpu_type: self.gpu_type.clone(),
            rate: self.rate_usd_per_hour,
            created_at: self.created_at.and_then(unix),
            attempts,
            job_started_at: self.job_started_at.and_then(unix),
            deleted,
            retrieved: self.retrieved,
        })
    }

    /// Writes `run_dir/pod.json` atomically.
    ///
    /// # Errors
    /// [`RecordError::Write`] naming the file.
    pub fn save(&self, run_dir: &Path) -> Result<(), RecordError> {
        let path = run_dir.join(POD_FILE);
        let mut bytes = serde_json::to_vec_pretty(self).map_err(|e| RecordError::Write {
            path: path.clone(),
            source: Box::new(e),
        })?;
        bytes.push(b'\n');
        let temporary = crate::project::temporary_for(&path, false);
        crate::project::write_atomic(&path, &bytes, &temporary).map_err(|e| RecordError::Write {
            path,
            source: Box::new(e),
        })
    }

    /// Reads `run_dir/pod.json`; `None` when the run has none.
    ///
    /// # Errors
    /// [`RecordError::Read`] or [`RecordError::Invalid`] naming the file (and the line).
    pub fn read(run_dir: &Path) -> Result<Option<Self>, RecordError> {
        let path = run_dir.join(POD_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(RecordError::Read { path, source }),
        };
        let record: Self = serde_json::from_slice(&bytes).map_err(|e| RecordError::Invalid {
            path: path.clone(),
            cause: e.to_string(),
        })?;
        if record.version != VERSION {
            return Err(RecordError::Invalid {
                path,
                cause: format!(
                    "version {} (this overbrainer reads {VERSION})",
                    record.version
                ),
            });
        }
        record.facts().map_err(|cause| RecordError::Invalid {
            path: path.clone(),
            cause,
        })?;
        Ok(Some(record))
    }
}

fn attempt_record(attempt: &Attempt) -> AttemptRecord {
    let (outcome, detail) = match &attempt.outcome {
        AttemptOutcome::Sent => ("sent", None),
        AttemptOutcome::Created(pod) => ("created", Some(pod.clone())),
        AttemptOutcome::Refused(reason) => ("refused", Some(reason.clone())),
        AttemptOutcome::Ambiguous(cause) => ("ambiguous", Some(cause.clone())),
    };
    AttemptRecord {
        gpu_type: attempt.gpu_type.clone(),
        at: stamp(attempt.at),
        outcome: outcome.to_owned(),
        detail,
    }
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;

//! Where an export or a compare of a run runs (issue 34): on the run's own target,
//! or on another of the project's targets from this machine's retrieved copy of the
//! run. A run trained on a Runpod pod needs the latter: its pod is deleted after the
//! retrieval, so its export or compare runs on a `local`, `ssh` or `slurm` target
//! (`--target NAME`; without it, the project's one `local` target).

use super::record::{RunRecord, TargetKind};
use super::target::Resolved;
use super::{Refusal, RunError};
use crate::config::{Settings, Target};

/// The name of the target a side job (export, compare) of `record` runs on:
/// `requested` (`--target`) when given, else the run's own target, else (for a run of
/// a Runpod target) the project's only `local` target.
///
/// # Errors
///
/// [`Refusal::UnknownTarget`] for a `requested` name that is not declared,
/// [`Refusal::SideJobOnPod`] for a Runpod target, [`Refusal::NoSideTarget`] when a
/// Runpod run has no `--target` and the project not exactly one `local` target.
pub fn side_target(
    settings: &Settings,
    record: &RunRecord,
    requested: Option<&str>,
    job: &str,
) -> Result<String, RunError> {
    let pod = |name: &str| matches!(settings.targets.get(name), Some(Target::Runpod(_)));
    if let Some(name) = requested {
        if !settings.targets.contains_key(name) {
            return Err(Refusal::UnknownTarget {
                name: name.to_owned(),
                known: settings.targets.keys().cloned().collect(),
            }
            .into());
        }
        if pod(name) {
            return Err(Refusal::SideJobOnPod {
                job: job.to_owned(),
                target: name.to_owned(),
            }
            .into());
        }
        return Ok(name.to_owned());
    }
    if record.target_kind != TargetKind::Runpod {
        return Ok(record.target.clone());
    }
    let locals: Vec<&String> = settings
        .targets
        .iter()
        .filter(|(_, target)| matches!(target, Target::Local(_)))
        .map(|(name, _)| name)
        .collect();
    match locals.as_slice() {
        [only] => Ok((*only).clone()),
        _ => Err(Refusal::NoSideTarget {
            job: job.to_owned(),
            run_id: record.id.clone(),
            target: record.target.clone(),
            choices: settings
                .targets
                .keys()
                .filter(|name| !pod(name))
                .cloned()
                .collect(),
        }
        .into()),
    }
}

/// `record` as a side job on `target` sees it: the run's own record when `target` is
/// its own, else the same run with that target's name and kind and its directory
/// there, `<workdir>/<run-id>` (this project's `runs/<run-id>` on a local target).
#[must_use]
pub fn seen_from(record: &RunRecord, target: &Resolved, workdir: &str) -> RunRecord {
    if target.name == record.target {
        return record.clone();
    }
    RunRecord {
        target: target.name.clone(),
        target_kind: target.kind,
        dir: format!("{}/{}", workdir.trim_end_matches('/'), record.id),
        ..record.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::State;

    #[test]
    fn a_run_seen_from_another_target_lives_in_that_targets_work_directory() {
        let mut record = crate::runs::record::fixture("demo_20261204-101500", State::Succeeded);
        record.target = "gpu".to_owned();
        record.target_kind = TargetKind::Runpod;
        record.dir = "/workspace/runs/demo_20261204-101500".to_owned();
        let target = |name: &str, kind| Resolved {
            name: name.to_owned(),
            kind,
            runtime: crate::exec::JobRuntime::Native { venv: None },
            host: None,
            workdir: None,
            runpod: None,
            slurm: None,
            gpu_count: 1,
        };
        let local = seen_from(&record, &target("cpu", TargetKind::Local), "/p/runs/");
        assert_eq!(
            (local.target.as_str(), local.target_kind, local.dir.as_str()),
            ("cpu", TargetKind::Local, "/p/runs/demo_20261204-101500")
        );
        assert_eq!(
            (local.id.as_str(), local.state),
            (record.id.as_str(), record.state)
        );
        let own = seen_from(
            &record,
            &target("gpu", TargetKind::Runpod),
            "/workspace/runs",
        );
        assert_eq!(own, record);
    }
}

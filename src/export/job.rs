//! An export job's own record, `runs/<run-id>/exports/<export-id>/run.json` (EXP-2),
//! written on this machine once the job started: what `export attach EXPORT_ID` needs to
//! follow the job again after the process that started it ended (a `kill -9`, a lost
//! connection), and to collect its results as the export would have.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{EXPORTS_DIR, ExportError};
use crate::exec::JobHandle;
use crate::runs::record::{RUN_JSON, write_atomic};

/// `exports/<export-id>/run.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportJob {
    /// Export ID.
    pub id: String,
    /// The run exported.
    pub run_id: String,
    /// Its target.
    pub target: String,
    /// The job, where it runs; a local target's directory is stored relative to the
    /// project, as a run's is.
    pub job: JobHandle,
    /// Quantization type.
    pub quantize: String,
    /// The Ollama name asked, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ollama: Option<String>,
    /// The Modelfile's `num_ctx`.
    pub num_ctx: u64,
    /// For a stopped run, the snapshot's step (a partial model, EXP-1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial_step: Option<u64>,
}

/// The local directory of export `export_id` of run `run_id`.
#[must_use]
pub fn local_dir(runs_dir: &Path, run_id: &str, export_id: &str) -> PathBuf {
    runs_dir.join(run_id).join(EXPORTS_DIR).join(export_id)
}

impl ExportJob {
    /// Writes the record into the export's local directory, `local` naming a local
    /// target's project `runs/` (canonical) so its job directory is stored relative.
    ///
    /// # Errors
    ///
    /// [`ExportError::Io`].
    pub fn save(&self, runs_dir: &Path, local: Option<&str>) -> Result<(), ExportError> {
        let dir = local_dir(runs_dir, &self.run_id, &self.id);
        std::fs::create_dir_all(&dir).map_err(|source| ExportError::Io {
            path: dir.clone(),
            source,
        })?;
        let mut stored = self.clone();
        if let Some(runs) = local {
            if let Some(rest) = stored.job.dir().strip_prefix(&format!("{runs}/")) {
                *stored.job.dir_mut() = format!("runs/{rest}");
            }
        }
        let mut text = serde_json::to_string_pretty(&stored).unwrap_or_default();
        text.push('\n');
        write_atomic(&dir.join(RUN_JSON), text.as_bytes()).map_err(|e| ExportError::Io {
            path: dir.join(RUN_JSON),
            source: std::io::Error::other(e.to_string()),
        })
    }

    /// Finds export `export_id` (or `<run-id>/<export-id>`) among the runs of
    /// `runs_dir` and reads its record; a local job directory stored relative is made
    /// absolute under `local_runs`.
    ///
    /// # Errors
    ///
    /// [`ExportError::UnknownExport`] when no run or several hold it,
    /// [`ExportError::Io`] or [`ExportError::Mismatch`] when its record cannot be read.
    pub fn find(runs_dir: &Path, export_id: &str) -> Result<Self, ExportError> {
        let unknown = |reason: &str| ExportError::UnknownExport {
            export_id: export_id.to_owned(),
            reason: reason.to_owned(),
        };
        let (run, id) = match export_id.split_once('/') {
            Some((run, id)) => (Some(run), id),
            None => (None, export_id),
        };
        if !id.starts_with("export_") || id.contains(['/', '.']) {
            return Err(unknown("an export ID reads `export_<YYYYMMDD>-<HHMMSS>`"));
        }
        let mut found = Vec::new();
        let runs: Vec<String> = match run {
            Some(run) => vec![run.to_owned()],
            None => std::fs::read_dir(runs_dir)
                .map(|entries| {
                    entries
                        .flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .filter(|name| !name.starts_with('.'))
                        .collect()
                })
                .unwrap_or_default(),
        };
        for run in runs {
            let path = local_dir(runs_dir, &run, id).join(RUN_JSON);
            if path.is_file() {
                found.push(path);
            }
        }
        let path = match found.as_slice() {
            [] => return Err(unknown("no run of this project has it")),
            [one] => one.clone(),
            _ => {
                return Err(unknown(
                    "several runs have an export of this ID: name it `RUN_ID/EXPORT_ID`",
                ));
            }
        };
        let text = std::fs::read_to_string(&path).map_err(|source| ExportError::Io {
            path: path.clone(),
            source,
        })?;
        let mut job: Self = serde_json::from_str(&text).map_err(|e| ExportError::Mismatch {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        if let Some(rest) = job.job.dir().strip_prefix("runs/") {
            let runs = std::fs::canonicalize(runs_dir).unwrap_or_else(|_| runs_dir.to_path_buf());
            *job.job.dir_mut() = format!("{}/{rest}", runs.to_string_lossy().trim_end_matches('/'));
        }
        Ok(job)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_export_record_is_found_by_its_id_and_its_local_job_directory_moves_with_the_project() {
        let project = tempfile::tempdir().unwrap();
        let runs_dir = project.path().join("runs");
        std::fs::create_dir_all(runs_dir.join("r_1")).unwrap();
        let runs = std::fs::canonicalize(&runs_dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let job = ExportJob {
            id: "export_20260101-000000".into(),
            run_id: "r_1".into(),
            target: "local".into(),
            job: crate::exec::JobId {
                dir: format!("{runs}/r_1/exports/export_20260101-000000"),
                pid: crate::exec::Pid::new(42).unwrap(),
                container: None,
            }
            .into(),
            quantize: "Q8_0".into(),
            ollama: None,
            num_ctx: 256,
            partial_step: Some(3),
        };
        job.save(&runs_dir, Some(&runs)).unwrap();
        let text =
            std::fs::read_to_string(local_dir(&runs_dir, "r_1", &job.id).join(RUN_JSON)).unwrap();
        assert!(
            text.contains("\"dir\": \"runs/r_1/exports/export_20260101-000000\""),
            "{text}"
        );
        assert_eq!(ExportJob::find(&runs_dir, &job.id).unwrap(), job);
        assert_eq!(
            ExportJob::find(&runs_dir, "r_1/export_20260101-000000").unwrap(),
            job
        );
        for bad in ["export_20260101-000001", "../x", "nope"] {
            assert!(
                matches!(
                    ExportJob::find(&runs_dir, bad),
                    Err(ExportError::UnknownExport { .. })
                ),
                "{bad}"
            );
        }
    }
}

//! Retrieval of a run's results (spec/training.md, RUN-23..RUN-25): the target lists the
//! files with their SHA-256, the follower downloads them into a staging directory, checks
//! each one against that manifest, and only then moves them into `runs/<run-id>/`. Any
//! missing or different file fails the retrieval and nothing is moved; `train attach`
//! retries later. On a local target the run directory is the job directory: retrieval
//! is the manifest alone (RUN-25).

use std::path::Path;

use super::RunError;
use super::record::{RunRecord, TargetKind};
use crate::exec::{AnyExecutor, EXIT_FILE, Executor as _, FileDigest, JOB_LOG, sha256_file};
use crate::train::axolotl::{MERGED_DIR, OUTPUT_DIR};
use crate::train::metrics::METRICS_FILE;
use crate::train::plugin::SNAPSHOT_FILE;

/// Names left out of the main pass at any depth: intermediate checkpoints (RUN-7).
pub const EXCLUDED: [&str; 1] = ["checkpoint-*"];

/// Entries of the main pass (RUN-24).
#[must_use]
pub fn main_entries() -> Vec<String> {
    [METRICS_FILE, JOB_LOG, OUTPUT_DIR, SNAPSHOT_FILE, EXIT_FILE]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
}

/// Retrieves the run's results into `local_dir`: the main pass, leaving out names
/// matching [`EXCLUDED`] and `skip` at any depth, then, with `checkpoint`,
/// `output/<checkpoint>/` of a snapshot in a second pass checked the same way (RUN-24).
///
/// # Errors
///
/// [`RunError::Retrieval`] when the target cannot list or send the files, or a file is
/// missing or differs from the manifest.
pub async fn retrieve(
    executor: &AnyExecutor,
    record: &RunRecord,
    local_dir: &Path,
    checkpoint: Option<&str>,
    skip: &[&str],
) -> Result<(), RunError> {
    let exclude: Vec<String> = EXCLUDED
        .iter()
        .chain(skip)
        .map(|s| (*s).to_owned())
        .collect();
    pass(executor, record, local_dir, &main_entries(), &exclude, &[]).await?;
    if let Some(checkpoint) = checkpoint {
        let entries = vec![format!("{OUTPUT_DIR}/{checkpoint}")];
        let files = pass(executor, record, local_dir, &entries, &[], &[]).await?;
        if files == 0 {
            return Err(RunError::Retrieval {
                run_id: record.id.clone(),
                reason: format!(
                    "the snapshot checkpoint `{OUTPUT_DIR}/{checkpoint}` is not on the target"
                ),
            });
        }
    }
    Ok(())
}

/// Retrieves what `train merge` produced for the run of `record` into `local_dir`:
/// the merge job's directory `merge_dir` (relative to the run directory) and, with
/// `with_model`, `output/merged/`, checked against the target's manifest. Once the
/// download is verified, the local `output/merged/` is replaced as a whole, so no file
/// of an earlier, partial merge stays beside the new one.
///
/// # Errors
///
/// As [`retrieve`].
pub async fn retrieve_merge(
    executor: &AnyExecutor,
    record: &RunRecord,
    local_dir: &Path,
    merge_dir: &str,
    with_model: bool,
) -> Result<(), RunError> {
    let merged = format!("{OUTPUT_DIR}/{MERGED_DIR}");
    let mut entries = vec![merge_dir.to_owned()];
    let mut replace = Vec::new();
    if with_model {
        entries.push(merged.clone());
        replace.push(merged);
    }
    pass(executor, record, local_dir, &entries, &[], &replace).await?;
    Ok(())
}

/// One checked pass; returns the number of files. Each directory of `replace`
/// (relative to `local_dir`) is removed once the download is verified, before the
/// files are moved into place.
async fn pass(
    executor: &AnyExecutor,
    record: &RunRecord,
    local_dir: &Path,
    entries: &[String],
    exclude: &[String],
    replace: &[String],
) -> Result<usize, RunError> {
    let failed = |reason: String| RunError::Retrieval {
        run_id: record.id.clone(),
        reason,
    };
    let manifest = executor
        .manifest(&record.dir, entries, exclude)
        .await
        .map_err(|e| failed(format!("manifest: {}", super::start::error_chain(&e))))?;
    if record.target_kind == TargetKind::Local {
        return Ok(manifest.len());
    }
    let staging = local_dir.join(format!(".retrieve-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let result = async {
        executor
            .download(&record.dir, &staging, entries, exclude)
            .await
            .map_err(|e| failed(format!("download: {}", super::start::error_chain(&e))))?;
        verify(&staging, &manifest).map_err(failed)?;
        for dir in replace {
            let dir = local_dir.join(dir);
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(RunError::Io { path: dir, source }),
            }
        }
        for file in &manifest {
            let from = staging.join(&file.path);
            let to = local_dir.join(&file.path);
            let io = |source| RunError::Io {
                path: to.clone(),
                source,
            };
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(io)?;
            }
            std::fs::rename(&from, &to).map_err(io)?;
        }
        Ok(manifest.len())
    }
    .await;
    let _ = std::fs::remove_dir_all(&staging);
    result
}

/// Checks every file of `manifest` under `dir`.
///
/// # Errors
///
/// The first missing or different file, by path.
pub fn verify(dir: &Path, manifest: &[FileDigest]) -> Result<(), String> {
    for file in manifest {
        let path = dir.join(&file.path);
        if !path.is_file() {
            return Err(format!("`{}` is missing from the download", file.path));
        }
        let digest = sha256_file(&path).map_err(|e| format!("`{}`: {e}", file.path))?;
        if digest != file.sha256 {
            return Err(format!(
                "`{}` does not match the target's manifest (SHA-256 {} expected, {} received)",
                file.path, file.sha256, digest
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_names_the_bad_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), "x").unwrap();
        let good = FileDigest {
            path: "a".into(),
            sha256: sha256_file(&dir.path().join("a")).unwrap(),
        };
        assert_eq!(verify(dir.path(), std::slice::from_ref(&good)), Ok(()));
        let bad = FileDigest {
            path: "a".into(),
            sha256: "0".repeat(64),
        };
        assert!(
            verify(dir.path(), &[bad])
                .unwrap_err()
                .contains("`a` does not match")
        );
        let missing = FileDigest {
            path: "b/c".into(),
            sha256: "0".repeat(64),
        };
        assert!(
            verify(dir.path(), &[good, missing])
                .unwrap_err()
                .contains("`b/c` is missing")
        );
    }
}

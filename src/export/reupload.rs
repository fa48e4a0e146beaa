//! EXP-11: a run directory on an SSH target that lost the model (a cleaned work
//! directory, a new disk) gets the run's retrieved `axolotl.yaml` and `output/` back
//! from this machine before the export, checked against the target's manifest.

use std::path::Path;

use crate::exec::{AnyExecutor, Executor as _, local_manifest};
use crate::runs::RunError;
use crate::runs::record::RunRecord;
use crate::train::axolotl::{AXOLOTL_YAML, OUTPUT_DIR};

use super::ExportError;
use super::script::GGUF_DIR;

/// Names left out of the upload at any depth: earlier exports' GGUFs, and the
/// checkpoints unless the model to export is one (`with_checkpoints`).
fn excluded(with_checkpoints: bool) -> Vec<String> {
    let mut names = vec![GGUF_DIR.to_owned()];
    if !with_checkpoints {
        names.push("checkpoint-*".to_owned());
    }
    names
}

/// Uploads the local run directory's `axolotl.yaml` and `output/` (less
/// [`excluded`]) into the run directory on the target and checks the target's
/// manifest of them against this machine's.
///
/// # Errors
///
/// [`RunError::Io`] when the local files cannot be staged, [`RunError::Exec`] when
/// the upload fails (both in [`ExportError::Run`]), [`ExportError::Reupload`] when the
/// manifests differ.
pub async fn reupload(
    executor: &AnyExecutor,
    record: &RunRecord,
    local_dir: &Path,
    with_checkpoints: bool,
) -> Result<usize, ExportError> {
    let exclude = excluded(with_checkpoints);
    let entries = vec![AXOLOTL_YAML.to_owned(), OUTPUT_DIR.to_owned()];
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| RunError::Io { path, source }
    };
    let local = local_manifest(local_dir, &entries, &exclude).map_err(|e| RunError::Exec {
        target: record.target.clone(),
        source: Box::new(e),
    })?;
    let staging = local_dir.join(format!(".upload-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let result: Result<usize, ExportError> = async {
        std::fs::create_dir_all(&staging).map_err(io(&staging))?;
        for file in &local {
            let relative = file.relative_path();
            let from = local_dir.join(relative);
            let to = staging.join(relative);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(io(parent))?;
            }
            if std::fs::hard_link(&from, &to).is_err() {
                std::fs::copy(&from, &to).map_err(io(&from))?;
            }
        }
        executor
            .upload(&staging, &record.dir, &[])
            .await
            .map_err(|e| RunError::Exec {
                target: record.target.clone(),
                source: Box::new(e),
            })?;
        let remote = executor
            .manifest(&record.dir, &entries, &exclude)
            .await
            .map_err(|e| RunError::Exec {
                target: record.target.clone(),
                source: Box::new(e),
            })?;
        if remote != local {
            return Err(ExportError::Reupload {
                run_id: record.id.clone(),
                target: record.target.clone(),
                reason: format!("{} files there, {} here", remote.len(), local.len()),
            });
        }
        Ok(local.len())
    }
    .await;
    let _ = std::fs::remove_dir_all(&staging);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_travel_only_when_one_is_the_model() {
        assert_eq!(excluded(false), ["gguf", "checkpoint-*"]);
        assert_eq!(excluded(true), ["gguf"]);
    }
}

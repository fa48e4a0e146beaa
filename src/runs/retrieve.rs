//! Retrieval of a run's results (spec/training.md, RUN-23..RUN-25): the target lists the
//! files with their SHA-256, the follower downloads them into a staging directory, checks
//! each one against that manifest, and only then moves them into `runs/<run-id>/`. Any
//! missing or different file fails the retrieval and nothing is moved; `train attach`
//! retries later. On a local target the run directory is the job directory: retrieval
//! is the manifest alone (RUN-25).
//!
//! Names are bytes: a name that is not UTF-8 is listed, downloaded, checked and moved
//! like any other. Symbolic links inside the run directory (a checkpoint's `latest`)
//! are retrieved as links and checked by target; a link pointing outside it fails the
//! manifest, naming the link, so the run is never reported as verified without it.

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

/// Retrieves what an export job produced for the run of `record` into `local_dir`
/// (issue 14): its job directory `export_dir` (relative to the run directory) and, with
/// `with_gguf`, `output/gguf/`, checked against the target's manifest like the rest.
///
/// # Errors
///
/// As [`retrieve`].
pub async fn retrieve_export(
    executor: &AnyExecutor,
    record: &RunRecord,
    local_dir: &Path,
    export_dir: &str,
    with_gguf: bool,
) -> Result<(), RunError> {
    let mut entries = vec![export_dir.to_owned()];
    if with_gguf {
        entries.push(format!("{OUTPUT_DIR}/gguf"));
    }
    pass(executor, record, local_dir, &entries, &[], &[]).await?;
    Ok(())
}

/// The name prefix of a pass's staging directory in the run directory.
const STAGING: &str = ".retrieve-";

/// Removes what a retrieval killed before its end (`kill -9`) left in `local_dir`: its
/// staging directory and the download's own beside it. One process retrieves a run at
/// a time (it holds the project lock or the run's follow lock), so any there is stale;
/// none is ever taken for a result.
fn sweep_staging(local_dir: &Path) {
    for entry in std::fs::read_dir(local_dir).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(STAGING) || name.starts_with(crate::exec::DOWNLOAD_STAGING_PREFIX) {
            if let Err(error) = std::fs::remove_dir_all(entry.path()) {
                tracing::warn!("cannot remove `{}`: {error}", entry.path().display());
            }
        }
    }
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
    sweep_staging(local_dir);
    let staging = local_dir.join(format!("{STAGING}{}", std::process::id()));
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
            let from = staging.join(file.relative_path());
            let to = local_dir.join(file.relative_path());
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

/// Checks every entry of `manifest` under `dir`: a regular file (not a link to one)
/// with the same SHA-256, or a symbolic link with the same target. Names are compared
/// as bytes.
///
/// # Errors
///
/// The first missing or different entry, by path.
pub fn verify(dir: &Path, manifest: &[FileDigest]) -> Result<(), String> {
    for file in manifest {
        let path = dir.join(file.relative_path());
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            return Err(format!("`{}` is missing from the download", file.path));
        };
        if let Some(target) = file.link_target() {
            verify_link(&path, &meta, file, target)?;
        } else {
            verify_file(&path, &meta, file)?;
        }
    }
    Ok(())
}

/// A symbolic link of the manifest: a link, to the same target.
fn verify_link(
    path: &Path,
    meta: &std::fs::Metadata,
    file: &FileDigest,
    target: &Path,
) -> Result<(), String> {
    if !meta.file_type().is_symlink() {
        return Err(format!(
            "`{}` should be a symbolic link to `{}` and is not",
            file.path,
            target.display()
        ));
    }
    let got = std::fs::read_link(path).map_err(|e| format!("`{}`: {e}", file.path))?;
    if got != target {
        return Err(format!(
            "`{}` links to `{}`, the target's manifest says `{}`",
            file.path,
            got.display(),
            target.display()
        ));
    }
    Ok(())
}

/// A regular file of the manifest: a regular file (not a link to one), with the same
/// SHA-256.
fn verify_file(path: &Path, meta: &std::fs::Metadata, file: &FileDigest) -> Result<(), String> {
    if !meta.is_file() {
        return Err(format!(
            "`{}` is missing from the download (not a regular file)",
            file.path
        ));
    }
    let digest = sha256_file(path).map_err(|e| format!("`{}`: {e}", file.path))?;
    if digest != file.sha256 {
        return Err(format!(
            "`{}` does not match the target's manifest (SHA-256 {} expected, {} received)",
            file.path, file.sha256, digest
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt as _;

    #[test]
    fn the_staging_a_killed_retrieval_left_is_swept_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for stale in [".retrieve-4242/output", ".ob-download-Xy12ab/output"] {
            std::fs::create_dir_all(root.join(stale)).unwrap();
            std::fs::write(root.join(stale).join("half"), "x").unwrap();
        }
        std::fs::create_dir_all(root.join("output")).unwrap();
        std::fs::write(root.join("run.json"), "{}").unwrap();
        sweep_staging(root);
        let mut left: Vec<String> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["output", "run.json"]);
    }

    #[test]
    fn verify_names_the_bad_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), "x").unwrap();
        let good = FileDigest::file(b"a", &sha256_file(&dir.path().join("a")).unwrap());
        assert_eq!(verify(dir.path(), std::slice::from_ref(&good)), Ok(()));
        let bad = FileDigest::file(b"a", &"0".repeat(64));
        assert!(
            verify(dir.path(), &[bad])
                .unwrap_err()
                .contains("`a` does not match")
        );
        let missing = FileDigest::file(b"b/c", &"0".repeat(64));
        assert!(
            verify(dir.path(), &[good, missing])
                .unwrap_err()
                .contains("`b/c` is missing")
        );
    }

    #[test]
    fn a_download_that_drops_or_changes_a_link_is_not_verified() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("output/checkpoint-2")).unwrap();
        std::fs::write(root.join("output/checkpoint-2/w"), "w").unwrap();
        let link = FileDigest::symlink(b"output/latest", b"checkpoint-2").unwrap();
        let dropped = verify(root, std::slice::from_ref(&link)).unwrap_err();
        assert!(dropped.contains("`output/latest` is missing"), "{dropped}");
        // A copy of what the link points at is not the link.
        std::fs::create_dir_all(root.join("output/latest")).unwrap();
        let copied = verify(root, std::slice::from_ref(&link)).unwrap_err();
        assert!(copied.contains("should be a symbolic link"), "{copied}");
        std::fs::remove_dir(root.join("output/latest")).unwrap();
        std::os::unix::fs::symlink("checkpoint-3", root.join("output/latest")).unwrap();
        let changed = verify(root, std::slice::from_ref(&link)).unwrap_err();
        assert!(changed.contains("links to `checkpoint-3`"), "{changed}");
        std::fs::remove_file(root.join("output/latest")).unwrap();
        std::os::unix::fs::symlink("checkpoint-2", root.join("output/latest")).unwrap();
        assert_eq!(verify(root, &[link]), Ok(()));
        // A regular file of the manifest that arrived as a link to the right
        // content is not verified either.
        let file = FileDigest::file(
            b"output/w",
            &sha256_file(&root.join("output/checkpoint-2/w")).unwrap(),
        );
        std::os::unix::fs::symlink("checkpoint-2/w", root.join("output/w")).unwrap();
        assert!(
            verify(root, &[file])
                .unwrap_err()
                .contains("not a regular file")
        );
    }

    #[test]
    fn a_name_that_is_not_utf8_is_verified_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let name = OsStr::from_bytes(b"caf\xe9");
        std::fs::write(dir.path().join(name), "x").unwrap();
        let digest = FileDigest::file(b"caf\xe9", &sha256_file(&dir.path().join(name)).unwrap());
        assert_eq!(verify(dir.path(), std::slice::from_ref(&digest)), Ok(()));
        let other = FileDigest::file(b"caf\xe8", &digest.sha256);
        assert!(
            verify(dir.path(), &[other])
                .unwrap_err()
                .contains("is missing")
        );
    }

    /// A record of run `r1` in `dir` on an SSH target, so that retrieval downloads
    /// (through a local executor, which runs the same target scripts).
    fn ssh_record(dir: &str) -> RunRecord {
        serde_json::from_value(serde_json::json!({
            "id": "r1",
            "created": "2026-01-02T00:00:00Z",
            "target": "remote",
            "target_kind": "ssh",
            "dir": dir,
            "owner": "o",
            "state": "running",
            "snapshots": true,
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn retrieval_keeps_in_tree_links_and_byte_names_and_refuses_escaping_links() {
        let root = tempfile::tempdir().unwrap();
        let executor = AnyExecutor::Local(
            crate::exec::LocalExecutor::new(&root.path().join("target")).unwrap(),
        );
        let dir = Path::new(executor.workdir()).join("r1");
        let output = dir.join(OUTPUT_DIR);
        std::fs::create_dir_all(output.join("checkpoint-2")).unwrap();
        std::fs::write(output.join("checkpoint-2/w"), "ckpt").unwrap();
        std::fs::write(output.join("adapter.bin"), "weights").unwrap();
        std::fs::write(output.join(OsStr::from_bytes(b"caf\xe9")), "latin-1").unwrap();
        std::os::unix::fs::symlink("checkpoint-2", output.join("latest")).unwrap();
        std::os::unix::fs::symlink("adapter.bin", output.join("model.bin")).unwrap();
        std::fs::write(dir.join(JOB_LOG), "log\n").unwrap();
        let record = ssh_record(&dir.to_string_lossy());
        let local = root.path().join("runs/r1");
        std::fs::create_dir_all(&local).unwrap();

        retrieve(&executor, &record, &local, None, &[])
            .await
            .unwrap();
        let back = local.join(OUTPUT_DIR);
        assert_eq!(
            std::fs::read_link(back.join("latest")).unwrap(),
            Path::new("checkpoint-2")
        );
        assert_eq!(
            std::fs::read_link(back.join("model.bin")).unwrap(),
            Path::new("adapter.bin")
        );
        assert_eq!(
            std::fs::read(back.join(OsStr::from_bytes(b"caf\xe9"))).unwrap(),
            b"latin-1"
        );
        assert!(!back.join("checkpoint-2").exists(), "checkpoints stay out");

        std::os::unix::fs::symlink("../../outside", output.join("escape")).unwrap();
        let error = retrieve(&executor, &record, &local, None, &[])
            .await
            .unwrap_err();
        let message = error.to_string();
        assert!(message.contains("r1"), "{message}");
        let RunError::Retrieval { reason, .. } = &error else {
            panic!("{error:?}");
        };
        assert!(
            reason.contains("point outside the tree: `output/escape` -> "),
            "{reason}"
        );
        assert!(std::fs::symlink_metadata(back.join("escape")).is_err());
        let staged: Vec<_> = std::fs::read_dir(&local)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with('.'))
            .collect();
        assert!(staged.is_empty(), "{staged:?}");
    }
    /// A stand-in `tar` in `bin` that runs the system's own and then fails as GNU
    /// `tar` does after a file it could not read: the archive is whole, the exit
    /// status 2.
    fn failing_tar(bin: &Path) {
        use std::os::unix::fs::PermissionsExt as _;
        let real = ["/usr/bin/tar", "/bin/tar"]
            .into_iter()
            .find(|path| Path::new(path).exists())
            .expect("GNU tar is missing: run `apt-get install tar`");
        std::fs::create_dir_all(bin).unwrap();
        let path = bin.join("tar");
        std::fs::write(
            &path,
            format!("#!/bin/sh\n{real} \"$@\" || exit\necho 'tar: ./job.log: Cannot open: Input/output error' >&2\nexit 2\n"),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[tokio::test]
    async fn a_failed_remote_tar_keeps_the_old_local_files_and_names_the_run() {
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("bin");
        failing_tar(&bin);
        let executor = AnyExecutor::Local(
            crate::exec::LocalExecutor::new(&root.path().join("target"))
                .unwrap()
                .with_path_prefix(&bin),
        );
        let dir = Path::new(executor.workdir()).join("r1");
        std::fs::create_dir_all(dir.join(OUTPUT_DIR)).unwrap();
        std::fs::write(dir.join(OUTPUT_DIR).join("adapter.bin"), "new weights").unwrap();
        std::fs::write(dir.join(JOB_LOG), "new log\n").unwrap();
        let record = ssh_record(&dir.to_string_lossy());
        let local = root.path().join("runs/r1");
        std::fs::create_dir_all(local.join(OUTPUT_DIR)).unwrap();
        std::fs::write(local.join(OUTPUT_DIR).join("adapter.bin"), "old weights").unwrap();
        std::fs::write(local.join(JOB_LOG), "old log\n").unwrap();

        let error = retrieve(&executor, &record, &local, None, &[])
            .await
            .unwrap_err();
        let RunError::Retrieval { run_id, reason } = &error else {
            panic!("{error:?}");
        };
        assert_eq!(run_id, "r1");
        assert!(error.to_string().contains("r1"), "{error}");
        assert!(reason.contains("Cannot open"), "{reason}");
        assert_eq!(
            std::fs::read_to_string(local.join(OUTPUT_DIR).join("adapter.bin")).unwrap(),
            "old weights"
        );
        assert_eq!(
            std::fs::read_to_string(local.join(JOB_LOG)).unwrap(),
            "old log\n"
        );
        let staged: Vec<_> = std::fs::read_dir(&local)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with('.'))
            .collect();
        assert!(staged.is_empty(), "{staged:?}");
    }
}

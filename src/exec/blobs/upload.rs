//! An upload through the blob cache: digest the local tree, ask the target which
//! blobs it holds intact, send only the missing ones (through
//! [`Executor::upload`] of a local staging directory of files named by digest),
//! then place them and link the run's files ([`place_script`]).

use std::collections::BTreeSet;
use std::future::Future;
use std::path::Path;

use anyhow::Context as _;

use super::local::{DigestCache, UploadSummary, digest_tree};
use super::place::{COPIED, place_script};
use super::remote::{
    BLOBS_DIR, BlobState, INCOMING_DIR, PruneReport, check_script, parse_check, parse_prune,
    prune_script,
};
use crate::exec::{AnyExecutor, ExecError, Executor, LocalExecutor, Login, SshExecutor};

/// An executor that can run a script that changes the target (the blob scripts
/// do; [`Executor::probe`] only reads).
pub trait ChangingScripts: Executor {
    /// Runs `script` on the target and returns its standard output, or
    /// [`ExecError::Command`] naming `action` when it fails.
    fn run_changing(
        &self,
        action: &'static str,
        script: &str,
    ) -> impl Future<Output = Result<Vec<u8>, ExecError>> + Send;
}

impl ChangingScripts for LocalExecutor {
    async fn run_changing(&self, action: &'static str, script: &str) -> Result<Vec<u8>, ExecError> {
        self.command(action, script, &[]).await
    }
}

impl ChangingScripts for SshExecutor {
    async fn run_changing(&self, action: &'static str, script: &str) -> Result<Vec<u8>, ExecError> {
        self.command(action, script, &[]).await
    }
}

impl ChangingScripts for AnyExecutor {
    /// A Slurm cluster runs the script on its login node, which shares the
    /// working directory with the compute nodes.
    async fn run_changing(&self, action: &'static str, script: &str) -> Result<Vec<u8>, ExecError> {
        match self {
            Self::Local(local) => local.command(action, script, &[]).await,
            Self::Ssh(ssh) => ssh.command(action, script, &[]).await,
            Self::Slurm(slurm) => match slurm.login() {
                Login::Local(local) => local.command(action, script, &[]).await,
                Login::Ssh(ssh) => ssh.command(action, script, &[]).await,
            },
        }
    }
}

/// What an upload through the cache did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Uploaded {
    /// What it planned to send, shown before sending.
    pub summary: UploadSummary,
    /// Bytes of the blobs it staged and handed to [`Executor::upload`].
    pub staged_bytes: u64,
    /// Whether the target refused hard links, so files were copied.
    pub copied: bool,
}

/// A name for this upload's incoming directory that no other upload shares.
fn unique_name() -> String {
    format!("{}-{:016x}", std::process::id(), rand::random::<u64>())
}

/// Uploads the regular files of the local directory `local` into the target
/// directory `run_dir` through the blob cache under the executor's working
/// directory, calling `on_summary` with what will be sent before sending it. The
/// local files are hashed on Tokio's blocking pool, through `cache`.
///
/// # Errors
///
/// An error naming the local file or the target step that failed; a blob that
/// arrives corrupted fails the upload, naming its digest.
pub async fn upload_tree<E: ChangingScripts>(
    executor: &E,
    local: &Path,
    run_dir: &str,
    cache: &mut DigestCache,
    on_summary: impl FnOnce(&UploadSummary),
) -> anyhow::Result<Uploaded> {
    // Hashing a multi-gigabyte model blocks: it runs on the blocking pool.
    let root = local.to_owned();
    let mut owned = std::mem::take(cache);
    let (blobs, owned) = tokio::task::spawn_blocking(move || {
        let blobs = digest_tree(&root, &mut owned);
        (blobs, owned)
    })
    .await
    .context("the hashing of the local files failed")?;
    *cache = owned;
    let blobs = blobs?;
    let digests: Vec<&str> = blobs
        .iter()
        .map(|blob| blob.sha256.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let workdir = executor.workdir().trim_end_matches('/').to_owned();
    let output = executor
        .run_changing("check blobs", &check_script(&workdir, &digests)?)
        .await
        .with_context(|| format!("cannot check the blob cache under `{workdir}`"))?;
    let states = parse_check(&String::from_utf8_lossy(&output), &digests)?;
    let present = |digest: &str| states.get(digest) == Some(&BlobState::Intact);
    let summary = UploadSummary::new(&blobs, present);
    on_summary(&summary);

    let stage = tempfile::tempdir().context("cannot create a local staging directory")?;
    let mut staged_bytes = 0;
    for blob in &blobs {
        let staged = stage.path().join(&blob.sha256);
        if present(&blob.sha256) || staged.exists() {
            continue;
        }
        let source = local.join(&blob.path);
        if std::fs::hard_link(&source, &staged).is_err() {
            std::fs::copy(&source, &staged)
                .with_context(|| format!("cannot stage `{}`", source.display()))?;
        }
        staged_bytes += blob.size;
    }
    let incoming = format!("{workdir}/{BLOBS_DIR}/{INCOMING_DIR}/{}", unique_name());
    if staged_bytes > 0 || blobs.iter().any(|blob| !present(&blob.sha256)) {
        executor
            .upload(stage.path(), &incoming, &[])
            .await
            .with_context(|| format!("cannot send blobs to `{incoming}`"))?;
    }
    let files: Vec<(&Path, &str)> = blobs
        .iter()
        .map(|blob| (blob.path.as_path(), blob.sha256.as_str()))
        .collect();
    let output = executor
        .run_changing(
            "place blobs",
            &place_script(&workdir, &incoming, run_dir, &files)?,
        )
        .await
        .with_context(|| format!("cannot place the blobs into `{run_dir}`"))?;
    let copied = String::from_utf8_lossy(&output)
        .lines()
        .any(|line| line == COPIED);
    Ok(Uploaded {
        summary,
        staged_bytes,
        copied,
    })
}

/// Removes the blobs of the executor's cache that no run directory links to (link
/// count 1) and reports how many and their bytes.
///
/// # Errors
///
/// An error naming the cache when the prune script fails or answers oddly.
pub async fn prune_cache<E: ChangingScripts>(executor: &E) -> anyhow::Result<PruneReport> {
    let workdir = executor.workdir().trim_end_matches('/');
    let output = executor
        .run_changing("prune blobs", &prune_script(workdir))
        .await
        .with_context(|| format!("cannot prune the blob cache under `{workdir}`"))?;
    Ok(parse_prune(&String::from_utf8_lossy(&output))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("weights.bin"), vec![7u8; 300_000]).unwrap();
        std::fs::write(
            dir.path().join("sub/config.json"),
            "{\"canary\":\"x8Kq2vZr\"}",
        )
        .unwrap();
        std::fs::write(dir.path().join("sub/same.bin"), vec![7u8; 300_000]).unwrap();
        dir
    }

    fn same_tree(a: &Path, b: &Path) {
        for rel in ["weights.bin", "sub/config.json", "sub/same.bin"] {
            assert_eq!(
                std::fs::read(a.join(rel)).unwrap(),
                std::fs::read(b.join(rel)).unwrap(),
                "{rel}"
            );
        }
    }

    #[tokio::test]
    async fn a_second_upload_of_the_same_tree_sends_nothing() {
        let model = model();
        let work = tempfile::tempdir().unwrap();
        let executor = LocalExecutor::new(work.path()).unwrap();
        let mut cache = DigestCache::default();
        let run1 = work.path().join("runs/r1/base_model");
        let mut shown = None;
        let first = upload_tree(
            &executor,
            model.path(),
            run1.to_str().unwrap(),
            &mut cache,
            |s| shown = Some(*s),
        )
        .await
        .unwrap();
        assert_eq!(shown, Some(first.summary));
        assert_eq!(first.staged_bytes, 300_000 + 21);
        same_tree(model.path(), &run1);
        let run2 = work.path().join("runs/r2/base_model");
        let second = upload_tree(
            &executor,
            model.path(),
            run2.to_str().unwrap(),
            &mut cache,
            |_| {},
        )
        .await
        .unwrap();
        assert_eq!(second.staged_bytes, 0);
        assert_eq!(second.summary.present, second.summary.bytes);
        same_tree(model.path(), &run2);
    }

    #[tokio::test]
    async fn a_corrupted_blob_is_replaced_never_linked() {
        let model = model();
        let work = tempfile::tempdir().unwrap();
        let executor = LocalExecutor::new(work.path()).unwrap();
        let mut cache = DigestCache::default();
        let run1 = work.path().join("runs/r1");
        upload_tree(
            &executor,
            model.path(),
            run1.to_str().unwrap(),
            &mut cache,
            |_| {},
        )
        .await
        .unwrap();
        // Corrupt the cached blob in place (its run link shares the inode; a new
        // run must not get this content).
        let blobs = work.path().join(BLOBS_DIR).join("sha256");
        let config = digest_tree(model.path(), &mut cache)
            .unwrap()
            .into_iter()
            .find(|b| b.path.ends_with("config.json"))
            .unwrap();
        std::fs::write(blobs.join(&config.sha256), "{\"canary\":\"CORRUPT\"}").unwrap();
        let run2 = work.path().join("runs/r2");
        let second = upload_tree(
            &executor,
            model.path(),
            run2.to_str().unwrap(),
            &mut cache,
            |_| {},
        )
        .await
        .unwrap();
        assert_eq!(second.staged_bytes, config.size);
        same_tree(model.path(), &run2);
    }

    #[tokio::test]
    async fn two_uploads_of_the_same_tree_at_once_both_succeed() {
        let model = model();
        let work = tempfile::tempdir().unwrap();
        let executor = LocalExecutor::new(work.path()).unwrap();
        let (mut c1, mut c2) = (DigestCache::default(), DigestCache::default());
        let run1 = work.path().join("runs/r1");
        let run2 = work.path().join("runs/r2");
        let (a, b) = tokio::join!(
            upload_tree(
                &executor,
                model.path(),
                run1.to_str().unwrap(),
                &mut c1,
                |_| {}
            ),
            upload_tree(
                &executor,
                model.path(),
                run2.to_str().unwrap(),
                &mut c2,
                |_| {}
            ),
        );
        a.unwrap();
        b.unwrap();
        same_tree(model.path(), &run1);
        same_tree(model.path(), &run2);
    }
}

//! An upload through the blob cache: digest the local tree (a first upload's big
//! files while they are sent), ask the target which blobs it holds intact, send only
//! the missing ones (through [`Executor::upload`] of a local staging directory of
//! files named by digest, or provisionally while they are hashed), then verify and
//! place them and link the run's files ([`place_script`]).

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::local::{
    DigestCache, LocalBlob, Scanned, UploadSummary, hash_all, hash_into, remember_all, scan_tree,
};
use super::place::{COPIED, place_script};
use super::remote::{
    BLOBS_DIR, BlobState, INCOMING_DIR, PruneReport, check_script, parse_check, parse_prune,
    prune_script, sizes_probe, split_sizes,
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

/// Files at least this big, whose digest the local cache does not know, are sent
/// while they are hashed when no blob on the target has their size ([`upload_tree`]);
/// smaller ones are hashed first (it costs little).
pub const SEND_WHILE_HASHING: u64 = 1 << 20;

/// Uploads the regular files of the local directory `local` into the target
/// directory `run_dir` through the blob cache under the executor's working
/// directory, calling `on_summary` with what will be sent before sending it.
///
/// The files whose digest `cache` knows are checked against the target's blobs and
/// only the missing ones are sent. A file it does not know (a first upload) is hashed
/// first when it is small or when some blob on the target has its size (it may be
/// there); otherwise it cannot be there, so it is sent under a provisional name while
/// it is hashed, side by side (both reads share the page cache), and the target
/// verifies it against that digest before it becomes a blob. Hashing runs on Tokio's
/// blocking pool; the digests are remembered in `cache`.
///
/// # Errors
///
/// An error naming the local file or the target step that failed; a blob that
/// arrives corrupted (or a file that changed while it was sent) fails the upload,
/// naming its digest.
pub async fn upload_tree<E: ChangingScripts>(
    executor: &E,
    local: &Path,
    run_dir: &str,
    cache: &mut DigestCache,
    on_summary: impl FnOnce(&UploadSummary),
) -> anyhow::Result<Uploaded> {
    let workdir = executor.workdir().trim_end_matches('/').to_owned();
    let Plan {
        mut files,
        states,
        provisional,
    } = plan(executor, local, &workdir, cache).await?;
    let present = |digest: &str| states.get(digest) == Some(&BlobState::Intact);
    let known: Vec<LocalBlob> = files
        .iter()
        .filter_map(|file| {
            file.cached.as_ref().map(|sha256| LocalBlob {
                path: file.relative.clone(),
                size: file.meta.size(),
                sha256: sha256.clone(),
            })
        })
        .collect();
    let mut summary = UploadSummary::new(&known, present);
    for &i in &provisional {
        summary.add_unhashed(files[i].meta.size());
    }
    on_summary(&summary);

    let stage = tempfile::tempdir().context("cannot create a local staging directory")?;
    let mut staged_bytes = 0;
    for blob in &known {
        let staged = stage.path().join(&blob.sha256);
        if present(&blob.sha256) || staged.exists() {
            continue;
        }
        stage_file(&local.join(&blob.path), &staged)?;
        staged_bytes += blob.size;
    }
    let names: Vec<String> = (0..provisional.len()).map(|n| format!("u{n}")).collect();
    for (name, &i) in names.iter().zip(&provisional) {
        stage_file(&files[i].path, &stage.path().join(name))?;
        staged_bytes += files[i].meta.size();
    }
    let incoming = format!("{workdir}/{BLOBS_DIR}/{INCOMING_DIR}/{}", unique_name());
    let paths: Vec<PathBuf> = provisional.iter().map(|&i| files[i].path.clone()).collect();
    let hashing = tokio::task::spawn_blocking(move || hash_all(&paths));
    if staged_bytes > 0 || known.iter().any(|blob| !present(&blob.sha256)) {
        executor
            .upload(stage.path(), &incoming, &[])
            .await
            .with_context(|| format!("cannot send blobs to `{incoming}`"))?;
    }
    let digests = hashing
        .await
        .context("the hashing of the local files failed")?;
    remember_all(&mut files, &provisional, digests, cache)?;
    let expected: Vec<(&str, &str)> = names
        .iter()
        .zip(&provisional)
        .map(|(name, &i)| {
            (
                name.as_str(),
                files[i].cached.as_deref().unwrap_or_default(),
            )
        })
        .collect();
    let linked: Vec<(&Path, &str)> = files
        .iter()
        .map(|file| {
            (
                file.relative.as_path(),
                file.cached.as_deref().unwrap_or_default(),
            )
        })
        .collect();
    let output = executor
        .run_changing(
            "place blobs",
            &place_script(&workdir, &incoming, run_dir, &linked, &expected)?,
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

/// What [`upload_tree`] found before sending: the tree's files (with the digests
/// known by then), the target's answer for those digests, and the indices of the
/// files to send while they are hashed.
struct Plan {
    files: Vec<Scanned>,
    states: BTreeMap<String, BlobState>,
    provisional: Vec<usize>,
}

/// Scans `local`, hashes the small files `cache` does not know, asks the target
/// which digests it holds and which sizes of the big unknown files its blobs have,
/// and hashes (then checks) those that may be there.
async fn plan<E: ChangingScripts>(
    executor: &E,
    local: &Path,
    workdir: &str,
    cache: &mut DigestCache,
) -> anyhow::Result<Plan> {
    let root = local.to_owned();
    let (mut files, unknown) = blocking(cache, move |cache| {
        let mut files = scan_tree(&root, cache)?;
        let small: Vec<usize> = (0..files.len())
            .filter(|&i| files[i].cached.is_none() && files[i].meta.size() < SEND_WHILE_HASHING)
            .collect();
        hash_into(&mut files, &small, cache)?;
        let unknown: Vec<usize> = (0..files.len())
            .filter(|&i| files[i].cached.is_none())
            .collect();
        Ok((files, unknown))
    })
    .await?;
    let sizes: Vec<u64> = unknown
        .iter()
        .map(|&i| files[i].meta.size())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let known: Vec<&str> = files.iter().filter_map(|f| f.cached.as_deref()).collect();
    let (mut states, seen) = check(executor, workdir, known, &sizes).await?;
    // A file of a size some blob has may be that blob: hashed now, then checked.
    let (maybe, provisional): (Vec<usize>, Vec<usize>) = unknown
        .into_iter()
        .partition(|&i| seen.contains(&files[i].meta.size()));
    if !maybe.is_empty() {
        let mut moved = std::mem::take(&mut files);
        let indices = maybe.clone();
        files = blocking(cache, move |cache| {
            hash_into(&mut moved, &indices, cache)?;
            Ok(moved)
        })
        .await?;
        let hashed: Vec<&str> = maybe
            .iter()
            .filter_map(|&i| files[i].cached.as_deref())
            .collect();
        let (more, _) = check(executor, workdir, hashed, &[]).await?;
        states.extend(more);
    }
    Ok(Plan {
        files,
        states,
        provisional,
    })
}

/// Runs `work` on Tokio's blocking pool with `cache` (taken, and put back after).
async fn blocking<T: Send + 'static>(
    cache: &mut DigestCache,
    work: impl FnOnce(&mut DigestCache) -> anyhow::Result<T> + Send + 'static,
) -> anyhow::Result<T> {
    let mut owned = std::mem::take(cache);
    let (result, owned) = tokio::task::spawn_blocking(move || {
        let result = work(&mut owned);
        (result, owned)
    })
    .await
    .context("the hashing of the local files failed")?;
    *cache = owned;
    result
}

/// Asks the target which of `digests` it holds intact, and which of `sizes` some
/// blob of its cache has ([`sizes_probe`]).
async fn check<E: ChangingScripts>(
    executor: &E,
    workdir: &str,
    digests: Vec<&str>,
    sizes: &[u64],
) -> anyhow::Result<(BTreeMap<String, BlobState>, BTreeSet<u64>)> {
    let digests: Vec<&str> = digests
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let script = check_script(workdir, &digests)? + &sizes_probe(sizes);
    let output = executor
        .run_changing("check blobs", &script)
        .await
        .with_context(|| format!("cannot check the blob cache under `{workdir}`"))?;
    let (seen, rest) = split_sizes(&String::from_utf8_lossy(&output));
    Ok((parse_check(&rest, &digests)?, seen))
}

/// Puts `source` into the staging directory as `staged`: a hard link, or a copy
/// where links are refused.
fn stage_file(source: &Path, staged: &Path) -> anyhow::Result<()> {
    if std::fs::hard_link(source, staged).is_err() {
        std::fs::copy(source, staged)
            .with_context(|| format!("cannot stage `{}`", source.display()))?;
    }
    Ok(())
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
    use super::super::local::digest_tree;
    use super::*;

    /// Uploads `model` into `run_dir` through `executor`'s cache, with `cache`.
    async fn upload(
        executor: &LocalExecutor,
        model: &Path,
        run_dir: &Path,
        cache: &mut DigestCache,
    ) -> Uploaded {
        upload_tree(executor, model, run_dir.to_str().unwrap(), cache, |_| {})
            .await
            .unwrap()
    }

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
        let second = upload(&executor, model.path(), &run2, &mut cache).await;
        assert_eq!(second.staged_bytes, 0);
        assert_eq!(second.summary.present, second.summary.bytes);
        same_tree(model.path(), &run2);
    }

    /// A tree with two files over [`SEND_WHILE_HASHING`] (one of them twice) and a
    /// small one.
    fn big_model() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let big = usize::try_from(SEND_WHILE_HASHING).unwrap() + 4096;
        std::fs::create_dir_all(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("shard-1.bin"), vec![1u8; big]).unwrap();
        std::fs::write(dir.path().join("sub/shard-2.bin"), vec![2u8; big + 1]).unwrap();
        std::fs::write(dir.path().join("config.json"), "{\"canary\":\"q7Wz3\"}").unwrap();
        dir
    }

    fn same_files(a: &Path, b: &Path) {
        for rel in ["shard-1.bin", "sub/shard-2.bin", "config.json"] {
            assert_eq!(
                std::fs::read(a.join(rel)).unwrap(),
                std::fs::read(b.join(rel)).unwrap(),
                "{rel}"
            );
        }
    }

    // Issue 21: on a first upload the big files are sent while they are hashed (no blob
    // on the target has their size); they become blobs under their digests, which the
    // local cache then knows, so the next upload sends nothing and hashes nothing.
    #[tokio::test]
    async fn big_files_unknown_to_the_target_are_sent_while_hashed() {
        let model = big_model();
        let work = tempfile::tempdir().unwrap();
        let executor = LocalExecutor::new(work.path()).unwrap();
        let mut cache = DigestCache::default();
        let run1 = work.path().join("runs/r1");
        let first = upload(&executor, model.path(), &run1, &mut cache).await;
        let bytes: u64 = digest_tree(model.path(), &mut DigestCache::default())
            .unwrap()
            .iter()
            .map(|blob| blob.size)
            .sum();
        assert_eq!(first.summary.sending, bytes);
        assert_eq!(first.staged_bytes, bytes);
        assert_eq!(cache.hashed(), 3);
        same_files(model.path(), &run1);
        let blobs = work.path().join(BLOBS_DIR).join("sha256");
        for blob in digest_tree(model.path(), &mut DigestCache::default()).unwrap() {
            assert!(
                blobs.join(&blob.sha256).is_file(),
                "{}",
                blob.path.display()
            );
        }
        let mut reloaded = cache.clone();
        let run2 = work.path().join("runs/r2");
        let second = upload(&executor, model.path(), &run2, &mut reloaded).await;
        assert_eq!(second.staged_bytes, 0);
        assert_eq!(reloaded.hashed(), 3, "nothing hashed again");
        same_files(model.path(), &run2);
    }

    // A file the local cache does not know but whose size a blob on the target has may
    // be that blob: it is hashed first, found there, and not sent (a second project
    // uploading the same model, or a lost digest cache).
    #[tokio::test]
    async fn a_file_of_a_size_the_target_holds_is_hashed_first_and_not_resent() {
        let model = big_model();
        let work = tempfile::tempdir().unwrap();
        let executor = LocalExecutor::new(work.path()).unwrap();
        upload(
            &executor,
            model.path(),
            &work.path().join("runs/r1"),
            &mut DigestCache::default(),
        )
        .await;
        let run2 = work.path().join("runs/r2");
        let mut shown = None;
        let second = upload_tree(
            &executor,
            model.path(),
            run2.to_str().unwrap(),
            &mut DigestCache::default(),
            |s| shown = Some(*s),
        )
        .await
        .unwrap();
        assert_eq!(second.staged_bytes, 0);
        let shown = shown.unwrap();
        assert_eq!((shown.sending, shown.present), (0, shown.bytes));
        same_files(model.path(), &run2);
    }

    // A big file whose size matches another blob on the target, with other content, is
    // hashed first, found missing, and sent under its digest.
    #[tokio::test]
    async fn a_size_match_with_other_content_is_sent_after_hashing() {
        let model = big_model();
        let work = tempfile::tempdir().unwrap();
        let executor = LocalExecutor::new(work.path()).unwrap();
        let run1 = work.path().join("runs/r1");
        upload(&executor, model.path(), &run1, &mut DigestCache::default()).await;
        // Same size, one byte changed: the target cannot have it.
        let shard = model.path().join("shard-1.bin");
        let mut content = std::fs::read(&shard).unwrap();
        content[7] = 9;
        std::fs::write(&shard, &content).unwrap();
        let run2 = work.path().join("runs/r2");
        let mut cache = DigestCache::default();
        let second = upload(&executor, model.path(), &run2, &mut cache).await;
        assert_eq!(second.staged_bytes, content.len() as u64);
        assert_eq!(std::fs::read(run2.join("shard-1.bin")).unwrap(), content);
        same_files(model.path(), &run2);
    }

    #[tokio::test]
    async fn a_corrupted_blob_is_replaced_never_linked() {
        let model = model();
        let work = tempfile::tempdir().unwrap();
        let executor = LocalExecutor::new(work.path()).unwrap();
        let mut cache = DigestCache::default();
        let run1 = work.path().join("runs/r1");
        upload(&executor, model.path(), &run1, &mut cache).await;
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
        let second = upload(&executor, model.path(), &run2, &mut cache).await;
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

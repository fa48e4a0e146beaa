//! The local side of the blob cache: the SHA-256 digest of every regular file of a
//! tree, read through a [`DigestCache`] keyed by path, size and modification time so
//! that an unchanged file is not hashed again, and the [`UploadSummary`] shown
//! before an upload.

use std::collections::BTreeMap;
use std::fmt;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One regular file of a local tree with its size and SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalBlob {
    /// Path relative to the tree's root.
    pub path: PathBuf,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256 of the content, 64 lowercase hexadecimal digits.
    pub sha256: String,
}

/// What the cache remembers of one file: its size and modification time (seconds
/// and nanoseconds) when it was hashed, and the digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    size: u64,
    mtime: i64,
    mtime_nsec: i64,
    sha256: String,
}

/// Digests of local files, keyed by absolute path, valid while the file's size and
/// modification time are unchanged. Kept as JSON; an unreadable cache file is read
/// as empty (it only saves work).
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct DigestCache {
    entries: BTreeMap<PathBuf, Entry>,
    /// How many files this cache hashed since it was loaded (for tests and the
    /// summary).
    #[serde(skip)]
    hashed: usize,
}

impl DigestCache {
    /// The cache stored at `file`, or an empty one when it is missing or unreadable.
    #[must_use]
    pub fn load(file: &Path) -> Self {
        std::fs::read(file)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Writes the cache to `file` through a temporary beside it, renamed into place.
    ///
    /// # Errors
    ///
    /// An I/O error naming `file`.
    pub fn save(&self, file: &Path) -> anyhow::Result<()> {
        use anyhow::Context as _;
        let dir = file.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create `{}`", dir.display()))?;
        let mut temp = tempfile::NamedTempFile::new_in(dir)
            .with_context(|| format!("cannot write `{}`", file.display()))?;
        serde_json::to_writer(&mut temp, self)?;
        temp.persist(file)
            .with_context(|| format!("cannot write `{}`", file.display()))?;
        Ok(())
    }

    /// How many files were hashed since this cache was loaded.
    #[must_use]
    pub fn hashed(&self) -> usize {
        self.hashed
    }

    /// The cached SHA-256 of the regular file `path` when its size and modification
    /// time match.
    fn cached(&self, path: &Path, meta: &std::fs::Metadata) -> Option<String> {
        self.entries
            .get(path)
            .filter(|entry| {
                entry.size == meta.size()
                    && entry.mtime == meta.mtime()
                    && entry.mtime_nsec == meta.mtime_nsec()
            })
            .map(|entry| entry.sha256.clone())
    }

    /// Forgets the files that are gone, so the cache does not grow with every model
    /// ever uploaded: those under `root` not among its `files` now, and elsewhere those
    /// that no longer exist.
    fn forget_gone<T, U>(&mut self, root: &Path, files: &[(PathBuf, T, U)]) {
        let here: std::collections::BTreeSet<&Path> =
            files.iter().map(|(path, _, _)| path.as_path()).collect();
        self.entries.retain(|path, _| {
            if path.starts_with(root) {
                here.contains(path.as_path())
            } else {
                std::fs::symlink_metadata(path).is_ok()
            }
        });
    }

    /// Remembers `sha256` as the digest of `path` at `meta`, just hashed.
    fn remember(&mut self, path: &Path, meta: &std::fs::Metadata, sha256: &str) {
        self.hashed += 1;
        self.entries.insert(
            path.to_path_buf(),
            Entry {
                size: meta.size(),
                mtime: meta.mtime(),
                mtime_nsec: meta.mtime_nsec(),
                sha256: sha256.to_owned(),
            },
        );
    }
}

/// The SHA-256 of each of `paths`, hashed on as many threads as there are
/// processors (at most one per file), each taking the next file when done, so a
/// model's shards are read side by side.
pub(super) fn hash_all<P: AsRef<Path> + Sync>(
    paths: &[P],
) -> Vec<Result<String, crate::exec::ExecError>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(paths.len());
    if threads <= 1 {
        return paths
            .iter()
            .map(|path| crate::exec::digest::sha256_file(path.as_ref()))
            .collect();
    }
    let next = AtomicUsize::new(0);
    let mut results: Vec<Option<Result<String, crate::exec::ExecError>>> =
        (0..paths.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(path) = paths.get(index) else {
                            break done;
                        };
                        done.push((index, crate::exec::digest::sha256_file(path.as_ref())));
                    }
                })
            })
            .collect();
        for worker in workers {
            // A worker that panicked leaves its files unhashed: each fails below.
            for (index, digest) in worker.join().unwrap_or_default() {
                results[index] = Some(digest);
            }
        }
    });
    results
        .into_iter()
        .map(|digest| {
            digest.unwrap_or_else(|| {
                Err(crate::exec::ExecError::Protocol(
                    "a file was not hashed".to_owned(),
                ))
            })
        })
        .collect()
}

/// One regular file of a local tree as [`scan_tree`] found it.
#[derive(Debug)]
pub(super) struct Scanned {
    /// Its absolute path.
    pub path: PathBuf,
    /// Its path relative to the tree's root.
    pub relative: PathBuf,
    /// Its metadata when it was found.
    pub meta: std::fs::Metadata,
    /// Its digest when the cache knows it for this size and modification time.
    pub cached: Option<String>,
}

/// Every regular file under `root`, sorted by path, with the digest `cache` holds
/// for it; the cache forgets the files that are gone. Symbolic links and other
/// special files are refused, naming them: a blob is a regular file.
///
/// # Errors
///
/// An error naming the directory or file that could not be read, or the first entry
/// that is not a regular file or a directory.
pub(super) fn scan_tree(root: &Path, cache: &mut DigestCache) -> anyhow::Result<Vec<Scanned>> {
    use anyhow::Context as _;
    let root =
        std::path::absolute(root).with_context(|| format!("cannot read `{}`", root.display()))?;
    let mut files = Vec::new();
    let mut pending = vec![root.clone()];
    while let Some(dir) = pending.pop() {
        let entries =
            std::fs::read_dir(&dir).with_context(|| format!("cannot read `{}`", dir.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("cannot read `{}`", dir.display()))?;
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path)
                .with_context(|| format!("cannot read `{}`", path.display()))?;
            if meta.is_dir() {
                pending.push(path);
            } else if meta.is_file() {
                let cached = cache.cached(&path, &meta);
                files.push((path, meta, cached));
            } else {
                anyhow::bail!(
                    "cannot upload `{}`: not a regular file or directory",
                    path.display()
                );
            }
        }
    }
    cache.forget_gone(&root, &files);
    let mut scanned: Vec<Scanned> = files
        .into_iter()
        .map(|(path, meta, cached)| Scanned {
            relative: path.strip_prefix(&root).unwrap_or(&path).to_path_buf(),
            path,
            meta,
            cached,
        })
        .collect();
    scanned.sort_by(|a, b| a.relative.cmp(&b.relative));
    Ok(scanned)
}

/// Hashes the files of `files` at `indices` side by side ([`hash_all`]), remembers
/// each digest in `cache` and sets it as the file's `cached` digest.
///
/// # Errors
///
/// An error naming the first file that could not be read.
pub(super) fn hash_into(
    files: &mut [Scanned],
    indices: &[usize],
    cache: &mut DigestCache,
) -> anyhow::Result<()> {
    let paths: Vec<&Path> = indices.iter().map(|&i| files[i].path.as_path()).collect();
    let digests = hash_all(&paths);
    remember_all(files, indices, digests, cache)
}

/// Remembers `digests` (those of `files` at `indices`, in order, as [`hash_all`]
/// answers them) in `cache` and as each file's `cached` digest.
///
/// # Errors
///
/// An error naming the first file that could not be read.
pub(super) fn remember_all(
    files: &mut [Scanned],
    indices: &[usize],
    digests: Vec<Result<String, crate::exec::ExecError>>,
    cache: &mut DigestCache,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let mut digests = digests.into_iter();
    for &index in indices {
        let file = &mut files[index];
        let sha256 = digests
            .next()
            .unwrap_or_else(|| {
                Err(crate::exec::ExecError::Protocol(
                    "a file was not hashed".to_owned(),
                ))
            })
            .with_context(|| format!("cannot read `{}`", file.path.display()))?;
        cache.remember(&file.path, &file.meta, &sha256);
        file.cached = Some(sha256);
    }
    Ok(())
}

/// Every regular file under `root` with its size and SHA-256, sorted by path; the
/// files not in `cache` are hashed side by side (one thread per processor). Symbolic links and
/// other special files are refused, naming them: a blob is a regular file.
///
/// # Errors
///
/// An error naming the file that could not be read, or the first entry that is not
/// a regular file or a directory.
pub fn digest_tree(root: &Path, cache: &mut DigestCache) -> anyhow::Result<Vec<LocalBlob>> {
    let mut files = scan_tree(root, cache)?;
    let missing: Vec<usize> = (0..files.len())
        .filter(|&i| files[i].cached.is_none())
        .collect();
    hash_into(&mut files, &missing, cache)?;
    Ok(files
        .into_iter()
        .map(|file| LocalBlob {
            path: file.relative,
            size: file.meta.size(),
            sha256: file.cached.unwrap_or_default(),
        })
        .collect())
}

/// What an upload sends: the tree's file count and bytes, the bytes whose blobs the
/// target already holds, and the bytes left to send (each missing digest once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadSummary {
    /// Regular files in the tree.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Bytes of files whose blob is already on the target.
    pub present: u64,
    /// Bytes to send: each missing blob once.
    pub sending: u64,
}

impl UploadSummary {
    /// The summary of uploading `blobs` to a target holding the digests for which
    /// `present` answers true.
    #[must_use]
    pub fn new(blobs: &[LocalBlob], present: impl Fn(&str) -> bool) -> Self {
        let mut sent = std::collections::HashSet::new();
        let mut summary = Self {
            files: blobs.len(),
            bytes: 0,
            present: 0,
            sending: 0,
        };
        for blob in blobs {
            summary.bytes += blob.size;
            if present(&blob.sha256) {
                summary.present += blob.size;
            } else if sent.insert(blob.sha256.as_str()) {
                summary.sending += blob.size;
            }
        }
        summary
    }

    /// Counts a file of `size` bytes that is sent whole without a digest known
    /// beforehand (no blob on the target has its size, so none can be it).
    pub(super) fn add_unhashed(&mut self, size: u64) {
        self.files += 1;
        self.bytes += size;
        self.sending += size;
    }
}

impl fmt::Display for UploadSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} files, {} bytes; {} bytes already on the target; sending {} bytes",
            self.files, self.bytes, self.present, self.sending
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELLO: &str = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("a.bin"), "hello").unwrap();
        std::fs::write(dir.path().join("sub/b.bin"), "hello").unwrap();
        std::fs::write(dir.path().join("sub/c.bin"), "other").unwrap();
        dir
    }

    // The cache forgets files gone from the tree and, elsewhere, files that no longer
    // exist; a file of another tree that still exists is kept.
    #[test]
    fn the_cache_forgets_files_that_are_gone() {
        let dir = tree();
        let other = tree();
        let mut cache = DigestCache::default();
        digest_tree(dir.path(), &mut cache).unwrap();
        digest_tree(other.path(), &mut cache).unwrap();
        assert_eq!(cache.entries.len(), 6);
        let gone = tempfile::tempdir().unwrap();
        digest_tree(gone.path(), &mut cache).unwrap();
        std::fs::write(gone.path().join("x.bin"), "x").unwrap();
        digest_tree(gone.path(), &mut cache).unwrap();
        assert_eq!(cache.entries.len(), 7);
        drop(gone);
        std::fs::remove_file(dir.path().join("sub/c.bin")).unwrap();
        digest_tree(dir.path(), &mut cache).unwrap();
        let root = std::path::absolute(dir.path()).unwrap();
        let kept: Vec<&PathBuf> = cache.entries.keys().collect();
        assert_eq!(kept.len(), 5, "{kept:?}");
        assert!(!cache.entries.contains_key(&root.join("sub/c.bin")));
        let other = std::path::absolute(other.path()).unwrap();
        assert!(cache.entries.contains_key(&other.join("sub/c.bin")));
    }

    #[test]
    fn digests_every_regular_file_sorted() {
        let dir = tree();
        let mut cache = DigestCache::default();
        let blobs = digest_tree(dir.path(), &mut cache).unwrap();
        let paths: Vec<_> = blobs.iter().map(|b| b.path.clone()).collect();
        assert_eq!(
            paths,
            [
                PathBuf::from("a.bin"),
                "sub/b.bin".into(),
                "sub/c.bin".into()
            ]
        );
        assert_eq!(blobs[0].sha256, HELLO);
        assert_eq!(blobs[0].size, 5);
    }

    #[test]
    fn an_unchanged_tree_is_not_rehashed_after_a_reload() {
        let dir = tree();
        let file = dir.path().join("cache/digests.json");
        let mut cache = DigestCache::default();
        let first = digest_tree(&dir.path().join("sub"), &mut cache).unwrap();
        assert_eq!(cache.hashed(), 2);
        cache.save(&file).unwrap();
        let mut cache = DigestCache::load(&file);
        let second = digest_tree(&dir.path().join("sub"), &mut cache).unwrap();
        assert_eq!(cache.hashed(), 0);
        assert_eq!(first, second);
    }

    #[test]
    fn a_changed_file_is_rehashed() {
        let dir = tree();
        let mut cache = DigestCache::default();
        digest_tree(dir.path(), &mut cache).unwrap();
        std::fs::write(dir.path().join("a.bin"), "hello, changed").unwrap();
        let mut cache = cache.clone();
        cache.hashed = 0;
        let blobs = digest_tree(dir.path(), &mut cache).unwrap();
        assert_eq!(cache.hashed(), 1);
        assert_ne!(blobs[0].sha256, HELLO);
    }

    #[test]
    fn an_unreadable_cache_file_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("digests.json");
        std::fs::write(&file, "not json").unwrap();
        assert_eq!(DigestCache::load(&file).entries.len(), 0);
    }

    #[test]
    fn a_symbolic_link_is_refused_by_name() {
        let dir = tree();
        std::os::unix::fs::symlink("a.bin", dir.path().join("link")).unwrap();
        let error = digest_tree(dir.path(), &mut DigestCache::default()).unwrap_err();
        assert!(error.to_string().contains("link`"), "{error}");
    }

    #[test]
    fn the_summary_counts_present_bytes_and_sends_each_missing_digest_once() {
        let dir = tree();
        let blobs = digest_tree(dir.path(), &mut DigestCache::default()).unwrap();
        let summary = UploadSummary::new(&blobs, |_| false);
        assert_eq!(
            summary.to_string(),
            "3 files, 15 bytes; 0 bytes already on the target; sending 10 bytes"
        );
        let summary = UploadSummary::new(&blobs, |digest| digest == HELLO);
        assert_eq!(
            summary,
            UploadSummary {
                files: 3,
                bytes: 15,
                present: 10,
                sending: 5
            }
        );
    }
}

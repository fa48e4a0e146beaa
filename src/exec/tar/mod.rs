//! The local side of file transfers: tar streams written and read with the `tar`
//! crate, while the target's own `tar` reads or writes the other end.
//!
//! Packing runs on a blocking thread and hands 256 KiB chunks to the async side
//! through a bounded channel, so a transfer streams with constant memory.
//! Extraction refuses every entry that would land outside its destination: an
//! absolute path, a `..` component, a path through a symbolic link, a hard link
//! to such a path, or a symbolic link whose target is absolute or leaves the
//! stream's root. It extracts into a fresh directory beside the destination and
//! moves the result into place only when the whole stream was accepted, so a
//! refused stream leaves nothing behind.

use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Component, Path, PathBuf};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

mod place;

use place::{move_into_place, staging_beside};

use super::ExecError;
use super::digest::{check_link, entries_words, prune_expression};
use super::shell::quote;

/// Size of one chunk between the tar thread and the connection: 256 KiB.
const CHUNK: usize = 256 * 1024;
/// Chunks in flight between the tar thread and the connection.
const DEPTH: usize = 16;

/// The target side of an upload: creates `remote` and extracts the tar stream on
/// standard input there with the target's `tar`.
#[must_use]
pub(crate) fn extract_script(remote: &str) -> String {
    format!(
        "mkdir -p -- {remote} && cd -- {remote} && exec tar -xf -\n",
        remote = quote(remote)
    )
}

/// The target side of a download: writes to standard output a tar stream of the
/// `entries` (relative to `remote`) that exist, with names matching an `exclude`
/// pattern pruned at any depth (`find -name`, the same rule as
/// [`super::Executor::manifest`]). The member names start with `./`. Nothing is
/// written when no entry exists; it exits 3 with `<remote> does not exist` on
/// standard error when `remote` is not a directory. Needs GNU or BSD `tar` for
/// `--null -T -` and `--no-recursion`.
#[must_use]
pub(crate) fn archive_script(remote: &str, entries: &[String], exclude: &[String]) -> String {
    format!(
        r#"cd {remote} 2>/dev/null || {{ printf '%s does not exist\n' {remote} >&2; exit 3; }}
set --
for ob_e in {entries}; do
  if [ -e "./$ob_e" ] || [ -L "./$ob_e" ]; then set -- "$@" "./$ob_e"; fi
done
[ "$#" -eq 0 ] && exit 0
find "$@" {prune}-print0 | tar --null --no-recursion -T - -cf -
"#,
        remote = quote(remote),
        entries = entries_words(entries),
        prune = prune_expression(exclude),
    )
}

/// Writes the content of the directory `local` as a tar stream to `out`: every
/// top-level entry except those named in `skip`, recursively, symbolic links kept as
/// links, empty directories kept.
///
/// # Errors
///
/// Returns [`ExecError::Io`] when `local` or a file under it cannot be read, or the
/// stream cannot be written.
pub(crate) fn pack(local: &Path, skip: &[String], out: impl Write) -> Result<(), ExecError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ExecError::Io { path, source }
    };
    let mut builder = tar::Builder::new(out);
    builder.follow_symlinks(false);
    let mut names: Vec<_> = std::fs::read_dir(local)
        .map_err(io(local))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(io(local))?
        .into_iter()
        .map(|entry| entry.file_name())
        .filter(|name| {
            !skip
                .iter()
                .any(|skipped| name.as_os_str() == skipped.as_str())
        })
        .collect();
    names.sort();
    for name in names {
        let path = local.join(&name);
        let meta = std::fs::symlink_metadata(&path).map_err(io(&path))?;
        if meta.is_dir() {
            builder.append_dir_all(&name, &path).map_err(io(&path))?;
        } else {
            builder
                .append_path_with_name(&path, &name)
                .map_err(io(&path))?;
        }
    }
    builder
        .into_inner()
        .map_err(io(local))?
        .flush()
        .map_err(io(local))?;
    Ok(())
}

/// Extracts the tar stream `input` into `dest`, creating `dest` (and its parents)
/// only when the stream holds at least one entry.
///
/// The entries land first in a fresh directory beside `dest` (next to its nearest
/// existing ancestor), which is moved into place only once the whole stream was read
/// and accepted: a refused or broken stream leaves nothing in `dest`. When `dest`
/// already exists, the extracted tree is merged into it, files and links replacing
/// those of the same name.
///
/// # Errors
///
/// Returns [`ExecError::Protocol`] for an entry that would land outside `dest`, or a
/// symbolic link whose target is absolute or leaves the stream's root (see
/// [`super::digest::link_stays_inside`]); [`ExecError::Io`] when the stream cannot
/// be read, a file cannot be written, or an extracted directory meets a
/// non-directory of the same name in `dest` (or the other way round).
pub(crate) fn unpack(input: impl Read, dest: &Path) -> Result<(), ExecError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ExecError::Io { path, source }
    };
    let mut archive = tar::Archive::new(input);
    archive.set_preserve_mtime(true);
    archive.set_overwrite(true);
    let mut staging: Option<tempfile::TempDir> = None;
    for entry in archive.entries().map_err(io(dest))? {
        let mut entry = entry.map_err(io(dest))?;
        let path = entry.path().map_err(io(dest))?.into_owned();
        let relative = inside(&path)?;
        if let Some(link) = hard_link_target(&entry)? {
            inside(&link)?;
        }
        if entry.header().entry_type() == tar::EntryType::Symlink {
            let target = entry.link_name_bytes().unwrap_or_default();
            check_link(relative.as_os_str().as_bytes(), &target)?;
        }
        if relative.as_os_str().is_empty() {
            continue;
        }
        let root = if let Some(dir) = &staging {
            dir.path().to_path_buf()
        } else {
            let dir = staging_beside(dest)?;
            let root = dir.path().to_path_buf();
            staging = Some(dir);
            root
        };
        no_symlink_on_the_way(&root, &relative)?;
        if let Some(parent) = relative.parent() {
            std::fs::create_dir_all(root.join(parent)).map_err(io(&dest.join(parent)))?;
        }
        let unpacked = entry.unpack_in(&root).map_err(io(&dest.join(&relative)))?;
        if !unpacked {
            return Err(refused(&path));
        }
    }
    match staging {
        Some(staging) => move_into_place(staging, dest),
        None => Ok(()),
    }
}

fn refused(path: &Path) -> ExecError {
    ExecError::Protocol(format!(
        "tar entry `{}` would land outside its destination",
        path.display()
    ))
}

/// `path` without `.` components, or an error when it is absolute or holds `..`.
fn inside(path: &Path) -> Result<PathBuf, ExecError> {
    let mut clean = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(refused(path));
            }
        }
    }
    Ok(clean)
}

fn hard_link_target<R: Read>(entry: &tar::Entry<'_, R>) -> Result<Option<PathBuf>, ExecError> {
    if entry.header().entry_type() != tar::EntryType::Link {
        return Ok(None);
    }
    let link = entry.link_name().map_err(|source| ExecError::Io {
        path: PathBuf::from("<tar stream>"),
        source,
    })?;
    Ok(link.map(std::borrow::Cow::into_owned))
}

/// Refuses a `relative` path whose existing ancestors under `dest` include a
/// symbolic link: writing there would follow it out of `dest`.
fn no_symlink_on_the_way(dest: &Path, relative: &Path) -> Result<(), ExecError> {
    let mut current = dest.to_path_buf();
    let parts: Vec<_> = relative.components().collect();
    for part in parts.iter().take(parts.len().saturating_sub(1)) {
        current.push(part);
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => return Err(refused(relative)),
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok(())
}

/// A [`Write`] that hands fixed-size chunks to an async receiver.
struct ChannelWriter {
    buffer: Vec<u8>,
    sender: mpsc::Sender<Vec<u8>>,
}

impl ChannelWriter {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buffer, Vec::with_capacity(CHUNK));
        self.sender
            .blocking_send(chunk)
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "transfer ended"))
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let room = CHUNK - self.buffer.len();
        let taken = room.min(data.len());
        self.buffer.extend_from_slice(&data[..taken]);
        if self.buffer.len() >= CHUNK {
            self.send()?;
        }
        Ok(taken)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

/// A [`Read`] over chunks from an async sender.
struct ChannelReader {
    chunk: Vec<u8>,
    at: usize,
    receiver: mpsc::Receiver<Vec<u8>>,
}

impl Read for ChannelReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.at >= self.chunk.len() {
            match self.receiver.blocking_recv() {
                Some(chunk) => {
                    self.chunk = chunk;
                    self.at = 0;
                }
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.chunk.len() - self.at);
        out[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Streams a tar of `local` (see [`pack`]) into `stdin`, then closes it.
///
/// # Errors
///
/// Returns the packing error, or [`ExecError::Io`] when `stdin` breaks.
pub(crate) async fn feed<W: AsyncWrite + Unpin>(
    local: &Path,
    skip: &[String],
    mut stdin: W,
) -> Result<(), ExecError> {
    let (sender, mut receiver) = mpsc::channel::<Vec<u8>>(DEPTH);
    let local_owned = local.to_path_buf();
    let skip = skip.to_vec();
    let packer = tokio::task::spawn_blocking(move || {
        let writer = ChannelWriter {
            buffer: Vec::with_capacity(CHUNK),
            sender,
        };
        pack(&local_owned, &skip, writer)
    });
    let mut write_error = None;
    while let Some(chunk) = receiver.recv().await {
        if let Err(error) = stdin.write_all(&chunk).await {
            write_error = Some(error);
            break;
        }
    }
    drop(receiver);
    let pack_result = packer.await.map_err(|error| ExecError::Io {
        path: local.to_path_buf(),
        source: std::io::Error::other(error.to_string()),
    })?;
    if let Some(source) = write_error {
        return Err(ExecError::Io {
            path: local.to_path_buf(),
            source,
        });
    }
    pack_result?;
    stdin.shutdown().await.map_err(|source| ExecError::Io {
        path: local.to_path_buf(),
        source,
    })?;
    Ok(())
}

/// The pipe a transfer streams through, taken from the command started with it.
///
/// # Errors
///
/// [`ExecError::Protocol`] naming the standard `which` (`input`, `output`) when the
/// command has none.
pub(crate) fn pipe<T>(pipe: Option<T>, which: &str) -> Result<T, ExecError> {
    pipe.ok_or_else(|| ExecError::Protocol(format!("no standard {which}")))
}

/// Reads a tar stream from `stdout` and extracts it into `dest` (see [`unpack`]).
///
/// # Errors
///
/// Returns the extraction error, or [`ExecError::Io`] when `stdout` breaks.
pub(crate) async fn drain<R: AsyncRead + Unpin>(
    mut stdout: R,
    dest: &Path,
) -> Result<(), ExecError> {
    let (sender, receiver) = mpsc::channel::<Vec<u8>>(DEPTH);
    let dest_owned = dest.to_path_buf();
    let unpacker = tokio::task::spawn_blocking(move || {
        let reader = ChannelReader {
            chunk: Vec::new(),
            at: 0,
            receiver,
        };
        unpack(reader, &dest_owned)
    });
    let mut read_error = None;
    loop {
        let mut chunk = vec![0_u8; CHUNK];
        match stdout.read(&mut chunk).await {
            Ok(0) => break,
            Ok(n) => {
                chunk.truncate(n);
                if sender.send(chunk).await.is_err() {
                    break;
                }
            }
            Err(error) => {
                read_error = Some(error);
                break;
            }
        }
    }
    drop(sender);
    let unpack_result = unpacker.await.map_err(|error| ExecError::Io {
        path: dest.to_path_buf(),
        source: std::io::Error::other(error.to_string()),
    })?;
    unpack_result?;
    if let Some(source) = read_error {
        return Err(ExecError::Io {
            path: dest.to_path_buf(),
            source,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream_with(path: &[u8]) -> Vec<u8> {
        let mut header = tar::Header::new_gnu();
        header.as_gnu_mut().unwrap().name[..path.len()].copy_from_slice(path);
        header.set_size(4);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_cksum();
        let mut out = Vec::new();
        out.extend_from_slice(header.as_bytes());
        let mut data = b"evil".to_vec();
        data.resize(512, 0);
        out.extend_from_slice(&data);
        out.extend_from_slice(&[0; 1024]);
        out
    }

    #[test]
    fn escaping_entries_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let dest = root.path().join("dest");
        for path in [
            &b"../escaped"[..],
            b"/tmp/absolute-escape",
            b"a/../../escaped",
        ] {
            let result = unpack(&stream_with(path)[..], &dest);
            assert!(matches!(result, Err(ExecError::Protocol(_))), "{result:?}");
        }
        assert!(!root.path().join("escaped").exists());
        assert!(!dest.exists());
    }

    #[test]
    fn writing_through_a_symlink_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let dest = root.path().join("dest");
        let outside = root.path().join("outside");
        std::fs::create_dir_all(&dest).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, dest.join("link")).unwrap();
        let result = unpack(&stream_with(b"link/file")[..], &dest);
        assert!(result.is_err(), "{result:?}");
        assert!(!outside.join("file").exists());
    }

    #[test]
    fn pack_then_unpack_round_trips() {
        let root = tempfile::tempdir().unwrap();
        let src = root.path().join("src");
        std::fs::create_dir_all(src.join("empty")).unwrap();
        std::fs::create_dir_all(src.join("skipme")).unwrap();
        std::fs::write(src.join("a b"), "x").unwrap();
        std::fs::write(src.join("new\nline"), "").unwrap();
        std::os::unix::fs::symlink("a b", src.join("link")).unwrap();
        let mut stream = Vec::new();
        pack(&src, &["skipme".to_owned()], &mut stream).unwrap();
        let dest = root.path().join("dest");
        unpack(&stream[..], &dest).unwrap();
        assert_eq!(std::fs::read_to_string(dest.join("a b")).unwrap(), "x");
        assert!(dest.join("empty").is_dir());
        assert!(!dest.join("skipme").exists());
        assert_eq!(
            std::fs::read_link(dest.join("link")).unwrap(),
            Path::new("a b")
        );
    }

    /// A stream of a regular file `good` and then a symbolic link `name -> target`.
    fn stream_with_link(name: &str, target: &str) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_size(4);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        builder
            .append_data(&mut header, "good", &b"good"[..])
            .unwrap();
        let mut link = tar::Header::new_gnu();
        link.set_entry_type(tar::EntryType::Symlink);
        link.set_size(0);
        link.set_mode(0o777);
        builder.append_link(&mut link, name, target).unwrap();
        builder.into_inner().unwrap()
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with(".ob-download-"))
            .collect()
    }

    #[test]
    fn a_refused_link_leaves_nothing_of_its_archive() {
        let root = tempfile::tempdir().unwrap();
        let fresh = root.path().join("fresh/dest");
        let existing = root.path().join("existing");
        std::fs::create_dir_all(&existing).unwrap();
        std::fs::write(existing.join("old"), "old").unwrap();
        for (name, target) in [
            ("evil", "/etc"),
            ("evil", "../outside"),
            ("a/evil", "../../outside"),
        ] {
            let stream = stream_with_link(name, target);
            let result = unpack(&stream[..], &fresh);
            assert!(
                matches!(&result, Err(ExecError::EscapingLinks(links)) if links.iter().any(|l| l.contains(name))),
                "{name} -> {target}: {result:?}"
            );
            assert!(!root.path().join("fresh").exists(), "{name} -> {target}");
            let result = unpack(&stream[..], &existing);
            assert!(result.is_err(), "{name} -> {target}");
            let names: Vec<_> = std::fs::read_dir(&existing)
                .unwrap()
                .map(|entry| entry.unwrap().file_name())
                .collect();
            assert_eq!(names, ["old"], "{name} -> {target}");
            assert!(leftovers(root.path()).is_empty());
        }
    }

    #[test]
    fn an_in_tree_link_is_kept_and_merged_into_an_existing_destination() {
        let root = tempfile::tempdir().unwrap();
        let dest = root.path().join("dest");
        std::fs::create_dir_all(&dest).unwrap();
        std::fs::write(dest.join("old"), "old").unwrap();
        std::fs::write(dest.join("good"), "stale").unwrap();
        unpack(&stream_with_link("latest", "good")[..], &dest).unwrap();
        assert_eq!(std::fs::read_to_string(dest.join("old")).unwrap(), "old");
        assert_eq!(std::fs::read_to_string(dest.join("good")).unwrap(), "good");
        assert_eq!(
            std::fs::read_link(dest.join("latest")).unwrap(),
            Path::new("good")
        );
        assert!(leftovers(root.path()).is_empty());
        let fresh = root.path().join("a/b/fresh");
        unpack(&stream_with_link("latest", "good")[..], &fresh).unwrap();
        assert_eq!(
            std::fs::read_link(fresh.join("latest")).unwrap(),
            Path::new("good")
        );
        assert!(leftovers(&root.path().join("a/b")).is_empty());
        assert!(leftovers(root.path()).is_empty());
    }
}

//! Extracting a tar stream into a fresh staging directory beside its destination.
//!
//! Every entry is checked before anything of it is created: an absolute path, a `..`
//! component, a hard link to such a path, a symbolic link whose target is absolute
//! or leaves the stream's root, or a path through a symbolic link is refused.
//!
//! Regular files, the bulk of every stream, take a short path: the directories on the
//! way are checked once each (the staging directory holds only what this stream
//! made, so a directory seen once stays a directory), the file is created with
//! `O_EXCL` (never through a link), written from large reads and given its mode and
//! time through its handle. Every other kind of entry goes through the `tar`
//! crate's own checked `unpack_in`.

use std::collections::HashSet;
use std::fs::{File, FileTimes, OpenOptions, Permissions};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::place::{move_into_place, staging_beside};
use crate::exec::ExecError;
use crate::exec::digest::check_link;

/// Size of one read of file data from the stream, and so of one write: 1 MiB.
const WRITE_CHUNK: usize = 1 << 20;

/// Extracts the tar stream `input` into `dest`, creating `dest` (and its parents)
/// only when the stream holds at least one entry: [`extract`], then
/// [`Extracted::place`].
///
/// # Errors
///
/// As [`extract`] and [`Extracted::place`].
#[cfg(test)]
pub(crate) fn unpack(input: impl Read, dest: &Path) -> Result<(), ExecError> {
    extract(input, dest)?.place()
}

/// A stream extracted in full into a staging directory beside its destination, not
/// yet in place: [`Extracted::place`] moves it there; dropped, it is removed and the
/// destination stays as it was. A download places it only once the target's side of
/// the transfer (its `tar`) has ended well.
#[derive(Debug)]
#[must_use = "an extracted stream is not in place until `place` is called"]
pub(crate) struct Extracted {
    staging: Option<tempfile::TempDir>,
    dest: PathBuf,
}

impl Extracted {
    /// Moves the extracted tree into place: renamed to the destination, or merged
    /// into it when it exists (files and links replacing those of the same name).
    /// Nothing happens for a stream without entries.
    ///
    /// # Errors
    ///
    /// [`ExecError::Io`] when an extracted directory meets a non-directory of the same
    /// name in the destination (or the other way round), or a move fails.
    pub(crate) fn place(self) -> Result<(), ExecError> {
        match self.staging {
            Some(staging) => move_into_place(staging, &self.dest),
            None => Ok(()),
        }
    }
}

/// Extracts the tar stream `input` into a fresh directory beside `dest` (next to its
/// nearest existing ancestor), made only when the stream holds at least one entry.
/// Nothing of `dest` changes: the caller places the result ([`Extracted::place`])
/// once it knows the stream is good, so a refused or broken stream, or one whose
/// sender failed, leaves nothing in `dest`.
///
/// # Errors
///
/// Returns [`ExecError::Protocol`] for an entry that would land outside `dest`, or a
/// symbolic link whose target is absolute or leaves the stream's root (see
/// [`crate::exec::digest::link_stays_inside`]); [`ExecError::Io`] when the stream
/// cannot be read or ends inside an entry, or a file cannot be written.
pub(crate) fn extract(input: impl Read, dest: &Path) -> Result<Extracted, ExecError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ExecError::Io { path, source }
    };
    let mut archive = tar::Archive::new(input);
    archive.set_preserve_mtime(true);
    archive.set_overwrite(true);
    let mut staging: Option<Staging> = None;
    let mut buffer = vec![0_u8; WRITE_CHUNK];
    for entry in archive.entries().map_err(io(dest))? {
        let mut entry = entry.map_err(io(dest))?;
        let path = entry.path().map_err(io(dest))?.into_owned();
        let relative = inside(&path)?;
        if let Some(link) = hard_link_target(&entry)? {
            inside(&link)?;
        }
        let kind = entry.header().entry_type();
        if kind == tar::EntryType::Symlink {
            let target = entry.link_name_bytes().unwrap_or_default();
            check_link(relative.as_os_str().as_bytes(), &target)?;
        }
        if relative.as_os_str().is_empty() {
            continue;
        }
        let stage = match &mut staging {
            Some(stage) => stage,
            None => staging.insert(Staging::beside(dest)?),
        };
        stage.parents(&relative, dest)?;
        if kind == tar::EntryType::Regular || kind == tar::EntryType::Continuous {
            stage.file(&mut entry, &relative, dest, &mut buffer)?;
        } else {
            // Whatever lands here is no directory this stream made checked.
            stage.dirs.remove(&relative);
            let unpacked = entry
                .unpack_in(&stage.root)
                .map_err(io(&dest.join(&relative)))?;
            if !unpacked {
                return Err(refused(&path));
            }
        }
    }
    Ok(Extracted {
        staging: staging.map(|stage| stage.dir),
        dest: dest.to_path_buf(),
    })
}

/// The staging directory of one stream and the directories in it known to be real
/// directories (relative to it).
struct Staging {
    dir: tempfile::TempDir,
    root: PathBuf,
    dirs: HashSet<PathBuf>,
    /// The process's file mode creation mask, when known: a file created with a
    /// mode the mask leaves whole needs no `fchmod` after.
    umask: Option<u32>,
}

impl Staging {
    fn beside(dest: &Path) -> Result<Self, ExecError> {
        let dir = staging_beside(dest)?;
        let root = dir.path().to_path_buf();
        Ok(Self {
            dir,
            root,
            dirs: HashSet::new(),
            umask: umask(),
        })
    }

    /// Creates the missing directories above `relative`, refusing it when one that
    /// exists is a symbolic link: writing there would follow it out of the stream.
    fn parents(&mut self, relative: &Path, dest: &Path) -> Result<(), ExecError> {
        let Some(parent) = relative.parent() else {
            return Ok(());
        };
        if parent.as_os_str().is_empty() || self.dirs.contains(parent) {
            return Ok(());
        }
        let mut prefix = PathBuf::new();
        for part in parent.components() {
            prefix.push(part);
            if self.dirs.contains(&prefix) {
                continue;
            }
            let full = self.root.join(&prefix);
            let error = |source| ExecError::Io {
                path: dest.join(&prefix),
                source,
            };
            match std::fs::symlink_metadata(&full) {
                Ok(meta) if meta.file_type().is_symlink() => return Err(refused(relative)),
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    return Err(error(std::io::Error::new(
                        std::io::ErrorKind::NotADirectory,
                        "not a directory",
                    )));
                }
                Err(missing) if missing.kind() == std::io::ErrorKind::NotFound => {
                    std::fs::create_dir(&full).map_err(error)?;
                }
                Err(other) => return Err(error(other)),
            }
            self.dirs.insert(prefix.clone());
        }
        Ok(())
    }

    /// Writes the regular file of `entry` at `relative`, replacing a file or link of
    /// that name (never writing through it), with the entry's mode (`0o777` bits) and
    /// modification time.
    fn file<R: Read>(
        &mut self,
        entry: &mut tar::Entry<'_, R>,
        relative: &Path,
        dest: &Path,
        buffer: &mut [u8],
    ) -> Result<(), ExecError> {
        let path = self.root.join(relative);
        let error = |source| ExecError::Io {
            path: dest.join(relative),
            source,
        };
        let mode = entry.header().mode().map_err(error)? & 0o777;
        let mut file = match create(&path, mode) {
            Err(exists) if exists.kind() == std::io::ErrorKind::AlreadyExists => {
                std::fs::remove_file(&path).map_err(error)?;
                create(&path, mode)
            }
            other => other,
        }
        .map_err(error)?;
        let expected = entry.size();
        let mut written = 0_u64;
        loop {
            let n = entry.read(buffer).map_err(error)?;
            if n == 0 {
                break;
            }
            file.write_all(&buffer[..n]).map_err(error)?;
            written += n as u64;
        }
        if written != expected {
            return Err(error(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("the stream ended {written} bytes into {expected}"),
            )));
        }
        if let Ok(mtime) = entry.header().mtime() {
            // As the `tar` crate does: a time of 0 becomes 1 s past the epoch.
            let time = SystemTime::UNIX_EPOCH + Duration::from_secs(mtime.max(1));
            file.set_times(FileTimes::new().set_accessed(time).set_modified(time))
                .map_err(error)?;
        }
        // Created with `mode | 0o600` less the mask: set the mode only when that
        // differs (issue 10: one system call per file fewer in the common case).
        if self.umask.is_none_or(|mask| (mode | 0o600) & !mask != mode) {
            file.set_permissions(Permissions::from_mode(mode))
                .map_err(error)?;
        }
        Ok(())
    }
}

/// The file mode creation mask of this process, from `/proc/self/status` (Linux 4.7
/// and later); none where that is not there. Read, never set: setting it to learn it
/// would race with the other threads creating files.
pub(super) fn umask() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix("Umask:"))?;
    u32::from_str_radix(line.trim(), 8).ok()
}

/// A new file at `path`: fails when anything, a link included, is there already.
fn create(path: &Path, mode: u32) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode | 0o600)
        .open(path)
}

pub(super) fn refused(path: &Path) -> ExecError {
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

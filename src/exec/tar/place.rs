//! Putting an accepted stream in place: it is extracted into a fresh directory beside
//! the destination, then renamed to it, or merged into it when it exists, without
//! replacing a directory by a file or the other way round.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use crate::exec::ExecError;

/// The name prefix of [`staging_beside`]'s directories.
pub(crate) const STAGING_PREFIX: &str = ".ob-download-";

/// A new empty directory in the nearest existing ancestor of `dest` (its parent
/// when `dest` exists), so that it can be renamed to `dest` on the same file system.
pub(super) fn staging_beside(dest: &Path) -> Result<tempfile::TempDir, ExecError> {
    let mut base = dest.parent();
    while let Some(dir) = base {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if dir.is_dir() {
            return tempfile::Builder::new()
                .prefix(STAGING_PREFIX)
                .permissions(std::fs::Permissions::from_mode(0o755))
                .tempdir_in(dir)
                .map_err(|source| ExecError::Io {
                    path: dir.to_path_buf(),
                    source,
                });
        }
        base = dir.parent();
    }
    Err(ExecError::Io {
        path: dest.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::NotFound, "no existing parent"),
    })
}

/// Moves the extracted tree `staging` to `dest`: a rename when `dest` does not
/// exist, otherwise a merge checked in full before anything moves.
pub(super) fn move_into_place(staging: tempfile::TempDir, dest: &Path) -> Result<(), ExecError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ExecError::Io { path, source }
    };
    match std::fs::metadata(dest) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).map_err(io(parent))?;
            }
            std::fs::rename(staging.path(), dest).map_err(io(dest))?;
            // Renamed away: nothing is left for the guard to remove.
            let _ = staging.keep();
            Ok(())
        }
        Err(error) => Err(io(dest)(error)),
        Ok(meta) if meta.is_dir() => {
            check_merge(staging.path(), dest)?;
            merge(staging.path(), dest)
        }
        Ok(_) => Err(io(dest)(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            "not a directory",
        ))),
    }
}

/// Whether every directory of `from` meets a real directory (or nothing) in `to`,
/// and every other entry meets no directory there.
fn check_merge(from: &Path, to: &Path) -> Result<(), ExecError> {
    for (child, from_meta, target) in children(from, to)? {
        let Ok(to_meta) = std::fs::symlink_metadata(&target) else {
            continue;
        };
        match (from_meta.is_dir(), to_meta.is_dir()) {
            (true, true) => check_merge(&child, &target)?,
            (false, false) => {}
            _ => {
                return Err(ExecError::Io {
                    path: target,
                    source: std::io::Error::new(
                        std::io::ErrorKind::AlreadyExists,
                        "a directory and a non-directory of the same name",
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Moves every entry of `from` into `to`, directories merged, others replaced.
fn merge(from: &Path, to: &Path) -> Result<(), ExecError> {
    for (child, from_meta, target) in children(from, to)? {
        if from_meta.is_dir() && target.is_dir() {
            merge(&child, &target)?;
        } else {
            std::fs::rename(&child, &target).map_err(|source| ExecError::Io {
                path: target.clone(),
                source,
            })?;
        }
    }
    Ok(())
}

/// The entries of `from`, with their metadata (links not followed) and their path
/// under `to`.
fn children(
    from: &Path,
    to: &Path,
) -> Result<Vec<(PathBuf, std::fs::Metadata, PathBuf)>, ExecError> {
    let io = |source| ExecError::Io {
        path: from.to_path_buf(),
        source,
    };
    let mut out = Vec::new();
    for child in std::fs::read_dir(from).map_err(io)? {
        let child = child.map_err(io)?;
        let meta = std::fs::symlink_metadata(child.path()).map_err(io)?;
        out.push((child.path(), meta, to.join(child.file_name())));
    }
    Ok(out)
}

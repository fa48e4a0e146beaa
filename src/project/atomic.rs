//! Writing a file whole or not at all: a temporary beside it, synced, then renamed over
//! it, so a reader never sees half a file and a failed write leaves nothing staged.

use std::io::Write as _;
use std::path::Path;

/// The temporary beside `path` that [`write_atomic`] writes first: `.<name>.tmp`, or
/// `.<name>.<pid>.tmp` where several processes may write the same file at once.
#[must_use]
pub fn temporary_for(path: &Path, per_process: bool) -> std::path::PathBuf {
    let name = path
        .file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
    if per_process {
        path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
    } else {
        path.with_file_name(format!(".{name}.tmp"))
    }
}

/// Writes `bytes` to `path` atomically: first to `temporary` (in the same directory,
/// see [`temporary_for`]), synced, then renamed over `path`. A failed write removes the
/// temporary.
///
/// # Errors
///
/// The I/O error of creating, writing, syncing or renaming the temporary.
pub fn write_atomic(path: &Path, bytes: &[u8], temporary: &Path) -> std::io::Result<()> {
    let written = (|| {
        let mut file = std::fs::File::create(temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(temporary);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_replaces_the_file_whole_and_a_failed_one_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        write_atomic(&path, b"one", &temporary_for(&path, false)).unwrap();
        write_atomic(&path, b"two", &temporary_for(&path, true)).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        // A directory in the file's place: the rename fails, the temporary goes.
        let blocked = dir.path().join("blocked");
        std::fs::create_dir(&blocked).unwrap();
        std::fs::write(blocked.join("inside"), b"x").unwrap();
        assert!(write_atomic(&blocked, b"three", &temporary_for(&blocked, true)).is_err());
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }
}

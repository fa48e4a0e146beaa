//! JSONL files that survive crashes (LAY-2, LAY-3): writers append whole lines and sync
//! them to disk before an item counts as done; readers keep a valid last line that lost
//! its newline and skip, reporting file and line, a line that is not valid JSON (a torn
//! write). Files are read as bytes so invalid UTF-8 in one line spoils only that line.
//! Every reader skips a UTF-8 byte-order mark at the start of a line (editors on Windows
//! write one at the start of a file; concatenated files carry one inside), so that
//! record is read like any other; a file rewritten here loses the mark.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A JSONL file that cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum JsonlError {
    /// An I/O error on `path`.
    #[error("cannot {action} `{}`", path.display())]
    Io {
        /// What was being done (`read`, `append to`, `replace`).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A record that cannot be serialized (a non-finite float, say).
    #[error("cannot encode a record for `{}`", path.display())]
    Encode {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> JsonlError {
    let path = path.to_path_buf();
    move |source| JsonlError::Io {
        action,
        path,
        source,
    }
}

/// The UTF-8 byte-order mark.
pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// `bytes` without a leading UTF-8 byte-order mark.
#[must_use]
pub fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(BOM).unwrap_or(bytes)
}

/// The lines of a file's `bytes`, split at `\n`, each without a leading byte-order mark.
fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes.split(|&b| b == b'\n').map(strip_bom)
}

/// A line that was skipped while reading, for the caller to warn about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedLine {
    /// The file.
    pub path: PathBuf,
    /// 1-based line number.
    pub line: usize,
    /// Why it was skipped.
    pub reason: String,
}

impl std::fmt::Display for SkippedLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "skipped line {} of `{}`: {}",
            self.line,
            self.path.display(),
            self.reason
        )
    }
}

/// Reads every record of `path`; a missing file holds none. Blank lines are ignored;
/// lines that are not a valid `T` are returned as [`SkippedLine`]s.
///
/// # Errors
///
/// [`JsonlError::Io`] when the file exists but cannot be read.
pub fn read_jsonl<T: DeserializeOwned>(
    path: &Path,
) -> Result<(Vec<T>, Vec<SkippedLine>), JsonlError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok((Vec::new(), Vec::new()));
        }
        Err(error) => return Err(io("read", path)(error)),
    };
    let mut records = Vec::new();
    let mut skipped = Vec::new();
    for (index, line) in lines(&bytes).enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<T>(line) {
            Ok(record) => records.push(record),
            Err(error) => skipped.push(SkippedLine {
                path: path.to_path_buf(),
                line: index + 1,
                reason: error.to_string(),
            }),
        }
    }
    Ok((records, skipped))
}

/// An open JSONL file that records are appended to.
#[derive(Debug)]
pub struct JsonlWriter {
    file: File,
    path: PathBuf,
}

impl JsonlWriter {
    /// Opens `path` for appending, creating it and its directory when missing. When the
    /// file's last line lacks its newline, one is written first so the next record starts
    /// on a line of its own.
    ///
    /// # Errors
    ///
    /// [`JsonlError::Io`] when the file cannot be created, read or written.
    pub fn open(path: &Path) -> Result<Self, JsonlError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io("create the directory of", path))?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io("open", path))?;
        let len = file.metadata().map_err(io("read", path))?.len();
        if len > 0 {
            let mut last = [0_u8; 1];
            file.seek(SeekFrom::End(-1)).map_err(io("read", path))?;
            file.read_exact(&mut last).map_err(io("read", path))?;
            if last[0] != b'\n' {
                file.write_all(b"\n").map_err(io("append to", path))?;
                file.sync_data().map_err(io("append to", path))?;
            }
        }
        Ok(Self {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Appends one record as one line and syncs it to disk.
    ///
    /// # Errors
    ///
    /// [`JsonlError`] when encoding, writing or syncing fails.
    pub fn append<T: Serialize>(&mut self, record: &T) -> Result<(), JsonlError> {
        self.append_all(std::slice::from_ref(record))
    }

    /// Appends records, each with one write of its whole line, then syncs once (a group
    /// commit: no record counts as done before the sync returns).
    ///
    /// # Errors
    ///
    /// [`JsonlError`] when encoding, writing or syncing fails.
    pub fn append_all<T: Serialize>(&mut self, records: &[T]) -> Result<(), JsonlError> {
        if records.is_empty() {
            return Ok(());
        }
        for record in records {
            let mut line = serde_json::to_vec(record).map_err(|source| JsonlError::Encode {
                path: self.path.clone(),
                source,
            })?;
            line.push(b'\n');
            self.file
                .write_all(&line)
                .map_err(io("append to", &self.path))?;
        }
        self.file.sync_data().map_err(io("append to", &self.path))
    }
}

/// Replaces `path` with `records`, atomically (a temporary file in the same directory,
/// synced, then renamed over it, LAY-4).
///
/// # Errors
///
/// [`JsonlError`] when encoding, writing or renaming fails; the old file is then intact.
pub fn replace_jsonl<T: Serialize>(path: &Path, records: &[T]) -> Result<(), JsonlError> {
    let mut bytes = Vec::new();
    for record in records {
        serde_json::to_writer(&mut bytes, record).map_err(|source| JsonlError::Encode {
            path: path.to_path_buf(),
            source,
        })?;
        bytes.push(b'\n');
    }
    replace_bytes(path, &bytes)
}

/// Keeps only the lines of `path` for which `keep` holds on the parsed JSON (lines that are
/// not JSON are kept unchanged), replacing the file atomically. A missing file stays
/// missing.
///
/// # Errors
///
/// [`JsonlError`] when reading or replacing fails; the old file is then intact.
pub fn retain_lines(
    path: &Path,
    keep: impl Fn(&serde_json::Value) -> bool,
) -> Result<(), JsonlError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(io("read", path)(error)),
    };
    let mut kept = Vec::with_capacity(bytes.len());
    for line in lines(&bytes) {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let keep_line =
            serde_json::from_slice::<serde_json::Value>(line).map_or(true, |value| keep(&value));
        if keep_line {
            kept.extend_from_slice(line);
            kept.push(b'\n');
        }
    }
    replace_bytes(path, &kept)
}

/// Rewrites the lines of `path` that `change` changes: it gets each line's parsed JSON
/// and returns whether it changed it; a changed line is written anew, every other line
/// (and a line that is not JSON) byte for byte as it was. The file is replaced
/// atomically; a missing file stays missing.
///
/// # Errors
///
/// [`JsonlError`] when reading, encoding or replacing fails; the old file is then intact.
pub fn map_lines(
    path: &Path,
    change: impl Fn(&mut serde_json::Value) -> bool,
) -> Result<(), JsonlError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(io("read", path)(error)),
    };
    let mut out = Vec::with_capacity(bytes.len());
    for line in lines(&bytes) {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let changed = serde_json::from_slice::<serde_json::Value>(line)
            .ok()
            .and_then(|mut value| change(&mut value).then_some(value));
        match changed {
            Some(value) => {
                serde_json::to_writer(&mut out, &value).map_err(|source| JsonlError::Encode {
                    path: path.to_path_buf(),
                    source,
                })?;
            }
            None => out.extend_from_slice(line),
        }
        out.push(b'\n');
    }
    replace_bytes(path, &out)
}

/// The non-blank lines of `path` (none when it is missing), and how many of them are
/// JSON on which `matching` holds. Lines are counted as [`retain_lines`] and
/// [`drop_old_lines`] see them, so the count names the same lines later, once more were
/// appended.
///
/// # Errors
///
/// [`JsonlError::Io`] when the file exists but cannot be read.
pub fn count_lines(
    path: &Path,
    matching: impl Fn(&serde_json::Value) -> bool,
) -> Result<(usize, usize), JsonlError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok((0, 0)),
        Err(error) => return Err(io("read", path)(error)),
    };
    let mut counts = (0, 0);
    for line in lines(&bytes) {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        counts.0 += 1;
        if serde_json::from_slice::<serde_json::Value>(line).is_ok_and(|value| matching(&value)) {
            counts.1 += 1;
        }
    }
    Ok(counts)
}

/// The JSON lines of `path` after its first `old` non-blank lines (counted as
/// [`count_lines`] does); lines that are not JSON are left out.
///
/// # Errors
///
/// [`JsonlError::Io`] when the file exists but cannot be read.
pub fn lines_after(path: &Path, old: usize) -> Result<Vec<serde_json::Value>, JsonlError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(io("read", path)(error)),
    };
    Ok(lines(&bytes)
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
        .skip(old)
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect())
}

/// Drops, among the first `old` non-blank lines of `path`, those for which `drop` holds on
/// the parsed JSON; later lines and lines that are not JSON stay. Replaces the file
/// atomically and returns how many lines went.
///
/// # Errors
///
/// [`JsonlError`] when reading or replacing fails; the old file is then intact.
pub fn drop_old_lines(
    path: &Path,
    old: usize,
    drop: impl Fn(&serde_json::Value) -> bool,
) -> Result<usize, JsonlError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(error) => return Err(io("read", path)(error)),
    };
    let mut kept = Vec::with_capacity(bytes.len());
    let mut index = 0;
    let mut dropped = 0;
    for line in lines(&bytes) {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let goes = index < old
            && serde_json::from_slice::<serde_json::Value>(line).is_ok_and(|value| drop(&value));
        index += 1;
        if goes {
            dropped += 1;
        } else {
            kept.extend_from_slice(line);
            kept.push(b'\n');
        }
    }
    replace_bytes(path, &kept)?;
    Ok(dropped)
}

fn replace_bytes(path: &Path, bytes: &[u8]) -> Result<(), JsonlError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(dir).map_err(io("create the directory of", path))?;
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let temp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut file = File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    };
    write().map_err(|source| {
        let _ = std::fs::remove_file(&temp);
        JsonlError::Io {
            action: "replace",
            path: path.to_path_buf(),
            source,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn old_lines_are_counted_then_dropped_while_new_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        let is_a = |v: &Value| v["t"] == "a";
        assert_eq!(count_lines(&path, is_a).unwrap(), (0, 0));
        std::fs::write(
            &path,
            "{\"t\":\"a\"}\n\n{\"t\":\"b\"}\nnot json\n{\"t\":\"a\",\"n\":1}",
        )
        .unwrap();
        assert_eq!(count_lines(&path, is_a).unwrap(), (4, 2));
        let mut writer = JsonlWriter::open(&path).unwrap();
        writer.append(&json!({"t": "a", "new": true})).unwrap();
        assert_eq!(
            lines_after(&path, 4).unwrap(),
            vec![json!({"t": "a", "new": true})]
        );
        assert_eq!(drop_old_lines(&path, 4, is_a).unwrap(), 2);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"t\":\"b\"}\nnot json\n{\"new\":true,\"t\":\"a\"}\n"
        );
    }

    #[test]
    fn a_leading_byte_order_mark_loses_no_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bom.jsonl");
        let text = b"\xEF\xBB\xBF{\"t\":\"a\",\"n\":1}\r\n{\"t\":\"b\",\"n\":2}\n";
        std::fs::write(&path, text).unwrap();
        let (records, skipped) = read_jsonl::<Value>(&path).unwrap();
        assert_eq!(
            records,
            vec![json!({"t": "a", "n": 1}), json!({"t": "b", "n": 2})]
        );
        assert!(skipped.is_empty(), "{skipped:?}");
        let is_a = |v: &Value| v["t"] == "a";
        assert_eq!(count_lines(&path, is_a).unwrap(), (2, 1));
        assert_eq!(lines_after(&path, 0).unwrap().len(), 2);
        assert_eq!(drop_old_lines(&path, 2, is_a).unwrap(), 1);
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"t\":\"b\",\"n\":2}\n");
        std::fs::write(&path, text).unwrap();
        retain_lines(&path, |v| v["t"] == "a").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"t\":\"a\",\"n\":1}\r\n");
        // Two files concatenated, each with its mark; a mark inside a line spoils it.
        std::fs::write(
            &path,
            b"\xEF\xBB\xBF{\"n\":1}\n\xEF\xBB\xBF{\"n\":2}\n{\"n\":\xEF\xBB\xBF3}\n",
        )
        .unwrap();
        let (records, skipped) = read_jsonl::<Value>(&path).unwrap();
        assert_eq!(records, vec![json!({"n": 1}), json!({"n": 2})]);
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].line, 3);
    }

    #[test]
    fn missing_file_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let (records, skipped) = read_jsonl::<Value>(&dir.path().join("none.jsonl")).unwrap();
        assert!(records.is_empty() && skipped.is_empty());
    }

    #[test]
    fn last_line_without_newline_is_kept_and_appending_continues() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.jsonl");
        std::fs::write(&path, "{\"n\":1}\n{\"n\":2}").unwrap();
        let (records, skipped) = read_jsonl::<Value>(&path).unwrap();
        assert_eq!(records, vec![json!({"n": 1}), json!({"n": 2})]);
        assert!(skipped.is_empty());
        JsonlWriter::open(&path)
            .unwrap()
            .append(&json!({"n": 3}))
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n"
        );
    }

    #[test]
    fn torn_last_line_is_skipped_with_its_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.jsonl");
        std::fs::write(&path, b"{\"n\":1}\n{\"n\":2}\n{\"n\":\xff3").unwrap();
        let (records, skipped) = read_jsonl::<Value>(&path).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].line, 3);
        assert!(skipped[0].to_string().contains("line 3"));
        let mut writer = JsonlWriter::open(&path).unwrap();
        writer
            .append_all(&[json!({"n": 4}), json!({"n": 5})])
            .unwrap();
        let (records, skipped) = read_jsonl::<Value>(&path).unwrap();
        assert_eq!(
            records,
            vec![
                json!({"n": 1}),
                json!({"n": 2}),
                json!({"n": 4}),
                json!({"n": 5})
            ]
        );
        assert_eq!(skipped.len(), 1);
    }

    #[test]
    fn retain_and_replace() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("a.jsonl");
        replace_jsonl(&path, &[json!({"t": "a"}), json!({"t": "b"})]).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"torn")
            .unwrap();
        retain_lines(&path, |v| v["t"] != "a").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"t\":\"b\"}\ntorn\n"
        );
        retain_lines(&dir.path().join("missing.jsonl"), |_| true).unwrap();
        assert!(!dir.path().join("missing.jsonl").exists());
    }
}

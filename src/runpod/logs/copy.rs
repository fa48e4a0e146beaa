//! The copy of a pod's log in `runs/<run-id>/.pod/pod.log` (POD-54, POD-55, POD-58): one
//! JSON object per line (`ts`, `source`, `line`), mode 600, every line redacted first
//! ([`super::redact`]), the last event ID in `.pod/pod.log.cursor` so that a reconnect
//! or a later attach never writes a line twice, and a cut at [`COPY_LIMIT`] with a last
//! line saying so. A path under `.pod/` that is a symbolic link, or a file with more than
//! one link, is refused for reading and for writing.

use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use super::redact::redact;
use crate::llm::Redactor;

/// The copy, under the run directory.
pub const LOG_FILE: &str = ".pod/pod.log";
/// The last event ID written to the copy.
pub const CURSOR_FILE: &str = ".pod/pod.log.cursor";
/// Where the copy stops (POD-58).
pub const COPY_LIMIT: u64 = 20 * 1024 * 1024;

/// One event of the pod's log stream (wire-facts A.4).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct LogEvent {
    /// The SSE event ID, `<ts>/<seq>`.
    #[serde(skip)]
    pub id: Option<String>,
    /// RFC 3339 time.
    #[serde(default)]
    pub ts: String,
    /// `container` or `system`.
    #[serde(default)]
    pub source: String,
    /// The line.
    #[serde(default)]
    pub line: String,
}

/// Why the copy cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// A symbolic link or a file with more than one link (POD-58).
    #[error("`{}` is a link: pod log files must be plain files of their own", .0.display())]
    Link(PathBuf),
    /// The file system refused.
    #[error("cannot access `{}`", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CopyError + '_ {
    move |source| CopyError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Opens `path` without following a link, and refuses a file with more than one link.
fn open(path: &Path, flags: OFlags) -> Result<Option<std::fs::File>, CopyError> {
    let fd: OwnedFd = match rustix::fs::open(
        path,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) if !flags.contains(OFlags::CREATE) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => return Err(CopyError::Link(path.to_path_buf())),
        Err(errno) => return Err(io(path)(errno.into())),
    };
    let stat = rustix::fs::fstat(&fd).map_err(|e| io(path)(e.into()))?;
    if stat.st_nlink > 1 {
        return Err(CopyError::Link(path.to_path_buf()));
    }
    Ok(Some(std::fs::File::from(fd)))
}

/// The text of `.pod/` file `path`, `None` when it does not exist; links refused.
///
/// # Errors
/// [`CopyError::Link`], or the file system's refusal.
pub fn read_checked(path: &Path) -> Result<Option<String>, CopyError> {
    let Some(mut file) = open(path, OFlags::RDONLY)? else {
        return Ok(None);
    };
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(io(path))?;
    Ok(Some(text))
}

/// The most kept of the watchdog and bootstrap logs copied from the pod (POD-56).
pub const SIDE_LIMIT: u64 = 4 * 1024 * 1024;

/// Writes `bytes`, the end of a log copied from the pod (`.pod/watchdog.log`,
/// `.pod/bootstrap.log`, POD-56) whose first `skipped` bytes were not read, as `name` under
/// `run_dir`: its last [`SIDE_LIMIT`] at most (where a failure is told), after a first line
/// saying how much was left out, every line redacted, mode 600, links refused (POD-58).
///
/// # Errors
/// A link, or the file system's refusal.
pub fn write_side_log(
    run_dir: &Path,
    name: &str,
    bytes: &[u8],
    skipped: u64,
    known: &Redactor,
) -> Result<(), CopyError> {
    let pod_dir = run_dir.join(".pod");
    std::fs::create_dir_all(&pod_dir).map_err(io(&pod_dir))?;
    let limit = usize::try_from(SIDE_LIMIT).unwrap_or(usize::MAX);
    let mut start = bytes.len().saturating_sub(limit);
    let mut left_out = skipped + start as u64;
    if left_out > 0 {
        // The first line kept is a whole one, when a line ends soon enough (a progress bar
        // drawn with `\r` may never end one: then the bytes are kept from the cut).
        let near = &bytes[start..bytes.len().min(start + 64 * 1024)];
        if let Some(at) = near.iter().position(|b| *b == b'\n') {
            start += at + 1;
            left_out += at as u64 + 1;
        }
    }
    let text = String::from_utf8_lossy(&bytes[start..]);
    let mut out = String::with_capacity(text.len() + 100);
    if left_out > 0 {
        let _ = writeln!(
            out,
            "overbrainer: the first {left_out} bytes of this log were left out; the rest follows"
        );
    }
    for line in text.lines() {
        out.push_str(&redact(line, known));
        out.push('\n');
    }
    let path = run_dir.join(name);
    let mut file = open(&path, OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC)?
        .ok_or_else(|| io(&path)(std::io::ErrorKind::NotFound.into()))?;
    file.write_all(out.as_bytes()).map_err(io(&path))
}

/// An event ID's order: its time, then its sequence number.
pub(crate) fn order(id: &str) -> (String, u64) {
    let (ts, seq) = id.rsplit_once('/').unwrap_or((id, "0"));
    (ts.to_owned(), seq.parse().unwrap_or(0))
}

/// What the reading of a pod's stream saw of its bootstrap's word that the image lacks
/// what POD-74 requires ([`crate::runpod::bootstrap::image_lacks`], on `container`
/// lines only), shared between the reading and the driver that waits for the pod.
#[derive(Debug, Clone, Default)]
pub struct ImageWatch(std::sync::Arc<std::sync::Mutex<Option<Vec<String>>>>);

impl ImageWatch {
    /// Takes what the image lacks, once the bootstrap's line was read.
    #[must_use]
    pub fn take(&self) -> Option<Vec<String>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// Looks at `event`: the first line of the bootstrap's word is kept (before any
    /// redaction: only known tool names and a venv path are taken from it).
    pub fn see(&self, event: &LogEvent) {
        if event.source != "container" {
            return;
        }
        if let Some(missing) = crate::runpod::bootstrap::image_lacks(&event.line) {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get_or_insert(missing);
        }
    }
}

/// The copy of one run's pod log, open for appending.
#[derive(Debug)]
pub struct PodLogCopy {
    file: std::fs::File,
    cursor_path: PathBuf,
    cursor: Option<String>,
    written: u64,
    cut: bool,
    watch: Option<ImageWatch>,
}

impl PodLogCopy {
    /// The copy of the run in `run_dir`, made when missing, with its cursor.
    ///
    /// # Errors
    /// A link under `.pod/`, or the file system's refusal.
    pub fn open(run_dir: &Path) -> Result<Self, CopyError> {
        let pod_dir = run_dir.join(".pod");
        std::fs::create_dir_all(&pod_dir).map_err(io(&pod_dir))?;
        let path = run_dir.join(LOG_FILE);
        let file = open(&path, OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE)?
            .ok_or_else(|| io(&path)(std::io::ErrorKind::NotFound.into()))?;
        let written = file.metadata().map_err(io(&path))?.len();
        let cursor_path = run_dir.join(CURSOR_FILE);
        let cursor = read_checked(&cursor_path)?
            .map(|text| text.trim().to_owned())
            .filter(|text| !text.is_empty());
        Ok(Self {
            file,
            cursor_path,
            cursor,
            cut: written >= COPY_LIMIT,
            written,
            watch: None,
        })
    }

    /// This copy, showing every new event to `watch` as it is appended (POD-74).
    #[must_use]
    pub fn watching(mut self, watch: Option<&ImageWatch>) -> Self {
        self.watch = watch.cloned();
        self
    }

    /// The last event ID written, from which reading goes on.
    #[must_use]
    pub fn cursor(&self) -> Option<&str> {
        self.cursor.as_deref()
    }

    /// Whether the copy reached [`COPY_LIMIT`].
    #[must_use]
    pub fn is_cut(&self) -> bool {
        self.cut
    }

    /// Appends the events not yet written (an ID at or before the cursor is skipped),
    /// redacted, then saves the cursor.
    ///
    /// # Errors
    /// The file system's refusal, or a cursor file that became a link.
    pub fn append(&mut self, events: &[LogEvent], known: &Redactor) -> Result<(), CopyError> {
        let mut text = String::new();
        let mut last = None;
        for event in events {
            if let (Some(id), Some(cursor)) = (&event.id, &self.cursor) {
                if order(id) <= order(cursor) {
                    continue;
                }
            }
            if let Some(id) = &event.id {
                last = Some(id.clone());
            }
            if let Some(watch) = &self.watch {
                watch.see(event);
            }
            if self.cut {
                continue;
            }
            let line = serde_json::json!({
                "ts": event.ts,
                "source": event.source,
                "line": redact(&event.line, known),
            })
            .to_string();
            if self.written + text.len() as u64 + line.len() as u64 + 1 > COPY_LIMIT {
                let cut = serde_json::json!({
                    "ts": event.ts,
                    "source": "overbrainer",
                    "line": "the copy of the pod's log stops here: it reached 20 MiB",
                });
                let _ = writeln!(text, "{cut}");
                self.cut = true;
                continue;
            }
            text.push_str(&line);
            text.push('\n');
        }
        if !text.is_empty() {
            self.file
                .write_all(text.as_bytes())
                .map_err(io(&self.cursor_path))?;
            self.written += text.len() as u64;
        }
        if let Some(id) = last {
            let mut file = open(
                &self.cursor_path,
                OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC,
            )?
            .ok_or_else(|| io(&self.cursor_path)(std::io::ErrorKind::NotFound.into()))?;
            file.write_all(id.as_bytes())
                .map_err(io(&self.cursor_path))?;
            self.cursor = Some(id);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn event(seq: u64, line: &str) -> LogEvent {
        LogEvent {
            id: Some(format!("2026-12-05T06:00:0{}Z/{seq}", seq % 10)),
            ts: format!("2026-12-05T06:00:0{}Z", seq % 10),
            source: "container".into(),
            line: line.into(),
        }
    }

    fn lines(dir: &Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(dir.join(LOG_FILE))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn a_reopened_copy_goes_on_after_its_cursor_and_never_writes_a_line_twice() {
        let dir = tempfile::tempdir().unwrap();
        let known = Redactor::new();
        let mut copy = PodLogCopy::open(dir.path()).unwrap();
        assert_eq!(copy.cursor(), None);
        copy.append(&[event(1, "one"), event(2, "HF_TOKEN=abc two")], &known)
            .unwrap();
        drop(copy);
        let mut copy = PodLogCopy::open(dir.path()).unwrap();
        assert_eq!(copy.cursor(), Some("2026-12-05T06:00:02Z/2"));
        // A reconnect that sends event 2 again, then 3.
        copy.append(&[event(2, "HF_TOKEN=abc two"), event(3, "three")], &known)
            .unwrap();
        let got: Vec<String> = lines(dir.path())
            .iter()
            .map(|l| l["line"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(got, ["one", "HF_TOKEN=*** two", "three"]);
        let mode = std::fs::metadata(dir.path().join(LOG_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn links_under_pod_are_refused_for_reading_and_writing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".pod")).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "x").unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.path().join(LOG_FILE)).unwrap();
        assert!(matches!(
            PodLogCopy::open(dir.path()),
            Err(CopyError::Link(_))
        ));
        std::fs::remove_file(dir.path().join(LOG_FILE)).unwrap();
        std::fs::hard_link(&elsewhere, dir.path().join(CURSOR_FILE)).unwrap();
        assert!(matches!(
            read_checked(&dir.path().join(CURSOR_FILE)),
            Err(CopyError::Link(_))
        ));
        assert!(matches!(
            PodLogCopy::open(dir.path()),
            Err(CopyError::Link(_))
        ));
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "x");
    }

    #[test]
    fn a_side_log_is_redacted_cut_at_its_limit_and_never_written_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let known = Redactor::new();
        // The end of a log longer than the limit: its last 4 MiB, whole lines, the error at
        // its end kept.
        let mut big = b"start\n".to_vec();
        for _ in 0..(5 * 1024 * 1024 / 10) {
            big.extend(b"xxxxxxxxx\n");
        }
        big.extend(b"line\nHF_TOKEN=abc failed\n");
        write_side_log(dir.path(), ".pod/watchdog.log", &big, 0, &known).unwrap();
        let path = dir.path().join(".pod/watchdog.log");
        let text = std::fs::read_to_string(&path).unwrap();
        let kept = text.lines().skip(1).map(|l| l.len() + 1).sum::<usize>();
        let left_out = big.len() - kept;
        assert!(
            text.starts_with(&format!(
                "overbrainer: the first {left_out} bytes of this log were left out; the rest follows\nxxxxxxxxx\n"
            )),
            "{}",
            &text[..200]
        );
        assert!(text.ends_with("xxxxxxxxx\nline\nHF_TOKEN=*** failed\n"));
        assert!(kept as u64 <= SIDE_LIMIT);
        // Bytes not read from the pod count as left out; a short log is kept whole.
        write_side_log(dir.path(), ".pod/a.log", b"x\ny\n", 10, &known).unwrap();
        let text = std::fs::read_to_string(dir.path().join(".pod/a.log")).unwrap();
        assert!(
            text.starts_with("overbrainer: the first 12 bytes"),
            "{text}"
        );
        assert!(text.ends_with("\ny\n"), "{text}");
        // No line ends near the cut: nothing more is dropped.
        write_side_log(dir.path(), ".pod/c.log", b"\rprogress 99%\rdone", 7, &known).unwrap();
        let text = std::fs::read_to_string(dir.path().join(".pod/c.log")).unwrap();
        assert!(text.starts_with("overbrainer: the first 7 bytes"), "{text}");
        assert!(text.contains("done"), "{text}");
        write_side_log(dir.path(), ".pod/b.log", b"x\ny\n", 0, &known).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join(".pod/b.log")).unwrap(),
            "x\ny\n"
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "x").unwrap();
        let link = dir.path().join(".pod/bootstrap.log");
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        assert!(matches!(
            write_side_log(dir.path(), ".pod/bootstrap.log", b"y", 0, &known),
            Err(CopyError::Link(_))
        ));
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "x");
    }

    #[test]
    fn the_copy_stops_at_its_limit_with_a_line_saying_so() {
        let dir = tempfile::tempdir().unwrap();
        let known = Redactor::new();
        let mut copy = PodLogCopy::open(dir.path()).unwrap();
        let long = "word ".repeat(1000);
        let events: Vec<LogEvent> = (1..=5000).map(|n| event(n, &long)).collect();
        copy.append(&events, &known).unwrap();
        assert!(copy.is_cut());
        let size = std::fs::metadata(dir.path().join(LOG_FILE)).unwrap().len();
        assert!(size <= COPY_LIMIT + 200, "{size}");
        let all = lines(dir.path());
        assert_eq!(all.last().unwrap()["source"], "overbrainer");
        // The cursor still moved to the last event, so nothing is asked for twice.
        assert_eq!(copy.cursor(), Some("2026-12-05T06:00:00Z/5000"));
        copy.append(&[event(5001, "more")], &known).unwrap();
        assert_eq!(lines(dir.path()).len(), all.len());
    }
}

//! The ledger, `.overbrainer/ledger.jsonl` (issue 20): one line per priced event, appended
//! and synced before the event counts ([`crate::dataset::jsonl::JsonlWriter`], as the
//! other JSONL files). A provider request is one [`RequestLine`]; a pod's spend is a
//! [`PodLine`] written as it lives and once more, `final`, when it is deleted: the latest
//! line of a pod is its spend. A cost the ledger cannot price is `null`, never zero. A
//! torn last line (a process killed mid-write) is skipped and reported by the reader.
//!
//! Issue 33: a [`ReserveLine`] holds a spender's worst case for every other spender to
//! read (a command's request in flight, a pod's cost cap), until the line that settles
//! it: the request's line naming it, or the pod run's `final` line. The lines are
//! written under the ledger's lock (`budget::book`), so two spenders share one cap.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::dataset::jsonl::{JsonlError, JsonlWriter, SkippedLine};

/// The ledger's path under a project root.
#[must_use]
pub fn path(root: &Path) -> PathBuf {
    root.join(".overbrainer").join("ledger.jsonl")
}

/// One provider request (all its attempts the provider answered).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestLine {
    /// When its reply came, UTC.
    pub at: jiff::Timestamp,
    /// The stage that sent it: `subtopics`, `questions`, `answers`, `compare`.
    pub stage: String,
    /// The provider's name.
    pub provider: String,
    /// The model.
    pub model: String,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// USD; `null` when the model has no known price.
    pub cost_usd: Option<f64>,
    /// The [`ReserveLine`] this request settles (issue 33), when it reserved one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<String>,
}

/// A spender's worst case, held against the cap for every other spender (issue 33):
/// a command's request in flight (`pid`: open while that process lives, until its
/// request line names it), or a pod's cost cap (`run`: open until that run's pod has
/// its `final` line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReserveLine {
    /// When it was reserved, UTC.
    pub at: jiff::Timestamp,
    /// Its ID, unique in the ledger (`pod:<run>` for a pod).
    pub id: String,
    /// USD held.
    pub usd: f64,
    /// The run whose pod holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The process whose request holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

impl ReserveLine {
    /// The reservation ID of the pod of run `run`.
    #[must_use]
    pub fn pod_id(run: &str) -> String {
        format!("pod:{run}")
    }
}

/// A pod's spend so far: its rate times its lifetime.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PodLine {
    /// When the line was written, UTC.
    pub at: jiff::Timestamp,
    /// The run the pod serves.
    pub run: String,
    /// The pod's ID.
    pub pod: String,
    /// USD per hour.
    pub rate_usd_per_hour: f64,
    /// Seconds the pod has lived (billed) so far.
    pub seconds: f64,
    /// `rate_usd_per_hour * seconds / 3600`.
    pub cost_usd: f64,
    /// Whether the pod is deleted and this is its last line.
    #[serde(default)]
    pub r#final: bool,
}

/// One line of the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum LedgerLine {
    /// A provider request.
    Request(RequestLine),
    /// A pod's spend.
    Pod(PodLine),
    /// A worst case held against the cap (issue 33).
    Reserve(ReserveLine),
}

impl PodLine {
    /// The line of pod `pod` of run `run` at `rate_usd_per_hour` after `seconds` of life,
    /// an hour lasting `hour` seconds (3600; less on the test-only time scale); `last`
    /// once the pod is deleted.
    #[must_use]
    pub fn new(
        (run, pod): (&str, &str),
        rate_usd_per_hour: f64,
        seconds: f64,
        hour: f64,
        last: bool,
    ) -> Self {
        Self {
            at: jiff::Timestamp::now(),
            run: run.to_owned(),
            pod: pod.to_owned(),
            rate_usd_per_hour,
            seconds,
            cost_usd: rate_usd_per_hour * seconds / hour.max(f64::MIN_POSITIVE),
            r#final: last,
        }
    }
}

/// The ledger of one project, opened for appending.
#[derive(Debug)]
pub struct Ledger {
    writer: JsonlWriter,
}

impl Ledger {
    /// Opens (creating) the ledger at `path`.
    ///
    /// # Errors
    ///
    /// [`JsonlError`] when it cannot be created or opened.
    pub fn open(path: &Path) -> Result<Self, JsonlError> {
        Ok(Self {
            writer: JsonlWriter::open(path)?,
        })
    }

    /// Appends `line` and syncs it: once this returns, the line is on disk.
    ///
    /// # Errors
    ///
    /// [`JsonlError`] when it cannot be written or synced.
    pub fn append(&mut self, line: &LedgerLine) -> Result<(), JsonlError> {
        self.writer.append(line)
    }
}

/// The ledger cannot be read, or cannot be trusted.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// The file exists but cannot be read.
    #[error(transparent)]
    Read(#[from] JsonlError),
    /// A line that is not a ledger line cut short by a crash, or holds a figure no spend
    /// can have: its spend would be lost from every sum and from the cap.
    #[error(
        "line {line} of `{}` is damaged ({reason}): only a line cut short by a crash is skipped, so its spend would be lost from the budget; repair or remove that line",
        path.display()
    )]
    Damaged {
        /// The ledger.
        path: std::path::PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
}

/// Every line of the ledger at `path` (a missing ledger is empty) and the lines skipped,
/// for the caller to warn about: only a line cut short is skipped, the one a process
/// killed mid-write leaves (appends are synced a line at a time, and the next writer
/// starts a line of its own after it).
///
/// # Errors
///
/// [`LedgerError::Read`] when the file exists but cannot be read;
/// [`LedgerError::Damaged`] when a line is not a ledger line for another reason than
/// being cut short (not JSON, or another shape), or holds a negative, non-finite or absurd cost,
/// rate or duration.
pub fn read(path: &Path) -> Result<(Vec<LedgerLine>, Vec<SkippedLine>), LedgerError> {
    let (lines, skipped, _) = read_from(path, Position::default())?;
    Ok((lines, skipped))
}

/// Where a reader of the ledger stopped: the byte offset and the number of the line that
/// starts there (the rest of a line read without its newline, when it had none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// Bytes read.
    pub offset: u64,
    /// The 1-based number of the line at `offset`.
    pub line: usize,
}

impl Default for Position {
    fn default() -> Self {
        Self { offset: 0, line: 1 }
    }
}

/// [`read`] of what was appended since `from`, and where it ended: the ledger only grows,
/// so a spender re-reads it before each request at the cost of the new lines only.
///
/// # Errors
///
/// As [`read`], the line numbers those of the whole file.
pub fn read_from(
    path: &Path,
    from: Position,
) -> Result<(Vec<LedgerLine>, Vec<SkippedLine>, Position), LedgerError> {
    let io_error = |source| -> LedgerError {
        JsonlError::Io {
            action: "read",
            path: path.to_path_buf(),
            source,
        }
        .into()
    };
    let bytes = match std::fs::File::open(path) {
        Ok(mut file) => {
            use std::io::{Read as _, Seek as _};
            file.seek(std::io::SeekFrom::Start(from.offset))
                .map_err(io_error)?;
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).map_err(io_error)?;
            bytes
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok((Vec::new(), Vec::new(), from));
        }
        Err(source) => return Err(io_error(source)),
    };
    let newlines = bytes.split(|&b| b == b'\n').count() - 1;
    let to = Position {
        offset: from.offset + bytes.len() as u64,
        line: from.line + newlines,
    };
    let numbered: Vec<(usize, &[u8])> = bytes
        .split(|&b| b == b'\n')
        .map(crate::dataset::jsonl::strip_bom)
        .enumerate()
        .filter(|(_, line)| !line.iter().all(u8::is_ascii_whitespace))
        .map(|(index, line)| (index + from.line, line))
        .collect();
    let damaged = |line: usize, reason: String| LedgerError::Damaged {
        path: path.to_path_buf(),
        line,
        reason,
    };
    let mut lines = Vec::with_capacity(numbered.len());
    let mut skipped = Vec::new();
    for (number, text) in numbered {
        match serde_json::from_slice::<LedgerLine>(text) {
            Ok(line) => {
                if let Some(reason) = implausible(&line) {
                    return Err(damaged(number, reason));
                }
                lines.push(line);
            }
            // A line cut short: the write of a process killed mid-line (the next
            // writer starts a line of its own after it).
            Err(error) if error.classify() == serde_json::error::Category::Eof => {
                skipped.push(SkippedLine {
                    path: path.to_path_buf(),
                    line: number,
                    reason: error.to_string(),
                });
            }
            Err(error) => return Err(damaged(number, error.to_string())),
        }
    }
    Ok((lines, skipped, to))
}

/// Why `line` cannot be a spend: a negative, non-finite or absurd (over a billion USD)
/// figure.
fn implausible(line: &LedgerLine) -> Option<String> {
    // No one line spends this much: past it the sums would overflow to infinity.
    const MAX_USD: f64 = 1e9;
    let bad = |value: f64| !(0.0..=MAX_USD).contains(&value);
    match line {
        LedgerLine::Request(request) => request
            .cost_usd
            .filter(|cost| bad(*cost))
            .map(|cost| format!("a request costing {cost} USD")),
        LedgerLine::Pod(pod) => [
            ("cost_usd", pod.cost_usd),
            ("rate_usd_per_hour", pod.rate_usd_per_hour),
            ("seconds", pod.seconds),
        ]
        .into_iter()
        .find(|(_, value)| bad(*value))
        .map(|(key, value)| format!("a pod line with `{key}` {value}")),
        LedgerLine::Reserve(reserve) => {
            bad(reserve.usd).then(|| format!("a reservation of {} USD", reserve.usd))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(cost_usd: Option<f64>) -> LedgerLine {
        LedgerLine::Request(RequestLine {
            at: "2026-01-01T00:00:00Z".parse().unwrap(),
            stage: "answers".into(),
            provider: "p".into(),
            model: "m".into(),
            input_tokens: 10,
            output_tokens: 20,
            cost_usd,
            reservation: None,
        })
    }

    #[test]
    fn lines_round_trip_with_an_unknown_cost_written_as_null() {
        let dir = tempfile::tempdir().unwrap();
        let path = path(dir.path());
        let mut ledger = Ledger::open(&path).unwrap();
        let pod = LedgerLine::Pod(PodLine::new(("r1", "pod-1"), 1.8, 60.0, 3600.0, true));
        for line in [request(Some(0.5)), request(None), pod.clone()] {
            ledger.append(&line).unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.lines().nth(1).unwrap().contains("\"cost_usd\":null"));
        assert!(text.lines().nth(2).unwrap().contains("\"kind\":\"pod\""));
        let (lines, skipped) = read(&path).unwrap();
        assert!(skipped.is_empty());
        assert_eq!(lines, vec![request(Some(0.5)), request(None), pod]);
        let LedgerLine::Pod(pod) = &lines[2] else {
            panic!()
        };
        assert!((pod.cost_usd - 0.03).abs() < 1e-12);
    }

    #[test]
    fn reading_on_from_a_position_reads_only_new_lines_and_names_a_damaged_one_by_its_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = path(dir.path());
        let mut ledger = Ledger::open(&path).unwrap();
        ledger.append(&request(Some(0.25))).unwrap();
        let (first, _, at) = read_from(&path, Position::default()).unwrap();
        assert_eq!((first.len(), at.line), (1, 2));
        ledger.append(&request(Some(0.5))).unwrap();
        let (next, _, at) = read_from(&path, at).unwrap();
        assert_eq!(next, vec![request(Some(0.5))]);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"kind\":\"tip\"}\n");
        std::fs::write(&path, text).unwrap();
        let error = read_from(&path, at).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!("line 3 of `{}` is damaged", path.display())),
            "{error}"
        );
    }

    #[test]
    fn regression_a_torn_last_line_is_skipped_and_the_next_append_starts_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = path(dir.path());
        Ledger::open(&path)
            .unwrap()
            .append(&request(Some(0.25)))
            .unwrap();
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"kind\":\"request\",\"at\":\"2026-01-01T0");
        std::fs::write(&path, text).unwrap();
        Ledger::open(&path)
            .unwrap()
            .append(&request(Some(0.5)))
            .unwrap();
        let (lines, skipped) = read(&path).unwrap();
        assert_eq!(lines, vec![request(Some(0.25)), request(Some(0.5))]);
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].line, 2);
    }

    #[test]
    fn a_damaged_line_or_an_impossible_figure_is_refused_naming_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = path(dir.path());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let good = serde_json::to_string(&request(Some(0.25))).unwrap();
        let negative = serde_json::to_string(&request(Some(-100.0))).unwrap();
        let huge = serde_json::to_string(&request(Some(1e308))).unwrap();
        let pod = LedgerLine::Pod(PodLine::new(("r1", "pod-1"), 1.8, -60.0, 3600.0, true));
        let pod = serde_json::to_string(&pod).unwrap();
        for (text, line, reason) in [
            (format!("{good}\nthis is not json\n{good}\n"), 2, "expected"),
            (format!("{good}\n\n{{\"kind\":\"tip\"}}\n"), 3, "tip"),
            (
                format!("{good}\n{negative}\n"),
                2,
                "a request costing -100 USD",
            ),
            (format!("{pod}\n"), 1, "a pod line with `cost_usd` -"),
            (format!("{huge}\n"), 1, "a request costing 100000000000"),
        ] {
            std::fs::write(&path, &text).unwrap();
            let error = read(&path).unwrap_err().to_string();
            assert!(
                error.starts_with(&format!("line {line} of `{}` is damaged (", path.display())),
                "{text}: {error}"
            );
            assert!(error.contains(reason), "{text}: {error}");
            // Nothing on disk changes.
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        }
        // A byte-order mark an editor left is no damage.
        std::fs::write(&path, format!("\u{feff}{good}\n")).unwrap();
        assert_eq!(read(&path).unwrap().0, vec![request(Some(0.25))]);
        // A line cut short is skipped wherever it is.
        let torn = &good[..good.len() / 2];
        std::fs::write(&path, format!("{torn}\n{good}\n{torn}")).unwrap();
        let (lines, skipped) = read(&path).unwrap();
        assert_eq!(lines, vec![request(Some(0.25))]);
        assert_eq!(
            skipped.iter().map(|s| s.line).collect::<Vec<_>>(),
            vec![1, 3]
        );
    }
}

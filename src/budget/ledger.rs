//! The ledger, `.overbrainer/ledger.jsonl` (issue 20): one line per priced event, appended
//! and synced before the event counts ([`crate::dataset::jsonl::JsonlWriter`], as the
//! other JSONL files). A provider request is one [`RequestLine`]; a pod's spend is a
//! [`PodLine`] written as it lives and once more, `final`, when it is deleted: the latest
//! line of a pod is its spend. A cost the ledger cannot price is `null`, never zero. A
//! torn last line (a process killed mid-write) is skipped and reported by the reader.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::dataset::jsonl::{JsonlError, JsonlWriter, SkippedLine, read_jsonl};

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

/// Every readable line of the ledger at `path` (a missing ledger is empty) and the lines
/// skipped (a torn last line), for the caller to warn about.
///
/// # Errors
///
/// [`JsonlError`] when the file exists but cannot be read.
pub fn read(path: &Path) -> Result<(Vec<LedgerLine>, Vec<SkippedLine>), JsonlError> {
    read_jsonl(path)
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
}

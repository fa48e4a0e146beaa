//! The stage history (HIST-1..HIST-5): `.overbrainer/history.jsonl` gets one line per
//! stage execution, appended when the stage ends and never modified; [`summary`] sums it
//! per stage for `overbrainer history`, and [`Detail::cost`] says what is known of a line's
//! cost. Front ends only render these.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::dataset::jsonl::{JsonlError, JsonlWriter, SkippedLine, read_jsonl};

/// How a stage execution ended (HIST-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// No failed item.
    Ok,
    /// Failed items, or stopped by a provider or fatal error.
    Failed,
    /// Ctrl-C, or cancelled from the TUI.
    Interrupted,
}

impl Status {
    /// The status as written.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Failed => "failed",
            Self::Interrupted => "interrupted",
        }
    }
}

/// What a line holds besides the common fields (HIST-3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Detail {
    /// A `split` line.
    Split {
        /// Train records written.
        train: u64,
        /// Eval records written.
        eval: u64,
        /// Orphaned answers.
        orphaned: u64,
    },
    /// A stage that called a provider.
    Provider {
        /// The stage's main role's provider.
        provider: String,
        /// Its model.
        model: String,
        /// Input tokens over every request.
        input_tokens: u64,
        /// Output tokens over every request.
        output_tokens: u64,
        /// Cost in USD; null when unknown.
        cost_usd: Option<f64>,
        /// Whether part of the cost is unknown (the known part is in `cost_usd`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        cost_partial: bool,
    },
}

/// What a history line knows of its stage's cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LineCost {
    /// Every request had a price: the cost in USD.
    Known(f64),
    /// Some requests had no price: the cost in USD of those that had one.
    Partial(f64),
    /// No request had a price.
    Unknown,
}

impl Detail {
    /// The cost of a provider stage's line; `None` for `split`, which calls no provider.
    #[must_use]
    pub fn cost(&self) -> Option<LineCost> {
        let Self::Provider {
            cost_usd,
            cost_partial,
            ..
        } = self
        else {
            return None;
        };
        Some(match cost_usd {
            None => LineCost::Unknown,
            Some(usd) if *cost_partial => LineCost::Partial(*usd),
            Some(usd) => LineCost::Known(*usd),
        })
    }
}

/// One line of `history.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryLine {
    /// `subtopics`, `questions`, `answers` or `split`.
    pub stage: String,
    /// How it ended.
    pub status: Status,
    /// Start, UTC.
    pub started_at: jiff::Timestamp,
    /// End, UTC.
    pub ended_at: jiff::Timestamp,
    /// Items completed (for `answers`, excluded ones included).
    pub done: u64,
    /// Items already on disk.
    pub skipped: u64,
    /// Items that failed.
    pub failed: u64,
    /// Answers excluded.
    pub excluded: u64,
    /// Stage-specific fields.
    #[serde(flatten)]
    pub detail: Detail,
}

/// Appends `line` to the history file at `path`.
///
/// # Errors
///
/// [`JsonlError`] when the file cannot be written.
pub fn append(path: &Path, line: &HistoryLine) -> Result<(), JsonlError> {
    JsonlWriter::open(path)?.append(line)
}

/// Reads every line of the history file at `path` (a missing file is empty).
///
/// # Errors
///
/// [`JsonlError`] when the file cannot be read.
pub fn read(path: &Path) -> Result<(Vec<HistoryLine>, Vec<SkippedLine>), JsonlError> {
    read_jsonl(path)
}

/// Totals of one stage, or of all (HIST-5).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    /// Executions.
    pub executions: u64,
    /// Items done.
    pub items: u64,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Known cost in USD.
    pub cost_usd: f64,
    /// Executions whose cost was unknown or partial.
    pub unknown_costs: u64,
}

impl Totals {
    fn add(&mut self, line: &HistoryLine) {
        self.executions += 1;
        self.items += line.done;
        if let Detail::Provider {
            input_tokens,
            output_tokens,
            cost_usd,
            cost_partial,
            ..
        } = &line.detail
        {
            self.input_tokens += input_tokens;
            self.output_tokens += output_tokens;
            self.cost_usd += cost_usd.unwrap_or(0.0);
            if cost_usd.is_none() || *cost_partial {
                self.unknown_costs += 1;
            }
        }
    }
}

/// Totals per stage (by name) and overall.
#[must_use]
pub fn totals(lines: &[HistoryLine]) -> (BTreeMap<String, Totals>, Totals) {
    let mut by_stage: BTreeMap<String, Totals> = BTreeMap::new();
    let mut all = Totals::default();
    for line in lines {
        by_stage.entry(line.stage.clone()).or_default().add(line);
        all.add(line);
    }
    (by_stage, all)
}

/// The stages in the order `overbrainer history` lists their totals (the pipeline's).
pub const STAGES: [&str; 4] = ["subtopics", "questions", "answers", "split"];

/// What `overbrainer history` shows (HIST-5).
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The totals of each of [`STAGES`] that has a line, in that order.
    pub stages: Vec<(&'static str, Totals)>,
    /// The totals of every line, those of stages not in [`STAGES`] included.
    pub total: Totals,
}

/// The totals of `lines`, per stage in [`STAGES`] order and overall.
#[must_use]
pub fn summary(lines: &[HistoryLine]) -> Summary {
    let (mut by_stage, total) = totals(lines);
    let stages = STAGES
        .into_iter()
        .filter_map(|stage| Some((stage, by_stage.remove(stage)?)))
        .collect();
    Summary { stages, total }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(stage: &str, detail: Detail) -> HistoryLine {
        HistoryLine {
            stage: stage.into(),
            status: Status::Ok,
            started_at: "2026-01-01T00:00:00Z".parse().unwrap(),
            ended_at: "2026-01-01T00:01:00Z".parse().unwrap(),
            done: 3,
            skipped: 0,
            failed: 0,
            excluded: 0,
            detail,
        }
    }

    #[test]
    fn round_trip_and_totals() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".overbrainer/history.jsonl");
        let answers = line(
            "answers",
            Detail::Provider {
                provider: "p".into(),
                model: "m".into(),
                input_tokens: 10,
                output_tokens: 20,
                cost_usd: None,
                cost_partial: false,
            },
        );
        let split = line(
            "split",
            Detail::Split {
                train: 9,
                eval: 1,
                orphaned: 0,
            },
        );
        append(&path, &answers).unwrap();
        append(&path, &split).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"cost_usd\":null"));
        assert!(text.lines().nth(1).unwrap().contains("\"train\":9"));
        assert!(!text.lines().nth(1).unwrap().contains("cost_usd"));
        let (lines, skipped) = read(&path).unwrap();
        assert!(skipped.is_empty());
        assert_eq!(lines, vec![answers, split]);
        let (by_stage, all) = totals(&lines);
        assert_eq!(by_stage["answers"].unknown_costs, 1);
        assert_eq!(all.executions, 2);
        assert_eq!(all.input_tokens, 10);
    }

    #[test]
    fn the_summary_lists_the_stages_in_pipeline_order_and_counts_every_line_in_the_total() {
        let provider = |cost_usd, cost_partial| Detail::Provider {
            provider: "p".into(),
            model: "m".into(),
            input_tokens: 1,
            output_tokens: 1,
            cost_usd,
            cost_partial,
        };
        let split = Detail::Split {
            train: 1,
            eval: 0,
            orphaned: 0,
        };
        let lines = [
            line("split", split.clone()),
            line("answers", provider(Some(0.5), true)),
            line("hand-edited", provider(Some(1.0), false)),
            line("subtopics", provider(None, false)),
            line("answers", provider(Some(0.25), false)),
        ];
        let summary = summary(&lines);
        let names: Vec<&str> = summary.stages.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, ["subtopics", "answers", "split"]);
        assert_eq!(summary.stages[1].1.executions, 2);
        assert_eq!(summary.total.executions, 5);
        assert!((summary.total.cost_usd - 1.75).abs() < 1e-9);
        assert_eq!(summary.total.unknown_costs, 2);
        assert_eq!(lines[1].detail.cost(), Some(LineCost::Partial(0.5)));
        assert_eq!(lines[3].detail.cost(), Some(LineCost::Unknown));
        assert_eq!(lines[4].detail.cost(), Some(LineCost::Known(0.25)));
        assert_eq!(split.cost(), None);
    }
}

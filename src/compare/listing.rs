//! The compares of a project as the TUI's Compare view lists them (TUI-58, issue 35):
//! each run's `compares/*/compare.json`, newest first, reduced to what the view shows:
//! the headline (what the judge can tell), the per-topic rows and the losses.

use std::path::Path;

use serde::Deserialize as _;

use super::report::{COMPARE_JSON, rate_text};
use super::stats::Rate;
use super::{COMPARES_DIR, gate};

/// One topic's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicLine {
    /// Topic.
    pub topic: String,
    /// Wins, ties, losses.
    pub counts: (u64, u64, u64),
    /// Its win-or-tie rate, as the report writes it.
    pub win_or_tie: String,
}

/// A question the child lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loss {
    /// Question ID.
    pub id: String,
    /// Topic.
    pub topic: String,
    /// The judge's reason, or that the child did not answer.
    pub reason: String,
}

/// One compare.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// Run ID.
    pub run_id: String,
    /// Compare ID.
    pub compare_id: String,
    /// `<provider>/<model>`.
    pub judge: String,
    /// Whether the judge passed its calibration.
    pub calibrated: bool,
    /// The calibration's line, when it ran.
    pub calibration: Option<String>,
    /// Whether the judge's consistency reached `min_judge_consistency`.
    pub conclusive: bool,
    /// `min_judge_consistency`.
    pub min_consistency: f64,
    /// The judge's consistency.
    pub consistency: String,
    /// The child's wins among the consistent verdicts.
    pub consistent_wins: String,
    /// The win-or-tie rate.
    pub win_or_tie: String,
    /// The win-or-tie rate alone, for the list.
    pub win_or_tie_rate: Option<f64>,
    /// Flipped verdicts that preferred the first answer, and the second.
    pub flips: (u64, u64),
    /// Latency p50, seconds.
    pub latency_p50: Option<f64>,
    /// Child cost per 1,000 requests, USD.
    pub child_cost_per_1000: Option<f64>,
    /// Per topic.
    pub topics: Vec<TopicLine>,
    /// The losses, in the report's order.
    pub losses: Vec<Loss>,
}

/// A [`Rate`] of `compare.json`, as the report writes it.
fn rate(value: &serde_json::Value) -> String {
    Rate::deserialize(value).map_or_else(|_| "n/a".to_owned(), |r| rate_text(&r))
}

/// The compare whose `compare.json` is `report`.
#[must_use]
pub fn read(run_id: &str, compare_id: &str, report: &serde_json::Value) -> Listed {
    let header = &report["header"];
    let summary = &report["summary"];
    let judge = &summary["judge"];
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    let count = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let calibration = header["calibration"]
        .as_object()
        .and_then(|_| {
            serde_json::from_value::<super::calibration::Calibration>(header["calibration"].clone())
                .ok()
        })
        .map(|c| c.text());
    Listed {
        run_id: run_id.to_owned(),
        compare_id: compare_id.to_owned(),
        judge: text(&header["judge"]),
        calibrated: header["calibrated"].as_bool().unwrap_or(false),
        calibration,
        conclusive: judge["conclusive"].as_bool().unwrap_or(false),
        min_consistency: judge["min_consistency"].as_f64().unwrap_or(0.0),
        consistency: rate(&judge["consistency"]),
        consistent_wins: rate(&judge["consistent_wins"]),
        win_or_tie: rate(&summary["win_or_tie"]),
        win_or_tie_rate: summary["win_or_tie"]["rate"].as_f64(),
        flips: (count(&judge["flips_first"]), count(&judge["flips_second"])),
        latency_p50: summary["latency_p50"].as_f64(),
        child_cost_per_1000: summary["child_cost_per_1000"].as_f64(),
        topics: summary["topics"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|row| TopicLine {
                topic: text(&row["topic"]),
                counts: (
                    count(&row["counts"]["wins"]),
                    count(&row["counts"]["ties"]),
                    count(&row["counts"]["losses"]),
                ),
                win_or_tie: rate(&row["win_or_tie"]),
            })
            .collect(),
        losses: report["questions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|q| q["result"] == "loss")
            .map(|q| Loss {
                id: text(&q["id"]),
                topic: text(&q["topic"]),
                reason: if q["child_error"] == true {
                    "the child did not answer".to_owned()
                } else {
                    text(&q["reason"])
                },
            })
            .collect(),
    }
}

/// Every compare with a `compare.json` under `runs_dir`, newest first (by compare ID, as
/// the gate orders them), and a warning for each report that cannot be read.
#[must_use]
pub fn list(runs_dir: &Path) -> (Vec<Listed>, Vec<String>) {
    let (mut found, mut warnings) = (Vec::new(), Vec::new());
    for run in std::fs::read_dir(runs_dir).into_iter().flatten().flatten() {
        let run_id = run.file_name().to_string_lossy().into_owned();
        for compare in std::fs::read_dir(run.path().join(COMPARES_DIR))
            .into_iter()
            .flatten()
            .flatten()
        {
            let path = compare.path().join(COMPARE_JSON);
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let compare_id = compare.file_name().to_string_lossy().into_owned();
            match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(report) => found.push(read(&run_id, &compare_id, &report)),
                Err(error) => warnings.push(format!("`{}`: {error}", path.display())),
            }
        }
    }
    found.sort_by_key(|c| std::cmp::Reverse(gate::sort_key(&c.compare_id)));
    (found, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::order::Outcome;
    use crate::compare::report::{Entry, Header, json};
    use crate::compare::stats::{Prices, judged_alike, summarize};

    #[test]
    fn a_listed_compare_reads_its_headline_topics_and_losses_from_compare_json() {
        let items = judged_alike("rust", &[Outcome::Win, Outcome::Loss]);
        let summary = summarize(&items, Prices::default(), 0.6);
        let header = Header {
            compare_id: "compare_1".into(),
            run_id: "run_1".into(),
            base_model: "tiny".into(),
            gguf_type: "Q8_0".into(),
            llama_cpp: "b11434".into(),
            gguf_sha256: "00".into(),
            hardware: "CPU".into(),
            cpu: true,
            judge: "p/judge".into(),
            calibrated: false,
            calibration: None,
            judge_is_parent: false,
            judge_key: "k".into(),
            questions: 2,
            date: "2026-01-01T00:00:00Z".into(),
            charts: (false, false),
        };
        let loss = Entry {
            id: "q2".into(),
            topic: "rust".into(),
            subtopic: "s".into(),
            question: "?".into(),
            child_answer: String::new(),
            parent_answer: "p".into(),
            child: None,
            order: None,
            verdict: None,
            result: Some(Outcome::Loss),
            reason: None,
            swapped_verdict: None,
            flipped: false,
            child_error: true,
        };
        let report: serde_json::Value =
            serde_json::from_str(&json(&header, &summary, &[loss])).unwrap();
        let listed = read("run_1", "compare_1", &report);
        assert!(listed.conclusive && !listed.calibrated);
        assert_eq!(listed.consistency, "100.0% [34.2%, 100.0%] (2 of 2)");
        assert_eq!(listed.consistent_wins, "50.0% [9.5%, 90.5%] (1 of 2)");
        assert_eq!(listed.win_or_tie_rate, Some(0.5));
        assert_eq!(listed.topics.len(), 1);
        assert_eq!(listed.topics[0].counts, (1, 0, 1));
        assert_eq!(
            listed.losses,
            [Loss {
                id: "q2".into(),
                topic: "rust".into(),
                reason: "the child did not answer".into()
            }]
        );
    }
}

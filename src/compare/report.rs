//! `compare.md` and `compare.json` (CMP-21, CMP-23; issue 15's intervals, flip rate,
//! per-topic table and charts). Pure: both are rendered from the setup, the child's
//! answers, the verdicts and the summary; neither holds anything but those, so no secret
//! can reach them.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::order::{Order, Outcome};
use super::setup::{ChildAnswer, Setup};
use super::stats::{Rate, Summary};
use super::verdict::VerdictLine;

/// `compare.md`.
pub const COMPARE_MD: &str = "compare.md";
/// `compare.json`.
pub const COMPARE_JSON: &str = "compare.json";
/// The win/tie/loss chart beside `compare.md`.
pub const TOPICS_SVG: &str = "topics.svg";
/// The latency chart beside `compare.md`.
pub const LATENCY_SVG: &str = "latency.svg";
/// Entries shown in the Losses and Wins sections.
const SHOWN: usize = 5;
/// Characters of a question in an entry's heading.
const HEADING_CHARS: usize = 80;

/// The report's header (CMP-21 item 1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Header {
    /// Compare ID.
    pub compare_id: String,
    /// Run ID.
    pub run_id: String,
    /// Base model.
    pub base_model: String,
    /// GGUF type.
    pub gguf_type: String,
    /// llama.cpp release.
    pub llama_cpp: String,
    /// The GGUF's SHA-256.
    pub gguf_sha256: String,
    /// CMP-22's text.
    pub hardware: String,
    /// The child ran on a CPU build.
    pub cpu: bool,
    /// `<provider>/<model>`.
    pub judge: String,
    /// Whether the judge passed its calibration (issue 35).
    pub calibrated: bool,
    /// Its calibration; `None` when it has none (a compare judged before issue 35).
    pub calibration: Option<super::calibration::Calibration>,
    /// The judge is the parent role.
    pub judge_is_parent: bool,
    /// The verdicts file's key.
    pub judge_key: String,
    /// Questions.
    pub questions: usize,
    /// RFC 3339, UTC.
    pub date: String,
    /// Whether each chart was drawn.
    pub charts: (bool, bool),
}

/// One question in `compare.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// Question ID.
    pub id: String,
    /// Topic.
    pub topic: String,
    /// Subtopic.
    pub subtopic: String,
    /// The question.
    pub question: String,
    /// The child's answer.
    pub child_answer: String,
    /// The parent's answer.
    pub parent_answer: String,
    /// The child's timings and tokens.
    pub child: Option<ChildAnswer>,
    /// The drawn order.
    pub order: Option<Order>,
    /// The raw verdict of the drawn order.
    pub verdict: Option<String>,
    /// The result for the child.
    pub result: Option<Outcome>,
    /// The judge's reason.
    pub reason: Option<String>,
    /// The swapped order's raw verdict, when judged.
    pub swapped_verdict: Option<String>,
    /// The verdict flipped with the order.
    pub flipped: bool,
    /// The child did not answer.
    pub child_error: bool,
}

/// The entries of every question, in `setup.json`'s order.
#[must_use]
#[allow(clippy::implicit_hasher, reason = "the flow's maps")]
pub fn entries(
    setup: &Setup,
    answers: &HashMap<String, ChildAnswer>,
    verdicts: &HashMap<String, VerdictLine>,
) -> Vec<Entry> {
    let raw = |v: Option<super::order::Verdict>| {
        v.map(|v| {
            serde_json::to_value(v)
                .ok()
                .and_then(|j| j.as_str().map(str::to_owned))
                .unwrap_or_default()
        })
    };
    setup
        .questions
        .iter()
        .map(|q| {
            let answer = answers.get(&q.id);
            let line = verdicts.get(&q.id);
            let first = line.and_then(|l| l.first.as_ref());
            Entry {
                id: q.id.clone(),
                topic: q.topic.clone(),
                subtopic: q.subtopic.clone(),
                question: q.user.clone(),
                child_answer: answer.map(|a| a.text.clone()).unwrap_or_default(),
                parent_answer: q.parent_answer.clone(),
                child: answer.cloned(),
                order: first.map(|j| j.order),
                verdict: first.and_then(|j| raw(j.verdict)),
                result: line.map(|l| l.result),
                reason: first.map(|j| j.reason.clone()).or_else(|| {
                    line.filter(|l| l.child_error).map(|_| {
                        format!(
                            "the child did not answer: {}",
                            answer
                                .and_then(|a| a.error.clone())
                                .unwrap_or_else(|| "no answer recorded".into())
                        )
                    })
                }),
                swapped_verdict: line
                    .and_then(|l| l.swapped.as_ref())
                    .and_then(|j| raw(j.verdict)),
                flipped: line.is_some_and(|l| l.flipped),
                child_error: line.is_some_and(|l| l.child_error),
            }
        })
        .collect()
}

fn percent(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_owned(), |v| format!("{:.1}%", v * 100.0))
}

/// The report's first lines (issue 35): why the compare is inconclusive when it is,
/// then what the judge could tell, each rate with its 95% interval.
#[must_use]
pub fn headline(header: &Header, summary: &Summary) -> String {
    let judge = &summary.judge;
    let mut text = String::new();
    if !judge.conclusive {
        let _ = writeln!(
            text,
            "**Inconclusive.** The judge gave the same verdict in both A/B orders on {} of the questions judged both ways, below `[compare] min_judge_consistency` = {}: its verdicts cannot tell the child from the parent. Of the verdicts that flipped with the order, {} preferred whichever answer came first and {} whichever came second.\n",
            rate_text(&judge.consistency),
            judge.min_consistency,
            judge.flips_first,
            judge.flips_second
        );
    }
    if !header.calibrated {
        let _ = writeln!(
            text,
            "**Uncalibrated.** The judge {} was {}: nothing shows it prefers a clearly better answer, so the gate before `push` refuses this compare.\n",
            header.judge,
            header.calibration.as_ref().map_or_else(
                || "not checked on control pairs".to_owned(),
                |c| if c.skipped {
                    "not checked on control pairs (`--skip-calibration`)".to_owned()
                } else {
                    format!("checked on control pairs and {}", c.text())
                },
            )
        );
    }
    if let Some(calibration) = header.calibration.as_ref().filter(|c| !c.skipped) {
        let _ = writeln!(text, "- Judge calibration: {}", calibration.text());
    }
    for (key, rate) in [
        ("Judge consistency (both orders agree)", &judge.consistency),
        (
            "Child's win rate among the consistent verdicts",
            &judge.consistent_wins,
        ),
        (
            "Win-or-tie rate (flipped verdicts count as ties)",
            &summary.win_or_tie,
        ),
    ] {
        let _ = writeln!(text, "- {key}: {}", rate_text(rate));
    }
    text.push('\n');
    text
}

/// `62.5% [30.6%, 86.3%] (5 of 8)`, or `n/a (0 of 0)`.
#[must_use]
pub fn rate_text(rate: &Rate) -> String {
    match rate.rate {
        None => "n/a (0 of 0)".to_owned(),
        Some(_) => format!(
            "{} [{}, {}] ({} of {})",
            percent(rate.rate),
            percent(rate.low),
            percent(rate.high),
            rate.count,
            rate.of
        ),
    }
}

fn secs(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.2} s"))
}

fn usd(value: Option<f64>, missing: &str) -> String {
    value.map_or_else(|| missing.to_owned(), |v| format!("${v:.4}"))
}

fn quote_block(text: &str) -> String {
    if text.trim().is_empty() {
        return "> (empty)\n".to_owned();
    }
    text.lines().fold(String::new(), |mut out, l| {
        let _ = writeln!(out, "> {l}");
        out
    })
}

fn prefix(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= HEADING_CHARS {
        one_line
    } else {
        format!(
            "{}…",
            one_line.chars().take(HEADING_CHARS).collect::<String>()
        )
    }
}

fn section(md: &mut String, title: &str, picked: &[&Entry], total: usize) {
    let _ = writeln!(md, "## {title} (first {} of {total})\n", picked.len());
    if picked.is_empty() {
        md.push_str("None.\n\n");
    }
    for entry in picked {
        let _ = writeln!(md, "### {}: {}\n", entry.id, prefix(&entry.question));
        md.push_str("Child:\n\n");
        md.push_str(&quote_block(&entry.child_answer));
        md.push_str("\nParent:\n\n");
        md.push_str(&quote_block(&entry.parent_answer));
        let _ = writeln!(
            md,
            "\nJudge: {}\n",
            entry.reason.as_deref().unwrap_or("(no reason)")
        );
    }
}

/// `compare.md`.
#[must_use]
#[allow(
    clippy::too_many_lines,
    reason = "the report's sections in their order"
)]
pub fn markdown(header: &Header, summary: &Summary, entries: &[Entry]) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Compare of run {}\n", header.run_id);
    md.push_str(&headline(header, summary));
    md.push_str("| | |\n|---|---|\n");
    let short = header.gguf_sha256.get(..12).unwrap_or(&header.gguf_sha256);
    for (key, value) in [
        ("Compare ID", header.compare_id.clone()),
        ("Base model", header.base_model.clone()),
        (
            "GGUF",
            format!(
                "{}, llama.cpp {}, sha256 {short}",
                header.gguf_type, header.llama_cpp
            ),
        ),
        ("Hardware", header.hardware.clone()),
        ("Judge", header.judge.clone()),
        ("Questions", header.questions.to_string()),
        ("Date", header.date.clone()),
    ] {
        let _ = writeln!(md, "| {key} | {value} |");
    }
    let c = &summary.counts;
    md.push_str("\n## Summary\n\n| | |\n|---|---|\n");
    let child_cost = summary.child_cost_per_1000.map_or_else(
        || "not computed: set `[compare] child_price_per_hour`".to_owned(),
        |v| format!("${v:.4} (upper bound)"),
    );
    let rows = [
        ("Win-or-tie rate", rate_text(&summary.win_or_tie)),
        (
            "Wins / ties / losses",
            format!("{} / {} / {}", c.wins, c.ties, c.losses),
        ),
        ("Unparsed verdicts (not counted)", c.unparsed.to_string()),
        (
            "Child errors (counted as losses)",
            summary.child_errors.to_string(),
        ),
        (
            "Child answers cut at the token limit",
            summary.cut.to_string(),
        ),
        (
            "Verdicts that flipped with the A/B order (counted as ties)",
            rate_text(&summary.flips),
        ),
        (
            "Latency p50 / p95",
            format!(
                "{} / {}",
                secs(summary.latency_p50),
                secs(summary.latency_p95)
            ),
        ),
        ("Time to first token p50", secs(summary.ttft_p50)),
        (
            "Output tokens per second",
            summary
                .tokens_per_second
                .map_or_else(|| "n/a".to_owned(), |v| format!("{v:.1}")),
        ),
        (
            "Parent cost per 1,000 requests",
            usd(
                summary.parent_cost_per_1000,
                "not computed: set `[compare] parent_price_in` and `parent_price_out`",
            ),
        ),
        ("Child cost per 1,000 requests", child_cost),
    ];
    for (key, value) in rows {
        let _ = writeln!(md, "| {key} | {value} |");
    }
    if let Some(ratio) = summary.cost_ratio {
        let _ = writeln!(md, "| Child cost / parent cost | {:.1}% |", ratio * 100.0);
    }
    md.push('\n');
    if !summary.judge.conclusive {
        // The headline said why; the judge's verdicts tell nothing more.
    } else if summary.decided.of == 0 || summary.decided.contains(0.5) {
        let _ = writeln!(
            md,
            "The 95% interval of the child's share of the decided questions ({}) includes 50%: these {} questions are too few to tell the child from the parent.\n",
            rate_text(&summary.decided),
            summary.questions
        );
    } else if summary.decided.high.is_some_and(|h| h < 0.5) {
        let _ = writeln!(
            md,
            "The judge prefers the parent: the child's share of the decided questions is {}.\n",
            rate_text(&summary.decided)
        );
    } else {
        let _ = writeln!(
            md,
            "The judge prefers the child: its share of the decided questions is {}.\n",
            rate_text(&summary.decided)
        );
    }
    md.push_str("## By topic\n\n| Topic | Wins | Ties | Losses | Unparsed | Win-or-tie rate |\n|---|---|---|---|---|---|\n");
    for row in &summary.topics {
        let k = &row.counts;
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            row.topic,
            k.wins,
            k.ties,
            k.losses,
            k.unparsed,
            rate_text(&row.win_or_tie)
        );
    }
    md.push('\n');
    if header.charts.0 {
        let _ = writeln!(md, "![Win, tie and loss by topic]({TOPICS_SVG})\n");
    }
    if header.charts.1 {
        let _ = writeln!(
            md,
            "![Latency of the child and the parent]({LATENCY_SVG})\n"
        );
    }
    let mut losses: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.result == Some(Outcome::Loss))
        .collect();
    losses.sort_by_key(|e| !e.child_error);
    let wins: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.result == Some(Outcome::Win))
        .collect();
    section(
        &mut md,
        "Losses",
        &losses[..losses.len().min(SHOWN)],
        losses.len(),
    );
    section(&mut md, "Wins", &wins[..wins.len().min(SHOWN)], wins.len());
    md.push_str("## Limits\n\n");
    let mut limits = Vec::new();
    if header.judge_is_parent {
        limits.push("The judge is the parent: it may favor its own answers.".to_owned());
    }
    if header.questions < 100 {
        limits.push(format!("Fewer than 100 questions ({}).", header.questions));
    }
    limits.push("Requests were sent one at a time: the latency of one user, and the child cost is an upper bound.".to_owned());
    if summary.cut > 0 {
        limits.push(format!(
            "{} child answers hit the token limit (raise `[compare] max_tokens` or the context).",
            summary.cut
        ));
    }
    if header.cpu {
        limits.push("The child ran on a CPU.".to_owned());
    }
    for limit in limits {
        let _ = writeln!(md, "- {limit}");
    }
    md
}

/// `compare.json`.
#[derive(Debug, Serialize)]
pub struct Json<'a> {
    /// The header.
    pub header: &'a Header,
    /// The summary.
    pub summary: &'a Summary,
    /// Every question.
    pub questions: &'a [Entry],
}

/// `compare.json`'s text.
#[must_use]
pub fn json(header: &Header, summary: &Summary, entries: &[Entry]) -> String {
    serde_json::to_string_pretty(&Json {
        header,
        summary,
        questions: entries,
    })
    .unwrap_or_else(|_| "{}".to_owned())
        + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::stats::{Prices, judged_alike, summarize};

    fn header() -> Header {
        Header {
            compare_id: "compare_20260101-000000".into(),
            run_id: "run_1".into(),
            base_model: "tiny".into(),
            gguf_type: "Q8_0".into(),
            llama_cpp: "b11434".into(),
            gguf_sha256: "0123456789abcdef".into(),
            hardware: "CPU X (CPU build)".into(),
            cpu: true,
            judge: "p/judge".into(),
            calibrated: true,
            calibration: Some(crate::compare::calibration::Calibration {
                judge_key: "k".into(),
                judge: "p/judge".into(),
                skipped: false,
                controls: vec![crate::compare::calibration::Control {
                    question: "q1".into(),
                    worse: crate::compare::calibration::Worse::Cut { words: 5 },
                    verdicts: (
                        Some(crate::compare::order::Verdict::A),
                        Some(crate::compare::order::Verdict::B),
                    ),
                    prefers_parent: true,
                }],
            }),
            judge_is_parent: true,
            judge_key: "k".into(),
            questions: 2,
            date: "2026-01-01T00:00:00Z".into(),
            charts: (true, false),
        }
    }

    fn entry(id: &str, result: Outcome, child_error: bool) -> Entry {
        Entry {
            id: id.into(),
            topic: "t".into(),
            subtopic: "s".into(),
            question: "What is a very long question? ".repeat(5),
            child_answer: "child\nsays".into(),
            parent_answer: "parent".into(),
            child: None,
            order: Some(Order::ChildA),
            verdict: Some("B".into()),
            result: Some(result),
            reason: Some(format!("reason {id}")),
            swapped_verdict: None,
            flipped: false,
            child_error,
        }
    }

    #[test]
    fn the_report_has_its_sections_in_order_with_child_errors_first_among_losses() {
        let items = judged_alike("t", &[Outcome::Loss, Outcome::Loss, Outcome::Win]);
        let summary = summarize(&items, Prices::default(), 0.6);
        let entries = [
            entry("q1", Outcome::Loss, false),
            entry("q2", Outcome::Loss, true),
            entry("q3", Outcome::Win, false),
        ];
        let md = markdown(&header(), &summary, &entries);
        let order = [
            "# Compare of run run_1",
            "- Judge calibration: preferred the parent's answer over a clearly worse one, in both orders, in 1 of 1 control pairs",
            "- Judge consistency (both orders agree): 100.0% [43.9%, 100.0%] (3 of 3)",
            "- Win-or-tie rate (flipped verdicts count as ties): 33.3% [6.1%, 79.2%] (1 of 3)",
            "| GGUF | Q8_0, llama.cpp b11434, sha256 0123456789ab |",
            "## Summary",
            "| Win-or-tie rate | 33.3% [6.1%, 79.2%] (1 of 3) |",
            "too few to tell",
            "## By topic",
            "![Win, tie and loss by topic](topics.svg)",
            "## Losses (first 2 of 2)",
            "### q2:",
            "### q1:",
            "## Wins (first 1 of 1)",
            "## Limits",
            "The judge is the parent",
            "Fewer than 100 questions (2).",
            "The child ran on a CPU.",
        ];
        let mut at = 0;
        for part in order {
            let found = md[at..]
                .find(part)
                .unwrap_or_else(|| panic!("missing or out of order: {part}\n{md}"));
            at += found;
        }
        assert!(md.contains("> child\n> says\n"), "{md}");
        assert!(
            md.contains("not computed: set `[compare] parent_price_in`"),
            "{md}"
        );
        assert!(!md.contains("Child cost / parent cost"), "{md}");
        assert!(!md.contains("latency.svg"), "{md}");
        assert!(md.contains("…"), "{md}");
        let json: serde_json::Value =
            serde_json::from_str(&json(&header(), &summary, &entries)).unwrap();
        assert_eq!(json["summary"]["counts"]["losses"], 2);
        assert_eq!(json["questions"][1]["child_error"], true);
    }
}

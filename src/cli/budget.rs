//! `overbrainer budget [--json]`: the spend of the ledger (`.overbrainer/ledger.jsonl`) by
//! stage, by run (pods), by provider and model, against `budget.max_usd`, with what
//! remains and the requests without a price (issue 20); the sums are
//! [`crate::budget::report`]'s. Never takes the project lock.

use std::fmt::Write as _;
use std::process::ExitCode;

use super::Context;
use crate::budget::{Report, Spend};

/// Arguments of `budget`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// One JSON object on stdout, for scripts.
    #[arg(long)]
    pub json: bool,
}

/// Prints the budget.
///
/// # Errors
///
/// When there is no project, its configuration is invalid or the ledger cannot be read.
pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let (project, loaded) = ctx.load()?;
    let (report, skipped) = crate::budget::report(project.root(), &loaded.settings.budget)?;
    for line in skipped {
        tracing::warn!("{line}");
    }
    if args.json {
        outln!("{}", serde_json::to_string(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    for line in lines(&report) {
        outln!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

fn spend(name: &str, spend: &Spend) -> String {
    let mut text = format!("{name}: ${:.4} over {}", spend.usd, spend.events);
    if spend.unpriced > 0 {
        let _ = write!(text, ", {} without a price (not counted)", spend.unpriced);
    }
    text
}

/// The text report: each group, then the total against the cap.
fn lines(report: &Report) -> Vec<String> {
    let summary = &report.summary;
    let mut lines = Vec::new();
    for (stage, s) in &summary.by_stage {
        lines.push(spend(&format!("stage {stage}"), s));
    }
    for (run, s) in &summary.by_run {
        lines.push(spend(&format!("run {run}"), s));
    }
    for (model, s) in &summary.by_model {
        lines.push(spend(&format!("model {model}"), s));
    }
    lines.push(spend("total", &summary.total));
    lines.push(cap_line(report));
    lines
}

/// The spend against the cap: what remains, past `warn_at` said, or how far it passed;
/// and, with or without a cap, what spenders at work hold.
fn cap_line(report: &Report) -> String {
    let mut line = cap_figures(report);
    if report.reserved_usd > 0.0 {
        let _ = write!(
            line,
            "; ${:.4} held by spenders at work (a pod's cost cap, requests in flight: `reserve` lines of .overbrainer/ledger.jsonl)",
            report.reserved_usd
        );
    }
    line
}

fn cap_figures(report: &Report) -> String {
    let Some(cap) = report.max_usd else {
        return "cap: none (set `budget.max_usd`)".to_owned();
    };
    let over = report.over_usd.unwrap_or(0.0);
    if over > 0.0 {
        return format!("cap: ${cap:.4} (`budget.max_usd`), passed by ${over:.4}");
    }
    let remaining = report.remaining_usd.unwrap_or(0.0);
    let mut line = format!("cap: ${cap:.4} (`budget.max_usd`), ${remaining:.4} remaining");
    if cap > 0.0 && report.summary.total.usd >= report.warn_at * cap {
        let _ = write!(
            line,
            " (past `budget.warn_at`, {:.0}% of the cap)",
            report.warn_at * 100.0
        );
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_report_names_unpriced_requests_and_what_remains() {
        let summary = crate::budget::Summary {
            total: Spend {
                usd: 1.5,
                events: 3,
                unpriced: 1,
                input_tokens: 0,
                output_tokens: 0,
            },
            ..Default::default()
        };
        let report = Report {
            summary,
            max_usd: Some(2.0),
            reserved_usd: 0.0,
            remaining_usd: Some(0.5),
            over_usd: Some(0.0),
            warn_at: 0.8,
        };
        assert_eq!(
            lines(&report),
            [
                "total: $1.5000 over 3, 1 without a price (not counted)",
                "cap: $2.0000 (`budget.max_usd`), $0.5000 remaining"
            ]
        );
    }

    #[test]
    fn the_cap_line_says_past_warn_at_and_how_far_the_cap_was_passed() {
        let report = |spent: f64, cap: Option<f64>| Report {
            summary: crate::budget::Summary {
                total: Spend {
                    usd: spent,
                    events: 1,
                    ..Default::default()
                },
                ..Default::default()
            },
            max_usd: cap,
            reserved_usd: 0.0,
            remaining_usd: cap.map(|c| (c - spent).max(0.0)),
            over_usd: cap.map(|c| ((spent - c).max(0.0) * 1e4).round() / 1e4),
            warn_at: 0.8,
        };
        for (spent, cap, expected) in [
            (
                1.0,
                Some(2.0),
                "cap: $2.0000 (`budget.max_usd`), $1.0000 remaining",
            ),
            (
                1.6,
                Some(2.0),
                "cap: $2.0000 (`budget.max_usd`), $0.4000 remaining (past `budget.warn_at`, 80% of the cap)",
            ),
            (
                2.5,
                Some(2.0),
                "cap: $2.0000 (`budget.max_usd`), passed by $0.5000",
            ),
            (
                0.1 + 0.2,
                Some(0.3),
                "cap: $0.3000 (`budget.max_usd`), $0.0000 remaining (past `budget.warn_at`, 80% of the cap)",
            ),
            (2.5, None, "cap: none (set `budget.max_usd`)"),
        ] {
            assert_eq!(
                cap_line(&report(spent, cap)),
                expected,
                "{spent} of {cap:?}"
            );
        }
    }
}

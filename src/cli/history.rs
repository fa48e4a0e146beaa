//! `overbrainer history [--all]`: totals per stage and overall from
//! `.overbrainer/history.jsonl`, or with `--all` one line per execution (HIST-5); the
//! reading and the sums are [`crate::history`]'s. Never takes the project lock.

use std::fmt::Write as _;
use std::process::ExitCode;

use super::Context;
use crate::history::{Detail, HistoryLine, LineCost, Totals};

/// Arguments of `history`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// One line per stage execution, in file order.
    #[arg(long)]
    pub all: bool,
}

/// Prints the history.
///
/// # Errors
///
/// When there is no project or the history file cannot be read.
pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let project = ctx.project()?;
    let (lines, skipped) = crate::history::read(&project.history_path())?;
    for line in skipped {
        tracing::warn!("{line}");
    }
    if args.all {
        for line in &lines {
            outln!("{}", execution_line(line));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let summary = crate::history::summary(&lines);
    for (stage, totals) in &summary.stages {
        outln!("{}", totals_line(stage, totals));
    }
    outln!("{}", totals_line("total", &summary.total));
    Ok(ExitCode::SUCCESS)
}

/// One stage execution, as `--all` prints it.
fn execution_line(line: &HistoryLine) -> String {
    let mut text = format!(
        "{} {} {} -> {}: {} done, {} skipped, {} failed, {} excluded",
        line.stage,
        line.status.as_str(),
        line.started_at,
        line.ended_at,
        line.done,
        line.skipped,
        line.failed,
        line.excluded
    );
    match &line.detail {
        Detail::Split {
            train,
            eval,
            orphaned,
        } => {
            let _ = write!(text, ", {train} train, {eval} eval, {orphaned} orphaned");
        }
        Detail::Provider {
            provider,
            model,
            input_tokens,
            output_tokens,
            ..
        } => {
            let cost = match line.detail.cost() {
                Some(LineCost::Known(usd)) => format!("${usd:.4}"),
                Some(LineCost::Partial(usd)) => format!("${usd:.4} (partial)"),
                Some(LineCost::Unknown) | None => "cost unknown".to_owned(),
            };
            let _ = write!(
                text,
                ", {provider}/{model}, {input_tokens} input tokens, {output_tokens} output tokens, {cost}"
            );
        }
    }
    text
}

/// The totals of a stage, or of all.
fn totals_line(name: &str, t: &Totals) -> String {
    let cost = if t.unknown_costs > 0 {
        format!(
            "${:.4} + unknown ({} without a price)",
            t.cost_usd, t.unknown_costs
        )
    } else {
        format!("${:.4}", t.cost_usd)
    };
    format!(
        "{name}: {} executions, {} items, {} input tokens, {} output tokens, {cost}",
        t.executions, t.items, t.input_tokens, t.output_tokens
    )
}

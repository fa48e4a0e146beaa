//! `overbrainer history [--all]`: totals per stage and overall from
//! `.overbrainer/history.jsonl`, or with `--all` one line per execution (HIST-5). Never
//! takes the project lock.

use std::fmt::Write as _;
use std::process::ExitCode;

use super::Context;
use crate::history::{Detail, Totals};

/// Arguments of `history`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// One line per stage execution, in file order.
    #[arg(long)]
    pub all: bool,
}

fn cost(usd: f64, unknown: u64) -> String {
    if unknown > 0 {
        format!("${usd:.4} + unknown ({unknown} without a price)")
    } else {
        format!("${usd:.4}")
    }
}

fn totals_line(name: &str, t: &Totals) -> String {
    format!(
        "{name}: {} executions, {} items, {} input tokens, {} output tokens, {}",
        t.executions,
        t.items,
        t.input_tokens,
        t.output_tokens,
        cost(t.cost_usd, t.unknown_costs)
    )
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
                    cost_usd,
                    cost_partial,
                } => {
                    let cost_text = match cost_usd {
                        None => "cost unknown".to_owned(),
                        Some(usd) if *cost_partial => format!("${usd:.4} (partial)"),
                        Some(usd) => format!("${usd:.4}"),
                    };
                    let _ = write!(
                        text,
                        ", {provider}/{model}, {input_tokens} input tokens, {output_tokens} output tokens, {cost_text}"
                    );
                }
            }
            outln!("{text}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let (by_stage, all) = crate::history::totals(&lines);
    for stage in ["subtopics", "questions", "answers", "split"] {
        if let Some(t) = by_stage.get(stage) {
            outln!("{}", totals_line(stage, t));
        }
    }
    outln!("{}", totals_line("total", &all));
    Ok(ExitCode::SUCCESS)
}

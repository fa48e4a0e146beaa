//! `overbrainer compare [--run RUN_ID] [--limit N] [--target NAME] [--rejudge COMPARE_ID]
//! [--skip-calibration]`:
//! the child against the parent (see `compare`), on the run's target or `--target`'s.
//! Takes the project lock (CMP-3); progress on stderr,
//! the report's path on stdout. Ctrl-C cancels the child's job, or stops judging and keeps
//! the verdicts (CMP-12, CMP-19).

use std::process::ExitCode;

use super::Context;
use crate::compare::{CompareError, CompareEvent, Request, order::Outcome};

/// Arguments of `compare`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run to compare (default: the newest run with a GGUF).
    #[arg(long = "run", value_name = "RUN_ID", add = clap_complete::ArgValueCompleter::new(super::complete::run_ids))]
    pub run_id: Option<String>,
    /// Only the first N questions of `data/eval.jsonl`.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Judge an earlier compare again without asking the child again.
    #[arg(long, value_name = "COMPARE_ID", conflicts_with = "limit")]
    pub rejudge: Option<String>,
    /// The target the child's job runs on, over the run's own (the one `local`
    /// target for a run whose pod is gone).
    #[arg(long, value_name = "NAME", conflicts_with = "rejudge", add = clap_complete::ArgValueCompleter::new(super::complete::targets))]
    pub target: Option<String>,
    /// Judge without first checking the judge on control pairs (the gate then refuses
    /// the compare). Without it, a judge that fails the check ends `compare` with exit
    /// status 3 before any child question is asked.
    #[arg(long)]
    pub skip_calibration: bool,
    /// Judge even when the estimate with the spend passes `budget.max_usd` (the cap
    /// still stops the judging when it is reached).
    #[arg(long)]
    pub over_budget: bool,
}

/// `1 question`, `6 questions`.
fn questions_of(n: usize) -> String {
    if n == 1 {
        "1 question".to_owned()
    } else {
        format!("{n} questions")
    }
}

fn render(event: &CompareEvent) {
    match event {
        CompareEvent::Started {
            compare_id,
            run_id,
            target,
            questions,
        } => match target {
            Some(target) => errln!(
                "compare: {compare_id} of run {run_id} on target {target}, {}",
                questions_of(*questions)
            ),
            None => {
                errln!(
                    "compare: judging {compare_id} of run {run_id} again, {}",
                    questions_of(*questions)
                );
            }
        },
        CompareEvent::GgufPresent { file } => {
            errln!("compare: {file} is on the target with the right digest, not sent");
        }
        CompareEvent::GgufSent { file, size } => {
            errln!("compare: sent {file} ({size} bytes) to the target");
        }
        CompareEvent::Step(step) => errln!("compare: step {step}"),
        CompareEvent::JobLog(line) => tracing::debug!("job.log: {line}"),
        CompareEvent::Answered { done, total } => {
            errln!("compare: the child answered {done}/{total}");
        }
        CompareEvent::Calibrated { judge, passed, of } => {
            errln!(
                "compare: the judge {judge} preferred the parent's answer over a clearly worse one in {passed} of {of} control pairs"
            );
        }
        CompareEvent::Judging {
            judge,
            file,
            missing,
            total,
        } => {
            errln!("compare: judging {missing} of {total} questions with {judge} ({file})");
        }
        CompareEvent::Judged { id, result } => {
            let word = match result {
                Outcome::Win => "win",
                Outcome::Tie => "tie",
                Outcome::Loss => "loss",
                Outcome::Unparsed => "unparsed",
            };
            errln!("compare: {id}: {word}");
        }
        CompareEvent::Spent {
            model,
            input_tokens,
            output_tokens,
            cost_usd,
        } => super::metrics::judge_spent(
            model,
            crate::llm::Usage {
                input_tokens: *input_tokens,
                output_tokens: *output_tokens,
            },
            *cost_usd,
        ),
    }
}

/// The exit status of a compare refused because its judge failed calibration.
pub const UNCALIBRATED: u8 = 3;

/// Runs `compare`.
///
/// # Errors
///
/// For a bad option, a held lock, a run without a GGUF, a failed child job, a judge that
/// cannot be reached, or an interrupt.
pub async fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let (mut session, _stage_events) = super::stages::open(ctx)?;
    session.context.over_budget = args.over_budget;
    let (events, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let request = Request {
        run_id: args.run_id.clone(),
        limit: args.limit,
        rejudge: args.rejudge.clone(),
        target: args.target.clone(),
        skip_calibration: args.skip_calibration,
    };
    let cancel = session.context.cancel.clone();
    let flow = crate::compare::compare(
        &session.project,
        &session.loaded.settings,
        &session.env,
        &session.context,
        &request,
        &events,
        &cancel,
    );
    let result = crate::pipeline::pump::pump(&mut receiver, Box::pin(flow), |e| render(&e)).await;
    let compared = match result {
        Err(
            error @ (CompareError::Cancelled { .. }
            | CompareError::Judging {
                interrupted: true, ..
            }),
        ) => {
            // Ctrl-C: what was done is kept (CMP-12, CMP-19); the status says so.
            errln!("compare: {error}");
            return Ok(ExitCode::from(130));
        }
        Err(error @ CompareError::Uncalibrated { .. }) => {
            // Its own status, so a script can tell "choose another judge" from a failure.
            errln!("error: {error}");
            return Ok(ExitCode::from(UNCALIBRATED));
        }
        other => other?,
    };
    let summary = &compared.summary;
    let judge = &summary.judge;
    if !judge.conclusive {
        errln!(
            "compare: inconclusive: the judge agreed with itself in both A/B orders on {}, below `[compare] min_judge_consistency` = {} ({} flipped verdicts preferred the first answer, {} the second)",
            crate::compare::report::rate_text(&judge.consistency),
            judge.min_consistency,
            judge.flips_first,
            judge.flips_second
        );
    }
    errln!(
        "compare: judge consistency {}; child's win rate among the consistent verdicts {}; win-or-tie {}",
        crate::compare::report::rate_text(&judge.consistency),
        crate::compare::report::rate_text(&judge.consistent_wins),
        crate::compare::report::rate_text(&summary.win_or_tie)
    );
    outln!("{}", compared.report.display());
    Ok(ExitCode::SUCCESS)
}

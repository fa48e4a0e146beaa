//! `compare [--run RUN_ID] [--limit N] [--rejudge COMPARE_ID]` (spec/export-compare-push.md
//! CMP-1..CMP-26; issue 15): the child, served by the pinned `llama-server` on the run's
//! target, against the parent's answers in `data/eval.jsonl`, judged here.
//!
//! - [`setup`]: `setup.json`, `questions.jsonl`, `child_answers.jsonl` and the eval records;
//! - [`job`]: the compare job's script and its client (`compare_client.py`), run on the
//!   target: `llama-server` bound to 127.0.0.1 there, asked one question at a time;
//! - [`child`]: the job on the target: the GGUF sent only when its digest differs, the job
//!   started, followed, cancelled on Ctrl-C and retrieved;
//! - [`order`]: the A/B order per question and the swap sample; [`verdict`]: the judge's
//!   reply, the verdicts file's key and lines; [`judge`]: judging with reasoning stripped,
//!   at most `pipeline.concurrency` at once, each verdict appended as it comes;
//! - [`stats`]: rates with Wilson intervals, flip rate, per topic, percentiles, costs;
//!   [`report`]: `compare.md` and `compare.json`; [`charts`]: the SVGs beside them;
//!   [`hardware`]: `hardware.json` and CMP-22's text;
//! - [`calibration`]: the judge's control pairs before the child is asked (issue 35);
//! - [`gate`]: `[compare] min_win_or_tie` before a push; [`listing`]: the compares as
//!   the TUI lists them.
//!
//! A flow: it sends [`CompareEvent`]s and never prints; the run's `run.json` is never
//! written.

pub mod budget;
pub mod calibration;
pub mod charts;
pub mod child;
pub mod gate;
pub mod hardware;
pub mod job;
pub mod judge;
pub mod listing;
pub mod order;
pub mod report;
pub mod setup;
pub mod stats;
pub mod verdict;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::config::{EnvSnapshot, Settings};
use crate::dataset::jsonl::read_jsonl;
use crate::pipeline::Context;
use crate::pipeline::templates::{Prompt, Template};
use crate::project::Project;
use crate::runs::RunError;
use crate::runs::record::write_atomic;
use calibration::Calibration;
use setup::{CHILD_ANSWERS_JSONL, ChildAnswer, HARDWARE_JSON, Setup};
use verdict::VerdictLine;

/// The directory of the compares inside a run directory (CMP-4).
pub const COMPARES_DIR: &str = "compares";

/// What `compare` was asked.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// `--run`: default the newest run with a GGUF.
    pub run_id: Option<String>,
    /// `--limit`.
    pub limit: Option<usize>,
    /// `--rejudge`.
    pub rejudge: Option<String>,
    /// `--target`: where the child's job runs, over the run's own target (issue 34).
    pub target: Option<String>,
    /// `--skip-calibration`: judge without the control pairs (issue 35).
    pub skip_calibration: bool,
}

/// What a compare reports while it works.
#[derive(Debug, Clone, PartialEq)]
pub enum CompareEvent {
    /// The compare began.
    Started {
        /// Compare ID.
        compare_id: String,
        /// Run ID.
        run_id: String,
        /// Target name (`None` for a rejudge, which contacts no target).
        target: Option<String>,
        /// Questions.
        questions: usize,
    },
    /// The GGUF was on the target with the right digest: not sent.
    GgufPresent {
        /// Its path relative to the run directory.
        file: String,
    },
    /// The GGUF was sent to the target.
    GgufSent {
        /// Its path relative to the run directory.
        file: String,
        /// Bytes.
        size: u64,
    },
    /// A step of the job began.
    Step(String),
    /// A line of the job's `job.log`.
    JobLog(String),
    /// The child answered this many of so many.
    Answered {
        /// Done.
        done: usize,
        /// In all.
        total: usize,
    },
    /// The judge answered the control pairs (issue 35).
    Calibrated {
        /// `<provider>/<model>`.
        judge: String,
        /// Controls passed.
        passed: usize,
        /// Controls asked.
        of: usize,
    },
    /// Judging began.
    Judging {
        /// `<provider>/<model>`.
        judge: String,
        /// The verdicts file.
        file: String,
        /// Questions still to judge.
        missing: usize,
        /// In all.
        total: usize,
    },
    /// A question was judged.
    Judged {
        /// Question ID.
        id: String,
        /// Its result.
        result: order::Outcome,
    },
    /// A judge request settled: its tokens, retries included (MET-9).
    Spent {
        /// The judge's model.
        model: String,
        /// Prompt tokens.
        input_tokens: u64,
        /// Generated tokens.
        output_tokens: u64,
        /// Their cost in USD; `None` when the model's price is unknown.
        cost_usd: Option<f64>,
    },
}

/// Sender of [`CompareEvent`]s.
pub type Events = tokio::sync::mpsc::UnboundedSender<CompareEvent>;

fn emit(events: &Events, event: CompareEvent) {
    let _ = events.send(event);
}

/// How a compare ended.
#[derive(Debug, Clone)]
pub struct Compared {
    /// Compare ID.
    pub compare_id: String,
    /// `compare.md`.
    pub report: PathBuf,
    /// The numbers.
    pub summary: stats::Summary,
}

/// Errors of `compare`; messages name the run, compare, key or file and say the fix.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// From the run layer (unknown run, target, retrieval).
    #[error(transparent)]
    Run(#[from] RunError),
    /// No run has a GGUF.
    #[error("no run has a GGUF: export one first (`overbrainer export RUN_ID`)")]
    NoRunWithGguf,
    /// The run has no GGUF.
    #[error("run `{0}` has no GGUF: export it first (`overbrainer export {0}`)")]
    NoGguf(String),
    /// `--limit 0`.
    #[error("`--limit` must be at least 1")]
    BadLimit,
    /// `--rejudge` with `--limit`.
    #[error("`--rejudge` cannot be combined with `--limit`")]
    RejudgeWithLimit,
    /// An unknown compare ID.
    #[error("no compare `{0}` in any run's `compares/`")]
    UnknownCompare(String),
    /// A file of the compare or the dataset that does not hold what it should.
    #[error("{0}")]
    Bad(String),
    /// No questions to ask.
    #[error("`data/eval.jsonl` holds no questions: run `overbrainer split` first")]
    NoQuestions,
    /// The judge failed its calibration (issue 35).
    #[error(
        "the judge `{judge}` preferred the parent's answer over a clearly worse one, in both orders, in only {passed} of {of} control pairs, so its verdicts on the child would not mean much; failed: {}. No child question was asked or judged: choose another judge (`[roles.judge]`), or pass `--skip-calibration` to judge anyway (the gate then refuses the compare)",
        failed.join(", ")
    )]
    Uncalibrated {
        /// `<provider>/<model>`.
        judge: String,
        /// Controls passed.
        passed: usize,
        /// Controls asked.
        of: usize,
        /// The failed controls' names.
        failed: Vec<String>,
    },
    /// No control pair can be made of the eval questions (issue 35).
    #[error(
        "no control pair for the judge's calibration can be made of the questions of `data/eval.jsonl` (it needs two different parent answers, or one of at least {} words); pass `--skip-calibration` to judge anyway (the gate then refuses the compare)",
        calibration::CUT_WORDS * 3
    )]
    NoControls,
    /// A container or Runpod target: not compared by this build.
    #[error(
        "target `{0}` is not a native local or SSH target; compare runs only there in this build"
    )]
    UnsupportedTarget(String),
    /// The child's job failed.
    #[error("compare `{compare_id}` of run `{run_id}`: the child's job failed: {reason}")]
    JobFailed {
        /// Run ID.
        run_id: String,
        /// Compare ID.
        compare_id: String,
        /// Its failure line or where its log is.
        reason: String,
    },
    /// Ctrl-C while the child's job ran: cancelled.
    #[error("compare `{compare_id}` of run `{run_id}` cancelled while the child answered")]
    Cancelled {
        /// Run ID.
        run_id: String,
        /// Compare ID.
        compare_id: String,
    },
    /// The judge role cannot be used.
    #[error(transparent)]
    Role(#[from] crate::pipeline::StageError),
    /// Judging stopped (Ctrl-C or a provider failure); the verdicts so far are kept.
    #[error(
        "compare `{compare_id}`: {source}; {judged} of {total} questions have a verdict in `{file}`, kept; resume with `overbrainer compare --rejudge {compare_id}`"
    )]
    Judging {
        /// Compare ID.
        compare_id: String,
        /// Why.
        #[source]
        source: Box<judge::JudgeError>,
        /// Questions with a verdict.
        judged: usize,
        /// In all.
        total: usize,
        /// The verdicts file.
        file: String,
        /// Stopped by Ctrl-C.
        interrupted: bool,
    },
    /// A local file could not be read or written.
    #[error("cannot write `{}`: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// `compare`: the whole compare; see the module's documentation.
///
/// # Errors
///
/// Every [`CompareError`]; the run's record is never written.
pub async fn compare(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    context: &Context,
    request: &Request,
    events: &Events,
    cancel: &CancellationToken,
) -> Result<Compared, CompareError> {
    if request.limit == Some(0) {
        return Err(CompareError::BadLimit);
    }
    if let Some(id) = &request.rejudge {
        if request.limit.is_some() {
            return Err(CompareError::RejudgeWithLimit);
        }
        let dir = find(project, request.run_id.as_deref(), id)?;
        let setup = Setup::load(&dir).map_err(CompareError::Bad)?;
        // The same judge's calibration holds; another judge answers its own controls.
        let judge = make_judge(project, settings, context, events).await?;
        if Calibration::load(&dir).is_none_or(|c| c.judge_key != judge.key) {
            let calibration = calibrate(&judge, &setup.questions, request, context, events).await?;
            calibration.save(&dir).map_err(CompareError::Bad)?;
        }
        emit(
            events,
            CompareEvent::Started {
                compare_id: setup.compare_id.clone(),
                run_id: setup.run_id.clone(),
                target: None,
                questions: setup.questions.len(),
            },
        );
        return judge_and_report(judge, settings, context, &dir, setup, events, cancel).await;
    }
    let (record, gguf) = child::pick(project, request.run_id.as_deref())?;
    // The target is checked before any judge request (the calibration's are paid).
    let resolved = child::target_of(settings, &record, request)?;
    // The judge must be usable before the child is asked: a missing role or key fails now,
    // and so does a judge without a price under the budget's cap (issue 20).
    let judge = make_judge(project, settings, context, events).await?;
    // Issue 35: a judge that cannot tell a clearly worse answer is refused before the
    // child is asked.
    let questions = child::questions(project, request.limit)?;
    let calibration = calibrate(&judge, &questions, request, context, events).await?;
    let (dir, setup) = child::run(
        project,
        settings,
        env,
        (&record, resolved),
        gguf,
        questions,
        request,
        events,
        cancel,
    )
    .await?;
    calibration.save(&dir).map_err(CompareError::Bad)?;
    // The same judge (its meter has the calibration's spend) judges the child.
    judge_and_report(judge, settings, context, &dir, setup, events, cancel).await
}

/// The judge of this compare: its client under the budget, the prompt, and the key of
/// its verdicts.
struct MadeJudge {
    judge: judge::Judge,
    key: String,
    name: String,
}

/// The judge role's client, prompt and budget (a missing role or key, or a judge
/// without a price under the budget's cap, fails here, issue 20).
async fn make_judge(
    project: &Project,
    settings: &Settings,
    context: &Context,
    events: &Events,
) -> Result<MadeJudge, CompareError> {
    let client = context.role_client("judge", judge_role(settings).0).await?;
    let prompt = Prompt::load(&project.prompts_dir(), Template::Judge)
        .map_err(|e| CompareError::Bad(e.to_string()))?;
    let key = verdict::judge_key(&client.provider, &client.role.model, prompt.source());
    let name = format!("{}/{}", client.provider, client.role.model);
    let budget = judge_budget(context, &client).await?;
    Ok(MadeJudge {
        judge: judge::Judge {
            client: client.client.clone(),
            role: client.role.clone(),
            prompt,
            concurrency: settings.pipeline.concurrency.max(1) as usize,
            budget,
            events: events.clone(),
        },
        key,
        name,
    })
}

/// The judge's calibration on `questions` (issue 35), or its skipped record with
/// `--skip-calibration`: the controls' estimate is held to the budget first.
///
/// # Errors
///
/// [`CompareError::Uncalibrated`] when the judge fails it, [`CompareError::NoControls`]
/// when no control can be made; the budget's and the judge's errors.
async fn calibrate(
    made: &MadeJudge,
    questions: &[setup::Question],
    request: &Request,
    context: &Context,
    events: &Events,
) -> Result<Calibration, CompareError> {
    if request.skip_calibration {
        return Ok(Calibration {
            judge_key: made.key.clone(),
            judge: made.name.clone(),
            skipped: true,
            controls: Vec::new(),
        });
    }
    let controls = calibration::controls(questions);
    if controls.is_empty() {
        return Err(CompareError::NoControls);
    }
    let mut users = Vec::new();
    for (index, _, worse) in &controls {
        let question = &questions[*index];
        let user = made
            .judge
            .prompt
            .render(minijinja::context! {
                question => question.user,
                answer_a => question.parent_answer,
                answer_b => worse,
            })
            .map_err(|e| CompareError::Bad(e.to_string()))?;
        users.extend([user.clone(), user]);
    }
    made.judge
        .budget
        .check_estimate(&users, context.over_budget)
        .map_err(CompareError::Bad)?;
    let calibration = calibration::calibrate(&made.judge, questions, &made.key, &made.name)
        .await
        .map_err(|source| {
            CompareError::Bad(format!(
                "cannot ask the judge `{}` its calibration's control pairs: {source}",
                made.name
            ))
        })?;
    emit(
        events,
        CompareEvent::Calibrated {
            judge: made.name.clone(),
            passed: calibration.passed(),
            of: calibration.controls.len(),
        },
    );
    if !calibration.calibrated() {
        return Err(CompareError::Uncalibrated {
            judge: made.name.clone(),
            passed: calibration.passed(),
            of: calibration.controls.len(),
            failed: calibration.failed(),
        });
    }
    Ok(calibration)
}

/// The directory of compare `id`: in `run`'s `compares/`, else in any run's.
fn find(project: &Project, run: Option<&str>, id: &str) -> Result<PathBuf, CompareError> {
    let valid = id.starts_with("compare_")
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid {
        return Err(CompareError::UnknownCompare(id.to_owned()));
    }
    let runs: Vec<String> = match run {
        Some(run) => vec![run.to_owned()],
        None => crate::runs::record::list(&project.runs_dir())
            .0
            .into_iter()
            .map(|r| r.id)
            .collect(),
    };
    runs.iter()
        .map(|run| project.run_dir(run).join(COMPARES_DIR).join(id))
        .find(|dir| dir.join(setup::SETUP_JSON).is_file())
        .ok_or_else(|| CompareError::UnknownCompare(id.to_owned()))
}

/// Reads a JSONL file of the compare, every line valid.
fn read_lines<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, CompareError> {
    let (lines, skipped) = read_jsonl::<T>(path).map_err(|e| CompareError::Bad(e.to_string()))?;
    if let Some(bad) = skipped.first() {
        return Err(CompareError::Bad(bad.to_string()));
    }
    Ok(lines)
}

/// The budget of the judge's requests over the ledger (issue 20); a judge without a price
/// under a cap is refused unless `budget.allow_unpriced`.
async fn judge_budget(
    context: &Context,
    client: &crate::pipeline::stage::RoleClient,
) -> Result<budget::JudgeBudget, CompareError> {
    let (meter, skipped) = crate::budget::Meter::open(&context.root, &context.settings.budget)
        .map_err(|e| CompareError::Bad(e.to_string()))?;
    for line in skipped {
        tracing::warn!("{line}");
    }
    let price = client.price(&context.prices).await;
    if price.is_none() && meter.cap().is_some() && !meter.allow_unpriced() {
        return Err(CompareError::Bad(format!(
            "`compare` cannot judge: `{}` lists no price for `{}`, so its cost cannot be held to `budget.max_usd`; set `budget.allow_unpriced = true` to judge anyway (its cost then counts as unknown)",
            client.provider, client.role.model
        )));
    }
    Ok(budget::JudgeBudget {
        meter,
        provider: client.provider.clone(),
        model: client.role.model.clone(),
        price,
        max_output: u64::from(client.role.max_tokens),
    })
}

/// The judge role: `roles.judge`, else the parent (CMP-1); whether it is the parent.
fn judge_role(settings: &Settings) -> (Option<&crate::config::Role>, bool) {
    match settings.roles.judge.as_ref() {
        Some(role) => (Some(role), false),
        None => (settings.roles.parent.as_ref(), true),
    }
}

/// Judges what the compare in `dir` lacks, then writes `compare.json`, `compare.md` and
/// the charts.
#[allow(
    clippy::too_many_lines,
    reason = "judging, then the report's parts in order"
)]
async fn judge_and_report(
    made: MadeJudge,
    settings: &Settings,
    context: &Context,
    dir: &Path,
    setup: Setup,
    events: &Events,
    cancel: &CancellationToken,
) -> Result<Compared, CompareError> {
    let answers: Vec<ChildAnswer> = read_lines(&dir.join(CHILD_ANSWERS_JSONL))?;
    let answers: HashMap<String, ChildAnswer> =
        answers.into_iter().map(|a| (a.id.clone(), a)).collect();
    let judge_is_parent = judge_role(settings).1;
    let MadeJudge {
        judge,
        key,
        name: judge_name,
    } = made;
    let file = dir.join(verdict::file_name(&key));
    let mut lines: Vec<VerdictLine> = read_lines(&file)?;
    let done: HashSet<String> = verdict::decided_ids(&lines);
    let total = setup.questions.len();
    emit(
        events,
        CompareEvent::Judging {
            judge: judge_name.clone(),
            file: verdict::file_name(&key),
            missing: setup
                .questions
                .iter()
                .filter(|q| !done.contains(&q.id))
                .count(),
            total,
        },
    );
    let pending = budget::pending_prompts(&setup, &answers, &done, &judge.prompt)
        .map_err(|e| CompareError::Bad(e.to_string()))?;
    judge
        .budget
        .check_estimate(&pending, context.over_budget)
        .map_err(CompareError::Bad)?;
    let setup = Arc::new(setup);
    let answers = Arc::new(answers);
    let judged = judge::judge_missing(&judge, &setup, &answers, &done, &file, cancel, &|line| {
        emit(
            events,
            CompareEvent::Judged {
                id: line.id.clone(),
                result: line.result,
            },
        );
    })
    .await;
    match judged {
        Ok(new) => lines.extend(new),
        Err(source) => {
            let judged = read_lines::<VerdictLine>(&file).map_or(0, |l| l.len());
            return Err(CompareError::Judging {
                interrupted: matches!(source, judge::JudgeError::Cancelled),
                compare_id: setup.compare_id.clone(),
                source: Box::new(source),
                judged,
                total,
                file: file.display().to_string(),
            });
        }
    }
    let verdicts: HashMap<String, VerdictLine> =
        lines.into_iter().map(|l| (l.id.clone(), l)).collect();
    // The calibration of this judge (issue 35); another judge's does not count.
    let calibration = Calibration::load(dir).filter(|c| c.judge_key == key);
    let hardware: hardware::Hardware = std::fs::read_to_string(dir.join(HARDWARE_JSON))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let items = stats_items(&setup, &answers, &verdicts);
    let prices = stats::Prices {
        parent_in: settings.compare.parent_price_in,
        parent_out: settings.compare.parent_price_out,
        child_per_hour: settings.compare.child_price_per_hour,
    };
    let summary = stats::summarize(&items, prices, settings.compare.min_judge_consistency);
    let topics_svg = charts::topics(&summary.topics);
    let ok: Vec<&ChildAnswer> = answers.values().filter(|a| a.error.is_none()).collect();
    let parent_total: Vec<f64> = setup
        .questions
        .iter()
        .filter_map(|q| q.parent_latency_secs)
        .collect();
    let parent_ttft: Vec<f64> = setup
        .questions
        .iter()
        .filter_map(|q| q.parent_ttft_secs)
        .collect();
    let latency_svg = charts::latency(&[
        (
            "child total",
            ok.iter().filter_map(|a| a.total_secs).collect(),
        ),
        (
            "child first token",
            ok.iter().filter_map(|a| a.ttft_secs).collect(),
        ),
        ("parent total", parent_total),
        ("parent first token", parent_ttft),
    ]);
    let header = report::Header {
        compare_id: setup.compare_id.clone(),
        run_id: setup.run_id.clone(),
        base_model: setup.base_model.clone(),
        gguf_type: setup.gguf.kind.clone(),
        llama_cpp: setup.gguf.llama_cpp.clone(),
        gguf_sha256: setup.gguf.sha256.clone(),
        hardware: hardware::text(&hardware),
        cpu: hardware::build(&hardware) == hardware::Build::Cpu,
        calibrated: calibration.as_ref().is_some_and(Calibration::calibrated),
        calibration,
        judge: judge_name,
        judge_is_parent,
        judge_key: key,
        questions: total,
        date: jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string(),
        charts: (topics_svg.is_some(), latency_svg.is_some()),
    };
    let entries = report::entries(&setup, &answers, &verdicts);
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        write_atomic(&path, text.as_bytes()).map_err(|e| CompareError::Bad(e.to_string()))
    };
    for (name, svg) in [
        (report::TOPICS_SVG, &topics_svg),
        (report::LATENCY_SVG, &latency_svg),
    ] {
        if let Some(svg) = svg {
            write(name, svg)?;
        }
    }
    write(
        report::COMPARE_JSON,
        &report::json(&header, &summary, &entries),
    )?;
    write(
        report::COMPARE_MD,
        &report::markdown(&header, &summary, &entries),
    )?;
    Ok(Compared {
        compare_id: setup.compare_id.clone(),
        report: dir.join(report::COMPARE_MD),
        summary,
    })
}

/// What the statistics need of every question.
fn stats_items(
    setup: &Setup,
    answers: &HashMap<String, ChildAnswer>,
    verdicts: &HashMap<String, VerdictLine>,
) -> Vec<stats::Item> {
    setup
        .questions
        .iter()
        .filter_map(|q| {
            let line = verdicts.get(&q.id)?;
            let answer = answers.get(&q.id).filter(|a| a.error.is_none());
            Some(stats::Item {
                topic: q.topic.clone(),
                outcome: line.result,
                child_error: line.child_error,
                swapped: line.swapped.as_ref().is_some_and(|j| j.verdict.is_some())
                    && line.first.as_ref().is_some_and(|j| j.verdict.is_some()),
                flipped: line.flipped,
                verdicts: line
                    .first
                    .as_ref()
                    .and_then(|j| j.verdict)
                    .zip(line.swapped.as_ref().and_then(|j| j.verdict)),
                cut: answer.is_some_and(|a| a.cut),
                child: answer.and_then(|a| {
                    Some(stats::Timing {
                        ttft: a.ttft_secs?,
                        total: a.total_secs?,
                        tokens: a.output_tokens.unwrap_or(0),
                    })
                }),
                parent_tokens: (q.parent_input_tokens, q.parent_output_tokens),
            })
        })
        .collect()
}

//! The `split` stage (SPL-1..SPL-9): rewrites `train.jsonl` and `eval.jsonl` from
//! `answers.jsonl`, `questions.jsonl` and the configured topics. Needs no provider.

use std::collections::HashSet;

use super::progress::Event;
use super::runner::read;
use super::stage::{Context, StageError};
use crate::dataset::jsonl::{JsonlError, replace_jsonl};
use crate::dataset::split::{SplitCounts, split};
use crate::dataset::{AnswerRecord, QuestionRecord};
use crate::history::{Detail, HistoryLine, Status};

/// How `split` ended.
#[derive(Debug)]
pub struct SplitReport {
    /// Counts over every topic.
    pub total: SplitCounts,
    /// Counts of the `--topic` topic, when given (SPL-8).
    pub topic: Option<(String, SplitCounts)>,
    /// The error that stopped it, if any.
    pub error: Option<StageError>,
    /// An error writing the history line, if any.
    pub history_error: Option<JsonlError>,
}

impl SplitReport {
    /// The summary line `split` prints (SPL-8).
    #[must_use]
    pub fn summary_line(&self) -> String {
        let counts = self.shown();
        let codes: Vec<String> = counts
            .excluded
            .iter()
            .map(|(code, n)| format!("{} {n}", code.code()))
            .collect();
        let excluded = if codes.is_empty() {
            format!("{} excluded", counts.excluded_total())
        } else {
            format!(
                "{} excluded ({})",
                counts.excluded_total(),
                codes.join(", ")
            )
        };
        let scope = self
            .topic
            .as_ref()
            .map(|(name, _)| format!(" (topic `{name}`)"))
            .unwrap_or_default();
        format!(
            "split: {} train, {} eval, {excluded}, {} orphaned{scope}",
            counts.train, counts.eval, counts.orphaned
        )
    }

    /// Whether the command should exit 0.
    #[must_use]
    pub fn succeeded(&self) -> bool {
        self.error.is_none() && self.history_error.is_none()
    }

    /// The counts to print: the topic's with `--topic`, else the totals.
    #[must_use]
    pub fn shown(&self) -> &SplitCounts {
        self.topic
            .as_ref()
            .map_or(&self.total, |(_, counts)| counts)
    }
}

/// Runs `split`; `topic` only restricts the counts reported (PIPE-2).
#[must_use]
pub fn run(ctx: &Context, topic: Option<&str>) -> SplitReport {
    let started_at = jiff::Timestamp::now();
    let mut report = SplitReport {
        total: SplitCounts::default(),
        topic: None,
        error: None,
        history_error: None,
    };
    if let Err(error) = run_inner(ctx, topic, &mut report) {
        report.error = Some(error);
    }
    let line = HistoryLine {
        stage: "split".to_owned(),
        status: if report.error.is_some() {
            Status::Failed
        } else {
            Status::Ok
        },
        started_at,
        ended_at: jiff::Timestamp::now(),
        done: report.total.train + report.total.eval,
        skipped: 0,
        failed: 0,
        excluded: report.total.excluded_total(),
        detail: Detail::Split {
            train: report.total.train,
            eval: report.total.eval,
            orphaned: report.total.orphaned,
        },
    };
    report.history_error = crate::history::append(&ctx.history_path(), &line).err();
    report
}

fn run_inner(
    ctx: &Context,
    topic: Option<&str>,
    report: &mut SplitReport,
) -> Result<(), StageError> {
    ctx.check_topic(topic)?;
    let files = ctx.data();
    let answers_path = files.answers();
    let holds_lines = |path: &std::path::Path| std::fs::metadata(path).is_ok_and(|m| m.len() > 0);
    if !answers_path.exists() && (holds_lines(&files.train()) || holds_lines(&files.eval())) {
        return Err(StageError::NoAnswers { path: answers_path });
    }
    let answers: Vec<AnswerRecord> = read(ctx, &answers_path)?;
    let questions: Vec<QuestionRecord> = read(ctx, &files.questions())?;
    let ids: HashSet<&str> = questions.iter().map(|q| q.id.as_str()).collect();
    let topics: Vec<&str> = ctx
        .settings
        .topics
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    let pipeline = &ctx.settings.pipeline;
    let result = split(&answers, &ids, &topics, pipeline.eval_ratio, pipeline.seed);
    replace_jsonl(&files.train(), &result.train)?;
    replace_jsonl(&files.eval(), &result.eval)?;
    if !answers.is_empty() && result.train.is_empty() && result.total.orphaned > 0 {
        ctx.emit(Event::Warning(
            "every answer is orphaned (its topic is gone or its question is not in `data/questions.jsonl`): train and eval are empty".to_owned(),
        ));
    }
    report.topic = topic.map(|name| {
        (
            name.to_owned(),
            result.by_topic.get(name).cloned().unwrap_or_default(),
        )
    });
    report.total = result.total;
    Ok(())
}

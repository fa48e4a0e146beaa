//! The steps every generating stage runs: from its start to its report and history line
//! ([`run_stage`], [`finish`]), the `--force` replacement of old output ([`replacing`]),
//! the topic selection, announcing it and readying its generator ([`start_generating`]),
//! and collecting the outcomes of its item tasks ([`collect`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::progress::{Event, Progress, Tracker};
use super::stage::{Context, RoleClient, Stage, StageError, StageReport};
use crate::history::{Detail, HistoryLine, Status};

/// The file a generating stage writes, and the JSON key that identifies an item in it
/// (`None` for whole lines), for [`replacing`].
pub(crate) struct Output<'a> {
    /// The JSONL file.
    pub path: PathBuf,
    /// The item key, for example `id` for answers.
    pub item: Option<&'a str>,
}

/// Runs one generating stage from its start (`started_at`) to its report: checks the
/// topic, runs `generate` with the stage's counters, the skipped count and the main
/// role's `(provider, model)`, replacing the selected topics' old output with `force`
/// (PIPE-3), then appends the history line through [`finish`].
pub(crate) async fn run_stage(
    ctx: &Context,
    (stage, started_at): (Stage, jiff::Timestamp),
    (topic, force): (Option<&str>, bool),
    output: Output<'_>,
    generate: impl AsyncFnOnce(&Arc<Tracker>, &mut u64, &mut (String, String)) -> Result<(), StageError>,
) -> StageReport {
    let tracker = Tracker::new(stage, ctx.events.clone());
    let mut skipped = 0;
    let mut who = (String::new(), String::new());
    let result = async {
        ctx.check_topic(topic)?;
        let body = generate(&tracker, &mut skipped, &mut who);
        replacing(
            ctx,
            &tracker,
            (&output.path, output.item),
            (topic, force),
            body,
        )
        .await
    }
    .await;
    finish(
        ctx,
        stage,
        started_at,
        skipped,
        tracker.snapshot(),
        who,
        result.err(),
    )
}

/// Announces a generating stage (`Started`, with its `total` items and the `skipped`
/// ones) and readies its generator: `None` when there is nothing to do. Whenever the role
/// resolves, its provider and model go to `who` for the history line; a role that does not
/// resolve stops the stage only when there is work.
///
/// # Errors
///
/// [`StageError`] when there is work and the generator role cannot be readied.
pub(crate) async fn start_generating(
    ctx: &Context,
    stage: Stage,
    (total, skipped): (u64, u64),
    who: &mut (String, String),
) -> Result<Option<RoleClient>, StageError> {
    ctx.emit(Event::Started {
        stage,
        total,
        skipped,
    });
    let generator = ctx
        .role_client("generator", ctx.settings.roles.generator.as_ref())
        .await;
    if total == 0 {
        if let Ok(generator) = generator {
            *who = (generator.provider, generator.role.model);
        }
        return Ok(None);
    }
    let generator = generator?;
    *who = (generator.provider.clone(), generator.role.model.clone());
    Ok(Some(generator))
}

/// Finishes a stage: decides its status, appends its history line (HIST-1) and builds the
/// report.
#[allow(clippy::too_many_arguments)]
pub(crate) fn finish(
    ctx: &Context,
    stage: Stage,
    started_at: jiff::Timestamp,
    skipped: u64,
    progress: Progress,
    (provider, model): (String, String),
    error: Option<StageError>,
) -> StageReport {
    let status = if ctx.cancel.is_cancelled() && error.is_none() {
        Status::Interrupted
    } else if error.is_some() || progress.failed > 0 {
        Status::Failed
    } else {
        Status::Ok
    };
    let line = HistoryLine {
        stage: stage.name().to_owned(),
        status,
        started_at,
        ended_at: jiff::Timestamp::now(),
        done: progress.done,
        skipped,
        failed: progress.failed,
        excluded: progress.excluded,
        detail: Detail::Provider {
            provider: provider.clone(),
            model: model.clone(),
            input_tokens: progress.input_tokens,
            output_tokens: progress.output_tokens,
            cost_usd: progress.cost.usd(),
            cost_partial: progress.cost.is_partial(),
        },
    };
    let history_error = crate::history::append(&ctx.history_path(), &line).err();
    StageReport {
        stage,
        status,
        skipped,
        progress,
        provider,
        model,
        error,
        history_error,
    }
}

/// Whether `topic` is selected by `--topic` (all when `None`).
pub(crate) fn selected(filter: Option<&str>, topic: &str) -> bool {
    filter.is_none_or(|name| name == topic)
}

/// Whether a JSONL line belongs to a topic selected by `filter` (its `topic` field).
pub(crate) fn line_selected(filter: Option<&str>, line: &serde_json::Value) -> bool {
    line.get("topic")
        .and_then(serde_json::Value::as_str)
        .is_some_and(|topic| selected(filter, topic))
}

/// Runs `body`, a stage that with `force` regenerates the selected topics' output in
/// `path` (PIPE-3) and must plan as if that old output were gone. The old lines stay in
/// the file until the stage ends well (no error, no failed item, no Ctrl-C), and are
/// dropped only then: a refused key, a failed item or Ctrl-C never loses data, and the
/// user is told the old lines were kept beside the new ones. With `item` (the field that
/// names an item, `id` for answers), an old line whose item got a new line goes in any
/// case, so an item never has two.
///
/// # Errors
///
/// The stage's own error, else [`StageError::Data`] when the old lines cannot be
/// counted or dropped.
pub(crate) async fn replacing(
    ctx: &Context,
    tracker: &Tracker,
    (path, item): (&Path, Option<&str>),
    (topic, force): (Option<&str>, bool),
    body: impl std::future::Future<Output = Result<(), StageError>>,
) -> Result<(), StageError> {
    use crate::dataset::jsonl::{count_lines, drop_old_lines, lines_after};
    if !force {
        return body.await.map_err(|error| error.ran_with(topic, force));
    }
    let (lines, old) = count_lines(path, |line| line_selected(topic, line))?;
    let result = body.await.map_err(|error| error.ran_with(topic, force));
    if old == 0 {
        return result;
    }
    let ended_well = result.is_ok() && tracker.snapshot().failed == 0 && !ctx.cancel.is_cancelled();
    if ended_well {
        drop_old_lines(path, lines, |line| line_selected(topic, line))?;
        return result;
    }
    let mut dropped = 0;
    if let Some(field) = item {
        let name = |line: &serde_json::Value| {
            line.get(field)
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        let renewed: std::collections::HashSet<String> =
            lines_after(path, lines)?.iter().filter_map(name).collect();
        if !renewed.is_empty() {
            dropped = drop_old_lines(path, lines, |line| {
                line_selected(topic, line) && name(line).is_some_and(|n| renewed.contains(&n))
            })?;
        }
    }
    if old > dropped {
        ctx.emit(Event::Warning(format!(
            "`--force` kept {} old lines of `{}` beside the new ones because the stage did not end well; run it again with `--force` to replace them",
            old - dropped,
            path.display()
        )));
    }
    result
}

/// Reads a JSONL file, warning about skipped lines.
pub(crate) fn read<T: serde::de::DeserializeOwned>(
    ctx: &Context,
    path: &Path,
) -> Result<Vec<T>, StageError> {
    let (records, skipped) = crate::dataset::read_jsonl(path)?;
    ctx.warn_skipped(&skipped);
    Ok(records)
}

/// How one item (a topic, a subtopic) of a stage ended.
pub(crate) enum Outcome {
    /// Complete, or stopped short without failing.
    Done,
    /// Failed after its retries, with the reason.
    Failed(String),
    /// Failed in a way every item would (PIPE-15).
    Fatal(crate::llm::Error),
    /// Cancelled before it finished.
    Stopped,
}

/// Waits for every item task, counting and reporting outcomes; a fatal one cancels the
/// others through `stop` and is returned.
pub(crate) async fn collect(
    ctx: &Context,
    stage: Stage,
    tracker: &Tracker,
    mut tasks: tokio::task::JoinSet<(String, Outcome)>,
    stop: &tokio_util::sync::CancellationToken,
) -> Result<(), StageError> {
    let mut fatal = None;
    while let Some(joined) = tasks.join_next().await {
        let Ok((item, outcome)) = joined else {
            continue;
        };
        match outcome {
            Outcome::Done => tracker.update(|p| p.done += 1),
            Outcome::Stopped => {}
            Outcome::Failed(reason) => {
                tracker.update(|p| p.failed += 1);
                ctx.emit(Event::ItemFailed {
                    stage,
                    item,
                    reason,
                });
            }
            Outcome::Fatal(error) => {
                stop.cancel();
                fatal.get_or_insert(error);
            }
        }
    }
    match fatal {
        Some(error) => Err(StageError::stopped(stage, error)),
        None => Ok(()),
    }
}

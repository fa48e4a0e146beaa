//! The `subtopics` stage (PIPE-8, PIPE-17..PIPE-19): asks the `generator` for the missing
//! subtopics of each selected topic, topics in parallel up to `pipeline.concurrency`,
//! appending each accepted name at once.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use minijinja::context;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::parse::first_string_array;
use super::progress::Tracker;
use super::runner::{Outcome, Output, collect, read, run_stage, selected, start_generating};
use super::spending::Spender;
use super::stage::{Context, Stage, StageError, StageReport};
use super::templates::{Prompt, Template};
use crate::dataset::jsonl::JsonlWriter;
use crate::dataset::{RejectedKind, RejectedRecord, SubtopicRecord};
use crate::llm::ChatRequest;

/// Runs `subtopics` on `topic` (all when `None`), discarding that output first with
/// `force` (PIPE-3).
pub async fn run(ctx: &Context, topic: Option<&str>, force: bool) -> StageReport {
    run_stage(
        ctx,
        (Stage::Subtopics, jiff::Timestamp::now()),
        (topic, force),
        Output {
            path: ctx.data().subtopics(),
            item: None,
        },
        async |tracker, skipped, who| generate(ctx, topic, force, tracker, skipped, who).await,
    )
    .await
}

/// Whether any selected topic has fewer subtopics on disk than configured (PIPE-4).
///
/// # Errors
///
/// [`StageError::Data`] when `subtopics.jsonl` cannot be read.
pub fn any_short(ctx: &Context, topic: Option<&str>) -> Result<bool, StageError> {
    let (existing, _) = crate::dataset::read_jsonl::<SubtopicRecord>(&ctx.data().subtopics())?;
    Ok(ctx
        .settings
        .topics
        .iter()
        .filter(|t| selected(topic, &t.name))
        .any(|t| {
            let have = existing.iter().filter(|s| s.topic == t.name).count();
            (have as u64) < u64::from(t.subtopics)
        }))
}

/// The stage proper; with `force` the selected topics' subtopics on disk are old output
/// that [`replacing`] drops once it ends well, and count as absent.
async fn generate(
    ctx: &Context,
    topic: Option<&str>,
    force: bool,
    tracker: &Arc<Tracker>,
    skipped: &mut u64,
    who: &mut (String, String),
) -> Result<(), StageError> {
    let files = ctx.data();
    let mut existing: Vec<SubtopicRecord> = read(ctx, &files.subtopics())?;
    existing.retain(|s| !(force && selected(topic, &s.topic)));
    let rejected: Vec<RejectedRecord> = read(ctx, &files.rejected())?;
    let mut work = Vec::new();
    for t in ctx
        .settings
        .topics
        .iter()
        .filter(|t| selected(topic, &t.name))
    {
        let names: Vec<String> = existing
            .iter()
            .filter(|s| s.topic == t.name)
            .map(|s| s.subtopic.clone())
            .collect();
        if names.len() as u64 >= u64::from(t.subtopics) {
            *skipped += 1;
            continue;
        }
        let mut known: HashSet<String> = names.iter().map(|n| n.to_lowercase()).collect();
        known.extend(
            rejected
                .iter()
                .filter(|r| r.kind == RejectedKind::Subtopic && r.topic == t.name)
                .map(|r| r.subtopic.trim().to_lowercase()),
        );
        work.push((t.clone(), names.len() as u64, known));
    }
    let Some(generator) =
        start_generating(ctx, Stage::Subtopics, (work.len() as u64, *skipped), who).await?
    else {
        return Ok(());
    };
    let prompt = Arc::new(Prompt::load(&ctx.prompts(), Template::Subtopics)?);
    // Render once up front so a template error stops the stage before any request.
    if let Some((t, _, _)) = work.first() {
        prompt.render(context! { topic => t.name, description => t.description, count => 1 })?;
    }
    execute(ctx, tracker, generator, prompt, work).await
}

type Work = Vec<(crate::config::Topic, u64, HashSet<String>)>;

/// Asks for each topic's missing subtopics, topics in parallel (PIPE-19).
async fn execute(
    ctx: &Context,
    tracker: &Arc<Tracker>,
    generator: super::stage::RoleClient,
    prompt: Arc<Prompt>,
    work: Work,
) -> Result<(), StageError> {
    let files = ctx.data();
    let meter = super::spending::meter(ctx)?;
    // A reply without a JSON array is paid for and asked again, up to the retries.
    let attempts = ctx.settings.pipeline.max_retries + 1;
    let spender = Spender::open(ctx, &meter, Stage::Subtopics, &generator, attempts).await?;
    let mut bound = 0.0;
    for (t, have, _) in &work {
        let count = u64::from(t.subtopics) - have;
        let user = prompt
            .render(context! { topic => t.name, description => t.description, count => count })?;
        bound += spender.bound(&[&user]);
    }
    #[allow(clippy::cast_precision_loss)]
    spender.check_estimate(ctx, work.len() as u64, bound / work.len().max(1) as f64)?;
    let writer = Arc::new(Mutex::new(JsonlWriter::open(&files.subtopics())?));
    let permits = Arc::new(Semaphore::new(
        ctx.settings.pipeline.concurrency.max(1) as usize
    ));
    let stop = ctx.cancel.child_token();
    let max_retries = ctx.settings.pipeline.max_retries;
    let mut tasks = JoinSet::new();
    for (t, have, known) in work {
        let (permits, stop, tracker) = (permits.clone(), stop.clone(), tracker.clone());
        let (generator, prompt, writer) = (generator.clone(), prompt.clone(), writer.clone());
        let spender = spender.clone();
        tasks.spawn(async move {
            let name = t.name.clone();
            let stop_inner = stop.clone();
            let work = async move {
                let Ok(_permit) = permits.acquire().await else { return Outcome::Stopped };
                if stop_inner.is_cancelled() {
                    return Outcome::Stopped;
                }
                let wanted = u64::from(t.subtopics);
                let (mut have, mut known, mut no_new) = (have, known, 0_u32);
                while have < wanted {
                    let user = match prompt.render(context! { topic => t.name, description => t.description, count => wanted - have }) {
                        Ok(text) => text,
                        Err(error) => return Outcome::Failed(error.to_string()),
                    };
                    let Ok(reserved) = spender.admit(&[&user]) else { return Outcome::Stopped };
                    let guard = tracker.request(&format!("topic `{}`", t.name));
                    let reply = generator
                        .client
                        .chat(
                            &generator.role,
                            &ChatRequest { system: None, user },
                            |c| first_string_array(&c.text).ok_or_else(|| "no JSON array of strings in the reply".to_owned()),
                            &|e, wait| guard.on_retry(e, wait),
                        )
                        .await;
                    drop(guard);
                    spender.settle(&tracker, reserved, reply.usage);
                    let names = match reply.result {
                        Ok((_, names)) => names,
                        Err(error) if error.is_fatal() => {
                            // Before the permit is released, so no other topic starts.
                            stop_inner.cancel();
                            return Outcome::Fatal(error);
                        }
                        Err(error) => return Outcome::Failed(error.to_string()),
                    };
                    let mut records = Vec::new();
                    for name in names {
                        let name = name.trim();
                        if name.is_empty() || have + records.len() as u64 >= wanted {
                            continue;
                        }
                        if known.insert(name.to_lowercase()) {
                            records.push(SubtopicRecord { topic: t.name.clone(), subtopic: name.to_owned() });
                        }
                    }
                    if records.is_empty() {
                        no_new += 1;
                        if no_new > max_retries {
                            return Outcome::Failed(format!("no new subtopic after {no_new} requests"));
                        }
                        continue;
                    }
                    let written = writer
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .append_all(&records);
                    if let Err(error) = written {
                        return Outcome::Failed(error.to_string());
                    }
                    have += records.len() as u64;
                    tracker.update(|p| p.added += records.len() as u64);
                }
                Outcome::Done
            };
            let outcome = tokio::select! {
                () = stop.cancelled() => Outcome::Stopped,
                outcome = work => outcome,
            };
            (name, outcome)
        });
    }
    collect(ctx, Stage::Subtopics, tracker, tasks, &stop).await?;
    spender.outcome()
}

//! The `questions` stage (PIPE-4, PIPE-9, PIPE-20..PIPE-23, DDP): fills each selected
//! subtopic up to `questions_per_subtopic` with batches from the `generator`, passing
//! every batch through its topic's deduplicator. Up to `pipeline.concurrency` subtopics
//! fill at once; a topic's lock admits one batch at a time, so two subtopics filled in
//! parallel can never both keep one question.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use minijinja::context;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::parse::first_string_array;
use super::progress::Tracker;
use super::runner::{Outcome, Output, collect, read, run_stage, selected, start_generating};
use super::spending::Spender;
use super::stage::{Context, RoleClient, Stage, StageError, StageReport};
use super::templates::{Prompt, Template};
use crate::dataset::jsonl::JsonlWriter;
use crate::dataset::{QuestionRecord, RejectedKind, RejectedRecord, SubtopicRecord, question_id};
use crate::dedup::{Deduplicator, EmbeddingIndex};
use crate::llm::ChatRequest;

/// Most inputs in one embeddings request (DDP-4).
pub const EMBEDDING_CHUNK: usize = 64;

/// The reports of `questions`: the `subtopics` run it needed first (PIPE-4), if any, and
/// its own.
#[derive(Debug)]
pub struct QuestionsReports {
    /// The `subtopics` stage run first for topics short of subtopics.
    pub subtopics: Option<StageReport>,
    /// The `questions` stage.
    pub questions: StageReport,
}

impl QuestionsReports {
    /// The reports in the order the stages ran.
    pub fn iter(&self) -> impl Iterator<Item = &StageReport> {
        self.subtopics
            .iter()
            .chain(std::iter::once(&self.questions))
    }

    /// The report that decides how `questions` ended (PIPE-4: either stage failing fails
    /// it): that of the subtopics run first when it did not succeed and the questions
    /// did, else that of the questions.
    #[must_use]
    pub fn decisive(&self) -> &StageReport {
        match &self.subtopics {
            Some(sub) if !sub.succeeded() && self.questions.succeeded() => sub,
            _ => &self.questions,
        }
    }
}

impl IntoIterator for QuestionsReports {
    type Item = StageReport;
    type IntoIter =
        std::iter::Chain<std::option::IntoIter<StageReport>, std::iter::Once<StageReport>>;

    /// The reports in the order the stages ran.
    fn into_iter(self) -> Self::IntoIter {
        self.subtopics
            .into_iter()
            .chain(std::iter::once(self.questions))
    }
}

/// Runs `questions` on `topic` (all when `None`), discarding that output first with
/// `force` (PIPE-3), after completing short topics' subtopics (PIPE-4).
pub async fn run(ctx: &Context, topic: Option<&str>, force: bool) -> QuestionsReports {
    let started_at = jiff::Timestamp::now();
    let mut subtopics = None;
    if ctx.check_topic(topic).is_ok() && matches!(super::subtopics::any_short(ctx, topic), Ok(true))
    {
        subtopics = Some(super::subtopics::run(ctx, topic, false).await);
    }
    let questions = run_stage(
        ctx,
        (Stage::Questions, started_at),
        (topic, force),
        Output {
            path: ctx.data().questions(),
            item: None,
        },
        async |tracker, skipped, who| generate(ctx, topic, force, tracker, skipped, who).await,
    )
    .await;
    QuestionsReports {
        subtopics,
        questions,
    }
}

/// A topic's deduplicator, and the texts whose embeddings seed it once it needs them.
struct TopicState {
    dedup: Deduplicator,
    seeds: Vec<String>,
}

struct Shared {
    generator: RoleClient,
    generator_spend: Arc<Spender>,
    embedder: Option<(RoleClient, Arc<Spender>)>,
    prompt: Prompt,
    writer: Mutex<JsonlWriter>,
    tracker: Arc<Tracker>,
    batch_size: u64,
    max_retries: u32,
    embedding_threshold: f64,
}

struct Subtopic {
    topic: String,
    description: String,
    name: String,
    quota: u64,
    accepted: Vec<String>,
    state: Arc<tokio::sync::Mutex<TopicState>>,
}

/// The stage proper; with `force` the selected topics' questions on disk are old output
/// that [`replacing`] drops once it ends well, and count as absent (also for dedup).
async fn generate(
    ctx: &Context,
    topic: Option<&str>,
    force: bool,
    tracker: &Arc<Tracker>,
    skipped: &mut u64,
    who: &mut (String, String),
) -> Result<(), StageError> {
    let work = plan(ctx, topic, force, skipped)?;
    let Some(generator) =
        start_generating(ctx, Stage::Questions, (work.len() as u64, *skipped), who).await?
    else {
        return Ok(());
    };
    // Boxed: the budget's checks make the request loop a large future.
    Box::pin(execute(ctx, tracker, generator, work)).await
}

/// The subtopics to fill, each with its topic's shared deduplicator; counts the full ones
/// in `skipped`.
fn plan(
    ctx: &Context,
    topic: Option<&str>,
    force: bool,
    skipped: &mut u64,
) -> Result<Vec<Subtopic>, StageError> {
    let files = ctx.data();
    let subtopics: Vec<SubtopicRecord> = read(ctx, &files.subtopics())?;
    let mut questions: Vec<QuestionRecord> = read(ctx, &files.questions())?;
    questions.retain(|q| !(force && selected(topic, &q.topic)));
    let rejected: Vec<RejectedRecord> = read(ctx, &files.rejected())?;
    let pipeline = &ctx.settings.pipeline;

    let mut by_subtopic: HashMap<(&str, &str), Vec<String>> = HashMap::new();
    for q in &questions {
        by_subtopic
            .entry((q.topic.as_str(), q.subtopic.as_str()))
            .or_default()
            .push(q.question.clone());
    }
    let mut states = HashMap::new();
    let mut work = Vec::new();
    let mut seen = HashSet::new();
    for record in &subtopics {
        let Some(t) = ctx.settings.topics.iter().find(|t| t.name == record.topic) else {
            continue;
        };
        if !selected(topic, &t.name)
            || !seen.insert((record.topic.clone(), record.subtopic.clone()))
        {
            continue;
        }
        let rejected_subtopic = rejected.iter().any(|r| {
            r.kind == RejectedKind::Subtopic
                && r.topic == t.name
                && r.subtopic
                    .trim()
                    .eq_ignore_ascii_case(record.subtopic.trim())
        });
        if rejected_subtopic {
            continue;
        }
        let state = states
            .entry(t.name.clone())
            .or_insert_with(|| {
                let mut dedup = Deduplicator::new(pipeline.dedup_threshold);
                let mut seeds = Vec::new();
                let rejected_texts = rejected
                    .iter()
                    .filter(|r| r.kind == RejectedKind::Question && r.topic == t.name)
                    .filter_map(|r| r.text.clone());
                let accepted_texts = questions
                    .iter()
                    .filter(|q| q.topic == t.name)
                    .map(|q| q.question.clone());
                for text in accepted_texts.chain(rejected_texts) {
                    dedup.insert_text(&text);
                    seeds.push(text);
                }
                Arc::new(tokio::sync::Mutex::new(TopicState { dedup, seeds }))
            })
            .clone();
        let accepted = by_subtopic
            .remove(&(record.topic.as_str(), record.subtopic.as_str()))
            .unwrap_or_default();
        let quota = u64::from(t.questions_per_subtopic);
        if accepted.len() as u64 >= quota {
            *skipped += 1;
            continue;
        }
        work.push(Subtopic {
            topic: t.name.clone(),
            description: t.description.clone(),
            name: record.subtopic.clone(),
            quota,
            accepted,
            state,
        });
    }
    Ok(work)
}

/// Fills the subtopics, up to `pipeline.concurrency` at once.
async fn execute(
    ctx: &Context,
    tracker: &Arc<Tracker>,
    generator: RoleClient,
    work: Vec<Subtopic>,
) -> Result<(), StageError> {
    let files = ctx.data();
    let pipeline = &ctx.settings.pipeline;
    let meter = super::spending::meter(ctx)?;
    let embedder = match ctx.settings.roles.embedder.as_ref() {
        Some(role) => {
            let client = ctx.role_client("embedder", Some(role)).await?;
            // Only a decoded reply counts its tokens: one paid attempt per request.
            let spend = Spender::open(ctx, &meter, Stage::Questions, &client, 1).await?;
            Some((client, spend))
        }
        None => None,
    };
    // A reply without a JSON array is paid for and asked again, up to the retries.
    let attempts = pipeline.max_retries + 1;
    let generator_spend =
        Spender::open(ctx, &meter, Stage::Questions, &generator, attempts).await?;
    let prompt = Prompt::load(&ctx.prompts(), Template::Questions)?;
    if let Some(first) = work.first() {
        prompt.render(context! {
            topic => first.topic, description => first.description, subtopic => first.name,
            count => 1, accepted => first.accepted,
        })?;
    }
    let batch_size = u64::from(pipeline.question_batch_size.max(1));
    let mut bound = 0.0;
    for subtopic in &work {
        let missing = subtopic.quota - subtopic.accepted.len() as u64;
        let user = prompt.render(context! {
            topic => subtopic.topic, description => subtopic.description, subtopic => subtopic.name,
            count => missing.min(batch_size), accepted => subtopic.accepted,
        })?;
        #[allow(clippy::cast_precision_loss)]
        let requests = missing.div_ceil(batch_size) as f64;
        bound += requests * generator_spend.bound(&[&user]);
    }
    #[allow(clippy::cast_precision_loss)]
    generator_spend.check_estimate(ctx, work.len() as u64, bound / work.len().max(1) as f64)?;
    let shared = Arc::new(Shared {
        generator_spend,
        generator,
        embedder,
        prompt,
        writer: Mutex::new(JsonlWriter::open(&files.questions())?),
        tracker: tracker.clone(),
        batch_size,
        max_retries: pipeline.max_retries,
        embedding_threshold: pipeline.embedding_threshold,
    });
    let permits = Arc::new(Semaphore::new(pipeline.concurrency.max(1) as usize));
    let stop = ctx.cancel.child_token();
    let mut tasks = JoinSet::new();
    for subtopic in work {
        let (permits, stop, shared) = (permits.clone(), stop.clone(), shared.clone());
        tasks.spawn(async move {
            let item = format!("subtopic `{}` of `{}`", subtopic.name, subtopic.topic);
            let stop_inner = stop.clone();
            let work = async move {
                let Ok(_permit) = permits.acquire().await else {
                    return Outcome::Stopped;
                };
                if stop_inner.is_cancelled() {
                    return Outcome::Stopped;
                }
                let outcome = fill(&shared, subtopic).await;
                if matches!(outcome, Outcome::Fatal(_)) {
                    // Before the permit is released, so no other subtopic starts.
                    stop_inner.cancel();
                }
                outcome
            };
            let outcome = tokio::select! {
                () = stop.cancelled() => Outcome::Stopped,
                outcome = work => outcome,
            };
            (item, outcome)
        });
    }
    collect(ctx, Stage::Questions, tracker, tasks, &stop).await?;
    shared.generator_spend.outcome()
}

/// Fills one subtopic, batch after batch (PIPE-22).
async fn fill(shared: &Shared, mut subtopic: Subtopic) -> Outcome {
    let tracker = &shared.tracker;
    let mut no_progress = 0_u32;
    while (subtopic.accepted.len() as u64) < subtopic.quota {
        let missing = subtopic.quota - subtopic.accepted.len() as u64;
        let user = match shared.prompt.render(context! {
            topic => subtopic.topic, description => subtopic.description, subtopic => subtopic.name,
            count => missing.min(shared.batch_size), accepted => subtopic.accepted,
        }) {
            Ok(text) => text,
            Err(error) => return Outcome::Failed(error.to_string()),
        };
        let Ok(reserved) = shared.generator_spend.admit(&[&user]) else {
            return Outcome::Stopped;
        };
        let guard = tracker.request(&format!(
            "subtopic `{}` of `{}`",
            subtopic.name, subtopic.topic
        ));
        let reply = shared
            .generator
            .client
            .chat(
                &shared.generator.role,
                &ChatRequest { system: None, user },
                |c| {
                    first_string_array(&c.text)
                        .ok_or_else(|| "no JSON array of strings in the reply".to_owned())
                },
                &|e, wait| guard.on_retry(e, wait),
            )
            .await;
        drop(guard);
        shared
            .generator_spend
            .settle(tracker, reserved, reply.usage);
        let candidates: Vec<String> = match reply.result {
            Ok((_, texts)) => texts
                .into_iter()
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty())
                .collect(),
            Err(error) if error.is_fatal() => return Outcome::Fatal(error),
            Err(error) => return Outcome::Failed(error.to_string()),
        };
        let added = match admit(shared, &mut subtopic, &candidates, missing).await {
            Ok(added) => added,
            Err(outcome) => return outcome,
        };
        if added == 0 {
            no_progress += 1;
            if no_progress >= shared.max_retries.max(1) {
                return Outcome::Done;
            }
        } else {
            no_progress = 0;
        }
    }
    Outcome::Done
}

/// Passes a batch through the topic's deduplicator, holding the topic's lock (PIPE-23),
/// and appends the survivors up to `missing`. Returns how many were added.
async fn admit(
    shared: &Shared,
    subtopic: &mut Subtopic,
    candidates: &[String],
    missing: u64,
) -> Result<u64, Outcome> {
    let mut state = subtopic.state.lock().await;
    let item = format!(
        "embeddings of subtopic `{}` of `{}`",
        subtopic.name, subtopic.topic
    );
    let passed = state.dedup.lexical_pass(candidates);
    let mut survivors: Vec<String> = passed.into_iter().map(|i| candidates[i].clone()).collect();
    let mut vectors: Vec<Option<Vec<f32>>> = vec![None; survivors.len()];
    if let Some((embedder, spend)) = &shared.embedder {
        if !survivors.is_empty() {
            if state.dedup.embeddings().is_none() {
                let seeds = std::mem::take(&mut state.seeds);
                let seed_vectors = embed(shared, (embedder, spend), &item, &seeds).await?;
                state.dedup.set_embeddings(EmbeddingIndex::new(
                    shared.embedding_threshold,
                    seed_vectors,
                ));
            }
            let fresh = embed(shared, (embedder, spend), &item, &survivors).await?;
            let keep = state
                .dedup
                .embeddings()
                .map(|index| index.pass(&fresh))
                .unwrap_or_default();
            let mut kept = Vec::new();
            let mut kept_vectors = Vec::new();
            for ((text, vector), keep) in survivors.into_iter().zip(fresh).zip(keep) {
                if keep {
                    kept.push(text);
                    kept_vectors.push(Some(vector));
                }
            }
            survivors = kept;
            vectors = kept_vectors;
        }
    }
    let take = usize::try_from(missing)
        .unwrap_or(usize::MAX)
        .min(survivors.len());
    let records: Vec<QuestionRecord> = survivors[..take]
        .iter()
        .map(|text| QuestionRecord {
            id: question_id(&subtopic.topic, &subtopic.name, text),
            topic: subtopic.topic.clone(),
            subtopic: subtopic.name.clone(),
            question: text.clone(),
        })
        .collect();
    let written = shared
        .writer
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .append_all(&records);
    if let Err(error) = written {
        return Err(Outcome::Failed(error.to_string()));
    }
    for (text, vector) in survivors.into_iter().zip(vectors).take(take) {
        state.dedup.commit(&text, vector);
        subtopic.accepted.push(text);
    }
    shared.tracker.update(|p| p.added += take as u64);
    Ok(take as u64)
}

/// Embeds `texts` in chunks of [`EMBEDDING_CHUNK`] (DDP-4); a failure fails the batch
/// (DDP-5), a refused key stops the stage. `item` names the batch in wait reports.
async fn embed(
    shared: &Shared,
    (embedder, spend): (&RoleClient, &Spender),
    item: &str,
    texts: &[String],
) -> Result<Vec<Vec<f32>>, Outcome> {
    let tracker = &shared.tracker;
    let mut vectors = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(EMBEDDING_CHUNK) {
        let Ok(reserved) = spend.admit_embeddings(chunk) else {
            return Err(Outcome::Stopped);
        };
        let guard = tracker.request(item);
        let reply = embedder
            .client
            .embed(&embedder.role.model, chunk, &|e, wait| {
                guard.on_retry(e, wait);
            })
            .await;
        drop(guard);
        spend.settle(tracker, reserved, reply.usage);
        match reply.result {
            Ok(mut chunk_vectors) => vectors.append(&mut chunk_vectors),
            Err(error) if error.is_fatal() => return Err(Outcome::Fatal(error)),
            Err(error) => return Err(Outcome::Failed(format!("embedding check failed: {error}"))),
        }
    }
    Ok(vectors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Status::{self, Failed, Interrupted};
    use crate::pipeline::Progress;

    fn report(stage: Stage, status: Status) -> StageReport {
        StageReport {
            stage,
            status,
            skipped: 0,
            progress: Progress::default(),
            provider: String::new(),
            model: String::new(),
            error: None,
            history_error: None,
        }
    }

    #[test]
    fn the_subtopics_run_first_decides_only_when_it_failed_and_the_questions_succeeded() {
        for (sub, questions, decisive) in [
            (None, Status::Ok, Stage::Questions),
            (Some(Status::Ok), Status::Ok, Stage::Questions),
            (Some(Failed), Status::Ok, Stage::Subtopics),
            (Some(Interrupted), Status::Ok, Stage::Subtopics),
            (Some(Status::Ok), Failed, Stage::Questions),
            (Some(Failed), Failed, Stage::Questions),
            (Some(Failed), Interrupted, Stage::Questions),
        ] {
            let reports = QuestionsReports {
                subtopics: sub.map(|status| report(Stage::Subtopics, status)),
                questions: report(Stage::Questions, questions),
            };
            assert_eq!(reports.decisive().stage, decisive, "{sub:?} {questions:?}");
            let order: Vec<Stage> = reports.iter().map(|r| r.stage).collect();
            let owned: Vec<Stage> = reports.into_iter().map(|r| r.stage).collect();
            assert_eq!(order, owned);
            assert_eq!(order.last(), Some(&Stage::Questions));
            assert_eq!(order.len(), 1 + usize::from(sub.is_some()));
        }
    }
}

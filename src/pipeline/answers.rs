//! The `answers` stage (PIPE-24..PIPE-27): sends every selected question without an
//! answer to the `parent` role, at most `pipeline.concurrency` at once, and appends each
//! reply as one record, usable or excluded, as soon as it arrives.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use minijinja::context;
use serde::Deserialize;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::progress::{Event, Tracker};
use super::runner::{Output, read, run_stage, selected};
use super::spending::Spender;
use super::stage::{Context, RoleClient, Stage, StageError, StageReport};
use super::templates::{Prompt, Template};
use crate::budget::estimate::input_bound;
use crate::config::Role;
use crate::dataset::jsonl::JsonlWriter;
use crate::dataset::{AnswerMeta, AnswerRecord, Exclusion, Message, QuestionRecord};
use crate::llm::{Attempted, ChatRequest, Completion, ReasoningKind, Stop};

/// What `answers` reads of an existing answer: its question ID and topic.
#[derive(Deserialize)]
struct Answered {
    id: String,
    #[serde(default)]
    topic: Option<String>,
}

/// Runs `answers` on `topic` (all when `None`), discarding that output first with
/// `force` (PIPE-3).
pub async fn run(ctx: &Context, topic: Option<&str>, force: bool) -> StageReport {
    run_stage(
        ctx,
        (Stage::Answers, jiff::Timestamp::now()),
        (topic, force),
        Output {
            path: ctx.data().answers(),
            item: Some("id"),
        },
        async |tracker, skipped, who| generate(ctx, topic, force, tracker, skipped, who).await,
    )
    .await
}

/// Why an answer is excluded, checked in the order of PIPE-26.
#[must_use]
pub fn exclusion(role: &Role, completion: &Completion) -> Option<Exclusion> {
    if completion.stop == Stop::Length {
        Some(Exclusion::Truncated)
    } else if completion.stop == Stop::Refusal {
        Some(Exclusion::Refused)
    } else if completion.text.trim().is_empty() {
        Some(Exclusion::Empty)
    } else if role.reasoning && completion.reasoning_kind != Some(ReasoningKind::Raw) {
        Some(Exclusion::NoRawReasoning)
    } else {
        None
    }
}

/// The record of one answer (DAT-4..DAT-7).
#[must_use]
pub fn record(
    question: &QuestionRecord,
    system: Option<&str>,
    role: &Role,
    completion: Completion,
) -> AnswerRecord {
    let excluded = exclusion(role, &completion);
    let mut messages = Vec::with_capacity(3);
    if let Some(system) = system {
        messages.push(Message {
            role: "system".into(),
            content: system.to_owned(),
            reasoning_content: None,
        });
    }
    messages.push(Message {
        role: "user".into(),
        content: question.question.clone(),
        reasoning_content: None,
    });
    messages.push(Message {
        role: "assistant".into(),
        content: completion.text,
        reasoning_content: completion.reasoning,
    });
    AnswerRecord {
        id: question.id.clone(),
        topic: question.topic.clone(),
        subtopic: question.subtopic.clone(),
        messages,
        meta: AnswerMeta {
            model: role.model.clone(),
            input_tokens: completion.usage.input_tokens,
            output_tokens: completion.usage.output_tokens,
            finish_reason: completion.finish_reason,
            reasoning_kind: completion.reasoning_kind,
            excluded,
            edited: false,
        },
    }
}

/// A question, its reply and what its request reserved of the budget.
type Reply = (
    QuestionRecord,
    Attempted<(Completion, ())>,
    crate::budget::Reservation,
);

/// The stage proper; with `force` the selected topics' answers on disk are old output
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
    let questions: Vec<QuestionRecord> = read(ctx, &files.questions())?;
    let answered: HashSet<String> = read::<Answered>(ctx, &files.answers())?
        .into_iter()
        .filter(|a| !(force && a.topic.as_deref().is_some_and(|t| selected(topic, t))))
        .map(|a| a.id)
        .collect();
    let topics: HashMap<&str, &str> = ctx
        .settings
        .topics
        .iter()
        .map(|t| (t.name.as_str(), t.description.as_str()))
        .collect();
    let mut todo = Vec::new();
    let mut queued = HashSet::new();
    for question in questions {
        if !selected(topic, &question.topic) || !topics.contains_key(question.topic.as_str()) {
            continue;
        }
        if answered.contains(&question.id) {
            *skipped += 1;
        } else if queued.insert(question.id.clone()) {
            todo.push(question);
        }
    }

    let parent = ctx
        .role_client("parent", ctx.settings.roles.parent.as_ref())
        .await?;
    *who = (parent.provider.clone(), parent.role.model.clone());
    let rule = crate::llm::reasoning::rule(parent.protocol, &parent.role.model);
    if parent.role.reasoning && rule.never_raw() {
        ctx.emit(Event::Warning(format!(
            "`{}` does not return raw reasoning ({rule}): with `reasoning = true` every answer will be excluded as `no_raw_reasoning`",
            parent.role.model
        )));
    }
    let prompt = Prompt::load(&ctx.prompts(), Template::AnswerSystem)?;
    let mut systems: HashMap<String, Arc<str>> = HashMap::new();
    for question in &todo {
        if !systems.contains_key(&question.topic) {
            let description = topics
                .get(question.topic.as_str())
                .copied()
                .unwrap_or_default();
            let text =
                prompt.render(context! { topic => question.topic, description => description })?;
            systems.insert(question.topic.clone(), text.into());
        }
    }
    ctx.emit(Event::Started {
        stage: Stage::Answers,
        total: todo.len() as u64,
        skipped: *skipped,
    });
    if todo.is_empty() {
        return Ok(());
    }
    // Boxed: the budget's checks make the request loop a large future.
    Box::pin(execute(ctx, tracker, &parent, todo, &systems)).await
}

/// Sends the questions, at most `pipeline.concurrency` at once, and appends each reply as
/// it arrives (group commit of whatever arrived together).
async fn execute(
    ctx: &Context,
    tracker: &Arc<Tracker>,
    parent: &RoleClient,
    todo: Vec<QuestionRecord>,
    systems: &HashMap<String, Arc<str>>,
) -> Result<(), StageError> {
    let meter = super::spending::meter(ctx)?;
    // A reply is never rejected and asked again, so each request is paid for once.
    let spender = Spender::open(ctx, &meter, Stage::Answers, parent, 1).await?;
    let bounds: Vec<f64> = todo
        .iter()
        .filter_map(|question| {
            let system = systems.get(&question.topic).map_or("", |s| &**s);
            spender.worst_case(input_bound(&[system, &question.question]), None)
        })
        .collect();
    #[allow(clippy::cast_precision_loss)]
    let bound = bounds.iter().sum::<f64>() / bounds.len().max(1) as f64;
    spender.check_estimate(ctx, todo.len() as u64, bound)?;
    let mut writer = JsonlWriter::open(&ctx.data().answers())?;
    let include_system = ctx.settings.pipeline.include_system_prompt;
    let permits = Arc::new(Semaphore::new(
        ctx.settings.pipeline.concurrency.max(1) as usize
    ));
    let stop = ctx.cancel.child_token();
    let mut tasks = spawn(tracker, (parent, &spender), todo, systems, &stop, &permits);
    let mut fatal = None;
    while let Some(first) = tasks.join_next().await {
        let mut batch = vec![first];
        while let Some(next) = tasks.try_join_next() {
            batch.push(next);
        }
        let mut records = Vec::new();
        let mut failed = 0;
        for joined in batch {
            let Ok(Some((question, reply, reserved))) = joined else {
                continue;
            };
            spender.settle(tracker, reserved, reply.usage);
            match reply.result {
                Ok((completion, ())) => {
                    let system = systems.get(&question.topic).filter(|_| include_system);
                    records.push(record(
                        &question,
                        system.map(|s| &**s),
                        &parent.role,
                        completion,
                    ));
                }
                Err(error) if error.is_fatal() => {
                    if fatal.is_none() {
                        stop.cancel();
                        fatal = Some(error);
                    }
                }
                Err(error) => {
                    failed += 1;
                    ctx.emit(Event::ItemFailed {
                        stage: Stage::Answers,
                        item: format!("question `{}`", question.id),
                        reason: error.to_string(),
                    });
                }
            }
        }
        if let Err(error) = writer.append_all(&records) {
            stop.cancel();
            tasks.shutdown().await;
            if let Some(fatal) = &fatal {
                // PIPE-15: the stop and the failed save are both reported.
                ctx.emit(Event::Warning(format!("stopped: {fatal}")));
            }
            return Err(error.into());
        }
        let excluded = records.iter().filter(|r| r.meta.excluded.is_some()).count() as u64;
        tracker.update(|p| {
            p.done += records.len() as u64;
            p.added += records.len() as u64;
            p.excluded += excluded;
            p.failed += failed;
        });
    }
    match fatal {
        Some(error) => Err(StageError::stopped(Stage::Answers, error)),
        None => spender.outcome(),
    }
}

/// Spawns one task per question; each waits for a permit, is admitted by the budget, sends
/// its request and hands back the reply, or nothing once `stop` is cancelled (PIPE-16) or
/// the budget refused it.
fn spawn(
    tracker: &Arc<Tracker>,
    (parent, spender): (&RoleClient, &Arc<Spender>),
    todo: Vec<QuestionRecord>,
    systems: &HashMap<String, Arc<str>>,
    stop: &tokio_util::sync::CancellationToken,
    permits: &Arc<Semaphore>,
) -> JoinSet<Option<Reply>> {
    let mut tasks: JoinSet<Option<Reply>> = JoinSet::new();
    for question in todo {
        let (permits, stop, tracker) = (permits.clone(), stop.clone(), tracker.clone());
        let (client, role) = (parent.client.clone(), parent.role.clone());
        let spender = spender.clone();
        let system = systems.get(&question.topic).cloned();
        tasks.spawn(async move {
            let work = async {
                let _permit = permits.acquire().await.ok()?;
                if stop.is_cancelled() {
                    return None;
                }
                let reserved = spender
                    .admit(&[system.as_deref().unwrap_or(""), &question.question])
                    .ok()?;
                let guard = tracker.request(&format!("question `{}`", question.id));
                let request = ChatRequest {
                    system: system.map(|s| s.to_string()),
                    user: question.question.clone(),
                };
                let reply = client
                    .chat(&role, &request, |_| Ok(()), &|e, wait| {
                        guard.on_retry(e, wait);
                    })
                    .await;
                drop(guard);
                if reply
                    .result
                    .as_ref()
                    .is_err_and(crate::llm::Error::is_fatal)
                {
                    // Before the permit is released, so no other request starts.
                    stop.cancel();
                }
                Some((question, reply, reserved))
            };
            tokio::select! {
                () = stop.cancelled() => None,
                reply = work => reply,
            }
        });
    }

    tasks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Usage;

    fn completion(text: &str, stop: Stop, kind: Option<ReasoningKind>) -> Completion {
        Completion {
            text: text.into(),
            reasoning: kind.map(|_| "r".into()),
            reasoning_kind: kind,
            finish_reason: Some("x".into()),
            stop,
            usage: Usage::default(),
        }
    }

    #[test]
    fn exclusion_order() {
        let mut role = Role {
            provider: "p".into(),
            model: "m".into(),
            reasoning: true,
            max_tokens: 10,
            temperature: None,
            reasoning_effort: None,
            thinking_budget: None,
        };
        assert_eq!(
            exclusion(&role, &completion("", Stop::Length, None)),
            Some(Exclusion::Truncated)
        );
        assert_eq!(
            exclusion(&role, &completion("", Stop::Refusal, None)),
            Some(Exclusion::Refused)
        );
        assert_eq!(
            exclusion(&role, &completion(" \n", Stop::Normal, None)),
            Some(Exclusion::Empty)
        );
        assert_eq!(
            exclusion(
                &role,
                &completion("a", Stop::Normal, Some(ReasoningKind::Summary))
            ),
            Some(Exclusion::NoRawReasoning)
        );
        assert_eq!(
            exclusion(
                &role,
                &completion("a", Stop::Normal, Some(ReasoningKind::Raw))
            ),
            None
        );
        role.reasoning = false;
        assert_eq!(exclusion(&role, &completion("a", Stop::Normal, None)), None);
    }
}

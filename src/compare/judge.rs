//! Judging on this machine after the child answered (CMP-13..CMP-19): per question the
//! judge role sees the question and both answers, reasoning stripped, as A and B in the
//! drawn order (and again swapped for the sample of [`super::order::swap_sample`]); a reply
//! that does not parse is asked once more; a child error is never sent (a loss). At most
//! `pipeline.concurrency` questions at once; each question's line is appended to the
//! verdicts file as soon as it is judged, so Ctrl-C keeps what was judged and
//! `--rejudge` asks only for the rest.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::order::{self, Order, Outcome};
use super::setup::{ChildAnswer, Question, Setup};
use super::verdict::{self, Judged, VerdictLine};
use crate::dataset::jsonl::JsonlWriter;
use crate::llm::{self, ChatRequest, Client, Role};
use crate::pipeline::templates::Prompt;

/// What the judge is told of a child answer cut at the token limit (CMP-13).
pub const CUT_MARK: &str = "[this answer was cut off at its token limit]";

/// Reasoning blocks removed before the judge sees an answer: `<think>`, `<thinking>`,
/// `<reasoning>`, `<reflection>` blocks anywhere in it, and text before a lone closing
/// `</think>` (a template that pre-fills the opening tag).
#[must_use]
pub fn strip_reasoning(text: &str) -> String {
    let (_, mut text) = llm::reasoning::split_think(text);
    for tag in ["think", "thinking", "reasoning", "reflection"] {
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        while let Some(start) = text.find(&open) {
            let Some(len) = text[start..].find(&close) else {
                // An unclosed block runs to the end: the answer never came.
                text.truncate(start);
                break;
            };
            text.replace_range(start..start + len + close.len(), "");
        }
    }
    text.trim().to_owned()
}

/// The judge: its client, role settings and prompt.
#[derive(Debug, Clone)]
pub struct Judge {
    /// The provider's client.
    pub client: Arc<Client>,
    /// The judge role.
    pub role: Role,
    /// `prompts/judge.txt`.
    pub prompt: Prompt,
    /// At most this many requests at once.
    pub concurrency: usize,
    /// The budget of its requests (issue 20).
    pub budget: super::budget::JudgeBudget,
    /// Where each request's tokens go (MET-9: stage `compare`, the judge's model).
    pub events: super::Events,
}

/// Why judging stopped before every question had its verdict.
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    /// The provider failed a request after its retries.
    #[error("the judge failed on question `{id}`: {source}")]
    Provider {
        /// The question.
        id: String,
        /// The provider's error.
        #[source]
        source: llm::Error,
    },
    /// The prompt did not render.
    #[error(transparent)]
    Template(#[from] crate::pipeline::templates::TemplateError),
    /// The verdicts file could not be written.
    #[error(transparent)]
    Write(#[from] crate::dataset::jsonl::JsonlError),
    /// Ctrl-C.
    #[error("judging interrupted")]
    Cancelled,
    /// The budget's hard cap: the next request could pass it (issue 20).
    #[error(
        "stopped at the budget: ${:.4} spent, and the next judge request could cost up to ${:.4} with ${:.4} in flight, past the cap of ${:.4} (`budget.max_usd`); raise the cap",
        .0.spent, .0.next, .0.in_flight, .0.max_usd
    )]
    CapReached(crate::budget::CapReached),
}

/// The answers as A and B for `order`.
fn labelled<'a>(order: Order, child: &'a str, parent: &'a str) -> (&'a str, &'a str) {
    match order {
        Order::ChildA => (child, parent),
        Order::ParentA => (parent, child),
    }
}

impl Judge {
    /// Reports the tokens of one request, its retries included, and their cost.
    fn spent(&self, usage: llm::Usage) {
        super::emit(
            &self.events,
            super::CompareEvent::Spent {
                model: self.role.model.clone(),
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                cost_usd: self.budget.price.map(|price| price.cost(usage)),
            },
        );
    }

    /// One judgement in `order`: asked once more when the reply does not parse.
    pub(super) async fn once(
        &self,
        question: &Question,
        child: &str,
        order: Order,
    ) -> Result<Judged, JudgeError> {
        let parent = strip_reasoning(&question.parent_answer);
        let (a, b) = labelled(order, child, &parent);
        let user = self.prompt.render(minijinja::context! {
            question => question.user,
            answer_a => a,
            answer_b => b,
        })?;
        let request = ChatRequest { system: None, user };
        let mut why = String::new();
        for attempt in 1..=2 {
            let reserved = self
                .budget
                .admit(&request.user)
                .map_err(JudgeError::CapReached)?;
            let attempted = self
                .client
                .chat(&self.role, &request, |_| Ok(()), &|_, _| {})
                .await;
            self.budget.settle(reserved, attempted.usage);
            self.spent(attempted.usage);
            let (completion, ()) = attempted.result.map_err(|source| JudgeError::Provider {
                id: question.id.clone(),
                source,
            })?;
            match verdict::parse(&completion.text) {
                Ok(parsed) => {
                    return Ok(Judged {
                        order,
                        verdict: Some(parsed.verdict),
                        result: order::outcome(order, parsed.verdict),
                        reason: parsed.reason,
                        attempts: attempt,
                    });
                }
                Err(reason) => why = reason,
            }
        }
        Ok(Judged {
            order,
            verdict: None,
            result: Outcome::Unparsed,
            reason: format!("unparsed: {why}"),
            attempts: 2,
        })
    }

    /// The line of question `index` of `setup`.
    async fn line(
        &self,
        setup: &Setup,
        index: usize,
        swap: bool,
        answer: Option<&ChildAnswer>,
    ) -> Result<VerdictLine, JudgeError> {
        let question = &setup.questions[index];
        let Some(answer) = answer.filter(|a| a.error.is_none()) else {
            return Ok(VerdictLine {
                id: question.id.clone(),
                result: Outcome::Loss,
                first: None,
                swapped: None,
                flipped: false,
                child_error: true,
            });
        };
        let mut child = strip_reasoning(&answer.text);
        if answer.cut {
            child = format!("{child}\n\n{CUT_MARK}");
        }
        let drawn = order::order(setup.seed, index);
        let first = self.once(question, &child, drawn).await?;
        let swapped = if swap {
            Some(self.once(question, &child, drawn.swapped()).await?)
        } else {
            None
        };
        let (result, flipped) = order::combined(first.result, swapped.as_ref().map(|j| j.result));
        Ok(VerdictLine {
            id: question.id.clone(),
            result,
            first: Some(first),
            swapped,
            flipped,
            child_error: false,
        })
    }
}

/// Judges every question of `setup` that `done` lacks, appending each line to `path` as it
/// is judged; returns the lines judged now. On an error or Ctrl-C the lines judged so far
/// are in the file.
///
/// # Errors
///
/// [`JudgeError`]; [`JudgeError::Cancelled`] on Ctrl-C.
#[allow(clippy::implicit_hasher, reason = "the flow's maps")]
pub async fn judge_missing(
    judge: &Judge,
    setup: &Arc<Setup>,
    answers: &Arc<HashMap<String, ChildAnswer>>,
    done: &HashSet<String>,
    path: &Path,
    cancel: &CancellationToken,
    on_line: &(dyn Fn(&VerdictLine) + Sync),
) -> Result<Vec<VerdictLine>, JudgeError> {
    let mut writer = JsonlWriter::open(path)?;
    let swaps = order::swap_sample(setup.seed, setup.questions.len());
    let permits = Arc::new(Semaphore::new(judge.concurrency.max(1)));
    let mut tasks: JoinSet<Result<VerdictLine, JudgeError>> = JoinSet::new();
    for (index, question) in setup.questions.iter().enumerate() {
        if done.contains(&question.id) {
            continue;
        }
        let (judge, setup, answers, permits) = (
            judge.clone(),
            setup.clone(),
            answers.clone(),
            permits.clone(),
        );
        let swap = swaps[index];
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await;
            let id = &setup.questions[index].id;
            judge.line(&setup, index, swap, answers.get(id)).await
        });
    }
    let mut lines = Vec::new();
    loop {
        let next = tokio::select! {
            () = cancel.cancelled() => {
                tasks.abort_all();
                return Err(JudgeError::Cancelled);
            }
            next = tasks.join_next() => next,
        };
        let Some(joined) = next else { break };
        match joined {
            Ok(Ok(line)) => {
                writer.append(&line)?;
                on_line(&line);
                lines.push(line);
            }
            Ok(Err(error)) => {
                tasks.abort_all();
                return Err(error);
            }
            Err(_) => {}
        }
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_blocks_are_stripped_wherever_they_are() {
        let table = [
            ("<think>hmm</think>Paris.", "Paris."),
            ("hmm</think>\nParis.", "Paris."),
            ("Paris.<thinking>x</thinking> Yes.", "Paris. Yes."),
            ("<reasoning>a</reasoning>B<reflection>c</reflection>", "B"),
            ("Answer <think>never closed", "Answer"),
            ("No reasoning here.", "No reasoning here."),
        ];
        for (text, expected) in table {
            assert_eq!(strip_reasoning(text), expected, "{text}");
        }
    }

    #[test]
    fn the_order_decides_which_answer_is_a() {
        assert_eq!(labelled(Order::ChildA, "c", "p"), ("c", "p"));
        assert_eq!(labelled(Order::ParentA, "c", "p"), ("p", "c"));
    }
}

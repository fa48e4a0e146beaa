//! One typed record per JSONL file (DAT-1, DAT-2, DAT-4, DAT-8). Field names are the
//! file format; changing one breaks existing projects.

use serde::{Deserialize, Serialize};

use crate::llm::ReasoningKind;

/// A line of `subtopics.jsonl` (DAT-1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubtopicRecord {
    /// Topic name.
    pub topic: String,
    /// Subtopic name.
    pub subtopic: String,
}

/// A line of `questions.jsonl` (DAT-2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionRecord {
    /// Stable ID (DAT-3).
    pub id: String,
    /// Topic name.
    pub topic: String,
    /// Subtopic name.
    pub subtopic: String,
    /// Question text.
    pub question: String,
}

/// One chat message in Axolotl's `chat_template` format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// Text.
    pub content: String,
    /// The assistant's reasoning, when obtained (DAT-5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
}

/// Why an answer is kept out of training (PIPE-26), in checking order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Exclusion {
    /// Generation stopped at the token limit.
    Truncated,
    /// The provider refused or a content filter stopped it.
    Refused,
    /// No answer text once reasoning is removed.
    Empty,
    /// Reasoning was asked for, but the answer carries no raw reasoning.
    NoRawReasoning,
}

impl Exclusion {
    /// The reason code as written in `meta.excluded`.
    #[must_use]
    pub fn code(self) -> &'static str {
        match self {
            Self::Truncated => "truncated",
            Self::Refused => "refused",
            Self::Empty => "empty",
            Self::NoRawReasoning => "no_raw_reasoning",
        }
    }
}

/// `meta` of an answer record (DAT-4, DAT-5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerMeta {
    /// The parent model.
    pub model: String,
    /// Input tokens billed for the final successful attempt.
    pub input_tokens: u64,
    /// Output tokens billed for the final successful attempt.
    pub output_tokens: u64,
    /// The provider's stop reason, unchanged.
    pub finish_reason: Option<String>,
    /// Kind of the reasoning, null when there is none.
    pub reasoning_kind: Option<ReasoningKind>,
    /// Null for a usable answer, else the exclusion code.
    pub excluded: Option<Exclusion>,
    /// Whether the reasoning or the content was changed by hand in the TUI (TUI-32);
    /// written only when true, and never into `train.jsonl` or `eval.jsonl`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub edited: bool,
}

/// A line of `answers.jsonl`, `train.jsonl` and `eval.jsonl` (DAT-4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerRecord {
    /// The question's ID.
    pub id: String,
    /// Topic name.
    pub topic: String,
    /// Subtopic name.
    pub subtopic: String,
    /// Optional system message, the user's question, the assistant's answer.
    pub messages: Vec<Message>,
    /// Provenance and exclusion.
    pub meta: AnswerMeta,
}

/// What a rejection removes (DAT-8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RejectedKind {
    /// A subtopic name.
    Subtopic,
    /// A question text.
    Question,
}

/// A line of `rejected.jsonl` (DAT-8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RejectedRecord {
    /// What was deleted.
    pub kind: RejectedKind,
    /// Topic name.
    pub topic: String,
    /// Subtopic name.
    pub subtopic: String,
    /// The question text (questions only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// An answer record for tests: a user question `q` and an assistant answer `a` with the
/// reasoning `r`, of `kind`, excluded as `excluded`; one input and one output token.
#[cfg(test)]
pub(crate) fn test_answer(
    (id, topic, subtopic): (&str, &str, &str),
    kind: ReasoningKind,
    excluded: Option<Exclusion>,
) -> AnswerRecord {
    AnswerRecord {
        id: id.into(),
        topic: topic.into(),
        subtopic: subtopic.into(),
        messages: vec![
            Message {
                role: "user".into(),
                content: "q".into(),
                reasoning_content: None,
            },
            Message {
                role: "assistant".into(),
                content: "a".into(),
                reasoning_content: Some("r".into()),
            },
        ],
        meta: AnswerMeta {
            model: "m".into(),
            input_tokens: 1,
            output_tokens: 1,
            finish_reason: Some("stop".into()),
            reasoning_kind: Some(kind),
            excluded,
            edited: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answer_record_format() {
        let mut record = test_answer(
            ("i", "t", "s"),
            ReasoningKind::Raw,
            Some(Exclusion::NoRawReasoning),
        );
        record.meta.output_tokens = 2;
        let line = serde_json::to_string(&record).unwrap();
        assert_eq!(
            line,
            r#"{"id":"i","topic":"t","subtopic":"s","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","reasoning_content":"r"}],"meta":{"model":"m","input_tokens":1,"output_tokens":2,"finish_reason":"stop","reasoning_kind":"raw","excluded":"no_raw_reasoning"}}"#
        );
        assert_eq!(serde_json::from_str::<AnswerRecord>(&line).unwrap(), record);
        let rejected: RejectedRecord =
            serde_json::from_str(r#"{"kind":"question","topic":"t","subtopic":"s","text":"q"}"#)
                .unwrap();
        assert_eq!(rejected.kind, RejectedKind::Question);
    }
}

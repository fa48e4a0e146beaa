//! `setup.json` (CMP-5), written first: the GGUF, the selected questions with the
//! parent's answers and billed tokens from the dataset, the A/B order seed and the child's
//! settings; `questions.jsonl`, what the child is asked; and `child_answers.jsonl`, what
//! it answered (CMP-10). `--rejudge` reads these, never the current `data/eval.jsonl`
//! (CMP-20).

use std::path::Path;

use serde::{Deserialize, Serialize};

/// `setup.json`.
pub const SETUP_JSON: &str = "setup.json";
/// `questions.jsonl`.
pub const QUESTIONS_JSONL: &str = "questions.jsonl";
/// `child_answers.jsonl`.
pub const CHILD_ANSWERS_JSONL: &str = "child_answers.jsonl";
/// `hardware.json`.
pub const HARDWARE_JSON: &str = "hardware.json";
/// `server.log`.
pub const SERVER_LOG: &str = "server.log";

/// The GGUF the child is served from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gguf {
    /// Relative to the run directory.
    pub file: String,
    /// Quantization type.
    #[serde(rename = "type")]
    pub kind: String,
    /// SHA-256.
    pub sha256: String,
    /// llama.cpp release tag.
    pub llama_cpp: String,
    /// The export that made it.
    pub export_id: String,
}

/// One selected question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// Question ID.
    pub id: String,
    /// Topic.
    pub topic: String,
    /// Subtopic.
    pub subtopic: String,
    /// The eval record's system message.
    pub system: Option<String>,
    /// The user message.
    pub user: String,
    /// The parent's answer (the dataset's assistant message).
    pub parent_answer: String,
    /// The parent's billed input tokens (`meta.input_tokens`).
    pub parent_input_tokens: u64,
    /// The parent's billed output tokens (`meta.output_tokens`).
    pub parent_output_tokens: u64,
    /// The parent's total seconds, when the dataset's `meta` records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_latency_secs: Option<f64>,
    /// The parent's seconds to the first token, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_ttft_secs: Option<f64>,
}

/// `setup.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Setup {
    /// Compare ID.
    pub compare_id: String,
    /// Run ID.
    pub run_id: String,
    /// The run's base model.
    pub base_model: String,
    /// The run's target.
    pub target: String,
    /// The GGUF.
    pub gguf: Gguf,
    /// The A/B order seed (CMP-13).
    pub seed: u64,
    /// `[compare] max_tokens`.
    pub max_tokens: u32,
    /// `[compare] temperature`.
    pub temperature: f64,
    /// The server's context (the run's `sequence_len`).
    pub context: u64,
    /// `--limit`, when given.
    pub limit: Option<usize>,
    /// The questions, in `data/eval.jsonl`'s order.
    pub questions: Vec<Question>,
}

/// A line of `questions.jsonl`: what the child is asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Asked {
    /// Question ID.
    pub id: String,
    /// System message.
    pub system: Option<String>,
    /// User message.
    pub user: String,
}

/// A line of `child_answers.jsonl` (CMP-10), written by `compare_client.py`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildAnswer {
    /// Question ID.
    pub id: String,
    /// The answer's text (empty after an error).
    #[serde(default)]
    pub text: String,
    /// Seconds to the first token.
    #[serde(default)]
    pub ttft_secs: Option<f64>,
    /// Seconds in all.
    #[serde(default)]
    pub total_secs: Option<f64>,
    /// Output tokens (the server's `timings.predicted_n`).
    #[serde(default)]
    pub output_tokens: Option<u64>,
    /// The server's generation speed.
    #[serde(default)]
    pub tokens_per_second: Option<f64>,
    /// Cut at the token limit.
    #[serde(default)]
    pub cut: bool,
    /// Why the request failed.
    #[serde(default)]
    pub error: Option<String>,
}

/// What `setup.json` needs of one eval record, read leniently: the parent's latency is
/// taken from `meta` when the dataset has it.
#[derive(Debug, Clone, Deserialize)]
pub struct EvalRecord {
    /// Question ID.
    pub id: String,
    /// Topic.
    pub topic: String,
    /// Subtopic.
    #[serde(default)]
    pub subtopic: String,
    /// Messages.
    pub messages: Vec<crate::dataset::records::Message>,
    /// Provenance.
    pub meta: EvalMeta,
}

/// `meta` of an eval record, as far as compare reads it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct EvalMeta {
    /// Billed input tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Billed output tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Seconds in all, when recorded.
    #[serde(default)]
    pub latency_secs: Option<f64>,
    /// Seconds to the first token, when recorded.
    #[serde(default)]
    pub ttft_secs: Option<f64>,
}

impl EvalRecord {
    /// The question of this record, or why it has none (no user or assistant message).
    ///
    /// # Errors
    ///
    /// A reason naming the missing message.
    pub fn question(&self) -> Result<Question, String> {
        let find = |role: &str| {
            self.messages
                .iter()
                .find(|m| m.role == role)
                .map(|m| m.content.clone())
        };
        let user = find("user").ok_or("it has no user message")?;
        let parent_answer = find("assistant").ok_or("it has no assistant message")?;
        Ok(Question {
            id: self.id.clone(),
            topic: self.topic.clone(),
            subtopic: self.subtopic.clone(),
            system: find("system"),
            user,
            parent_answer,
            parent_input_tokens: self.meta.input_tokens,
            parent_output_tokens: self.meta.output_tokens,
            parent_latency_secs: self.meta.latency_secs,
            parent_ttft_secs: self.meta.ttft_secs,
        })
    }
}

/// The first `limit` records (all without one), in the file's order (CMP-2).
#[must_use]
pub fn select(records: Vec<EvalRecord>, limit: Option<usize>) -> Vec<EvalRecord> {
    match limit {
        Some(n) => records.into_iter().take(n).collect(),
        None => records,
    }
}

impl Setup {
    /// `questions.jsonl`'s lines.
    #[must_use]
    pub fn asked(&self) -> Vec<Asked> {
        self.questions
            .iter()
            .map(|q| Asked {
                id: q.id.clone(),
                system: q.system.clone(),
                user: q.user.clone(),
            })
            .collect()
    }

    /// Reads `setup.json` in `dir`.
    ///
    /// # Errors
    ///
    /// A message naming the file when it is missing or does not parse.
    pub fn load(dir: &Path) -> Result<Self, String> {
        let path = dir.join(SETUP_JSON);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("`{}` does not parse: {e}", path.display()))
    }
}

//! The dataset on disk (spec/pipeline.md, section 7): typed records of each JSONL file,
//! stable question IDs, crash-safe JSONL reading and writing, the train/eval split, and
//! the TUI's deletions and edits.
//!
//! Files owned: `data/subtopics.jsonl`, `data/questions.jsonl`, `data/answers.jsonl`,
//! `data/train.jsonl`, `data/eval.jsonl`, `data/rejected.jsonl`.

pub mod answer_edit;
pub mod chat_check;
pub mod delete;
pub mod edit;
pub mod ids;
pub mod jsonl;
pub mod listing;
pub mod records;
pub mod split;

pub use ids::question_id;
pub use jsonl::{JsonlError, JsonlWriter, SkippedLine, read_jsonl};
pub use records::{
    AnswerMeta, AnswerRecord, Exclusion, Message, QuestionRecord, RejectedKind, RejectedRecord,
    SubtopicRecord,
};

use std::path::{Path, PathBuf};

/// The paths of the dataset files under a project's `data/` directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFiles {
    /// `data/`.
    pub dir: PathBuf,
}

impl DataFiles {
    /// The files under `dir` (a project's `data/`).
    #[must_use]
    pub fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
        }
    }
    /// `subtopics.jsonl`.
    #[must_use]
    pub fn subtopics(&self) -> PathBuf {
        self.dir.join("subtopics.jsonl")
    }
    /// `questions.jsonl`.
    #[must_use]
    pub fn questions(&self) -> PathBuf {
        self.dir.join("questions.jsonl")
    }
    /// `answers.jsonl`.
    #[must_use]
    pub fn answers(&self) -> PathBuf {
        self.dir.join("answers.jsonl")
    }
    /// `train.jsonl`.
    #[must_use]
    pub fn train(&self) -> PathBuf {
        self.dir.join("train.jsonl")
    }
    /// `eval.jsonl`.
    #[must_use]
    pub fn eval(&self) -> PathBuf {
        self.dir.join("eval.jsonl")
    }
    /// `rejected.jsonl`.
    #[must_use]
    pub fn rejected(&self) -> PathBuf {
        self.dir.join("rejected.jsonl")
    }
}

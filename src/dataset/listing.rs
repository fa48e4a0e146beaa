//! The dataset on disk as the TUI's Dataset view lists it (TUI-29, issue 17): each
//! stage's file with its record count, the questions with their topic, subtopic and
//! answer (joined by question ID), and every line that could not be read, by file and
//! line. Read with [`read_jsonl`], the reader the stages use.

use std::collections::BTreeMap;
use std::path::Path;

use super::{AnswerMeta, AnswerRecord, DataFiles, QuestionRecord, SubtopicRecord, read_jsonl};

/// One stage's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileCount {
    /// The file's name under `data/`.
    pub name: &'static str,
    /// Its records, `None` when the file does not exist.
    pub records: Option<usize>,
}

/// One question with its answer, when it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Question ID.
    pub id: String,
    /// Topic.
    pub topic: String,
    /// Subtopic.
    pub subtopic: String,
    /// The question.
    pub question: String,
    /// The assistant's answer, when `answers.jsonl` has one.
    pub answer: Option<String>,
    /// The answer's reasoning, when it carries one.
    pub reasoning: Option<String>,
    /// The answer's metadata (model, tokens, finish reason), when answered.
    pub meta: Option<AnswerMeta>,
    /// Why the answer is excluded from training, when it is.
    pub excluded: Option<&'static str>,
    /// Whether the question is orphaned: its topic is no longer configured (TUI-31).
    pub orphaned: bool,
}

/// One topic's records in `train.jsonl` and `eval.jsonl`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SplitSizes {
    /// Records in `train.jsonl`.
    pub train: usize,
    /// Records in `eval.jsonl`.
    pub eval: usize,
}

/// What the Dataset view shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// The stages' files, in stage order.
    pub files: Vec<FileCount>,
    /// The subtopics of `subtopics.jsonl`, in file order.
    pub subtopics: Vec<SubtopicRecord>,
    /// The topics of the records that are no longer configured (TUI-31).
    pub orphaned_topics: std::collections::BTreeSet<String>,
    /// Per topic, the answers whose question is not in `questions.jsonl` (they have no
    /// node in the tree; `split` leaves them out).
    pub orphaned_answers: BTreeMap<String, usize>,
    /// Each topic's train and eval sizes, by topic name (the split's files as written).
    pub split: BTreeMap<String, SplitSizes>,
    /// The questions, in file order.
    pub rows: Vec<Row>,
    /// Lines that could not be read or files that could not be opened, in words
    /// (`FILE line N: reason`).
    pub errors: Vec<String>,
}

impl Listing {
    /// Whether no stage has written a file yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.files.iter().all(|f| f.records.is_none()) && self.errors.is_empty()
    }
}

fn read<T: serde::de::DeserializeOwned>(
    path: &Path,
    errors: &mut Vec<String>,
) -> (Option<usize>, Vec<T>) {
    if !path.exists() {
        return (None, Vec::new());
    }
    match read_jsonl::<T>(path) {
        Ok((records, skipped)) => {
            for s in skipped {
                errors.push(format!(
                    "{} line {}: {}",
                    s.path.display(),
                    s.line,
                    s.reason
                ));
            }
            (Some(records.len()), records)
        }
        Err(error) => {
            errors.push(error.to_string());
            (None, Vec::new())
        }
    }
}

/// Whether a record of `topic` is orphaned: the topic is not among the `configured`
/// topics' names (TUI-31).
#[must_use]
pub fn orphaned<S: AsRef<str>>(topic: &str, configured: &[S]) -> bool {
    !configured.iter().any(|c| c.as_ref() == topic)
}

/// Reads the dataset under `files`; questions of a topic not among `configured` are
/// marked orphaned.
#[must_use]
pub fn list<S: AsRef<str>>(files: &DataFiles, configured: &[S]) -> Listing {
    let mut errors = Vec::new();
    let (subtopics, subtopic_records) = read::<SubtopicRecord>(&files.subtopics(), &mut errors);
    let (questions, question_records) = read::<QuestionRecord>(&files.questions(), &mut errors);
    let (answers, answer_records) = read::<AnswerRecord>(&files.answers(), &mut errors);
    let (train, train_records) = read::<serde_json::Value>(&files.train(), &mut errors);
    let (eval, eval_records) = read::<serde_json::Value>(&files.eval(), &mut errors);
    let mut split: BTreeMap<String, SplitSizes> = BTreeMap::new();
    for (records, is_eval) in [(&train_records, false), (&eval_records, true)] {
        for record in records {
            let topic = record
                .get("topic")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default();
            let sizes = split.entry(topic.to_owned()).or_default();
            if is_eval {
                sizes.eval += 1;
            } else {
                sizes.train += 1;
            }
        }
    }
    let answers_by_id: std::collections::HashMap<&str, &AnswerRecord> =
        answer_records.iter().map(|a| (a.id.as_str(), a)).collect();
    let question_ids: std::collections::HashSet<&str> =
        question_records.iter().map(|q| q.id.as_str()).collect();
    let mut orphaned_answers: BTreeMap<String, usize> = BTreeMap::new();
    for answer in &answer_records {
        if !question_ids.contains(answer.id.as_str()) {
            *orphaned_answers.entry(answer.topic.clone()).or_default() += 1;
        }
    }
    drop(question_ids);
    let rows: Vec<Row> = question_records
        .into_iter()
        .map(|q| {
            let answer = answers_by_id.get(q.id.as_str());
            let assistant =
                answer.and_then(|a| a.messages.iter().rev().find(|m| m.role == "assistant"));
            Row {
                answer: assistant.map(|m| m.content.clone()),
                reasoning: assistant.and_then(|m| m.reasoning_content.clone()),
                meta: answer.map(|a| a.meta.clone()),
                excluded: answer.and_then(|a| a.meta.excluded.map(super::Exclusion::code)),
                orphaned: orphaned(&q.topic, configured),
                id: q.id,
                topic: q.topic,
                subtopic: q.subtopic,
                question: q.question,
            }
        })
        .collect();
    let count = |name, records| FileCount { name, records };
    Listing {
        files: vec![
            count("subtopics.jsonl", subtopics),
            count("questions.jsonl", questions),
            count("answers.jsonl", answers),
            count("train.jsonl", train),
            count("eval.jsonl", eval),
        ],
        orphaned_topics: subtopic_records
            .iter()
            .map(|s| s.topic.as_str())
            .chain(rows.iter().map(|r| r.topic.as_str()))
            .filter(|t| orphaned(t, configured))
            .map(str::to_owned)
            .collect(),
        subtopics: subtopic_records,
        orphaned_answers,
        split,
        rows,
        errors,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_project_lists_no_file_a_bad_line_names_file_and_line_and_answers_join_by_id() {
        let dir = tempfile::tempdir().unwrap();
        let files = DataFiles::new(dir.path());
        assert!(list(&files, &["t"]).is_empty());
        std::fs::write(
            files.questions(),
            "{\"id\":\"q1\",\"topic\":\"t\",\"subtopic\":\"s\",\"question\":\"Why?\"}\nnot json\n",
        )
        .unwrap();
        let listing = list(&files, &["t"]);
        assert!(!listing.is_empty());
        assert_eq!(listing.files[1].records, Some(1));
        assert_eq!(listing.files[0].records, None);
        assert_eq!(listing.rows.len(), 1);
        assert_eq!(listing.rows[0].answer, None);
        std::fs::write(
            files.answers(),
            concat!(
                r#"{"id":"q1","topic":"t","subtopic":"s","messages":[{"role":"user","content":"Why?"},"#,
                r#"{"role":"assistant","content":"Because.","reasoning_content":"Think."}],"#,
                r#""meta":{"model":"m","input_tokens":1,"output_tokens":2,"finish_reason":"stop","#,
                r#""reasoning_kind":null,"excluded":"truncated"}}"#,
                "\n"
            ),
        )
        .unwrap();
        let answered = list(&files, &["t"]);
        assert_eq!(answered.files[2].records, Some(1));
        let row = &answered.rows[0];
        assert_eq!(row.answer.as_deref(), Some("Because."));
        assert_eq!(row.reasoning.as_deref(), Some("Think."));
        assert_eq!(row.excluded, Some("truncated"));
        assert_eq!(row.meta.as_ref().map(|m| m.output_tokens), Some(2));
        std::fs::write(
            files.train(),
            "{\"id\":\"q1\",\"topic\":\"t\"}\n{\"id\":\"q2\",\"topic\":\"t\"}\n",
        )
        .unwrap();
        std::fs::write(files.eval(), "{\"id\":\"q3\",\"topic\":\"t\"}\n").unwrap();
        std::fs::write(files.subtopics(), "{\"topic\":\"t\",\"subtopic\":\"s\"}\n").unwrap();
        let split = list(&files, &["t"]);
        assert_eq!(split.split["t"], SplitSizes { train: 2, eval: 1 });
        assert_eq!(split.subtopics.len(), 1);
        assert!(!split.rows[0].orphaned);
        assert!(split.orphaned_topics.is_empty());
        assert!(split.orphaned_answers.is_empty());

        let elsewhere = list(&files, &["other"]);
        assert!(elsewhere.rows[0].orphaned);
        assert_eq!(elsewhere.orphaned_topics.len(), 1);
        std::fs::write(files.questions(), "").unwrap();
        assert_eq!(list(&files, &["t"]).orphaned_answers["t"], 1, "q1 is gone");
        assert!(orphaned("gone", &["t"]) && !orphaned("t", &["t"]));
        assert_eq!(listing.errors.len(), 1);
        assert!(
            listing.errors[0].contains("questions.jsonl line 2"),
            "{:?}",
            listing.errors
        );
    }
}

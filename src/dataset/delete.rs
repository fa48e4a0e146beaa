//! Deleting dataset items with their dependents (TUI-34): a subtopic with its questions
//! and their answers, a question with its answer, or only an answer. Deleted subtopics and
//! questions are recorded in `rejected.jsonl` (DAT-8) first, so that a crash halfway leaves
//! the item rejected rather than back in play; then the dependents are removed, each file
//! replaced atomically.

use std::collections::HashSet;

use super::DataFiles;
use super::jsonl::{JsonlError, JsonlWriter, read_jsonl, retain_lines};
use super::listing::Listing;
use super::records::{QuestionRecord, RejectedKind, RejectedRecord};

fn text_field<'a>(line: &'a serde_json::Value, name: &str) -> Option<&'a str> {
    line.get(name).and_then(serde_json::Value::as_str)
}

/// Deletes the question `id` and its answer, recording its text as rejected. Returns the
/// deleted question, or `None` when no question has that ID (nothing changes then).
///
/// # Errors
///
/// [`JsonlError`] when a file cannot be read or written.
pub fn delete_question(files: &DataFiles, id: &str) -> Result<Option<QuestionRecord>, JsonlError> {
    let (questions, _) = read_jsonl::<QuestionRecord>(&files.questions())?;
    let Some(question) = questions.into_iter().find(|q| q.id == id) else {
        return Ok(None);
    };
    JsonlWriter::open(&files.rejected())?.append(&RejectedRecord {
        kind: RejectedKind::Question,
        topic: question.topic.clone(),
        subtopic: question.subtopic.clone(),
        text: Some(question.question.clone()),
    })?;
    retain_lines(&files.answers(), |line| text_field(line, "id") != Some(id))?;
    retain_lines(&files.questions(), |line| {
        text_field(line, "id") != Some(id)
    })?;
    Ok(Some(question))
}

/// Deletes the subtopic `subtopic` of `topic` with its questions and their answers,
/// recording the subtopic as rejected.
///
/// # Errors
///
/// [`JsonlError`] when a file cannot be read or written.
pub fn delete_subtopic(files: &DataFiles, topic: &str, subtopic: &str) -> Result<(), JsonlError> {
    JsonlWriter::open(&files.rejected())?.append(&RejectedRecord {
        kind: RejectedKind::Subtopic,
        topic: topic.to_owned(),
        subtopic: subtopic.to_owned(),
        text: None,
    })?;
    let belongs = |line: &serde_json::Value| {
        text_field(line, "topic") == Some(topic) && text_field(line, "subtopic") == Some(subtopic)
    };
    let (questions, _) = read_jsonl::<QuestionRecord>(&files.questions())?;
    let ids: HashSet<String> = questions
        .into_iter()
        .filter(|q| q.topic == topic && q.subtopic == subtopic)
        .map(|q| q.id)
        .collect();
    retain_lines(&files.answers(), |line| {
        !text_field(line, "id").is_some_and(|id| ids.contains(id)) && !belongs(line)
    })?;
    retain_lines(&files.questions(), |line| !belongs(line))?;
    retain_lines(&files.subtopics(), |line| !belongs(line))
}

/// Deletes every subtopic of `topic` (those of `subtopics.jsonl` and those its questions
/// name) as [`delete_subtopic`] does, each recorded as rejected.
///
/// # Errors
///
/// [`JsonlError`] when a file cannot be read or written.
pub fn delete_topic(files: &DataFiles, topic: &str) -> Result<(), JsonlError> {
    let mut names: Vec<String> = Vec::new();
    if files.subtopics().exists() {
        let (subtopics, _) = read_jsonl::<super::SubtopicRecord>(&files.subtopics())?;
        names.extend(
            subtopics
                .into_iter()
                .filter(|s| s.topic == topic)
                .map(|s| s.subtopic),
        );
    }
    if files.questions().exists() {
        let (questions, _) = read_jsonl::<QuestionRecord>(&files.questions())?;
        names.extend(
            questions
                .into_iter()
                .filter(|q| q.topic == topic)
                .map(|q| q.subtopic),
        );
    }
    let mut seen = HashSet::new();
    for name in names {
        if seen.insert(name.clone()) {
            delete_subtopic(files, topic, &name)?;
        }
    }
    Ok(())
}

/// Deletes the answer of question `id` only (the question stays, to be answered again).
///
/// # Errors
///
/// [`JsonlError`] when the file cannot be read or written.
pub fn delete_answer(files: &DataFiles, id: &str) -> Result<(), JsonlError> {
    retain_lines(&files.answers(), |line| text_field(line, "id") != Some(id))
}

/// What a deletion removes (TUI-34).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A topic no longer configured, with its subtopics, questions and answers.
    Topic {
        /// Its name.
        topic: String,
    },
    /// A subtopic with its questions and their answers.
    Subtopic {
        /// Its topic.
        topic: String,
        /// Its name.
        subtopic: String,
    },
    /// A question with its answer.
    Question {
        /// Its ID.
        id: String,
    },
    /// A question's answer only.
    Answer {
        /// The question's ID.
        id: String,
    },
}

/// The records a deletion removes, per file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dependents {
    /// Lines of `subtopics.jsonl`.
    pub subtopics: usize,
    /// Lines of `questions.jsonl`.
    pub questions: usize,
    /// Lines of `answers.jsonl`.
    pub answers: usize,
}

/// What deleting `target` removes, counted in `listing` (the files as last read).
#[must_use]
pub fn dependents(listing: &Listing, target: &Target) -> Dependents {
    let answered = |r: &super::listing::Row| r.meta.is_some();
    match target {
        Target::Topic { topic } => {
            let rows: Vec<_> = listing.rows.iter().filter(|r| &r.topic == topic).collect();
            Dependents {
                subtopics: listing
                    .subtopics
                    .iter()
                    .filter(|s| &s.topic == topic)
                    .count(),
                questions: rows.len(),
                answers: rows.iter().filter(|r| answered(r)).count(),
            }
        }
        Target::Subtopic { topic, subtopic } => {
            let rows: Vec<_> = listing
                .rows
                .iter()
                .filter(|r| &r.topic == topic && &r.subtopic == subtopic)
                .collect();
            Dependents {
                subtopics: listing
                    .subtopics
                    .iter()
                    .filter(|s| &s.topic == topic && &s.subtopic == subtopic)
                    .count(),
                questions: rows.len(),
                answers: rows.iter().filter(|r| answered(r)).count(),
            }
        }
        Target::Question { id } => {
            let rows: Vec<_> = listing.rows.iter().filter(|r| &r.id == id).collect();
            Dependents {
                subtopics: 0,
                questions: rows.len(),
                answers: rows.iter().filter(|r| answered(r)).count(),
            }
        }
        Target::Answer { id } => Dependents {
            answers: listing
                .rows
                .iter()
                .filter(|r| &r.id == id && answered(r))
                .count(),
            ..Dependents::default()
        },
    }
}

/// Deletes `target` with its dependents.
///
/// # Errors
///
/// [`JsonlError`] when a file cannot be read or written.
pub fn delete(files: &DataFiles, target: &Target) -> Result<(), JsonlError> {
    match target {
        Target::Topic { topic } => delete_topic(files, topic),
        Target::Subtopic { topic, subtopic } => delete_subtopic(files, topic, subtopic),
        Target::Question { id } => delete_question(files, id).map(|_| ()),
        Target::Answer { id } => delete_answer(files, id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependents_count_a_subtopics_questions_and_answers_as_listed() {
        let dir = tempfile::tempdir().unwrap();
        let files = DataFiles::new(dir.path());
        std::fs::write(
            files.subtopics(),
            "{\"topic\":\"t\",\"subtopic\":\"a\"}\n{\"topic\":\"t\",\"subtopic\":\"b\"}\n",
        )
        .unwrap();
        std::fs::write(
            files.questions(),
            "{\"id\":\"1\",\"topic\":\"t\",\"subtopic\":\"a\",\"question\":\"q1\"}\n\
             {\"id\":\"2\",\"topic\":\"t\",\"subtopic\":\"a\",\"question\":\"q2\"}\n",
        )
        .unwrap();
        std::fs::write(
            files.answers(),
            concat!(
                r#"{"id":"1","topic":"t","subtopic":"a","messages":[],"#,
                r#""meta":{"model":"m","input_tokens":1,"output_tokens":2,"finish_reason":"stop","#,
                r#""reasoning_kind":null,"excluded":null}}"#,
                "\n"
            ),
        )
        .unwrap();
        let listing = super::super::listing::list(&files, &["t"]);
        let subtopic = Target::Subtopic {
            topic: "t".into(),
            subtopic: "a".into(),
        };
        assert_eq!(
            dependents(&listing, &subtopic),
            Dependents {
                subtopics: 1,
                questions: 2,
                answers: 1
            }
        );
        let question = Target::Question { id: "2".into() };
        assert_eq!(
            dependents(&listing, &question),
            Dependents {
                subtopics: 0,
                questions: 1,
                answers: 0
            }
        );
        let answer = Target::Answer { id: "1".into() };
        assert_eq!(dependents(&listing, &answer).answers, 1);
        delete(&files, &answer).unwrap();
        assert_eq!(std::fs::read_to_string(files.answers()).unwrap(), "");
        delete(&files, &subtopic).unwrap();
        assert_eq!(std::fs::read_to_string(files.questions()).unwrap(), "");
        assert_eq!(
            std::fs::read_to_string(files.subtopics()).unwrap(),
            "{\"topic\":\"t\",\"subtopic\":\"b\"}\n"
        );
        let topic = Target::Topic { topic: "t".into() };
        assert_eq!(dependents(&listing, &topic).subtopics, 2);
        delete(&files, &topic).unwrap();
        assert_eq!(std::fs::read_to_string(files.subtopics()).unwrap(), "");
        let (rejected, _) = read_jsonl::<RejectedRecord>(&files.rejected()).unwrap();
        assert_eq!(rejected.len(), 2, "a and b, each once");
    }

    #[test]
    fn deletions_take_dependents_and_record_rejections() {
        let dir = tempfile::tempdir().unwrap();
        let files = DataFiles::new(dir.path());
        std::fs::write(
            files.subtopics(),
            "{\"topic\":\"t\",\"subtopic\":\"a\"}\n{\"topic\":\"t\",\"subtopic\":\"b\"}\n",
        )
        .unwrap();
        std::fs::write(
            files.questions(),
            "{\"id\":\"1\",\"topic\":\"t\",\"subtopic\":\"a\",\"question\":\"q1\"}\n\
             {\"id\":\"2\",\"topic\":\"t\",\"subtopic\":\"b\",\"question\":\"q2\"}\n\
             {\"id\":\"3\",\"topic\":\"t\",\"subtopic\":\"b\",\"question\":\"q3\"}\n",
        )
        .unwrap();
        std::fs::write(
            files.answers(),
            "{\"id\":\"1\",\"topic\":\"t\",\"subtopic\":\"a\"}\n{\"id\":\"2\",\"topic\":\"t\",\"subtopic\":\"b\"}\n{\"id\":\"3\",\"topic\":\"t\",\"subtopic\":\"b\"}\n",
        )
        .unwrap();
        let deleted = delete_question(&files, "2").unwrap().unwrap();
        assert_eq!(deleted.question, "q2");
        assert!(delete_question(&files, "nope").unwrap().is_none());
        delete_answer(&files, "3").unwrap();
        let answers = std::fs::read_to_string(files.answers()).unwrap();
        assert!(
            answers.contains("\"id\":\"1\"")
                && !answers.contains("\"id\":\"2\"")
                && !answers.contains("\"id\":\"3\"")
        );
        delete_subtopic(&files, "t", "a").unwrap();
        assert_eq!(std::fs::read_to_string(files.answers()).unwrap(), "");
        assert_eq!(
            std::fs::read_to_string(files.questions()).unwrap(),
            "{\"id\":\"3\",\"topic\":\"t\",\"subtopic\":\"b\",\"question\":\"q3\"}\n"
        );
        assert_eq!(
            std::fs::read_to_string(files.subtopics()).unwrap(),
            "{\"topic\":\"t\",\"subtopic\":\"b\"}\n"
        );
        let (rejected, _) = read_jsonl::<RejectedRecord>(&files.rejected()).unwrap();
        assert_eq!(rejected.len(), 2);
        assert_eq!(rejected[0].text.as_deref(), Some("q2"));
        assert_eq!(rejected[1].kind, RejectedKind::Subtopic);
    }
}

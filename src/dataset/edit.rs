//! Editing dataset items (TUI-33, TUI-35): a question's new text gives it a new ID (DAT-3)
//! and deletes its old answer; a renamed subtopic gives its questions new IDs and keeps
//! their answers, under the new IDs. Before writing, the records the edit touches are
//! checked against what was shown; an edit that would duplicate an existing question text
//! or subtopic name is rejected. Every file is rewritten through [`map_lines`], so lines
//! the edit does not touch (unreadable ones included) stay byte for byte. An answer's edit
//! is in [`super::answer_edit`].

use std::collections::HashMap;

use super::jsonl::{JsonlError, map_lines, read_jsonl, retain_lines};
use super::records::{QuestionRecord, SubtopicRecord};
use super::{DataFiles, question_id};

/// Why an edit was not applied (nothing was written then).
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// The record on disk is gone or differs from what was shown.
    #[error("{what} changed on disk since it was shown; read it again (R) and retry")]
    Changed {
        /// The record, in words.
        what: String,
    },
    /// The edit would duplicate an existing record.
    #[error("{what} already exists")]
    Duplicate {
        /// The record, in words.
        what: String,
    },
    /// The new text or name is empty.
    #[error("the new {what} is empty")]
    Empty {
        /// What was edited.
        what: &'static str,
    },
    /// A marker line of an edited answer is missing, altered, repeated or out of order
    /// ([`super::answer_edit::parse`]).
    #[error("the marker line `{line}` {problem}; keep both marker lines as they were")]
    Marker {
        /// The marker line as it should read.
        line: &'static str,
        /// What is wrong with it, in words.
        problem: &'static str,
    },
    /// A file could not be read or written.
    #[error(transparent)]
    Jsonl(#[from] JsonlError),
}

fn questions(files: &DataFiles) -> Result<Vec<QuestionRecord>, JsonlError> {
    if !files.questions().exists() {
        return Ok(Vec::new());
    }
    Ok(read_jsonl::<QuestionRecord>(&files.questions())?.0)
}

fn set(line: &mut serde_json::Value, key: &str, value: &str) {
    if let Some(object) = line.as_object_mut() {
        object.insert(key.to_owned(), serde_json::Value::String(value.to_owned()));
    }
}

pub(super) fn field<'a>(line: &'a serde_json::Value, key: &str) -> Option<&'a str> {
    line.get(key).and_then(serde_json::Value::as_str)
}

/// Gives question `id`, shown with the text `shown`, the text `text`: a new ID, its old
/// answer deleted (`answers` makes it again). Returns the new ID.
///
/// # Errors
///
/// [`EditError`] when the question changed on disk, the text is empty or another question
/// of its subtopic has that text, or a file cannot be read or written.
pub fn edit_question(
    files: &DataFiles,
    id: &str,
    shown: &str,
    text: &str,
) -> Result<String, EditError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(EditError::Empty {
            what: "question text",
        });
    }
    let all = questions(files)?;
    let question = all
        .iter()
        .find(|q| q.id == id && q.question == shown)
        .ok_or_else(|| EditError::Changed {
            what: format!("question {id}"),
        })?;
    let new_id = question_id(&question.topic, &question.subtopic, text);
    if all.iter().any(|q| q.id == new_id) {
        return Err(EditError::Duplicate {
            what: format!(
                "a question with this text in subtopic `{}` of topic `{}`",
                question.subtopic, question.topic
            ),
        });
    }
    retain_lines(&files.answers(), |line| field(line, "id") != Some(id))?;
    map_lines(&files.questions(), |line| {
        if field(line, "id") != Some(id) {
            return false;
        }
        set(line, "id", &new_id);
        set(line, "question", text);
        true
    })?;
    Ok(new_id)
}

/// Renames subtopic `old` of `topic` to `new`: its line in `subtopics.jsonl`, and its
/// questions and answers, which get new IDs and keep their answers.
///
/// # Errors
///
/// [`EditError`] when the subtopic is no longer on disk, the name is empty or already
/// names a subtopic of the topic, or a file cannot be read or written.
pub fn rename_subtopic(
    files: &DataFiles,
    topic: &str,
    old: &str,
    new: &str,
) -> Result<(), EditError> {
    let new = new.trim();
    if new.is_empty() {
        return Err(EditError::Empty {
            what: "subtopic name",
        });
    }
    let subtopics = if files.subtopics().exists() {
        read_jsonl::<SubtopicRecord>(&files.subtopics())?.0
    } else {
        Vec::new()
    };
    let all = questions(files)?;
    let names = |name: &str| {
        subtopics
            .iter()
            .any(|s| s.topic == topic && s.subtopic == name)
            || all.iter().any(|q| q.topic == topic && q.subtopic == name)
    };
    if !names(old) {
        return Err(EditError::Changed {
            what: format!("subtopic `{old}` of topic `{topic}`"),
        });
    }
    if new != old && names(new) {
        return Err(EditError::Duplicate {
            what: format!("subtopic `{new}` of topic `{topic}`"),
        });
    }
    let renamed: HashMap<String, String> = all
        .iter()
        .filter(|q| q.topic == topic && q.subtopic == old)
        .map(|q| (q.id.clone(), question_id(topic, new, &q.question)))
        .collect();
    let ours = |line: &serde_json::Value| {
        field(line, "topic") == Some(topic) && field(line, "subtopic") == Some(old)
    };
    map_lines(&files.answers(), |line| {
        let Some(new_id) = field(line, "id").and_then(|id| renamed.get(id)).cloned() else {
            return false;
        };
        set(line, "id", &new_id);
        set(line, "subtopic", new);
        true
    })?;
    map_lines(&files.questions(), |line| {
        if !ours(line) {
            return false;
        }
        if let Some(new_id) = field(line, "id").and_then(|id| renamed.get(id)).cloned() {
            set(line, "id", &new_id);
        }
        set(line, "subtopic", new);
        true
    })?;
    map_lines(&files.subtopics(), |line| {
        if !ours(line) {
            return false;
        }
        set(line, "subtopic", new);
        true
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, DataFiles, String) {
        let dir = tempfile::tempdir().unwrap();
        let files = DataFiles::new(dir.path());
        let id = question_id("t", "a", "q1");
        let other = question_id("t", "a", "q2");
        std::fs::write(
            files.subtopics(),
            "{\"topic\":\"t\",\"subtopic\":\"a\"}\n{\"topic\":\"t\",\"subtopic\":\"b\"}\n",
        )
        .unwrap();
        std::fs::write(
            files.questions(),
            format!(
                "{{\"id\":\"{id}\",\"topic\":\"t\",\"subtopic\":\"a\",\"question\":\"q1\"}}\n\
                 not json\n\
                 {{\"id\":\"{other}\",\"topic\":\"t\",\"subtopic\":\"a\",\"question\":\"q2\"}}\n"
            ),
        )
        .unwrap();
        std::fs::write(
            files.answers(),
            format!("{{\"id\":\"{id}\",\"topic\":\"t\",\"subtopic\":\"a\",\"x\":1}}\n"),
        )
        .unwrap();
        (dir, files, id)
    }

    #[test]
    fn a_new_question_text_gets_a_new_id_and_loses_its_answer_unless_it_duplicates() {
        let (_dir, files, id) = setup();
        assert!(matches!(
            edit_question(&files, &id, "stale text", "q3"),
            Err(EditError::Changed { .. })
        ));
        assert!(matches!(
            edit_question(&files, &id, "q1", "q2"),
            Err(EditError::Duplicate { .. })
        ));
        assert!(matches!(
            edit_question(&files, &id, "q1", "  "),
            Err(EditError::Empty { .. })
        ));
        let new_id = edit_question(&files, &id, "q1", "q3").unwrap();
        assert_eq!(new_id, question_id("t", "a", "q3"));
        let questions = std::fs::read_to_string(files.questions()).unwrap();
        assert!(questions.contains(&new_id) && !questions.contains(&id));
        assert!(questions.contains("\nnot json\n"), "{questions}");
        assert_eq!(std::fs::read_to_string(files.answers()).unwrap(), "");
    }

    #[test]
    fn a_renamed_subtopic_gives_new_ids_and_keeps_the_answers_unless_the_name_exists() {
        let (_dir, files, id) = setup();
        assert!(matches!(
            rename_subtopic(&files, "t", "a", "b"),
            Err(EditError::Duplicate { .. })
        ));
        assert!(matches!(
            rename_subtopic(&files, "t", "gone", "c"),
            Err(EditError::Changed { .. })
        ));
        rename_subtopic(&files, "t", "a", "c").unwrap();
        let new_id = question_id("t", "c", "q1");
        let answers = std::fs::read_to_string(files.answers()).unwrap();
        assert!(
            answers.contains(&new_id) && !answers.contains(&id),
            "{answers}"
        );
        assert!(answers.contains("\"subtopic\":\"c\"") && answers.contains("\"x\":1"));
        let questions = std::fs::read_to_string(files.questions()).unwrap();
        assert!(questions.contains(&new_id) && questions.contains(&question_id("t", "c", "q2")));
        assert!(!questions.contains("\"subtopic\":\"a\""));
        let (subtopics, _) = read_jsonl::<SubtopicRecord>(&files.subtopics()).unwrap();
        let names: Vec<&str> = subtopics.iter().map(|s| s.subtopic.as_str()).collect();
        assert_eq!(names, ["c", "b"]);
        assert!(
            std::fs::read_to_string(files.subtopics())
                .unwrap()
                .ends_with("\n{\"topic\":\"t\",\"subtopic\":\"b\"}\n"),
            "an untouched line stays byte for byte"
        );
    }
}

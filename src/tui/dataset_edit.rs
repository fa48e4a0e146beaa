//! The Dataset view's `e` and `E` (TUI-32, TUI-33, TUI-35): the selected question's text,
//! subtopic's name or question's answer goes into a file under `data/` readable only by the
//! user, the user's editor opens it (the event loop hands the terminal over), then the edit
//! goes through [`crate::dataset::edit`] (a new question text gets a new ID and loses its
//! old answer; a renamed subtopic's questions get new IDs and keep their answers; a
//! duplicate or a record changed on disk is refused) or [`crate::dataset::answer_edit`]
//! (the reasoning and the content between two marker lines) and `split` runs again as after
//! a deletion. A refused edit keeps its file and names it; an applied or unchanged one
//! removes it.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use crate::config::{EnvSnapshot, Settings};
use crate::dataset::DataFiles;
use crate::dataset::answer_edit::{self, AnswerText};

/// What `e` or `E` edits, as it was shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataEdit {
    /// A question's text.
    Question {
        /// Its ID.
        id: String,
        /// Its text as shown.
        shown: String,
    },
    /// A subtopic's name.
    Subtopic {
        /// Its topic.
        topic: String,
        /// Its name as shown.
        name: String,
    },
    /// A question's answer (`E`).
    Answer {
        /// The question's ID.
        id: String,
        /// The answer as shown.
        shown: AnswerText,
    },
}

impl DataEdit {
    /// The text the editor opens with.
    fn text(&self) -> String {
        match self {
            Self::Question { shown, .. } => shown.clone(),
            Self::Subtopic { name, .. } => name.clone(),
            Self::Answer { shown, .. } => answer_edit::render(shown),
        }
    }

    /// What is edited, in words.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Self::Question { id, .. } => format!("question {id}"),
            Self::Subtopic { topic, name } => format!("subtopic `{name}` of topic `{topic}`"),
            Self::Answer { id, .. } => format!("the answer of question {id}"),
        }
    }

    /// The key that edits it.
    #[must_use]
    pub fn key(&self) -> char {
        match self {
            Self::Answer { .. } => 'E',
            Self::Question { .. } | Self::Subtopic { .. } => 'e',
        }
    }

    /// Whether the editor left `text` meaning what was shown (an answer's damaged markers
    /// are a change, refused when applied).
    fn unchanged(&self, text: &str) -> bool {
        match self {
            Self::Answer { shown, .. } => {
                answer_edit::parse(text).ok()
                    == answer_edit::parse(&answer_edit::render(shown)).ok()
            }
            Self::Question { .. } | Self::Subtopic { .. } => text.trim() == self.text().trim(),
        }
    }
}

/// Writes the text to edit into a new file under `data/` (mode 600) and returns its path.
///
/// # Errors
///
/// When the file cannot be created or written.
pub fn prepare(data_dir: &Path, edit: &DataEdit) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(data_dir)?;
    let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%S%.f");
    let path = data_dir.join(format!(".edit-{stamp}.txt"));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    file.write_all(edit.text().as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()?;
    Ok(path)
}

/// Applies what the editor left in `path` to `edit`, then splits again; returns the status
/// line's text and the split's warnings.
///
/// # Errors
///
/// The status line's text when the edit was refused (the file is kept and named) or the
/// split failed.
pub fn apply(
    root: &Path,
    settings: &Settings,
    env: &EnvSnapshot,
    edit: &DataEdit,
    path: &Path,
) -> Result<(String, Vec<String>), String> {
    let what = edit.describe();
    let text = std::fs::read_to_string(path).map_err(|error| {
        format!(
            "{what} not edited: cannot read `{}`: {error}",
            path.display()
        )
    })?;
    if edit.unchanged(&text) {
        let _ = std::fs::remove_file(path);
        return Ok((format!("{what} unchanged"), Vec::new()));
    }
    let text = text.trim();
    let files = DataFiles::new(&root.join("data"));
    let edited = match edit {
        DataEdit::Question { id, shown } => crate::dataset::edit::edit_question(&files, id, shown, text)
            .map(|new_id| format!("question {id} is now {new_id}; its old answer is deleted (run `answers`)")),
        DataEdit::Subtopic { topic, name } => {
            crate::dataset::edit::rename_subtopic(&files, topic, name, text)
                .map(|()| format!("subtopic `{name}` of topic `{topic}` is now `{text}`; its questions keep their answers"))
        }
        DataEdit::Answer { id, shown } => answer_edit::parse(text)
            .and_then(|edited| answer_edit::edit_answer(&files, id, shown, &edited))
            .map(|excluded| match excluded {
                None => format!("the answer of question {id} is edited"),
                Some(code) => format!(
                    "the answer of question {id} is edited; it stays excluded from training ({})",
                    code.code()
                ),
            }),
    };
    let said = edited.map_err(|error| {
        format!(
            "{what} not edited: {error}; your text is kept in `{}`",
            path.display()
        )
    })?;
    let _ = std::fs::remove_file(path);
    let (split, warnings) = super::dataset_delete::split_again(root, settings, env)
        .map_err(|error| format!("{said}; `split` failed: {error}; run `overbrainer split`"))?;
    Ok((format!("{said}; {split}"), warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_question_text_gets_a_new_id_and_a_duplicate_keeps_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        let files = DataFiles::new(&data);
        let id1 = crate::dataset::question_id("t", "s", "q1");
        let id2 = crate::dataset::question_id("t", "s", "q2");
        std::fs::write(
            files.questions(),
            format!(
                "{{\"id\":\"{id1}\",\"topic\":\"t\",\"subtopic\":\"s\",\"question\":\"q1\"}}\n\
                 {{\"id\":\"{id2}\",\"topic\":\"t\",\"subtopic\":\"s\",\"question\":\"q2\"}}\n"
            ),
        )
        .unwrap();
        let settings = Settings::default();
        let env = EnvSnapshot::default();
        let edit = DataEdit::Question {
            id: id1.clone(),
            shown: "q1".into(),
        };
        let path = prepare(&data, &edit).unwrap();
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "q1\n");
        let (said, _) = apply(dir.path(), &settings, &env, &edit, &path).unwrap();
        assert_eq!(
            said,
            "question unchanged".replace("question", &format!("question {id1}"))
        );
        assert!(!path.exists());

        let path = prepare(&data, &edit).unwrap();
        std::fs::write(&path, "q2\n").unwrap();
        let refused = apply(dir.path(), &settings, &env, &edit, &path).unwrap_err();
        assert!(refused.contains("already exists"), "{refused}");
        assert!(refused.contains(&path.display().to_string()), "{refused}");
        assert!(path.exists(), "the text is kept");

        std::fs::write(&path, "a better q1\n").unwrap();
        let (said, _) = apply(dir.path(), &settings, &env, &edit, &path).unwrap();
        let new_id = crate::dataset::question_id("t", "s", "a better q1");
        assert!(
            said.starts_with(&format!("question {id1} is now {new_id}")),
            "{said}"
        );
        assert!(!path.exists());
        let questions = std::fs::read_to_string(files.questions()).unwrap();
        assert!(questions.contains("a better q1") && !questions.contains("\"q1\""));
    }

    #[test]
    fn an_answer_edit_refused_for_a_damaged_marker_keeps_the_file_then_applies() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        let files = DataFiles::new(&data);
        let record = crate::dataset::records::test_answer(
            ("q-1", "t", "s"),
            crate::llm::ReasoningKind::Raw,
            None,
        );
        std::fs::write(
            files.answers(),
            format!("{}\n", serde_json::to_string(&record).unwrap()),
        )
        .unwrap();
        let (settings, env) = (Settings::default(), EnvSnapshot::default());
        let edit = DataEdit::Answer {
            id: "q-1".into(),
            shown: AnswerText {
                reasoning: "r".into(),
                content: "a".into(),
            },
        };
        assert_eq!(edit.key(), 'E');
        let path = prepare(&data, &edit).unwrap();
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        let shown = std::fs::read_to_string(&path).unwrap();
        assert!(shown.contains(answer_edit::ANSWER_MARKER), "{shown}");
        let (said, _) = apply(dir.path(), &settings, &env, &edit, &path).unwrap();
        assert_eq!(said, "the answer of question q-1 unchanged");
        assert!(!path.exists());

        let path = prepare(&data, &edit).unwrap();
        std::fs::write(&path, shown.replace(answer_edit::ANSWER_MARKER, "answer:")).unwrap();
        let refused = apply(dir.path(), &settings, &env, &edit, &path).unwrap_err();
        assert!(refused.contains(answer_edit::ANSWER_MARKER), "{refused}");
        assert!(refused.contains(&path.display().to_string()), "{refused}");
        assert!(path.exists(), "the text is kept");

        std::fs::write(&path, shown.replace("\na", "\na better answer")).unwrap();
        let (said, _) = apply(dir.path(), &settings, &env, &edit, &path).unwrap();
        assert!(
            said.starts_with("the answer of question q-1 is edited; split again:"),
            "{said}"
        );
        assert!(!path.exists());
        let answers = std::fs::read_to_string(files.answers()).unwrap();
        assert!(
            answers.contains("\"content\":\"a better answer\""),
            "{answers}"
        );
    }
}

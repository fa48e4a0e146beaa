//! Editing an answer (TUI-32, TUI-33, TUI-35): the reasoning and the content of a
//! question's answer as one text for the user's editor, between two marker lines that must
//! be kept ([`render`], [`parse`]), and the edit applied to `answers.jsonl`
//! ([`edit_answer`]) once the record on disk is checked against what was shown.
//!
//! Only the answer's line is rewritten (through [`map_lines`], so every other line stays
//! byte for byte) and every other field of it is kept: the model, the token counts and the
//! finish reason still tell how the parent's answer was made, `meta.edited` says that it was
//! then changed by hand, and `meta.excluded` stays as it was (an excluded answer stays out
//! of training). An emptied reasoning is removed with its kind; a reasoning written where
//! there was none is `raw`, a full trace, so that `split` keeps it (SPL-6).

use serde_json::Value;

use super::DataFiles;
use super::edit::{EditError, field};
use super::jsonl::{map_lines, read_jsonl};
use super::records::{AnswerRecord, Exclusion};

/// The line before the reasoning.
pub const REASONING_MARKER: &str = "===== reasoning (keep this line) =====";

/// The line before the answer's content.
pub const ANSWER_MARKER: &str = "===== answer (keep this line) =====";

/// What the file says above the markers (ignored when read back).
const HEADER: &str = "\
# Edit the reasoning and the answer below, then save and quit the editor.
# Keep both marker lines exactly as they are; lines above the first one are ignored.
# An empty reasoning removes it; an empty answer is refused.";

/// An answer as the editor shows it: its reasoning (empty when it has none) and its
/// content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerText {
    /// The reasoning, empty when there is none.
    pub reasoning: String,
    /// The assistant's answer.
    pub content: String,
}

impl AnswerText {
    /// The text of `record`'s last assistant message, the one trained on.
    #[must_use]
    pub fn of(record: &AnswerRecord) -> Option<Self> {
        let message = record
            .messages
            .iter()
            .rev()
            .find(|m| m.role == "assistant")?;
        Some(Self {
            reasoning: message.reasoning_content.clone().unwrap_or_default(),
            content: message.content.clone(),
        })
    }
}

/// The file the editor opens: a short header, the reasoning marker, the reasoning, the
/// answer marker, the content (no final newline).
#[must_use]
pub fn render(answer: &AnswerText) -> String {
    let mut text = format!("{HEADER}\n{REASONING_MARKER}\n");
    if !answer.reasoning.is_empty() {
        text.push_str(&answer.reasoning);
        text.push('\n');
    }
    text.push_str(ANSWER_MARKER);
    text.push('\n');
    text.push_str(&answer.content);
    text
}

/// Reads back what the editor left: what lies between the markers is the reasoning, what
/// follows the answer marker the content; CRLF line ends are read as LF, and blank lines
/// around each part and trailing whitespace are dropped.
///
/// # Errors
///
/// [`EditError::Marker`] naming a marker line that is missing, altered, repeated or out of
/// order.
pub fn parse(text: &str) -> Result<AnswerText, EditError> {
    let text = text.replace("\r\n", "\n");
    let lines: Vec<&str> = text.split('\n').collect();
    let find = |marker: &'static str| {
        let at: Vec<usize> = lines
            .iter()
            .enumerate()
            .filter(|(_, line)| line.trim_end() == marker)
            .map(|(at, _)| at)
            .collect();
        match at.as_slice() {
            [at] => Ok(*at),
            [] => Err(EditError::Marker {
                line: marker,
                problem: "is missing or altered",
            }),
            _ => Err(EditError::Marker {
                line: marker,
                problem: "appears more than once",
            }),
        }
    };
    let reasoning = find(REASONING_MARKER)?;
    let answer = find(ANSWER_MARKER)?;
    if answer < reasoning {
        return Err(EditError::Marker {
            line: REASONING_MARKER,
            problem: "must come before the answer's marker",
        });
    }
    let part = |lines: &[&str]| {
        lines
            .join("\n")
            .trim_end()
            .trim_start_matches('\n')
            .to_owned()
    };
    Ok(AnswerText {
        reasoning: part(&lines[reasoning + 1..answer]),
        content: part(&lines[answer + 1..]),
    })
}

/// Gives the answer of question `id`, shown as `shown`, the reasoning and content of
/// `edited`. Returns the answer's exclusion, which the edit keeps.
///
/// # Errors
///
/// [`EditError`] when the answer is gone or differs on disk from `shown`, the edited
/// content is empty, or `answers.jsonl` cannot be read or written.
pub fn edit_answer(
    files: &DataFiles,
    id: &str,
    shown: &AnswerText,
    edited: &AnswerText,
) -> Result<Option<Exclusion>, EditError> {
    if edited.content.trim().is_empty() {
        return Err(EditError::Empty { what: "answer" });
    }
    let changed = || EditError::Changed {
        what: format!("the answer of question {id}"),
    };
    if !files.answers().exists() {
        return Err(changed());
    }
    let (answers, _) = read_jsonl::<AnswerRecord>(&files.answers())?;
    // The Dataset view shows the last answer of an ID.
    let record = answers
        .iter()
        .rev()
        .find(|a| a.id == id)
        .ok_or_else(changed)?;
    if AnswerText::of(record).as_ref() != Some(shown) {
        return Err(changed());
    }
    let excluded = record.meta.excluded;
    map_lines(&files.answers(), |line| {
        let ours = field(line, "id") == Some(id)
            && serde_json::from_value::<AnswerRecord>(line.clone())
                .ok()
                .and_then(|r| AnswerText::of(&r))
                .as_ref()
                == Some(shown);
        if ours {
            rewrite(line, edited);
        }
        ours
    })?;
    Ok(excluded)
}

/// Puts `edited` in the last assistant message of the answer `line` and marks it edited.
fn rewrite(line: &mut Value, edited: &AnswerText) {
    let reasoning = (!edited.reasoning.is_empty()).then(|| edited.reasoning.clone());
    let assistant = line
        .get_mut("messages")
        .and_then(Value::as_array_mut)
        .and_then(|messages| {
            messages
                .iter_mut()
                .rev()
                .find(|m| field(m, "role") == Some("assistant"))
        })
        .and_then(Value::as_object_mut);
    if let Some(message) = assistant {
        message.insert("content".into(), Value::String(edited.content.clone()));
        match &reasoning {
            Some(reasoning) => {
                message.insert("reasoning_content".into(), Value::String(reasoning.clone()));
            }
            None => {
                message.remove("reasoning_content");
            }
        }
    }
    if let Some(meta) = line.get_mut("meta").and_then(Value::as_object_mut) {
        meta.insert("edited".into(), Value::Bool(true));
        let kind_known = meta.get("reasoning_kind").is_some_and(|k| !k.is_null());
        match reasoning {
            None => {
                meta.insert("reasoning_kind".into(), Value::Null);
            }
            Some(_) if !kind_known => {
                meta.insert("reasoning_kind".into(), Value::String("raw".into()));
            }
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::records::test_answer;
    use crate::llm::ReasoningKind;

    fn text(reasoning: &str, content: &str) -> AnswerText {
        AnswerText {
            reasoning: reasoning.into(),
            content: content.into(),
        }
    }

    #[test]
    fn an_answer_renders_and_parses_back_with_or_without_reasoning_and_crlf() {
        for answer in [
            text("think\n\nmore", "line one\n# a heading\nline three"),
            text("", "just the answer"),
        ] {
            let rendered = render(&answer);
            assert!(rendered.starts_with("# "), "{rendered}");
            assert_eq!(parse(&rendered).unwrap(), answer);
            assert_eq!(parse(&format!("{rendered}\n\n")).unwrap(), answer);
            assert_eq!(parse(&rendered.replace('\n', "\r\n")).unwrap(), answer);
        }
        assert_eq!(
            parse(&format!(
                "{REASONING_MARKER}  \n\nr\n\n{ANSWER_MARKER}\n\na\n"
            ))
            .unwrap(),
            text("r", "a"),
            "blank lines around each part and a marker's trailing spaces"
        );
    }

    #[test]
    fn a_damaged_marker_is_refused_naming_it() {
        let rendered = render(&text("r", "a"));
        for (damaged, marker, problem) in [
            (
                rendered.replace(ANSWER_MARKER, "===== answer ====="),
                ANSWER_MARKER,
                "missing",
            ),
            (
                rendered.replace(REASONING_MARKER, ""),
                REASONING_MARKER,
                "missing",
            ),
            (
                format!("{rendered}\n{ANSWER_MARKER}\n"),
                ANSWER_MARKER,
                "more than once",
            ),
            (
                format!("{ANSWER_MARKER}\na\n{REASONING_MARKER}\nr"),
                REASONING_MARKER,
                "must come before",
            ),
        ] {
            let error = parse(&damaged).unwrap_err().to_string();
            assert!(error.contains(marker) && error.contains(problem), "{error}");
        }
    }

    fn setup() -> (tempfile::TempDir, DataFiles, String) {
        let dir = tempfile::tempdir().unwrap();
        let files = DataFiles::new(dir.path());
        let mut other = test_answer(("other", "t", "s"), ReasoningKind::Raw, None);
        other.meta.input_tokens = 7;
        let ours = test_answer(
            ("ours", "t", "s"),
            ReasoningKind::Raw,
            Some(Exclusion::Truncated),
        );
        let other = serde_json::to_string(&other).unwrap();
        let before = format!(
            "{other}\n{{torn\n{}\n{other}\n",
            serde_json::to_string(&ours).unwrap()
        );
        std::fs::write(files.answers(), &before).unwrap();
        (dir, files, before)
    }

    #[test]
    fn an_edit_rewrites_only_its_answer_keeping_the_other_fields() {
        let (_dir, files, before) = setup();
        let excluded = edit_answer(
            &files,
            "ours",
            &text("r", "a"),
            &text("", "a better answer"),
        )
        .unwrap();
        assert_eq!(excluded, Some(Exclusion::Truncated));
        let after = std::fs::read_to_string(files.answers()).unwrap();
        let (before_lines, after_lines): (Vec<&str>, Vec<&str>) =
            (before.lines().collect(), after.lines().collect());
        assert_eq!(after_lines.len(), 4);
        for at in [0, 1, 3] {
            assert_eq!(after_lines[at], before_lines[at], "untouched line {at}");
        }
        let record: AnswerRecord = serde_json::from_str(after_lines[2]).unwrap();
        assert_eq!(AnswerText::of(&record), Some(text("", "a better answer")));
        assert_eq!(record.messages[0].content, "q", "the question stays");
        assert_eq!(record.meta.reasoning_kind, None, "no reasoning, no kind");
        assert_eq!(record.meta.excluded, Some(Exclusion::Truncated));
        assert_eq!(record.meta.finish_reason.as_deref(), Some("stop"));
        assert_eq!(record.meta.output_tokens, 1);
        assert!(record.meta.edited);

        edit_answer(
            &files,
            "ours",
            &text("", "a better answer"),
            &text("typed reasoning", "a better answer"),
        )
        .unwrap();
        let (answers, _) = read_jsonl::<AnswerRecord>(&files.answers()).unwrap();
        assert_eq!(answers[1].meta.reasoning_kind, Some(ReasoningKind::Raw));
        assert_eq!(
            answers[1].messages[1].reasoning_content.as_deref(),
            Some("typed reasoning")
        );
    }

    #[test]
    fn an_answer_changed_on_disk_gone_or_emptied_is_refused_and_nothing_is_written() {
        let (_dir, files, before) = setup();
        for (id, shown, edited) in [
            ("ours", text("r", "not what is on disk"), text("", "x")),
            ("gone", text("r", "a"), text("", "x")),
            ("ours", text("r", "a"), text("r", " \n ")),
        ] {
            let error = edit_answer(&files, id, &shown, &edited).unwrap_err();
            assert!(
                matches!(error, EditError::Changed { .. } | EditError::Empty { .. }),
                "{error}"
            );
            assert_eq!(std::fs::read_to_string(files.answers()).unwrap(), before);
        }
    }
}

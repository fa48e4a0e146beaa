//! Checks a chat JSONL file (`data/train.jsonl`, `data/eval.jsonl`) before training
//! starts, so a broken line fails `train` at once instead of failing Axolotl's data
//! preparation tens of seconds into a job. Each non-blank line must be a JSON object
//! with a non-empty `messages` array, the shape Axolotl's `chat_template` dataset
//! type reads (Axolotl docs, "Conversation" dataset formats). Reading goes through
//! [`super::read_jsonl`], so lines are numbered and torn lines reported the same way
//! as everywhere else.

use std::path::Path;

use serde::{Deserialize, Deserializer};

use super::jsonl::{JsonlError, read_jsonl};

/// The part of a chat line that training needs: a non-empty `messages` array.
#[derive(Debug, Deserialize)]
struct ChatLine {
    #[serde(deserialize_with = "non_empty_array")]
    #[allow(dead_code, reason = "read only to check its shape")]
    messages: Vec<serde_json::Value>,
}

/// Deserializes a JSON array that holds at least one element.
fn non_empty_array<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<serde_json::Value>, D::Error> {
    let values = Vec::<serde_json::Value>::deserialize(deserializer)?;
    if values.is_empty() {
        return Err(serde::de::Error::custom("`messages` is empty"));
    }
    Ok(values)
}

/// A line of a chat file that training cannot use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadChatLine {
    /// 1-based line number.
    pub line: usize,
    /// Why (a JSON syntax error, a value that is not an object, a missing, non-array
    /// or empty `messages`).
    pub reason: String,
}

/// The first line of the chat JSONL file `path` that is not a JSON object with a
/// non-empty `messages` array, or `None` when every line is one. Blank lines are
/// ignored; a missing file has no bad line.
///
/// # Errors
///
/// [`JsonlError::Io`] when the file exists but cannot be read.
pub fn first_bad_chat_line(path: &Path) -> Result<Option<BadChatLine>, JsonlError> {
    let (_, skipped) = read_jsonl::<ChatLine>(path)?;
    Ok(skipped.into_iter().next().map(|skipped| BadChatLine {
        line: skipped.line,
        reason: skipped.reason,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Option<BadChatLine> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("train.jsonl");
        std::fs::write(&path, text).unwrap();
        first_bad_chat_line(&path).unwrap()
    }

    #[test]
    fn good_lines_pass_and_each_kind_of_bad_line_is_named() {
        let good = r#"{"messages":[{"role":"user","content":"hi"}]}"#;
        assert_eq!(check(&format!("{good}\n\n{good}")), None);
        for (bad, reason) in [
            ("{not json", "key must be a string"),
            ("[1, 2]", "invalid type"),
            (r#"{"text":"x"}"#, "missing field `messages`"),
            (r#"{"messages":"x"}"#, "invalid type"),
            (r#"{"messages":[]}"#, "`messages` is empty"),
        ] {
            let found = check(&format!("{good}\n{good}\n{bad}\n{good}\n")).unwrap();
            assert_eq!(found.line, 3, "{bad}");
            assert!(found.reason.contains(reason), "{bad}: {}", found.reason);
        }
    }

    #[test]
    fn a_missing_file_has_no_bad_line() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            first_bad_chat_line(&dir.path().join("none.jsonl")).unwrap(),
            None
        );
    }
}

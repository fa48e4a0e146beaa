//! The judge's reply and the verdicts file (CMP-15, CMP-18): the JSON object
//! `{"verdict": "A"|"B"|"tie", "reason": "..."}` found in a reply (bare, in a code
//! fence, or amid text), the key of `verdicts-<key>.jsonl` (judge provider, model and
//! prompt text), and the line written per question. Pure.

use serde::{Deserialize, Serialize};
use sha2::Digest as _;

use super::order::{Order, Outcome, Verdict};

/// A parsed reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The verdict.
    pub verdict: Verdict,
    /// The one-sentence reason.
    pub reason: String,
}

#[derive(Deserialize)]
struct Wire {
    verdict: String,
    #[serde(default)]
    reason: Option<String>,
}

/// The verdict of `reply`: the first JSON object in it with a `verdict` of `A`, `B` or
/// `tie` (any case). `Err` says why not, for the verdict line.
///
/// # Errors
///
/// When no such object is in the reply.
pub fn parse(reply: &str) -> Result<Parsed, String> {
    let mut seen = None;
    for (start, _) in reply.match_indices('{') {
        let mut stream =
            serde_json::Deserializer::from_str(&reply[start..]).into_iter::<serde_json::Value>();
        let Some(Ok(value)) = stream.next() else {
            continue;
        };
        let Ok(wire) = serde_json::from_value::<Wire>(value) else {
            continue;
        };
        let verdict = match wire.verdict.trim().to_ascii_lowercase().as_str() {
            "a" => Verdict::A,
            "b" => Verdict::B,
            "tie" => Verdict::Tie,
            other => {
                seen = Some(format!("verdict `{other}` is none of A, B, tie"));
                continue;
            }
        };
        return Ok(Parsed {
            verdict,
            reason: wire.reason.unwrap_or_default().trim().to_owned(),
        });
    }
    Err(seen.unwrap_or_else(|| "no JSON object with a `verdict` in the reply".to_owned()))
}

/// The key of the verdicts file: the first 12 hex digits of the SHA-256 of the judge's
/// provider, model and prompt text (CMP-18 \[design\]).
#[must_use]
pub fn judge_key(provider: &str, model: &str, prompt: &str) -> String {
    let mut hash = sha2::Sha256::new();
    for part in [provider, model, prompt] {
        hash.update(part.len().to_le_bytes());
        hash.update(part.as_bytes());
    }
    hex::encode(hash.finalize())[..12].to_owned()
}

/// The verdicts file's name for `key`.
#[must_use]
pub fn file_name(key: &str) -> String {
    format!("verdicts-{key}.jsonl")
}

/// One judgement of one order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Judged {
    /// The order the judge saw.
    pub order: Order,
    /// Its verdict; `None` when the reply did not parse twice.
    pub verdict: Option<Verdict>,
    /// The child's result of this order alone.
    pub result: Outcome,
    /// The judge's reason (or why the reply did not parse).
    pub reason: String,
    /// Requests made for it (2 when the first reply did not parse).
    pub attempts: u32,
}

/// A line of `verdicts-<key>.jsonl` (CMP-18): one per question, written once it is
/// judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictLine {
    /// The question's ID.
    pub id: String,
    /// The question's result for the child: the first order's, a tie when the swapped
    /// order's differs, a loss for a child error.
    pub result: Outcome,
    /// The judgement in the drawn order; `None` for a child error (not judged, CMP-17).
    pub first: Option<Judged>,
    /// The judgement in the swapped order, for a question of the swap sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swapped: Option<Judged>,
    /// The verdict changed with the order (counted as a tie).
    #[serde(default)]
    pub flipped: bool,
    /// The child did not answer (counted as a loss, never judged).
    #[serde(default)]
    pub child_error: bool,
}

/// The questions of `lines` that need no new request: those with a verdict. An
/// unparsed one is asked again (a `--rejudge` after the judge's replies could not be
/// read), and its new line, appended, replaces it when the file is read.
#[must_use]
pub fn decided_ids(lines: &[VerdictLine]) -> std::collections::HashSet<String> {
    lines
        .iter()
        .filter(|l| l.result != Outcome::Unparsed)
        .map(|l| l.id.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regression_unparsed_verdicts_are_asked_again_decided_ones_are_not() {
        let line = |id: &str, result: Outcome| VerdictLine {
            id: id.to_owned(),
            result,
            first: None,
            swapped: None,
            flipped: false,
            child_error: false,
        };
        let lines = [
            line("q1", Outcome::Win),
            line("q2", Outcome::Unparsed),
            line("q3", Outcome::Loss),
            line("q2", Outcome::Tie),
            line("q4", Outcome::Unparsed),
        ];
        let decided = decided_ids(&lines);
        let mut ids: Vec<&str> = decided.iter().map(String::as_str).collect();
        ids.sort_unstable();
        assert_eq!(ids, ["q1", "q2", "q3"]);
    }

    #[test]
    fn replies_parse_bare_fenced_or_amid_text() {
        type Expected<'a> = Result<(Verdict, &'a str), ()>;
        let table: [(&str, Expected<'_>); 8] = [
            (
                r#"{"verdict": "A", "reason": "More complete."}"#,
                Ok((Verdict::A, "More complete.")),
            ),
            (
                "```json\n{\"verdict\":\"b\",\"reason\":\"x\"}\n```",
                Ok((Verdict::B, "x")),
            ),
            (
                r#"I think {"verdict": "tie", "reason": " same "} overall."#,
                Ok((Verdict::Tie, "same")),
            ),
            (
                r#"{"note": {"x": 1}} then {"verdict": "TIE"}"#,
                Ok((Verdict::Tie, "")),
            ),
            (r#"{"verdict": "C", "reason": "?"}"#, Err(())),
            ("A is better.", Err(())),
            (r#"{"verdict": "A", "reason": "cut"#, Err(())),
            ("", Err(())),
        ];
        for (reply, expected) in table {
            let got = parse(reply).map(|p| (p.verdict, p.reason));
            match expected {
                Ok((verdict, reason)) => {
                    assert_eq!(got, Ok((verdict, reason.to_owned())), "{reply}");
                }
                Err(()) => assert!(got.is_err(), "{reply}: {got:?}"),
            }
        }
        assert!(parse(r#"{"verdict": "C"}"#).unwrap_err().contains("`c`"));
    }

    #[test]
    fn the_judge_key_changes_with_provider_model_and_prompt() {
        let key = judge_key("p", "m", "prompt");
        assert_eq!(key.len(), 12);
        assert_eq!(key, judge_key("p", "m", "prompt"));
        for other in [
            judge_key("q", "m", "prompt"),
            judge_key("p", "n", "prompt"),
            judge_key("p", "m", "prompt!"),
            judge_key("pm", "", "prompt"),
        ] {
            assert_ne!(key, other);
        }
        assert_eq!(file_name("abc"), "verdicts-abc.jsonl");
    }
}

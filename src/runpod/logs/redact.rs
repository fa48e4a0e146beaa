//! POD-59: every line of a pod's log is redacted before it is written or shown. Known
//! secrets (the Runpod key, the job's own secrets) go through the process's
//! [`Redactor`]; then the shapes of secrets nobody registered: Runpod keys (`rpa_…`,
//! `rps_…`), Hugging Face tokens (`hf_…`), PEM private keys, the value of `NAME=value`
//! when NAME contains `KEY`, `TOKEN`, `SECRET` or `PASSWORD`, and of `NAME: value`
//! (quoted or not) when NAME ends with one of them, runs of 200 or more base64
//! characters, and lines made only of 40 or more. Each becomes [`MARK`].

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

use crate::llm::Redactor;

/// What a redacted part becomes (POD-59).
pub const MARK: &str = "***";

/// A pattern of this module: a constant, so `None` never happens (a test compiles each).
type Pattern = LazyLock<Option<Regex>>;

fn compiled(text: &str) -> Option<Regex> {
    Regex::new(text).ok()
}

/// `text` with every match of `pattern` replaced by `with`.
fn replace<'a>(pattern: &Pattern, text: &'a str, with: &str) -> Cow<'a, str> {
    match pattern.as_ref() {
        Some(regex) => regex.replace_all(text, with),
        None => Cow::Borrowed(text),
    }
}

static KEY_SHAPES: Pattern =
    LazyLock::new(|| compiled(r"\b(?:rp[as]_[A-Za-z0-9]{16,}|hf_[A-Za-z0-9]{20,})\b"));
static PEM: Pattern = LazyLock::new(|| compiled(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*"));
static ASSIGNED: Pattern = LazyLock::new(|| {
    compiled(
        r"(?i)\b([A-Za-z0-9_.\-]*(?:KEY|TOKEN|SECRET|PASSWORD)[A-Za-z0-9_.\-]*)=(?:'[^']*'|\x22[^\x22]*\x22|\S+)",
    )
});
static COLON: Pattern = LazyLock::new(|| {
    compiled(
        r#"(?i)\b([A-Za-z0-9_.\-]*(?:KEY|TOKEN|SECRET|PASSWORD))(["']?)(\s*):(\s*)(?:"[^"]*"|'[^']*'|[^\s,;}]+)"#,
    )
});
static LONG_BASE64: Pattern = LazyLock::new(|| compiled(r"[A-Za-z0-9+/=_\-]{200,}"));
static BASE64_LINE: Pattern = LazyLock::new(|| compiled(r"^\s*[A-Za-z0-9+/=]{40,}\s*$"));

/// `line` with every secret and secret-shaped part replaced by [`MARK`] (POD-59).
#[must_use]
pub fn redact(line: &str, known: &Redactor) -> String {
    let line = known.whole(line).replace(crate::llm::redact::MARK, MARK);
    if BASE64_LINE.as_ref().is_some_and(|r| r.is_match(&line)) {
        return MARK.to_owned();
    }
    let line = replace(&PEM, &line, MARK);
    let line = replace(&KEY_SHAPES, &line, MARK);
    let line = replace(&ASSIGNED, &line, &format!("${{1}}={MARK}"));
    let line = replace(&COLON, &line, &format!("${{1}}${{2}}${{3}}:${{4}}{MARK}"));
    replace(&LONG_BASE64, &line, MARK).into_owned()
}

#[cfg(test)]
mod tests {
    use secrecy::SecretString;

    use super::*;

    #[test]
    fn every_listed_shape_is_redacted_and_ordinary_lines_stay() {
        let known = Redactor::new();
        known.add(&SecretString::from("rpa_CANARYa1B2c3D4e5F6g7H8i9J0"));
        known.add(&SecretString::from("job-secret-CANARY-Qw7Er4Ty1"));
        let pem_body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj";
        let long = "QUJD".repeat(60);
        let wrapped = format!("blob {long} end");
        let cases = [
            ("Model loaded.", "Model loaded."),
            (
                "step 10/200 loss=1.234 lr=2e-4",
                "step 10/200 loss=1.234 lr=2e-4",
            ),
            (
                "key rpa_CANARYa1B2c3D4e5F6g7H8i9J0 echoed",
                "key *** echoed",
            ),
            (
                "a job secret job-secret-CANARY-Qw7Er4Ty1 here",
                "a job secret *** here",
            ),
            ("other rps_ZZZZ1111YYYY2222XXXX3333 key", "other *** key"),
            ("token hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "token ***"),
            ("-----BEGIN OPENSSH PRIVATE KEY-----", "***"),
            ("x -----BEGIN RSA PRIVATE KEY----- rest", "x ***"),
            (pem_body, "***"),
            ("HF_TOKEN=abc123 next", "HF_TOKEN=*** next"),
            ("export WANDB_API_KEY='a b c'", "export WANDB_API_KEY=***"),
            ("db_password=\"p w\" ok", "db_password=*** ok"),
            ("secret: hunter2", "secret: ***"),
            (
                "\"api_key\": \"sk-live-9\", \"n\": 1",
                "\"api_key\": ***, \"n\": 1",
            ),
            ("Authorization-Token : 'abc'", "Authorization-Token : ***"),
            ("the key: was lost", "the key: *** lost"),
            (long.as_str(), "***"),
            (wrapped.as_str(), "blob *** end"),
        ];
        for (raw, want) in cases {
            assert_eq!(redact(raw, &known), want, "{raw}");
        }
    }

    #[test]
    fn every_pattern_compiles() {
        for pattern in [
            &KEY_SHAPES,
            &PEM,
            &ASSIGNED,
            &COLON,
            &LONG_BASE64,
            &BASE64_LINE,
        ] {
            assert!(pattern.is_some());
        }
    }
}

//! `[export]`: GGUF export and the Ollama model, with defaults and rules
//! (spec/config.md, table 2.8).

use serde::{Deserialize, Serialize};

use super::rules::Check;

/// GGUF quantization types accepted by `[export] quantize`.
pub const QUANTIZE_TYPES: [&str; 10] = [
    "Q4_K_M", "Q4_K_S", "Q5_K_M", "Q5_K_S", "Q6_K", "Q8_0", "Q3_K_M", "Q2_K", "F16", "BF16",
];

/// `[export]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct Export {
    /// Export inside each training job.
    pub after_training: bool,
    /// GGUF quantization type, one of [`QUANTIZE_TYPES`].
    pub quantize: String,
    /// Ollama model name for `ollama create`.
    pub ollama_name: Option<String>,
    /// llama.cpp pre-tokenizer name (`tokenizer.ggml.pre`) for a custom BPE tokenizer
    /// whose hash the pinned converter does not know (issue 14); used only then.
    pub pre_tokenizer: Option<String>,
}

impl Default for Export {
    fn default() -> Self {
        Self {
            after_training: false,
            quantize: "Q4_K_M".to_owned(),
            ollama_name: None,
            pre_tokenizer: None,
        }
    }
}

/// The rules of `[export]`.
pub(super) fn check(check: &mut Check<'_>, export: &Export) {
    if !QUANTIZE_TYPES.contains(&export.quantize.as_str()) {
        check.fail(
            "export.quantize",
            format!(
                "invalid value: expected one of {}",
                QUANTIZE_TYPES.join(", ")
            ),
        );
    }
    if let Some(name) = &export.ollama_name {
        check.non_empty("export.ollama_name", name);
    }
    if let Some(pre) = &export.pre_tokenizer {
        if let Some(problem) = pre_tokenizer_problem(pre) {
            check.fail("export.pre_tokenizer", problem);
        }
    }
}

/// What is wrong with `pre` as a llama.cpp pre-tokenizer name, if anything: a name of
/// `a-z`, `0-9`, `-`, `_` and `.`; `gpt2` (which `llama-server` refuses) is pointed at
/// `gpt-2`.
#[must_use]
pub fn pre_tokenizer_problem(pre: &str) -> Option<String> {
    if pre == "gpt2" {
        return Some(
            "invalid value: llama.cpp names GPT-2's pre-tokenizer `gpt-2` (`gpt2` is refused by `llama-server`)"
                .to_owned(),
        );
    }
    let valid = !pre.is_empty()
        && pre
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'));
    (!valid).then(|| {
        "invalid value: expected a llama.cpp pre-tokenizer name such as `gpt-2` or `llama-bpe` (`a-z`, `0-9`, `-`, `_`, `.`)"
            .to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pre_tokenizer_names_are_checked_and_gpt2_points_at_gpt_dash_2() {
        assert_eq!(pre_tokenizer_problem("gpt-2"), None);
        assert_eq!(pre_tokenizer_problem("llama-bpe"), None);
        assert!(pre_tokenizer_problem("gpt2").unwrap().contains("`gpt-2`"));
        for bad in ["", "GPT-2", "gpt 2", "a;b", "../x"] {
            assert!(pre_tokenizer_problem(bad).is_some(), "{bad:?}");
        }
    }
}

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
}

impl Default for Export {
    fn default() -> Self {
        Self {
            after_training: false,
            quantize: "Q4_K_M".to_owned(),
            ollama_name: None,
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
}

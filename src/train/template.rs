//! Whether the chat template of a run renders `reasoning_content` (spec/training.md,
//! TGT-12). The check is by name only: a local path or a renamed model may be warned
//! about wrongly.

use crate::config::Training;

/// Axolotl chat template names that render `reasoning_content` (TGT-12).
pub const REASONING_TEMPLATES: [&str; 5] =
    ["qwen3", "qwen3_5", "exaone4", "gemma4", "gemma4_unified"];

/// Whether the template in use, `axolotl_extra.chat_template` when set, else the base
/// model's own, is known to render `reasoning_content`: one of
/// [`REASONING_TEMPLATES`], or the official template of a Qwen3 base model (its name
/// holds `qwen3`).
#[must_use]
pub fn renders_reasoning(training: &Training) -> bool {
    match training
        .axolotl_extra
        .get("chat_template")
        .and_then(toml::Value::as_str)
    {
        Some("tokenizer_default") | None => {
            training.base_model.to_ascii_lowercase().contains("qwen3")
        }
        Some(name) => REASONING_TEMPLATES.contains(&name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn training(base: &str, template: Option<&str>) -> Training {
        let mut text = format!("target = \"l\"\nbase_model = \"{base}\"\nadapter = \"lora\"\n");
        if let Some(template) = template {
            text = text + "[axolotl_extra]\nchat_template = \"" + template + "\"\n";
        }
        toml::from_str(&text).unwrap()
    }

    #[test]
    fn by_name_only() {
        assert!(renders_reasoning(&training("Qwen/Qwen3-0.6B", None)));
        assert!(!renders_reasoning(&training(
            "meta-llama/Llama-3.2-1B",
            None
        )));
        assert!(renders_reasoning(&training("x", Some("gemma4"))));
        assert!(!renders_reasoning(&training(
            "Qwen/Qwen3-0.6B",
            Some("chatml")
        )));
        assert!(!renders_reasoning(&training(
            "/models/tiny",
            Some("tokenizer_default")
        )));
    }
}

//! Reasoning shapes shared by the protocols: the leading `<think>` block some open models
//! write into the answer, and the models that never expose raw reasoning (PRV-9).

/// Whether `model` hides its raw reasoning on the openai protocol (PRV-9): Claude,
/// Gemini and OpenAI models (`openai/`, `gpt-`, `o1`/`o3`/`o4`… names), except the
/// open-weight `gpt-oss` family. Case-insensitive.
#[must_use]
pub fn hides_reasoning(model: &str) -> bool {
    let model = model.to_lowercase();
    if model.contains("gpt-oss") {
        return false;
    }
    if ["claude", "gemini", "openai/", "gpt-"]
        .iter()
        .any(|needle| model.contains(needle))
    {
        return true;
    }
    // OpenAI o-series: the name (after any `vendor/`) is `o` then a digit (`o1`,
    // `o3-mini`, `o4-mini-high`).
    let name = model.rsplit('/').next().unwrap_or(&model);
    let mut chars = name.chars();
    chars.next() == Some('o') && chars.next().is_some_and(|c| c.is_ascii_digit())
}

/// Splits a leading `<think>…</think>` block off `content`: returns the reasoning (when
/// the block is there and closed) and the answer text after it, trimmed at its start.
#[must_use]
pub fn split_think(content: &str) -> (Option<String>, String) {
    let trimmed = content.trim_start();
    if let Some(rest) = trimmed.strip_prefix("<think>") {
        if let Some(end) = rest.find("</think>") {
            let reasoning = rest[..end].trim().to_owned();
            let answer = rest[end + "</think>".len()..].trim_start().to_owned();
            return (Some(reasoning), answer);
        }
    }
    (None, content.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_reasoning_models() {
        for model in [
            "anthropic/claude-sonnet-4.5",
            "google/gemini-2.5-pro",
            "openai/gpt-5",
            "gpt-4o",
            "o3-mini",
            "openai/o4-mini-high",
            "O1",
        ] {
            assert!(hides_reasoning(model), "{model}");
        }
        for model in [
            "openai/gpt-oss-120b",
            "deepseek/deepseek-r1",
            "qwen/qwen3-235b",
            "olmo-2",
            "moonshotai/kimi-k2",
        ] {
            assert!(!hides_reasoning(model), "{model}");
        }
    }

    #[test]
    fn think_blocks() {
        assert_eq!(
            split_think("<think> step 1 </think>\n\nAnswer."),
            (Some("step 1".to_owned()), "Answer.".to_owned())
        );
        assert_eq!(split_think("No block."), (None, "No block.".to_owned()));
        assert_eq!(
            split_think("<think>unclosed"),
            (None, "<think>unclosed".to_owned())
        );
        assert_eq!(
            split_think("Text <think>x</think>"),
            (None, "Text <think>x</think>".to_owned())
        );
    }
}

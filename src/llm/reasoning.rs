//! Reasoning shapes shared by the protocols: the `<think>` tags some open models write into
//! the answer (both the whole block and the lone closing tag of a pre-filled template), and
//! which models hand back a summary instead of their raw reasoning (PRV-9), decided per
//! protocol and model by [`rule`].

use crate::config::Protocol;

use super::ReasoningKind;

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

/// What the reasoning of a model is taken to be, by protocol and model identifier; shown by
/// `config check` and applied to every reply.
///
/// On the anthropic protocol only models that Anthropic documents as returning summarized
/// thinking are summaries. Anthropic's extended-thinking guide ("Differences in thinking
/// across model versions", docs.claude.com/en/docs/build-with-claude/extended-thinking, and
/// the same table in Amazon Bedrock's "Differences in thinking across model versions"):
/// Claude Sonnet 3.7 "returns the full thinking output", Claude 4 models "return
/// summarized thinking"; the budget "applies to full thinking tokens, and not to the
/// summarized output" "in Claude 4 and later models". Any other model on that protocol
/// (an open model behind an Anthropic-compatible endpoint) writes its own reasoning into
/// its thinking blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasoningRule {
    /// anthropic protocol, Claude 4 or later: thinking blocks are summaries.
    ClaudeSummarized,
    /// anthropic protocol, Claude Sonnet 3.7: thinking blocks are the full thinking.
    ClaudeFull,
    /// anthropic protocol, a model not documented to summarize: thinking blocks are raw.
    ThinkingRaw,
    /// openai protocol, a Claude, Gemini or OpenAI model (PRV-9): reasoning is a summary.
    Hidden,
    /// openai protocol, any other model: reasoning fields and `<think>` tags are raw.
    Raw,
}

impl ReasoningRule {
    /// The kind that readable reasoning under this rule gets.
    #[must_use]
    pub fn kind(self) -> ReasoningKind {
        match self {
            Self::ClaudeSummarized | Self::Hidden => ReasoningKind::Summary,
            Self::ClaudeFull | Self::ThinkingRaw | Self::Raw => ReasoningKind::Raw,
        }
    }

    /// Whether every reply of the model would be excluded as `no_raw_reasoning` with
    /// `reasoning = true` (PRV-10, PIPE-27).
    #[must_use]
    pub fn never_raw(self) -> bool {
        self.kind() != ReasoningKind::Raw
    }
}

impl std::fmt::Display for ReasoningRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::ClaudeSummarized => {
                "thinking blocks are summaries: Anthropic documents summarized thinking for Claude 4 and later"
            }
            Self::ClaudeFull => {
                "thinking blocks are raw: Anthropic documents full thinking for Claude Sonnet 3.7"
            }
            Self::ThinkingRaw => {
                "thinking blocks are raw: not a Claude model documented to summarize its thinking"
            }
            Self::Hidden => {
                "reasoning is a summary: Claude, Gemini and OpenAI models hide their raw reasoning"
            }
            Self::Raw => "reasoning is raw: an open model",
        })
    }
}

/// The rule for `model` on `protocol`.
#[must_use]
pub fn rule(protocol: Protocol, model: &str) -> ReasoningRule {
    match protocol {
        Protocol::Openai if hides_reasoning(model) => ReasoningRule::Hidden,
        Protocol::Openai => ReasoningRule::Raw,
        Protocol::Anthropic => match claude_version(model) {
            Some(version) if version.major >= 4 => ReasoningRule::ClaudeSummarized,
            Some(ClaudeVersion {
                major: 3,
                minor: Some(7),
                family: Some("sonnet") | None,
            }) => ReasoningRule::ClaudeFull,
            _ => ReasoningRule::ThinkingRaw,
        },
    }
}

/// A Claude model's generation as its identifier spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ClaudeVersion {
    major: u32,
    minor: Option<u32>,
    family: Option<&'static str>,
}

/// Reads the generation out of a Claude model identifier in any of the spellings in use:
/// `claude-sonnet-4-5-20250929`, `claude-opus-4-1`, `claude-3-7-sonnet-20250219`, Bedrock's
/// `us.anthropic.claude-sonnet-4-20250514-v1:0`, Vertex's `claude-opus-4@20250514`,
/// OpenRouter's `anthropic/claude-3.7-sonnet`. A date (eight digits) ends the version.
fn claude_version(model: &str) -> Option<ClaudeVersion> {
    let lower = model.to_lowercase();
    let start = lower.find("claude")? + "claude".len();
    let mut family = None;
    let mut numbers: Vec<u32> = Vec::new();
    for token in lower[start..]
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|token| !token.is_empty())
    {
        match token {
            "opus" | "sonnet" | "haiku" if family.is_none() => {
                family = Some(match token {
                    "opus" => "opus",
                    "sonnet" => "sonnet",
                    _ => "haiku",
                });
            }
            _ if token.len() <= 2
                && token.bytes().all(|b| b.is_ascii_digit())
                && numbers.len() < 2 =>
            {
                numbers.push(token.parse().ok()?);
            }
            _ => break,
        }
    }
    Some(ClaudeVersion {
        major: *numbers.first()?,
        minor: numbers.get(1).copied(),
        family,
    })
}

/// Splits the reasoning off `content`: a leading `<think>…</think>` block, or text before a
/// lone closing `</think>` with no opening tag before it (a server whose chat template
/// pre-fills `<think>` in the prompt, such as Qwen without a reasoning parser, sends only
/// the closing tag). Returns the reasoning (trimmed) and the answer after it (trimmed at
/// its start); content without either shape comes back whole.
#[must_use]
pub fn split_think(content: &str) -> (Option<String>, String) {
    const OPEN: &str = "<think>";
    const CLOSE: &str = "</think>";
    let trimmed = content.trim_start();
    let body = trimmed.strip_prefix(OPEN).unwrap_or(trimmed);
    let Some(end) = body.find(CLOSE) else {
        return (None, content.to_owned());
    };
    if body[..end].contains(OPEN) {
        // An opening tag inside the text (not at its start): prose about the tags.
        return (None, content.to_owned());
    }
    let reasoning = body[..end].trim().to_owned();
    let answer = body[end + CLOSE.len()..].trim_start().to_owned();
    (Some(reasoning), answer)
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
    fn anthropic_thinking_is_a_summary_only_for_models_documented_to_summarize() {
        for model in [
            "claude-opus-4-20250514",
            "claude-opus-4-1-20250805",
            "claude-opus-4-5-20251101",
            "claude-opus-4-6",
            "claude-sonnet-4-20250514",
            "claude-sonnet-4-5-20250929",
            "claude-sonnet-4-6",
            "claude-haiku-4-5-20251001",
            "claude-sonnet-4-0",
            "us.anthropic.claude-sonnet-4-20250514-v1:0",
            "claude-opus-4@20250514",
            "anthropic/claude-opus-4.1",
            "Claude-Opus-4-6",
            "claude-opus-5",
        ] {
            assert_eq!(
                rule(Protocol::Anthropic, model),
                ReasoningRule::ClaudeSummarized,
                "{model}"
            );
        }
        for model in [
            "claude-3-7-sonnet-20250219",
            "claude-3-7-sonnet-latest",
            "anthropic.claude-3-7-sonnet-20250219-v1:0",
            "anthropic/claude-3.7-sonnet:thinking",
        ] {
            assert_eq!(
                rule(Protocol::Anthropic, model),
                ReasoningRule::ClaudeFull,
                "{model}"
            );
        }
        for model in [
            "MiniMax-M2",
            "kimi-k2-thinking",
            "deepseek-reasoner",
            "glm-4.6",
            "qwen3-235b-a22b",
            "claude-3-5-sonnet-20241022",
            "claude-2.1",
            "claude-next",
        ] {
            assert_eq!(
                rule(Protocol::Anthropic, model),
                ReasoningRule::ThinkingRaw,
                "{model}"
            );
        }
        assert_eq!(
            rule(Protocol::Openai, "anthropic/claude-3.7-sonnet"),
            ReasoningRule::Hidden
        );
        assert_eq!(rule(Protocol::Openai, "qwen/qwen3-32b"), ReasoningRule::Raw);
        assert!(ReasoningRule::ClaudeSummarized.never_raw());
        assert!(!ReasoningRule::ClaudeFull.never_raw());
        assert!(!ReasoningRule::ThinkingRaw.never_raw());
        assert!(
            ReasoningRule::ClaudeSummarized
                .to_string()
                .contains("Claude 4 and later")
        );
        assert!(ReasoningRule::ClaudeFull.to_string().contains("Sonnet 3.7"));
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

    #[test]
    fn reasoning_before_a_lone_closing_think_tag_is_split_off() {
        assert_eq!(
            split_think("Okay, the user asks about lifetimes.\nFirst…\n</think>\n\nLifetimes are…"),
            (
                Some("Okay, the user asks about lifetimes.\nFirst…".to_owned()),
                "Lifetimes are…".to_owned()
            )
        );
        assert_eq!(
            split_think("\n</think>\n\nAnswer"),
            (Some(String::new()), "Answer".to_owned())
        );
        // Prose that opens a tag before the closing one is an answer about the tags.
        let prose = "Wrap it as <think>x</think> in the template.";
        assert_eq!(split_think(prose), (None, prose.to_owned()));
        // Only the first closing tag ends the reasoning.
        assert_eq!(
            split_think("r</think>a </think> b"),
            (Some("r".to_owned()), "a </think> b".to_owned())
        );
    }
}

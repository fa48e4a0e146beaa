//! The Anthropic Messages API (PRV-1, PRV-6): `POST /messages` with the `x-api-key` and
//! `anthropic-version` headers; thinking is adaptive, or a fixed `budget_tokens` when
//! `thinking_budget` is set. Whether thinking blocks are a summary or the model's own
//! reasoning depends on the model ([`super::reasoning::rule`]): Anthropic documents
//! summarized thinking for Claude 4 and later and full thinking for Claude Sonnet 3.7;
//! any other model behind an Anthropic-compatible endpoint writes its own reasoning. A
//! reply without thinking blocks whose text carries `<think>` tags (such an endpoint
//! without a reasoning parser) gives its reasoning from the tags.

use serde_json::{Value, json};

use super::reasoning::{rule, split_think};
use super::{ChatRequest, Completion, Error, ReasoningKind, Role, Stop, Usage, WireProtocol};
use crate::config::ReasoningEffort;

/// The `anthropic-version` header value (Anthropic API reference, "Versioning").
pub const API_VERSION: &str = "2023-06-01";

/// The anthropic protocol.
#[derive(Debug, Clone, Copy, Default)]
pub struct Anthropic;

impl WireProtocol for Anthropic {
    fn chat_path(&self) -> &'static str {
        "/messages"
    }

    fn headers(&self, key: Option<&str>) -> Vec<(&'static str, String, bool)> {
        let mut headers = vec![("anthropic-version", API_VERSION.to_owned(), false)];
        if let Some(key) = key {
            headers.push(("x-api-key", key.to_owned(), true));
        }
        headers
    }

    fn chat_body(&self, role: &Role, request: &ChatRequest) -> Value {
        let mut body = json!({
            "model": role.model,
            "max_tokens": role.max_tokens,
            "messages": [{"role": "user", "content": request.user}],
        });
        if let Some(system) = &request.system {
            body["system"] = json!(system);
        }
        if let Some(temperature) = role.temperature {
            body["temperature"] = json!(temperature);
        }
        if role.reasoning {
            if let Some(budget) = role.thinking_budget {
                body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
            } else {
                body["thinking"] = json!({"type": "adaptive"});
                let effort = match role.reasoning_effort {
                    Some(ReasoningEffort::Low) => Some("low"),
                    Some(ReasoningEffort::Medium) => Some("medium"),
                    Some(ReasoningEffort::High) => Some("high"),
                    Some(ReasoningEffort::None) | None => None,
                };
                if let Some(effort) = effort {
                    body["output_config"] = json!({"effort": effort});
                }
            }
        }
        body
    }

    fn parse_chat(&self, role: &Role, body: &[u8]) -> Result<Completion, Error> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|error| Error::InvalidReply(format!("not JSON: {error}")))?;
        let blocks = value
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::InvalidReply("no `content` list in the reply".to_owned()))?;
        let mut text = String::new();
        let mut thinking = String::new();
        let mut redacted = false;
        for block in blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => text.push_str(
                    block
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                ),
                Some("thinking") => thinking.push_str(
                    block
                        .get("thinking")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                ),
                Some("redacted_thinking") => redacted = true,
                _ => {}
            }
        }
        let finish_reason = value
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let stop = match finish_reason.as_deref() {
            Some("max_tokens" | "model_context_window_exceeded") => Stop::Length,
            Some("refusal") => Stop::Refusal,
            _ => Stop::Normal,
        };
        let mut tagged = None;
        if thinking.trim().is_empty() && !redacted {
            let (think, answer) = split_think(&text);
            if think.is_some() {
                text = answer;
                tagged = think.filter(|t| !t.is_empty());
            }
        }
        let kind_of_text = rule(crate::config::Protocol::Anthropic, &role.model).kind();
        let (reasoning, kind) = if !role.reasoning {
            (None, None)
        } else if !thinking.trim().is_empty() {
            (Some(thinking), Some(kind_of_text))
        } else if let Some(tagged) = tagged {
            (Some(tagged), Some(kind_of_text))
        } else if redacted {
            (None, Some(ReasoningKind::Redacted))
        } else {
            (None, None)
        };
        let get = |name: &str| {
            value
                .pointer(&format!("/usage/{name}"))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        Ok(Completion {
            text,
            reasoning,
            reasoning_kind: kind,
            finish_reason,
            stop,
            usage: Usage {
                input_tokens: get("input_tokens"),
                output_tokens: get("output_tokens"),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(reasoning: bool) -> Role {
        Role {
            provider: "a".to_owned(),
            model: "claude-opus-4-6".to_owned(),
            reasoning,
            max_tokens: 4096,
            temperature: None,
            reasoning_effort: None,
            thinking_budget: None,
        }
    }

    #[test]
    fn body_thinking_modes() {
        let request = ChatRequest {
            system: Some("sys".into()),
            user: "q".into(),
        };
        let adaptive = Anthropic.chat_body(&role(true), &request);
        assert_eq!(adaptive["thinking"], json!({"type": "adaptive"}));
        assert_eq!(adaptive["system"], "sys");
        assert_eq!(adaptive["max_tokens"], 4096);
        assert!(adaptive.get("output_config").is_none());

        let mut effort = role(true);
        effort.reasoning_effort = Some(ReasoningEffort::High);
        assert_eq!(
            Anthropic.chat_body(&effort, &request)["output_config"],
            json!({"effort": "high"})
        );

        let mut budget = role(true);
        budget.thinking_budget = Some(2048);
        let body = Anthropic.chat_body(&budget, &request);
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert!(body.get("output_config").is_none());

        let plain = Anthropic.chat_body(&role(false), &request);
        assert!(plain.get("thinking").is_none());
    }

    fn reply_with_thinking(model: &str) -> Completion {
        let body = json!({
            "content": [
                {"type": "thinking", "thinking": "T", "signature": "s"},
                {"type": "text", "text": "A"}],
            "stop_reason": "end_turn"});
        let mut r = role(true);
        r.model = model.to_owned();
        Anthropic
            .parse_chat(&r, &serde_json::to_vec(&body).unwrap())
            .unwrap()
    }

    #[test]
    fn regression_thinking_blocks_are_a_summary_only_for_models_documented_to_summarize() {
        for (model, kind) in [
            ("claude-sonnet-4-5-20250929", ReasoningKind::Summary),
            ("claude-opus-4-1", ReasoningKind::Summary),
            ("claude-3-7-sonnet-20250219", ReasoningKind::Raw),
            ("MiniMax-M2", ReasoningKind::Raw),
            ("deepseek-reasoner", ReasoningKind::Raw),
        ] {
            let c = reply_with_thinking(model);
            assert_eq!(c.reasoning.as_deref(), Some("T"), "{model}");
            assert_eq!(c.reasoning_kind, Some(kind), "{model}");
            assert_eq!(c.text, "A", "{model}");
        }
    }

    #[test]
    fn think_tags_in_the_text_are_reasoning_when_no_thinking_block_came() {
        let body = json!({"content": [{"type": "text", "text": "R\n</think>\nA"}]});
        let mut r = role(true);
        r.model = "qwen3-coder".to_owned();
        let c = Anthropic
            .parse_chat(&r, &serde_json::to_vec(&body).unwrap())
            .unwrap();
        assert_eq!(
            (c.reasoning.as_deref(), c.reasoning_kind, c.text.as_str()),
            (Some("R"), Some(ReasoningKind::Raw), "A")
        );
    }

    #[test]
    fn thinking_blocks_are_a_summary() {
        let body = json!({
            "content": [
                {"type": "thinking", "thinking": "T", "signature": "s"},
                {"type": "text", "text": "A"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 7, "output_tokens": 9}});
        let c = Anthropic
            .parse_chat(&role(true), &serde_json::to_vec(&body).unwrap())
            .unwrap();
        assert_eq!(c.text, "A");
        assert_eq!(c.reasoning.as_deref(), Some("T"));
        assert_eq!(c.reasoning_kind, Some(ReasoningKind::Summary));
        assert_eq!(c.finish_reason.as_deref(), Some("end_turn"));
        assert_eq!(
            c.usage,
            Usage {
                input_tokens: 7,
                output_tokens: 9
            }
        );
    }

    #[test]
    fn stop_reasons() {
        for (reason, stop) in [
            ("max_tokens", Stop::Length),
            ("refusal", Stop::Refusal),
            ("end_turn", Stop::Normal),
        ] {
            let body = json!({"content": [{"type": "text", "text": "A"}], "stop_reason": reason});
            let c = Anthropic
                .parse_chat(&role(false), &serde_json::to_vec(&body).unwrap())
                .unwrap();
            assert_eq!(c.stop, stop);
        }
        let redacted = json!({"content": [{"type": "redacted_thinking", "data": "x"}, {"type": "text", "text": "A"}]});
        let c = Anthropic
            .parse_chat(&role(true), &serde_json::to_vec(&redacted).unwrap())
            .unwrap();
        assert_eq!(c.reasoning_kind, Some(ReasoningKind::Redacted));
    }
}

//! The OpenAI-compatible protocol (PRV-1, PRV-4, PRV-5): `POST /chat/completions`,
//! `POST /embeddings`, bearer authentication. Shapes follow OpenAI's Chat Completions
//! reference and OpenRouter's reasoning extensions (`reasoning`, `reasoning_details`);
//! reasoning is read from every place servers of this protocol put it: those fields,
//! `reasoning_content` (`DeepSeek`, vLLM, `llama.cpp`), `thinking` parts of a content list
//! (Mistral's Magistral), and `<think>` tags in the content, a closing tag alone included
//! (a template that pre-fills the opening one).

use serde_json::{Value, json};

use super::reasoning::{rule, split_think};
use super::{ChatRequest, Completion, Error, ReasoningKind, Role, Stop, Usage, WireProtocol};
use crate::config::ReasoningEffort;

/// The openai protocol.
#[derive(Debug, Clone, Copy, Default)]
pub struct Openai;

/// Whether `role` asks for reasoning and would keep it (PRV-4, PRV-5).
fn captures_reasoning(role: &Role) -> bool {
    role.reasoning && role.reasoning_effort != Some(ReasoningEffort::None)
}

fn effort_name(effort: ReasoningEffort) -> &'static str {
    match effort {
        ReasoningEffort::None => "none",
        ReasoningEffort::Low => "low",
        ReasoningEffort::Medium => "medium",
        ReasoningEffort::High => "high",
    }
}

impl WireProtocol for Openai {
    fn chat_path(&self) -> &'static str {
        "/chat/completions"
    }

    fn headers(&self, key: Option<&str>) -> Vec<(&'static str, String, bool)> {
        key.map(|key| vec![("authorization", format!("Bearer {key}"), true)])
            .unwrap_or_default()
    }

    fn chat_body(&self, role: &Role, request: &ChatRequest) -> Value {
        let mut messages = Vec::new();
        if let Some(system) = &request.system {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.push(json!({"role": "user", "content": request.user}));
        let mut body = json!({
            "model": role.model,
            "messages": messages,
            "max_tokens": role.max_tokens,
        });
        if let Some(temperature) = role.temperature {
            body["temperature"] = json!(temperature);
        }
        let effort = match role.reasoning_effort {
            Some(effort) => Some(effort),
            None if role.reasoning => Some(ReasoningEffort::Medium),
            None => None,
        };
        if let Some(effort) = effort {
            body["reasoning"] = json!({"effort": effort_name(effort)});
        }
        body
    }

    fn parse_chat(&self, role: &Role, body: &[u8]) -> Result<Completion, Error> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|error| Error::InvalidReply(format!("not JSON: {error}")))?;
        let choice = value
            .pointer("/choices/0")
            .ok_or_else(|| Error::InvalidReply("no `choices[0]` in the reply".to_owned()))?;
        let message = choice.get("message").unwrap_or(&Value::Null);
        let (content, thinking_parts) = content_parts(message.get("content"));
        let finish_reason = choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let refusal = message
            .get("refusal")
            .and_then(Value::as_str)
            .is_some_and(|text| !text.trim().is_empty());
        let stop = match finish_reason.as_deref() {
            Some("length") => Stop::Length,
            Some("content_filter") => Stop::Refusal,
            _ if refusal => Stop::Refusal,
            _ => Stop::Normal,
        };
        let (think, text) = split_think(&content);
        let (reasoning, mut kind) = read_reasoning(message, thinking_parts.or(think));
        if kind == Some(ReasoningKind::Raw) {
            kind = Some(rule(crate::config::Protocol::Openai, &role.model).kind());
        }
        let (reasoning, kind) = if captures_reasoning(role) {
            (reasoning, kind)
        } else {
            (None, None)
        };
        Ok(Completion {
            text,
            reasoning,
            reasoning_kind: kind,
            finish_reason,
            stop,
            usage: usage(&value),
        })
    }
}

/// The text of a message's `content` and the reasoning it carries as parts: a string is all
/// text; a list of parts (Mistral's reasoning models) joins its `text` parts and its
/// `thinking` parts (each a string or a list of `text` parts) apart. `null` is empty.
fn content_parts(content: Option<&Value>) -> (String, Option<String>) {
    let Some(parts) = content.and_then(Value::as_array) else {
        return (
            content
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            None,
        );
    };
    let mut text = String::new();
    let mut thinking = String::new();
    for part in parts {
        match part.get("type").and_then(Value::as_str) {
            Some("text") => {
                text.push_str(part.get("text").and_then(Value::as_str).unwrap_or_default());
            }
            Some("thinking") => match part.get("thinking") {
                Some(Value::String(inner)) => thinking.push_str(inner),
                Some(Value::Array(inner)) => {
                    for piece in inner {
                        thinking.push_str(
                            piece
                                .get("text")
                                .and_then(Value::as_str)
                                .unwrap_or_default(),
                        );
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
    let thinking = (!thinking.trim().is_empty()).then(|| thinking.trim().to_owned());
    (text, thinking)
}

/// The first present of `reasoning`, `reasoning_content`, `reasoning_details`, then the
/// reasoning found in the content (`thinking` parts, else `<think>` tags) (PRV-4), with its
/// kind before the model check.
fn read_reasoning(
    message: &Value,
    think: Option<String>,
) -> (Option<String>, Option<ReasoningKind>) {
    for field in ["reasoning", "reasoning_content"] {
        if let Some(text) = message.get(field).and_then(Value::as_str) {
            if !text.trim().is_empty() {
                return (Some(text.to_owned()), Some(ReasoningKind::Raw));
            }
        }
    }
    if let Some(details) = message.get("reasoning_details").and_then(Value::as_array) {
        let mut texts = Vec::new();
        let mut summary = false;
        let mut redacted = false;
        for detail in details {
            match detail.get("type").and_then(Value::as_str) {
                Some("reasoning.summary") => {
                    summary = true;
                    if let Some(text) = detail.get("summary").and_then(Value::as_str) {
                        texts.push(text);
                    }
                }
                Some("reasoning.encrypted") => redacted = true,
                _ => {
                    if let Some(text) = detail.get("text").and_then(Value::as_str) {
                        texts.push(text);
                    }
                }
            }
        }
        let joined = texts.concat();
        if !joined.trim().is_empty() {
            let kind = if summary {
                ReasoningKind::Summary
            } else {
                ReasoningKind::Raw
            };
            return (Some(joined), Some(kind));
        }
        if redacted {
            return (None, Some(ReasoningKind::Redacted));
        }
    }
    match think {
        Some(text) if !text.is_empty() => (Some(text), Some(ReasoningKind::Raw)),
        _ => (None, None),
    }
}

fn usage(value: &Value) -> Usage {
    let get = |name: &str| {
        value
            .pointer(&format!("/usage/{name}"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Usage {
        input_tokens: get("prompt_tokens"),
        output_tokens: get("completion_tokens"),
    }
}

/// The JSON body of an embeddings request.
#[must_use]
pub fn embeddings_body(model: &str, inputs: &[String]) -> Value {
    json!({"model": model, "input": inputs})
}

/// Decodes an embeddings reply: one vector per input, in input order (by `index`), and
/// the billed tokens.
///
/// # Errors
///
/// [`Error::InvalidReply`] when the body is not an embeddings list of `expected` vectors.
pub fn parse_embeddings(body: &[u8], expected: usize) -> Result<(Vec<Vec<f32>>, Usage), Error> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|error| Error::InvalidReply(format!("not JSON: {error}")))?;
    let data = value
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::InvalidReply("no `data` list in the embeddings reply".to_owned()))?;
    let mut vectors: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (position, item) in data.iter().enumerate() {
        let index = item
            .get("index")
            .and_then(Value::as_u64)
            .and_then(|index| usize::try_from(index).ok())
            .unwrap_or(position);
        let vector = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::InvalidReply("an embedding is not a list".to_owned()))?
            .iter()
            .map(|x| {
                #[allow(clippy::cast_possible_truncation)]
                x.as_f64().map(|x| x as f32)
            })
            .collect::<Option<Vec<f32>>>()
            .ok_or_else(|| Error::InvalidReply("an embedding holds a non-number".to_owned()))?;
        let slot = vectors
            .get_mut(index)
            .ok_or_else(|| Error::InvalidReply(format!("embedding index {index} out of range")))?;
        *slot = Some(vector);
    }
    let vectors = vectors
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| {
            Error::InvalidReply(format!(
                "expected {expected} embeddings, got {}",
                data.len()
            ))
        })?;
    let input_tokens = value
        .pointer("/usage/prompt_tokens")
        .or_else(|| value.pointer("/usage/total_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    Ok((
        vectors,
        Usage {
            input_tokens,
            output_tokens: 0,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(model: &str, reasoning: bool) -> Role {
        Role {
            provider: "p".to_owned(),
            model: model.to_owned(),
            reasoning,
            max_tokens: 100,
            temperature: None,
            reasoning_effort: None,
            thinking_budget: None,
        }
    }

    fn request() -> ChatRequest {
        ChatRequest {
            system: Some("sys".to_owned()),
            user: "q".to_owned(),
        }
    }

    fn reply(message: &Value, finish: &str) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "choices": [{"message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 5}
        }))
        .unwrap()
    }

    #[test]
    fn body_carries_settings() {
        let mut r = role("m", true);
        r.temperature = Some(0.5);
        let body = Openai.chat_body(&r, &request());
        assert_eq!(body["max_tokens"], 100);
        assert_eq!(body["temperature"], 0.5);
        assert_eq!(body["reasoning"], json!({"effort": "medium"}));
        assert_eq!(body["messages"][0]["role"], "system");
        assert_eq!(body["messages"][1]["content"], "q");

        let plain = Openai.chat_body(
            &role("m", false),
            &ChatRequest {
                system: None,
                user: "q".into(),
            },
        );
        assert!(plain.get("reasoning").is_none());
        assert!(plain.get("temperature").is_none());
        assert_eq!(plain["messages"].as_array().unwrap().len(), 1);

        let mut none = role("m", false);
        none.reasoning_effort = Some(ReasoningEffort::None);
        assert_eq!(
            Openai.chat_body(&none, &request())["reasoning"],
            json!({"effort": "none"})
        );
        let mut high = role("m", true);
        high.reasoning_effort = Some(ReasoningEffort::High);
        assert_eq!(
            Openai.chat_body(&high, &request())["reasoning"],
            json!({"effort": "high"})
        );
    }

    #[test]
    fn reasoning_in_each_shape() {
        let r = role("deepseek/deepseek-r1", true);
        let shapes = [
            json!({"content": "A", "reasoning": "R"}),
            json!({"content": "A", "reasoning_content": "R"}),
            json!({"content": "A", "reasoning_details": [
                {"type": "reasoning.text", "text": "R"}]}),
            json!({"content": "<think>R</think>A"}),
            json!({"content": "R\n</think>\n\nA"}),
            json!({"content": [
                {"type": "thinking", "thinking": [{"type": "text", "text": "R"}]},
                {"type": "text", "text": "A"}]}),
            json!({"content": [
                {"type": "thinking", "thinking": "R"}, {"type": "text", "text": "A"}]}),
        ];
        for shape in shapes {
            let c = Openai.parse_chat(&r, &reply(&shape, "stop")).unwrap();
            assert_eq!(c.text, "A", "{shape}");
            assert_eq!(c.reasoning.as_deref(), Some("R"), "{shape}");
            assert_eq!(c.reasoning_kind, Some(ReasoningKind::Raw), "{shape}");
            assert_eq!(
                c.usage,
                Usage {
                    input_tokens: 3,
                    output_tokens: 5
                }
            );
            assert_eq!(c.finish_reason.as_deref(), Some("stop"));
        }
        let split = json!({"content": "A", "reasoning_details": [
            {"type": "reasoning.text", "text": "R1"}, {"type": "reasoning.text", "text": "R2"}]});
        let c = Openai.parse_chat(&r, &reply(&split, "stop")).unwrap();
        assert_eq!(c.reasoning.as_deref(), Some("R1R2"));
    }

    #[test]
    fn regression_reasoning_before_a_lone_closing_think_tag_is_raw_reasoning_not_answer_text() {
        // A Qwen server without a reasoning parser: the template pre-filled `<think>`, so
        // the reply holds the reasoning, then only `</think>`, then the answer.
        let content =
            "The user wants ownership explained.\nStart with moves.\n</think>\n\nOwnership means…";
        let c = Openai
            .parse_chat(
                &role("Qwen/Qwen3-32B", true),
                &reply(&json!({"content": content}), "stop"),
            )
            .unwrap();
        assert_eq!(c.text, "Ownership means…");
        assert_eq!(
            c.reasoning.as_deref(),
            Some("The user wants ownership explained.\nStart with moves.")
        );
        assert_eq!(c.reasoning_kind, Some(ReasoningKind::Raw));
        // A reasoning field wins; the tag still leaves the answer text.
        let c = Openai
            .parse_chat(
                &role("qwen3", true),
                &reply(&json!({"content": "x</think>A", "reasoning": "R"}), "stop"),
            )
            .unwrap();
        assert_eq!((c.reasoning.as_deref(), c.text.as_str()), (Some("R"), "A"));
    }

    #[test]
    fn hidden_summary_and_redacted() {
        let c = Openai
            .parse_chat(
                &role("anthropic/claude-opus-4", true),
                &reply(&json!({"content": "A", "reasoning": "S"}), "stop"),
            )
            .unwrap();
        assert_eq!(c.reasoning_kind, Some(ReasoningKind::Summary));
        let encrypted = json!({"content": "A", "reasoning_details": [{"type": "reasoning.encrypted", "data": "xx"}]});
        let c = Openai
            .parse_chat(&role("m", true), &reply(&encrypted, "stop"))
            .unwrap();
        assert_eq!(c.reasoning_kind, Some(ReasoningKind::Redacted));
        assert_eq!(c.reasoning, None);
        let summary = json!({"content": "A", "reasoning_details": [{"type": "reasoning.summary", "summary": "S"}]});
        let c = Openai
            .parse_chat(&role("m", true), &reply(&summary, "stop"))
            .unwrap();
        assert_eq!(c.reasoning_kind, Some(ReasoningKind::Summary));
    }

    #[test]
    fn reasoning_not_kept_without_asking() {
        let c = Openai
            .parse_chat(
                &role("m", false),
                &reply(
                    &json!({"content": "<think>R</think>A", "reasoning": "R"}),
                    "stop",
                ),
            )
            .unwrap();
        assert_eq!(
            (c.reasoning, c.reasoning_kind, c.text.as_str()),
            (None, None, "A")
        );
    }

    #[test]
    fn stops() {
        let r = role("m", false);
        let length = Openai
            .parse_chat(&r, &reply(&json!({"content": "A"}), "length"))
            .unwrap();
        assert_eq!(length.stop, Stop::Length);
        let filter = Openai
            .parse_chat(&r, &reply(&json!({"content": ""}), "content_filter"))
            .unwrap();
        assert_eq!(filter.stop, Stop::Refusal);
        let refusal = Openai
            .parse_chat(
                &r,
                &reply(&json!({"content": null, "refusal": "no"}), "stop"),
            )
            .unwrap();
        assert_eq!(refusal.stop, Stop::Refusal);
        assert!(matches!(
            Openai.parse_chat(&r, b"{}"),
            Err(Error::InvalidReply(_))
        ));
        assert!(matches!(
            Openai.parse_chat(&r, b"<html>"),
            Err(Error::InvalidReply(_))
        ));
    }

    #[test]
    fn embeddings_in_index_order() {
        let body = json!({"data": [
            {"index": 1, "embedding": [0.0, 1.0]},
            {"index": 0, "embedding": [1.0, 0.0]}],
            "usage": {"prompt_tokens": 4, "total_tokens": 4}});
        let (vectors, usage) = parse_embeddings(&serde_json::to_vec(&body).unwrap(), 2).unwrap();
        assert_eq!(vectors, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
        assert_eq!(usage.input_tokens, 4);
        assert!(parse_embeddings(&serde_json::to_vec(&body).unwrap(), 3).is_err());
    }
}

//! LLM providers: one [`Client`] over HTTP that speaks either wire protocol through the
//! [`WireProtocol`] trait (spec/pipeline.md, section 9).
//!
//! - [`openai`]: OpenAI-compatible chat completions, embeddings and the model listing.
//! - [`anthropic`]: the Anthropic Messages API.
//! - [`reasoning`]: where each protocol puts the model's reasoning, and which models
//!   never expose it raw (PRV-9; on the anthropic protocol only the Claude models
//!   documented to summarize their thinking).
//! - [`retry`]: the retry policy (PRV-11): exponential backoff with full jitter, or the
//!   server's `Retry-After` up to `pipeline.max_retry_wait_secs` (a longer one stops the
//!   stage); a 429 for a request larger than the tokens-per-minute limit is not retried.
//! - [`redact`]: the known secrets of the process, removed from every server text the
//!   client keeps (SEC-5, LOG-4).
//!
//! The client never logs or prints the key: it is exposed only to build the one
//! authentication header of each request, marked sensitive. Provider error bodies are
//! logged at `debug` only, and everything the server sends back passes through the
//! client's [`Redactor`] first.

pub mod anthropic;
mod client;
mod error;
pub mod openai;
pub mod reasoning;
pub mod redact;
pub mod retry;

pub use client::{Attempted, Client, Endpoint};
pub use error::{Error, human_duration, key_variable};
pub use redact::Redactor;

use serde::{Deserialize, Serialize};

/// One chat exchange: an optional system message and one user message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatRequest {
    /// System message, sent first when present.
    pub system: Option<String>,
    /// The user message.
    pub user: String,
}

/// Tokens billed by the provider (PRV-7).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens (`prompt_tokens` or `input_tokens`).
    pub input_tokens: u64,
    /// Generated tokens, reasoning included (`completion_tokens` or `output_tokens`).
    pub output_tokens: u64,
}

impl Usage {
    /// Adds another usage to this one.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// How much of the model's reasoning a reply exposes (DAT-5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningKind {
    /// The model's own reasoning trace.
    Raw,
    /// A summary written by the provider (hidden-reasoning models, PRV-9).
    Summary,
    /// An encrypted or redacted trace with no readable text.
    Redacted,
}

/// Why generation stopped, reduced to what the pipeline branches on (PIPE-26).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// A natural end (or any reason the pipeline does not single out).
    Normal,
    /// The token limit was reached.
    Length,
    /// The provider refused or a content filter stopped the answer.
    Refusal,
}

/// A parsed chat reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// Answer text, with any leading `<think>` block removed.
    pub text: String,
    /// Reasoning text, when the reply carried readable reasoning.
    pub reasoning: Option<String>,
    /// Kind of the reasoning; `None` when there is none.
    pub reasoning_kind: Option<ReasoningKind>,
    /// The provider's `finish_reason` (or `stop_reason`), unchanged (PRV-8).
    pub finish_reason: Option<String>,
    /// What the pipeline makes of the stop reason.
    pub stop: Stop,
    /// Tokens billed for this reply.
    pub usage: Usage,
}

/// The settings of one role that shape a request (spec/config.md, table 2.4).
pub use crate::config::Role;

/// A wire protocol: how to encode a chat request and decode its reply. Pure, no I/O,
/// so each protocol is tested on JSON values alone.
pub trait WireProtocol: Send + Sync + std::fmt::Debug {
    /// Path of the chat endpoint relative to the base URL (`/chat/completions`,
    /// `/messages`).
    fn chat_path(&self) -> &'static str;

    /// Authentication and version headers for `key` (name, value, sensitive).
    fn headers(&self, key: Option<&str>) -> Vec<(&'static str, String, bool)>;

    /// The JSON body of a chat request for `role`.
    fn chat_body(&self, role: &Role, request: &ChatRequest) -> serde_json::Value;

    /// Decodes a successful reply body.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidReply`] when the body is not the protocol's reply shape.
    fn parse_chat(&self, role: &Role, body: &[u8]) -> Result<Completion, Error>;
}

/// The protocol implementation for a configured protocol.
#[must_use]
pub fn protocol(kind: crate::config::Protocol) -> Box<dyn WireProtocol> {
    match kind {
        crate::config::Protocol::Openai => Box::new(openai::Openai),
        crate::config::Protocol::Anthropic => Box::new(anthropic::Anthropic),
    }
}

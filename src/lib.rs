//! overbrainer distills a large "parent" LLM into a small open-weights "child".
//!
//! Layers, top to bottom; each calls only the ones below it (see `ARCHITECTURE.md`):
//!
//! - front ends: [`cli`] (one file per command).
//! - flows: [`pipeline`] (the dataset stages, each sending typed events).
//! - domain: [`system`] (the machine probe script and its parser), [`dataset`]
//!   (records, IDs, JSONL, the split), [`dedup`], [`llm`] (openai and anthropic
//!   protocols), [`pricing`], [`history`].
//! - execution: [`exec`] (jobs, files and probes on a local or SSH target).
//! - ground: [`config`] (typed settings in `overbrainer.toml`, `.env`, environment).

pub mod cli;
pub mod config;
pub mod dataset;
pub mod dedup;
pub mod exec;
pub mod history;
pub mod llm;
pub mod pipeline;
pub mod pricing;
pub mod system;

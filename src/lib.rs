//! overbrainer distills a large "parent" LLM into a small open-weights "child".
//!
//! Layers, top to bottom; each calls only the ones below it (see `ARCHITECTURE.md`):
//!
//! - front ends: [`cli`] (one file per command).
//! - domain: [`system`] (the machine probe script and its parser).
//! - execution: [`exec`] (jobs, files and probes on a local or SSH target).
//! - ground: [`config`] (typed settings in `overbrainer.toml`, `.env`, environment).

pub mod cli;
pub mod config;
pub mod exec;
pub mod system;

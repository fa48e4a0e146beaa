//! overbrainer distills a large "parent" LLM into a small open-weights "child".
//!
//! Layers, top to bottom; each calls only the ones below it (see `ARCHITECTURE.md` and
//! `shared/DESIGN.md`):
//!
//! - front ends: [`cli`] (one file per command; the only layer that prints).
//! - flows, callable from any front end: [`pipeline`] (the dataset stages, each sending
//!   typed events; `pipeline::session` opens a project for them, `pipeline::sequence` is
//!   the `run` flow), [`runs`] (training runs: start, follow, stop, cancel, resume,
//!   retrieve), [`check`] (loading the configuration with every layer's rules, and
//!   `config check`), [`metrics`] (the Prometheus endpoint, fed by the flows' events).
//! - domain: [`train`] (Axolotl YAML and what Axolotl accepts of `[training]`, the training
//!   job's script and fixed environment, metrics plugin, metric lines, phases), [`system`]
//!   (the machine probe script and its parser), [`dataset`] (records, IDs, JSONL, the
//!   split), [`dedup`], [`llm`] (openai and anthropic
//!   protocols), [`pricing`], [`history`], [`budget`] (the ledger of every priced event and
//!   the one cap over tokens and GPU hours).
//! - execution: [`exec`] (jobs, files and probes on a local or SSH target; it runs the
//!   script and environment it is given, in a venv or a container, and knows no tool).
//! - ground:
//!   - [`env`](mod@env): the process environment, read once at start into [`env::EnvSnapshot`]
//!     (re-exported as `config::EnvSnapshot`); settings, Vault and logging read it.
//!   - [`config`]: typed settings from `overbrainer.toml`, `.env` and `OVERBRAINER_*`
//!     variables, with the source of every value; one file per section with its
//!     defaults and rules, and a hook for the rules of the layers above
//!     (`config::Rules`); `config check` lines.
//!   - [`secrets`]: literal and `vault:` secrets, resolved lazily (Vault KV v2 over HTTP);
//!     files that hold secrets, created private (`secrets::private`).
//!   - [`project`]: the project directory, its paths (`data/`, `runs/`, `prompts/`,
//!     `.overbrainer/`), writing a new project (`init`), the project lock
//!     (`.overbrainer/lock`) and the names a shell completes (`names`).
//!   - [`logging`]: log lines on stderr through `tracing`.
//!   - [`machine`]: the form of the pure lifecycle state machines (runs and pods).

// Printing goes through `cli`'s checked macros (`cli/out.rs`): `println!` panics on a closed
// pipe or a full disk, and no other layer prints.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod budget;
pub mod chart;
pub mod check;
pub mod cli;
pub mod compare;
pub mod config;
pub mod dataset;
pub mod dedup;
pub mod env;
pub mod exec;
pub mod export;
pub mod gguf;
pub mod history;
pub mod hub;
pub mod llm;
pub mod logging;
pub mod machine;
pub mod metrics;
pub mod pipeline;
pub mod pricing;
pub mod project;
pub mod runpod;
pub mod runs;
pub mod secrets;
pub mod system;
pub mod train;
pub mod tui;

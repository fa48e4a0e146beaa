//! overbrainer distills a large "parent" LLM into a small open-weights "child".
//!
//! Layers, top to bottom; each calls only the ones below it (see `ARCHITECTURE.md` and
//! `shared/DESIGN.md`). Every module of the crate, a line each:
//!
//! - front ends:
//!   - [`cli`]: one file per command; the only layer that prints, with exit codes.
//!   - [`tui`]: `overbrainer tui`, the project in six views, its flows as spawned tasks.
//! - flows, callable from any front end; they send typed events and never print:
//!   - [`pipeline`]: the dataset stages; `pipeline::session` opens a project for them,
//!     `pipeline::sequence` is the `run` flow.
//!   - [`runs`]: training runs: start, follow, stop, cancel, resume, retrieve, merge;
//!     `runs::pod` drives a run on a Runpod target.
//!   - [`runpod`]: Runpod pods as a target: a pod's life as a state machine, the REST v2
//!     client and the driver of its effects; driven by `runs::pod`, it imports no flow.
//!   - [`export`]: `export`, a run's model to a GGUF (and an Ollama model) by a detached
//!     job on its target.
//!   - [`compare`]: `compare`, the child served on the run's target against the parent's
//!     answers in `data/eval.jsonl`, judged here.
//!   - [`hub`]: `push`, a run's model to the Hugging Face Hub in one commit with a model
//!     card.
//!   - [`check`]: loading the configuration with every layer's rules, and `config check`.
//!   - [`metrics`]: the Prometheus endpoint, fed by the flows' events.
//! - domain: formats and protocols, no processes:
//!   - [`train`]: Axolotl YAML and what Axolotl accepts of `[training]`, the training job's
//!     script and fixed environment, metrics plugin, metric lines, phases.
//!   - [`gguf`]: the pinned llama.cpp, the export job's steps and the in-job export stage
//!     (below both `runs` and `export`).
//!   - [`chart`]: hand-written SVG charts (the Hub card's loss curve, compare's charts).
//!   - [`system`]: the machine probe script and its parser.
//!   - [`dataset`]: records, IDs, JSONL, the split; `dataset::listing`, what the TUI's
//!     Dataset and Pipeline views read.
//!   - [`dedup`]: near-duplicate questions, lexical then by embeddings.
//!   - [`llm`]: the openai and anthropic protocols.
//!   - [`pricing`]: model prices and request costs.
//!   - [`history`]: the stage history, `.overbrainer/history.jsonl`.
//!   - [`budget`]: the ledger of every priced event and the one cap over tokens and GPU
//!     hours.
//! - execution:
//!   - [`exec`]: jobs, files and probes on a local, SSH or Slurm target; it runs the
//!     script and environment it is given, in a venv or a container, and knows no tool.
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
//!   - [`shell`]: POSIX shell words (`quote`), for the executors' scripts and the machine
//!     probe; `shellcheck` over a generated script, for tests.

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
pub mod shell;
pub mod system;
pub mod train;
pub mod tui;

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// The crate doc's layer list names every module of the crate once, and each module
    /// is a file or folder of `src/`.
    #[test]
    fn the_layer_list_names_every_module_once() {
        let text = include_str!("lib.rs");
        let named: Vec<&str> = text
            .lines()
            .filter_map(|line| line.strip_prefix("//!   - [`"))
            .filter_map(|line| line.split_once('`'))
            .map(|(name, _)| name)
            .collect();
        let declared: BTreeSet<&str> = text
            .lines()
            .filter_map(|line| line.strip_prefix("pub mod "))
            .filter_map(|line| line.strip_suffix(';'))
            .collect();
        assert_eq!(named.iter().copied().collect::<BTreeSet<_>>(), declared);
        assert_eq!(
            named.len(),
            declared.len(),
            "a module named twice: {named:?}"
        );
        let on_disk: BTreeSet<String> =
            std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/src"))
                .unwrap()
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .map(|name| name.strip_suffix(".rs").map_or(name.clone(), str::to_owned))
                .filter(|name| name != "lib" && name != "main")
                .collect();
        let declared: BTreeSet<String> = declared.into_iter().map(str::to_owned).collect();
        assert_eq!(on_disk, declared);
    }
}

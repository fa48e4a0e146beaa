//! The command line: one file per command, each a thin layer over library calls.
//!
//! Adding a command: create `src/cli/<name>.rs` with a module doc, a `#[derive(clap::Args)]
//! pub struct Args` and a `pub fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode>`
//! (or `pub async fn run`), then add one variant to [`Command`] and one arm to
//! [`dispatch`]. Commands with subcommands (`config check`, `runs ls`) group them in an enum
//! beside [`Command`]. Only this layer prints: results on stdout, everything else on stderr
//! (CLI-3), through `out`'s macros, which never panic on a closed pipe or a full disk.

// First, so that its macros (`outln!`, `out!`, `errln!`) reach every command below.
#[macro_use]
mod out;

pub mod answers;
pub mod budget;
pub mod compare;
pub mod complete;
pub mod config_check;
pub mod export;
mod follow;
pub mod history;
pub mod init;
mod metrics;
pub mod pod;
pub mod pod_catalog;
pub mod push;
pub mod questions;
pub mod run;
pub mod runs;
pub mod split;
mod stages;
pub mod subtopics;
pub mod target;
pub mod train;
pub mod train_attach;
pub mod train_cancel;
pub mod train_merge;
pub mod train_stop;
pub mod tui;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{CommandFactory as _, Parser, Subcommand};

use crate::config::{EnvSnapshot, Loaded};
use crate::project::Project;

/// Distill a large parent LLM into a small open-weights child.
#[derive(Debug, Parser)]
// The package description names the whole product; `--help` names what this build does.
#[command(
    name = "overbrainer",
    version,
    about = "Distill a large parent LLM into a small open-weights child: build the dataset, fine-tune with Axolotl on a local, SSH, container or Runpod target, export to GGUF, push to the Hub",
    propagate_version = true
)]
pub struct Cli {
    /// Operate on the project in DIR instead of the current directory.
    #[arg(short = 'C', id = "project_dir", global = true, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub dir: Option<PathBuf>,
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Every command of the binary (spec/README.md, command inventory).
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a new project: `overbrainer.toml`, `.env.example`, `prompts/`, `.gitignore`.
    Init(init::Args),
    /// Inspect the configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Generate the missing subtopics of each topic.
    Subtopics(subtopics::Args),
    /// Generate the missing questions of each subtopic, without near-duplicates.
    Questions(questions::Args),
    /// Ask the parent to answer every question without an answer.
    Answers(answers::Args),
    /// Write `data/train.jsonl` and `data/eval.jsonl` from the answers.
    Split(split::Args),
    /// Run every dataset stage in order, then, when `[training]` is set, train the child
    /// and follow the run.
    Run(run::Args),
    /// Show stage totals, or every stage execution with `--all`.
    History(history::Args),
    /// Show the spend of the ledger by stage, run and model against `budget.max_usd`.
    Budget(budget::Args),
    /// Fine-tune the child with Axolotl on a target, follow the run and retrieve it; or
    /// `attach`, `stop`, `cancel`, `merge` an existing run.
    Train(train::Args),
    /// List runs, or print a run's job log.
    #[command(subcommand)]
    Runs(runs::RunsCommand),
    /// List the Runpod pods overbrainer created, or remove a run's pods.
    #[command(subcommand)]
    Pod(pod::PodCommand),
    /// Commands on a target: `prune` its blob cache.
    #[command(subcommand)]
    Target(target::TargetCommand),
    /// Push a run's model to the Hugging Face Hub in one commit with a generated card.
    Push(push::Args),
    /// Export a trained run to a GGUF (llama.cpp) with a Modelfile, and to Ollama.
    Export(export::Args),
    /// Compare the child with its parent: the child served by llama-server on the run's
    /// target, judged here; a report with intervals, per topic and charts.
    Compare(compare::Args),
    /// Drive the project in a terminal UI: the configuration (edited field by field), the
    /// dataset, the stages, training runs, logs and compares.
    Tui(tui::Args),
}

/// `overbrainer config ...`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print every effective setting with its source; `--resolve` also resolves secrets.
    Check(config_check::Args),
}

/// What every command receives: the project directory and the environment, read once.
#[derive(Debug, Clone)]
pub struct Context {
    /// The project directory: `-C DIR` or the current directory (ENV-10).
    pub dir: PathBuf,
    /// The process environment at start.
    pub env: EnvSnapshot,
}

impl Context {
    /// The project in [`Context::dir`].
    ///
    /// # Errors
    ///
    /// When the directory holds no `overbrainer.toml` (LAY-1) or does not exist.
    pub fn project(&self) -> anyhow::Result<Project> {
        Ok(Project::open(&self.dir)?)
    }

    /// The project and its loaded, valid configuration.
    ///
    /// # Errors
    ///
    /// When there is no project or its configuration is invalid.
    pub fn load(&self) -> anyhow::Result<(Project, Loaded)> {
        let project = self.project()?;
        let loaded = crate::check::load(project.root(), &self.env)?;
        Ok((project, loaded))
    }
}

/// The binary's entry point: completions, parsing, logging, then the command. Returns the
/// process exit status (CLI-4).
#[must_use]
pub fn main() -> ExitCode {
    // CLI-12: `COMPLETE=bash|zsh|fish` prints the script (or answers a completion request)
    // and exits here.
    clap_complete::CompleteEnv::with_factory(Cli::command).complete();
    let cli = Cli::parse();
    let env = EnvSnapshot::capture();
    let code = match run(cli, env) {
        Ok(code) => code,
        Err(error) => {
            errln!("error: {}", out::chain_of(&error));
            ExitCode::FAILURE
        }
    };
    // A closed stdout ends quietly; any other failed write of a result fails the command.
    out::finish(code)
}

fn run(cli: Cli, env: EnvSnapshot) -> anyhow::Result<ExitCode> {
    let dir = cli.dir.unwrap_or_else(|| PathBuf::from("."));
    // `OVERBRAINER_LOG` from the shell, else from the project's `.env` (a broken `.env` is
    // reported by the command that loads the configuration).
    let dotenv_log = crate::config::dotenv_pairs(&dir)
        .ok()
        .and_then(|pairs| pairs.into_iter().find(|(k, _)| k == "OVERBRAINER_LOG"))
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty());
    let filter = env.log_filter().or(dotenv_log.as_deref());
    if matches!(cli.command, Command::Tui(_)) {
        // TUI-2: log lines go to the Logs view, not stderr.
        crate::logging::init_captured(filter)?;
    } else {
        crate::logging::init(filter, env.no_color())?;
    }
    // Every command reads `.env` (above, for the log filter): one warning when it holds a
    // secret that others can read; on stderr with the problems `config check` lists.
    if let Some(exposed) = crate::config::dotenv_exposed(&dir) {
        tracing::warn!("{exposed}");
    }
    let ctx = Context { dir, env };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(dispatch(&ctx, cli.command))
}

/// Runs one parsed command.
///
/// # Errors
///
/// The command's error, for [`main`] to print.
pub async fn dispatch(ctx: &Context, command: Command) -> anyhow::Result<ExitCode> {
    // The Prometheus endpoint serves while the command runs (MET-3).
    let _metrics = if metrics::serves(&command) {
        metrics::serve(ctx).await
    } else {
        None
    };
    match command {
        Command::Init(args) => init::run(ctx, &args),
        Command::Config(ConfigCommand::Check(args)) => config_check::run(ctx, &args).await,
        Command::Subtopics(args) => subtopics::run(ctx, &args).await,
        Command::Questions(args) => questions::run(ctx, &args).await,
        Command::Answers(args) => answers::run(ctx, &args).await,
        Command::Split(args) => split::run(ctx, &args).await,
        // Boxed: the whole pipeline and a training run make one large future.
        Command::Run(args) => Box::pin(run::run(ctx, &args)).await,
        Command::History(args) => history::run(ctx, &args),
        Command::Budget(args) => budget::run(ctx, &args),
        Command::Train(args) => Box::pin(train::run(ctx, args)).await,
        Command::Runs(command) => runs::run(ctx, &command).await,
        Command::Pod(command) => Box::pin(pod::run(ctx, &command)).await,
        Command::Target(command) => target::run(ctx, &command).await,
        Command::Push(args) => push::run(ctx, &args).await,
        Command::Export(args) => export::run(ctx, &args).await,
        Command::Compare(args) => Box::pin(compare::run(ctx, &args)).await,
        Command::Tui(args) => Box::pin(tui::run(ctx, &args)).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}

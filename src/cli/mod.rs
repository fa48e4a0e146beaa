//! The command line: one file per command, each a thin layer over library calls.

use clap::Parser;

/// Distill a large parent LLM into a small open-weights child.
#[derive(Debug, Parser)]
#[command(name = "overbrainer", version, about)]
pub struct Cli {
    /// Operate on the project in DIR instead of the current directory.
    #[arg(short = 'C', global = true, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
}

/// Parses the command line and runs the command.
///
/// # Errors
///
/// Returns the command's error, for `main` to print.
pub fn run() -> anyhow::Result<()> {
    let _cli = Cli::parse();
    Ok(())
}

//! `overbrainer init [DIR]`: write a new project (CLI-7..CLI-11).

use std::path::PathBuf;
use std::process::ExitCode;

use super::Context;
use crate::pipeline::templates::Template;

/// Arguments of `init`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory of the new project, created when missing (default: the current or `-C`
    /// directory).
    #[arg(value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub dir: Option<PathBuf>,
}

/// Writes the project and lists what was written on stdout.
///
/// # Errors
///
/// When a file `init` would write already exists (nothing is written then), or on I/O
/// errors.
pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let dir = match &args.dir {
        Some(dir) => ctx.dir.join(dir),
        None => ctx.dir.clone(),
    };
    let report = crate::project::init::create(&dir, &Template::init_files())?;
    outln!(
        "created project `{}` in `{}`",
        report.name,
        report.dir.display()
    );
    for file in &report.written {
        outln!("  wrote {file}");
    }
    if report.gitignore_added > 0 {
        let added = report.gitignore_added;
        let entries = if added == 1 { "entry" } else { "entries" };
        outln!("  updated .gitignore ({added} {entries} added)");
    }
    outln!(
        "next: `install -m 600 .env.example .env` (private: it will hold keys), fill in the provider URL and key, then run `overbrainer config check`"
    );
    Ok(ExitCode::SUCCESS)
}

//! Dynamic shell completion (CLI-12): topic names, target names and run IDs read from the
//! project in the current directory, or in the directory of a `-C DIR` already typed.
//!
//! The script printed for `COMPLETE=bash|zsh|fish` calls the binary back, so these
//! functions run inside the installed binary. Attach one to an argument with
//! `#[arg(long, add = clap_complete::ArgValueCompleter::new(complete::topics))]`.
//! They read files leniently and never fail: a broken project simply completes nothing.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use clap::builder::StyledStr;
use clap_complete::CompletionCandidate;

use crate::project::names;

/// The project directory of the line being completed: the value of a typed `-C DIR`
/// (`-C DIR` or `-CDIR`), else the current directory.
fn project_dir() -> PathBuf {
    project_dir_from(std::env::args_os().skip(1))
}

fn project_dir_from(args: impl Iterator<Item = std::ffi::OsString>) -> PathBuf {
    let mut dir = PathBuf::from(".");
    let mut next_is_dir = false;
    for arg in args {
        if next_is_dir {
            dir = PathBuf::from(arg);
            next_is_dir = false;
            continue;
        }
        match arg.to_str() {
            Some("-C") => next_is_dir = true,
            Some(text) if text.starts_with("-C") && text.len() > 2 => {
                dir = PathBuf::from(&text[2..]);
            }
            _ => {}
        }
    }
    dir
}

fn matching(current: &OsStr, items: Vec<(String, Option<String>)>) -> Vec<CompletionCandidate> {
    let prefix = current.to_string_lossy();
    items
        .into_iter()
        .filter(|(value, _)| value.starts_with(prefix.as_ref()))
        .map(|(value, help)| CompletionCandidate::new(value).help(help.map(StyledStr::from)))
        .collect()
}

/// Completes `--topic NAME` with the project's topic names.
#[must_use]
pub fn topics(current: &OsStr) -> Vec<CompletionCandidate> {
    matching(current, topic_names(&project_dir()))
}

/// Completes `--target NAME` with the project's target names, each with its kind.
#[must_use]
pub fn targets(current: &OsStr) -> Vec<CompletionCandidate> {
    matching(current, names::targets(&project_dir()))
}

/// Completes a run ID with the runs under `runs/`, each shown with its state and target
/// from `run.json` when present.
#[must_use]
pub fn run_ids(current: &OsStr) -> Vec<CompletionCandidate> {
    matching(current, run_entries(&project_dir(), None))
}

/// Completes the run ID of `train merge` with the runs recorded `merge_failed`.
#[must_use]
pub fn merge_failed_run_ids(current: &OsStr) -> Vec<CompletionCandidate> {
    matching(current, run_entries(&project_dir(), Some("merge_failed")))
}

fn topic_names(dir: &Path) -> Vec<(String, Option<String>)> {
    names::topics(dir)
        .into_iter()
        .map(|name| (name, None))
        .collect()
}

fn run_entries(dir: &Path, state: Option<&str>) -> Vec<(String, Option<String>)> {
    names::runs(dir, state)
        .into_iter()
        .map(|run| (run.id, Some(format!("{} on {}", run.state, run.target))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_dir_comes_from_a_typed_dash_c() {
        let args = |list: &[&str]| {
            list.iter()
                .map(std::ffi::OsString::from)
                .collect::<Vec<_>>()
                .into_iter()
        };
        assert_eq!(
            project_dir_from(args(&["--", "overbrainer", "train"])),
            PathBuf::from(".")
        );
        assert_eq!(
            project_dir_from(args(&["--", "overbrainer", "-C", "/p", "train"])),
            PathBuf::from("/p")
        );
        assert_eq!(
            project_dir_from(args(&["--", "overbrainer", "-C/q", "train"])),
            PathBuf::from("/q")
        );
    }

    #[test]
    fn candidates_match_the_typed_prefix_and_runs_show_state_and_target() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("overbrainer.toml"),
            "[[topics]]\nname = \"alpha\"\n[[topics]]\nname = \"beta\"\n",
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("runs/r-1")).unwrap();
        std::fs::write(
            dir.path().join("runs/r-1/run.json"),
            r#"{"state": "succeeded", "target": "box"}"#,
        )
        .unwrap();
        assert_eq!(
            run_entries(dir.path(), None),
            vec![("r-1".to_owned(), Some("succeeded on box".to_owned()))]
        );
        let names: Vec<String> = matching(OsStr::new("b"), topic_names(dir.path()))
            .iter()
            .map(|c| c.get_value().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["beta"]);
    }
}

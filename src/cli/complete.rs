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

fn settings_table(dir: &Path) -> toml::Table {
    std::fs::read_to_string(dir.join(crate::config::FILE_NAME))
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or_default()
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

fn topic_names(dir: &Path) -> Vec<(String, Option<String>)> {
    let table = settings_table(dir);
    table
        .get("topics")
        .and_then(toml::Value::as_array)
        .map(|topics| {
            topics
                .iter()
                .filter_map(|t| Some((t.get("name")?.as_str()?.to_owned(), None)))
                .collect()
        })
        .unwrap_or_default()
}

/// Completes `--target NAME` with the project's target names, each with its kind.
#[must_use]
pub fn targets(current: &OsStr) -> Vec<CompletionCandidate> {
    matching(current, target_names(&project_dir()))
}

fn target_names(dir: &Path) -> Vec<(String, Option<String>)> {
    let table = settings_table(dir);
    table
        .get("targets")
        .and_then(toml::Value::as_table)
        .map(|targets| {
            targets
                .iter()
                .map(|(name, t)| {
                    let kind = t
                        .get("kind")
                        .and_then(toml::Value::as_str)
                        .map(str::to_owned);
                    (name.clone(), kind)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Completes a run ID with the runs under `runs/`, each shown with its state and target
/// from `run.json` when present.
#[must_use]
pub fn run_ids(current: &OsStr) -> Vec<CompletionCandidate> {
    matching(current, run_entries(&project_dir()))
}

/// Completes the run ID of `train merge` with the runs recorded `merge_failed`.
#[must_use]
pub fn merge_failed_run_ids(current: &OsStr) -> Vec<CompletionCandidate> {
    matching(
        current,
        run_entries_in(&project_dir(), Some("merge_failed")),
    )
}

fn run_entries(dir: &Path) -> Vec<(String, Option<String>)> {
    run_entries_in(dir, None)
}

/// The runs under `dir/runs/`, each with its state and target; with `state`, only
/// those recorded in that state.
fn run_entries_in(dir: &Path, state: Option<&str>) -> Vec<(String, Option<String>)> {
    let Ok(entries) = std::fs::read_dir(dir.join("runs")) else {
        return Vec::new();
    };
    let mut runs: Vec<(String, Option<String>)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().join("run.json").is_file())
        .filter_map(|e| {
            let id = e.file_name().into_string().ok()?;
            let json: Option<serde_json::Value> = std::fs::read(e.path().join("run.json"))
                .ok()
                .and_then(|bytes| {
                    serde_json::from_slice(crate::dataset::jsonl::strip_bom(&bytes)).ok()
                });
            let field = |name: &str| {
                json.as_ref()
                    .and_then(|j| j.get(name))
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("?")
                    .to_owned()
            };
            if state.is_some_and(|state| field("state") != state) {
                return None;
            }
            Some((
                id,
                Some(format!("{} on {}", field("state"), field("target"))),
            ))
        })
        .collect();
    runs.sort();
    runs
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
    fn topics_targets_and_runs_are_read_from_the_project() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("overbrainer.toml"),
            "[[topics]]\nname = \"alpha\"\n[[topics]]\nname = \"beta\"\n[targets.box]\nkind = \"ssh\"\n",
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("runs/r-1")).unwrap();
        std::fs::write(
            dir.path().join("runs/r-1/run.json"),
            r#"{"state": "succeeded", "target": "box"}"#,
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("runs/.hf-cache")).unwrap();
        assert_eq!(
            topic_names(dir.path()),
            vec![("alpha".to_owned(), None), ("beta".to_owned(), None)]
        );
        assert_eq!(
            target_names(dir.path()),
            vec![("box".to_owned(), Some("ssh".to_owned()))]
        );
        assert_eq!(
            run_entries(dir.path()),
            vec![("r-1".to_owned(), Some("succeeded on box".to_owned()))]
        );
        std::fs::create_dir_all(dir.path().join("runs/r-2")).unwrap();
        std::fs::write(
            dir.path().join("runs/r-2/run.json"),
            r#"{"state": "merge_failed", "target": "box"}"#,
        )
        .unwrap();
        assert_eq!(
            run_entries_in(dir.path(), Some("merge_failed")),
            vec![("r-2".to_owned(), Some("merge_failed on box".to_owned()))]
        );
        assert_eq!(run_entries(dir.path()).len(), 2);
        let names: Vec<String> = matching(OsStr::new("b"), topic_names(dir.path()))
            .iter()
            .map(|c| c.get_value().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["beta"]);
    }
}

//! The names in a project that a shell completes (CLI-12): its topics, its targets with
//! their kind, and its runs with their state and target. Read leniently: a missing or
//! broken file gives no names, never an error, so completion never fails.

use std::path::Path;

use crate::config::FILE_NAME;

/// `overbrainer.toml` as a TOML table; empty when it is missing or broken.
fn settings_table(dir: &Path) -> toml::Table {
    std::fs::read_to_string(dir.join(FILE_NAME))
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or_default()
}

/// The `[[topics]]` names, in file order.
#[must_use]
pub fn topics(dir: &Path) -> Vec<String> {
    settings_table(dir)
        .get("topics")
        .and_then(toml::Value::as_array)
        .map(|topics| {
            topics
                .iter()
                .filter_map(|t| Some(t.get("name")?.as_str()?.to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// The `[targets.<name>]` names with their `kind`, when set.
#[must_use]
pub fn targets(dir: &Path) -> Vec<(String, Option<String>)> {
    settings_table(dir)
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

/// A run as completion shows it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RunName {
    /// Run ID (its directory under `runs/`).
    pub id: String,
    /// `state` from its `run.json`, `?` when unreadable.
    pub state: String,
    /// `target` from its `run.json`, `?` when unreadable.
    pub target: String,
}

/// The runs under `runs/` (directories holding a `run.json`), sorted by ID; only those in
/// `state` when given.
#[must_use]
pub fn runs(dir: &Path, state: Option<&str>) -> Vec<RunName> {
    let Ok(entries) = std::fs::read_dir(dir.join("runs")) else {
        return Vec::new();
    };
    let mut runs: Vec<RunName> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().join("run.json").is_file())
        .filter_map(|e| {
            let id = e.file_name().into_string().ok()?;
            let bytes = std::fs::read(e.path().join("run.json")).ok();
            let json: Option<serde_json::Value> = bytes.and_then(|bytes| {
                // A byte-order mark may start the file (every JSON reader skips it).
                let text = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
                serde_json::from_slice(text).ok()
            });
            let field = |name: &str| {
                json.as_ref()
                    .and_then(|j| j.get(name))
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("?")
                    .to_owned()
            };
            let run = RunName {
                id,
                state: field("state"),
                target: field("target"),
            };
            state.is_none_or(|state| run.state == state).then_some(run)
        })
        .collect();
    runs.sort();
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

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
            "\u{feff}{\"state\": \"succeeded\", \"target\": \"box\"}",
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("runs/.hf-cache")).unwrap();
        assert_eq!(topics(dir.path()), ["alpha", "beta"]);
        assert_eq!(
            targets(dir.path()),
            vec![("box".to_owned(), Some("ssh".to_owned()))]
        );
        let r1 = RunName {
            id: "r-1".to_owned(),
            state: "succeeded".to_owned(),
            target: "box".to_owned(),
        };
        assert_eq!(runs(dir.path(), None), std::slice::from_ref(&r1));
        std::fs::create_dir_all(dir.path().join("runs/r-2")).unwrap();
        std::fs::write(dir.path().join("runs/r-2/run.json"), "{broken").unwrap();
        assert_eq!(runs(dir.path(), None).len(), 2);
        assert_eq!(runs(dir.path(), None)[1].state, "?");
        assert_eq!(runs(dir.path(), Some("succeeded")), [r1]);
    }

    #[test]
    fn a_directory_without_a_project_has_no_names() {
        let dir = tempfile::tempdir().unwrap();
        assert!(topics(dir.path()).is_empty());
        assert!(targets(dir.path()).is_empty());
        assert!(runs(dir.path(), None).is_empty());
    }
}

//! The Project view's writes of `overbrainer.toml` and its re-reads, as flows run them on
//! the blocking pool: a change goes through [`crate::config::edit::save`] (validated whole
//! with the rules every command loads with, written atomically with its comments kept),
//! an undo through [`crate::config::edit::undo`] (TUI-13..TUI-17); every 2 s the file and
//! `.env` are compared with what is shown and read again when they changed (TUI-20). A
//! valid result replaces the flows' configuration, so later runs use it; writes and
//! re-reads run one at a time.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use crate::config::edit::{self, Change, EditError};
use crate::config::{ConfigError, DOTENV_NAME, Entry, FILE_NAME, Loaded};

use super::flows::FlowContext;

/// What the Project view shows of a configuration.
#[derive(Debug, Clone)]
pub struct Shown {
    /// Its entries, as `config check` lists them.
    pub entries: Vec<Entry>,
    /// The start confirmation's lines, or why `t` is refused.
    pub start: Result<Vec<String>, String>,
    /// Which configuration this is: a write names the one it was made on, and is refused
    /// when another replaced it meanwhile (a re-read shifted a topic's index).
    pub generation: u64,
}

impl Shown {
    fn of(loaded: &Loaded, generation: u64) -> Self {
        Self {
            entries: crate::config::entries(loaded),
            start: super::start_lines(&loaded.settings),
            generation,
        }
    }
}

/// The file as it was before a write and as the write left it, with the keys it changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoPoint {
    /// The text before the write.
    pub before: String,
    /// The text written.
    pub after: String,
    /// The dotted keys the write changed.
    pub keys: Vec<String>,
}

/// How a write or a re-read ended.
#[derive(Debug, Clone)]
pub enum ConfigNews {
    /// A change (or an undo, with no undo point) was written.
    Written {
        /// The configuration now shown.
        shown: Box<Shown>,
        /// What `u` would write back.
        undo: Option<UndoPoint>,
        /// The status line.
        said: String,
    },
    /// A change was refused; nothing was written.
    Refused {
        /// Why, for the form or the status line.
        error: String,
        /// The file read again, when it had changed on disk.
        reread: Option<Box<Shown>>,
        /// The problems of the file read again, when it had changed on disk and is not
        /// valid: their fields are marked (the configuration shown stays in use).
        invalid: Vec<(String, String)>,
    },
    /// The file or `.env` changed on disk and is valid: the configuration shown and used
    /// from now on.
    Reread(Box<Shown>),
    /// The file or `.env` changed on disk and is not valid: the problems by key; the
    /// configuration shown stays in use.
    Invalid {
        /// The problems, each `(key, message)`; a file that cannot be read or parsed has
        /// one under the file's name.
        problems: Vec<(String, String)>,
    },
}

/// The configuration the flows use, swapped by a valid write or re-read; writes and
/// re-reads hold `write` while they run.
#[derive(Debug)]
pub struct Current {
    context: Mutex<Arc<FlowContext>>,
    write: Mutex<()>,
    /// The invalid texts (file, `.env`) last reported, not reported again.
    invalid_seen: Mutex<Option<(String, String)>>,
    /// The file is in the user's editor (`E`): no re-read meanwhile (TUI-20).
    editing: std::sync::atomic::AtomicBool,
    /// The generation of the configuration in use, 0 for the one loaded at start.
    generation: std::sync::atomic::AtomicU64,
}

impl Current {
    /// The configuration of `context`.
    #[must_use]
    pub fn new(context: FlowContext) -> Self {
        Self {
            context: Mutex::new(Arc::new(context)),
            write: Mutex::new(()),
            invalid_seen: Mutex::new(None),
            editing: std::sync::atomic::AtomicBool::new(false),
            generation: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The context now in use.
    #[must_use]
    pub fn get(&self) -> Arc<FlowContext> {
        Arc::clone(&self.context.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn adopt(&self, loaded: Loaded, text: String, dotenv: String) -> Shown {
        let generation = self
            .generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        let shown = Shown::of(&loaded, generation);
        let mut context = self.context.lock().unwrap_or_else(PoisonError::into_inner);
        *context = Arc::new(FlowContext {
            project: context.project.clone(),
            settings: loaded.settings,
            provenance: loaded.provenance,
            env: loaded.env,
            process_env: context.process_env.clone(),
            text,
            dotenv,
        });
        shown
    }

    /// Writes `changes`, made on the configuration of `generation`, to the file shown
    /// (TUI-13..TUI-16).
    #[must_use]
    pub fn save(&self, changes: &[Change], generation: u64) -> ConfigNews {
        let _writing = self.write.lock().unwrap_or_else(PoisonError::into_inner);
        if generation != self.generation.load(std::sync::atomic::Ordering::SeqCst) {
            return ConfigNews::Refused {
                error: "not saved: overbrainer.toml was read again since this change was made; \
                        check what is shown and make it again"
                    .to_owned(),
                reread: None,
                invalid: Vec::new(),
            };
        }
        let context = self.get();
        let root = context.project.root();
        match edit::save(
            root,
            &context.text,
            changes,
            &context.process_env,
            crate::check::RULES,
        ) {
            Ok(saved) => {
                let keys: Vec<String> = changes.iter().map(|c| c.key().to_owned()).collect();
                let said = format!("{}; `u` undoes it", said(changes));
                let shown = self.adopt(saved.loaded, saved.after.clone(), read_dotenv(root));
                ConfigNews::Written {
                    shown: Box::new(shown),
                    undo: Some(UndoPoint {
                        before: saved.before,
                        after: saved.after,
                        keys,
                    }),
                    said,
                }
            }
            Err(error) => self.refused(root, &error),
        }
    }

    /// Writes back the text from before `point` (TUI-17).
    #[must_use]
    pub fn undo(&self, point: &UndoPoint) -> ConfigNews {
        let _writing = self.write.lock().unwrap_or_else(PoisonError::into_inner);
        let context = self.get();
        let root = context.project.root();
        match edit::undo(
            root,
            &point.before,
            &point.after,
            &context.process_env,
            crate::check::RULES,
        ) {
            Ok(loaded) => {
                let shown = self.adopt(loaded, point.before.clone(), read_dotenv(root));
                ConfigNews::Written {
                    shown: Box::new(shown),
                    undo: None,
                    said: format!("undone: {}", point.keys.join(", ")),
                }
            }
            Err(error) => self.refused(root, &error),
        }
    }

    fn refused(&self, root: &Path, error: &EditError) -> ConfigNews {
        let text = match error {
            EditError::Invalid(ConfigError::Invalid { problems, .. }) => problems
                .iter()
                .map(|p| format!("`{}`: {}", p.key, p.message))
                .collect::<Vec<_>>()
                .join("; "),
            other => other.to_string(),
        };
        let (reread, invalid) = match error {
            EditError::Changed { .. } => match self.read_again(root, true) {
                Some(ConfigNews::Reread(shown)) => (Some(shown), Vec::new()),
                Some(ConfigNews::Invalid { problems }) => (None, problems),
                _ => (None, Vec::new()),
            },
            _ => (None, Vec::new()),
        };
        ConfigNews::Refused {
            error: format!("not saved: {text}"),
            reread,
            invalid,
        }
    }

    /// Reads the file and `.env` again when they differ from what is shown (TUI-20);
    /// `None` when nothing changed, an invalid change was reported already, or a write
    /// runs.
    #[must_use]
    pub fn reread(&self) -> Option<ConfigNews> {
        if self.editing.load(std::sync::atomic::Ordering::SeqCst) {
            return None;
        }
        let _writing = self.write.try_lock().ok()?;
        let root = self.get().project.root().to_owned();
        self.read_again(&root, false)
    }

    /// The editor `E` runs and the file it edits: `$VISUAL`, else `$EDITOR`, else `vi`.
    #[must_use]
    pub fn editor(&self) -> (String, std::path::PathBuf) {
        let context = self.get();
        let editor = ["VISUAL", "EDITOR"]
            .iter()
            .find_map(|name| {
                context
                    .process_env
                    .get(name)
                    .filter(|v| !v.trim().is_empty())
            })
            .unwrap_or("vi")
            .to_owned();
        (editor, context.project.root().join(FILE_NAME))
    }

    /// Marks the file as held by the user's editor (no re-read meanwhile), or released.
    pub fn set_editing(&self, editing: bool) {
        self.editing
            .store(editing, std::sync::atomic::Ordering::SeqCst);
    }

    /// After `E`: the file read again when the editor changed it (or `.env` changed).
    #[must_use]
    pub fn after_editor(&self) -> Option<ConfigNews> {
        self.set_editing(false);
        let _writing = self.write.lock().unwrap_or_else(PoisonError::into_inner);
        let root = self.get().project.root().to_owned();
        self.read_again(&root, false)
    }

    fn read_again(&self, root: &Path, always: bool) -> Option<ConfigNews> {
        let context = self.get();
        let text = match std::fs::read_to_string(root.join(FILE_NAME)) {
            Ok(text) => text,
            Err(error) => {
                return self.invalid_once(
                    (String::new(), error.to_string()),
                    vec![(FILE_NAME.to_owned(), format!("cannot be read: {error}"))],
                );
            }
        };
        let dotenv = read_dotenv(root);
        let was_invalid = self
            .invalid_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some();
        // Back to what is shown after an invalid change: read again, so its marks go.
        if !always && !was_invalid && text == context.text && dotenv == context.dotenv {
            return None;
        }
        match crate::config::load_text(root, &text, &context.process_env, crate::check::RULES) {
            Ok(loaded) => {
                *self
                    .invalid_seen
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = None;
                Some(ConfigNews::Reread(Box::new(
                    self.adopt(loaded, text, dotenv),
                )))
            }
            Err(ConfigError::Invalid { problems, .. }) => self.invalid_once(
                (text, dotenv),
                problems.into_iter().map(|p| (p.key, p.message)).collect(),
            ),
            Err(other) => self.invalid_once(
                (text, dotenv),
                vec![(FILE_NAME.to_owned(), other.to_string())],
            ),
        }
    }

    fn invalid_once(
        &self,
        seen: (String, String),
        problems: Vec<(String, String)>,
    ) -> Option<ConfigNews> {
        let mut last = self
            .invalid_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if last.as_ref() == Some(&seen) {
            return None;
        }
        *last = Some(seen);
        Some(ConfigNews::Invalid { problems })
    }
}

/// The project's `.env`, empty when absent or unreadable (its problems are the load's).
#[must_use]
pub fn read_dotenv(root: &Path) -> String {
    std::fs::read_to_string(root.join(DOTENV_NAME)).unwrap_or_default()
}

/// The status line of a written change.
fn said(changes: &[Change]) -> String {
    match changes {
        [Change::Set(key, value)] => format!("saved `{key}` = {}", value.to_string().trim()),
        [Change::Unset(key)] => format!("unset `{key}`"),
        [Change::Table(key, _)] => format!("added `{key}`"),
        [Change::Push(key, _)] => format!("added a table to `{key}`"),
        _ => changes
            .iter()
            .map(|c| match c {
                Change::Set(key, value) => format!("saved `{key}` = {}", value.to_string().trim()),
                Change::Unset(key) => format!("unset `{key}`"),
                Change::Table(key, _) | Change::Push(key, _) => format!("added `{key}`"),
            })
            .collect::<Vec<_>>()
            .join("; "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EnvSnapshot;

    const TEXT: &str = "# demo\n[project]\nname = \"demo\"\n\n[pipeline]\nconcurrency = 8 # kept\n";

    fn current(dir: &Path) -> Current {
        std::fs::write(dir.join(FILE_NAME), TEXT).unwrap();
        let env = EnvSnapshot::default();
        let loaded = crate::config::load_text(dir, TEXT, &env, crate::check::RULES).unwrap();
        Current::new(FlowContext {
            project: crate::project::Project::open(dir).unwrap(),
            settings: loaded.settings,
            provenance: loaded.provenance,
            env: loaded.env,
            process_env: env,
            text: TEXT.to_owned(),
            dotenv: String::new(),
        })
    }

    fn value(shown: &Shown, key: &str) -> String {
        shown
            .entries
            .iter()
            .find(|e| e.key == key)
            .map(|e| e.value.clone())
            .unwrap_or_default()
    }

    #[test]
    fn a_save_is_used_by_later_flows_and_an_undo_writes_the_text_back() {
        let dir = tempfile::tempdir().unwrap();
        let current = current(dir.path());
        let change = Change::Set("pipeline.concurrency".into(), toml_edit::Value::from(3));
        let ConfigNews::Written { shown, undo, said } = current.save(&[change], 0) else {
            panic!("saved");
        };
        assert_eq!(said, "saved `pipeline.concurrency` = 3; `u` undoes it");
        assert_eq!(value(&shown, "pipeline.concurrency"), "3");
        assert_eq!(current.get().settings.pipeline.concurrency, 3);
        let written = std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
        assert_eq!(written, TEXT.replace("= 8 #", "= 3 #"));
        assert!(
            current.reread().is_none(),
            "its own write is no change on disk"
        );
        let point = undo.unwrap();
        assert_eq!(point.keys, ["pipeline.concurrency"]);
        assert!(matches!(
            current.undo(&point),
            ConfigNews::Written { undo: None, .. }
        ));
        assert_eq!(current.get().settings.pipeline.concurrency, 8);
        assert_eq!(
            std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap(),
            TEXT
        );
    }

    #[test]
    fn changes_on_disk_are_read_again_and_an_invalid_one_is_told_once() {
        let dir = tempfile::tempdir().unwrap();
        let current = current(dir.path());
        let path = dir.path().join(FILE_NAME);
        std::fs::write(&path, TEXT.replace("= 8", "= 5")).unwrap();
        let Some(ConfigNews::Reread(shown)) = current.reread() else {
            panic!("read again");
        };
        assert_eq!(value(&shown, "pipeline.concurrency"), "5");
        assert_eq!(current.get().settings.pipeline.concurrency, 5);
        assert!(current.reread().is_none());

        std::fs::write(&path, TEXT.replace("= 8", "= 0")).unwrap();
        let Some(ConfigNews::Invalid { problems }) = current.reread() else {
            panic!("invalid");
        };
        assert_eq!(problems[0].0, "pipeline.concurrency");
        assert!(current.reread().is_none(), "told once");
        assert_eq!(
            current.get().settings.pipeline.concurrency,
            5,
            "kept in use"
        );
        // A write started meanwhile is refused: the file is not what is shown.
        let change = Change::Set("project.name".into(), toml_edit::Value::from("x"));
        let ConfigNews::Refused {
            error,
            reread,
            invalid,
        } = current.save(std::slice::from_ref(&change), 1)
        else {
            panic!("refused");
        };
        assert!(invalid.is_empty(), "its problems were told already");
        assert!(
            error.contains("changed on disk since it was read"),
            "{error}"
        );
        assert!(reread.is_none(), "the file read again is not valid");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            TEXT.replace("= 8", "= 0"),
            "the user's change is kept"
        );
        // Another invalid change on disk, met by a save before any re-read: refused, and
        // the fields it breaks are marked at once.
        std::fs::write(&path, TEXT.replace("= 8", "= -1")).unwrap();
        let ConfigNews::Refused { invalid, .. } = current.save(&[change], 1) else {
            panic!("refused");
        };
        assert_eq!(
            invalid.first().map(|(key, _)| key.as_str()),
            Some("pipeline.concurrency")
        );

        std::fs::write(
            dir.path().join(DOTENV_NAME),
            "OVERBRAINER_PIPELINE__CONCURRENCY=2\n",
        )
        .unwrap();
        std::fs::write(&path, TEXT).unwrap();
        let Some(ConfigNews::Reread(shown)) = current.reread() else {
            panic!("read again");
        };
        assert_eq!(value(&shown, "pipeline.concurrency"), "2", ".env read too");
    }
}

#[cfg(test)]
mod generation_tests {
    use super::*;
    use crate::config::EnvSnapshot;

    #[test]
    fn a_change_made_before_a_re_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let text = "[project]\nname = \"demo\"\n";
        std::fs::write(dir.path().join(FILE_NAME), text).unwrap();
        let env = EnvSnapshot::default();
        let loaded = crate::config::load_text(dir.path(), text, &env, crate::check::RULES).unwrap();
        let current = Current::new(FlowContext {
            project: crate::project::Project::open(dir.path()).unwrap(),
            settings: loaded.settings,
            provenance: loaded.provenance,
            env: loaded.env,
            process_env: env,
            text: text.to_owned(),
            dotenv: String::new(),
        });
        std::fs::write(dir.path().join(FILE_NAME), text.replace("demo", "other")).unwrap();
        let Some(ConfigNews::Reread(shown)) = current.reread() else {
            panic!("read again");
        };
        assert_eq!(shown.generation, 1);
        let change = Change::Set("project.name".into(), toml_edit::Value::from("x"));
        let ConfigNews::Refused { error, .. } = current.save(std::slice::from_ref(&change), 0)
        else {
            panic!("refused");
        };
        assert!(error.contains("was read again since"), "{error}");
        assert!(matches!(
            current.save(&[change], 1),
            ConfigNews::Written { .. }
        ));
    }
}

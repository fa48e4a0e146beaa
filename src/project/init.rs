//! Writing a new project (CLI-7..CLI-11): the commented `overbrainer.toml` template, the
//! `.env.example`, the prompt templates and the `.gitignore` entries. Nothing is asked and
//! nothing existing is overwritten.
//!
//! The prompt templates are handed in by the caller: their built-in texts belong to the
//! pipeline (`pipeline::templates`), which uses the same text when a file is absent (TPL-3).

use std::path::{Path, PathBuf};

/// The `overbrainer.toml` template; `{{NAME}}` stands for the quoted project name.
pub const CONFIG_TEMPLATE: &str = include_str!("template.toml");
/// The `.env.example` written by `init`.
pub const ENV_EXAMPLE: &str = include_str!("env.example");
/// Entries `init` makes sure `.gitignore` has (CLI-10).
pub const GITIGNORE_ENTRIES: [&str; 2] = [".env", "/.overbrainer/"];

/// What [`create`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The project directory.
    pub dir: PathBuf,
    /// The project name set in `overbrainer.toml`.
    pub name: String,
    /// Files written, relative to the directory.
    pub written: Vec<String>,
    /// Entries appended to `.gitignore`.
    pub gitignore_added: usize,
}

/// Why `init` refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// A file `init` would write exists already (CLI-9); nothing was written.
    #[error("`{}` already exists; init never overwrites, so nothing was written", .path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// The directory has no usable name for `project.name`.
    #[error("cannot name the project after `{}`; run init in a named directory", .dir.display())]
    NoName {
        /// The directory.
        dir: PathBuf,
    },
    /// A path `init` must create a directory at, or `-C DIR`, is a file.
    #[error("`{}` is a file, not a directory; nothing was written", .path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// An existing file `init` must read (`.gitignore`) cannot be read; nothing was written.
    #[error("cannot read `{}`; nothing was written", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Writing failed.
    #[error("cannot write `{}`", .path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// The `overbrainer.toml` text for a project named `name`.
#[must_use]
pub fn config_text(name: &str) -> String {
    let quoted = toml::Value::String(name.to_owned()).to_string();
    CONFIG_TEMPLATE.replace("{{NAME}}", &quoted)
}

/// A prompt template to write: its file name under `prompts/` and its text.
pub type PromptFile = (&'static str, &'static str);

/// The files `init` writes, relative to the project directory, with their contents.
#[must_use]
pub fn files(name: &str, prompts: &[PromptFile]) -> Vec<(String, String)> {
    let mut files = vec![
        (crate::config::FILE_NAME.to_owned(), config_text(name)),
        (".env.example".to_owned(), ENV_EXAMPLE.to_owned()),
    ];
    for (file_name, text) in prompts {
        files.push((format!("prompts/{file_name}"), (*text).to_owned()));
    }
    files
}

/// Creates the project in `dir` (creating `dir` when missing), with `prompts` under
/// `prompts/`. Every target path is checked first (nothing exists at a file's place,
/// `prompts` is a directory when present, an existing `.gitignore` is a readable UTF-8 file),
/// so a refusal leaves the disk as it was.
///
/// # Errors
///
/// [`InitError::NotADirectory`] when `dir` or `prompts` is a file, [`InitError::Exists`]
/// naming the first file that exists, [`InitError::Read`] for a `.gitignore` that cannot be
/// read (a directory, not UTF-8), [`InitError::NoName`], or [`InitError::Io`] when writing
/// fails.
pub fn create(dir: &Path, prompts: &[PromptFile]) -> Result<Report, InitError> {
    let name = project_name(dir)?;
    let files = files(&name, prompts);
    write_new(dir, &name, &files, &[])
}

/// Writes a new project into `dir` (created when missing): `files` as they are, `private`
/// with mode 600 (`.env`), and the missing `.gitignore` entries, after checking every path
/// as [`create`] does. A file is only ever created, never replaced: one that appears
/// meanwhile stops the write. When writing fails midway, the files and directories created
/// so far are removed again and `.gitignore` is left as it was (TUI-76).
///
/// # Errors
///
/// As [`create`].
pub fn write_new(
    dir: &Path,
    name: &str,
    files: &[(String, String)],
    private: &[(String, String)],
) -> Result<Report, InitError> {
    not_a_directory(dir)?;
    let prompts_dir = dir.join("prompts");
    not_a_directory(&prompts_dir)?;
    let gitignore = dir.join(".gitignore");
    let existing = read_gitignore(&gitignore)?;
    let (merged, added) = merge_gitignore(&existing);
    // Checked before creating `dir`, so that a refusal creates nothing either.
    if let Some(path) = first_existing(dir, files.iter().chain(private).map(|(r, _)| r.as_str())) {
        return Err(InitError::Exists { path });
    }
    let mut created = Created::default();
    // `merged` is `existing` with the missing entries after it: only those are appended.
    let addition = merged.get(existing.len()..).unwrap_or(&merged);
    let written = created.write_all(dir, files, private, added > 0, &gitignore, addition);
    match written {
        Ok(written) => Ok(Report {
            dir: dir.to_owned(),
            name: name.to_owned(),
            written,
            gitignore_added: added,
        }),
        Err(error) => {
            created.remove();
            Err(error)
        }
    }
}

/// The first of `relative` paths under `dir` where something exists already.
#[must_use]
pub fn first_existing<'a>(
    dir: &Path,
    relative: impl IntoIterator<Item = &'a str>,
) -> Option<PathBuf> {
    relative
        .into_iter()
        .map(|r| dir.join(r))
        .find(|path| path.symlink_metadata().is_ok())
}

/// What a write created, removed again when it fails midway.
#[derive(Default)]
struct Created {
    files: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
}

impl Created {
    fn write_all(
        &mut self,
        dir: &Path,
        files: &[(String, String)],
        private: &[(String, String)],
        gitignore_changed: bool,
        gitignore: &Path,
        addition: &str,
    ) -> Result<Vec<String>, InitError> {
        self.dir(dir)?;
        let mut written = Vec::new();
        for ((relative, text), mode) in files
            .iter()
            .map(|f| (f, 0o644))
            .chain(private.iter().map(|f| (f, 0o600)))
        {
            let path = dir.join(relative);
            if let Some(parent) = path.parent() {
                self.dir(parent)?;
            }
            self.file(&path, text, mode)?;
            written.push(relative.clone());
        }
        if gitignore_changed {
            // Only the missing entries are appended: the user's lines are never rewritten.
            let added = addition;
            let appended = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(gitignore)
                .and_then(|mut file| std::io::Write::write_all(&mut file, added.as_bytes()));
            appended.map_err(|source| InitError::Io {
                path: gitignore.to_owned(),
                source,
            })?;
        }
        Ok(written)
    }

    /// Creates `path` and its missing parents, remembering the ones it created.
    fn dir(&mut self, path: &Path) -> Result<(), InitError> {
        let mut missing = Vec::new();
        let mut at = Some(path);
        while let Some(p) = at.filter(|p| !p.as_os_str().is_empty() && !p.exists()) {
            missing.push(p.to_owned());
            at = p.parent();
        }
        for p in missing.into_iter().rev() {
            std::fs::create_dir(&p).map_err(|source| InitError::Io {
                path: p.clone(),
                source,
            })?;
            self.dirs.push(p);
        }
        Ok(())
    }

    /// Creates the file `path` (never replacing one) with `text` and `mode`.
    fn file(&mut self, path: &Path, text: &str, mode: u32) -> Result<(), InitError> {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let io = |source| InitError::Io {
            path: path.to_owned(),
            source,
        };
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(path)
            .map_err(|source| {
                if source.kind() == std::io::ErrorKind::AlreadyExists {
                    InitError::Exists {
                        path: path.to_owned(),
                    }
                } else {
                    io(source)
                }
            })?;
        self.files.push(path.to_owned());
        file.write_all(text.as_bytes()).map_err(io)?;
        file.sync_all().map_err(io)
    }

    /// Removes what was created, files first, then directories innermost first.
    fn remove(&self) {
        for file in &self.files {
            let _ = std::fs::remove_file(file);
        }
        for dir in self.dirs.iter().rev() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Refuses `path` when something other than a directory is there (a missing path is fine).
fn not_a_directory(path: &Path) -> Result<(), InitError> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_dir() => Err(InitError::NotADirectory {
            path: path.to_owned(),
        }),
        _ => Ok(()),
    }
}

/// The text of an existing `.gitignore`, empty when there is none.
fn read_gitignore(path: &Path) -> Result<String, InitError> {
    let read = |source| InitError::Read {
        path: path.to_owned(),
        source,
    };
    match std::fs::metadata(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(source) => return Err(read(source)),
        Ok(meta) if !meta.is_file() => {
            return Err(read(std::io::Error::other("it is not a regular file")));
        }
        Ok(_) => {}
    }
    let bytes = std::fs::read(path).map_err(read)?;
    String::from_utf8(bytes).map_err(|_| read(std::io::Error::other("it is not valid UTF-8")))
}

/// The project name: the last component of `dir` made absolute (`dir` may not exist yet).
///
/// # Errors
///
/// [`InitError::NoName`] for a directory without a usable name (`/`).
pub fn project_name(dir: &Path) -> Result<String, InitError> {
    let absolute = match dir.canonicalize() {
        Ok(path) => path,
        Err(_) => std::path::absolute(dir).map_err(|source| InitError::Io {
            path: dir.to_owned(),
            source,
        })?,
    };
    absolute
        .components()
        .next_back()
        .and_then(|c| match c {
            std::path::Component::Normal(name) => name.to_str(),
            _ => None,
        })
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| InitError::NoName {
            dir: dir.to_owned(),
        })
}

/// Whether git ignores `entry` after `lines`: the last exact mention wins, `!entry`
/// un-ignores (gitignore(5): a later negation re-includes; leading spaces are part of the
/// pattern, trailing spaces are not).
fn ignored(lines: &[&str], entries: &[&str]) -> bool {
    let mut ignored = false;
    for line in lines {
        if entries.contains(line) {
            ignored = true;
        } else if line
            .strip_prefix('!')
            .is_some_and(|negated| entries.contains(&negated))
        {
            ignored = false;
        }
    }
    ignored
}

/// `.gitignore` text with the missing [`GITIGNORE_ENTRIES`] appended, and how many were
/// added. Existing lines are kept as they are. An entry counts as present only when git
/// ignores it after the whole file: an exact line (`.env`, `/.env`; any of `.overbrainer`,
/// `.overbrainer/`, `/.overbrainer`, `/.overbrainer/` for the state directory, CLI-10) not
/// followed by its negation (`!.env`). Leading spaces make another pattern for git, so
/// `  .env` does not count.
#[must_use]
pub fn merge_gitignore(existing: &str) -> (String, usize) {
    // gitignore(5): trailing spaces are ignored (unless escaped), leading ones are not.
    let lines: Vec<&str> = existing
        .lines()
        .map(|l| l.trim_end_matches([' ', '\r']))
        .collect();
    let has_env = ignored(&lines, &[".env", "/.env"]);
    let has_state = ignored(
        &lines,
        &[
            ".overbrainer",
            ".overbrainer/",
            "/.overbrainer",
            "/.overbrainer/",
        ],
    );
    let mut merged = existing.to_owned();
    let mut added = 0;
    for (present, entry) in [
        (has_env, GITIGNORE_ENTRIES[0]),
        (has_state, GITIGNORE_ENTRIES[1]),
    ] {
        if present {
            continue;
        }
        if !merged.is_empty() && !merged.ends_with('\n') {
            merged.push('\n');
        }
        merged.push_str(entry);
        merged.push('\n');
        added += 1;
    }
    (merged, added)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitignore_merge_appends_only_what_is_missing() {
        assert_eq!(
            merge_gitignore(""),
            (".env\n/.overbrainer/\n".to_owned(), 2)
        );
        assert_eq!(
            merge_gitignore("target\n.overbrainer"),
            ("target\n.overbrainer\n.env\n".to_owned(), 1)
        );
        for state in [
            ".overbrainer",
            ".overbrainer/",
            "/.overbrainer",
            "/.overbrainer/",
        ] {
            let text = format!("# mine\n.env\n{state}\n");
            assert_eq!(merge_gitignore(&text), (text.clone(), 0));
        }
    }

    #[test]
    fn gitignore_merge_counts_only_entries_git_honours() {
        // Leading spaces make another pattern; trailing spaces and CR do not.
        assert_eq!(
            merge_gitignore("  .env\n/.overbrainer/\n"),
            ("  .env\n/.overbrainer/\n.env\n".to_owned(), 1)
        );
        assert_eq!(merge_gitignore(".env  \r\n/.overbrainer/\n").1, 0);
        // A later negation un-ignores: append again, after it.
        assert_eq!(
            merge_gitignore(".env\n/.overbrainer/\n!.env\n"),
            (".env\n/.overbrainer/\n!.env\n.env\n".to_owned(), 1)
        );
        assert_eq!(
            merge_gitignore(".overbrainer\n!/.overbrainer/\n.env\n").1,
            1
        );
        // A negation followed by the entry again is ignored.
        assert_eq!(merge_gitignore("!.env\n.env\n.overbrainer\n").1, 0);
    }

    fn prompt() -> Vec<PromptFile> {
        vec![("p.txt", "text")]
    }

    /// Every file and directory under `dir`, relative and sorted.
    fn tree(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        for entry in walk(dir) {
            out.push(entry.strip_prefix(dir).unwrap().display().to_string());
        }
        out.sort();
        out
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.extend(walk(&path));
            }
            out.push(path);
        }
        out
    }

    #[test]
    fn init_refusals_write_nothing() {
        let temp = tempfile::tempdir().unwrap();
        // `.gitignore` is a directory.
        let dir = temp.path().join("d");
        std::fs::create_dir_all(dir.join(".gitignore")).unwrap();
        let error = create(&dir, &prompt()).unwrap_err();
        assert!(matches!(error, InitError::Read { .. }), "{error}");
        assert!(error.to_string().starts_with("cannot read"), "{error}");
        assert_eq!(tree(&dir), [".gitignore"]);
        // `.gitignore` is not UTF-8: it cannot be read (not "written").
        let dir = temp.path().join("e");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join(".gitignore"), b"\xff\xfe.env\n").unwrap();
        let error = create(&dir, &prompt()).unwrap_err();
        let text = format!("{error}: {}", std::error::Error::source(&error).unwrap());
        assert!(
            text.contains("cannot read") && text.contains("UTF-8"),
            "{text}"
        );
        assert_eq!(tree(&dir), [".gitignore"]);
        // `prompts` is a file.
        let dir = temp.path().join("f");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("prompts"), "").unwrap();
        let error = create(&dir, &prompt()).unwrap_err();
        assert!(matches!(error, InitError::NotADirectory { .. }), "{error}");
        assert_eq!(tree(&dir), ["prompts"]);
        // The project path is a file.
        let file = temp.path().join("somefile");
        std::fs::write(&file, "x").unwrap();
        let error = create(&file, &prompt()).unwrap_err();
        assert!(
            error.to_string().contains("is a file, not a directory"),
            "{error}"
        );
        // A prompt file exists: nothing else is written, and a missing dir is not created.
        let dir = temp.path().join("g");
        std::fs::create_dir_all(dir.join("prompts")).unwrap();
        std::fs::write(dir.join("prompts/p.txt"), "mine").unwrap();
        assert!(matches!(
            create(&dir, &prompt()).unwrap_err(),
            InitError::Exists { .. }
        ));
        assert_eq!(tree(&dir), ["prompts", "prompts/p.txt"]);
        // And a good one still works.
        let dir = temp.path().join("new/h");
        let report = create(&dir, &prompt()).unwrap();
        assert_eq!(report.name, "h");
        assert_eq!(report.gitignore_added, 2);
    }

    /// The template with its commented-out blocks (those starting `# [`) switched on.
    fn uncommented(text: &str) -> String {
        let mut out = String::new();
        let mut in_block = false;
        for line in text.lines() {
            if line.starts_with("# [") {
                in_block = true;
            } else if !line.starts_with('#') {
                in_block = false;
            }
            let line = if in_block {
                line.strip_prefix("# ")
                    .or_else(|| line.strip_prefix('#'))
                    .unwrap_or(line)
            } else {
                line
            };
            out.push_str(line);
            out.push('\n');
        }
        out
    }

    #[test]
    fn the_template_and_its_commented_blocks_pass_validation() {
        let env = crate::config::EnvSnapshot::default();
        for text in [config_text("demo"), uncommented(&config_text("demo"))] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join(crate::config::FILE_NAME), &text).unwrap();
            let loaded =
                crate::check::load(dir.path(), &env).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(loaded.settings.project.name, "demo");
            assert!(loaded.settings.roles.generator.is_some());
        }
        let all = uncommented(&config_text("demo"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(crate::config::FILE_NAME), &all).unwrap();
        let loaded = crate::check::load(dir.path(), &env).unwrap();
        assert!(loaded.settings.training.is_some());
        assert_eq!(loaded.settings.targets.len(), 3);
        assert_eq!(
            loaded.settings.metrics.listen.as_deref(),
            Some("127.0.0.1:9464")
        );
    }

    #[test]
    fn env_example_names_every_variable_the_template_needs() {
        for var in [
            "OVERBRAINER_PROVIDERS__OPENROUTER__BASE_URL",
            "OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY",
            "OVERBRAINER_PROVIDERS__LOCAL_LLM__BASE_URL",
            "OVERBRAINER_TARGETS__GPU_BOX__HOST",
            "OVERBRAINER_RUNPOD__API_KEY",
            "OVERBRAINER_HF_TOKEN",
        ] {
            assert!(ENV_EXAMPLE.contains(&format!("# {var}=\n")), "{var}");
        }
    }

    #[test]
    fn names_are_quoted_as_toml_strings() {
        let text = config_text("my \"odd\" name");
        let table: toml::Table = text.parse().unwrap();
        assert_eq!(table["project"]["name"].as_str(), Some("my \"odd\" name"));
    }
}

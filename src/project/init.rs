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
    /// Reading or writing failed.
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
/// `prompts/`.
///
/// # Errors
///
/// [`InitError::Exists`] naming the first file that exists (before writing anything),
/// [`InitError::NoName`], or [`InitError::Io`].
pub fn create(dir: &Path, prompts: &[PromptFile]) -> Result<Report, InitError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| InitError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let absolute = dir.canonicalize().map_err(io(dir))?;
    let name = absolute
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| !n.is_empty())
        .ok_or_else(|| InitError::NoName {
            dir: dir.to_owned(),
        })?
        .to_owned();
    let files = files(&name, prompts);
    for (relative, _) in &files {
        let path = dir.join(relative);
        if path.symlink_metadata().is_ok() {
            return Err(InitError::Exists { path });
        }
    }
    let mut written = Vec::new();
    for (relative, text) in &files {
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        std::fs::write(&path, text).map_err(io(&path))?;
        written.push(relative.clone());
    }
    let gitignore = dir.join(".gitignore");
    let existing = match std::fs::read_to_string(&gitignore) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(InitError::Io {
                path: gitignore,
                source,
            });
        }
    };
    let (merged, added) = merge_gitignore(&existing);
    if added > 0 {
        std::fs::write(&gitignore, merged).map_err(io(&gitignore))?;
    }
    Ok(Report {
        dir: dir.to_owned(),
        name,
        written,
        gitignore_added: added,
    })
}

/// `.gitignore` text with the missing [`GITIGNORE_ENTRIES`] appended, and how many were
/// added. Existing lines are kept as they are; any of `.overbrainer`, `.overbrainer/`,
/// `/.overbrainer`, `/.overbrainer/` counts as ignoring the state directory (CLI-10).
#[must_use]
pub fn merge_gitignore(existing: &str) -> (String, usize) {
    let lines: Vec<&str> = existing.lines().map(str::trim).collect();
    let has_env = lines.contains(&".env") || lines.contains(&"/.env");
    let has_state = lines.iter().any(|l| {
        matches!(
            *l,
            ".overbrainer" | ".overbrainer/" | "/.overbrainer" | "/.overbrainer/"
        )
    });
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
                crate::config::load(dir.path(), &env).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(loaded.settings.project.name, "demo");
            assert!(loaded.settings.roles.generator.is_some());
        }
        let all = uncommented(&config_text("demo"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(crate::config::FILE_NAME), &all).unwrap();
        let loaded = crate::config::load(dir.path(), &env).unwrap();
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

//! Errors of loading the configuration. Messages name files, lines, keys and variables,
//! never a value from the file, `.env` or the environment (CFG-2, CFG-3, ENV-4).

use std::fmt;
use std::path::PathBuf;

/// One problem found in the configuration: the key it concerns and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Dotted key path (`pipeline.concurrency`), or a variable name for env problems.
    pub key: String,
    /// The reason, in the project's message voice.
    pub message: String,
    /// Another key the problem is about (the second of two settings that cannot
    /// work together), whose source is named beside the key's own.
    pub other: Option<String>,
}

impl Problem {
    pub(crate) fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            message: message.into(),
            other: None,
        }
    }

    /// The problem, about `other` as well as its own key.
    #[must_use]
    pub(crate) fn with_other(mut self, other: impl Into<String>) -> Self {
        self.other = Some(other.into());
        self
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.key, self.message)
    }
}

/// Why the configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// There is no `overbrainer.toml` in the project directory (LAY-1).
    #[error("no `overbrainer.toml` found in `{}`; run `overbrainer init` or pass `-C DIR`", .dir.display())]
    NotFound {
        /// The directory searched.
        dir: PathBuf,
    },
    /// `overbrainer.toml` exists but cannot be read.
    #[error("cannot read `{}`", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// `overbrainer.toml` is not valid TOML (position only, CFG-3).
    #[error("`{}` is not valid TOML: syntax error at line {line}, column {column}", .path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
    },
    /// `.env` exists but cannot be read.
    #[error("cannot read `{}`", .path.display())]
    DotEnvRead {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// `.env` cannot be parsed (line number only, ENV-4).
    #[error("`{}` cannot be parsed{}", .path.display(), line_suffix(*.line))]
    DotEnvSyntax {
        /// The file.
        path: PathBuf,
        /// 1-based line of the error, when it could be located.
        line: Option<usize>,
    },
    /// The configuration has problems; every one is listed (CHK-3), each naming its source
    /// (the file, a variable, a `.env` line), as they may come from any layer.
    #[error("invalid configuration:{}", list(.problems))]
    Invalid {
        /// `overbrainer.toml`.
        path: PathBuf,
        /// Every problem found, in file order of sections.
        problems: Vec<Problem>,
    },
}

fn line_suffix(line: Option<usize>) -> String {
    line.map(|n| format!(": error at line {n}"))
        .unwrap_or_default()
}

fn list(problems: &[Problem]) -> String {
    problems.iter().fold(String::new(), |mut out, p| {
        use std::fmt::Write as _;
        let _ = write!(out, "\n  - {p}");
        out
    })
}

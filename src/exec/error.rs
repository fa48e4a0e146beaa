//! [`ExecError`]: what can go wrong in the execution layer, and the small texts its
//! messages are made of.

use std::path::PathBuf;

use super::SshError;

/// What can go wrong while starting, watching or reaching a job, or moving files.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// Reading or writing a local file or directory failed.
    #[error("cannot access {}", path.display())]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Starting or waiting for a local program failed.
    #[error("cannot run `{program}`")]
    Spawn {
        /// The program's name.
        program: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A script on the target exited with a failure. `message` is what it wrote on
    /// standard error (or its exit status); no secret can be in it, since secrets
    /// only ever travel on standard input.
    #[error("{action} failed: {message}")]
    Command {
        /// The operation, such as `upload`, `download` or `probe`.
        action: &'static str,
        /// The script's error output, or its exit status when it wrote none.
        message: String,
    },
    /// Opening or using the SSH connection failed.
    #[error("ssh failed")]
    Ssh(#[source] SshError),
    /// The OpenSSH master connected and went to the background, then was gone by the
    /// time the first command was sent (something killed it locally, or the server
    /// closed the connection). `log` holds the end of the master's own log, flattened
    /// to one line of bounded length without control characters; empty when the log
    /// was empty.
    #[error("the ssh master connection ended right after it started (ssh log: {})", or_empty(.log))]
    MasterDied {
        /// The end of the master's log.
        log: String,
    },
    /// A secret was refused before the job started: its name is not a valid
    /// environment variable name, or its value contains a line break or a NUL byte.
    /// Only the name is reported, never the value.
    #[error("{0} cannot be passed to the job")]
    InvalidSecret(String),
    /// The target's answer could not be understood, or broke a rule (a path leaving
    /// its directory, an invalid process ID).
    #[error("unexpected answer from the target: {0}")]
    Protocol(String),
    /// Symbolic links of a tree point outside it (absolute, or climbing above its
    /// root): a manifest or a download refuses the tree, naming every such link with
    /// its target (`` `path` -> `target` ``, names shown lossily).
    #[error(
        "symbolic links point outside the tree: {}; only relative links that stay inside the run directory are kept: remove or replace them on the target",
        .0.join(", ")
    )]
    EscapingLinks(Vec<String>),
    /// [`Executor::cancel`](super::Executor::cancel) stopped the job, but these
    /// processes of the job were still there after `SIGKILL` (see
    /// [`LEFTOVERS_FILE`](super::LEFTOVERS_FILE)). Never a clean cancel: the job reads
    /// [`JobStatus::Cancelled`](super::JobStatus::Cancelled) and
    /// [`Executor::leftovers`](super::Executor::leftovers) names them.
    #[error("cancelled with leftovers: {}", pid_list(.pids))]
    Leftovers {
        /// The survivors' process IDs, sorted.
        pids: Vec<u32>,
    },
}

impl ExecError {
    /// This error, a [`ExecError::Command`] naming `action` instead of its own: for a
    /// script run through [`Executor::probe`](super::Executor::probe) on behalf of
    /// another operation.
    #[must_use]
    pub fn for_action(self, action: &'static str) -> Self {
        match self {
            Self::Command { message, .. } => Self::Command { action, message },
            other => other,
        }
    }
}

/// Process IDs separated by blanks.
#[must_use]
pub fn pid_list(pids: &[u32]) -> String {
    pids.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text`, or the word `empty` in its place.
pub(crate) fn or_empty(text: &str) -> &str {
    if text.is_empty() { "empty" } else { text }
}

//! The errors of a push.

use std::path::PathBuf;

use super::TOKEN_VAR;

/// Errors of a push.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// The run cannot be read.
    #[error(transparent)]
    Run(#[from] crate::runs::RunError),
    /// `[compare] min_win_or_tie` refuses the run (issue 15's gate).
    #[error(transparent)]
    Gate(#[from] crate::compare::gate::Refusal),
    /// The run may not be pushed (HUB-2).
    #[error("run {run} cannot be pushed: {reason}")]
    NotEligible {
        /// Run ID.
        run: String,
        /// Why, with the hint.
        reason: String,
    },
    /// A file cannot be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// Which.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Two files of `output/` land on one repo path.
    #[error("{} and {} would both be uploaded as {path}", first.display(), second.display())]
    Clash {
        /// Repo path.
        path: String,
        /// One file.
        first: PathBuf,
        /// The other.
        second: PathBuf,
    },
    /// No token.
    #[error("{TOKEN_VAR} is not set: a push needs a Hugging Face token with write access")]
    NoToken,
    /// The token cannot be resolved (Vault).
    #[error(transparent)]
    Secret(Box<crate::secrets::SecretError>),
    /// The Hub refused the token.
    #[error("the Hub refused the token in {TOKEN_VAR} (401): check that it is valid")]
    BadToken,
    /// The token may not write in the namespace (HUB-12).
    #[error("the token in {TOKEN_VAR} needs write access to the namespace {namespace:?}")]
    NoWriteAccess {
        /// The namespace.
        namespace: String,
    },
    /// HUB-6's exception.
    #[error(
        "{repo} exists and is public, and this push asks for a private repo; nothing was sent. Pass --public or set [hub] private = false to push to it"
    )]
    PublicRepo {
        /// The repo.
        repo: String,
    },
    /// An invalid repo name.
    #[error("invalid repo {repo:?} ({source_of}): {problem}; nothing was sent")]
    BadRepo {
        /// The name given.
        repo: String,
        /// Where it came from: `--repo`, `hub.repo`, or the default.
        source_of: String,
        /// The Hub's rule it breaks.
        problem: String,
    },
    /// Cancelled before the commit (HUB-11).
    #[error(
        "push cancelled before its commit: nothing was committed to {repo}; run `overbrainer push {run}` again to resume (the Hub keeps the objects already uploaded)"
    )]
    Cancelled {
        /// The repo.
        repo: String,
        /// Run ID.
        run: String,
    },
    /// The Hub answered an error.
    #[error("the Hub refused the {what} ({status}): {message}")]
    Refused {
        /// Which call.
        what: String,
        /// HTTP status.
        status: u16,
        /// Its message, redacted.
        message: String,
    },
    /// No answer.
    #[error("the Hub did not answer the {what}: {reason}")]
    Http {
        /// Which call.
        what: String,
        /// Why.
        reason: String,
    },
    /// An answer the protocol does not allow.
    #[error("unexpected answer from the Hub: {0}")]
    Protocol(String),
}

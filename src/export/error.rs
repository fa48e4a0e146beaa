//! [`ExportError`]: what can go wrong in `export`, each naming the run, key or file
//! and saying the fix.

use std::path::PathBuf;

use super::ollama;
use crate::config::QUANTIZE_TYPES;
use crate::runs::RunError;

/// Errors of `export`; messages name the run, key or file and say the fix.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// From the run layer (unknown run, target, retrieval).
    #[error(transparent)]
    Run(#[from] RunError),
    /// An invalid `--quantize` (EXP-3), before any work.
    #[error("invalid quantization type `{0}` (`--quantize` or `export.quantize`): expected one of {types}", types = QUANTIZE_TYPES.join(", "))]
    BadQuantize(String),
    /// A run that cannot be exported (EXP-1).
    #[error(
        "run `{run_id}` is {state}: only a succeeded run, or a stopped one with a snapshot, can be exported"
    )]
    NotExportable {
        /// Run ID.
        run_id: String,
        /// Its state.
        state: &'static str,
    },
    /// The run's model is not where it should be.
    #[error("run `{run_id}` has no model to export: {reason}")]
    NoModel {
        /// Run ID.
        run_id: String,
        /// What is missing.
        reason: String,
    },
    /// An invalid Ollama model name, before any work.
    #[error("invalid Ollama model name `{name}` ({by}): {problem}")]
    BadOllamaName {
        /// The name.
        name: String,
        /// `--ollama` or `export.ollama_name`.
        by: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// A pre-tokenizer name the pinned llama.cpp does not know, before any work.
    #[error(
        "`export.pre_tokenizer` = `{0}` is not a pre-tokenizer llama.cpp b11434 knows (it would be written into the GGUF and refused by llama-server); use one of its names, such as `gpt-2`, `llama-bpe`, `qwen2`"
    )]
    UnknownPreTokenizer(String),
    /// `export attach` of an export that cannot be found.
    #[error("unknown export `{export_id}`: {reason}")]
    UnknownExport {
        /// What was asked.
        export_id: String,
        /// Why it was not found.
        reason: String,
    },
    /// EXP-11's re-upload did not arrive intact.
    #[error(
        "the run directory of `{run_id}` on target `{target}` had lost its model; the re-uploaded `axolotl.yaml` and `output/` do not match this machine's ({reason})"
    )]
    Reupload {
        /// Run ID.
        run_id: String,
        /// Target name.
        target: String,
        /// What differs.
        reason: String,
    },
    /// Following the job failed (a lost connection); the job may still run.
    #[error(
        "lost export `{export_id}` of run `{run_id}` while it ran: {reason}; `overbrainer export attach {export_id}` follows it again"
    )]
    Detached {
        /// Run ID.
        run_id: String,
        /// Export ID.
        export_id: String,
        /// What failed.
        reason: String,
    },
    /// The job refused before the slow part (the preflight) or at a check.
    #[error("export `{export_id}` of run `{run_id}` refused: {reason}")]
    Refused {
        /// Run ID.
        run_id: String,
        /// Export ID.
        export_id: String,
        /// The job's refusal line.
        reason: String,
    },
    /// The job failed.
    #[error("export `{export_id}` of run `{run_id}` failed ({status}); see {log}")]
    Failed {
        /// Run ID.
        run_id: String,
        /// Export ID.
        export_id: String,
        /// How the job ended.
        status: String,
        /// Where its log is.
        log: String,
    },
    /// Ctrl-C: the job was cancelled (EXP-15).
    #[error("export `{export_id}` of run `{run_id}` cancelled")]
    Cancelled {
        /// Run ID.
        run_id: String,
        /// Export ID.
        export_id: String,
    },
    /// The retrieved GGUF differs from what the job recorded.
    #[error("the retrieved `{}` does not match `export.json`: {reason}", path.display())]
    Mismatch {
        /// The file.
        path: PathBuf,
        /// What differs.
        reason: String,
    },
    /// A local file could not be read or written.
    #[error("cannot access `{}`", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
    /// `ollama create` or its REST route failed.
    #[error(transparent)]
    Ollama(#[from] ollama::OllamaError),
}

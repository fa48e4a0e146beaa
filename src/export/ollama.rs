//! The Ollama model of an export (EXP-13, issue 14; reference section C): with `ollama`
//! on this machine's `PATH`, `ollama create NAME -f Modelfile` in the GGUF's directory;
//! without it but with `OVERBRAINER_OLLAMA__BASE_URL` set, the REST route (the GGUF as
//! the blob `sha256:<digest>`, then `/api/create` with `files`); otherwise the exact
//! command to run, for a warning.

use std::path::Path;

use crate::config::EnvSnapshot;
use crate::exec::{Executor as _, LocalExecutor, quote};
use crate::project::Project;

/// The variable naming an Ollama server for the REST route.
pub const BASE_URL_VAR: &str = "OVERBRAINER_OLLAMA__BASE_URL";

/// What [`create`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Created {
    /// The model exists now.
    Made,
    /// Neither `ollama` nor a server: the command to run by hand.
    Missing {
        /// The exact command.
        command: String,
    },
}

/// Errors of the Ollama step.
#[derive(Debug, thiserror::Error)]
pub enum OllamaError {
    /// `ollama create` failed.
    #[error("`ollama create {name}` failed: {reason}")]
    Cli {
        /// Model name.
        name: String,
        /// What it said.
        reason: String,
    },
    /// The REST route failed.
    #[error("creating Ollama model `{name}` at `{BASE_URL_VAR}` failed: {reason}")]
    Rest {
        /// Model name.
        name: String,
        /// What failed.
        reason: String,
    },
}

/// What is wrong with `name` as an Ollama model name, if anything (Ollama's
/// `types/model/name.go`): `[host/][namespace/]model[:tag]`, each part starting with a
/// letter or digit and holding letters, digits, `_`, `-` and `.` (the host also `:`
/// for a port), the model, namespace and tag 80 characters at most, the host 350.
#[must_use]
pub fn name_problem(name: &str) -> Option<String> {
    let (path, tag) = match name.rsplit_once(':') {
        Some((path, tag)) if !tag.contains('/') => (path, Some(tag)),
        _ => (name, None),
    };
    let parts: Vec<&str> = path.split('/').collect();
    if parts.len() > 3 {
        return Some("expected `[host/][namespace/]model[:tag]`".to_owned());
    }
    let part_ok = |part: &str, max: usize, extra: &[char]| {
        !part.is_empty()
            && part.len() <= max
            && part.starts_with(|c: char| c.is_ascii_alphanumeric())
            && part.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') || extra.contains(&c)
            })
    };
    let last = parts.len() - 1;
    for (index, part) in parts.iter().enumerate() {
        let host = parts.len() == 3 && index == 0;
        let ok = if host {
            part_ok(part, 350, &[':'])
        } else {
            part_ok(part, 80, &[])
        };
        if !ok {
            let what = if index == last {
                "the model"
            } else if host {
                "the host"
            } else {
                "the namespace"
            };
            return Some(format!(
                "{what} part `{part}` must start with a letter or digit and hold only letters, digits, `_`, `-` and `.` ({} characters at most)",
                if host { 350 } else { 80 }
            ));
        }
    }
    if let Some(tag) = tag {
        if !part_ok(tag, 80, &[]) {
            return Some(format!(
                "the tag `{tag}` must start with a letter or digit and hold only letters, digits, `_`, `-` and `.` (80 characters at most)"
            ));
        }
    }
    None
}

/// The command that makes model `name` from the `Modelfile` beside `gguf`.
#[must_use]
pub fn command(name: &str, gguf: &Path) -> String {
    let dir = gguf.parent().unwrap_or_else(|| Path::new("."));
    format!(
        "cd {} && ollama create {} -f Modelfile",
        quote(&dir.to_string_lossy()),
        quote(name)
    )
}

/// Makes Ollama model `name` from `gguf` and the `Modelfile` beside it.
///
/// # Errors
///
/// [`OllamaError`] when the CLI or the server refuses.
pub async fn create(
    project: &Project,
    env: &EnvSnapshot,
    name: &str,
    gguf: &Path,
    num_ctx: u64,
) -> Result<Created, OllamaError> {
    let cli = |reason: String| OllamaError::Cli {
        name: name.to_owned(),
        reason,
    };
    let local = LocalExecutor::new(&project.runs_dir()).map_err(|e| cli(e.to_string()))?;
    let found = local
        .probe("if command -v ollama >/dev/null 2>&1; then echo found; else echo missing; fi")
        .await
        .map_err(|e| cli(e.to_string()))?;
    let command = command(name, gguf);
    if String::from_utf8_lossy(&found).trim() == "found" {
        local
            .probe(&command)
            .await
            .map_err(|e| cli(crate::runs::start::error_chain(&e)))?;
        return Ok(Created::Made);
    }
    match env.get(BASE_URL_VAR) {
        Some(base) => {
            rest(base, name, gguf, num_ctx)
                .await
                .map_err(|reason| OllamaError::Rest {
                    name: name.to_owned(),
                    reason,
                })?;
            Ok(Created::Made)
        }
        None => Ok(Created::Missing { command }),
    }
}

/// The REST route: `POST /api/blobs/sha256:<digest>` with the file, then `POST
/// /api/create` with `files` and `num_ctx`, whose NDJSON stream must end in `success`.
async fn rest(base: &str, name: &str, gguf: &Path, num_ctx: u64) -> Result<(), String> {
    let base = base.trim_end_matches('/');
    let digest = crate::exec::sha256_file(gguf).map_err(|e| e.to_string())?;
    let file_name = gguf
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let client = reqwest::Client::new();
    let file = tokio::fs::File::open(gguf)
        .await
        .map_err(|e| format!("`{}`: {e}", gguf.display()))?;
    let size = file
        .metadata()
        .await
        .map_err(|e| format!("`{}`: {e}", gguf.display()))?
        .len();
    let response = client
        .post(format!("{base}/api/blobs/sha256:{digest}"))
        .header(reqwest::header::CONTENT_LENGTH, size)
        .body(reqwest::Body::wrap_stream(
            tokio_util::io::ReaderStream::new(file),
        ))
        .send()
        .await
        .map_err(|e| format!("blob upload: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("blob upload: HTTP {}", response.status()));
    }
    let body = serde_json::json!({
        "model": name,
        "files": { file_name: format!("sha256:{digest}") },
        "parameters": { "num_ctx": num_ctx },
    });
    let response = client
        .post(format!("{base}/api/create"))
        .json(&body)
        .send()
        .await
        .map_err(|e| format!("create: {e}"))?;
    let status = response.status();
    let text = response.text().await.map_err(|e| format!("create: {e}"))?;
    if !status.is_success() {
        return Err(format!("create: HTTP {status}"));
    }
    let mut success = false;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("create: unreadable reply ({e})"))?;
        if let Some(error) = value.get("error").and_then(|e| e.as_str()) {
            return Err(format!("create: {error}"));
        }
        success |= value.get("status").and_then(|s| s.as_str()) == Some("success");
    }
    if success {
        Ok(())
    } else {
        Err("create: the server never said `success`".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ollama_names_are_checked_as_ollama_parses_them() {
        for good in [
            "tiny-child",
            "me/tiny:q8",
            "registry.local:5000/me/tiny:latest",
            "Tiny_1.0",
        ] {
            assert_eq!(name_problem(good), None, "{good}");
        }
        for bad in [
            "",
            "tiny child",
            "-tiny",
            "a/b/c/d",
            "tiny:",
            "me/:x",
            "tiny;rm",
            &"x".repeat(81),
        ] {
            assert!(name_problem(bad).is_some(), "{bad:?}");
        }
        assert!(name_problem("tiny child").unwrap().contains("`tiny child`"));
    }
}

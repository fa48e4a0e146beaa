//! `export RUN_ID [--quantize TYPE] [--ollama NAME]` (spec/export-compare-push.md,
//! EXP-1..EXP-7, EXP-13..EXP-15; issue 14): the run's model to a GGUF with the pinned
//! llama.cpp, as a detached job on the run's target with its own ID and directory
//! `runs/<run-id>/exports/<export-id>/` (EXP-2), then the GGUF, its `Modelfile` and the
//! job's `export.json` retrieved, checked against the target's manifest, and the Ollama
//! model made when a name is set.
//!
//! - [`llama`]: the pinned llama.cpp and its cache;
//! - [`script`]: the job's steps and their commands (`export_tool.py` is its Python);
//! - [`ollama`]: `ollama create`, or its REST route.
//!
//! A flow: it sends [`ExportEvent`]s and never prints. The run's `run.json` is never
//! written, so a failed export leaves the run as it was (EXP-15).

pub mod ollama;

pub use crate::gguf::{in_job_stage, llama, script};

use std::path::PathBuf;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::config::QUANTIZE_TYPES;
use crate::config::{EnvSnapshot, Settings};
use crate::exec::{AnyExecutor, Executor as _, JOB_LOG, JobCommand, JobId, JobRuntime, JobStatus};
use crate::gguf::llama_of;
use crate::project::Project;
use crate::runs::record::{RunRecord, State};
use crate::runs::start::error_chain;
use crate::runs::{RunError, target};
use crate::train::axolotl::{AXOLOTL_YAML, MERGED_DIR, OUTPUT_DIR};
use script::{EXPORT_JSON, GGUF_DIR, Plan, Source};

/// The directory of the export jobs inside a run directory (EXP-2).
pub const EXPORTS_DIR: &str = "exports";

/// What `export` was asked.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The run.
    pub run_id: String,
    /// `--quantize`, over `[export] quantize`.
    pub quantize: Option<String>,
    /// `--ollama`, over `[export] ollama_name`.
    pub ollama: Option<String>,
}

/// What an export reports while it works.
#[derive(Debug, Clone)]
pub enum ExportEvent {
    /// The job started (EXP-14's first line).
    Started {
        /// Export ID.
        export_id: String,
        /// The model directory exported, relative to the run directory.
        source: String,
        /// Quantization type.
        quantize: String,
        /// Target name.
        target: String,
    },
    /// A step of the job began (`step 2/6 preflight`).
    Step(String),
    /// A line of the job's `job.log`.
    JobLog(String),
    /// `ollama` is not on `PATH` and no REST address is set: the command to run.
    OllamaMissing {
        /// The exact command, run in the GGUF's directory.
        command: String,
    },
}

/// Sender of [`ExportEvent`]s.
pub type Events = tokio::sync::mpsc::UnboundedSender<ExportEvent>;

fn emit(events: &Events, event: ExportEvent) {
    let _ = events.send(event);
}

/// `export.json` (EXP-7), as the job wrote it.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct ExportRecord {
    /// Quantization type asked.
    pub quantize: String,
    /// llama.cpp release tag.
    pub llama_cpp: String,
    /// The GGUF, relative to the run directory.
    pub file: String,
    /// Its SHA-256.
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
    /// When it was made (UTC).
    pub created: String,
    /// `general.architecture`.
    pub architecture: String,
    /// Number of tensors.
    pub tensor_count: u64,
    /// The tensor types the file really holds.
    pub tensor_types: Vec<String>,
}

/// How an export ended.
#[derive(Debug, Clone)]
pub struct Exported {
    /// Export ID.
    pub export_id: String,
    /// The local GGUF.
    pub gguf: PathBuf,
    /// Its `export.json`.
    pub record: ExportRecord,
    /// The Ollama model made, if any.
    pub ollama: Option<String>,
}

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
    #[error("run `{run_id}` is {state}: only a succeeded run can be exported")]
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
    /// A container runtime: not exported by this build.
    #[error(
        "target `{0}` runs jobs in a container; export runs only on a native runtime in this build"
    )]
    ContainerRuntime(String),
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

/// The quantization type of `request` over `settings`, checked (EXP-3).
///
/// # Errors
///
/// [`ExportError::BadQuantize`].
pub fn quantize_type(request: &Request, settings: &Settings) -> Result<String, ExportError> {
    let quantize = request
        .quantize
        .clone()
        .unwrap_or_else(|| settings.export.quantize.clone());
    if QUANTIZE_TYPES.contains(&quantize.as_str()) {
        Ok(quantize)
    } else {
        Err(ExportError::BadQuantize(quantize))
    }
}

/// A top-level `key: value` of an `axolotl.yaml` overbrainer wrote (values are JSON
/// scalars there).
pub(crate) fn yaml_value(yaml: &str, key: &str) -> Option<serde_json::Value> {
    yaml.lines().find_map(|line| {
        let rest = line.strip_prefix(key)?.strip_prefix(':')?.trim();
        serde_json::from_str(rest)
            .ok()
            .or_else(|| Some(serde_json::Value::String(rest.to_owned())))
    })
}

/// `export`: the whole export of one run; see the module's documentation.
///
/// # Errors
///
/// Every [`ExportError`]; the run's record is left as it was.
pub async fn export(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    request: &Request,
    events: &Events,
    cancel: &CancellationToken,
) -> Result<Exported, ExportError> {
    let quantize = quantize_type(request, settings)?;
    let run_id = &request.run_id;
    let record = RunRecord::load(&project.runs_dir(), run_id)?;
    if record.state != State::Succeeded {
        return Err(ExportError::NotExportable {
            run_id: run_id.clone(),
            state: record.state.name(),
        });
    }
    let local_dir = project.run_dir(run_id);
    let yaml_path = local_dir.join(AXOLOTL_YAML);
    let yaml = std::fs::read_to_string(&yaml_path).map_err(|source| ExportError::Io {
        path: yaml_path.clone(),
        source,
    })?;
    let num_ctx = yaml_value(&yaml, "sequence_len")
        .and_then(|v| v.as_u64())
        .unwrap_or(2048);
    let resolved = target::resolve(settings, &record.target)?;
    if !matches!(resolved.runtime, JobRuntime::Native { .. }) {
        return Err(ExportError::ContainerRuntime(record.target.clone()));
    }
    let executor = target::connect(&resolved, &project.runs_dir(), env).await?;
    let exec = |source| {
        ExportError::Run(RunError::Exec {
            target: record.target.clone(),
            source: Box::new(source),
        })
    };
    let run_dir = record.dir.trim_end_matches('/').to_owned();
    let source = model_source(&executor, &record, &yaml).await?;
    let llama = llama_of(settings, &record.target, executor.workdir());
    let (export_id, job_dir) = claim(&executor, &run_dir).await.map_err(exec)?;
    let plan = Plan {
        run_id: run_id.clone(),
        run_dir: run_dir.clone(),
        job_dir: job_dir.clone(),
        quantize: quantize.clone(),
        llama,
        source: source.clone(),
        pre_tokenizer: settings.export.pre_tokenizer.clone(),
        num_ctx,
        export_json: format!("{job_dir}/{EXPORT_JSON}"),
    };
    let spec = target::job_spec(&record, &executor, &resolved.runtime, &[]);
    let job = JobCommand {
        dir: job_dir.clone(),
        ..spec.job(&plan.script(&spec), Vec::new())
    };
    let job = executor.spawn(&job).await.map_err(exec)?;
    emit(
        events,
        ExportEvent::Started {
            export_id: export_id.clone(),
            source: match &source {
                Source::Model(dir) => dir
                    .strip_prefix(&format!("{run_dir}/"))
                    .unwrap_or(dir)
                    .to_owned(),
                Source::Adapter { .. } => format!("{OUTPUT_DIR} (adapter, merged first)"),
            },
            quantize: quantize.clone(),
            target: record.target.clone(),
        },
    );
    let status = follow(&executor, &job, events, cancel)
        .await
        .map_err(exec)?;
    let relative = format!("{EXPORTS_DIR}/{export_id}");
    if status == JobStatus::Running {
        // Ctrl-C: the job is cancelled, never left detached (EXP-15).
        executor.cancel(&job).await.map_err(exec)?;
        let _ = crate::runs::retrieve::retrieve_export(
            &executor, &record, &local_dir, &relative, false,
        )
        .await;
        return Err(ExportError::Cancelled {
            run_id: run_id.clone(),
            export_id,
        });
    }
    if status != JobStatus::Exited(0) {
        return Err(failure(&executor, &record, &local_dir, export_id, status).await);
    }
    let (gguf, exported) = collect(&executor, &record, &local_dir, &relative).await?;
    let name = request
        .ollama
        .clone()
        .or_else(|| settings.export.ollama_name.clone());
    let ollama = match name {
        Some(name) => make_ollama(project, env, events, name, &gguf, num_ctx).await?,
        None => None,
    };
    Ok(Exported {
        export_id,
        gguf,
        record: exported,
        ollama,
    })
}

/// Claims a new `exports/export_<YYYYMMDD>-<HHMMSS>[_<n>]/` (EXP-2).
async fn claim(
    executor: &AnyExecutor,
    run_dir: &str,
) -> Result<(String, String), crate::exec::ExecError> {
    crate::runs::side_job::stamped(executor, run_dir, EXPORTS_DIR, "export").await
}

/// The error of a job that did not exit 0: its refusal line, or its log's place.
async fn failure(
    executor: &AnyExecutor,
    record: &RunRecord,
    local_dir: &std::path::Path,
    export_id: String,
    status: JobStatus,
) -> ExportError {
    let run_id = &record.id;
    let relative = format!("{EXPORTS_DIR}/{export_id}");
    let _ =
        crate::runs::retrieve::retrieve_export(executor, record, local_dir, &relative, false).await;
    let log_path = local_dir.join(&relative).join(JOB_LOG);
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    if let Some(reason) = script::refusal(&log) {
        return ExportError::Refused {
            run_id: run_id.clone(),
            export_id,
            reason: reason.to_owned(),
        };
    }
    ExportError::Failed {
        run_id: run_id.clone(),
        export_id,
        status: format!("{status:?}"),
        log: log_path.display().to_string(),
    }
}

/// Retrieves the job's directory and `output/gguf/`, checked against the target's
/// manifest, and checks the GGUF against the job's `export.json`.
async fn collect(
    executor: &AnyExecutor,
    record: &RunRecord,
    local_dir: &std::path::Path,
    relative: &str,
) -> Result<(PathBuf, ExportRecord), ExportError> {
    crate::runs::retrieve::retrieve_export(executor, record, local_dir, relative, true).await?;
    let json_path = local_dir.join(relative).join(EXPORT_JSON);
    let text = std::fs::read_to_string(&json_path).map_err(|source| ExportError::Io {
        path: json_path.clone(),
        source,
    })?;
    let exported: ExportRecord =
        serde_json::from_str(&text).map_err(|error| ExportError::Mismatch {
            path: json_path.clone(),
            reason: error.to_string(),
        })?;
    let gguf = local_dir.join(&exported.file);
    let digest = crate::exec::sha256_file(&gguf).map_err(|error| ExportError::Mismatch {
        path: gguf.clone(),
        reason: error_chain(&error),
    })?;
    if digest != exported.sha256 {
        return Err(ExportError::Mismatch {
            path: gguf,
            reason: format!("SHA-256 {digest}, recorded {}", exported.sha256),
        });
    }
    Ok((gguf, exported))
}

/// The Ollama step (EXP-13): the model's name when made, `None` with a warning when
/// there is no way to make it here.
async fn make_ollama(
    project: &Project,
    env: &EnvSnapshot,
    events: &Events,
    name: String,
    gguf: &std::path::Path,
    num_ctx: u64,
) -> Result<Option<String>, ExportError> {
    match ollama::create(project, env, &name, gguf, num_ctx).await? {
        ollama::Created::Made => Ok(Some(name)),
        ollama::Created::Missing { command } => {
            emit(events, ExportEvent::OllamaMissing { command });
            Ok(None)
        }
    }
}

/// The model to export, as the target holds it (EXP-4 step 1): `output/merged/`, a full
/// fine-tune's `output/`, or an adapter over the `base_model` of `axolotl.yaml`.
async fn model_source(
    executor: &AnyExecutor,
    record: &RunRecord,
    yaml: &str,
) -> Result<Source, ExportError> {
    let files = executor
        .manifest(
            &record.dir,
            &[OUTPUT_DIR.to_owned()],
            &["checkpoint-*".to_owned(), GGUF_DIR.to_owned()],
        )
        .await
        .map_err(|source| RunError::Exec {
            target: record.target.clone(),
            source: Box::new(source),
        })?;
    let has = |path: &str| files.iter().any(|f| f.path == path);
    let run_dir = record.dir.trim_end_matches('/');
    if has(&format!("{OUTPUT_DIR}/{MERGED_DIR}/config.json")) {
        return Ok(Source::Model(format!(
            "{run_dir}/{OUTPUT_DIR}/{MERGED_DIR}"
        )));
    }
    if has(&format!("{OUTPUT_DIR}/adapter_config.json")) {
        let Some(serde_json::Value::String(base_model)) = yaml_value(yaml, "base_model") else {
            return Err(ExportError::NoModel {
                run_id: record.id.clone(),
                reason: format!("`{AXOLOTL_YAML}` names no `base_model` to merge the adapter into"),
            });
        };
        return Ok(Source::Adapter { base_model });
    }
    if has(&format!("{OUTPUT_DIR}/config.json")) {
        return Ok(Source::Model(format!("{run_dir}/{OUTPUT_DIR}")));
    }
    Err(ExportError::NoModel {
        run_id: record.id.clone(),
        reason: format!(
            "neither `{OUTPUT_DIR}/{MERGED_DIR}/`, an adapter nor a full model in `{OUTPUT_DIR}/` on target `{}`",
            record.target
        ),
    })
}

/// Follows the job until it ends, sending its log lines; [`JobStatus::Running`] when
/// `cancel` fired first.
async fn follow(
    executor: &AnyExecutor,
    job: &JobId,
    events: &Events,
    cancel: &CancellationToken,
) -> Result<JobStatus, crate::exec::ExecError> {
    crate::runs::side_job::follow(executor, job, cancel, |line| {
        if let Some(what) = crate::runs::side_job::step(&line, script::LINE_PREFIX) {
            emit(events, ExportEvent::Step(what.to_owned()));
        }
        emit(events, ExportEvent::JobLog(line));
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_axolotl_yaml_values_are_read_as_overbrainer_writes_them() {
        let yaml = "base_model: \"/m/tiny\"\nsequence_len: 256\ndatasets:\n  - path: x\n";
        assert_eq!(
            yaml_value(yaml, "base_model"),
            Some(serde_json::Value::String("/m/tiny".into()))
        );
        assert_eq!(
            yaml_value(yaml, "sequence_len").and_then(|v| v.as_u64()),
            Some(256)
        );
        assert_eq!(yaml_value(yaml, "missing"), None);
    }

    #[test]
    fn an_invalid_quantize_type_is_refused_naming_the_flag_and_key() {
        let settings = Settings::default();
        let request = Request {
            run_id: "r".into(),
            quantize: Some("Q9_X".into()),
            ollama: None,
        };
        let error = quantize_type(&request, &settings).unwrap_err().to_string();
        assert!(
            error.contains("`Q9_X`") && error.contains("--quantize"),
            "{error}"
        );
        assert_eq!(
            quantize_type(&Request::default(), &settings).unwrap(),
            "Q4_K_M"
        );
    }
}

//! `export RUN_ID [--quantize TYPE] [--ollama NAME]` (spec/export-compare-push.md,
//! EXP-1..EXP-7, EXP-13..EXP-15; issue 14): the run's model to a GGUF with the pinned
//! llama.cpp, as a detached job on the run's target with its own ID and directory
//! `runs/<run-id>/exports/<export-id>/` (EXP-2), then the GGUF, its `Modelfile` and the
//! job's `export.json` retrieved, checked against the target's manifest, and the Ollama
//! model made when a name is set.
//!
//! - [`llama`]: the pinned llama.cpp and its cache;
//! - [`script`]: the job's steps and their commands (`export_tool.py` is its Python);
//! - [`ollama`]: `ollama create`, or its REST route;
//! - [`job`]: the export job's own `run.json`, for [`attach`];
//! - `reupload`: EXP-11, the retrieved model sent back to an SSH target that lost it.
//!
//! A run that is `stopped` with a snapshot exports its partial model (EXP-1): the
//! adapter or model Axolotl saved in `output/` when it stopped, else the snapshot's
//! checkpoint; `export.json` records `partial` and `partial_step`. A container target
//! runs every program of the job in the run's image (its engine environment recorded
//! at the job's start, as a training job's), with llama.cpp mounted at
//! `/workspace/cache`.
//!
//! A flow: it sends [`ExportEvent`]s and never prints. The run's `run.json` is never
//! written, so a failed export leaves the run as it was (EXP-15).

pub mod job;
pub mod ollama;
mod reupload;

pub use crate::gguf::{in_job_stage, llama, script};

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::config::QUANTIZE_TYPES;
use crate::config::{EnvSnapshot, Settings};
use crate::exec::{
    AnyExecutor, Executor as _, JOB_LOG, JobCommand, JobHandle, JobId, JobRuntime, JobStatus, quote,
};
use crate::gguf::llama_of;
use crate::project::Project;
use crate::runs::record::{RunRecord, State, TargetKind};
use crate::runs::start::error_chain;
use crate::runs::{RunError, target};
use crate::train::axolotl::{AXOLOTL_YAML, MERGED_DIR, OUTPUT_DIR};
use job::ExportJob;
use script::{EXPORT_JSON, Plan, Source};

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
        /// For a stopped run: the snapshot's step (a partial model, EXP-1).
        partial_step: Option<u64>,
    },
    /// `export attach` follows this export's job again.
    Attached {
        /// Export ID.
        export_id: String,
        /// Run ID.
        run_id: String,
        /// Target name.
        target: String,
    },
    /// The run directory on the SSH target had lost the model: this machine's
    /// retrieved copy was uploaded and checked (EXP-11).
    Reuploaded {
        /// Files sent.
        files: usize,
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
    /// The model directory exported, relative to the run directory.
    #[serde(default)]
    pub source: Option<String>,
    /// Whether it is a stopped run's partial model (EXP-1).
    #[serde(default)]
    pub partial: bool,
    /// The snapshot's step of a partial model.
    #[serde(default)]
    pub partial_step: Option<u64>,
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

/// The Ollama name of `request` over `settings`, checked before any work.
///
/// # Errors
///
/// [`ExportError::BadOllamaName`] naming `--ollama` or `export.ollama_name`.
pub fn ollama_name(request: &Request, settings: &Settings) -> Result<Option<String>, ExportError> {
    let (name, by) = match (&request.ollama, &settings.export.ollama_name) {
        (Some(name), _) => (name, "`--ollama`"),
        (None, Some(name)) => (name, "`export.ollama_name`"),
        (None, None) => return Ok(None),
    };
    match ollama::name_problem(name) {
        Some(problem) => Err(ExportError::BadOllamaName {
            name: name.clone(),
            by,
            problem,
        }),
        None => Ok(Some(name.clone())),
    }
}

/// `[export] pre_tokenizer`, checked against the names the pinned llama.cpp knows.
///
/// # Errors
///
/// [`ExportError::UnknownPreTokenizer`].
pub fn check_pre_tokenizer(settings: &Settings) -> Result<(), ExportError> {
    match &settings.export.pre_tokenizer {
        Some(pre) if !llama::PRE_TOKENIZERS.contains(&pre.as_str()) => {
            Err(ExportError::UnknownPreTokenizer(pre.clone()))
        }
        _ => Ok(()),
    }
}

/// The snapshot's step when `record` is a stopped run with a snapshot (a partial
/// model), `None` when it succeeded.
///
/// # Errors
///
/// [`ExportError::NotExportable`] for any other state (EXP-1).
fn exportable(record: &RunRecord) -> Result<Option<&crate::runs::record::Snapshot>, ExportError> {
    match (record.state, &record.snapshot) {
        (State::Succeeded, _) => Ok(None),
        (State::Stopped, Some(snapshot)) => Ok(Some(snapshot)),
        (state, _) => Err(ExportError::NotExportable {
            run_id: record.id.clone(),
            state: state.name(),
        }),
    }
}

/// `export`: the whole export of one run; see the module's documentation.
///
/// # Errors
///
/// Every [`ExportError`]; the run's record is left as it was.
#[allow(
    clippy::too_many_lines,
    reason = "one sequence of export steps, read top to bottom"
)]
pub async fn export(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    request: &Request,
    events: &Events,
    cancel: &CancellationToken,
) -> Result<Exported, ExportError> {
    let quantize = quantize_type(request, settings)?;
    let ollama = ollama_name(request, settings)?;
    check_pre_tokenizer(settings)?;
    let run_id = &request.run_id;
    let record = RunRecord::load(&project.runs_dir(), run_id)?;
    let snapshot = exportable(&record)?.cloned();
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
    let executor = target::connect(&resolved, &project.runs_dir(), env).await?;
    target::check_engine(&executor, &record.target, &resolved.runtime).await?;
    let exec = |source| {
        ExportError::Run(RunError::Exec {
            target: record.target.clone(),
            source: Box::new(source),
        })
    };
    let run_dir = record.dir.trim_end_matches('/').to_owned();
    let checkpoint = snapshot.as_ref().map(|s| s.checkpoint.as_str());
    let source = match model_source(&executor, &record, &yaml, checkpoint).await {
        Ok(source) => source,
        Err(ExportError::NoModel { .. }) if record.target_kind == TargetKind::Ssh => {
            // EXP-11: the run directory there lost the model; this machine has it.
            local_model(&local_dir, &record, checkpoint)?;
            let files =
                reupload::reupload(&executor, &record, &local_dir, checkpoint.is_some()).await?;
            emit(events, ExportEvent::Reuploaded { files });
            model_source(&executor, &record, &yaml, checkpoint).await?
        }
        Err(error) => return Err(error),
    };
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
        partial_step: snapshot.as_ref().map(|s| s.step),
    };
    let mut runtime = resolved.runtime.clone();
    if let JobRuntime::Container { tools_cache, .. } = &mut runtime {
        *tools_cache = Some(crate::gguf::tools_dir(
            settings,
            &record.target,
            executor.workdir(),
        ));
    }
    let mut spec = target::job_spec(&record, &executor, &runtime, &[]);
    // The container's name `overbrainer-<run-id>-<export-id>[-<suffix>]` (the run's
    // `container_suffix`): the run's own may exist.
    spec.run_id = format!("{run_id}-{export_id}");
    let job = JobCommand {
        dir: job_dir.clone(),
        ..spec.job(&plan.script(&spec), Vec::new())
    };
    // The record is written before the job starts (without its process ID) so a
    // follower killed while the job starts leaves an export that `export attach`
    // finds; it is written again with the started job's identity.
    let mut export_job = ExportJob {
        id: export_id.clone(),
        run_id: run_id.clone(),
        target: record.target.clone(),
        job: JobHandle::Starting {
            dir: job_dir.clone(),
            container: job.container.clone(),
        },
        quantize: quantize.clone(),
        ollama,
        num_ctx,
        partial_step: plan.partial_step,
    };
    let local_runs = (record.target_kind == TargetKind::Local)
        .then(|| executor.workdir().trim_end_matches('/').to_owned());
    export_job.save(&project.runs_dir(), local_runs.as_deref())?;
    export_job.job = executor.spawn_job(&job).await.map_err(exec)?;
    export_job.save(&project.runs_dir(), local_runs.as_deref())?;
    emit(
        events,
        ExportEvent::Started {
            export_id: export_id.clone(),
            source: match &source {
                Source::Model(dir) => dir
                    .strip_prefix(&format!("{run_dir}/"))
                    .unwrap_or(dir)
                    .to_owned(),
                Source::Adapter { adapter, .. } => format!(
                    "{} (adapter, merged first)",
                    adapter
                        .strip_prefix(&format!("{run_dir}/"))
                        .unwrap_or(adapter)
                ),
            },
            quantize,
            target: record.target.clone(),
            partial_step: plan.partial_step,
        },
    );
    finish(
        project,
        env,
        &executor,
        &record,
        &export_job,
        events,
        cancel,
    )
    .await
}

/// `export attach EXPORT_ID`: follows an export's job again (after the process that
/// started it ended without cancelling it), then collects it as [`export`] would;
/// Ctrl-C cancels it.
///
/// # Errors
///
/// Every [`ExportError`]; the run's record is left as it was.
pub async fn attach(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    export_id: &str,
    events: &Events,
    cancel: &CancellationToken,
) -> Result<Exported, ExportError> {
    let mut export_job = ExportJob::find(&project.runs_dir(), export_id)?;
    let record = RunRecord::load(&project.runs_dir(), &export_job.run_id)?;
    let resolved = target::resolve(settings, &record.target)?;
    let executor = target::connect(&resolved, &project.runs_dir(), env).await?;
    if let JobHandle::Starting { dir, container } = &export_job.job {
        // Its follower ended while the job started: the wrapper's own record names it.
        if let Some(pid) = started_pid(&executor, dir).await {
            export_job.job = JobHandle::Process(JobId {
                dir: dir.clone(),
                pid,
                container: container.clone(),
            });
        }
    }
    emit(
        events,
        ExportEvent::Attached {
            export_id: export_job.id.clone(),
            run_id: record.id.clone(),
            target: record.target.clone(),
        },
    );
    finish(
        project,
        env,
        &executor,
        &record,
        &export_job,
        events,
        cancel,
    )
    .await
}

/// The process ID the job's wrapper recorded in its directory `dir`, if it did.
async fn started_pid(executor: &AnyExecutor, dir: &str) -> Option<crate::exec::Pid> {
    let bytes = executor
        .read_from(&format!("{dir}/{}", crate::exec::PID_FILE), 0, 64)
        .await
        .ok()?;
    let pid: u32 = String::from_utf8_lossy(&bytes).trim().parse().ok()?;
    crate::exec::Pid::new(pid).ok()
}

/// Follows the job of `export_job` to its end (cancelled on `cancel`), then retrieves
/// and checks its results and makes the Ollama model.
async fn finish(
    project: &Project,
    env: &EnvSnapshot,
    executor: &AnyExecutor,
    record: &RunRecord,
    export_job: &ExportJob,
    events: &Events,
    cancel: &CancellationToken,
) -> Result<Exported, ExportError> {
    let run_id = &record.id;
    let export_id = export_job.id.clone();
    let exec = |source| {
        ExportError::Run(RunError::Exec {
            target: record.target.clone(),
            source: Box::new(source),
        })
    };
    let local_dir = project.run_dir(run_id);
    let status = follow(executor, &export_job.job, events, cancel)
        .await
        .map_err(|error| ExportError::Detached {
            run_id: run_id.clone(),
            export_id: export_id.clone(),
            reason: error_chain(&error),
        })?;
    let relative = format!("{EXPORTS_DIR}/{export_id}");
    if status == JobStatus::Running {
        // Ctrl-C: the job is cancelled, never left detached (EXP-15).
        executor.cancel_job(&export_job.job).await.map_err(exec)?;
        let _ =
            crate::runs::retrieve::retrieve_export(executor, record, &local_dir, &relative, false)
                .await;
        return Err(ExportError::Cancelled {
            run_id: run_id.clone(),
            export_id,
        });
    }
    if status != JobStatus::Exited(0) {
        return Err(failure(executor, record, &local_dir, export_id, status).await);
    }
    let (gguf, exported) = collect(executor, record, &local_dir, &relative).await?;
    let ollama = match &export_job.ollama {
        Some(name) => {
            make_ollama(
                project,
                env,
                events,
                name.clone(),
                &gguf,
                export_job.num_ctx,
            )
            .await?
        }
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

/// The files whose presence decides the model, relative to the run directory, in the
/// order they are tried, each with what it means: for a succeeded run
/// `output/merged/`, an adapter in `output/`, a full fine-tune's `output/`; for a
/// stopped one (EXP-1) what Axolotl saved in `output/` when it stopped, else the
/// snapshot's `checkpoint`.
fn candidates(checkpoint: Option<&str>) -> Vec<(String, bool)> {
    let mut dirs = Vec::new();
    if checkpoint.is_none() {
        dirs.push((format!("{OUTPUT_DIR}/{MERGED_DIR}"), false));
    }
    dirs.push((OUTPUT_DIR.to_owned(), true));
    if let Some(checkpoint) = checkpoint {
        dirs.push((format!("{OUTPUT_DIR}/{checkpoint}"), true));
    }
    let mut files = Vec::new();
    for (dir, adapter) in dirs {
        if adapter {
            files.push((format!("{dir}/adapter_config.json"), true));
        }
        files.push((format!("{dir}/config.json"), false));
    }
    files
}

/// The model from the candidate files present (`found`, relative to the run
/// directory): the first in [`candidates`]' order.
fn pick(
    run_dir: &str,
    checkpoint: Option<&str>,
    found: &[&str],
    yaml: &str,
    run_id: &str,
) -> Result<Option<Source>, ExportError> {
    for (file, adapter) in candidates(checkpoint) {
        if !found.contains(&file.as_str()) {
            continue;
        }
        let dir = file.rsplit_once('/').map_or("", |(dir, _)| dir);
        let dir = format!("{run_dir}/{dir}");
        if !adapter {
            return Ok(Some(Source::Model(dir)));
        }
        let Some(serde_json::Value::String(base_model)) = yaml_value(yaml, "base_model") else {
            return Err(ExportError::NoModel {
                run_id: run_id.to_owned(),
                reason: format!("`{AXOLOTL_YAML}` names no `base_model` to merge the adapter into"),
            });
        };
        return Ok(Some(Source::Adapter {
            base_model,
            adapter: dir,
        }));
    }
    Ok(None)
}

/// The model to export, as the target holds it (EXP-4 step 1, EXP-1); see
/// [`candidates`].
async fn model_source(
    executor: &AnyExecutor,
    record: &RunRecord,
    yaml: &str,
    checkpoint: Option<&str>,
) -> Result<Source, ExportError> {
    let run_dir = record.dir.trim_end_matches('/');
    let mut script = format!("cd {} 2>/dev/null || exit 0\n", quote(run_dir));
    script.push_str("[ -f axolotl.yaml ] || exit 0\n");
    for (file, _) in candidates(checkpoint) {
        let file = quote(&file);
        let _ = writeln!(script, "[ -f {file} ] && printf '%s\\n' {file}");
    }
    script.push_str("exit 0\n");
    let answer = executor
        .probe(&script)
        .await
        .map_err(|source| RunError::Exec {
            target: record.target.clone(),
            source: Box::new(source),
        })?;
    let answer = String::from_utf8_lossy(&answer);
    let found: Vec<&str> = answer.lines().collect();
    pick(run_dir, checkpoint, &found, yaml, &record.id)?.ok_or_else(|| ExportError::NoModel {
        run_id: record.id.clone(),
        reason: match checkpoint {
            None => format!(
                "neither `{OUTPUT_DIR}/{MERGED_DIR}/`, an adapter nor a full model in `{OUTPUT_DIR}/` on target `{}`",
                record.target
            ),
            Some(checkpoint) => format!(
                "neither an adapter nor a model in `{OUTPUT_DIR}/` or `{OUTPUT_DIR}/{checkpoint}/` on target `{}`",
                record.target
            ),
        },
    })
}

/// Checks that this machine's copy of the run holds a model to send back (EXP-11).
fn local_model(
    local_dir: &std::path::Path,
    record: &RunRecord,
    checkpoint: Option<&str>,
) -> Result<(), ExportError> {
    let found: Vec<String> = candidates(checkpoint)
        .into_iter()
        .map(|(file, _)| file)
        .filter(|file| local_dir.join(file).is_file())
        .collect();
    if found.is_empty() || !local_dir.join(AXOLOTL_YAML).is_file() {
        return Err(ExportError::NoModel {
            run_id: record.id.clone(),
            reason: format!(
                "the run directory on target `{}` has lost its model and `{}` holds none to send back",
                record.target,
                local_dir.display()
            ),
        });
    }
    Ok(())
}

/// Follows the job until it ends, sending its log lines; [`JobStatus::Running`] when
/// `cancel` fired first.
async fn follow(
    executor: &AnyExecutor,
    job: &JobHandle,
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

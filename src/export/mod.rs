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
//! - `reupload`: EXP-11, the retrieved model sent back to an SSH target that lost it;
//! - `source`: whether a run can be exported, and from which model of its directory;
//! - [`ExportError`] (`error.rs`): what can go wrong, naming the run, key or file.
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

mod error;
pub mod job;
pub mod ollama;
mod reupload;
mod source;

pub use crate::gguf::{in_job_stage, llama, script};

use std::path::PathBuf;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::config::QUANTIZE_TYPES;
use crate::config::{EnvSnapshot, Settings};
use crate::exec::{
    AnyExecutor, Executor as _, JOB_LOG, JobCommand, JobHandle, JobId, JobRuntime, JobStatus,
};
use crate::gguf::llama_of;
use crate::project::Project;
use crate::runs::record::{RunRecord, TargetKind};
use crate::runs::start::error_chain;
use crate::runs::{RunError, elsewhere, target};
use crate::train::axolotl::AXOLOTL_YAML;
pub use error::ExportError;
use job::ExportJob;
use script::{EXPORT_JSON, Plan, Source};
pub(crate) use source::yaml_value;
use source::{exportable, local_model, model_source};

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
    /// `--target`: where the export runs, over the run's own target (issue 34).
    pub target: Option<String>,
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
    let on = elsewhere::side_target(settings, &record, request.target.as_deref(), "export")?;
    let resolved = target::resolve(settings, &on)?;
    let executor = target::connect(&resolved, &project.runs_dir(), env).await?;
    let record = elsewhere::seen_from(&record, &resolved, executor.workdir());
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
        Err(ExportError::NoModel { .. }) if record.target_kind != TargetKind::Local => {
            // EXP-11: the run directory there lost the model (or never had it: a run
            // trained elsewhere, issue 34); this machine has it.
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
    let resolved = target::resolve(settings, &export_job.target)?;
    let executor = target::connect(&resolved, &project.runs_dir(), env).await?;
    let record = elsewhere::seen_from(&record, &resolved, executor.workdir());
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
mod tests;

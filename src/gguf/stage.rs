//! The export stage a training job runs when `[export] after_training` is set (EXP-12),
//! and where llama.cpp comes from on a target: what `runs::start` and the `export` flow
//! share, below both.

use super::llama;
use super::script::{self, EXPORT_JSON, GGUF_DIR, Llama, Plan, Source};
use crate::config::{Settings, Target};
use crate::train::axolotl::{MERGED_DIR, OUTPUT_DIR};

/// What the in-job export stage needs of a run's record.
#[derive(Debug, Clone, Copy)]
pub struct RunFacts<'a> {
    /// Run ID.
    pub id: &'a str,
    /// The run directory on its target.
    pub dir: &'a str,
    /// Target name.
    pub target: &'a str,
    /// Whether the job merges the adapter (`output/merged/`).
    pub merge: bool,
}

/// The export stage of the training job of the run whose record says `run` (EXP-12),
/// on a target whose work directory is `workdir`, when
/// `[export] after_training` is set: the model is the merge stage's `output/merged/`, the
/// adapter over `base_model`, or a full fine-tune's `output/`.
#[must_use]
pub fn in_job_stage(
    settings: &Settings,
    workdir: &str,
    run: &RunFacts<'_>,
    spec: &crate::exec::JobSpec,
) -> Option<String> {
    let training = settings.training.as_ref()?;
    if !settings.export.after_training {
        return None;
    }
    let run_dir = run.dir.trim_end_matches('/').to_owned();
    let source = if run.merge {
        Source::Model(format!("{run_dir}/{OUTPUT_DIR}/{MERGED_DIR}"))
    } else if training.adapter == crate::config::AdapterKind::Full {
        Source::Model(format!("{run_dir}/{OUTPUT_DIR}"))
    } else {
        Source::Adapter {
            base_model: crate::train::axolotl::resolve_in_run_dir(&run_dir, &training.base_model),
            adapter: format!("{run_dir}/{OUTPUT_DIR}"),
        }
    };
    let plan = Plan {
        run_id: run.id.to_owned(),
        run_dir: run_dir.clone(),
        job_dir: run_dir.clone(),
        quantize: settings.export.quantize.clone(),
        llama: llama_of(settings, run.target, workdir),
        source,
        pre_tokenizer: settings.export.pre_tokenizer.clone(),
        num_ctx: u64::from(training.sequence_len),
        export_json: format!("{run_dir}/{OUTPUT_DIR}/{GGUF_DIR}/{EXPORT_JSON}"),
        partial_step: None,
    };
    Some(script::in_job(&plan, spec))
}

/// What a container job of target `name` (work directory `workdir`) mounts at
/// [`crate::exec::CONTAINER_TOOLS_CACHE`] for an export: the llama.cpp cache, or the
/// target's prebuilt tree.
#[must_use]
pub fn tools_dir(settings: &Settings, name: &str, workdir: &str) -> String {
    match llama_of(settings, name, workdir) {
        Llama::Build { cache } => cache,
        Llama::Prebuilt { dir, .. } => dir.trim_end_matches('/').to_owned(),
    }
}

/// Where llama.cpp comes from on target `name`: its `llama_cpp_dir`, or built into its
/// cache.
pub(crate) fn llama_of(settings: &Settings, name: &str, workdir: &str) -> Llama {
    match target_llama_dir(settings, name) {
        Some(dir) => Llama::Prebuilt {
            dir,
            key: format!("targets.{name}.llama_cpp_dir"),
        },
        None => Llama::Build {
            cache: llama::cache_dir(workdir),
        },
    }
}

/// `[targets.NAME] llama_cpp_dir`.
fn target_llama_dir(settings: &Settings, name: &str) -> Option<String> {
    match settings.targets.get(name)? {
        Target::Local(local) => local.llama_cpp_dir.clone(),
        Target::Ssh(ssh) => ssh.llama_cpp_dir.clone(),
        Target::Slurm(slurm) => slurm.llama_cpp_dir.clone(),
        Target::Runpod(_) => None,
    }
}

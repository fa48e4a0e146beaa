//! `[training]`: the fine-tuning settings with their defaults, and the rules on their
//! values (spec/config.md, table 2.6). What Axolotl accepts of them (the refused keys of
//! `axolotl_extra`, settings it refuses together, AXO-4..AXO-7) is Axolotl's knowledge:
//! `train::rules`, run at loading as a rule from above (`config::Rules`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::rules::Check;
use super::targets::Target;

/// Kind of fine-tuning.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AdapterKind {
    /// LoRA adapter on the full-precision base.
    Lora,
    /// LoRA adapter on a 4-bit base.
    Qlora,
    /// Full fine-tuning.
    Full,
}

/// `[training]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Training {
    /// Name of a declared target.
    pub target: String,
    /// Hugging Face repo ID or a path on the target; with `upload_base_model`, a local
    /// directory (relative to the project) to upload.
    pub base_model: String,
    /// `base_model` is a local directory that each run uploads to its target
    /// (`<run dir>/base_model/`, through the target's blob cache, issue 21); a local
    /// target uses it as is.
    #[serde(default)]
    pub upload_base_model: bool,
    /// Kind of fine-tuning.
    pub adapter: AdapterKind,
    /// Epochs, at least 1.
    #[serde(default = "default_epochs")]
    pub epochs: u32,
    /// Peak learning rate, > 0.
    #[serde(default = "default_learning_rate")]
    pub learning_rate: f64,
    /// LoRA rank.
    #[serde(default = "default_lora_r")]
    pub lora_r: u32,
    /// LoRA alpha.
    #[serde(default = "default_lora_alpha")]
    pub lora_alpha: u32,
    /// LoRA dropout, 0 <= v < 1.
    #[serde(default = "default_lora_dropout")]
    pub lora_dropout: f64,
    /// Sequence length in tokens.
    #[serde(default = "default_sequence_len")]
    pub sequence_len: u32,
    /// Micro-batch size per device.
    #[serde(default = "default_micro_batch_size")]
    pub micro_batch_size: u32,
    /// Gradient accumulation steps.
    #[serde(default = "default_gradient_accumulation_steps")]
    pub gradient_accumulation_steps: u32,
    /// Axolotl optimizer name.
    #[serde(default = "default_optimizer")]
    pub optimizer: String,
    /// Axolotl learning-rate scheduler name.
    #[serde(default = "default_lr_scheduler")]
    pub lr_scheduler: String,
    /// Pack several samples into one sequence.
    #[serde(default = "default_true")]
    pub sample_packing: bool,
    /// Evaluations per epoch.
    #[serde(default = "default_evals_per_epoch")]
    pub evals_per_epoch: u32,
    /// Checkpoint saves per epoch.
    #[serde(default = "default_saves_per_epoch")]
    pub saves_per_epoch: u32,
    /// Merge the adapter into the base after training (lora/qlora only).
    #[serde(default)]
    pub merge: bool,
    /// Deprecated: use `[hub] repo`.
    #[serde(default)]
    pub hub_model_id: Option<String>,
    /// Minutes without a new training step or eval progress line after which a job
    /// whose process group lives is stalled; unset: the larger of 10 minutes and 20
    /// times the median step time seen so far (issue 21).
    #[serde(default)]
    pub stall_minutes: Option<f64>,
    /// The stall bound before the first step (model loading, compilation).
    #[serde(default = "default_stall_first_step_minutes")]
    pub stall_first_step_minutes: f64,
    /// What a follower does once the job stalled.
    #[serde(default)]
    pub on_stall: OnStall,
    /// Extra Axolotl keys, merged last into the generated YAML.
    #[serde(default)]
    pub axolotl_extra: toml::Table,
}

/// `training.on_stall`: what a follower does once the job stalled (issue 21).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum OnStall {
    /// Warn, naming the last step, its time and the system sample.
    #[default]
    Warn,
    /// Warn, request a snapshot, and stop once it is saved.
    Snapshot,
    /// Warn and cancel the job.
    Cancel,
}

impl OnStall {
    /// The value's name in the configuration.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Warn => "warn",
            Self::Snapshot => "snapshot",
            Self::Cancel => "cancel",
        }
    }
}

fn default_epochs() -> u32 {
    3
}
fn default_learning_rate() -> f64 {
    2e-4
}
fn default_lora_r() -> u32 {
    16
}
fn default_lora_alpha() -> u32 {
    32
}
fn default_lora_dropout() -> f64 {
    0.05
}
fn default_sequence_len() -> u32 {
    4096
}
fn default_micro_batch_size() -> u32 {
    2
}
fn default_gradient_accumulation_steps() -> u32 {
    4
}
fn default_optimizer() -> String {
    "adamw_torch_fused".to_owned()
}
fn default_lr_scheduler() -> String {
    "cosine".to_owned()
}
fn default_true() -> bool {
    true
}
fn default_evals_per_epoch() -> u32 {
    4
}
fn default_saves_per_epoch() -> u32 {
    1
}
fn default_stall_first_step_minutes() -> f64 {
    30.0
}

/// The longest stall bound accepted, in minutes: a week.
const MAX_STALL_MINUTES: f64 = 7.0 * 24.0 * 60.0;

/// `key` must be a number of minutes above 0 and at most a week.
fn stall_bound(check: &mut Check<'_>, key: &str, minutes: f64) {
    if !(minutes > 0.0 && minutes <= MAX_STALL_MINUTES) {
        check.fail(
            key,
            format!(
                "out of range: must be greater than 0 and at most {MAX_STALL_MINUTES} (a week)"
            ),
        );
    }
}

/// The rules of `[training]`.
pub(super) fn check(
    check: &mut Check<'_>,
    training: &Training,
    targets: &BTreeMap<String, Target>,
) {
    if !targets.contains_key(&training.target)
        && !check.declared().targets.contains(&training.target)
    {
        check.fail(
            "training.target",
            format!(
                "names target `{}`, which is not declared under `[targets]`",
                training.target
            ),
        );
    }
    check.non_empty("training.base_model", &training.base_model);
    if training.upload_base_model
        && matches!(targets.get(&training.target), Some(Target::Runpod(_)))
    {
        check.fail(
            "training.upload_base_model",
            format!(
                "not supported on the runpod target `{}`: a pod is made for the run, so set `base_model` to a Hugging Face repo ID or a path on the pod's network volume",
                training.target
            ),
        );
    }
    check.at_least("training.epochs", training.epochs.into(), 1);
    if training.learning_rate.is_nan() || training.learning_rate <= 0.0 {
        check.fail(
            "training.learning_rate",
            "out of range: must be greater than 0",
        );
    }
    check.at_least("training.lora_r", training.lora_r.into(), 1);
    check.at_least("training.lora_alpha", training.lora_alpha.into(), 1);
    check.unit("training.lora_dropout", training.lora_dropout, true);
    check.at_least("training.sequence_len", training.sequence_len.into(), 1);
    check.at_least(
        "training.micro_batch_size",
        training.micro_batch_size.into(),
        1,
    );
    check.at_least(
        "training.gradient_accumulation_steps",
        training.gradient_accumulation_steps.into(),
        1,
    );
    check.non_empty("training.optimizer", &training.optimizer);
    check.non_empty("training.lr_scheduler", &training.lr_scheduler);
    check.at_least(
        "training.evals_per_epoch",
        training.evals_per_epoch.into(),
        1,
    );
    check.at_least(
        "training.saves_per_epoch",
        training.saves_per_epoch.into(),
        1,
    );
    if let Some(minutes) = training.stall_minutes {
        stall_bound(check, "training.stall_minutes", minutes);
    }
    stall_bound(
        check,
        "training.stall_first_step_minutes",
        training.stall_first_step_minutes,
    );
    if training.merge && training.adapter == AdapterKind::Full {
        check.fail(
            "training.merge",
            "only with `adapter = \"lora\"` or `\"qlora\"`",
        );
    }
}

/// The deprecation note of `training.hub_model_id` (CHK-5).
pub(super) fn warnings(training: &Training, warnings: &mut Vec<String>) {
    if training.hub_model_id.is_some() {
        warnings.push("`training.hub_model_id` is deprecated; set `[hub] repo` instead".to_owned());
    }
}

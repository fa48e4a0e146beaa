//! `[training]`: the fine-tuning settings with their defaults, and the rules on them
//! (spec/config.md, table 2.6; AXO-4..AXO-7), including the keys of `axolotl_extra`
//! that overbrainer refuses, written once here and used by `train::axolotl` as well.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::error::Problem;
use super::provenance::Provenance;
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
    /// Hugging Face repo ID or a path on the target.
    pub base_model: String,
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
    /// Extra Axolotl keys, merged last into the generated YAML.
    #[serde(default)]
    pub axolotl_extra: toml::Table,
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

/// Keys of the generated Axolotl YAML that come from a typed `[training]` setting (AXO-4),
/// with that setting.
pub const AXOLOTL_TYPED_KEYS: [(&str, &str); 17] = [
    ("base_model", "training.base_model"),
    ("adapter", "training.adapter"),
    ("load_in_4bit", "training.adapter = \"qlora\""),
    ("lora_r", "training.lora_r"),
    ("lora_alpha", "training.lora_alpha"),
    ("lora_dropout", "training.lora_dropout"),
    ("num_epochs", "training.epochs"),
    ("learning_rate", "training.learning_rate"),
    ("sequence_len", "training.sequence_len"),
    ("micro_batch_size", "training.micro_batch_size"),
    (
        "gradient_accumulation_steps",
        "training.gradient_accumulation_steps",
    ),
    ("optimizer", "training.optimizer"),
    ("lr_scheduler", "training.lr_scheduler"),
    ("sample_packing", "training.sample_packing"),
    ("evals_per_epoch", "training.evals_per_epoch"),
    ("saves_per_epoch", "training.saves_per_epoch"),
    ("hub_model_id", "hub.repo"),
];

/// Keys of the generated Axolotl YAML that overbrainer manages (AXO-5).
pub const AXOLOTL_MANAGED_KEYS: [&str; 7] = [
    "datasets",
    "test_datasets",
    "val_set_size",
    "output_dir",
    "dataset_prepared_path",
    "plugins",
    "resume_from_checkpoint",
];

/// Why overbrainer refuses a key of `axolotl_extra` (AXO-4..AXO-6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtraRefusal {
    /// The key comes from a typed setting, named here (AXO-4).
    Typed(&'static str),
    /// The key is managed by overbrainer (AXO-5).
    Managed,
    /// `save_only_model = true`: a checkpoint without optimizer state (AXO-6).
    SaveOnlyModel,
}

impl fmt::Display for ExtraRefusal {
    /// The reason, to follow the key's name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Typed(setting) => {
                write!(f, "comes from a typed setting; use `{setting}` instead")
            }
            Self::Managed => f.write_str("is managed by overbrainer and cannot be set"),
            Self::SaveOnlyModel => f.write_str(
                "`true` is refused: a checkpoint without optimizer state cannot be resumed",
            ),
        }
    }
}

/// Every key of `extra` that overbrainer refuses, in key order, with the reason.
pub fn refused_extra(extra: &toml::Table) -> impl Iterator<Item = (&str, ExtraRefusal)> {
    extra.iter().filter_map(|(key, value)| {
        let refusal = if let Some((_, setting)) = AXOLOTL_TYPED_KEYS.iter().find(|(k, _)| k == key)
        {
            ExtraRefusal::Typed(setting)
        } else if AXOLOTL_MANAGED_KEYS.contains(&key.as_str()) {
            ExtraRefusal::Managed
        } else if key == "save_only_model" && value.as_bool() == Some(true) {
            ExtraRefusal::SaveOnlyModel
        } else {
            return None;
        };
        Some((key.as_str(), refusal))
    })
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
    if training.merge && training.adapter == AdapterKind::Full {
        check.fail(
            "training.merge",
            "only with `adapter = \"lora\"` or `\"qlora\"`",
        );
    }
    for (key, refusal) in refused_extra(&training.axolotl_extra) {
        check.fail(format!("training.axolotl_extra.{key}"), refusal.to_string());
    }
}

/// Whether Axolotl reads the `axolotl_extra` value `value` as set (Python truthiness
/// of the YAML value: `false`, `0`, `""` and empty collections are not).
#[must_use]
pub fn axolotl_truthy(value: &toml::Value) -> bool {
    match value {
        toml::Value::Boolean(b) => *b,
        toml::Value::Integer(i) => *i != 0,
        toml::Value::Float(f) => *f != 0.0,
        toml::Value::String(s) => !s.is_empty(),
        toml::Value::Array(a) => !a.is_empty(),
        toml::Value::Table(t) => !t.is_empty(),
        toml::Value::Datetime(_) => true,
    }
}

/// Adds a problem for every pair of settings that Axolotl 0.19 refuses together
/// (`check_evals`, `check_saves` and `check_warmup` in its
/// `utils/schemas/validation.py`), naming both keys. A typed setting counts only when
/// it is set (in `overbrainer.toml` or a variable): its default gives way to the
/// `axolotl_extra` key instead (AXO-7). Whether there is eval data is checked where the
/// data is known (`train::axolotl::eval_data_conflict`).
pub(super) fn combinations(
    training: &Training,
    provenance: &Provenance,
    problems: &mut Vec<Problem>,
) {
    let extra = &training.axolotl_extra;
    let set = |key: &str| extra.get(key).filter(|v| axolotl_truthy(v));
    let extra_key = |key: &str| format!("training.axolotl_extra.{key}");
    let not_steps = |key: &str| set(key).filter(|v| v.as_str() != Some("steps"));
    for (steps, per_epoch, strategy) in [
        ("eval_steps", "training.evals_per_epoch", "eval_strategy"),
        ("save_steps", "training.saves_per_epoch", "save_strategy"),
    ] {
        if set(steps).is_some() && provenance.is_set(per_epoch) {
            problems.push(
                Problem::new(
                    extra_key(steps),
                    format!(
                        "cannot be used with `{per_epoch}`: Axolotl refuses both together; remove one of them"
                    ),
                )
                .with_other(per_epoch),
            );
        }
        if not_steps(strategy).is_some() && set(steps).is_some() {
            problems.push(
                Problem::new(
                    extra_key(strategy),
                    format!(
                        "other than `steps` cannot be used with `{}`: Axolotl takes `{steps}` only with `{strategy} = \"steps\"`; set that or remove one of them",
                        extra_key(steps)
                    ),
                )
                .with_other(extra_key(steps)),
            );
        }
    }
    if not_steps("eval_strategy").is_some() && provenance.is_set("training.evals_per_epoch") {
        problems.push(
            Problem::new(
                extra_key("eval_strategy"),
                "other than `steps` cannot be used with `training.evals_per_epoch`: Axolotl takes `evals_per_epoch` only with `eval_strategy = \"steps\"` or none; remove one of them",
            )
            .with_other("training.evals_per_epoch"),
        );
    }
    if set("warmup_steps").is_some() && set("warmup_ratio").is_some() {
        problems.push(
            Problem::new(
                extra_key("warmup_steps"),
                format!(
                    "cannot be used with `{}`: Axolotl refuses both together; remove one of them",
                    extra_key("warmup_ratio")
                ),
            )
            .with_other(extra_key("warmup_ratio")),
        );
    }
}

/// The deprecation note of `training.hub_model_id` (CHK-5).
pub(super) fn warnings(training: &Training, warnings: &mut Vec<String>) {
    if training.hub_model_id.is_some() {
        warnings.push("`training.hub_model_id` is deprecated; set `[hub] repo` instead".to_owned());
    }
}

//! What Axolotl accepts of `[training]`, as rules of the configuration
//! (spec/training.md, AXO-4..AXO-7): the keys of `axolotl_extra` that overbrainer refuses
//! because a typed setting or overbrainer itself writes them ([`AXOLOTL_TYPED_KEYS`],
//! [`AXOLOTL_MANAGED_KEYS`], [`refused_extra`]), and the pairs of settings that Axolotl
//! refuses together.
//!
//! `config` knows the shape of its keys, not Axolotl: [`check`] is the rule that loading
//! takes from above (`config::Rules`, passed by `check::load`), so every command that
//! loads the configuration reports these problems with the rest, each naming its key and
//! where it was set. [`super::axolotl::check_extra`] applies the same table to every other
//! caller of the YAML generator.

use crate::config::{Problem, Provenance, Settings, Training};

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

impl std::fmt::Display for ExtraRefusal {
    /// The reason, to follow the key's name.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
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

/// The rule that loading runs over `settings` (`config::Rules`): a problem for every
/// refused key of `axolotl_extra` (AXO-4..AXO-6), then for every pair of settings that
/// Axolotl refuses together.
pub fn check(settings: &Settings, provenance: &Provenance, problems: &mut Vec<Problem>) {
    let Some(training) = &settings.training else {
        return;
    };
    for (key, refusal) in refused_extra(&training.axolotl_extra) {
        problems.push(Problem::new(
            format!("training.axolotl_extra.{key}"),
            refusal.to_string(),
        ));
    }
    combinations(training, provenance, problems);
}

/// Adds a problem for every pair of settings that Axolotl 0.19 refuses together
/// (`check_evals`, `check_saves` and `check_warmup` in its
/// `utils/schemas/validation.py`), naming both keys. A typed setting counts only when
/// it is set (in `overbrainer.toml` or a variable): its default gives way to the
/// `axolotl_extra` key instead (AXO-7). Whether there is eval data is checked where the
/// data is known ([`super::axolotl::eval_data_conflict`]).
fn combinations(training: &Training, provenance: &Provenance, problems: &mut Vec<Problem>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_extra_names_each_key_with_its_reason_in_key_order() {
        let extra: toml::Table = toml::from_str(
            "save_only_model = true\nlearning_rate = 0.1\noutput_dir = \"x\"\nwarmup_ratio = 0.1",
        )
        .unwrap();
        let refused: Vec<(&str, ExtraRefusal)> = refused_extra(&extra).collect();
        assert_eq!(
            refused,
            [
                (
                    "learning_rate",
                    ExtraRefusal::Typed("training.learning_rate")
                ),
                ("output_dir", ExtraRefusal::Managed),
                ("save_only_model", ExtraRefusal::SaveOnlyModel),
            ]
        );
        let allowed: toml::Table = toml::from_str("save_only_model = false").unwrap();
        assert_eq!(refused_extra(&allowed).count(), 0);
    }

    #[test]
    fn truthiness_is_pythons() {
        for (text, truthy) in [
            ("v = false", false),
            ("v = 0", false),
            ("v = 0.0", false),
            ("v = \"\"", false),
            ("v = []", false),
            ("v = {}", false),
            ("v = 1", true),
            ("v = \"no\"", true),
            ("v = [0]", true),
        ] {
            let table: toml::Table = toml::from_str(text).unwrap();
            assert_eq!(axolotl_truthy(&table["v"]), truthy, "{text}");
        }
    }
}

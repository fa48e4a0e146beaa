//! What Axolotl accepts of `[training]`, as rules of the configuration
//! (spec/training.md, AXO-4..AXO-7): the keys of `axolotl_extra` that overbrainer refuses
//! because a typed setting or overbrainer itself writes them ([`AXOLOTL_TYPED_KEYS`],
//! [`AXOLOTL_MANAGED_KEYS`], [`refused_extra`]), the optimizer and scheduler names it
//! knows ([`AXOLOTL_OPTIMIZERS`], [`AXOLOTL_LR_SCHEDULERS`]), and the pairs of settings
//! that Axolotl refuses together.
//!
//! `config` knows the shape of its keys, not Axolotl: [`check`] is the rule that loading
//! takes from above (`config::Rules`, passed by `check::load`), so every command that
//! loads the configuration reports these problems with the rest, each naming its key and
//! where it was set. [`super::axolotl::check_extra`] applies the same table to every other
//! caller of the YAML generator.

use crate::config::{AdapterKind, Problem, Provenance, Settings, Training};

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

/// The optimizer names Axolotl 0.19 accepts for `optimizer`, sorted: the values of
/// `transformers`' `OptimizerNames` (`transformers/training_args.py`, which
/// `TrainingArguments` checks `optim` against) and of Axolotl's own
/// `CustomSupportedOptimizers` (`axolotl/utils/schemas/enums.py`), as the venv of
/// `scripts/training-env.sh` holds them (transformers 5.16.1). A test reads them back
/// from that venv's source.
pub const AXOLOTL_OPTIMIZERS: [&str; 58] = [
    "adafactor",
    "adagrad",
    "adalomo",
    "adamc",
    "adamw_8bit",
    "adamw_anyprecision",
    "adamw_bnb_8bit",
    "adamw_torch",
    "adamw_torch_4bit",
    "adamw_torch_8bit",
    "adamw_torch_fused",
    "adamw_torch_npu_fused",
    "adamw_torch_xla",
    "ademamix",
    "ademamix_8bit",
    "adopt_adamw",
    "ao_adamw_4bit",
    "ao_adamw_8bit",
    "ao_adamw_fp8",
    "apollo_adamw",
    "apollo_adamw_layerwise",
    "came_pytorch",
    "dion",
    "flash_adam",
    "flash_adamw",
    "flash_lion",
    "flash_sgd",
    "flash_sgdw",
    "galore_adafactor",
    "galore_adafactor_layerwise",
    "galore_adamw",
    "galore_adamw_8bit",
    "galore_adamw_8bit_layerwise",
    "galore_adamw_layerwise",
    "grokadamw",
    "lion_32bit",
    "lion_8bit",
    "lomo",
    "muon",
    "optimi_adamw",
    "paged_adamw_32bit",
    "paged_adamw_8bit",
    "paged_ademamix_32bit",
    "paged_ademamix_8bit",
    "paged_lion_32bit",
    "paged_lion_8bit",
    "polora",
    "q_galore_adamw8bit",
    "rmsprop",
    "rmsprop_bnb",
    "rmsprop_bnb_32bit",
    "rmsprop_bnb_8bit",
    "schedule_free_adamw",
    "schedule_free_radam",
    "schedule_free_sgd",
    "sgd",
    "sinkgd",
    "stable_adamw",
];

/// The scheduler names Axolotl 0.19 accepts for `lr_scheduler`, sorted: the values of
/// `transformers`' `SchedulerType` (`transformers/trainer_utils.py`, which
/// `TrainingArguments` checks `lr_scheduler_type` against) and the two Axolotl runs
/// itself (`one_cycle`, `rex`: `axolotl/core/builders/base.py`). A test reads them
/// back from the venv's source.
pub const AXOLOTL_LR_SCHEDULERS: [&str; 14] = [
    "constant",
    "constant_with_warmup",
    "cosine",
    "cosine_warmup_with_min_lr",
    "cosine_with_min_lr",
    "cosine_with_restarts",
    "greedy",
    "inverse_sqrt",
    "linear",
    "one_cycle",
    "polynomial",
    "reduce_lr_on_plateau",
    "rex",
    "warmup_stable_decay",
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
    names(training, problems);
    combinations(training, provenance, problems);
    adapter_combinations(training, provenance, problems);
}

/// Adds a problem for a typed `optimizer` or `lr_scheduler` that Axolotl 0.19 does not
/// know ([`AXOLOTL_OPTIMIZERS`], [`AXOLOTL_LR_SCHEDULERS`]); an empty one is the
/// section's own problem. The value is not repeated: the key and the names accepted
/// are.
fn names(training: &Training, problems: &mut Vec<Problem>) {
    for (key, value, known, what) in [
        (
            "training.optimizer",
            &training.optimizer,
            &AXOLOTL_OPTIMIZERS[..],
            "an optimizer",
        ),
        (
            "training.lr_scheduler",
            &training.lr_scheduler,
            &AXOLOTL_LR_SCHEDULERS[..],
            "a scheduler",
        ),
    ] {
        if !value.trim().is_empty() && !known.contains(&value.as_str()) {
            problems.push(Problem::new(
                key,
                format!(
                    "not {what} Axolotl 0.19 knows; use one of: {}",
                    known.join(", ")
                ),
            ));
        }
    }
}

/// Adds a problem for every setting that Axolotl 0.19 refuses with the kind of
/// fine-tuning, or that has no effect with it, naming both keys: `load_in_8bit` with
/// `qlora` (`validate_qlora` in `utils/schemas/peft.py`: "Can't load qlora in 8bit")
/// or with `full` (`validate_adapter`: no quantized base without an adapter), the LoRA
/// settings set with `full`, and `chat_template = "jinja"` without
/// `chat_template_jinja` (`check_chat_template_config` in `utils/schemas/validation.py`).
fn adapter_combinations(training: &Training, provenance: &Provenance, problems: &mut Vec<Problem>) {
    let extra = &training.axolotl_extra;
    let set = |key: &str| extra.get(key).is_some_and(axolotl_truthy);
    let extra_key = |key: &str| format!("training.axolotl_extra.{key}");
    if set("load_in_8bit") {
        let reason = match training.adapter {
            AdapterKind::Qlora => Some(
                "cannot be used with `training.adapter = \"qlora\"`: Axolotl loads a qlora base in 4 bits only; remove it, or use `adapter = \"lora\"` for an 8-bit base",
            ),
            AdapterKind::Full => Some(
                "cannot be used with `training.adapter = \"full\"`: Axolotl loads a quantized base only under an adapter; remove it, or use `adapter = \"lora\"`",
            ),
            AdapterKind::Lora => None,
        };
        if let Some(reason) = reason {
            problems.push(
                Problem::new(extra_key("load_in_8bit"), reason).with_other("training.adapter"),
            );
        }
    }
    if training.adapter == AdapterKind::Full {
        for key in [
            "training.lora_r",
            "training.lora_alpha",
            "training.lora_dropout",
        ] {
            if provenance.is_set(key) {
                problems.push(
                    Problem::new(
                        key,
                        "is a LoRA setting and cannot be used with `training.adapter = \"full\"`, which trains every weight; remove it, or use `adapter = \"lora\"`",
                    )
                    .with_other("training.adapter"),
                );
            }
        }
    }
    if extra.get("chat_template").and_then(toml::Value::as_str) == Some("jinja")
        && !set("chat_template_jinja")
    {
        problems.push(
            Problem::new(
                extra_key("chat_template"),
                format!(
                    "`\"jinja\"` needs `{}`, the template itself: Axolotl refuses it without one; set that, or choose another template",
                    extra_key("chat_template_jinja")
                ),
            ),
        );
    }
}

/// Adds a problem for every pair of settings that Axolotl 0.19 refuses together
/// (`check_evals`, `check_saves` and `check_warmup` in its
/// `utils/schemas/validation.py`), naming both keys. A typed setting counts only when
/// it is set (in `overbrainer.toml` or a variable): its default gives way to the
/// `axolotl_extra` key instead (AXO-7). An `eval_steps` or `save_steps` conflicts with a
/// set `*_per_epoch` whatever its value: the generator drops the per-epoch key for it,
/// so even a value Axolotl reads as false would silently win. Whether there is eval
/// data is checked where the data is known ([`super::axolotl::eval_data_conflict`]).
fn combinations(training: &Training, provenance: &Provenance, problems: &mut Vec<Problem>) {
    let extra = &training.axolotl_extra;
    let set = |key: &str| extra.get(key).filter(|v| axolotl_truthy(v));
    let extra_key = |key: &str| format!("training.axolotl_extra.{key}");
    let not_steps = |key: &str| set(key).filter(|v| v.as_str() != Some("steps"));
    for (steps, per_epoch, strategy) in [
        ("eval_steps", "training.evals_per_epoch", "eval_strategy"),
        ("save_steps", "training.saves_per_epoch", "save_strategy"),
    ] {
        if extra.contains_key(steps) && provenance.is_set(per_epoch) {
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

    /// The problems that loading with [`check`] finds in a project whose `[training]`
    /// is `toml` (with `target = "t"` and `base_model = "b"` added), every key set in
    /// `overbrainer.toml`; none when it loads.
    fn problems_of(toml: &str) -> Vec<Problem> {
        let dir = tempfile::tempdir().unwrap();
        let (training, extra) = toml.split_once("[axolotl_extra]").unwrap_or((toml, ""));
        std::fs::write(
            dir.path().join("overbrainer.toml"),
            format!(
                "[project]\nname = \"p\"\n\n[targets.t]\nkind = \"local\"\n\n[training]\ntarget = \"t\"\nbase_model = \"b\"\n{training}\n[training.axolotl_extra]\n{extra}"
            ),
        )
        .unwrap();
        let env = crate::config::EnvSnapshot::from_pairs::<[(&str, &str); 0], _, _>([]);
        match crate::config::load(dir.path(), &env, check) {
            Ok(_) => Vec::new(),
            Err(crate::config::ConfigError::Invalid { problems, .. }) => problems,
            Err(other) => panic!("{other}"),
        }
    }

    fn keys(problems: &[Problem]) -> Vec<(&str, Option<&str>)> {
        problems
            .iter()
            .map(|p| (p.key.as_str(), p.other.as_deref()))
            .collect()
    }

    // Tester defect 3: what Axolotl refuses with the kind of fine-tuning is refused at
    // loading, naming the key (and the other key).
    #[test]
    fn regression_axolotl_refusals_of_the_adapter_kind_name_their_keys() {
        let qlora = problems_of(
            "adapter = \"qlora\"\n[axolotl_extra]\nload_in_8bit = true\nchat_template = \"jinja\"\n",
        );
        assert_eq!(
            keys(&qlora),
            [
                (
                    "training.axolotl_extra.load_in_8bit",
                    Some("training.adapter")
                ),
                ("training.axolotl_extra.chat_template", None),
            ]
        );
        let full = problems_of(
            "adapter = \"full\"\nmerge = false\nlora_r = 8\nlora_dropout = 0.1\n[axolotl_extra]\nload_in_8bit = 1\n",
        );
        assert_eq!(
            keys(&full),
            [
                (
                    "training.axolotl_extra.load_in_8bit",
                    Some("training.adapter")
                ),
                ("training.lora_r", Some("training.adapter")),
                ("training.lora_dropout", Some("training.adapter")),
            ]
        );
        // What Axolotl accepts stays accepted: an 8-bit LoRA base, a jinja template
        // with its text, `load_in_8bit = false`, LoRA defaults under `full`.
        for ok in [
            "adapter = \"lora\"\nlora_r = 8\n[axolotl_extra]\nload_in_8bit = true\n",
            "adapter = \"qlora\"\n[axolotl_extra]\nload_in_8bit = false\nchat_template = \"jinja\"\nchat_template_jinja = \"{{ messages }}\"\n",
            "adapter = \"full\"\nmerge = false\n[axolotl_extra]\nchat_template = \"chatml\"\n",
        ] {
            assert_eq!(keys(&problems_of(ok)), [], "{ok}");
        }
    }

    // Tester defect 3: an optimizer or scheduler Axolotl does not know is refused at
    // loading, naming the key and the names it knows, never the value.
    #[test]
    fn regression_unknown_optimizer_and_scheduler_names_are_refused_without_echo() {
        let canary = "adamw_Xq7Rv2Lm9Tz4Kp8Wn3";
        let problems = problems_of(&format!(
            "adapter = \"lora\"\noptimizer = \"{canary}\"\nlr_scheduler = \"{canary}\"\n"
        ));
        assert_eq!(
            keys(&problems),
            [
                ("training.optimizer", None),
                ("training.lr_scheduler", None)
            ]
        );
        for problem in &problems {
            assert!(!problem.message.contains(canary), "{problem}");
            assert!(!problem.message.contains("Xq7Rv2Lm9Tz4"), "{problem}");
        }
        assert!(
            problems[0].message.contains("adamw_torch_fused, "),
            "{}",
            problems[0]
        );
        assert!(problems[1].message.contains("cosine, "), "{}", problems[1]);
        // The defaults and every pinned name pass.
        assert_eq!(keys(&problems_of("adapter = \"lora\"\n")), []);
        for (optimizer, scheduler) in AXOLOTL_OPTIMIZERS
            .iter()
            .zip(AXOLOTL_LR_SCHEDULERS.iter().cycle())
        {
            let toml = format!(
                "adapter = \"lora\"\noptimizer = \"{optimizer}\"\nlr_scheduler = \"{scheduler}\"\n"
            );
            assert_eq!(keys(&problems_of(&toml)), [], "{toml}");
        }
        assert!(AXOLOTL_OPTIMIZERS.is_sorted() && AXOLOTL_LR_SCHEDULERS.is_sorted());
    }

    // Issue 32: `eval_steps` beside a set `evals_per_epoch` is refused at loading, naming
    // both keys, whatever its value (the generator drops `evals_per_epoch` for it); the
    // default `evals_per_epoch` gives way instead (AXO-7). The same for saves.
    #[test]
    fn steps_beside_a_set_per_epoch_are_refused_naming_both_keys() {
        let evals = (
            "training.axolotl_extra.eval_steps",
            Some("training.evals_per_epoch"),
        );
        let saves = (
            "training.axolotl_extra.save_steps",
            Some("training.saves_per_epoch"),
        );
        for (toml, expected) in [
            (
                "evals_per_epoch = 2\n[axolotl_extra]\neval_steps = 5\n",
                &[evals][..],
            ),
            (
                "evals_per_epoch = 4\n[axolotl_extra]\neval_steps = 0\n",
                &[evals],
            ),
            (
                "evals_per_epoch = 2\n[axolotl_extra]\neval_steps = false\n",
                &[evals],
            ),
            (
                "saves_per_epoch = 2\n[axolotl_extra]\nsave_steps = 10\n",
                &[saves],
            ),
            (
                "evals_per_epoch = 2\nsaves_per_epoch = 1\n[axolotl_extra]\neval_steps = 5\nsave_steps = 10\n",
                &[evals, saves],
            ),
            ("[axolotl_extra]\neval_steps = 5\nsave_steps = 10\n", &[]),
            (
                "evals_per_epoch = 2\n[axolotl_extra]\neval_strategy = \"steps\"\n",
                &[],
            ),
            ("evals_per_epoch = 2\nsaves_per_epoch = 2\n", &[]),
        ] {
            let problems = problems_of(&format!("adapter = \"lora\"\n{toml}"));
            assert_eq!(keys(&problems), expected, "{toml}");
            for problem in &problems {
                let other = problem.other.as_deref().unwrap_or_default();
                assert!(
                    problem
                        .message
                        .starts_with(&format!("cannot be used with `{other}`")),
                    "{problem}"
                );
            }
        }
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

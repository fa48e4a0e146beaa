//! The run's Axolotl configuration, built from `[training]` (spec/training.md, AXO-1..AXO-9),
//! and the comparison of two configurations for a resume (RUN-36).
//!
//! Key names and meanings are Axolotl 0.19's (`axolotl/utils/schemas/config.py`); the
//! datasets use its `chat_template` prompt strategy with the `messages` field
//! (`axolotl/prompt_strategies/chat_template.py`).

use super::plugin;
use super::rules::{ExtraRefusal, axolotl_truthy, refused_extra};
use super::yaml::{self, Mapping, Yaml};
use crate::config::{AdapterKind, Provenance, Training};

/// The program every stage runs, from the venv's `bin`, `PATH` or the image.
pub const PROGRAM: &str = "axolotl";

/// File name of the run's Axolotl configuration, in its run directory.
pub const AXOLOTL_YAML: &str = "axolotl.yaml";
/// Train data of a run, in its run directory (a copy of `data/train.jsonl`).
pub const TRAIN_DATA: &str = "train.jsonl";
/// Eval data of a run, in its run directory (a copy of `data/eval.jsonl`).
pub const EVAL_DATA: &str = "eval.jsonl";
/// Axolotl's output directory, relative to the run directory.
pub const OUTPUT_DIR: &str = "output";
/// Where `axolotl merge-lora` writes the merged model, under [`OUTPUT_DIR`].
pub const MERGED_DIR: &str = "merged";
/// Where Axolotl keeps its tokenized datasets, relative to the run directory.
pub const PREPARED_DIR: &str = "prepared";
/// Where a resumed run finds the stopped run's checkpoint, relative to its run directory.
pub const RESUME_DIR: &str = "resume";

/// `name` in the run directory as the configuration names it: relative (`./name`),
/// since every Axolotl command of a run runs in its run directory.
#[must_use]
pub fn in_run_dir_path(name: &str) -> String {
    format!("./{name}")
}

/// A path of the configuration (`base_model`) where the run directory `run_dir` is
/// not the working directory: a relative one ([`in_run_dir_path`]) joined to it,
/// anything else (a Hugging Face repo ID, an absolute path) as it is.
#[must_use]
pub fn resolve_in_run_dir(run_dir: &str, path: &str) -> String {
    match path.strip_prefix("./") {
        Some(rest) => format!("{}/{rest}", run_dir.trim_end_matches('/')),
        None => path.to_owned(),
    }
}

/// Keys that may differ between a stopped run's configuration and its resume (RUN-36),
/// besides `resume_from_checkpoint`, the dataset paths and the prefixes of
/// [`RESUME_FREE_PREFIXES`].
pub const RESUME_FREE_KEYS: [&str; 14] = [
    "hub_model_id",
    "hub_strategy",
    "evals_per_epoch",
    "eval_steps",
    "eval_strategy",
    "saves_per_epoch",
    "save_steps",
    "save_strategy",
    "save_total_limit",
    "logging_steps",
    "use_tensorboard",
    "use_wandb",
    "use_mlflow",
    "use_comet",
];
/// Key prefixes that may differ for a resume (RUN-36).
pub const RESUME_FREE_PREFIXES: [&str; 3] = ["wandb_", "mlflow_", "comet_"];

/// A key of `axolotl_extra` that overbrainer refuses (AXO-4..AXO-6).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtraError {
    /// The key comes from a typed `[training]` setting.
    #[error("`training.axolotl_extra.{key}` comes from a typed setting; use `{setting}` instead")]
    Typed {
        /// The key.
        key: String,
        /// The setting to use instead.
        setting: String,
    },
    /// The key is managed by overbrainer.
    #[error("`training.axolotl_extra.{0}` is managed by overbrainer and cannot be set")]
    Managed(String),
    /// `save_only_model = true`.
    #[error(
        "`training.axolotl_extra.save_only_model = true` is refused: a checkpoint without optimizer state cannot be resumed"
    )]
    SaveOnlyModel,
}

/// Checks the keys of `axolotl_extra` against AXO-4..AXO-6, by the one rule that
/// configuration validation applies too ([`refused_extra`]); this guards every other caller.
///
/// # Errors
///
/// Returns the first refused key.
pub fn check_extra(extra: &toml::Table) -> Result<(), ExtraError> {
    let Some((key, refusal)) = refused_extra(extra).next() else {
        return Ok(());
    };
    Err(match refusal {
        ExtraRefusal::Typed(setting) => ExtraError::Typed {
            key: key.to_owned(),
            setting: setting.to_owned(),
        },
        ExtraRefusal::Managed => ExtraError::Managed(key.to_owned()),
        ExtraRefusal::SaveOnlyModel => ExtraError::SaveOnlyModel,
    })
}

/// One dataset entry: `path`, `type: chat_template`, `field_messages: messages`,
/// read as JSON lines (`ds_type: json`, `split: train`).
fn dataset(path: &str) -> Yaml {
    let mut entry = Mapping::new();
    entry.insert("path", Yaml::from(format!("./{path}")));
    entry.insert("ds_type", Yaml::from("json"));
    entry.insert("split", Yaml::from("train"));
    entry.insert("type", Yaml::from("chat_template"));
    entry.insert("field_messages", Yaml::from("messages"));
    Yaml::Seq(vec![Yaml::Map(entry)])
}

/// The Axolotl configuration of a run (AXO-2), with `axolotl_extra` merged last (AXO-3,
/// AXO-7). `resume_checkpoint` is the name (`checkpoint-N`) of the checkpoint a resumed
/// run starts from, under [`RESUME_DIR`]. Without eval data (`has_eval` false, an empty
/// `data/eval.jsonl`) there is no `test_datasets` and no `evals_per_epoch` \[design\].
///
/// # Errors
///
/// Returns an [`ExtraError`] when `axolotl_extra` sets a refused key.
pub fn config(
    training: &Training,
    resume_checkpoint: Option<&str>,
    has_eval: bool,
) -> Result<Mapping, ExtraError> {
    check_extra(&training.axolotl_extra)?;
    let mut c = Mapping::new();
    c.insert("base_model", Yaml::from(training.base_model.as_str()));
    let adapter = match training.adapter {
        AdapterKind::Lora => Some("lora"),
        AdapterKind::Qlora => Some("qlora"),
        AdapterKind::Full => None,
    };
    if let Some(adapter) = adapter {
        c.insert("adapter", Yaml::from(adapter));
        if training.adapter == AdapterKind::Qlora {
            c.insert("load_in_4bit", Yaml::Bool(true));
        }
        c.insert("lora_r", Yaml::from(training.lora_r));
        c.insert("lora_alpha", Yaml::from(training.lora_alpha));
        c.insert("lora_dropout", Yaml::from(training.lora_dropout));
        c.insert("lora_target_linear", Yaml::Bool(true));
    }
    c.insert("num_epochs", Yaml::from(training.epochs));
    c.insert("learning_rate", Yaml::from(training.learning_rate));
    c.insert("sequence_len", Yaml::from(training.sequence_len));
    c.insert("micro_batch_size", Yaml::from(training.micro_batch_size));
    c.insert(
        "gradient_accumulation_steps",
        Yaml::from(training.gradient_accumulation_steps),
    );
    c.insert("optimizer", Yaml::from(training.optimizer.as_str()));
    c.insert("lr_scheduler", Yaml::from(training.lr_scheduler.as_str()));
    c.insert("sample_packing", Yaml::Bool(training.sample_packing));
    c.insert("evals_per_epoch", Yaml::from(training.evals_per_epoch));
    c.insert("saves_per_epoch", Yaml::from(training.saves_per_epoch));
    c.insert("datasets", dataset(TRAIN_DATA));
    if has_eval {
        c.insert("test_datasets", dataset(EVAL_DATA));
    } else {
        c.remove("evals_per_epoch");
    }
    c.insert("val_set_size", Yaml::Int(0));
    c.insert("output_dir", Yaml::from(format!("./{OUTPUT_DIR}")));
    c.insert(
        "dataset_prepared_path",
        Yaml::from(format!("./{PREPARED_DIR}")),
    );
    c.insert("plugins", Yaml::Seq(vec![Yaml::from(plugin::PLUGIN_ENTRY)]));
    if let Some(checkpoint) = resume_checkpoint {
        c.insert(
            "resume_from_checkpoint",
            Yaml::from(format!("./{RESUME_DIR}/{checkpoint}")),
        );
    }
    c.insert("attn_implementation", Yaml::from("sdpa"));
    c.insert("gradient_checkpointing", Yaml::Bool(true));
    c.insert("warmup_ratio", Yaml::Float(0.1));
    c.insert("logging_steps", Yaml::Int(1));
    c.insert("save_total_limit", Yaml::Int(2));
    if let Some(hub) = &training.hub_model_id {
        c.insert("hub_model_id", Yaml::from(hub.as_str()));
    }
    let raw = &training.axolotl_extra;
    let extra = yaml::mapping_from_toml(raw);
    // AXO-7, and what Axolotl refuses together (its `check_evals` and `check_warmup`):
    // a generated value gives way to the `axolotl_extra` key it conflicts with.
    let other_than_steps = |key: &str| {
        raw.get(key)
            .and_then(toml::Value::as_str)
            .is_some_and(|v| !v.is_empty() && v != "steps")
    };
    if extra.contains_key("eval_steps") || other_than_steps("eval_strategy") {
        c.remove("evals_per_epoch");
    }
    if extra.contains_key("save_steps") {
        c.remove("saves_per_epoch");
    }
    if extra.contains_key("warmup_steps") {
        c.remove("warmup_ratio");
    }
    c.merge(extra);
    Ok(c)
}

/// Why `training` cannot run without eval data, when `has_eval` is false, naming every
/// key that needs it: `training.evals_per_epoch` when it is set (in `overbrainer.toml`
/// or a variable; its default only goes away without eval data \[design\]), and in
/// `axolotl_extra` an `eval_steps` Axolotl reads as true or an `eval_strategy` other
/// than `no` (Axolotl 0.19 refuses either with `val_set_size: 0` and no
/// `test_datasets`, its `check_evals`). The message names `eval_file`, the file the
/// eval data would come from.
#[must_use]
pub fn eval_data_conflict(
    training: &Training,
    provenance: &Provenance,
    has_eval: bool,
    eval_file: &str,
) -> Option<String> {
    if has_eval {
        return None;
    }
    let extra = &training.axolotl_extra;
    let mut keys = Vec::new();
    if provenance.is_set("training.evals_per_epoch") {
        keys.push("training.evals_per_epoch");
    }
    if extra.get("eval_steps").is_some_and(axolotl_truthy) {
        keys.push("training.axolotl_extra.eval_steps");
    }
    if extra
        .get("eval_strategy")
        .and_then(toml::Value::as_str)
        .is_some_and(|v| !v.is_empty() && v != "no")
    {
        keys.push("training.axolotl_extra.eval_strategy");
    }
    let (last, others) = keys.split_last()?;
    let named = if others.is_empty() {
        format!("`{last}` needs")
    } else {
        let others: Vec<String> = others.iter().map(|key| format!("`{key}`")).collect();
        format!("{} and `{last}` need", others.join(", "))
    };
    let them = if others.is_empty() { "it" } else { "them" };
    Some(format!(
        "{named} eval data, and `{eval_file}` is missing or empty: without an eval set there is nothing to evaluate (Axolotl refuses its eval keys then); remove {them}, or write eval records (`overbrainer split` does)"
    ))
}

/// The run's `axolotl.yaml` text (AXO-1).
///
/// # Errors
///
/// Returns an [`ExtraError`] when `axolotl_extra` sets a refused key.
pub fn render(
    training: &Training,
    resume_checkpoint: Option<&str>,
    has_eval: bool,
) -> Result<String, ExtraError> {
    let config = config(training, resume_checkpoint, has_eval)?;
    Ok(format!(
        "# Written by overbrainer at the start of the run; kept as written (AXO-9).\n{}",
        yaml::to_string(&config)
    ))
}

/// Whether `key` may differ between a stopped run and its resume (RUN-36).
#[must_use]
pub fn resume_may_differ(key: &str) -> bool {
    matches!(key, "resume_from_checkpoint" | "datasets" | "test_datasets")
        || RESUME_FREE_KEYS.contains(&key)
        || RESUME_FREE_PREFIXES.iter().any(|p| key.starts_with(p))
}

/// Top-level keys whose values differ between `stopped` (the text of the stopped run's
/// `axolotl.yaml`) and `resumed` (the configuration the resume would use), leaving out
/// those of [`resume_may_differ`]; sorted.
///
/// Both sides are compared as written by [`yaml::to_string`], one top-level entry (its
/// key line and the indented lines below it) at a time: the stopped run's file is kept as
/// written (AXO-9), so equal values have equal text.
#[must_use]
pub fn resume_differences(stopped: &str, resumed: &Mapping) -> Vec<String> {
    let ours = top_level_entries(&yaml::to_string(resumed));
    let theirs = top_level_entries(stopped);
    let mut keys: Vec<&String> = ours.keys().chain(theirs.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|key| !resume_may_differ(key) && ours.get(*key) != theirs.get(*key))
        .cloned()
        .collect()
}

/// The top-level entries of a YAML document written by [`yaml::to_string`]: key text to
/// the entry's lines. Comment lines are left out.
fn top_level_entries(text: &str) -> std::collections::BTreeMap<String, String> {
    let mut entries = std::collections::BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if line.starts_with(' ') {
            if let Some((_, body)) = current.as_mut() {
                body.push_str(line);
                body.push('\n');
            }
            continue;
        }
        if let Some((key, body)) = current.take() {
            entries.insert(key, body);
        }
        let key = top_level_key(line);
        current = Some((key, format!("{line}\n")));
    }
    if let Some((key, body)) = current {
        entries.insert(key, body);
    }
    entries
}

/// The key of a top-level line `key: value`, unquoted when it was double-quoted.
fn top_level_key(line: &str) -> String {
    if let Some(rest) = line.strip_prefix('"') {
        let mut key = String::new();
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => key.extend(chars.next()),
                c => key.push(c),
            }
        }
        return key;
    }
    line.split_once(':').map_or(line, |(key, _)| key).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_base_model_is_joined_to_the_run_directory_and_others_kept() {
        let path = in_run_dir_path("base_model");
        assert_eq!(path, "./base_model");
        assert_eq!(
            resolve_in_run_dir("/w/runs/r1/", &path),
            "/w/runs/r1/base_model"
        );
        assert_eq!(
            resolve_in_run_dir("/w/runs/r1", "Qwen/Qwen2.5-0.5B"),
            "Qwen/Qwen2.5-0.5B"
        );
        assert_eq!(
            resolve_in_run_dir("/w/runs/r1", "/models/tiny"),
            "/models/tiny"
        );
    }
    use crate::config::Source;

    fn training(extra: &str) -> Training {
        let text = format!(
            "target = \"local\"\nbase_model = \"/models/tiny\"\nadapter = \"lora\"\n[axolotl_extra]\n{extra}"
        );
        toml::from_str(&text).unwrap()
    }

    #[test]
    fn generated_keys_and_defaults() {
        let c = config(&training(""), None, true).unwrap();
        assert_eq!(c.get("base_model"), Some(&Yaml::from("/models/tiny")));
        assert_eq!(c.get("adapter"), Some(&Yaml::from("lora")));
        assert_eq!(c.get("load_in_4bit"), None);
        assert_eq!(c.get("lora_r"), Some(&Yaml::Int(16)));
        assert_eq!(c.get("lora_target_linear"), Some(&Yaml::Bool(true)));
        assert_eq!(c.get("num_epochs"), Some(&Yaml::Int(3)));
        assert_eq!(c.get("learning_rate"), Some(&Yaml::Float(2e-4)));
        assert_eq!(c.get("optimizer"), Some(&Yaml::from("adamw_torch_fused")));
        assert_eq!(c.get("sample_packing"), Some(&Yaml::Bool(true)));
        assert_eq!(c.get("val_set_size"), Some(&Yaml::Int(0)));
        assert_eq!(c.get("output_dir"), Some(&Yaml::from("./output")));
        assert_eq!(
            c.get("plugins"),
            Some(&Yaml::Seq(vec![Yaml::from(
                "overbrainer_metrics.MetricsPlugin"
            )]))
        );
        assert_eq!(c.get("resume_from_checkpoint"), None);
        assert_eq!(c.get("warmup_ratio"), Some(&Yaml::Float(0.1)));
        assert_eq!(c.get("logging_steps"), Some(&Yaml::Int(1)));
        assert_eq!(c.get("save_total_limit"), Some(&Yaml::Int(2)));
        assert_eq!(c.get("evals_per_epoch"), Some(&Yaml::Int(4)));
        assert!(c.get("hub_model_id").is_none());
    }

    #[test]
    fn qlora_full_and_resume() {
        let mut t = training("");
        t.adapter = AdapterKind::Qlora;
        let c = config(&t, Some("checkpoint-7"), true).unwrap();
        assert_eq!(c.get("load_in_4bit"), Some(&Yaml::Bool(true)));
        assert_eq!(
            c.get("resume_from_checkpoint"),
            Some(&Yaml::from("./resume/checkpoint-7"))
        );
        t.adapter = AdapterKind::Full;
        let c = config(&t, None, false).unwrap();
        assert!(c.get("test_datasets").is_none() && c.get("evals_per_epoch").is_none());
        for key in [
            "adapter",
            "lora_r",
            "lora_alpha",
            "lora_dropout",
            "lora_target_linear",
        ] {
            assert!(c.get(key).is_none(), "{key}");
        }
    }

    #[test]
    fn extra_merges_last_and_steps_remove_per_epoch() {
        let t = training(
            "warmup_ratio = 0.0\neval_steps = 5\nsave_steps = 10\nchat_template = \"tokenizer_default\"\n[axolotl_extra.special_tokens]\npad_token = \"<pad>\"",
        );
        let c = config(&t, None, true).unwrap();
        assert_eq!(c.get("warmup_ratio"), Some(&Yaml::Float(0.0)));
        assert_eq!(c.get("eval_steps"), Some(&Yaml::Int(5)));
        assert!(c.get("evals_per_epoch").is_none());
        assert!(c.get("saves_per_epoch").is_none());
        assert_eq!(
            c.get("chat_template"),
            Some(&Yaml::from("tokenizer_default"))
        );
        assert!(matches!(c.get("special_tokens"), Some(Yaml::Map(_))));
    }

    #[test]
    fn a_generated_value_gives_way_to_the_extra_key_axolotl_refuses_it_with() {
        let c = config(
            &training("eval_strategy = \"epoch\"\nwarmup_steps = 3"),
            None,
            true,
        )
        .unwrap();
        assert!(c.get("evals_per_epoch").is_none());
        assert!(c.get("warmup_ratio").is_none());
        assert_eq!(c.get("warmup_steps"), Some(&Yaml::Int(3)));
        let c = config(&training("eval_strategy = \"steps\""), None, true).unwrap();
        assert_eq!(c.get("evals_per_epoch"), Some(&Yaml::Int(4)));
    }

    #[test]
    fn eval_settings_without_eval_data_are_refused_naming_the_keys() {
        let unset = Provenance::default();
        let mut set = Provenance::default();
        set.set("training.evals_per_epoch".into(), Source::File);
        let epoch = "training.evals_per_epoch";
        let steps = "training.axolotl_extra.eval_steps";
        let strategy = "training.axolotl_extra.eval_strategy";
        for (extra, provenance, keys) in [
            ("eval_steps = 5", &unset, &[steps][..]),
            ("eval_strategy = \"epoch\"", &unset, &[strategy]),
            ("eval_strategy = \"no\"", &unset, &[]),
            ("eval_steps = 0", &unset, &[]),
            ("save_steps = 5", &unset, &[]),
            // The default `evals_per_epoch` only goes away without eval data...
            ("", &unset, &[]),
            // ...one that is set is refused, with every other key that needs eval data.
            ("", &set, &[epoch]),
            ("eval_strategy = \"no\"", &set, &[epoch]),
            ("eval_strategy = \"steps\"", &set, &[epoch, strategy]),
            (
                "eval_steps = 5\neval_strategy = \"steps\"",
                &set,
                &[epoch, steps, strategy],
            ),
        ] {
            let t = training(extra);
            let message = eval_data_conflict(&t, provenance, false, "data/eval.jsonl");
            if keys.is_empty() {
                assert_eq!(message, None, "{extra}");
            } else {
                let message = message.unwrap_or_else(|| panic!("{extra}: accepted"));
                for key in [epoch, steps, strategy] {
                    assert_eq!(
                        message.contains(&format!("`{key}`")),
                        keys.contains(&key),
                        "{extra}: {message}"
                    );
                }
                assert!(message.contains("`data/eval.jsonl`"), "{message}");
            }
            assert_eq!(
                eval_data_conflict(&t, provenance, true, "data/eval.jsonl"),
                None,
                "{extra}"
            );
        }
        let one = eval_data_conflict(&training(""), &set, false, "data/eval.jsonl").unwrap();
        assert!(
            one.starts_with("`training.evals_per_epoch` needs eval data, and `data/eval.jsonl` is missing or empty"),
            "{one}"
        );
        assert!(one.contains("remove it,"), "{one}");
        let two = eval_data_conflict(
            &training("eval_strategy = \"epoch\""),
            &set,
            false,
            "runs/r/eval.jsonl",
        )
        .unwrap();
        assert!(
            two.starts_with("`training.evals_per_epoch` and `training.axolotl_extra.eval_strategy` need eval data, and `runs/r/eval.jsonl`"),
            "{two}"
        );
        assert!(two.contains("remove them,"), "{two}");
    }

    #[test]
    fn refused_extra_keys() {
        assert!(matches!(
            config(&training("learning_rate = 0.1"), None, true),
            Err(ExtraError::Typed { .. })
        ));
        assert_eq!(
            config(&training("output_dir = \"x\""), None, true),
            Err(ExtraError::Managed("output_dir".into()))
        );
        assert_eq!(
            config(&training("save_only_model = true"), None, true),
            Err(ExtraError::SaveOnlyModel)
        );
        assert!(config(&training("save_only_model = false"), None, true).is_ok());
    }

    #[test]
    fn resume_differences_ignore_the_free_keys() {
        let stopped = render(&training("wandb_project = \"a\""), None, true).unwrap();
        let mut t = training("wandb_project = \"b\"\nsave_steps = 3");
        t.evals_per_epoch = 9;
        let resumed = config(&t, Some("checkpoint-3"), true).unwrap();
        assert!(resume_differences(&stopped, &resumed).is_empty());
        t.learning_rate = 0.5;
        t.axolotl_extra
            .insert("max_steps".into(), toml::Value::Integer(4));
        t.axolotl_extra.insert(
            "special_tokens".into(),
            toml::Value::Table(
                [("pad".to_owned(), toml::Value::from("x"))]
                    .into_iter()
                    .collect(),
            ),
        );
        let resumed = config(&t, Some("checkpoint-3"), true).unwrap();
        assert_eq!(
            resume_differences(&stopped, &resumed),
            vec![
                "learning_rate".to_owned(),
                "max_steps".to_owned(),
                "special_tokens".to_owned()
            ]
        );
        assert_eq!(top_level_key("\"a:\\\"b\": 1"), "a:\"b");
    }
}

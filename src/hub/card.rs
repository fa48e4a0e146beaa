//! The generated model card (HUB-7, HUB-8): front matter with `base_model` and tags, the
//! base model and adapter type, the topics, the roles, the training settings, Ollama and
//! llama.cpp usage when GGUFs are pushed, the loss curve when drawn, and the marker as the
//! last line. Whether a repo's own README is replaced is [`decide`].

use std::fmt::Write as _;

use super::recorded::Recorded;
use crate::config::{AdapterKind, Settings};
use crate::runs::RunRecord;

/// The last line of every generated card; a repo README holding it is ours to replace.
pub const MARKER: &str = "<!-- overbrainer:card -->";

/// The file name of the loss curve, next to the card.
pub const LOSS_SVG: &str = "loss.svg";

/// What the card is made from.
#[derive(Debug)]
pub struct CardInput<'a> {
    /// The project's settings.
    pub settings: &'a Settings,
    /// The run pushed.
    pub run: &'a RunRecord,
    /// `NAMESPACE/NAME`.
    pub repo: &'a str,
    /// The GGUF files pushed at the repo root.
    pub ggufs: Vec<String>,
    /// Whether [`LOSS_SVG`] is pushed beside the card.
    pub loss_curve: bool,
    /// Whether `merged/` is pushed.
    pub merged: bool,
    /// The settings the run recorded at its start (its `axolotl.yaml`); they win over
    /// `settings.training`, which may have changed since.
    pub recorded: Option<&'a Recorded>,
}

/// Whether a push writes its card over the repo's `README.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Write the generated card.
    Write,
    /// Keep the repo's own README (no marker, no `--overwrite-card`).
    Keep,
}

/// HUB-7: write when the repo has no README, when it holds the marker, or when forced.
#[must_use]
pub fn decide(existing: Option<&[u8]>, overwrite: bool) -> Decision {
    match existing {
        None => Decision::Write,
        Some(_) if overwrite => Decision::Write,
        Some(text) if String::from_utf8_lossy(text).contains(MARKER) => Decision::Write,
        Some(_) => Decision::Keep,
    }
}

/// A YAML scalar: JSON's quoting is valid YAML.
fn yaml(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

/// Markdown table cell text.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Whether `model` names a Hub repo (`owner/name`) rather than a local path.
fn is_hub_id(model: &str) -> bool {
    let mut parts = model.split('/');
    matches!((parts.next(), parts.next(), parts.next()), (Some(a), Some(b), None)
        if !a.is_empty() && !b.is_empty() && !a.starts_with('.') && !model.contains(char::is_whitespace))
}

/// The quantization of a GGUF file name (`child-Q4_K_M.gguf` → `Q4_K_M`).
#[must_use]
pub fn quant_of(file: &str) -> String {
    let stem = file.strip_suffix(".gguf").unwrap_or(file);
    stem.rsplit(['-', '.']).next().unwrap_or(stem).to_owned()
}

/// The card's text.
#[must_use]
#[allow(
    clippy::too_many_lines,
    reason = "the card's sections in reading order"
)]
pub fn render(input: &CardInput<'_>) -> String {
    let settings = input.settings;
    let training = settings.training.as_ref();
    let recorded = input.recorded;
    // Recorded first: a run without `adapter` in its YAML trained the full model (AXO-1).
    let adapter = match recorded {
        Some(r) => Some(match r.get("adapter") {
            Some("qlora") => "qlora",
            Some(_) => "lora",
            None => "full",
        }),
        None => training.map(|t| match t.adapter {
            AdapterKind::Lora => "lora",
            AdapterKind::Qlora => "qlora",
            AdapterKind::Full => "full",
        }),
    };
    // A run's own copy of an uploaded base model (`./base_model`) says nothing: the
    // project's `base_model` names it, a local directory even where it reads like a
    // repo ID (`models/tiny`).
    let recorded_base = recorded.and_then(|r| r.get("base_model"));
    let uploaded = match recorded_base {
        Some(base) => base.starts_with("./"),
        None => training.is_some_and(|t| t.upload_base_model),
    };
    let base = recorded_base
        .filter(|b| !b.starts_with("./"))
        .or_else(|| training.map(|t| t.base_model.as_str()));
    let on_hub = |base: &str| !uploaded && is_hub_id(base);
    let mut out = String::from("---\n");
    if let Some(base) = base.filter(|b| on_hub(b)) {
        let _ = writeln!(out, "base_model: {}", yaml(base));
    }
    if matches!(adapter, Some("lora" | "qlora")) {
        out.push_str("library_name: peft\n");
    }
    out.push_str("tags:\n- overbrainer\n- distillation\n");
    if let Some(adapter) = adapter {
        let _ = writeln!(out, "- {adapter}");
    }
    if !input.ggufs.is_empty() {
        out.push_str("- gguf\n");
    }
    out.push_str("---\n\n");
    let name = input.repo.rsplit('/').next().unwrap_or(input.repo);
    let _ = writeln!(out, "# {name}\n");
    let _ = writeln!(
        out,
        "A child model distilled by overbrainer from the answers of a parent model (run `{}`).\n",
        input.run.id
    );
    if let (Some(base), Some(adapter)) = (base, adapter) {
        if on_hub(base) {
            let _ = writeln!(out, "- Base model: `{base}`");
        } else {
            // Only the last part of the path: the rest of it is the trainer's machine.
            let last = base
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or(base);
            let _ = writeln!(
                out,
                "- Base model: a local model (`{}`), not a Hub repo, so the metadata names no `base_model`",
                cell(last)
            );
        }
        let _ = writeln!(out, "- Adapter: {adapter}");
        if input.merged {
            out.push_str("- `merged/`: the adapter merged into the base model\n");
        }
        out.push('\n');
    }
    if !settings.topics.is_empty() {
        out.push_str("## Topics\n\n");
        for topic in &settings.topics {
            if topic.description.trim().is_empty() {
                let _ = writeln!(out, "- **{}**", topic.name);
            } else {
                let _ = writeln!(
                    out,
                    "- **{}**: {}",
                    topic.name,
                    topic.description.trim().replace('\n', " ")
                );
            }
        }
        out.push('\n');
    }
    let roles = &settings.roles;
    let listed: Vec<(&str, &crate::config::Role)> = [
        ("parent", roles.parent.as_ref()),
        ("generator", roles.generator.as_ref()),
        ("embedder", roles.embedder.as_ref()),
        ("judge", roles.judge.as_ref()),
    ]
    .into_iter()
    .filter_map(|(n, r)| r.map(|r| (n, r)))
    .collect();
    if !listed.is_empty() {
        out.push_str("## Roles\n\n| role | provider | model |\n|---|---|---|\n");
        for (role, r) in listed {
            let _ = writeln!(
                out,
                "| {role} | {} | {} |",
                cell(&r.provider),
                cell(&r.model)
            );
        }
        out.push('\n');
    }
    if training.is_some() || recorded.is_some() {
        out.push_str("## Training\n\n| setting | value |\n|---|---|\n");
        // The recorded value of `key`, else the current setting's, else `-`.
        let pick = |key: &str, current: Option<String>| {
            recorded
                .and_then(|r| r.get(key))
                .map(str::to_owned)
                .or(current)
                .unwrap_or_else(|| "-".to_owned())
        };
        let t = |f: fn(&crate::config::Training) -> String| training.map(f);
        let rows: [(&str, String); 10] = [
            ("epochs", pick("num_epochs", t(|t| t.epochs.to_string()))),
            (
                "learning rate",
                pick("learning_rate", t(|t| t.learning_rate.to_string())),
            ),
            (
                "LoRA r / alpha / dropout",
                format!(
                    "{} / {} / {}",
                    pick("lora_r", t(|t| t.lora_r.to_string())),
                    pick("lora_alpha", t(|t| t.lora_alpha.to_string())),
                    pick("lora_dropout", t(|t| t.lora_dropout.to_string()))
                ),
            ),
            (
                "sequence length",
                pick("sequence_len", t(|t| t.sequence_len.to_string())),
            ),
            (
                "micro batch size",
                pick("micro_batch_size", t(|t| t.micro_batch_size.to_string())),
            ),
            (
                "gradient accumulation",
                pick(
                    "gradient_accumulation_steps",
                    t(|t| t.gradient_accumulation_steps.to_string()),
                ),
            ),
            ("optimizer", pick("optimizer", t(|t| t.optimizer.clone()))),
            (
                "scheduler",
                pick("lr_scheduler", t(|t| t.lr_scheduler.clone())),
            ),
            (
                "sample packing",
                pick("sample_packing", t(|t| t.sample_packing.to_string())),
            ),
            (
                "steps",
                input
                    .run
                    .last_step
                    .map_or_else(|| "-".to_owned(), |s| s.to_string()),
            ),
        ];
        for (k, v) in rows {
            let _ = writeln!(out, "| {k} | {} |", cell(&v));
        }
        if let Some(loss) = input.run.last_loss {
            let _ = writeln!(out, "| final train loss | {loss:.4} |");
        }
        if let Some(loss) = input.run.last_eval_loss {
            let _ = writeln!(out, "| final eval loss | {loss:.4} |");
        }
        out.push('\n');
    }
    if input.loss_curve {
        let _ = writeln!(out, "![loss curve]({LOSS_SVG})\n");
    }
    if let Some(first) = input.ggufs.first() {
        let quant = quant_of(first);
        out.push_str("## Usage\n\n");
        let _ = writeln!(
            out,
            "With Ollama:\n\n```sh\nollama run hf.co/{}:{quant}\n```\n",
            input.repo
        );
        let _ = writeln!(
            out,
            "With llama.cpp:\n\n```sh\nllama-cli -hf {}:{quant}\n```\n",
            input.repo
        );
        if input.ggufs.len() > 1 {
            out.push_str("Quantizations: ");
            let quants: Vec<String> = input
                .ggufs
                .iter()
                .map(|g| format!("`{}`", quant_of(g)))
                .collect();
            out.push_str(&quants.join(", "));
            out.push_str("\n\n");
        }
    }
    out.push_str(MARKER);
    out.push('\n');
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn decide_writes_without_readme_with_marker_or_forced_and_keeps_otherwise() {
        let ours = format!("# x\n{MARKER}\n");
        let table: [(Option<&[u8]>, bool, Decision); 5] = [
            (None, false, Decision::Write),
            (Some(ours.as_bytes()), false, Decision::Write),
            (Some(b"# my own card\n"), false, Decision::Keep),
            (Some(b"# my own card\n"), true, Decision::Write),
            (Some(b""), false, Decision::Keep),
        ];
        for (existing, overwrite, expected) in table {
            assert_eq!(
                decide(existing, overwrite),
                expected,
                "{existing:?} {overwrite}"
            );
        }
    }

    fn input_parts() -> (Settings, RunRecord) {
        let settings: Settings = toml::from_str(
            r#"
[project]
name = "child"

[[topics]]
name = "rust"
description = "ownership | borrowing"
subtopics = 1
questions_per_subtopic = 1

[roles.parent]
provider = "p"
model = "big-model"

[roles.judge]
provider = "p"
model = "judge-model"

[training]
target = "local"
base_model = "Qwen/Qwen2.5-0.5B"
adapter = "lora"
"#,
        )
        .unwrap();
        let run: RunRecord = serde_json::from_str(
            r#"{"id":"child_1","created":"2026-01-01T00:00:00Z","target":"local","target_kind":"local","dir":"/d","owner":"o","state":"succeeded","snapshots":true,"retrieved":true,"last_step":4,"last_loss":1.25}"#,
        )
        .unwrap();
        (settings, run)
    }

    #[test]
    fn render_gives_front_matter_topics_roles_training_usage_and_ends_with_the_marker() {
        let (settings, run) = input_parts();
        let card = render(&CardInput {
            settings: &settings,
            run: &run,
            repo: "alice/child",
            ggufs: vec!["child-Q4_K_M.gguf".into(), "child-Q8_0.gguf".into()],
            loss_curve: true,
            merged: true,
            recorded: None,
        });
        assert!(
            card.starts_with("---\nbase_model: \"Qwen/Qwen2.5-0.5B\"\nlibrary_name: peft\ntags:\n"),
            "{card}"
        );
        assert!(card.contains("- gguf\n---\n"), "{card}");
        assert!(card.contains("- **rust**: ownership | borrowing"), "{card}");
        assert!(card.contains("| parent | p | big-model |"), "{card}");
        assert!(card.contains("| judge | p | judge-model |"), "{card}");
        assert!(!card.contains("| generator |"), "{card}");
        assert!(
            card.contains("| steps | 4 |") && card.contains("| final train loss | 1.2500 |"),
            "{card}"
        );
        assert!(
            card.contains("ollama run hf.co/alice/child:Q4_K_M"),
            "{card}"
        );
        assert!(card.contains("llama-cli -hf alice/child:Q4_K_M"), "{card}");
        assert!(card.contains("`Q8_0`"), "{card}");
        assert!(card.contains("![loss curve](loss.svg)"), "{card}");
        assert_eq!(card.lines().last(), Some(MARKER));
        // No placeholder link: the project knows no repository URL.
        assert!(!card.contains("https://github.com/)"), "{card}");
        assert!(card.contains("distilled by overbrainer from"), "{card}");
    }

    #[test]
    fn render_without_ggufs_has_no_usage_and_a_local_base_is_said_local_without_base_model_key() {
        let (mut settings, run) = input_parts();
        if let Some(t) = settings.training.as_mut() {
            t.base_model = "/models/tiny".into();
        }
        let card = render(&CardInput {
            settings: &settings,
            run: &run,
            repo: "alice/child",
            ggufs: vec![],
            loss_curve: false,
            merged: false,
            recorded: None,
        });
        assert!(!card.contains("base_model:"), "{card}");
        assert!(
            !card.contains("## Usage") && !card.contains("- gguf"),
            "{card}"
        );
        assert!(!card.contains("loss.svg"), "{card}");
        assert!(
            card.contains("- Base model: a local model (`tiny`), not a Hub repo"),
            "{card}"
        );
        assert!(!card.contains("/models/"), "{card}");
    }

    /// The card of `alice/child` for `run`, with the settings `recorded` by the run.
    fn render_recorded(settings: &Settings, run: &RunRecord, recorded: &Recorded) -> String {
        render(&CardInput {
            settings,
            run,
            repo: "alice/child",
            ggufs: vec![],
            loss_curve: false,
            merged: false,
            recorded: Some(recorded),
        })
    }

    // Issue 21: a run's `axolotl.yaml` names an uploaded base model as its own copy,
    // `./base_model`; the card says the project's local model instead.
    #[test]
    fn a_recorded_run_directory_base_model_is_said_by_the_project_model_name() {
        let (mut settings, run) = input_parts();
        if let Some(t) = settings.training.as_mut() {
            t.base_model = "models/tiny-distill".into();
        }
        let recorded = Recorded::parse(
            "base_model: ./base_model
adapter: lora
",
        );
        let card = render_recorded(&settings, &run, &recorded);
        assert!(!card.contains("base_model:"), "{card}");
        assert!(
            card.contains("- Base model: a local model (`tiny-distill`), not a Hub repo"),
            "{card}"
        );
    }

    #[test]
    fn render_takes_the_training_settings_the_run_recorded_over_the_current_ones() {
        let (mut settings, run) = input_parts();
        if let Some(t) = settings.training.as_mut() {
            t.base_model = "Qwen/Qwen2.5-7B".into();
            t.epochs = 9;
            t.lora_r = 64;
            t.optimizer = "changed_since".into();
        }
        let recorded = Recorded::parse(
            "# kept as written\nbase_model: Qwen/Qwen2.5-0.5B\nadapter: qlora\nload_in_4bit: true\nlora_r: 4\nlora_alpha: 8\nnum_epochs: 1\nlearning_rate: 0.0005\noptimizer: adamw_torch\ndatasets:\n- path: train.jsonl\n",
        );
        let card = render_recorded(&settings, &run, &recorded);
        assert!(
            card.starts_with("---\nbase_model: \"Qwen/Qwen2.5-0.5B\"\n"),
            "{card}"
        );
        assert!(card.contains("- qlora\n"), "{card}");
        assert!(card.contains("| epochs | 1 |"), "{card}");
        assert!(card.contains("| learning rate | 0.0005 |"), "{card}");
        assert!(card.contains("| optimizer | adamw_torch |"), "{card}");
        // lora_dropout is not in this record: the current setting fills in.
        assert!(
            card.contains("| LoRA r / alpha / dropout | 4 / 8 / "),
            "{card}"
        );
        assert!(
            !card.contains("7B") && !card.contains("changed_since") && !card.contains("| 64"),
            "{card}"
        );
        // A record without `adapter` is a full fine-tune.
        let full = Recorded::parse("base_model: Qwen/Qwen2.5-0.5B\nnum_epochs: 1\n");
        let card = render(&CardInput {
            settings: &settings,
            run: &run,
            repo: "alice/child",
            ggufs: vec![],
            loss_curve: false,
            merged: false,
            recorded: Some(&full),
        });
        assert!(card.contains("- Adapter: full"), "{card}");
        assert!(!card.contains("library_name: peft"), "{card}");
    }

    #[test]
    fn quant_of_takes_the_last_dash_part_of_the_stem() {
        assert_eq!(quant_of("child-Q4_K_M.gguf"), "Q4_K_M");
        assert_eq!(quant_of("my-child-f16.gguf"), "f16");
        assert_eq!(quant_of("Q8_0.gguf"), "Q8_0");
    }

    #[test]
    fn is_hub_id_refuses_local_paths() {
        assert!(is_hub_id("Qwen/Qwen2.5-0.5B"));
        assert!(!is_hub_id("/root/.cache/tiny"));
        assert!(!is_hub_id("./tiny"));
        assert!(!is_hub_id("a/b/c"));
    }
}

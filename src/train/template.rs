//! Whether the chat template of a run renders `reasoning_content` (spec/training.md,
//! TGT-12, decided by rendering \[design\]): the template Axolotl will use is found as
//! Axolotl's `get_chat_template` finds it ([`choice`]), rendered with minijinja the way
//! `transformers` renders it (`trim_blocks`, `lstrip_blocks`, Python string methods,
//! `raise_exception`, `tojson`) on a probe conversation whose assistant turns carry
//! distinctive reasoning ([`probe`]), and [`verdict`] says whether every probe reasoning
//! came out. [`decide`] turns that into nothing, a warning or a refusal.
//!
//! Reading the template (from the base model's directory or Axolotl's installation on the
//! target) is I/O and lives with the run start (`runs::template`).

use minijinja::{Environment, Error, ErrorKind, Value};
use serde_json::json;

use crate::config::Training;
use crate::dataset::Message;

/// Axolotl chat template names that render `reasoning_content` (TGT-12), used only when
/// the template text cannot be read (a Hub model ID, a container runtime).
pub const REASONING_TEMPLATES: [&str; 5] =
    ["qwen3", "qwen3_5", "exaone4", "gemma4", "gemma4_unified"];

/// The start of every probe reasoning text: long and random, so it cannot occur in a
/// template by chance; each assistant turn gets its own numbered one.
pub const PROBE_MARK: &str = "obprobe-6f1c9e2a7d4b8035e1a9";

/// Where Axolotl takes the run's chat template from (`utils/chat_templates/base.py`,
/// `get_chat_template`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// `chat_template = "<name>"`: Axolotl's own template of that name.
    Named(String),
    /// `chat_template = "jinja"`: `chat_template_jinja`, a template text or a file path.
    Jinja(Option<String>),
    /// `tokenizer_default` (also when unset): the base model tokenizer's template; with
    /// `tokenizer_default_fallback_<name>`, Axolotl's `<name>` when the tokenizer has none.
    Tokenizer {
        /// The fallback template's name.
        fallback: Option<String>,
    },
}

/// The template choice of `training` (`axolotl_extra.chat_template`).
#[must_use]
pub fn choice(training: &Training) -> Choice {
    let extra = |key: &str| {
        training
            .axolotl_extra
            .get(key)
            .and_then(toml::Value::as_str)
            .map(str::to_owned)
    };
    match extra("chat_template").as_deref() {
        None | Some("" | "tokenizer_default") => Choice::Tokenizer { fallback: None },
        Some("jinja") => Choice::Jinja(extra("chat_template_jinja")),
        Some(name) => match name.strip_prefix("tokenizer_default_fallback_") {
            Some(fallback) => Choice::Tokenizer {
                fallback: Some(fallback.to_owned()),
            },
            None => Choice::Named(name.to_owned()),
        },
    }
}

/// What the template says of the base model `training.base_model` when it cannot be
/// read: TGT-12's rule by name (one of [`REASONING_TEMPLATES`], or the official template
/// of a Qwen3 base model).
#[must_use]
pub fn renders_reasoning_by_name(training: &Training) -> bool {
    match choice(training) {
        Choice::Tokenizer { .. } => training.base_model.to_ascii_lowercase().contains("qwen3"),
        Choice::Named(name) => REASONING_TEMPLATES.contains(&name.as_str()),
        Choice::Jinja(_) => false,
    }
}

/// A chat template and the special tokens it may use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Template {
    /// The Jinja source.
    pub source: String,
    /// `bos_token`, when the tokenizer has one.
    pub bos_token: Option<String>,
    /// `eos_token`, when the tokenizer has one.
    pub eos_token: Option<String>,
}

/// The template of a tokenizer: `chat_template.jinja` when given (what `transformers`
/// saves), else `chat_template` in `tokenizer_config.json` (a text, or a list of named
/// templates of which `default` is used); the tokens from `tokenizer_config.json`.
///
/// # Errors
///
/// A message when `tokenizer_config.json` is not JSON.
pub fn tokenizer_template(
    jinja_file: Option<&str>,
    config: Option<&str>,
) -> Result<Option<Template>, String> {
    let config: serde_json::Value = match config {
        Some(text) => serde_json::from_str(text)
            .map_err(|e| format!("`tokenizer_config.json` is not JSON: {e}"))?,
        None => serde_json::Value::Null,
    };
    let token = |key: &str| match config.get(key) {
        Some(serde_json::Value::String(text)) => Some(text.clone()),
        Some(object) => object
            .get("content")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned),
        None => None,
    };
    let source = jinja_file
        .filter(|text| !text.trim().is_empty())
        .map(str::to_owned)
        .or_else(|| match config.get("chat_template") {
            Some(serde_json::Value::String(text)) => Some(text.clone()),
            Some(serde_json::Value::Array(named)) => named
                .iter()
                .find(|t| t.get("name").and_then(serde_json::Value::as_str) == Some("default"))
                .and_then(|t| t.get("template"))
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned),
            _ => None,
        });
    Ok(source.map(|source| Template {
        source,
        bos_token: token("bos_token"),
        eos_token: token("eos_token"),
    }))
}

/// The probe reasoning of the `n`-th assistant turn.
#[must_use]
pub fn probe_text(n: usize) -> String {
    format!("{PROBE_MARK}-{n}")
}

/// The probe conversation: the role sequence of `shape` (a conversation of the dataset,
/// so a template that treats earlier turns otherwise is probed as the data meets it;
/// a user turn and an assistant turn when `None`), every assistant turn carrying its own
/// [`probe_text`] as `reasoning_content`.
#[must_use]
pub fn probe(shape: Option<&[Message]>) -> Vec<Message> {
    let roles: Vec<&str> = match shape {
        Some(messages) if !messages.is_empty() => {
            messages.iter().map(|m| m.role.as_str()).collect()
        }
        _ => vec!["user", "assistant"],
    };
    let mut assistant = 0;
    roles
        .iter()
        .enumerate()
        .map(|(i, role)| {
            let reasoning_content = (*role == "assistant").then(|| {
                assistant += 1;
                probe_text(assistant)
            });
            Message {
                role: (*role).to_owned(),
                content: format!("{role} text {i}"),
                reasoning_content,
            }
        })
        .collect()
}

/// `template` rendered on `messages` as Axolotl's prompter asks `transformers` to
/// (`add_generation_prompt` false, `real_last_index` the last turn).
///
/// # Errors
///
/// The minijinja error when the template does not parse or fails to render (a
/// `raise_exception` call among them).
pub fn render(template: &Template, messages: &[Message]) -> Result<String, Error> {
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_function(
        "raise_exception",
        |message: String| -> Result<Value, Error> {
            Err(Error::new(ErrorKind::InvalidOperation, message))
        },
    );
    env.add_function("strftime_now", |format: String| {
        jiff::Zoned::now().strftime(&format).to_string()
    });
    env.add_template("chat", &template.source)?;
    let context = json!({
        "messages": messages,
        "add_generation_prompt": false,
        "real_last_index": messages.len().saturating_sub(1),
        "bos_token": template.bos_token.clone().unwrap_or_default(),
        "eos_token": template.eos_token.clone().unwrap_or_default(),
    });
    env.get_template("chat")?
        .render(Value::from_serialize(&context))
}

/// What rendering the probe showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every assistant turn's reasoning is in the output.
    Renders,
    /// The reasoning of these assistant turns (1-based) is not.
    Drops {
        /// The turns whose reasoning is missing.
        turns: Vec<usize>,
        /// How many assistant turns the probe had.
        of: usize,
    },
}

/// Renders the [`probe`] of `shape` with `template` and looks for each probe reasoning.
///
/// # Errors
///
/// See [`render`].
pub fn verdict(template: &Template, shape: Option<&[Message]>) -> Result<Verdict, Error> {
    let messages = probe(shape);
    let text = render(template, &messages)?;
    let turns = messages.iter().filter(|m| m.role == "assistant").count();
    let dropped: Vec<usize> = (1..=turns)
        .filter(|n| !text.contains(&probe_text(*n)))
        .collect();
    Ok(if dropped.is_empty() {
        Verdict::Renders
    } else {
        Verdict::Drops {
            turns: dropped,
            of: turns,
        }
    })
}

/// What a run start does about the template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Nothing to say.
    Fine,
    /// Warn, and start.
    Warn(String),
    /// Refuse to start, with the fix.
    Refuse(String),
}

/// The fix named in warnings and refusals.
const FIX: &str = "set `training.axolotl_extra.chat_template` to a template that renders it (Axolotl's qwen3, qwen3_5, exaone4, gemma4 or gemma4_unified when the base model supports it, or `jinja` with your own `chat_template_jinja`)";

/// The decision for a run whose template is `what` (for the message, such as "the chat
/// template `chatml`"), whose rendering gave `verdict`, and whose training data holds
/// reasoning (`has_reasoning`).
#[must_use]
pub fn decide(what: &str, verdict: &Verdict, has_reasoning: bool) -> Decision {
    let Verdict::Drops { turns, of } = verdict else {
        return Decision::Fine;
    };
    let which = if turns.len() == *of {
        String::new()
    } else {
        let list: Vec<String> = turns.iter().map(ToString::to_string).collect();
        format!(" of assistant turn(s) {}", list.join(", "))
    };
    if has_reasoning {
        Decision::Refuse(format!(
            "{what} drops the `reasoning_content`{which} of the training data, so the child would not learn the reasoning; {FIX}"
        ))
    } else {
        Decision::Warn(format!(
            "{what} does not render `reasoning_content`{which}: a dataset with reasoning would not teach it; {FIX}"
        ))
    }
}

/// Axolotl 0.19.0 templates known, by rendering them on this project's probe, to drop
/// `reasoning_content` on every assistant turn (`chatml` is pinned by a fixture test).
/// Used where the template cannot be rendered here (a container runtime, whose
/// templates live in the image): a named template of this list is still refused.
pub const DROPS_REASONING_BY_NAME: &[&str] = &["chatml", "llama3"];

/// The decision for a run whose template could not be rendered here (`reason`), by
/// its name alone: a named template known to drop the reasoning is refused when the
/// data holds reasoning (and warned about otherwise); any other name the product does
/// not know to render it is warned about, "checked by name only".
#[must_use]
pub fn decide_by_name(training: &Training, reason: &str, has_reasoning: bool) -> Decision {
    if let Choice::Named(name) = choice(training) {
        if DROPS_REASONING_BY_NAME.contains(&name.as_str()) {
            let verdict = Verdict::Drops {
                turns: Vec::new(),
                of: 0,
            };
            return decide(
                &format!("the chat template `{name}`"),
                &verdict,
                has_reasoning,
            );
        }
    }
    if renders_reasoning_by_name(training) {
        return Decision::Fine;
    }
    Decision::Warn(format!(
        "the chat template in use may not render `reasoning_content` ({reason}; checked by name only): the child would not learn the reasoning; {FIX}"
    ))
}

/// Whether any assistant turn of `messages` carries non-empty reasoning.
#[must_use]
pub fn has_reasoning(messages: &[Message]) -> bool {
    messages.iter().any(|m| {
        m.role == "assistant"
            && m.reasoning_content
                .as_deref()
                .is_some_and(|r| !r.is_empty())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Axolotl 0.19.0's `chatml` and `qwen3` templates and the tiny test model's
    /// (`scripts/build-tiny-model.py`), copied as they are.
    const CHATML: &str = include_str!("../../tests/fixtures/chat_templates/chatml.jinja");
    const QWEN3: &str = include_str!("../../tests/fixtures/chat_templates/qwen3.jinja");
    const TINY: &str = include_str!("../../tests/fixtures/chat_templates/tiny-model.jinja");

    fn template(source: &str) -> Template {
        Template {
            source: source.to_owned(),
            ..Template::default()
        }
    }

    fn training(base: &str, extra: &str) -> Training {
        let text = format!(
            "target = \"l\"\nbase_model = \"{base}\"\nadapter = \"lora\"\n[axolotl_extra]\n{extra}\n"
        );
        toml::from_str(&text).unwrap()
    }

    fn message(role: &str, reasoning: Option<&str>) -> Message {
        Message {
            role: role.to_owned(),
            content: "c".to_owned(),
            reasoning_content: reasoning.map(str::to_owned),
        }
    }

    #[test]
    fn chatml_drops_the_reasoning_and_a_dataset_with_reasoning_is_refused() {
        let verdict = verdict(&template(CHATML), None).unwrap();
        assert_eq!(
            verdict,
            Verdict::Drops {
                turns: vec![1],
                of: 1
            }
        );
        let what = "the chat template `chatml`";
        match decide(what, &verdict, true) {
            Decision::Refuse(text) => {
                assert!(text.starts_with(what), "{text}");
                assert!(
                    text.contains("training.axolotl_extra.chat_template"),
                    "{text}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(decide(what, &verdict, false), Decision::Warn(_)));
    }

    #[test]
    fn qwen3_renders_the_reasoning_of_a_single_turn_conversation() {
        let shape = [
            message("system", None),
            message("user", None),
            message("assistant", Some("r")),
        ];
        assert_eq!(verdict(&template(QWEN3), None).unwrap(), Verdict::Renders);
        assert_eq!(
            verdict(&template(QWEN3), Some(&shape)).unwrap(),
            Verdict::Renders
        );
        assert_eq!(decide("t", &Verdict::Renders, true), Decision::Fine);
    }

    #[test]
    fn qwen3_drops_the_reasoning_of_turns_before_the_last_user_turn() {
        let shape = [
            message("user", None),
            message("assistant", Some("r")),
            message("user", None),
            message("assistant", Some("r")),
        ];
        let verdict = verdict(&template(QWEN3), Some(&shape)).unwrap();
        assert_eq!(
            verdict,
            Verdict::Drops {
                turns: vec![1],
                of: 2
            }
        );
        match decide("the chat template `qwen3`", &verdict, true) {
            Decision::Refuse(text) => assert!(text.contains("of assistant turn(s) 1"), "{text}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_tiny_models_template_renders_the_reasoning_so_the_demo_is_not_warned() {
        let found = tokenizer_template(Some(TINY), Some(r#"{"eos_token": "<|im_end|>"}"#))
            .unwrap()
            .unwrap();
        assert_eq!(found.eos_token.as_deref(), Some("<|im_end|>"));
        let text = render(&found, &probe(None)).unwrap();
        assert!(
            text.contains(&format!("<think>\n{}\n</think>", probe_text(1))),
            "{text}"
        );
        assert_eq!(verdict(&found, None).unwrap(), Verdict::Renders);
    }

    #[test]
    fn a_tokenizer_config_template_is_used_when_there_is_no_jinja_file() {
        let config = serde_json::json!({
            "bos_token": {"content": "<s>"},
            "chat_template": [{"name": "tool_use", "template": "x"}, {"name": "default", "template": CHATML}],
        })
        .to_string();
        let found = tokenizer_template(None, Some(&config)).unwrap().unwrap();
        assert_eq!(found.source, CHATML);
        assert_eq!(found.bos_token.as_deref(), Some("<s>"));
        assert_eq!(tokenizer_template(None, Some("{}")).unwrap(), None);
        let error = tokenizer_template(None, Some("{")).unwrap_err();
        assert!(error.contains("tokenizer_config.json"), "{error}");
    }

    #[test]
    fn a_template_that_raises_is_an_error_not_a_verdict() {
        let raising = template("{{ raise_exception('no system role') }}");
        let error = verdict(&raising, None).unwrap_err().to_string();
        assert!(error.contains("no system role"), "{error}");
    }

    #[test]
    fn the_choice_follows_axolotls_get_chat_template() {
        assert_eq!(
            choice(&training("/m", "")),
            Choice::Tokenizer { fallback: None }
        );
        assert_eq!(
            choice(&training("/m", "chat_template = \"tokenizer_default\"")),
            Choice::Tokenizer { fallback: None }
        );
        assert_eq!(
            choice(&training(
                "/m",
                "chat_template = \"tokenizer_default_fallback_chatml\""
            )),
            Choice::Tokenizer {
                fallback: Some("chatml".to_owned())
            }
        );
        assert_eq!(
            choice(&training("/m", "chat_template = \"qwen3\"")),
            Choice::Named("qwen3".to_owned())
        );
        assert_eq!(
            choice(&training(
                "/m",
                "chat_template = \"jinja\"\nchat_template_jinja = \"/t.jinja\""
            )),
            Choice::Jinja(Some("/t.jinja".to_owned()))
        );
    }

    #[test]
    fn without_the_template_text_the_rule_by_name_decides() {
        assert!(renders_reasoning_by_name(&training("Qwen/Qwen3-0.6B", "")));
        assert!(!renders_reasoning_by_name(&training(
            "meta-llama/Llama-3.2-1B",
            ""
        )));
        assert!(renders_reasoning_by_name(&training(
            "x",
            "chat_template = \"gemma4\""
        )));
        assert!(!renders_reasoning_by_name(&training(
            "Qwen/Qwen3-0.6B",
            "chat_template = \"chatml\""
        )));
    }

    // Found by a tester: under the container runtime the template cannot be rendered
    // here, and a named `chatml` was only warned about while the native runtime refused.
    #[test]
    fn regression_a_named_template_known_to_drop_reasoning_is_refused_unrendered() {
        let chatml = training("/m", "chat_template = \"chatml\"");
        let Decision::Refuse(text) = decide_by_name(&chatml, "in the image", true) else {
            panic!("chatml with reasoning must be refused");
        };
        assert!(
            text.contains("`chatml` drops the `reasoning_content`"),
            "{text}"
        );
        assert!(text.contains("qwen3"), "{text}");
        assert!(matches!(
            decide_by_name(&chatml, "in the image", false),
            Decision::Warn(_)
        ));
        let qwen3 = training("/m", "chat_template = \"qwen3\"");
        assert_eq!(decide_by_name(&qwen3, "in the image", true), Decision::Fine);
        let Decision::Warn(text) = decide_by_name(&training("/m", ""), "in the image", true) else {
            panic!("an unknown template is warned about");
        };
        assert!(
            text.contains("in the image; checked by name only"),
            "{text}"
        );
    }

    #[test]
    fn has_reasoning_looks_at_assistant_turns_only() {
        assert!(has_reasoning(&[
            message("user", None),
            message("assistant", Some("r"))
        ]));
        assert!(!has_reasoning(&[
            message("user", Some("r")),
            message("assistant", Some(""))
        ]));
    }
}

//! The effective configuration as `dotted.key = value` entries with their source, for
//! `config check` (CHK-1, CHK-2, CHK-4). Secrets appear masked: `set`, `vault ref ...` or
//! `(unset)` (SEC-5).

use serde_json::{Map, Value};

use super::hub::DEFAULT_HUB_BASE_URL;
use super::load::Loaded;
use super::provenance::Source;
use super::providers::Protocol;
use super::runpod::DEFAULT_RUNPOD_BASE_URL;
use super::settings::{SECTIONS, Settings};
use super::targets::Target;

/// One line of `config check`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Dotted key (`pipeline.concurrency`, `topics.0.name`).
    pub key: String,
    /// The value as TOML-like text (`"text"`, `8`, `true`, `["a", "b"]`), a secret's mask,
    /// or `(unset)`.
    pub value: String,
    /// Where the value came from.
    pub source: Source,
    /// Why the value has no effect, when it has none: `ignored under runtime native`
    /// (CFG-8).
    pub ignored: Option<String>,
}

fn is_secret(path: &[String]) -> bool {
    let parts: Vec<&str> = path.iter().map(String::as_str).collect();
    matches!(
        parts.as_slice(),
        ["providers", _, "api_key"] | ["runpod", "api_key"] | ["hf_token"]
    )
}

/// Every effective key of `loaded`, grouped by section.
#[must_use]
pub fn entries(loaded: &Loaded) -> Vec<Entry> {
    let settings = &loaded.settings;
    let Ok(Value::Object(mut root)) = serde_json::to_value(settings) else {
        return Vec::new();
    };
    // Env-only keys print as `(unset)` when not set (CHK-2).
    let fill = |object: &mut Map<String, Value>, keys: &[&str]| {
        for key in keys {
            object.entry((*key).to_owned()).or_insert(Value::Null);
        }
    };
    if let Some(Value::Object(providers)) = root.get_mut("providers") {
        for provider in providers.values_mut() {
            if let Value::Object(provider) = provider {
                fill(provider, &["base_url", "api_key"]);
            }
        }
    }
    if let Some(Value::Object(targets)) = root.get_mut("targets") {
        for (name, target) in targets.iter_mut() {
            let Value::Object(target) = target else {
                continue;
            };
            match settings.targets.get(name) {
                Some(Target::Ssh(_) | Target::Slurm(_)) => fill(target, &["host"]),
                Some(Target::Runpod(_) | Target::Local(_)) | None => {}
            }
            // CHK-4: the client in effect, after `OVERBRAINER_SSH_CLIENT`.
            if let (Some(client), true) = (settings.ssh_client, target.contains_key("ssh_client")) {
                target.insert("ssh_client".to_owned(), serde_json::json!(client));
            }
        }
    }
    if let Some(Value::Object(runpod)) = root.get_mut("runpod") {
        fill(runpod, &["api_key"]);
        default_of(runpod, "base_url", DEFAULT_RUNPOD_BASE_URL);
    }
    if let Some(Value::Object(hub)) = root.get_mut("hub") {
        default_of(hub, "base_url", DEFAULT_HUB_BASE_URL);
    }
    effective_reasoning(settings, &mut root);
    fill(&mut root, &["hf_token", "ssh_client", "log"]);

    let mut out = Vec::new();
    for section in SECTIONS {
        if let Some(value) = root.get(section) {
            flatten(loaded, &mut vec![section.to_owned()], value, &mut out);
        }
    }
    out
}

/// Shows the default `value` of `key` when it is unset.
fn default_of(object: &mut Map<String, Value>, key: &str, value: &str) {
    let slot = object.entry(key.to_owned()).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::from(value);
    }
}

/// The `reasoning_effort` each role sends when unset: `medium` on the openai protocol with
/// `reasoning = true` (`llm::openai`), nothing otherwise (the anthropic protocol thinks
/// adaptively without it).
fn effective_reasoning(settings: &Settings, root: &mut Map<String, Value>) {
    let Some(Value::Object(roles)) = root.get_mut("roles") else {
        return;
    };
    for role in roles.values_mut() {
        let Value::Object(role) = role else {
            continue;
        };
        let Some(Value::String(provider)) = role.get("provider") else {
            continue;
        };
        let openai = settings
            .providers
            .get(provider)
            .is_some_and(|p| p.protocol == Protocol::Openai);
        let reasoning = role.get("reasoning") == Some(&Value::Bool(true));
        let unset = role.get("reasoning_effort").is_none_or(Value::is_null);
        if openai && reasoning && unset {
            role.insert("reasoning_effort".to_owned(), Value::from("medium"));
        }
    }
}

fn flatten(loaded: &Loaded, path: &mut Vec<String>, value: &Value, out: &mut Vec<Entry>) {
    match value {
        Value::Object(object) if !object.is_empty() && !is_extra(path) => {
            for (key, inner) in object {
                path.push(key.clone());
                flatten(loaded, path, inner, out);
                path.pop();
            }
        }
        Value::Array(items) if items.iter().any(Value::is_object) => {
            for (i, inner) in items.iter().enumerate() {
                path.push(i.to_string());
                flatten(loaded, path, inner, out);
                path.pop();
            }
        }
        _ => {
            let key = path.join(".");
            let mut source = loaded.source(&key).clone();
            if path.len() == 3 && path[0] == "targets" && path[2] == "ssh_client" {
                if let Some(var) = ssh_client_override(loaded) {
                    source = var;
                }
            }
            let text = match value {
                Value::Null => unset_text(&key).to_owned(),
                Value::String(mask) if is_secret(path) => mask.clone(),
                other => render(other),
            };
            out.push(Entry {
                ignored: ignored_under_runtime(loaded, path),
                key,
                value: text,
                source,
            });
        }
    }
}

/// How an unset key reads: its default's rule where the default is not one value.
fn unset_text(key: &str) -> &'static str {
    match key {
        "training.stall_minutes" => "(unset: the larger of 10 and 20 x the median step time)",
        _ => "(unset)",
    }
}

/// `ignored under runtime <r>` for a target key its runtime does not use (CFG-8).
fn ignored_under_runtime(loaded: &Loaded, path: &[String]) -> Option<String> {
    let [section, name, key] = path else {
        return None;
    };
    if section != "targets" {
        return None;
    }
    let runtime = loaded.settings.targets.get(name)?.runtime()?;
    runtime
        .ignored_keys()
        .contains(&key.as_str())
        .then(|| format!("ignored under runtime {}", runtime.name()))
}

/// `training.axolotl_extra` prints its sub-tables inline, as one value per top key.
fn is_extra(path: &[String]) -> bool {
    path.len() == 3 && path[0] == "training" && path[1] == "axolotl_extra"
}

fn ssh_client_override(loaded: &Loaded) -> Option<Source> {
    loaded.settings.ssh_client?;
    Some(loaded.source("ssh_client").clone())
}

fn render(value: &Value) -> String {
    match value {
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(render).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(object) if object.is_empty() => "{}".to_owned(),
        Value::Object(object) => format!(
            "{{ {} }}",
            object
                .iter()
                .map(|(k, v)| format!("{k} = {}", render(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

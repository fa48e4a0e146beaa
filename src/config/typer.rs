//! Typing the layered tree into [`Settings`], section by section, so that every problem is
//! reported at once (CFG-1..CFG-4, CHK-3).
//!
//! Deserialization goes through `figment`'s value tree, whose errors carry the key path.
//! A value from the environment is text; when its key expects a number or a boolean, the
//! text is converted and deserialization tried again (ENV-6).

use figment::error::{Actual, Kind};
use figment::value::{Dict, Value};
use serde::de::DeserializeOwned;

use super::describe::{Expected, describe, expected_kind};
use super::error::Problem;
use super::project::Topic;
use super::provenance::Provenance;
use super::runpod::RunpodTarget;
use super::settings::{SECTIONS, Settings};
use super::targets::{LocalTarget, SshTarget, Target};

/// Most conversions of one section before giving up (one per variable in practice).
const MAX_CONVERSIONS: usize = 256;

pub(super) struct Typer<'a> {
    pub(super) root: &'a mut Dict,
    pub(super) provenance: &'a Provenance,
    pub(super) problems: &'a mut Vec<Problem>,
    /// Dotted paths whose value failed to type.
    pub(super) failed: &'a mut Vec<String>,
}

fn lookup<'v>(root: &'v Dict, path: &[String]) -> Option<&'v Value> {
    let (first, rest) = path.split_first()?;
    let mut value = root.get(first)?;
    for segment in rest {
        value = match value {
            Value::Dict(_, dict) => dict.get(segment)?,
            Value::Array(_, items) => items.get(segment.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(value)
}

fn lookup_mut<'v>(root: &'v mut Dict, path: &[String]) -> Option<&'v mut Value> {
    let (first, rest) = path.split_first()?;
    let mut value = root.get_mut(first)?;
    for segment in rest {
        value = match value {
            Value::Dict(_, dict) => dict.get_mut(segment)?,
            Value::Array(_, items) => items.get_mut(segment.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(value)
}

/// Removes the key at `path` from its table; false when it is not in a table.
fn remove(root: &mut Dict, path: &[String]) -> bool {
    let Some((last, parent)) = path.split_last() else {
        return false;
    };
    let table = if parent.is_empty() {
        Some(root)
    } else {
        match lookup_mut(root, parent) {
            Some(Value::Dict(_, dict)) => Some(dict),
            _ => None,
        }
    };
    table.is_some_and(|t| t.remove(last).is_some())
}

/// Sets the key at `path` in its table to `value`; false when the parent is not a table.
fn insert(root: &mut Dict, path: &[String], value: Value) -> bool {
    let Some((last, parent)) = path.split_last() else {
        return false;
    };
    let table = if parent.is_empty() {
        Some(root)
    } else {
        match lookup_mut(root, parent) {
            Some(Value::Dict(_, dict)) => Some(dict),
            _ => None,
        }
    };
    match table {
        Some(table) => {
            table.insert(last.clone(), value);
            true
        }
        None => false,
    }
}

/// The `n`-th kind of value tried in place of a missing key, so that deserialization goes
/// on to the next problem; `None` after the last.
fn placeholder(n: usize) -> Option<Value> {
    Some(match n {
        0 => Value::from(String::new()),
        1 => Value::from(1_u64),
        2 => Value::from(true),
        3 => Value::from(1.0_f64),
        4 => Value::from(Dict::new()),
        5 => Value::from(Vec::<Value>::new()),
        _ => return None,
    })
}

fn path_of(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| (*s).to_owned()).collect()
}

impl Typer<'_> {
    /// The settings typed from the tree, section by section; problems are collected.
    pub(super) fn settings(&mut self) -> Settings {
        let mut settings = Settings::default();
        let unknown: Vec<String> = self
            .root
            .keys()
            .filter(|k| !SECTIONS.contains(&k.as_str()))
            .cloned()
            .collect();
        for key in unknown {
            self.problems.push(Problem::new(
                key,
                "unknown field: not a known section or key",
            ));
        }
        settings.project = self.section("project");
        settings.topics = self.topics();
        for name in self.names("providers") {
            if let Some(provider) = self.typed(&path_of(&["providers", &name])) {
                settings.providers.insert(name, provider);
            }
        }
        settings.roles = self.section("roles");
        settings.pipeline = self.section("pipeline");
        if lookup(self.root, &path_of(&["training"])).is_some() {
            settings.training = self.typed(&path_of(&["training"]));
        }
        for name in self.names("targets") {
            if let Some(target) = self.target(&name) {
                settings.targets.insert(name, target);
            }
        }
        settings.export = self.section("export");
        settings.hub = self.section("hub");
        settings.compare = self.section("compare");
        settings.metrics = self.section("metrics");
        settings.budget = self.section("budget");
        settings.runpod = self.section("runpod");
        settings.hf_token = self.section("hf_token");
        settings.ssh_client = self.section("ssh_client");
        settings.log = self.section("log");
        settings
    }

    /// The entry names of a table of named tables; a non-table is reported.
    fn names(&mut self, key: &str) -> Vec<String> {
        match self.root.get(key) {
            None => Vec::new(),
            Some(Value::Dict(_, dict)) => dict.keys().cloned().collect(),
            Some(_) => {
                self.problems.push(Problem::new(
                    key,
                    "wrong type: expected a table of named tables",
                ));
                Vec::new()
            }
        }
    }

    fn topics(&mut self) -> Vec<Topic> {
        let count = match self.root.get("topics") {
            None => return Vec::new(),
            Some(Value::Array(_, items)) => items.len(),
            Some(_) => {
                self.problems.push(Problem::new(
                    "topics",
                    "wrong type: expected a list of `[[topics]]` tables",
                ));
                return Vec::new();
            }
        };
        (0..count)
            .filter_map(|i| self.typed(&path_of(&["topics", &i.to_string()])))
            .collect()
    }

    fn target(&mut self, name: &str) -> Option<Target> {
        let path = path_of(&["targets", name]);
        let key = format!("targets.{name}.kind");
        let kind = if let Some(Value::Dict(_, dict)) = lookup_mut(self.root, &path) {
            dict.remove("kind")
        } else {
            self.problems.push(Problem::new(
                format!("targets.{name}"),
                "wrong type: expected a table",
            ));
            return None;
        };
        let kinds = "expected one of `local`, `ssh`, `runpod`, `slurm`";
        let target = match &kind {
            None => {
                self.problems
                    .push(Problem::new(key, format!("missing required key; {kinds}")));
                None
            }
            Some(Value::String(_, kind)) if kind == "local" => {
                self.typed::<LocalTarget>(&path).map(Target::Local)
            }
            Some(Value::String(_, kind)) if kind == "ssh" => {
                self.typed::<SshTarget>(&path).map(Target::Ssh)
            }
            Some(Value::String(_, kind)) if kind == "runpod" => {
                self.typed::<RunpodTarget>(&path).map(Target::Runpod)
            }
            Some(Value::String(_, kind)) if kind == "slurm" => self
                .typed::<crate::config::SlurmTarget>(&path)
                .map(Target::Slurm),
            Some(_) => {
                self.problems
                    .push(Problem::new(key, format!("invalid value: {kinds}")));
                None
            }
        };
        if let (Some(kind), Some(Value::Dict(_, dict))) = (kind, lookup_mut(self.root, &path)) {
            dict.insert("kind".to_owned(), kind);
        }
        if target.is_none() {
            self.failed.push(format!("targets.{name}"));
        }
        target
    }

    fn section<T: DeserializeOwned + Default>(&mut self, key: &str) -> T {
        let path = path_of(&[key]);
        if lookup(self.root, &path).is_none() {
            return T::default();
        }
        self.typed(&path).unwrap_or_default()
    }

    /// Deserializes the value at `path`, converting environment text on demand. After a
    /// problem, the offending key is set aside (or, when missing, stood in for by a
    /// placeholder) and deserialization tried again, so that every problem of a section is
    /// reported, not only the first (CHK-3). The keys set aside are recorded in `failed`, so
    /// that semantic rules skip those keys only; the section is still returned for the rules
    /// on its other keys (the load fails anyway, as a problem was reported).
    fn typed<T: DeserializeOwned>(&mut self, path: &[String]) -> Option<T> {
        // Placeholders standing in for missing keys: their path and the attempt number.
        let mut placeholders: Vec<(Vec<String>, usize)> = Vec::new();
        for _ in 0..MAX_CONVERSIONS {
            let value = lookup(self.root, path)?;
            let error = match value.deserialize::<T>() {
                Ok(typed) => return Some(typed),
                Err(error) => error,
            };
            let mut full = path.to_vec();
            full.extend(error.path.iter().cloned());
            if self.convert(&full, &error.kind) {
                continue;
            }
            // A placeholder of the wrong type: try the next kind of value.
            if let Some(slot) = placeholders.iter_mut().find(|(p, _)| *p == full) {
                slot.1 += 1;
                let next = match &error.kind {
                    Kind::UnknownVariant(_, variants) if slot.1 == 1 => {
                        variants.first().map(|v| Value::from(*v))
                    }
                    _ => placeholder(slot.1),
                };
                if next.is_some_and(|v| insert(self.root, &full, v)) {
                    continue;
                }
                break;
            }
            let problem = describe(full.clone(), &error.kind);
            let repeated = self.problems.iter().any(|p| p.key == problem.key);
            let key = problem.key.clone();
            if !repeated {
                self.problems.push(problem);
            }
            if repeated {
                break;
            }
            if let Kind::MissingField(name) = &error.kind {
                let mut missing = full.clone();
                missing.push(name.to_string());
                if placeholder(0).is_some_and(|v| insert(self.root, &missing, v)) {
                    self.failed.push(key);
                    placeholders.push((missing, 0));
                    continue;
                }
                break;
            }
            let removable = full.len() > path.len();
            if !removable || !remove(self.root, &full) {
                break;
            }
            self.failed.push(key);
        }
        self.failed.push(path.join("."));
        None
    }

    /// Converts environment text at `path` to the type the error says is expected.
    fn convert(&mut self, path: &[String], kind: &Kind) -> bool {
        let Kind::InvalidType(Actual::Str(_), expected) = kind else {
            return false;
        };
        if self.provenance.source(&path.join(".")).var().is_none() {
            return false;
        }
        let Some(slot) = lookup_mut(self.root, path) else {
            return false;
        };
        let Value::String(_, raw) = &*slot else {
            return false;
        };
        let raw = raw.trim();
        let converted = match expected_kind(expected) {
            Expected::Unsigned => raw.parse::<u64>().ok().map(Value::from),
            Expected::Signed => raw.parse::<i64>().ok().map(Value::from),
            Expected::Float => raw
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .map(Value::from),
            Expected::Bool => match raw {
                "true" => Some(Value::from(true)),
                "false" => Some(Value::from(false)),
                _ => None,
            },
            Expected::Other => None,
        };
        match converted {
            Some(value) => {
                *slot = value;
                true
            }
            None => false,
        }
    }
}

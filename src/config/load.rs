//! Loading: the layered tree (see [`super::layers`]) turned into typed [`Settings`],
//! section by section so that every problem is reported at once (CFG-1..CFG-4).
//!
//! Deserialization goes through `figment`'s value tree, whose errors carry the key path.
//! Its messages echo the offending value, so they are rewritten here to name the key and
//! the expected type only. A value from the environment is text; when its key expects a
//! number or a boolean, the text is converted and deserialization tried again (ENV-6).

use std::path::{Path, PathBuf};

use figment::error::{Actual, Kind};
use figment::value::{Dict, Value};
use serde::de::DeserializeOwned;

use super::env::EnvSnapshot;
use super::error::{ConfigError, Problem};
use super::layers::{self, Provenance, Source};
use super::types::{LocalTarget, RunpodTarget, Settings, SshTarget, Target};
use super::validate;

/// The settings file's name in the project directory.
pub const FILE_NAME: &str = "overbrainer.toml";
/// The optional environment file in the project directory.
pub const DOTENV_NAME: &str = ".env";

/// A loaded, valid configuration with the source of every value.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The effective settings.
    pub settings: Settings,
    /// Where each value came from.
    pub provenance: Provenance,
    /// Notes for stderr: deprecated keys, keys ignored under a runtime (CHK-5).
    pub warnings: Vec<String>,
    /// The process environment with `.env` added where the process does not set a name;
    /// hand it to [`crate::secrets::Resolver::new`].
    pub env: EnvSnapshot,
    /// The `overbrainer.toml` that was read.
    pub path: PathBuf,
}

impl Loaded {
    /// The source of the value at dotted `key`.
    #[must_use]
    pub fn source(&self, key: &str) -> &Source {
        self.provenance.source(key)
    }
}

/// Loads and validates the configuration of the project in `project_dir`: its
/// `overbrainer.toml`, then its `.env` if present, then the `OVERBRAINER_*` variables of
/// `env`, over the built-in defaults (ENV-2).
///
/// # Errors
///
/// [`ConfigError::NotFound`] without `overbrainer.toml`; read and syntax errors of either
/// file; [`ConfigError::Invalid`] listing every problem, each naming its key.
pub fn load(project_dir: &Path, env: &EnvSnapshot) -> Result<Loaded, ConfigError> {
    let path = project_dir.join(FILE_NAME);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(ConfigError::NotFound {
                dir: project_dir.to_owned(),
            });
        }
        Err(source) => return Err(ConfigError::Read { path, source }),
    };
    let file = layers::parse_file(&path, &text)?;
    let dotenv = layers::read_dotenv(&project_dir.join(DOTENV_NAME))?;

    let mut problems = Vec::new();
    let mut provenance = Provenance::default();
    layers::check_env_only(&file, &mut problems);
    for (key, value) in &file {
        layers::record(&mut provenance, key, value, &Source::File);
    }
    let mut root = file.clone();
    for entry in layers::env_entries(&dotenv, env, &mut problems) {
        match layers::apply(&mut root, &file, &entry) {
            Ok(()) => provenance.set(entry.path.join("."), entry.source.clone()),
            Err(problem) => problems.push(problem),
        }
    }

    let names = |key: &str| match root.get(key) {
        Some(Value::Dict(_, dict)) => dict.keys().cloned().collect(),
        _ => std::collections::BTreeSet::new(),
    };
    let declared = validate::Declared {
        providers: names("providers"),
        targets: names("targets"),
    };
    let mut failed = Vec::new();
    let settings = Typer {
        root: &mut root,
        provenance: &provenance,
        problems: &mut problems,
        failed: &mut failed,
    }
    .settings();
    // Semantic rules run even after type problems, except on the parts that failed to
    // type (they hold defaults, whose problems would be noise).
    let mut semantic = Vec::new();
    validate::validate(&settings, &declared, &mut semantic);
    validate::combinations(&settings, &provenance, &mut semantic);
    problems.extend(semantic.into_iter().filter(|problem| {
        !failed
            .iter()
            .any(|f| problem.key == *f || problem.key.starts_with(&format!("{f}.")))
    }));
    if !problems.is_empty() {
        let dotenv_text = std::fs::read_to_string(project_dir.join(DOTENV_NAME))
            .unwrap_or_default()
            .replace('\u{feff}', "");
        for problem in &mut problems {
            name_source(problem, &provenance, env, &dotenv_text);
        }
        return Err(ConfigError::Invalid { path, problems });
    }
    let warnings = validate::warnings(&settings, &provenance);
    let env = env.with_fallbacks(dotenv.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    Ok(Loaded {
        settings,
        provenance,
        warnings,
        env,
        path,
    })
}

/// Appends where `problem` comes from: the variable (and the `.env` line) that set its key,
/// or `overbrainer.toml` for keys of the file and missing ones. A problem keyed by a
/// variable names `.env` (with the line) or the environment.
fn name_source(problem: &mut Problem, provenance: &Provenance, env: &EnvSnapshot, dotenv: &str) {
    let in_dotenv = |var: &str| match dotenv_line(dotenv, var) {
        Some(line) => format!("in `{DOTENV_NAME}` line {line}"),
        None => format!("in `{DOTENV_NAME}`"),
    };
    let place = if problem.key.starts_with(super::env::PREFIX) {
        if env.get(&problem.key).is_some() {
            "in the environment".to_owned()
        } else {
            in_dotenv(&problem.key)
        }
    } else {
        match provenance.source(&problem.key) {
            Source::Env { var } => format!("set by `{var}`"),
            Source::DotEnv { var } => format!("set by `{var}` {}", in_dotenv(var)),
            Source::File | Source::Default if problem.message.contains(FILE_NAME) => return,
            Source::File | Source::Default => format!("in `{FILE_NAME}`"),
        }
    };
    problem.message = format!("{} ({place})", problem.message);
}

/// The 1-based line of `.env` text that assigns `var` (the last one, as it wins).
fn dotenv_line(text: &str, var: &str) -> Option<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let line = line.trim_start();
            let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
            line.strip_prefix(var)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|(i, _)| i + 1)
        .last()
}

/// The `KEY=value` pairs of the project's `.env`, empty when it is absent (ENV-3).
///
/// # Errors
///
/// When `.env` exists but cannot be read or parsed (the line number only, ENV-4).
pub fn dotenv_pairs(project_dir: &Path) -> Result<Vec<(String, String)>, ConfigError> {
    layers::read_dotenv(&project_dir.join(DOTENV_NAME))
}

/// Most conversions of one section before giving up (one per variable in practice).
const MAX_CONVERSIONS: usize = 256;

struct Typer<'a> {
    root: &'a mut Dict,
    provenance: &'a Provenance,
    problems: &'a mut Vec<Problem>,
    /// Dotted paths whose value failed to type.
    failed: &'a mut Vec<String>,
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
    fn settings(&mut self) -> Settings {
        let mut settings = Settings::default();
        let known = [
            "project",
            "topics",
            "providers",
            "roles",
            "pipeline",
            "training",
            "targets",
            "export",
            "hub",
            "compare",
            "metrics",
            "runpod",
            "hf_token",
            "ssh_client",
            "log",
        ];
        let unknown: Vec<String> = self
            .root
            .keys()
            .filter(|k| !known.contains(&k.as_str()))
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

    fn topics(&mut self) -> Vec<super::types::Topic> {
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
        let kinds = "expected one of `local`, `ssh`, `runpod`";
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

enum Expected {
    Unsigned,
    Signed,
    Float,
    Bool,
    Other,
}

fn expected_kind(expected: &str) -> Expected {
    match expected {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => Expected::Unsigned,
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => Expected::Signed,
        "f32" | "f64" => Expected::Float,
        "a boolean" => Expected::Bool,
        _ => Expected::Other,
    }
}

/// Words for serde's expectation strings, never a value.
fn expected_words(expected: &str) -> String {
    match expected_kind(expected) {
        Expected::Unsigned => "a non-negative integer".to_owned(),
        Expected::Signed => "an integer".to_owned(),
        Expected::Float => "a number".to_owned(),
        Expected::Bool => "a boolean (`true` or `false`)".to_owned(),
        Expected::Other => match expected {
            "a string" | "a borrowed string" => "a string".to_owned(),
            "a sequence" => "a list".to_owned(),
            e if e.starts_with("struct ") || e == "a map" || e.contains("map") => {
                "a table".to_owned()
            }
            e => e.to_owned(),
        },
    }
}

fn actual_words(actual: &Actual) -> &'static str {
    match actual {
        Actual::Bool(_) => "a boolean",
        Actual::Unsigned(_) | Actual::Signed(_) => "an integer",
        Actual::Float(_) => "a float",
        Actual::Char(_) | Actual::Str(_) => "a string",
        Actual::Seq => "a list",
        Actual::Map => "a table",
        _ => "another type",
    }
}

/// A problem for a deserialization error at `path`, without the value (CFG-2).
fn describe(mut path: Vec<String>, kind: &Kind) -> Problem {
    let message = match kind {
        Kind::InvalidType(actual, expected) => format!(
            "wrong type: expected {}, found {}",
            expected_words(expected),
            actual_words(actual)
        ),
        Kind::InvalidValue(_, expected) => {
            format!("invalid value: expected {}", range_words(expected))
        }
        Kind::InvalidLength(_, expected) => format!("wrong number of items: expected {expected}"),
        Kind::UnknownVariant(_, variants) => format!(
            "invalid value: expected one of {}",
            variants
                .iter()
                .map(|v| format!("`{v}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Kind::UnknownField(field, _)
            if field == "host" && path.len() == 3 && path[0] == "targets" =>
        {
            "`host` is only for ssh targets (`kind = \"ssh\"`)".to_owned()
        }
        Kind::UnknownField(_, _) => "unknown field: not a known key here".to_owned(),
        Kind::MissingField(name) => {
            path.push(name.to_string());
            "missing required key".to_owned()
        }
        Kind::DuplicateField(name) => {
            path.push((*name).to_owned());
            "set twice".to_owned()
        }
        Kind::Message(message) if message.contains("untagged enum ListOrAuto") => {
            "wrong type: expected a list of strings or `\"auto\"`".to_owned()
        }
        Kind::Message(message) if message.starts_with("invalid vault reference") => message.clone(),
        _ => "invalid value".to_owned(),
    };
    // `load` appends the source (the variable or the file) to every problem.
    Problem::new(path.join("."), message)
}

fn range_words(expected: &str) -> String {
    match expected {
        "u8" => "an integer from 0 to 255".to_owned(),
        "u16" => "an integer from 0 to 65535".to_owned(),
        "u32" => "an integer from 0 to 4294967295".to_owned(),
        "u64" | "usize" => "a non-negative integer".to_owned(),
        other => expected_words(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::types::{ListOrAuto, SshClient};

    const SECRET: &str = "sk-unit-3e9f0d";

    fn project(config: &str, dotenv: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), config).unwrap();
        if let Some(text) = dotenv {
            std::fs::write(dir.path().join(DOTENV_NAME), text).unwrap();
        }
        dir
    }

    fn env(pairs: &[(&str, &str)]) -> EnvSnapshot {
        EnvSnapshot::from_pairs(pairs.iter().copied())
    }

    const RUNPOD: &str = "[project]\nname = \"p\"\n\n[targets.gpu]\nkind = \"runpod\"\ngpu_types = [\"A\"]\nmax_hours = 1\n\n[targets.box]\nkind = \"ssh\"\n\n[providers.p]\nprotocol = \"openai\"\n";

    #[test]
    fn layers_apply_in_order_and_record_their_source() {
        let dir = project(
            RUNPOD,
            Some(
                "OVERBRAINER_TARGETS__GPU__MAX_HOURS=2\nOVERBRAINER_TARGETS__GPU__GPU_TYPES=auto\nOVERBRAINER_SSH_CLIENT=builtin\n",
            ),
        );
        let loaded = load(
            dir.path(),
            &env(&[
                ("OVERBRAINER_TARGETS__GPU__MAX_HOURS", "3.5"),
                ("OVERBRAINER_TARGETS__GPU__DATA_CENTER_IDS", "EU-1, US-2"),
                ("OVERBRAINER_PROVIDERS__P__API_KEY", SECRET),
                ("OVERBRAINER_TARGETS__BOX__HOST", "me@box"),
            ]),
        )
        .unwrap();
        let Some(Target::Runpod(gpu)) = loaded.settings.targets.get("gpu") else {
            panic!("no runpod target");
        };
        assert!((gpu.max_hours - 3.5).abs() < f64::EPSILON);
        assert_eq!(gpu.gpu_types, ListOrAuto::Auto("auto".to_owned()));
        assert_eq!(
            gpu.data_center_ids,
            Some(ListOrAuto::List(vec!["EU-1".to_owned(), "US-2".to_owned()]))
        );
        assert_eq!(loaded.settings.ssh_client, Some(SshClient::Builtin));
        assert_eq!(
            loaded.source("targets.gpu.max_hours"),
            &Source::Env {
                var: "OVERBRAINER_TARGETS__GPU__MAX_HOURS".to_owned()
            }
        );
        assert_eq!(
            loaded.source("targets.gpu.gpu_types"),
            &Source::DotEnv {
                var: "OVERBRAINER_TARGETS__GPU__GPU_TYPES".to_owned()
            }
        );
        assert_eq!(loaded.source("project.name"), &Source::File);
        assert_eq!(loaded.source("pipeline.seed"), &Source::Default);
        assert_eq!(loaded.env.get("OVERBRAINER_SSH_CLIENT"), Some("builtin"));
        // Nothing of the secret in any Debug output.
        assert!(!format!("{loaded:?}").contains(SECRET));
    }

    #[test]
    fn every_problem_of_a_section_is_reported() {
        let dir = project(
            "[project]\nname = \"p\"\n\n[pipeline]\nconcurrency = \"x\"\nseed = -1\nnope = 1\n",
            None,
        );
        let ConfigError::Invalid { problems, .. } = load(dir.path(), &env(&[])).unwrap_err() else {
            panic!("not invalid");
        };
        let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys.len(), 3, "{problems:?}");
        for key in ["pipeline.concurrency", "pipeline.seed", "pipeline.nope"] {
            assert!(keys.contains(&key), "{key} not in {keys:?}");
        }
    }

    #[test]
    fn semantic_problems_are_reported_beside_type_problems_without_noise() {
        let dir = project(
            "[project]\nname = 5\n\n[[topics]]\nname = \"t\"\nsubtopics = 0\nquestions_per_subtopic = 1\n\n[providers.p]\nprotocol = \"nope\"\n\n[roles]\ngenerator = { provider = \"p\", model = \"m\" }\nparent = { provider = \"q\", model = \"m\" }\n",
            None,
        );
        let ConfigError::Invalid { problems, .. } = load(dir.path(), &env(&[])).unwrap_err() else {
            panic!("not invalid");
        };
        let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "project.name",
                "providers.p.protocol",
                "topics.0.subtopics",
                "roles.parent.provider"
            ],
            "{problems:?}"
        );
        assert!(problems[0].message.starts_with("wrong type"));
    }

    #[test]
    fn every_missing_key_of_a_table_and_range_errors_beside_type_errors_are_reported() {
        let dir = project(
            "[project]\nname = \"p\"\n\n[[topics]]\nname = \"t\"\n\n[providers.p]\nprotocol = \"openai\"\n\n[roles]\ngenerator = { }\nparent = { provider = \"p\", model = \"m\" }\n\n[pipeline]\nconcurrency = 0\nseed = \"x\"\n",
            None,
        );
        let ConfigError::Invalid { problems, .. } = load(dir.path(), &env(&[])).unwrap_err() else {
            panic!("not invalid");
        };
        let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
        for key in [
            "topics.0.subtopics",
            "topics.0.questions_per_subtopic",
            "roles.generator.provider",
            "roles.generator.model",
            "pipeline.seed",
            "pipeline.concurrency",
        ] {
            assert_eq!(
                keys.iter().filter(|k| **k == key).count(),
                1,
                "{key}: {problems:?}"
            );
        }
        assert_eq!(keys.len(), 6, "{problems:?}");
        // A type error still suppresses the rules of its own key.
        let dir = project(
            "[project]\nname = \"p\"\n\n[pipeline]\nconcurrency = \"x\"\n",
            None,
        );
        let ConfigError::Invalid { problems, .. } = load(dir.path(), &env(&[])).unwrap_err() else {
            panic!("not invalid");
        };
        assert_eq!(problems.len(), 1, "{problems:?}");
    }

    #[test]
    fn urls_are_checked_and_http_is_only_for_loopback_where_required() {
        let base = "[project]\nname = \"p\"\n";
        let dir = project(base, None);
        let check = |pairs: &[(&str, &str)]| load(dir.path(), &env(pairs)).map(|_| ());
        check(&[("OVERBRAINER_HUB__BASE_URL", "http://127.0.0.1:9000")]).unwrap();
        check(&[("OVERBRAINER_RUNPOD__BASE_URL", "http://[::1]:9000/v2")]).unwrap();
        check(&[("OVERBRAINER_RUNPOD__BASE_URL", "https://api.runpod.io/v2")]).unwrap();
        assert!(check(&[("OVERBRAINER_HUB__BASE_URL", "http://hub.example")]).is_err());
        assert!(check(&[("OVERBRAINER_RUNPOD__BASE_URL", "not a url")]).is_err());
        assert!(check(&[("OVERBRAINER_LOG", "overbrainer=loud")]).is_err());
        assert!(check(&[("OVERBRAINER_TOPICS__0__NAME", "x")]).is_err());
    }
}

//! Loading: the layered tree (see `layers`) typed into [`Settings`] (see `typer`), then
//! every section's rules and the [`Rules`] of the layers above, with every problem
//! reported at once and named by its source (CFG-1..CFG-4).

use std::path::{Path, PathBuf};

use figment::value::Value;

use super::error::{ConfigError, Problem};
use super::layers;
use super::provenance::{self, Provenance, Source};
use super::rules::Declared;
use super::settings::{self, Settings};
use super::typer::Typer;
use crate::env::EnvSnapshot;

/// The settings file's name in the project directory.
pub const FILE_NAME: &str = "overbrainer.toml";
/// The optional environment file in the project directory.
pub const DOTENV_NAME: &str = ".env";

/// A rule that a layer above adds to loading: it sees the typed settings and where each
/// value came from, and adds its problems beside the sections' own, so they are reported,
/// named by their source, and filtered as theirs are. `config` knows the shape of its
/// keys, not what the tools it feeds accept: Axolotl's refusals are `train::rules::check`,
/// which `check::load` passes.
pub type Rules = fn(&Settings, &Provenance, &mut Vec<Problem>);

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
/// `env`, over the built-in defaults (ENV-2). `rules` runs after the sections' own rules.
///
/// # Errors
///
/// [`ConfigError::NotFound`] without `overbrainer.toml`; read and syntax errors of either
/// file; [`ConfigError::Invalid`] listing every problem, each naming its key.
pub fn load(project_dir: &Path, env: &EnvSnapshot, rules: Rules) -> Result<Loaded, ConfigError> {
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
    load_text(project_dir, &text, env, rules)
}

/// Loads and validates the configuration of the project in `project_dir` as [`load`]
/// does, with `text` in place of its `overbrainer.toml` (an edit checked before it is
/// written, TUI-14); `.env` and `env` are read as [`load`] reads them.
///
/// # Errors
///
/// As [`load`], except [`ConfigError::NotFound`].
pub fn load_text(
    project_dir: &Path,
    text: &str,
    env: &EnvSnapshot,
    rules: Rules,
) -> Result<Loaded, ConfigError> {
    let path = project_dir.join(FILE_NAME);
    let file = layers::parse_file(&path, text)?;
    let dotenv = layers::read_dotenv(&project_dir.join(DOTENV_NAME))?;

    let mut problems = Vec::new();
    let mut provenance = Provenance::default();
    layers::check_env_only(&file, &mut problems);
    for (key, value) in &file {
        provenance::record(&mut provenance, key, value, &Source::File);
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
    let declared = Declared {
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
    settings::validate(&settings, &declared, &mut semantic);
    rules(&settings, &provenance, &mut semantic);
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
    let warnings = settings::warnings(&settings, &provenance);
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
    let of_key = |key: &str| match provenance.source(key) {
        Source::Env { var } => format!("set by `{var}`"),
        Source::DotEnv { var } => format!("set by `{var}` {}", in_dotenv(var)),
        Source::File | Source::Default => format!("in `{FILE_NAME}`"),
    };
    if let Some(other) = problem.other.clone() {
        // Two keys, each from its own layer: name both.
        problem.message = format!(
            "{} (`{}` {}; `{other}` {})",
            problem.message,
            problem.key,
            of_key(&problem.key),
            of_key(&other)
        );
        return;
    }
    let place = if problem.key.starts_with(layers::PREFIX) {
        if env.get(&problem.key).is_some() {
            "in the environment".to_owned()
        } else {
            in_dotenv(&problem.key)
        }
    } else {
        match provenance.source(&problem.key) {
            Source::File | Source::Default if problem.message.contains(FILE_NAME) => return,
            _ => of_key(&problem.key),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ListOrAuto, SshClient, Target};

    const SECRET: &str = "sk-unit-Q7vX2mK9pL4wR8tZ3nB6";

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

    /// Loads with the sections' rules alone (the rules from above are theirs to test).
    fn load(dir: &Path, env: &EnvSnapshot) -> Result<Loaded, ConfigError> {
        super::load(dir, env, |_, _, _| {})
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
    fn config_check_notes_that_runpod_auto_without_min_vram_gb_takes_the_estimate() {
        let dir = project(RUNPOD, None);
        let with = |extra: &[(&str, &str)]| {
            let mut pairs = vec![
                ("OVERBRAINER_TARGETS__GPU__GPU_TYPES", "auto"),
                ("OVERBRAINER_TARGETS__GPU__DATA_CENTER_IDS", "auto"),
                ("OVERBRAINER_RUNPOD__API_KEY", SECRET),
            ];
            pairs.extend_from_slice(extra);
            let loaded = load(dir.path(), &env(&pairs)).unwrap();
            crate::config::readiness_warnings(&loaded.settings.targets, &loaded.settings.runpod)
        };
        let warnings = with(&[]);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("`targets.gpu.gpu_types = \"auto\"` without `min_vram_gb`"),
            "{warnings:?}"
        );
        assert!(!warnings.concat().contains(SECRET));
        // A floor given: nothing to say; automatic data centers need no note.
        assert_eq!(
            with(&[("OVERBRAINER_TARGETS__GPU__MIN_VRAM_GB", "24")]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn config_check_warns_naming_the_runpod_key_variable_when_a_runpod_target_lacks_it() {
        let dir = project(RUNPOD, None);
        let missing = load(dir.path(), &env(&[])).unwrap();
        let warnings =
            crate::config::readiness_warnings(&missing.settings.targets, &missing.settings.runpod);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("`OVERBRAINER_RUNPOD__API_KEY` is not set")
                && warnings[0].contains("`gpu`"),
            "{warnings:?}"
        );
        // A listed GPU type and a set key: nothing to note.
        let ready = load(dir.path(), &env(&[("OVERBRAINER_RUNPOD__API_KEY", SECRET)])).unwrap();
        let warnings =
            crate::config::readiness_warnings(&ready.settings.targets, &ready.settings.runpod);
        assert!(warnings.is_empty(), "{warnings:?}");
        // No Runpod target: the key is not needed.
        let local = project("[project]\nname = \"p\"\n", None);
        let none = load(local.path(), &env(&[])).unwrap();
        assert!(
            crate::config::readiness_warnings(&none.settings.targets, &none.settings.runpod)
                .is_empty()
        );
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

//! The layers of the configuration and where each value came from (ENV-1..ENV-9).
//!
//! `overbrainer.toml` is parsed into a tree; `.env` and then the process environment are
//! laid over it, `OVERBRAINER_A__B_C` setting key `a.b_c`. Values from the environment stay
//! text here (except under `training.axolotl_extra` and the list keys, typed by ENV-9 and
//! ENV-6); [`crate::config`] converts each one to the type its key expects. Every leaf's
//! source is recorded for `config check` and the TUI.

use std::path::Path;

use figment::value::{Dict, Value};

use super::error::{ConfigError, Problem};
use super::provenance::Source;
use super::rules::valid_name;
use super::settings::SECTIONS;
use crate::env::EnvSnapshot;

/// The prefix of every variable that sets a configuration key (ENV-1).
pub const PREFIX: &str = "OVERBRAINER_";

/// Variables under the prefix that never map to keys (ENV-5). `OVERBRAINER_OLLAMA__BASE_URL`
/// is an Ollama server for export's REST route when `ollama` is not on `PATH` (issue 14,
/// read by `export::ollama`).
fn exempt(name: &str) -> bool {
    name == "OVERBRAINER_TUI_COLOR"
        || name == "OVERBRAINER_TUI_MOTION"
        || name == "OVERBRAINER_OLLAMA__BASE_URL"
        || name.starts_with("OVERBRAINER_TEST_")
}

/// Parses `overbrainer.toml` text into a tree.
///
/// # Errors
///
/// [`ConfigError::Syntax`] with the position only.
pub(crate) fn parse_file(path: &Path, text: &str) -> Result<Dict, ConfigError> {
    match text.parse::<toml::Table>() {
        Ok(table) => Ok(table.into_iter().map(|(k, v)| (k, from_toml(v))).collect()),
        Err(error) => {
            let offset = error.span().map_or(0, |span| span.start);
            let (line, column) = line_column(text, offset);
            Err(ConfigError::Syntax {
                path: path.to_owned(),
                line,
                column,
            })
        }
    }
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit_once('\n')
        .map_or(before, |(_, last)| last)
        .chars()
        .count()
        + 1;
    (line, column)
}

fn from_toml(value: toml::Value) -> Value {
    match value {
        toml::Value::String(s) => Value::from(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) => Value::from(f),
        toml::Value::Boolean(b) => Value::from(b),
        toml::Value::Datetime(d) => Value::from(d.to_string()),
        toml::Value::Array(items) => {
            Value::from(items.into_iter().map(from_toml).collect::<Vec<_>>())
        }
        toml::Value::Table(table) => Value::from(
            table
                .into_iter()
                .map(|(k, v)| (k, from_toml(v)))
                .collect::<Dict>(),
        ),
    }
}

/// Keys accepted only from the environment (ENV-7), as a dotted key pattern check.
pub(crate) fn env_only(path: &[&str]) -> bool {
    matches!(
        path,
        ["providers", _, "base_url" | "api_key"]
            | ["targets", _, "host"]
            | ["runpod", _, ..]
            | ["hf_token" | "ssh_client" | "log"]
            | ["hub", "base_url"]
    )
}

/// The variable that sets `path` (ENV-1), for messages.
#[must_use]
pub fn var_name(path: &[&str]) -> String {
    let joined: Vec<String> = path.iter().map(|s| s.to_uppercase()).collect();
    format!("{PREFIX}{}", joined.join("__"))
}

/// Reports every env-only key that `overbrainer.toml` sets (ENV-7). `host` under a target
/// that is not an ssh target is reported as such: no variable would make it valid.
pub(crate) fn check_env_only(file: &Dict, problems: &mut Vec<Problem>) {
    fn walk(file: &Dict, path: &mut Vec<String>, value: &Value, problems: &mut Vec<Problem>) {
        let refs: Vec<&str> = path.iter().map(String::as_str).collect();
        if let ["targets", name, "host"] = refs.as_slice() {
            let kind = file
                .get("targets")
                .and_then(|targets| targets.find_ref(&format!("{name}.kind")))
                .and_then(Value::as_str);
            if kind != Some("ssh") && kind != Some("slurm") {
                problems.push(Problem::new(
                    refs.join("."),
                    "`host` is only for ssh targets (`kind = \"ssh\"`); remove it here",
                ));
                return;
            }
        }
        if env_only(&refs) {
            problems.push(Problem::new(
                refs.join("."),
                format!(
                    "may only be set in the environment or `.env` (`{}`), never in `overbrainer.toml`",
                    var_name(&refs)
                ),
            ));
            return;
        }
        if let Value::Dict(_, dict) = value {
            for (k, v) in dict {
                path.push(k.clone());
                walk(file, path, v, problems);
                path.pop();
            }
        }
    }
    for (k, v) in file {
        walk(file, &mut vec![k.clone()], v, problems);
    }
}

/// Reads `.env` when present: its `KEY=value` pairs in file order (ENV-3, ENV-4).
///
/// # Errors
///
/// [`ConfigError::DotEnvRead`] when it exists but cannot be read;
/// [`ConfigError::DotEnvSyntax`] naming only the line of a syntax error.
pub(crate) fn read_dotenv(path: &Path) -> Result<Vec<(String, String)>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(ConfigError::DotEnvRead {
                path: path.to_owned(),
                source,
            });
        }
    };
    // A UTF-8 byte order mark is skipped, as the TOML loader does.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut pairs = Vec::new();
    for item in dotenvy::from_read_iter(text.as_bytes()) {
        match item {
            Ok(pair) => pairs.push(pair),
            Err(dotenvy::Error::LineParse(part, _)) => {
                return Err(ConfigError::DotEnvSyntax {
                    path: path.to_owned(),
                    line: error_line(text, &part),
                });
            }
            Err(_) => {
                return Err(ConfigError::DotEnvSyntax {
                    path: path.to_owned(),
                    line: None,
                });
            }
        }
    }
    Ok(pairs)
}

/// The 1-based line of `text` a dotenvy parse error is about. The error carries either the
/// (first) line it failed on or only the value part after `=` (an unclosed `${` or quote),
/// never a position in the file, so the line is found by its text.
fn error_line(text: &str, part: &str) -> Option<usize> {
    let first = part.lines().next().unwrap_or_default().trim_end();
    text.lines()
        .position(|l| {
            let l = l.trim_end();
            l == first
                || (!first.is_empty() && l.starts_with(first))
                || (!first.is_empty()
                    && l.split_once('=')
                        .is_some_and(|(_, value)| value.trim_start().starts_with(first)))
        })
        .map(|i| i + 1)
}

/// One variable that sets a key.
pub(crate) struct EnvEntry {
    pub var: String,
    pub path: Vec<String>,
    pub value: String,
    pub source: Source,
}

/// Maps the `OVERBRAINER_*` variables of `.env` and then of the process to keys; unknown
/// top-level names become problems (ENV-5).
pub(crate) fn env_entries(
    dotenv: &[(String, String)],
    env: &EnvSnapshot,
    problems: &mut Vec<Problem>,
) -> Vec<EnvEntry> {
    let dotenv = dotenv
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str(), Source::DotEnv { var: k.clone() }));
    let process = env
        .iter()
        .map(|(k, v)| (k, v, Source::Env { var: k.to_owned() }));
    let mut entries = Vec::new();
    for (var, value, source) in dotenv.chain(process) {
        let Some(rest) = var.strip_prefix(PREFIX) else {
            continue;
        };
        if exempt(var) {
            continue;
        }
        let path: Vec<String> = rest.split("__").map(str::to_lowercase).collect();
        let known = path
            .first()
            .is_some_and(|top| SECTIONS.contains(&top.as_str()));
        if !known || path.iter().any(String::is_empty) {
            problems.push(Problem::new(
                var,
                "unknown field: this variable does not map to a configuration key",
            ));
            continue;
        }
        entries.push(EnvEntry {
            var: var.to_owned(),
            path,
            value: value.to_owned(),
            source,
        });
    }
    entries
}

/// The value a variable gives its key before conversion: ENV-9 typing under
/// `training.axolotl_extra`, comma lists for `gpu_types`/`data_center_ids` (ENV-6), text
/// elsewhere.
pub(crate) fn env_value(path: &[String], raw: &str) -> Value {
    match path {
        [training, extra, _, ..] if training == "training" && extra == "axolotl_extra" => {
            extra_value(raw)
        }
        [targets, _, key]
            if targets == "targets" && (key == "gpu_types" || key == "data_center_ids") =>
        {
            if raw.trim() == "auto" {
                Value::from("auto")
            } else {
                Value::from(
                    raw.split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(Value::from)
                        .collect::<Vec<_>>(),
                )
            }
        }
        _ => Value::from(raw.to_owned()),
    }
}

/// ENV-9: `true`/`false` are booleans, a canonical decimal integer that fits 64 bits an
/// integer, a decimal number a float; anything else (`012`, `+5`, an integer out of range)
/// stays text.
#[must_use]
pub fn extra_value(raw: &str) -> Value {
    match raw {
        "true" => return Value::from(true),
        "false" => return Value::from(false),
        _ => {}
    }
    let digits = raw.strip_prefix('-').unwrap_or(raw);
    let canonical_int = |s: &str| {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))
    };
    if canonical_int(digits) {
        return raw
            .parse::<i64>()
            .map_or_else(|_| Value::from(raw.to_owned()), Value::from);
    }
    // A decimal number: canonical integer part, then a fraction and/or an exponent.
    let (mantissa, exponent) = match digits.find(['e', 'E']) {
        Some(i) => (&digits[..i], Some(&digits[i + 1..])),
        None => (digits, None),
    };
    let (int_part, fraction) = match mantissa.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (mantissa, None),
    };
    let fraction_ok =
        fraction.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()));
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit())
    });
    if canonical_int(int_part)
        && (fraction.is_some() || exponent.is_some())
        && fraction_ok
        && exponent_ok
    {
        if let Ok(number) = raw.parse::<f64>() {
            if number.is_finite() {
                return Value::from(number);
            }
        }
    }
    Value::from(raw.to_owned())
}

/// Lays one variable's value over the tree at its path.
///
/// # Errors
///
/// A problem naming the variable when the path crosses a value that is not a table, names
/// a topic index that does not exist, or names a provider or target that
/// `overbrainer.toml` does not declare.
pub(crate) fn apply(root: &mut Dict, file: &Dict, entry: &EnvEntry) -> Result<(), Problem> {
    let path = &entry.path;
    if let [section, name, ..] = path.as_slice() {
        if section == "providers" || section == "targets" {
            let declared =
                matches!(file.get(section), Some(Value::Dict(_, d)) if d.contains_key(name));
            if !declared {
                let kind = if section == "providers" {
                    "provider"
                } else {
                    "target"
                };
                let fix = if valid_name(name) {
                    format!("add `[{section}.{name}]`")
                } else {
                    // `[providers.my-p]` would be refused in turn (ENV-8).
                    format!(
                        "{kind} names use only lowercase letters, digits and `_` (ENV-8), so no {kind} can be set by this variable"
                    )
                };
                return Err(Problem::new(
                    &entry.var,
                    format!(
                        "names {kind} `{name}`, which `overbrainer.toml` does not declare; {fix}"
                    ),
                ));
            }
        }
    }
    let value = env_value(path, &entry.value);
    let not_table = |depth: usize| {
        Problem::new(
            &entry.var,
            format!("`{}` is not a table", path[..depth].join(".")),
        )
    };
    let Some((last, parents)) = path.split_last() else {
        return Err(not_table(0));
    };
    let mut dict = root;
    for (depth, segment) in parents.iter().enumerate() {
        let slot = dict
            .entry(segment.clone())
            .or_insert_with(|| Value::from(Dict::new()));
        dict = match slot {
            Value::Dict(_, inner) => inner,
            Value::Array(_, items) => {
                // `[[topics]]`: an array of tables has no variable form.
                return Err(Problem::new(
                    &entry.var,
                    format!(
                        "`{}` is a list of {} entries and cannot be set through the environment; edit `overbrainer.toml`",
                        path[..=depth].join("."),
                        items.len()
                    ),
                ));
            }
            _ => return Err(not_table(depth + 1)),
        };
    }
    dict.insert(last.clone(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn dotenv_errors_in_a_value_name_their_line_and_a_bom_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".env");
        for (text, line) in [
            ("A=1\nB=2\nC=${x\n", 3),
            ("A=1\nC=\"open\nD=4\n", 2),
            ("A=1\n\nbad line here\n", 3),
            ("\u{feff}A=1\nC=${x\n", 2),
        ] {
            std::fs::write(&path, text).unwrap();
            match super::read_dotenv(&path) {
                Err(ConfigError::DotEnvSyntax { line: found, .. }) => {
                    assert_eq!(found, Some(line), "{text:?}");
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
        std::fs::write(&path, "\u{feff}OVERBRAINER_A=1\n").unwrap();
        assert_eq!(
            super::read_dotenv(&path).unwrap(),
            [("OVERBRAINER_A".to_owned(), "1".to_owned())]
        );
    }

    use super::*;

    fn kind(value: &Value) -> String {
        match value {
            Value::String(_, s) => format!("str {s}"),
            Value::Bool(_, b) => format!("bool {b}"),
            Value::Num(_, figment::value::Num::I64(i)) => format!("int {i}"),
            Value::Num(_, figment::value::Num::F64(f)) => format!("float {f}"),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn extra_values_are_typed_as_env_9_says() {
        let cases = [
            ("true", "bool true"),
            ("false", "bool false"),
            ("True", "str True"),
            ("12", "int 12"),
            ("-3", "int -3"),
            ("0", "int 0"),
            ("012", "str 012"),
            ("+5", "str +5"),
            ("99999999999999999999", "str 99999999999999999999"),
            ("9223372036854775807", "int 9223372036854775807"),
            ("0.5", "float 0.5"),
            ("2e-4", "float 0.0002"),
            ("-1.5E3", "float -1500"),
            ("1.", "str 1."),
            (".5", "str .5"),
            ("01.5", "str 01.5"),
            ("nan", "str nan"),
            ("inf", "str inf"),
            ("1e999", "str 1e999"),
            ("adamw", "str adamw"),
            ("", "str "),
        ];
        for (raw, expected) in cases {
            assert_eq!(kind(&extra_value(raw)), expected, "{raw}");
        }
    }

    #[test]
    fn syntax_errors_give_line_and_column() {
        let text = "[project]\nname = \"x\"\nbad line here\n";
        let error = parse_file(Path::new("overbrainer.toml"), text).unwrap_err();
        let ConfigError::Syntax { line, column, .. } = error else {
            panic!("{error:?}");
        };
        assert_eq!((line, column), (3, 5));
    }
}

//! A small YAML emitter whose output Python's PyYAML (YAML 1.1) reads back to exactly
//! the values we meant (spec/training.md, AXO-1).
//!
//! Why our own: the serde YAML crates (`serde_yaml` and its forks `serde_norway`,
//! `serde_yaml_ng`) emit YAML 1.2, where `yes`, `on`, `y`, `NO`, `1_000`, `1:30`, `=`,
//! `<<` and `2024-01-01` are plain strings; PyYAML reads them as booleans, integers,
//! sexagesimal numbers, value keys, merge keys and dates. They also write `1e-7`, which
//! PyYAML reads as a string (its float pattern needs a dot and a signed exponent), and
//! break strings on line breaks into block scalars. Tried with those crates on
//! 2026-11-30; PyYAML's resolver patterns are in `yaml/resolver.py` of PyYAML 6.
//!
//! The rules here are few and conservative:
//! - a string is written plain only when it starts with an ASCII letter, holds only
//!   ASCII letters, digits and `_ . / -`, and is not one of YAML 1.1's boolean or null
//!   words; every other string is double-quoted, with `\\`, `\"`, every control
//!   character, the YAML line breaks U+0085, U+2028, U+2029, the C1 controls and
//!   U+FEFF, U+FFFE, U+FFFF escaped;
//! - a float always has a dot and never an exponent (Rust's shortest round-trip
//!   decimal), or is `.nan`, `.inf`, `-.inf`;
//! - mappings and sequences are block style, empty ones `{}` and `[]`.

use std::fmt::Write as _;

/// A YAML value with the order of mapping keys kept as inserted.
#[derive(Debug, Clone, PartialEq)]
pub enum Yaml {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A 64-bit integer.
    Int(i64),
    /// A 64-bit float (NaN and infinities included).
    Float(f64),
    /// A string.
    Str(String),
    /// A sequence.
    Seq(Vec<Yaml>),
    /// A mapping from string keys, in insertion order.
    Map(Mapping),
}

/// A mapping from string keys to values, in insertion order, keys unique.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mapping {
    entries: Vec<(String, Yaml)>,
}

impl Mapping {
    /// An empty mapping.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` to `value`: in place when the key exists, else at the end.
    pub fn insert(&mut self, key: impl Into<String>, value: Yaml) {
        let key = key.into();
        if let Some(entry) = self.entries.iter_mut().find(|(k, _)| *k == key) {
            entry.1 = value;
        } else {
            self.entries.push((key, value));
        }
    }

    /// The value of `key`, if present.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Yaml> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The value of `key` for changing, if present.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Yaml> {
        self.entries
            .iter_mut()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// Removes `key` and returns its value, if present.
    pub fn remove(&mut self, key: &str) -> Option<Yaml> {
        let index = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(index).1)
    }

    /// Whether `key` is present.
    #[must_use]
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The entries, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Yaml)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no entry.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Merges `other` into this mapping: where both hold a mapping under the same key
    /// they merge key by key, recursively; any other value of `other` replaces ours
    /// (AXO-3).
    pub fn merge(&mut self, other: Mapping) {
        for (key, value) in other.entries {
            match (self.get_mut(&key), value) {
                (Some(Yaml::Map(ours)), Yaml::Map(theirs)) => ours.merge(theirs),
                (_, value) => self.insert(key, value),
            }
        }
    }
}

impl FromIterator<(String, Yaml)> for Mapping {
    fn from_iter<I: IntoIterator<Item = (String, Yaml)>>(iter: I) -> Self {
        let mut mapping = Self::new();
        for (key, value) in iter {
            mapping.insert(key, value);
        }
        mapping
    }
}

impl From<&str> for Yaml {
    fn from(value: &str) -> Self {
        Self::Str(value.to_owned())
    }
}

impl From<String> for Yaml {
    fn from(value: String) -> Self {
        Self::Str(value)
    }
}

impl From<bool> for Yaml {
    fn from(value: bool) -> Self {
        Self::Bool(value)
    }
}

impl From<i64> for Yaml {
    fn from(value: i64) -> Self {
        Self::Int(value)
    }
}

impl From<u32> for Yaml {
    fn from(value: u32) -> Self {
        Self::Int(i64::from(value))
    }
}

impl From<f64> for Yaml {
    fn from(value: f64) -> Self {
        Self::Float(value)
    }
}

impl From<Mapping> for Yaml {
    fn from(value: Mapping) -> Self {
        Self::Map(value)
    }
}

impl From<&toml::Value> for Yaml {
    /// TOML values keep their types (AXO-8); a TOML date-time becomes its RFC 3339
    /// text, a string.
    fn from(value: &toml::Value) -> Self {
        match value {
            toml::Value::String(s) => Self::Str(s.clone()),
            toml::Value::Integer(i) => Self::Int(*i),
            toml::Value::Float(f) => Self::Float(*f),
            toml::Value::Boolean(b) => Self::Bool(*b),
            toml::Value::Datetime(d) => Self::Str(d.to_string()),
            toml::Value::Array(items) => Self::Seq(items.iter().map(Self::from).collect()),
            toml::Value::Table(table) => Self::Map(mapping_from_toml(table)),
        }
    }
}

/// A TOML table as a mapping, keys in the table's order.
#[must_use]
pub fn mapping_from_toml(table: &toml::Table) -> Mapping {
    table
        .iter()
        .map(|(key, value)| (key.clone(), Yaml::from(value)))
        .collect()
}

/// Renders a mapping as a YAML document (no `---`), ending with a line break.
#[must_use]
pub fn to_string(document: &Mapping) -> String {
    let mut out = String::new();
    if document.is_empty() {
        out.push_str("{}\n");
    } else {
        write_mapping(&mut out, document, 0, false);
    }
    out
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

/// Writes `mapping` at `level`; with `after_dash` its first key follows a sequence
/// item's `- ` on the same line.
fn write_mapping(out: &mut String, mapping: &Mapping, level: usize, after_dash: bool) {
    for (index, (key, value)) in mapping.iter().enumerate() {
        if index > 0 || !after_dash {
            indent(out, level);
        }
        out.push_str(&scalar_string(key));
        out.push(':');
        write_value_after_key(out, value, level);
    }
}

fn write_value_after_key(out: &mut String, value: &Yaml, level: usize) {
    match value {
        Yaml::Map(inner) if !inner.is_empty() => {
            out.push('\n');
            write_mapping(out, inner, level + 1, false);
        }
        Yaml::Seq(items) if !items.is_empty() => {
            out.push('\n');
            write_sequence(out, items, level + 1);
        }
        other => {
            out.push(' ');
            out.push_str(&inline(other));
            out.push('\n');
        }
    }
}

fn write_sequence(out: &mut String, items: &[Yaml], level: usize) {
    for item in items {
        indent(out, level);
        out.push('-');
        match item {
            Yaml::Map(inner) if !inner.is_empty() => {
                out.push(' ');
                write_mapping(out, inner, level + 1, true);
            }
            Yaml::Seq(inner) if !inner.is_empty() => {
                out.push('\n');
                write_sequence(out, inner, level + 1);
            }
            other => {
                out.push(' ');
                out.push_str(&inline(other));
                out.push('\n');
            }
        }
    }
}

/// A scalar, or an empty collection, on one line.
fn inline(value: &Yaml) -> String {
    match value {
        Yaml::Null => "null".to_owned(),
        Yaml::Bool(b) => b.to_string(),
        Yaml::Int(i) => i.to_string(),
        Yaml::Float(f) => float(*f),
        Yaml::Str(s) => scalar_string(s),
        Yaml::Seq(_) => "[]".to_owned(),
        Yaml::Map(_) => "{}".to_owned(),
    }
}

/// A float PyYAML reads back bit for bit: Rust's shortest round-trip decimal, which has
/// no exponent, with `.0` added when it has no dot.
fn float(value: f64) -> String {
    if value.is_nan() {
        return ".nan".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { ".inf" } else { "-.inf" }.to_owned();
    }
    let mut text = value.to_string();
    if !text.contains('.') {
        text.push_str(".0");
    }
    text
}

/// YAML 1.1 words PyYAML resolves to booleans or null (`yaml/resolver.py`).
const RESERVED_WORDS: [&str; 11] = [
    "y", "n", "yes", "no", "true", "false", "on", "off", "null", "~", "",
];

/// A string as a plain scalar when that is safe, else double-quoted.
fn scalar_string(text: &str) -> String {
    let plain = text.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-'))
        && !RESERVED_WORDS.contains(&text.to_ascii_lowercase().as_str());
    if plain {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{85}' => out.push_str("\\N"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            c if u32::from(c) < 0x20 || ('\u{7f}'..='\u{9f}').contains(&c) => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            '\u{feff}' | '\u{fffe}' | '\u{ffff}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests run real programs and read the test environment"
)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::io::Write;
    use std::process::{Command, Stdio};

    /// Loads `document` with PyYAML's `safe_load` and returns it as JSON where every
    /// float is `{"float_bits": <u64>}`, so floats compare bit for bit, and every NaN
    /// `{"float_bits": "nan"}`.
    fn pyyaml(document: &str) -> serde_json::Value {
        let script = r#"
import json, struct, sys, yaml
def walk(v):
    if isinstance(v, float) and v != v:
        return {"float_bits": "nan"}
    if isinstance(v, float):
        return {"float_bits": struct.unpack("<Q", struct.pack("<d", v))[0]}
    if isinstance(v, dict):
        return {k: walk(x) for k, x in v.items()}
    if isinstance(v, list):
        return [walk(x) for x in v]
    return v
print(json.dumps(walk(yaml.safe_load(sys.stdin.buffer.read().decode("utf-8")))))
"#;
        let mut child = Command::new("python3")
            .args(["-c", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 with PyYAML (apt-get install python3-yaml)");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(document.as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "PyYAML failed on:\n{document}");
        serde_json::from_slice(&output.stdout).unwrap()
    }

    fn expected(value: &Yaml) -> serde_json::Value {
        match value {
            Yaml::Null => serde_json::Value::Null,
            Yaml::Bool(b) => (*b).into(),
            Yaml::Int(i) => (*i).into(),
            Yaml::Float(f) if f.is_nan() => serde_json::json!({ "float_bits": "nan" }),
            Yaml::Float(f) => serde_json::json!({ "float_bits": f.to_bits() }),
            Yaml::Str(s) => s.clone().into(),
            Yaml::Seq(items) => items.iter().map(expected).collect(),
            Yaml::Map(mapping) => mapping
                .iter()
                .map(|(k, v)| (k.to_owned(), expected(v)))
                .collect::<serde_json::Map<_, _>>()
                .into(),
        }
    }

    /// Asserts equal documents, naming each top-level key whose value differs.
    fn assert_same(got: &serde_json::Value, want: &serde_json::Value, text: &str) {
        let (Some(got_map), Some(want_map)) = (got.as_object(), want.as_object()) else {
            panic!("not a mapping: {got}");
        };
        let differing: Vec<String> = want_map
            .iter()
            .filter(|(k, v)| got_map.get(*k) != Some(*v))
            .map(|(k, v)| format!("{k:?}: want {v}, got {:?}", got_map.get(k)))
            .collect();
        assert!(differing.is_empty(), "{differing:#?}\n{text}");
        assert_eq!(got_map.len(), want_map.len(), "{text}");
    }

    fn tricky_strings() -> Vec<&'static str> {
        vec![
            "yes",
            "Yes",
            "YES",
            "no",
            "on",
            "off",
            "On",
            "y",
            "Y",
            "n",
            "NO",
            "true",
            "False",
            "null",
            "Null",
            "~",
            "",
            "012",
            "0x1F",
            "0o17",
            "0b101",
            "1_000",
            "1:30",
            "190:20:30",
            "1e-4",
            "1.0e-4",
            "+1",
            "-1",
            ".5",
            ".inf",
            ".NaN",
            "2024-01-01",
            "2001-12-14t21:59:43.10-05:00",
            "=",
            "<<",
            "a: b",
            "a #b",
            "#x",
            "- a",
            "? x",
            "[x]",
            "{x}",
            "*a",
            "&a",
            "!tag",
            "|",
            ">",
            "%x",
            "@x",
            "`x`",
            "'q'",
            "\"dq\"",
            "back\\slash",
            "line\nbreak",
            "cr\rlf\r\n",
            "tab\there",
            " lead",
            "trail ",
            "ünïcode ☃ 日本",
            "emoji 🎉",
            "nel\u{85}x",
            "ls\u{2028}x",
            "ps\u{2029}x",
            "bell\u{7}",
            "del\u{7f}",
            "c1\u{9b}",
            "bom\u{feff}",
            "nul\0x",
            "./output",
            "/abs/path",
            "adamw_torch",
            "chat_template",
            "tokenizer_default",
        ]
    }

    #[test]
    fn pyyaml_reads_back_exactly_what_we_meant() {
        let mut document = Mapping::new();
        for (index, text) in tricky_strings().into_iter().enumerate() {
            // Each string is a key too, so keys are checked the same way.
            document.insert(format!("s{index}"), Yaml::from(text));
            document.insert(text, Yaml::Int(i64::try_from(index).unwrap()));
        }
        let floats = [
            1e-4,
            2e-4,
            1e-7,
            0.1,
            0.05,
            1e22,
            1e300,
            5e-324,
            -0.0,
            0.0,
            3.0,
            -2.5,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        document.insert(
            "floats",
            Yaml::Seq(floats.iter().map(|f| Yaml::Float(*f)).collect()),
        );
        document.insert(
            "ints",
            Yaml::Seq(vec![Yaml::Int(i64::MIN), Yaml::Int(0), Yaml::Int(i64::MAX)]),
        );
        document.insert("nothing", Yaml::Null);
        document.insert("yes_bool", Yaml::Bool(true));
        document.insert("empty_map", Yaml::Map(Mapping::new()));
        document.insert("empty_seq", Yaml::Seq(vec![]));
        let mut entry = Mapping::new();
        entry.insert("path", Yaml::from("./train.jsonl"));
        entry.insert("type", Yaml::from("chat_template"));
        entry.insert(
            "roles",
            Yaml::Seq(vec![Yaml::from("on"), Yaml::Seq(vec![Yaml::Int(1)])]),
        );
        entry.insert(
            "nested",
            Yaml::Map([("k".to_owned(), Yaml::from("v: w"))].into_iter().collect()),
        );
        document.insert(
            "datasets",
            Yaml::Seq(vec![Yaml::Map(entry.clone()), Yaml::Map(entry)]),
        );
        let text = to_string(&document);
        assert_same(&pyyaml(&text), &expected(&Yaml::Map(document)), &text);
    }

    #[test]
    fn pyyaml_reads_back_random_unicode_strings() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut document = Mapping::new();
        for index in 0..400 {
            let len = rng.random_range(0..24);
            let text: String = (0..len)
                .map(|_| {
                    loop {
                        let code = match rng.random_range(0..4) {
                            0 => rng.random_range(0..0x80),
                            1 => rng.random_range(0x80..0x800),
                            2 => rng.random_range(0x800..0x1_0000),
                            _ => rng.random_range(0x1_0000..0x11_0000),
                        };
                        if let Some(c) = char::from_u32(code) {
                            break c;
                        }
                    }
                })
                .collect();
            document.insert(format!("k{index}"), Yaml::Str(text));
        }
        let text = to_string(&document);
        assert_same(&pyyaml(&text), &expected(&Yaml::Map(document)), &text);
    }

    #[test]
    fn floats_have_a_dot_and_no_exponent() {
        assert_eq!(float(1e-4), "0.0001");
        assert_eq!(float(1e22), "10000000000000000000000.0");
        assert_eq!(float(2.0), "2.0");
        assert_eq!(float(f64::NEG_INFINITY), "-.inf");
    }

    #[test]
    fn layout_is_block_style() {
        let mut document = Mapping::new();
        document.insert("base_model", Yaml::from("/m"));
        let mut entry = Mapping::new();
        entry.insert("path", Yaml::from("train.jsonl"));
        entry.insert("type", Yaml::from("chat_template"));
        document.insert("datasets", Yaml::Seq(vec![Yaml::Map(entry)]));
        document.insert("plugins", Yaml::Seq(vec![Yaml::from("a.B")]));
        assert_eq!(
            to_string(&document),
            "base_model: \"/m\"\ndatasets:\n  - path: train.jsonl\n    type: chat_template\nplugins:\n  - a.B\n"
        );
    }

    #[test]
    fn merge_is_recursive_for_tables_only() {
        let mut ours: Mapping = [
            ("a".to_owned(), Yaml::Int(1)),
            (
                "t".to_owned(),
                Yaml::Map(
                    [
                        ("x".to_owned(), Yaml::Int(1)),
                        ("y".to_owned(), Yaml::Int(2)),
                    ]
                    .into_iter()
                    .collect(),
                ),
            ),
        ]
        .into_iter()
        .collect();
        let theirs: Mapping = [
            (
                "t".to_owned(),
                Yaml::Map([("y".to_owned(), Yaml::Int(3))].into_iter().collect()),
            ),
            ("a".to_owned(), Yaml::Seq(vec![])),
            ("b".to_owned(), Yaml::Null),
        ]
        .into_iter()
        .collect();
        ours.merge(theirs);
        assert_eq!(ours.get("a"), Some(&Yaml::Seq(vec![])));
        let Some(Yaml::Map(t)) = ours.get("t") else {
            panic!()
        };
        assert_eq!(t.get("x"), Some(&Yaml::Int(1)));
        assert_eq!(t.get("y"), Some(&Yaml::Int(3)));
        assert_eq!(ours.get("b"), Some(&Yaml::Null));
    }
}

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
//!
//! This file holds the values ([`Yaml`], [`Mapping`] and their conversions); `emit.rs`
//! writes them by those rules ([`to_string`]).

mod emit;
#[cfg(test)]
mod tests;

pub use emit::to_string;

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

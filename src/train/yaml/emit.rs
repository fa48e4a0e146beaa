//! Writing a [`Mapping`] as the block-style YAML that PyYAML reads back exactly (the rules
//! are in the module doc of `train::yaml`).

use std::fmt::Write as _;

use super::{Mapping, Yaml};

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
        write_value(out, value, level, false);
    }
}

fn write_sequence(out: &mut String, items: &[Yaml], level: usize) {
    for item in items {
        indent(out, level);
        out.push('-');
        write_value(out, item, level, true);
    }
}

/// Writes `value` after a mapping key's `:` or a sequence item's `-` (`after_dash`), at
/// `level`: a non-empty collection on the lines below (a mapping under a dash starts on
/// the dash's line), anything else on this line.
fn write_value(out: &mut String, value: &Yaml, level: usize, after_dash: bool) {
    match value {
        Yaml::Map(inner) if !inner.is_empty() => {
            out.push(if after_dash { ' ' } else { '\n' });
            write_mapping(out, inner, level + 1, after_dash);
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
pub(super) fn float(value: f64) -> String {
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

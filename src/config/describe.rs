//! The words of a typing problem: the key and the expected type, never the value
//! (CFG-2). `figment`'s own messages echo the offending value, so they are rewritten here.

use figment::error::{Actual, Kind};

use super::error::Problem;

/// What serde expected, by kind: the conversions of environment text and the words of a
/// problem both go by it.
pub(super) enum Expected {
    Unsigned,
    Signed,
    Float,
    Bool,
    Other,
}

pub(super) fn expected_kind(expected: &str) -> Expected {
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
pub(super) fn describe(mut path: Vec<String>, kind: &Kind) -> Problem {
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
        Kind::UnknownField(field, expected) => match near_key(field, expected) {
            Some(key) => format!("unknown field: not a known key here; did you mean `{key}`?"),
            None => "unknown field: not a known key here".to_owned(),
        },
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

/// The key of `expected` that `field` most likely meant: the same but for case, `-`
/// for `_`, or a plural `s` (the old `gpu_type` for `gpu_types`, POD-3).
fn near_key<'a>(field: &str, expected: &[&'a str]) -> Option<&'a str> {
    let norm = |key: &str| key.to_ascii_lowercase().replace('-', "_");
    let field = norm(field);
    expected.iter().copied().find(|key| {
        let key = norm(key);
        key == field
            || key.strip_suffix('s') == Some(field.as_str())
            || field.strip_suffix('s') == Some(key.as_str())
    })
}

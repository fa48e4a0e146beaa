//! Editing `overbrainer.toml` from a front end (the TUI's Project view, TUI-9..TUI-17):
//! one [`Change`] set per write, applied with `toml_edit` so comments, key order and the
//! formatting of untouched parts stay as they were; the whole configuration is validated
//! with the change before anything is written (TUI-14); the write is atomic, keeps the
//! file's permissions, and is refused when the file changed on disk since it was read or
//! is a symbolic link (TUI-16). [`undo`] writes the text from before a write back under
//! the same checks (TUI-17).
//!
//! Which keys a form can change and what it accepts: [`parse_input`] reads typed text by
//! the kind of the value shown, [`choices`] lists the values a choice cycles through.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use toml_edit::{DocumentMut, Item, Value};

use super::error::ConfigError;
use super::layers::{env_only, var_name};
use super::load::{FILE_NAME, Loaded, Rules, load_text};
use crate::env::EnvSnapshot;

/// One change to a dotted key (`training.learning_rate`, `topics.0.name`,
/// `targets.gpu.gpu_types`).
#[derive(Debug, Clone)]
pub enum Change {
    /// Set the key to a value, creating the tables on its way.
    Set(String, Value),
    /// Remove the key from the file (its default applies again): a value, a whole table
    /// (`providers.local`), or an item of a list of tables (`topics.1`).
    Unset(String),
    /// Add the table `[key]` with these values (`targets.gpu`); refused when it exists.
    Table(String, Vec<(String, Value)>),
    /// Append a table with these values to the list of tables `[[key]]` (`topics`).
    Push(String, Vec<(String, Value)>),
}

/// Two changes are the same when they change the same key to the same TOML text.
impl PartialEq for Change {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Set(a, x), Self::Set(b, y)) => a == b && x.to_string() == y.to_string(),
            (Self::Unset(a), Self::Unset(b)) => a == b,
            (Self::Table(a, x), Self::Table(b, y)) | (Self::Push(a, x), Self::Push(b, y)) => {
                a == b
                    && x.len() == y.len()
                    && x.iter()
                        .zip(y)
                        .all(|((k, v), (l, w))| k == l && v.to_string() == w.to_string())
            }
            _ => false,
        }
    }
}

impl Eq for Change {}

impl Change {
    /// The dotted key changed.
    #[must_use]
    pub fn key(&self) -> &str {
        match self {
            Self::Set(key, _) | Self::Unset(key) | Self::Table(key, _) | Self::Push(key, _) => key,
        }
    }
}

/// Why an edit was not written; the file is unchanged in every case.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// The key may only come from the environment (ENV-7).
    #[error("`{key}` may only be set in the environment or `.env` (`{var}`); change it there")]
    EnvOnly {
        /// The dotted key.
        key: String,
        /// Its variable.
        var: String,
    },
    /// `overbrainer.toml` is a symbolic link.
    #[error("`{}` is a symbolic link; nothing was written (edit the file it points to)", path.display())]
    Link {
        /// The file.
        path: PathBuf,
    },
    /// The file is not what was read: someone changed it meanwhile.
    #[error("`{}` changed on disk since it was read; nothing was written (it is read again)", path.display())]
    Changed {
        /// The file.
        path: PathBuf,
    },
    /// The file could not be read.
    #[error("cannot read `{}`", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not TOML that can be edited.
    #[error("`{}` is not valid TOML: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's words.
        message: String,
    },
    /// The key does not fit the file's shape (it goes through a value that is not a table,
    /// or names an item that does not exist).
    #[error("`{key}`: {message}")]
    Shape {
        /// The dotted key.
        key: String,
        /// What is in the way.
        message: String,
    },
    /// The configuration with the change is not valid.
    #[error(transparent)]
    Invalid(ConfigError),
    /// The file could not be written.
    #[error("cannot write `{}`; it is unchanged", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// A write: the file's text before and after it, and the configuration it now holds.
#[derive(Debug, Clone)]
pub struct Saved {
    /// The text before the write, for [`undo`].
    pub before: String,
    /// The text written.
    pub after: String,
    /// The configuration loaded from the text written.
    pub loaded: Loaded,
}

/// `text` with `changes` applied, every untouched byte kept.
///
/// # Errors
///
/// [`EditError::Syntax`] when `text` is not TOML; [`EditError::EnvOnly`] for a key only
/// the environment may set; [`EditError::Shape`] when a key goes through a value that is
/// not a table or an item that does not exist.
pub fn apply(path: &Path, text: &str, changes: &[Change]) -> Result<String, EditError> {
    let mut document: DocumentMut =
        text.parse()
            .map_err(|error: toml_edit::TomlError| EditError::Syntax {
                path: path.to_owned(),
                message: error.message().to_owned(),
            })?;
    for change in changes {
        let key = change.key();
        let parts: Vec<&str> = key.split('.').collect();
        if env_only(&parts) {
            return Err(EditError::EnvOnly {
                key: key.to_owned(),
                var: var_name(&parts),
            });
        }
        let shape = |message: &str| EditError::Shape {
            key: key.to_owned(),
            message: message.to_owned(),
        };
        let (last, through) = parts.split_last().ok_or_else(|| shape("empty key"))?;
        let create = !matches!(change, Change::Unset(..));
        let mut item = document.as_item_mut();
        for part in through {
            item = step(item, part, create).map_err(|message| shape(&message))?;
        }
        if let (Change::Unset(_), Ok(index), true) = (change, last.parse::<usize>(), is_list(item))
        {
            let removed = match item {
                Item::ArrayOfTables(tables) if index < tables.len() => {
                    tables.remove(index);
                    true
                }
                Item::Value(Value::Array(values)) if index < values.len() => {
                    values.remove(index);
                    true
                }
                _ => false,
            };
            if removed {
                continue;
            }
            return Err(shape(&format!("there is no item {index}")));
        }
        if let Change::Push(_, values) = change {
            let table = item
                .as_table_like_mut()
                .ok_or_else(|| shape(&format!("`{last}` is under a value that is not a table")))?;
            let slot = table
                .entry(last)
                .or_insert(Item::ArrayOfTables(toml_edit::ArrayOfTables::new()));
            let Item::ArrayOfTables(tables) = slot else {
                return Err(shape("it is not a list of tables"));
            };
            tables.push(table_of(values));
            continue;
        }
        let Some(table) = item.as_table_like_mut() else {
            return Err(shape(&format!(
                "`{last}` is under a value that is not a table"
            )));
        };
        match change {
            Change::Set(_, value) => {
                let mut value = value.clone();
                if let Some(Item::Value(old)) = table.get_mut(last) {
                    // The old value's spacing and trailing comment stay.
                    *value.decor_mut() = old.decor().clone();
                    *old = value;
                } else {
                    table.insert(last, Item::Value(value));
                }
            }
            Change::Unset(_) => {
                table.remove(last);
            }
            Change::Table(_, values) => {
                if table.contains_key(last) {
                    return Err(shape("it exists already"));
                }
                table.insert(last, Item::Table(table_of(values)));
            }
            Change::Push(..) => {}
        }
    }
    Ok(document.to_string())
}

/// Whether `item` is a list (of tables, or of values).
fn is_list(item: &Item) -> bool {
    matches!(item, Item::ArrayOfTables(_) | Item::Value(Value::Array(_)))
}

/// A standard table holding `values`, in order.
fn table_of(values: &[(String, Value)]) -> toml_edit::Table {
    let mut table = toml_edit::Table::new();
    for (key, value) in values {
        table.insert(key, Item::Value(value.clone()));
    }
    table
}

/// The item under `part` of `item`: an index into an array of tables (or an array), else a
/// key of a table; a missing table is created when `create`.
fn step<'a>(item: &'a mut Item, part: &str, create: bool) -> Result<&'a mut Item, String> {
    // A number indexes a list; under a table it is a key (a target named `4090`).
    if let (Ok(index), true) = (part.parse::<usize>(), is_list(item)) {
        return item
            .get_mut(index)
            .ok_or_else(|| format!("there is no item {index}"));
    }
    let inline = matches!(item, Item::Value(_));
    let Some(table) = item.as_table_like_mut() else {
        return Err(format!("`{part}` is under a value that is not a table"));
    };
    if table.get(part).is_none() {
        if !create {
            return Err(format!("there is no `{part}`"));
        }
        let fresh = if inline {
            Item::Value(Value::InlineTable(toml_edit::InlineTable::new()))
        } else {
            let mut fresh = toml_edit::Table::new();
            fresh.set_implicit(true);
            Item::Table(fresh)
        };
        table.insert(part, fresh);
    }
    item.get_mut(part)
        .ok_or_else(|| format!("there is no `{part}`"))
}

/// Applies `changes` to the file as it was `read`, validates the result whole and writes it
/// (TUI-13..TUI-16).
///
/// # Errors
///
/// See [`EditError`]; nothing is written on any error.
pub fn save(
    project_dir: &Path,
    read: &str,
    changes: &[Change],
    env: &EnvSnapshot,
    rules: Rules,
) -> Result<Saved, EditError> {
    let path = project_dir.join(FILE_NAME);
    let after = apply(&path, read, changes)?;
    let loaded = write_checked(project_dir, read, &after, env, rules)?;
    Ok(Saved {
        before: read.to_owned(),
        after,
        loaded,
    })
}

/// Writes back `before`, the text from before a write that wrote `after`, unless the
/// file changed since (TUI-17).
///
/// # Errors
///
/// See [`EditError`]; nothing is written on any error.
pub fn undo(
    project_dir: &Path,
    before: &str,
    after: &str,
    env: &EnvSnapshot,
    rules: Rules,
) -> Result<Loaded, EditError> {
    write_checked(project_dir, after, before, env, rules)
}

/// Writes `text` over `overbrainer.toml` when it still holds `expected`, is no link, and
/// `text` loads as a valid configuration; returns that configuration.
fn write_checked(
    project_dir: &Path,
    expected: &str,
    text: &str,
    env: &EnvSnapshot,
    rules: Rules,
) -> Result<Loaded, EditError> {
    let path = project_dir.join(FILE_NAME);
    let read = |source| EditError::Read {
        path: path.clone(),
        source,
    };
    let meta = std::fs::symlink_metadata(&path).map_err(read)?;
    if meta.file_type().is_symlink() {
        return Err(EditError::Link { path });
    }
    let current = std::fs::read_to_string(&path).map_err(read)?;
    if current != expected {
        return Err(EditError::Changed { path });
    }
    let loaded = load_text(project_dir, text, env, rules).map_err(EditError::Invalid)?;
    write_keeping_mode(&path, text.as_bytes(), meta.permissions()).map_err(|source| {
        EditError::Write {
            path: path.clone(),
            source,
        }
    })?;
    Ok(loaded)
}

/// Writes `bytes` over `path` whole or not at all: a temporary beside it with
/// `permissions`, synced, renamed over it.
fn write_keeping_mode(
    path: &Path,
    bytes: &[u8],
    permissions: std::fs::Permissions,
) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
    let temporary = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    // One left by a process of this PID that was killed before its rename.
    let _ = std::fs::remove_file(&temporary);
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)?;
        file.set_permissions(permissions)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// The variable that alone may set `key` (ENV-7: a provider's `base_url` and `api_key`, a
/// target's `host`, the `runpod` account, the HF token, ...), or `None` when the file may.
#[must_use]
pub fn env_only_var(key: &str) -> Option<String> {
    let parts: Vec<&str> = key.split('.').collect();
    env_only(&parts).then(|| var_name(&parts))
}

/// What a form for a field showing `shown` (as `config check` prints it) accepts, in words.
#[must_use]
pub fn accepts(shown: &str) -> &'static str {
    match Shown::of(shown) {
        Shown::Text => "text; empty unsets it",
        Shown::Integer | Shown::Float => "a number; empty unsets it",
        Shown::Bool => "true or false",
        Shown::List => "a list: a, b, c (or TOML [\"a\", \"b\"]); empty unsets it",
        Shown::Unknown => "a value (text, a number, true/false, a, b list); empty unsets it",
    }
}

/// The kind of a value as `config check` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown {
    Text,
    Integer,
    Float,
    Bool,
    List,
    Unknown,
}

impl Shown {
    fn of(shown: &str) -> Self {
        if shown.starts_with('"') {
            Self::Text
        } else if shown == "true" || shown == "false" {
            Self::Bool
        } else if shown.starts_with('[') {
            Self::List
        } else if shown.parse::<i64>().is_ok() {
            Self::Integer
        } else if shown.parse::<f64>().is_ok() {
            Self::Float
        } else {
            Self::Unknown
        }
    }
}

/// The value `input` (typed into a field showing `shown`) stands for; `None` unsets the
/// key. Numbers are checked here (TUI-10); what the key accepts is the whole
/// configuration's check on save.
///
/// # Errors
///
/// What the field expects, when `input` is not of its kind.
pub fn parse_input(shown: &str, input: &str) -> Result<Option<Value>, String> {
    let input = input.trim();
    if input.is_empty() {
        return Ok(None);
    }
    let toml = || input.parse::<Value>().ok();
    let value = match Shown::of(shown) {
        Shown::Text => match toml() {
            Some(Value::String(text)) => Value::from(text.value().as_str()),
            _ => Value::from(input),
        },
        Shown::Bool => match input {
            "true" => Value::from(true),
            "false" => Value::from(false),
            _ => return Err(format!("`{input}` is not true or false")),
        },
        Shown::Integer | Shown::Float => number(input, Shown::of(shown) == Shown::Float)
            .ok_or_else(|| format!("`{input}` is not a number"))?,
        Shown::List => list(input),
        Shown::Unknown => match toml() {
            Some(value) => value,
            None if input.contains(',') => list(input),
            None => Value::from(input),
        },
    };
    Ok(Some(value))
}

/// The value `input` (typed into the field `key` showing `shown`) stands for: as
/// [`parse_input`], except that a Runpod target's `gpu_types` and `data_center_ids` take
/// `auto` or a list (`ListOrAuto`).
///
/// # Errors
///
/// As [`parse_input`].
pub fn parse_field(key: &str, shown: &str, input: &str) -> Result<Option<Value>, String> {
    let list_or_auto = matches!(
        key.split('.').collect::<Vec<_>>().as_slice(),
        ["targets", _, "gpu_types" | "data_center_ids"]
    );
    match input.trim() {
        "" => Ok(None),
        "auto" | "\"auto\"" if list_or_auto => Ok(Some(Value::from("auto"))),
        typed if list_or_auto => Ok(Some(list(typed))),
        _ => parse_input(shown, input),
    }
}

/// `input` as a finite number, as typed (`1e-5` stays so); a whole number stays one
/// unless `float`.
fn number(input: &str, float: bool) -> Option<Value> {
    match input.parse::<Value>().ok()? {
        Value::Integer(whole) if float =>
        {
            #[allow(clippy::cast_precision_loss, reason = "a typed number, far below 2^52")]
            Some(Value::from(*whole.value() as f64))
        }
        Value::Integer(whole) => Some(Value::from(*whole.value())),
        Value::Float(typed) if typed.value().is_finite() => Some(Value::Float(typed)),
        _ => None,
    }
}

/// `input` as a list: TOML (`["a", "b"]`) or items separated by commas, each a number
/// when it reads as one, else text.
fn list(input: &str) -> Value {
    if input.starts_with('[')
        && let Ok(value @ Value::Array(_)) = input.parse::<Value>()
    {
        return value;
    }
    let items = input
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| number(item, false).unwrap_or_else(|| Value::from(item.trim_matches('"'))));
    Value::Array(items.collect())
}

/// The values Enter cycles through on `key` (TUI-10), and whether the key may be unset
/// (the cycle then passes through "unset").
#[must_use]
pub fn choices(key: &str) -> Option<(&'static [&'static str], bool)> {
    let parts: Vec<&str> = key.split('.').collect();
    Some(match parts.as_slice() {
        ["providers", _, "protocol"] => (&["openai", "anthropic"], false),
        ["roles", _, "reasoning_effort"] => (&["none", "low", "medium", "high"], true),
        ["training", "adapter"] => (&["lora", "qlora", "full"], false),
        ["training", "on_stall"] => (&["warn", "snapshot", "cancel"], true),
        ["targets", _, "runtime"] => (&["native", "docker"], true),
        ["targets", _, "engine"] => (&["docker", "podman"], true),
        _ => return None,
    })
}

/// The next value after `shown` (as `config check` prints it, quoted) in `key`'s cycle:
/// `None` unsets the key.
#[must_use]
pub fn next_choice(key: &str, shown: &str) -> Option<Option<Value>> {
    let (values, optional) = choices(key)?;
    let current = shown.trim_matches('"');
    let next = match values.iter().position(|v| *v == current) {
        Some(at) if at + 1 < values.len() => Some(values[at + 1]),
        Some(_) if optional => None,
        Some(_) | None => Some(values[0]),
    };
    Some(next.map(Value::from))
}

#[cfg(test)]
#[path = "edit_tests.rs"]
mod tests;

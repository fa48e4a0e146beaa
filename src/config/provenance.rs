//! Where each value of the configuration came from: the built-in default, the file,
//! `.env` or the process environment, by dotted key (for `config check` and the TUI).

use std::collections::BTreeMap;
use std::fmt;

use figment::value::Value;

/// Where an effective value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The built-in default.
    Default,
    /// `overbrainer.toml`.
    File,
    /// The project's `.env`, through variable `var`.
    DotEnv {
        /// The variable name.
        var: String,
    },
    /// The process environment, through variable `var`.
    Env {
        /// The variable name.
        var: String,
    },
}

impl Source {
    /// The variable that set the value, for env sources.
    #[must_use]
    pub fn var(&self) -> Option<&str> {
        match self {
            Self::DotEnv { var } | Self::Env { var } => Some(var),
            Self::Default | Self::File => None,
        }
    }
}

impl fmt::Display for Source {
    /// `default`, `file`, `.env` or `env`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Default => "default",
            Self::File => "file",
            Self::DotEnv { .. } => ".env",
            Self::Env { .. } => "env",
        })
    }
}

/// The source of every leaf set by a file or a variable, by dotted key (`topics.0.name`).
/// Keys not listed hold their default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provenance {
    leaves: BTreeMap<String, Source>,
}

impl Provenance {
    /// The source of `key`: its own entry, else the nearest enclosing key's, else
    /// [`Source::Default`].
    #[must_use]
    pub fn source(&self, key: &str) -> &Source {
        let mut key = key;
        loop {
            if let Some(source) = self.leaves.get(key) {
                return source;
            }
            match key.rsplit_once('.') {
                Some((parent, _)) => key = parent,
                None => return &Source::Default,
            }
        }
    }

    pub(crate) fn set(&mut self, key: String, source: Source) {
        self.leaves.insert(key, source);
    }

    /// Whether anything at or below `key` was set by a file or a variable.
    #[must_use]
    pub fn is_set(&self, key: &str) -> bool {
        let below = format!("{key}.");
        self.leaves
            .range(key.to_owned()..)
            .take_while(|(k, _)| k.starts_with(key))
            .any(|(k, _)| k == key || k.starts_with(&below))
    }
}

/// Records `source` for every leaf of `value` below `key`.
pub(crate) fn record(provenance: &mut Provenance, key: &str, value: &Value, source: &Source) {
    let join = |k: &str| {
        if key.is_empty() {
            k.to_owned()
        } else {
            format!("{key}.{k}")
        }
    };
    match value {
        Value::Dict(_, dict) if !dict.is_empty() => {
            for (k, v) in dict {
                record(provenance, &join(k), v, source);
            }
        }
        Value::Array(_, items) if items.iter().any(|i| matches!(i, Value::Dict(..))) => {
            for (i, v) in items.iter().enumerate() {
                record(provenance, &join(&i.to_string()), v, source);
            }
        }
        _ => provenance.set(key.to_owned(), source.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provenance_falls_back_to_enclosing_key_then_default() {
        let mut provenance = Provenance::default();
        provenance.set("targets.gpu.gpu_types".into(), Source::File);
        assert_eq!(provenance.source("targets.gpu.gpu_types"), &Source::File);
        assert_eq!(provenance.source("targets.gpu.max_hours"), &Source::Default);
        assert!(provenance.is_set("targets.gpu"));
        assert!(!provenance.is_set("targets.gp"));
        provenance.set("a.b-c".into(), Source::File);
        provenance.set("a.b.d".into(), Source::File);
        assert!(provenance.is_set("a.b"));
    }
}

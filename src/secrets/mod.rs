//! Secret values: a literal, or a reference `vault:<mount>/<path>#<field>` to a field of a
//! Vault or `OpenBao` KV version 2 secret (spec/config.md, SEC-1..SEC-5).
//!
//! A [`SecretRef`] is what the settings hold; it never shows a literal value in `Debug`,
//! `Display` or `Serialize`. The [`Resolver`] turns a reference into a
//! [`secrecy::SecretString`] lazily, once per process, at the place that needs the value.
//! [`private`] is the one way to create a file or directory that holds a secret or a
//! private key: mode 600 (700) from the first byte, whatever the umask.

pub mod private;
mod vault;

use std::fmt;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

pub use vault::{Resolver, SecretError};

/// The prefix that marks a Vault reference.
pub const VAULT_PREFIX: &str = "vault:";

/// A secret as configured: a literal value or a Vault KV v2 reference.
///
/// `Debug`, `Display` and `Serialize` show `set` for a literal and the reference for a
/// Vault reference (a location, not a secret).
#[derive(Clone)]
pub enum SecretRef {
    /// The value itself.
    Literal(SecretString),
    /// A field of a KV v2 secret.
    Vault(VaultRef),
}

/// The location of a secret in Vault: `vault:<mount>/<path>#<field>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VaultRef {
    /// The KV v2 mount, the first path segment (`secret`).
    pub mount: String,
    /// The secret's path below the mount; may contain `/`.
    pub path: String,
    /// The key inside the secret's data.
    pub field: String,
}

/// Why a `vault:` reference could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid vault reference: expected `vault:<mount>/<path>#<field>`")]
pub struct ParseRefError;

impl SecretRef {
    /// Parses a configured value: `vault:...` is a reference, anything else a literal.
    ///
    /// # Errors
    ///
    /// [`ParseRefError`] when the value starts with `vault:` but lacks a mount, a path or a
    /// field. The error never contains the value.
    pub fn parse(value: &str) -> Result<Self, ParseRefError> {
        match value.strip_prefix(VAULT_PREFIX) {
            Some(rest) => VaultRef::parse(rest).map(Self::Vault),
            None => Ok(Self::Literal(SecretString::from(value))),
        }
    }

    /// The mask shown in place of the value: `set` or `vault ref <location>`.
    #[must_use]
    pub fn masked(&self) -> String {
        match self {
            Self::Literal(_) => "set".to_owned(),
            Self::Vault(reference) => format!("vault ref {reference}"),
        }
    }
}

impl VaultRef {
    /// Parses `<mount>/<path>#<field>` (the part after `vault:`).
    ///
    /// # Errors
    ///
    /// [`ParseRefError`] when a part is missing or empty.
    pub fn parse(text: &str) -> Result<Self, ParseRefError> {
        let (location, field) = text.rsplit_once('#').ok_or(ParseRefError)?;
        let (mount, path) = location.split_once('/').ok_or(ParseRefError)?;
        let path = path.trim_matches('/');
        if mount.is_empty() || path.is_empty() || field.is_empty() {
            return Err(ParseRefError);
        }
        Ok(Self {
            mount: mount.to_owned(),
            path: path.to_owned(),
            field: field.to_owned(),
        })
    }
}

impl fmt::Display for VaultRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{VAULT_PREFIX}{}/{}#{}",
            self.mount, self.path, self.field
        )
    }
}

impl fmt::Debug for SecretRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Literal(_) => f.write_str("SecretRef::Literal(set)"),
            Self::Vault(reference) => write!(f, "SecretRef::Vault({reference})"),
        }
    }
}

impl fmt::Display for SecretRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.masked())
    }
}

impl PartialEq for SecretRef {
    /// Two literals are never compared by value: literals are equal to each other only
    /// as "set", so settings can be compared without exposing secrets.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Literal(_), Self::Literal(_)) => true,
            (Self::Vault(a), Self::Vault(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for SecretRef {}

impl Serialize for SecretRef {
    /// Serializes the mask (`set`, `vault ref ...`), never the value.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.masked())
    }
}

impl<'de> Deserialize<'de> for SecretRef {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Deserializes an optional secret, an empty value being no secret at all: `API_KEY=` in
/// `.env` means unset (no `Authorization: Bearer ` with an empty key). For
/// `#[serde(default, deserialize_with = "crate::secrets::optional")]`.
///
/// # Errors
///
/// As [`SecretRef::parse`], or when the value is not a string.
pub fn optional<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<SecretRef>, D::Error> {
    let text = Option::<String>::deserialize(deserializer)?;
    match text {
        Some(text) if !text.is_empty() => SecretRef::parse(&text)
            .map(Some)
            .map_err(serde::de::Error::custom),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use secrecy::ExposeSecret;

    use super::*;

    const DISTINCTIVE: &str = "sk-distinctive-F8kD3nQ6wZ1vB9xH4tM7";

    #[test]
    fn literal_never_shows_in_debug_display_or_serialize() {
        let secret = SecretRef::parse(DISTINCTIVE).unwrap();
        assert!(!format!("{secret:?}").contains(DISTINCTIVE));
        assert!(!format!("{secret}").contains(DISTINCTIVE));
        let json = serde_json::to_string(&secret).unwrap();
        assert!(!json.contains(DISTINCTIVE));
        assert_eq!(json, "\"set\"");
        match secret {
            SecretRef::Literal(value) => assert_eq!(value.expose_secret(), DISTINCTIVE),
            SecretRef::Vault(_) => panic!("parsed as a vault reference"),
        }
    }

    #[test]
    fn vault_reference_parses_mount_path_and_field() {
        let secret = SecretRef::parse("vault:secret/overbrainer/openrouter#api_key").unwrap();
        let SecretRef::Vault(reference) = secret else {
            panic!("not a vault reference");
        };
        assert_eq!(reference.mount, "secret");
        assert_eq!(reference.path, "overbrainer/openrouter");
        assert_eq!(reference.field, "api_key");
        assert_eq!(
            reference.to_string(),
            "vault:secret/overbrainer/openrouter#api_key"
        );
    }

    #[test]
    fn malformed_vault_references_are_refused() {
        for text in [
            "vault:",
            "vault:secret",
            "vault:secret/path",
            "vault:secret/#field",
            "vault:/path#field",
            "vault:secret/path#",
        ] {
            assert_eq!(SecretRef::parse(text).unwrap_err(), ParseRefError, "{text}");
        }
    }

    #[test]
    fn an_empty_secret_is_unset() {
        #[derive(Deserialize)]
        struct Holder {
            #[serde(default, deserialize_with = "optional")]
            key: Option<SecretRef>,
        }
        let empty: Holder = serde_json::from_str(r#"{"key": ""}"#).unwrap();
        assert!(empty.key.is_none());
        let missing: Holder = serde_json::from_str("{}").unwrap();
        assert!(missing.key.is_none());
        let set: Holder = serde_json::from_str(r#"{"key": "k-42"}"#).unwrap();
        assert_eq!(set.key.unwrap().masked(), "set");
    }
}

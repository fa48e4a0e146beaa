//! Resolving secrets: literals as they are, `vault:` references by reading a KV version 2
//! secret over HTTP, once per process (SEC-2, SEC-3).
//!
//! Wire protocol (Vault API docs, "KV secrets engine - version 2", read secret version):
//! `GET <VAULT_ADDR>/v1/<mount>/data/<path>` with the header `X-Vault-Token`; the answer is
//! `{"data": {"data": {<field>: <value>, ...}, "metadata": {...}}}`, and failures carry
//! `{"errors": ["..."]}` with status 403 (bad token) or 404 (no such secret). `OpenBao` speaks
//! the same protocol.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use secrecy::SecretString;
use tokio::sync::Mutex;

use super::{SecretRef, VaultRef};
use crate::env::EnvSnapshot;

/// How long one request to Vault may take, in seconds.
const REQUEST_TIMEOUT_SECS: u64 = 30;

/// Why a secret could not be resolved. Every variant names what was being resolved and the
/// reference's location; none carries a token or a secret value.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// `VAULT_ADDR` is unset or empty.
    #[error("cannot resolve `{what}` from `{reference}`: `VAULT_ADDR` is not set")]
    NoAddress {
        /// The setting being resolved (`providers.openrouter.api_key`).
        what: String,
        /// The reference.
        reference: VaultRef,
    },
    /// Neither `VAULT_TOKEN` nor `~/.vault-token` gives a token.
    #[error(
        "cannot resolve `{what}` from `{reference}`: no Vault token; set `VAULT_TOKEN` or log in so that `~/.vault-token` exists"
    )]
    NoToken {
        /// The setting being resolved.
        what: String,
        /// The reference.
        reference: VaultRef,
    },
    /// The request failed before an answer came back (server down, bad address, timeout).
    #[error("cannot resolve `{what}` from `{reference}`: Vault could not be reached")]
    Unreachable {
        /// The setting being resolved.
        what: String,
        /// The reference.
        reference: VaultRef,
        /// The HTTP client's error.
        #[source]
        source: reqwest::Error,
    },
    /// Vault refused the token (403) or failed otherwise.
    #[error("cannot resolve `{what}` from `{reference}`: Vault answered {status}{}", server_errors(.errors))]
    Refused {
        /// The setting being resolved.
        what: String,
        /// The reference.
        reference: VaultRef,
        /// The HTTP status.
        status: u16,
        /// Vault's `errors` list.
        errors: Vec<String>,
    },
    /// No secret at `<mount>/<path>` (404).
    #[error("cannot resolve `{what}` from `{reference}`: no secret at `{}/{}`", .reference.mount, .reference.path)]
    NoSecret {
        /// The setting being resolved.
        what: String,
        /// The reference.
        reference: VaultRef,
    },
    /// The secret exists but has no such field, or the field is not a string or number.
    #[error("cannot resolve `{what}` from `{reference}`: the secret has no text field `{}`", .reference.field)]
    NoField {
        /// The setting being resolved.
        what: String,
        /// The reference.
        reference: VaultRef,
    },
    /// The field exists but is empty: an empty key is no key (no `Authorization: Bearer `).
    #[error("cannot resolve `{what}` from `{reference}`: the field `{}` is empty", .reference.field)]
    EmptyField {
        /// The setting being resolved.
        what: String,
        /// The reference.
        reference: VaultRef,
    },
    /// The answer is not a KV v2 answer (a KV v1 mount, a proxy page).
    #[error(
        "cannot resolve `{what}` from `{reference}`: the answer is not a KV version 2 secret; is `{}` a KV v2 mount?", .reference.mount
    )]
    NotKv2 {
        /// The setting being resolved.
        what: String,
        /// The reference.
        reference: VaultRef,
    },
}

fn server_errors(errors: &[String]) -> String {
    if errors.is_empty() {
        String::new()
    } else {
        format!(": {}", errors.join("; "))
    }
}

/// Resolves [`SecretRef`]s, reading each Vault reference at most once per process.
///
/// Share one resolver (behind an `Arc`) between the tasks of a command. Construction reads
/// nothing and contacts nothing: the token is read and Vault contacted only when a `vault:`
/// reference is first resolved (SEC-3).
pub struct Resolver {
    addr: Option<String>,
    token: Option<SecretString>,
    token_file: Option<PathBuf>,
    http: reqwest::Client,
    cache: Mutex<HashMap<VaultRef, SecretString>>,
}

impl Resolver {
    /// A resolver using `VAULT_ADDR`, `VAULT_TOKEN` and `$HOME/.vault-token` from `env`.
    #[must_use]
    pub fn new(env: &EnvSnapshot) -> Self {
        let non_empty = |name: &str| env.get(name).filter(|v| !v.is_empty()).map(str::to_owned);
        Self {
            addr: non_empty("VAULT_ADDR"),
            token: non_empty("VAULT_TOKEN").map(SecretString::from),
            token_file: non_empty("HOME").map(|home| PathBuf::from(home).join(".vault-token")),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(REQUEST_TIMEOUT_SECS))
                .build()
                .unwrap_or_default(),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The value of `reference`; `what` names the setting for error messages
    /// (`providers.openrouter.api_key`).
    ///
    /// # Errors
    ///
    /// A [`SecretError`] naming `what` and the reference when Vault cannot give the value.
    pub async fn resolve(
        &self,
        what: &str,
        reference: &SecretRef,
    ) -> Result<SecretString, SecretError> {
        let vault = match reference {
            SecretRef::Literal(value) => return Ok(value.clone()),
            SecretRef::Vault(vault) => vault,
        };
        // Held across the request so that concurrent first uses read Vault once.
        let mut cache = self.cache.lock().await;
        if let Some(value) = cache.get(vault) {
            return Ok(value.clone());
        }
        let value = self.fetch(what, vault).await?;
        cache.insert(vault.clone(), value.clone());
        Ok(value)
    }

    async fn fetch(&self, what: &str, reference: &VaultRef) -> Result<SecretString, SecretError> {
        let context = || (what.to_owned(), reference.clone());
        let Some(addr) = &self.addr else {
            let (what, reference) = context();
            return Err(SecretError::NoAddress { what, reference });
        };
        let Some(token) = self.token() else {
            let (what, reference) = context();
            return Err(SecretError::NoToken { what, reference });
        };
        let url = format!(
            "{}/v1/{}/data/{}",
            addr.trim_end_matches('/'),
            reference.mount,
            reference.path
        );
        let response = {
            use secrecy::ExposeSecret as _;
            self.http
                .get(url)
                .header("X-Vault-Token", token.expose_secret())
                .send()
                .await
        };
        let response = response.map_err(|source| {
            let (what, reference) = context();
            SecretError::Unreachable {
                what,
                reference,
                source: source.without_url(),
            }
        })?;
        let status = response.status();
        let body: serde_json::Value = response.json().await.unwrap_or(serde_json::Value::Null);
        if status == reqwest::StatusCode::NOT_FOUND {
            let (what, reference) = context();
            return Err(SecretError::NoSecret { what, reference });
        }
        if !status.is_success() {
            let errors = body
                .get("errors")
                .and_then(serde_json::Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter_map(|e| e.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            let (what, reference) = context();
            return Err(SecretError::Refused {
                what,
                reference,
                status: status.as_u16(),
                errors,
            });
        }
        let Some(data) = body
            .get("data")
            .and_then(|d| d.get("data"))
            .and_then(serde_json::Value::as_object)
        else {
            let (what, reference) = context();
            return Err(SecretError::NotKv2 { what, reference });
        };
        match data.get(&reference.field) {
            Some(serde_json::Value::String(text)) if text.is_empty() => {
                let (what, reference) = context();
                Err(SecretError::EmptyField { what, reference })
            }
            Some(serde_json::Value::String(text)) => Ok(SecretString::from(text.as_str())),
            Some(number @ serde_json::Value::Number(_)) => {
                Ok(SecretString::from(number.to_string()))
            }
            _ => {
                let (what, reference) = context();
                Err(SecretError::NoField { what, reference })
            }
        }
    }

    fn token(&self) -> Option<SecretString> {
        if let Some(token) = &self.token {
            return Some(token.clone());
        }
        let text = std::fs::read_to_string(self.token_file.as_ref()?).ok()?;
        let text = text.trim();
        (!text.is_empty()).then(|| SecretString::from(text))
    }
}

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolver")
            .field("addr", &self.addr)
            .field("token", &self.token.as_ref().map(|_| "set"))
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use secrecy::ExposeSecret;
    use wiremock::matchers::{header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use super::*;

    const VALUE: &str = "vault-value-Y3mR8vK2qW9xN5tB7hZ4";
    const TOKEN: &str = "hvs.token-91c0aa";

    fn env(addr: &str, token: Option<&str>, home: &std::path::Path) -> EnvSnapshot {
        let mut pairs = vec![
            ("VAULT_ADDR".to_owned(), addr.to_owned()),
            ("HOME".to_owned(), home.display().to_string()),
        ];
        if let Some(token) = token {
            pairs.push(("VAULT_TOKEN".to_owned(), token.to_owned()));
        }
        EnvSnapshot::from_pairs(pairs)
    }

    /// A stand-in KV v2 server; `reads` is how many good reads it must see (any when `None`).
    async fn kv2_server(reads: Option<u64>) -> MockServer {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/v1/secret/data/team/app"))
            .and(header("X-Vault-Token", TOKEN))
            .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
                "data": {"data": {"api_key": VALUE, "blank": ""}, "metadata": {"version": 3}}
            })))
            .expect(reads.map_or(0..=u64::MAX, |n| n..=n))
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/v1/secret/data/team/app"))
            .respond_with(
                ResponseTemplate::new(403)
                    .set_body_json(serde_json::json!({"errors": ["permission denied"]})),
            )
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .respond_with(
                ResponseTemplate::new(404).set_body_json(serde_json::json!({"errors": []})),
            )
            .mount(&server)
            .await;
        server
    }

    fn reference(text: &str) -> SecretRef {
        SecretRef::parse(text).unwrap()
    }

    #[tokio::test]
    async fn resolves_a_field_once_per_process() {
        let server = kv2_server(Some(1)).await;
        let home = tempfile::tempdir().unwrap();
        let resolver = Resolver::new(&env(&server.uri(), Some(TOKEN), home.path()));
        let secret = reference("vault:secret/team/app#api_key");
        for _ in 0..3 {
            let value = resolver.resolve("hf_token", &secret).await.unwrap();
            assert_eq!(value.expose_secret(), VALUE);
        }
        // `expect(1)` on the mock fails the test on drop when Vault was read twice.
    }

    #[tokio::test]
    async fn reads_the_token_file_when_vault_token_is_unset() {
        let server = kv2_server(None).await;
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(".vault-token"), format!("{TOKEN}\n")).unwrap();
        let resolver = Resolver::new(&env(&server.uri(), None, home.path()));
        let value = resolver
            .resolve("hf_token", &reference("vault:secret/team/app#api_key"))
            .await
            .unwrap();
        assert_eq!(value.expose_secret(), VALUE);
    }

    fn assert_clean(message: &str) {
        assert!(!message.contains(VALUE), "{message}");
        assert!(!message.contains(TOKEN), "{message}");
        assert!(
            !message.contains("wrong-token-P4xK9mV2qN7tZ3wR8b"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn wrong_token_names_the_reference_and_the_cause() {
        let server = kv2_server(None).await;
        let home = tempfile::tempdir().unwrap();
        let resolver = Resolver::new(&env(
            &server.uri(),
            Some("wrong-token-P4xK9mV2qN7tZ3wR8b"),
            home.path(),
        ));
        let error = resolver
            .resolve(
                "providers.p.api_key",
                &reference("vault:secret/team/app#api_key"),
            )
            .await
            .unwrap_err();
        let message = error.to_string();
        assert!(matches!(error, SecretError::Refused { status: 403, .. }));
        assert!(message.contains("providers.p.api_key"), "{message}");
        assert!(
            message.contains("vault:secret/team/app#api_key"),
            "{message}"
        );
        assert!(message.contains("permission denied"), "{message}");
        assert_clean(&message);
        assert_clean(&format!("{error:?}"));
    }

    #[tokio::test]
    async fn missing_field_and_missing_path_are_named() {
        let server = kv2_server(None).await;
        let home = tempfile::tempdir().unwrap();
        let resolver = Resolver::new(&env(&server.uri(), Some(TOKEN), home.path()));
        let error = resolver
            .resolve("x", &reference("vault:secret/team/app#nope"))
            .await
            .unwrap_err();
        assert!(matches!(error, SecretError::NoField { .. }), "{error:?}");
        assert!(error.to_string().contains("`nope`"));

        let error = resolver
            .resolve("x", &reference("vault:secret/team/app#blank"))
            .await
            .unwrap_err();
        assert!(matches!(error, SecretError::EmptyField { .. }), "{error:?}");
        assert!(error.to_string().contains("`blank` is empty"), "{error}");
        assert_clean(&error.to_string());

        let error = resolver
            .resolve("x", &reference("vault:secret/team/other#api_key"))
            .await
            .unwrap_err();
        assert!(matches!(error, SecretError::NoSecret { .. }), "{error:?}");
        assert!(error.to_string().contains("`secret/team/other`"));
    }

    #[tokio::test]
    async fn server_down_and_missing_settings_fail_clearly() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        let home = tempfile::tempdir().unwrap();
        let secret = reference("vault:secret/team/app#api_key");

        let resolver = Resolver::new(&env(&addr, Some(TOKEN), home.path()));
        let error = resolver.resolve("x", &secret).await.unwrap_err();
        assert!(
            matches!(error, SecretError::Unreachable { .. }),
            "{error:?}"
        );
        assert_clean(&format!("{error:?}"));

        let resolver = Resolver::new(&env("", Some(TOKEN), home.path()));
        let error = resolver.resolve("x", &secret).await.unwrap_err();
        assert!(matches!(error, SecretError::NoAddress { .. }), "{error:?}");

        let resolver = Resolver::new(&env(&addr, None, home.path()));
        let error = resolver.resolve("x", &secret).await.unwrap_err();
        assert!(matches!(error, SecretError::NoToken { .. }), "{error:?}");
        assert!(!format!("{resolver:?}").contains(TOKEN));
    }

    #[tokio::test]
    async fn literals_resolve_without_vault() {
        let home = tempfile::tempdir().unwrap();
        let resolver = Resolver::new(&env("", None, home.path()));
        let value = resolver
            .resolve("x", &reference("plain-literal"))
            .await
            .unwrap();
        assert_eq!(value.expose_secret(), "plain-literal");
    }
}

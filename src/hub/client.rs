//! The Hub's HTTP protocol as `huggingface_hub` speaks it without Xet (wire-facts B):
//! whoami, repo info, create, preupload, the Git LFS batch API with `basic` and
//! `multipart` uploads streamed from disk, verify, the NDJSON commit and `resolve`.
//! Preupload and LFS calls are tried again on 429/5xx ([`super::retry`]), waits on the
//! run's time scale; the commit is never sent twice blindly ([`Client::commit`]).

use std::time::Duration;

use reqwest::StatusCode;
use secrecy::{ExposeSecret as _, SecretString};
use serde::Deserialize;
use serde_json::{Value, json};

use super::HubError;
use super::retry::{self, Failure, Next};
use crate::env::TimeScale;
use crate::llm::Redactor;

mod lfs;

pub use lfs::{Action, Verify, digest};

/// Bound of one request that is not an upload.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// Bytes of one read of a file being streamed.
const READ_CHUNK: usize = 1 << 20;
/// `Accept` and `Content-Type` of the LFS batch API.
const LFS_JSON: &str = "application/vnd.git-lfs+json";

/// The token's account (`whoami-v2`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// User name.
    pub name: String,
    /// The organisations the account is in.
    pub orgs: Vec<String>,
    /// The token's role (`write`, `read`, `fineGrained`).
    pub role: Option<String>,
}

impl Account {
    /// Whether the token may write in `namespace`, as far as `whoami` tells.
    #[must_use]
    pub fn may_write(&self, namespace: &str) -> bool {
        let member = self.name == namespace || self.orgs.iter().any(|o| o == namespace);
        member && self.role.as_deref() != Some("read")
    }
}

/// A repo as `GET /api/models/{repo}` gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoInfo {
    /// The head commit.
    pub sha: String,
    /// Visibility.
    pub private: bool,
    /// Every file path at the head.
    pub files: Vec<String>,
}

/// How the Hub wants a file sent (preupload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Inline in the commit, base64.
    Regular,
    /// Through the LFS batch API, then an `lfsFile` line.
    Lfs,
    /// Left out by the repo's `.gitignore`.
    Ignored,
}

/// One file the preupload asks about.
#[derive(Debug, Clone)]
pub struct Probe {
    /// Repo path.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Its first 512 bytes.
    pub sample: Vec<u8>,
}

/// A commit made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// Its ID.
    pub oid: String,
    /// Its web URL.
    pub url: String,
}

/// A retry's wait, as the client reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    /// Which call.
    pub what: String,
    /// What it met: `answered 429`, `did not answer`.
    pub why: String,
    /// How long it waits.
    pub wait: Duration,
}

/// A Hub client for one token.
pub struct Client {
    http: reqwest::Client,
    base: String,
    token: SecretString,
    scale: TimeScale,
    redactor: Redactor,
    waits: tokio::sync::mpsc::UnboundedSender<Wait>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct WhoAmI {
    name: String,
    #[serde(default)]
    orgs: Vec<Org>,
    #[serde(default)]
    auth: Option<Auth>,
}
#[derive(Deserialize)]
struct Org {
    name: String,
}
#[derive(Deserialize)]
struct Auth {
    #[serde(rename = "accessToken", default)]
    access_token: Option<AccessToken>,
}
#[derive(Deserialize)]
struct AccessToken {
    #[serde(default)]
    role: Option<String>,
}

/// The error text of a Hub answer (`{"error": ...}`, `X-Error-Message`), redacted.
fn hub_message(headers: &reqwest::header::HeaderMap, body: &str, redactor: &Redactor) -> String {
    let from_body = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| match v.get("error") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Array(a)) => Some(
                a.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            _ => None,
        });
    let from_header = headers
        .get("x-error-message")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = from_body.or(from_header).unwrap_or_else(|| {
        let mut short: String = body.chars().take(200).collect();
        if short.trim().is_empty() {
            "(no message)".clone_into(&mut short);
        }
        short
    });
    redactor.server_text(&text)
}

impl Client {
    /// A client of the Hub at `base` with `token`; waits of retries are reported on
    /// `waits` and last `scale` seconds per rule second.
    ///
    /// # Errors
    ///
    /// [`HubError::Http`] when the HTTP client cannot be built.
    pub fn new(
        base: &str,
        token: SecretString,
        scale: TimeScale,
        waits: tokio::sync::mpsc::UnboundedSender<Wait>,
    ) -> Result<Self, HubError> {
        let http = reqwest::Client::builder()
            .user_agent(concat!("overbrainer/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| HubError::Http {
                what: "the HTTP client".to_owned(),
                reason: e.to_string(),
            })?;
        let redactor = Redactor::new();
        redactor.add(&token);
        Ok(Self {
            http,
            base: base.trim_end_matches('/').to_owned(),
            token,
            scale,
            redactor,
            waits,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn auth(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        request.bearer_auth(self.token.expose_secret())
    }

    fn transport(&self, what: &str, error: &reqwest::Error) -> HubError {
        // reqwest's text holds the URL, never the header; redacted all the same.
        HubError::Http {
            what: what.to_owned(),
            reason: self.redactor.server_text(&error.to_string()),
        }
    }

    async fn refused(&self, what: &str, response: reqwest::Response) -> HubError {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.text().await.unwrap_or_default();
        HubError::Refused {
            what: what.to_owned(),
            status,
            message: hub_message(&headers, &body, &self.redactor),
        }
    }

    /// Sends what `make` builds, again after 429/5xx or no answer as [`retry::next`]
    /// says, and gives the first answer that is not retried.
    async fn send_retried<F>(&self, what: &str, mut make: F) -> Result<reqwest::Response, HubError>
    where
        F: AsyncFnMut() -> Result<reqwest::RequestBuilder, HubError>,
    {
        let mut attempt = 1;
        loop {
            let request = make().await?;
            let (next, last, why) = match request.send().await {
                Ok(response) => {
                    let status = response.status();
                    if status.is_success() {
                        return Ok(response);
                    }
                    let retry_after = response
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    let next = retry::next(
                        attempt,
                        Failure::Status(status.as_u16(), retry_after.as_deref()),
                    );
                    if next == Next::GiveUp {
                        return Ok(response);
                    }
                    (next, None, format!("answered {}", status.as_u16()))
                }
                Err(error) => (
                    retry::next(attempt, Failure::Transport),
                    Some(error),
                    "did not answer".to_owned(),
                ),
            };
            match next {
                Next::GiveUp => {
                    let error = last.map_or_else(
                        || HubError::Http {
                            what: what.to_owned(),
                            reason: "no answer".to_owned(),
                        },
                        |e| self.transport(what, &e),
                    );
                    return Err(error);
                }
                Next::Wait(wait) => {
                    let wait = self.scale.scale(wait);
                    let _ = self.waits.send(Wait {
                        what: what.to_owned(),
                        why,
                        wait,
                    });
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
            }
        }
    }

    /// `GET /api/whoami-v2`.
    ///
    /// # Errors
    ///
    /// [`HubError::BadToken`] on 401, [`HubError::Refused`] or [`HubError::Http`] otherwise.
    pub async fn whoami(&self) -> Result<Account, HubError> {
        let what = "whoami";
        let response = self
            .send_retried(what, async || {
                Ok(self.auth(
                    self.http
                        .get(self.url("/api/whoami-v2"))
                        .timeout(REQUEST_TIMEOUT),
                ))
            })
            .await?;
        if response.status() == StatusCode::UNAUTHORIZED {
            return Err(HubError::BadToken);
        }
        if !response.status().is_success() {
            return Err(self.refused(what, response).await);
        }
        let body: WhoAmI = response
            .json()
            .await
            .map_err(|e| self.transport(what, &e))?;
        Ok(Account {
            name: body.name,
            orgs: body.orgs.into_iter().map(|o| o.name).collect(),
            role: body.auth.and_then(|a| a.access_token).and_then(|t| t.role),
        })
    }

    /// `GET /api/models/{repo}`: `None` when the repo does not exist (or is hidden).
    ///
    /// # Errors
    ///
    /// [`HubError::Refused`] or [`HubError::Http`].
    pub async fn repo_info(&self, repo: &str) -> Result<Option<RepoInfo>, HubError> {
        let what = "repo info";
        let url = self.url(&format!("/api/models/{repo}"));
        let response = self
            .send_retried(what, async || {
                Ok(self.auth(self.http.get(&url).timeout(REQUEST_TIMEOUT)))
            })
            .await?;
        if response.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !response.status().is_success() {
            return Err(self.refused(what, response).await);
        }
        let body: Value = response
            .json()
            .await
            .map_err(|e| self.transport(what, &e))?;
        let sha = body
            .get("sha")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let private = body
            .get("private")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let files = body
            .get("siblings")
            .and_then(Value::as_array)
            .map(|s| {
                s.iter()
                    .filter_map(|f| {
                        f.get("rfilename")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(Some(RepoInfo {
            sha,
            private,
            files,
        }))
    }

    /// `POST /api/repos/create`: `true` when created, `false` when it existed (409).
    ///
    /// # Errors
    ///
    /// [`HubError::NoWriteAccess`] on 403, [`HubError::Refused`] or [`HubError::Http`].
    pub async fn create(&self, repo: &str, private: bool) -> Result<bool, HubError> {
        let what = "repo create";
        let (namespace, name) = repo.split_once('/').unwrap_or(("", repo));
        let body = json!({
            "name": name,
            "organization": namespace,
            "type": "model",
            "private": private,
            "visibility": if private { "private" } else { "public" },
        });
        let url = self.url("/api/repos/create");
        let response = self
            .send_retried(what, async || {
                Ok(self.auth(self.http.post(&url).json(&body).timeout(REQUEST_TIMEOUT)))
            })
            .await?;
        match response.status() {
            s if s.is_success() => Ok(true),
            StatusCode::CONFLICT => Ok(false),
            StatusCode::FORBIDDEN => Err(HubError::NoWriteAccess {
                namespace: namespace.to_owned(),
            }),
            _ => Err(self.refused(what, response).await),
        }
    }

    /// The bytes of `path` at `rev` (`resolve`), `None` when the file does not exist.
    ///
    /// # Errors
    ///
    /// [`HubError::Refused`] or [`HubError::Http`].
    pub async fn download_small(
        &self,
        repo: &str,
        rev: &str,
        path: &str,
    ) -> Result<Option<Vec<u8>>, HubError> {
        let what = "download";
        let url = self.url(&format!("/{repo}/resolve/{rev}/{path}"));
        let response = self
            .send_retried(what, async || {
                Ok(self.auth(self.http.get(&url).timeout(REQUEST_TIMEOUT)))
            })
            .await?;
        if response.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !response.status().is_success() {
            return Err(self.refused(what, response).await);
        }
        let bytes = response
            .bytes()
            .await
            .map_err(|e| self.transport(what, &e))?;
        Ok(Some(bytes.to_vec()))
    }

    /// `POST /api/models/{repo}/preupload/main`: the mode of each file, in order.
    ///
    /// # Errors
    ///
    /// [`HubError::NoWriteAccess`] on 403, [`HubError::Refused`], [`HubError::Http`], or
    /// [`HubError::Protocol`] for an answer that lacks a file or names another mode.
    pub async fn preupload(&self, repo: &str, files: &[Probe]) -> Result<Vec<Mode>, HubError> {
        use base64::Engine as _;
        let what = "preupload";
        let body = json!({
            "files": files.iter().map(|f| json!({
                "path": f.path,
                "size": f.size,
                "sample": base64::engine::general_purpose::STANDARD.encode(&f.sample),
            })).collect::<Vec<_>>(),
        });
        let url = self.url(&format!("/api/models/{repo}/preupload/main"));
        let response = self
            .send_retried(what, async || {
                Ok(self.auth(self.http.post(&url).json(&body).timeout(REQUEST_TIMEOUT)))
            })
            .await?;
        if response.status() == StatusCode::FORBIDDEN {
            return Err(HubError::NoWriteAccess {
                namespace: repo.split('/').next().unwrap_or_default().to_owned(),
            });
        }
        if !response.status().is_success() {
            return Err(self.refused(what, response).await);
        }
        let answer: Value = response
            .json()
            .await
            .map_err(|e| self.transport(what, &e))?;
        let listed = answer
            .get("files")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        files
            .iter()
            .map(|f| {
                let entry = listed
                    .iter()
                    .find(|e| e.get("path").and_then(Value::as_str) == Some(&f.path))
                    .ok_or_else(|| {
                        HubError::Protocol(format!("preupload did not answer for {}", f.path))
                    })?;
                if entry.get("shouldIgnore").and_then(Value::as_bool) == Some(true) {
                    return Ok(Mode::Ignored);
                }
                match entry.get("uploadMode").and_then(Value::as_str) {
                    _ if f.size == 0 => Ok(Mode::Regular),
                    Some("regular") => Ok(Mode::Regular),
                    Some("lfs") => Ok(Mode::Lfs),
                    other => Err(HubError::Protocol(format!(
                        "preupload gave {} the upload mode {other:?}",
                        f.path
                    ))),
                }
            })
            .collect()
    }

    /// The NDJSON commit of `lines` (after the header made here, with `parent` as its
    /// parent commit). Sent once; when no answer comes back, the repo's head tells whether
    /// it landed: moved from `parent` means committed, unchanged means it is sent once more
    /// (the parent commit makes a second landing impossible).
    ///
    /// # Errors
    ///
    /// [`HubError::NoWriteAccess`] on 403, [`HubError::Refused`] or [`HubError::Http`].
    pub async fn commit(
        &self,
        repo: &str,
        summary: &str,
        parent: &str,
        lines: &[Value],
    ) -> Result<Committed, HubError> {
        let what = "commit";
        let mut body = json!({"key": "header", "value": {"summary": summary, "description": "", "parentCommit": parent}}).to_string();
        body.push('\n');
        for line in lines {
            body.push_str(&line.to_string());
            body.push('\n');
        }
        let url = self.url(&format!("/api/models/{repo}/commit/main"));
        for attempt in 0..2 {
            let sent = self
                .auth(self.http.post(&url))
                .header(reqwest::header::CONTENT_TYPE, "application/x-ndjson")
                .body(body.clone())
                .timeout(REQUEST_TIMEOUT)
                .send()
                .await;
            let error = match sent {
                Ok(response) if response.status().is_success() => {
                    let answer: Value = response
                        .json()
                        .await
                        .map_err(|e| self.transport(what, &e))?;
                    let oid = answer
                        .get("commitOid")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    let url = answer.get("commitUrl").and_then(Value::as_str).map_or_else(
                        || format!("{}/{repo}/commit/{oid}", self.base),
                        str::to_owned,
                    );
                    return Ok(Committed { oid, url });
                }
                Ok(response) if response.status() == StatusCode::FORBIDDEN => {
                    return Err(HubError::NoWriteAccess {
                        namespace: repo.split('/').next().unwrap_or_default().to_owned(),
                    });
                }
                Ok(response) if response.status().is_server_error() => {
                    self.refused(what, response).await
                }
                Ok(response) => return Err(self.refused(what, response).await),
                Err(error) => self.transport(what, &error),
            };
            // No answer or a server error: did it land?
            match self.repo_info(repo).await? {
                Some(info) if info.sha != parent => {
                    return Ok(Committed {
                        url: format!("{}/{repo}/commit/{}", self.base, info.sha),
                        oid: info.sha,
                    });
                }
                _ if attempt == 0 => {}
                _ => return Err(error),
            }
        }
        Err(HubError::Protocol("the commit was not made".to_owned()))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn account_may_write_in_its_own_namespace_and_orgs_unless_the_token_reads_only() {
        let account = Account {
            name: "alice".into(),
            orgs: vec!["team".into()],
            role: Some("write".into()),
        };
        assert!(account.may_write("alice"));
        assert!(account.may_write("team"));
        assert!(!account.may_write("bob"));
        let reader = Account {
            role: Some("read".into()),
            ..account
        };
        assert!(!reader.may_write("alice"));
    }
}

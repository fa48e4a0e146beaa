//! The Hub's HTTP protocol as `huggingface_hub` speaks it without Xet (wire-facts B):
//! whoami, repo info, create, preupload, the Git LFS batch API with `basic` and
//! `multipart` uploads streamed from disk, verify, the NDJSON commit and `resolve`.
//! Preupload and LFS calls are tried again on 429/5xx ([`super::retry`]), waits on the
//! run's time scale; the commit is never sent twice blindly ([`Client::commit`]).

use std::path::Path;
use std::time::Duration;

use reqwest::StatusCode;
use secrecy::{ExposeSecret as _, SecretString};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncSeekExt as _};

use super::HubError;
use super::retry::{self, Failure, Next};
use crate::env::TimeScale;
use crate::llm::Redactor;

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

/// What the LFS batch says of one object.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Already stored: nothing to send.
    Stored,
    /// One `PUT` of the whole object.
    Basic {
        /// Where to.
        href: String,
        /// Headers to send.
        header: Vec<(String, String)>,
        /// Verify afterwards.
        verify: Option<Verify>,
    },
    /// Parts of `chunk_size` bytes, each `PUT` to its URL, then a completion `POST`.
    Multipart {
        /// Completion URL.
        href: String,
        /// Bytes per part.
        chunk_size: u64,
        /// The parts' URLs, in order.
        parts: Vec<String>,
        /// Verify afterwards.
        verify: Option<Verify>,
    },
}

/// The verify step of an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verify {
    /// Where to.
    pub href: String,
    /// Headers to send.
    pub header: Vec<(String, String)>,
}

/// A commit made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// Its ID.
    pub oid: String,
    /// Its web URL.
    pub url: String,
}

/// A Hub client for one token.
pub struct Client {
    http: reqwest::Client,
    base: String,
    token: SecretString,
    scale: TimeScale,
    redactor: Redactor,
    waits: tokio::sync::mpsc::UnboundedSender<(String, Duration)>,
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
    /// `waits` (what, how long) and last `scale` seconds per rule second.
    ///
    /// # Errors
    ///
    /// [`HubError::Http`] when the HTTP client cannot be built.
    pub fn new(
        base: &str,
        token: SecretString,
        scale: TimeScale,
        waits: tokio::sync::mpsc::UnboundedSender<(String, Duration)>,
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
            let (next, last) = match request.send().await {
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
                    (next, None)
                }
                Err(error) => (retry::next(attempt, Failure::Transport), Some(error)),
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
                    let _ = self.waits.send((what.to_owned(), wait));
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

    /// The LFS batch of `objects` (`(oid, size)`): what to do with each, in order.
    ///
    /// # Errors
    ///
    /// [`HubError::Refused`], [`HubError::Http`], or [`HubError::Protocol`] for an object
    /// the answer lacks, an object error, or a malformed action.
    pub async fn lfs_batch(
        &self,
        repo: &str,
        objects: &[(String, u64)],
    ) -> Result<Vec<Action>, HubError> {
        let what = "LFS batch";
        let body = json!({
            "operation": "upload",
            "transfers": ["basic", "multipart"],
            "objects": objects.iter().map(|(oid, size)| json!({"oid": oid, "size": size})).collect::<Vec<_>>(),
            "hash_algo": "sha256",
            "ref": {"name": "main"},
        });
        let url = self.url(&format!("/{repo}.git/info/lfs/objects/batch"));
        let response = self
            .send_retried(what, async || {
                Ok(self.auth(
                    self.http
                        .post(&url)
                        .header(reqwest::header::ACCEPT, LFS_JSON)
                        .header(reqwest::header::CONTENT_TYPE, LFS_JSON)
                        .body(body.to_string())
                        .timeout(REQUEST_TIMEOUT),
                ))
            })
            .await?;
        if !response.status().is_success() {
            return Err(self.refused(what, response).await);
        }
        let answer: Value = response
            .json()
            .await
            .map_err(|e| self.transport(what, &e))?;
        let listed = answer
            .get("objects")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        objects
            .iter()
            .map(|(oid, _)| {
                let entry = listed
                    .iter()
                    .find(|e| e.get("oid").and_then(Value::as_str) == Some(oid))
                    .ok_or_else(|| {
                        HubError::Protocol(format!("the LFS batch did not answer for object {oid}"))
                    })?;
                if let Some(error) = entry.get("error") {
                    let message = error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("(no message)");
                    return Err(HubError::Protocol(format!(
                        "the LFS batch refused object {oid}: {}",
                        self.redactor.server_text(message)
                    )));
                }
                parse_action(entry)
            })
            .collect()
    }

    /// Uploads `file` (`size` bytes, sha256 `oid`) as `action` says, streamed from disk,
    /// then verifies it.
    ///
    /// # Errors
    ///
    /// [`HubError::Io`] when the file cannot be read, [`HubError::Refused`] or
    /// [`HubError::Http`] when the store or verify refuses.
    pub async fn upload(
        &self,
        file: &Path,
        oid: &str,
        size: u64,
        action: &Action,
    ) -> Result<(), HubError> {
        match action {
            Action::Stored => Ok(()),
            Action::Basic {
                href,
                header,
                verify,
            } => {
                let what = format!("upload of {}", file.display());
                let response = self
                    .send_retried(&what, async || {
                        let body = file_body(file, 0, size).await?;
                        let mut request = self
                            .http
                            .put(href)
                            .header(reqwest::header::CONTENT_LENGTH, size)
                            .body(body);
                        for (k, v) in header {
                            request = request.header(k, v);
                        }
                        Ok(request)
                    })
                    .await?;
                if !response.status().is_success() {
                    return Err(self.refused(&what, response).await);
                }
                self.verify(verify.as_ref(), oid, size).await
            }
            Action::Multipart {
                href,
                chunk_size,
                parts,
                verify,
            } => {
                let mut etags = Vec::with_capacity(parts.len());
                for (i, part_url) in parts.iter().enumerate() {
                    let offset = chunk_size * i as u64;
                    let len = (*chunk_size).min(size - offset);
                    let what = format!("upload of part {} of {}", i + 1, file.display());
                    let response = self
                        .send_retried(&what, async || {
                            let body = file_body(file, offset, len).await?;
                            Ok(self
                                .http
                                .put(part_url)
                                .header(reqwest::header::CONTENT_LENGTH, len)
                                .body(body))
                        })
                        .await?;
                    if !response.status().is_success() {
                        return Err(self.refused(&what, response).await);
                    }
                    let etag = response
                        .headers()
                        .get(reqwest::header::ETAG)
                        .and_then(|v| v.to_str().ok())
                        .ok_or_else(|| {
                            HubError::Protocol(format!(
                                "part {} of {} came back without an ETag",
                                i + 1,
                                file.display()
                            ))
                        })?
                        .to_owned();
                    etags.push(json!({"partNumber": i + 1, "etag": etag}));
                }
                let what = format!("completion of the upload of {}", file.display());
                let body = json!({"oid": oid, "parts": etags}).to_string();
                let response = self
                    .send_retried(&what, async || {
                        Ok(self
                            .http
                            .post(href)
                            .header(reqwest::header::ACCEPT, LFS_JSON)
                            .header(reqwest::header::CONTENT_TYPE, LFS_JSON)
                            .body(body.clone())
                            .timeout(REQUEST_TIMEOUT))
                    })
                    .await?;
                if !response.status().is_success() {
                    return Err(self.refused(&what, response).await);
                }
                self.verify(verify.as_ref(), oid, size).await
            }
        }
    }

    async fn verify(&self, verify: Option<&Verify>, oid: &str, size: u64) -> Result<(), HubError> {
        let Some(verify) = verify else {
            return Ok(());
        };
        let what = format!("verify of object {oid}");
        let body = json!({"oid": oid, "size": size}).to_string();
        let response = self
            .send_retried(&what, async || {
                let mut request = self
                    .http
                    .post(&verify.href)
                    .header(reqwest::header::ACCEPT, LFS_JSON)
                    .header(reqwest::header::CONTENT_TYPE, LFS_JSON)
                    .body(body.clone())
                    .timeout(REQUEST_TIMEOUT);
                let has_auth = verify
                    .header
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
                for (k, v) in &verify.header {
                    request = request.header(k, v);
                }
                if !has_auth {
                    request = self.auth(request);
                }
                Ok(request)
            })
            .await?;
        if !response.status().is_success() {
            return Err(self.refused(&what, response).await);
        }
        Ok(())
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

fn headers_of(value: Option<&Value>) -> Vec<(String, String)> {
    value
        .and_then(Value::as_object)
        .map(|h| {
            h.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// One object's actions of an LFS batch answer.
fn parse_action(entry: &Value) -> Result<Action, HubError> {
    let oid = entry.get("oid").and_then(Value::as_str).unwrap_or_default();
    let size = entry
        .get("size")
        .and_then(Value::as_u64)
        .unwrap_or_default();
    let Some(actions) = entry.get("actions") else {
        return Ok(Action::Stored);
    };
    let verify = actions.get("verify").and_then(|v| {
        v.get("href").and_then(Value::as_str).map(|href| Verify {
            href: href.to_owned(),
            header: headers_of(v.get("header")),
        })
    });
    let Some(upload) = actions.get("upload") else {
        return Ok(Action::Stored);
    };
    let href = upload
        .get("href")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            HubError::Protocol(format!("the upload action of object {oid} has no href"))
        })?
        .to_owned();
    let header = headers_of(upload.get("header"));
    let Some((_, chunk)) = header.iter().find(|(k, _)| k == "chunk_size") else {
        return Ok(Action::Basic {
            href,
            header,
            verify,
        });
    };
    let chunk_size: u64 = chunk.parse().ok().filter(|c| *c > 0).ok_or_else(|| {
        HubError::Protocol(format!(
            "object {oid}: chunk_size {chunk:?} is not a positive integer"
        ))
    })?;
    let mut numbered: Vec<(u64, String)> = header
        .iter()
        .filter_map(|(k, v)| k.parse::<u64>().ok().map(|n| (n, v.clone())))
        .collect();
    numbered.sort_by_key(|(n, _)| *n);
    let expected = size.div_ceil(chunk_size);
    if numbered.len() as u64 != expected
        || numbered
            .iter()
            .enumerate()
            .any(|(i, (n, _))| *n != i as u64 + 1)
    {
        return Err(HubError::Protocol(format!(
            "object {oid}: {} part URLs for {expected} parts",
            numbered.len()
        )));
    }
    Ok(Action::Multipart {
        href,
        chunk_size,
        parts: numbered.into_iter().map(|(_, u)| u).collect(),
        verify,
    })
}

/// `len` bytes of `file` from `offset`, as a body streamed in reads of [`READ_CHUNK`].
async fn file_body(file: &Path, offset: u64, len: u64) -> Result<reqwest::Body, HubError> {
    let io = |source| HubError::Io {
        path: file.to_path_buf(),
        source,
    };
    let mut handle = tokio::fs::File::open(file).await.map_err(io)?;
    handle
        .seek(std::io::SeekFrom::Start(offset))
        .await
        .map_err(io)?;
    let reader = handle.take(len);
    let stream = tokio_util::io::ReaderStream::with_capacity(reader, READ_CHUNK);
    Ok(reqwest::Body::wrap_stream(stream))
}

/// The sha256 (hex) and the first 512 bytes of `file`, read 1 MiB at a time.
///
/// # Errors
///
/// [`HubError::Io`] when it cannot be read.
pub async fn digest(file: &Path) -> Result<(String, Vec<u8>), HubError> {
    use sha2::Digest as _;
    let io = |source| HubError::Io {
        path: file.to_path_buf(),
        source,
    };
    let mut handle = tokio::fs::File::open(file).await.map_err(io)?;
    let mut hasher = sha2::Sha256::new();
    let mut sample = Vec::new();
    let mut buffer = vec![0; READ_CHUNK];
    loop {
        let n = handle.read(&mut buffer).await.map_err(io)?;
        if n == 0 {
            break;
        }
        if sample.len() < 512 {
            let take = (512 - sample.len()).min(n);
            sample.extend_from_slice(&buffer[..take]);
        }
        hasher.update(&buffer[..n]);
    }
    Ok((hex::encode(hasher.finalize()), sample))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parse_action_reads_basic_multipart_and_stored() {
        let stored = json!({"oid": "a", "size": 3});
        assert_eq!(parse_action(&stored).unwrap(), Action::Stored);
        let basic = json!({"oid": "a", "size": 3, "actions": {"upload": {"href": "http://x/a"}, "verify": {"href": "http://x/v", "header": {"Authorization": "Bearer v"}}}});
        assert_eq!(
            parse_action(&basic).unwrap(),
            Action::Basic {
                href: "http://x/a".into(),
                header: vec![],
                verify: Some(Verify {
                    href: "http://x/v".into(),
                    header: vec![("Authorization".into(), "Bearer v".into())]
                }),
            }
        );
        let multi = json!({"oid": "a", "size": 5, "actions": {"upload": {"href": "http://x/c", "header": {"chunk_size": "2", "2": "http://x/2", "1": "http://x/1", "3": "http://x/3"}}}});
        assert_eq!(
            parse_action(&multi).unwrap(),
            Action::Multipart {
                href: "http://x/c".into(),
                chunk_size: 2,
                parts: vec![
                    "http://x/1".into(),
                    "http://x/2".into(),
                    "http://x/3".into()
                ],
                verify: None,
            }
        );
    }

    #[test]
    fn parse_action_refuses_a_part_count_that_does_not_cover_the_object() {
        let multi = json!({"oid": "a", "size": 5, "actions": {"upload": {"href": "h", "header": {"chunk_size": "2", "1": "u1", "2": "u2"}}}});
        assert!(
            parse_action(&multi)
                .unwrap_err()
                .to_string()
                .contains("3 parts")
        );
        let zero = json!({"oid": "a", "size": 5, "actions": {"upload": {"href": "h", "header": {"chunk_size": "0"}}}});
        assert!(parse_action(&zero).is_err());
    }

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

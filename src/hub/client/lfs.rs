//! The Git LFS part of the Hub client (wire-facts section B): the batch, the `basic`
//! and `multipart` uploads streamed from disk, the verify step, and the SHA-256 of a file.

use std::path::Path;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncSeekExt as _};

use super::{Client, LFS_JSON, READ_CHUNK, REQUEST_TIMEOUT};
use crate::hub::HubError;

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

impl Client {
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
}

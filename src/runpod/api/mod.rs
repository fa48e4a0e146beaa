//! A client of Runpod REST v2 (`https://api.runpod.io/v2`, `OVERBRAINER_RUNPOD__BASE_URL`
//! overrides it; wire-facts A.2, A.3): pods (create, get, list, delete, "gone"), account
//! secrets (create, delete). The key travels in the `Authorization` header only, marked
//! sensitive; every text Runpod sends back passes through the [`Redactor`] before it is
//! kept ([`error`]). The create call is sent once per call here: its retry table is the
//! lifecycle's ([`ApiError::refusal`]). The reads and deletes, safe to send again, wait
//! out a `429` here, with the same [`RateLimit`] policy as the create table, bounded by
//! its deadline ([`super::rate`]).

mod catalog;
pub mod error;
pub mod logs;
pub mod wire;

use std::time::Duration;

use reqwest::Method;
use secrecy::{ExposeSecret, SecretString};

pub use error::{ApiError, Problem};
pub use wire::{
    CreatePod, GpuRequest, Mounts, NetworkMount, Pod, PodGpu, PodSsh, Secret, SshDirect,
    host_key_secret, pod_name, secret_reference,
};

use super::rate::RateLimit;
use crate::llm::Redactor;

/// A Runpod REST v2 client for one account.
#[derive(Clone)]
pub struct RunpodClient {
    http: reqwest::Client,
    base: String,
    key: SecretString,
    redactor: Redactor,
    timeout: Duration,
    rate_limit: RateLimit,
}

impl std::fmt::Debug for RunpodClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunpodClient")
            .field("base", &self.base)
            .field("key", &"set")
            .finish_non_exhaustive()
    }
}

/// An answer with its status and body.
struct Answer {
    status: u16,
    body: Vec<u8>,
}

/// The `Retry-After` of an answer, when it has one that reads.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| crate::llm::retry::parse_retry_after(v, jiff::Timestamp::now()))
}

impl RunpodClient {
    /// A client of the API at `base` with `key`, each call bounded by `timeout`; the key
    /// is registered in `redactor`.
    ///
    /// # Errors
    /// [`ApiError::Setup`] when the HTTP client cannot be built, [`ApiError::BadKey`] when
    /// the key cannot be an HTTP header value.
    pub fn new(
        base: &str,
        key: SecretString,
        redactor: Redactor,
        timeout: Duration,
    ) -> Result<Self, ApiError> {
        if reqwest::header::HeaderValue::from_str(&format!("Bearer {}", key.expose_secret()))
            .is_err()
        {
            return Err(ApiError::BadKey);
        }
        redactor.add(&key);
        let http = reqwest::Client::builder()
            .timeout(timeout)
            // The key must never follow a redirect to another host.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(ApiError::Setup)?;
        Ok(Self {
            http,
            base: base.trim_end_matches('/').to_owned(),
            key,
            redactor,
            timeout,
            rate_limit: RateLimit::default(),
        })
    }

    /// This client with `rate_limit` for its reads and deletes (the default is
    /// [`RateLimit::default`], real time).
    #[must_use]
    pub fn with_rate_limit(self, rate_limit: RateLimit) -> Self {
        Self { rate_limit, ..self }
    }

    /// The redactor holding the key.
    #[must_use]
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        let mut auth =
            reqwest::header::HeaderValue::from_str(&format!("Bearer {}", self.key.expose_secret()))
                .unwrap_or_else(|_| reqwest::header::HeaderValue::from_static(""));
        auth.set_sensitive(true);
        self.http
            .request(method, format!("{}{path}", self.base))
            .header(reqwest::header::AUTHORIZATION, auth)
            .header(reqwest::header::ACCEPT, "application/json")
    }

    /// The API's base URL without credentials, query or fragment, to name where a call
    /// could not connect: a mistyped `OVERBRAINER_RUNPOD__BASE_URL` (host or path) shows.
    fn origin(&self) -> String {
        reqwest::Url::parse(&self.base).map_or_else(
            |_| "the configured address".to_owned(),
            |mut url| {
                let _ = url.set_username("");
                let _ = url.set_password(None);
                url.set_query(None);
                url.set_fragment(None);
                url.as_str().trim_end_matches('/').to_owned()
            },
        )
    }

    /// Sends `builder`; a success or one of the statuses in `also` is an answer, any
    /// other status an error with its redacted problem body (logged at `debug` only).
    async fn send(
        &self,
        what: &str,
        builder: reqwest::RequestBuilder,
        also: &[u16],
    ) -> Result<Answer, ApiError> {
        let broke = |error: reqwest::Error| {
            if error.is_timeout() {
                ApiError::Timeout {
                    what: what.to_owned(),
                    timeout: self.timeout,
                }
            } else {
                ApiError::Connect {
                    what: format!("{what}` at `{}", self.origin()),
                    source: error.without_url(),
                }
            }
        };
        let response = builder.send().await.map_err(broke)?;
        let status = response.status().as_u16();
        let retry_after = retry_after(response.headers());
        let body = response.bytes().await.map_err(broke)?.to_vec();
        if (200..300).contains(&status) || also.contains(&status) {
            return Ok(Answer { status, body });
        }
        let problem = Problem::parse(status, &body, &self.redactor);
        tracing::debug!(
            call = what,
            status,
            reason = problem.reason(),
            "Runpod error answer"
        );
        if status == 429 {
            return Err(ApiError::RateLimited {
                what: what.to_owned(),
                retry_after,
            });
        }
        Err(ApiError::Problem {
            what: what.to_owned(),
            problem,
        })
    }

    /// [`Self::send`] of a call that is safe to send again (a read, a delete), built
    /// afresh by `build` for each try: a 429 is waited out as [`RateLimit::next`] says,
    /// and given up with its [`ApiError::RateLimited`] past the policy's bounds.
    async fn send_again(
        &self,
        what: &str,
        build: impl Fn() -> reqwest::RequestBuilder,
        also: &[u16],
    ) -> Result<Answer, ApiError> {
        self.waiting_out_rate_limits(|| self.send(what, build(), also))
            .await
    }

    /// Makes `attempt` again while it fails with [`ApiError::RateLimited`], waiting as
    /// [`RateLimit::next`] says, and gives the 429 up past the policy's bounds.
    async fn waiting_out_rate_limits<T, F>(&self, attempt: impl Fn() -> F) -> Result<T, ApiError>
    where
        F: std::future::Future<Output = Result<T, ApiError>>,
    {
        let mut waits = 0;
        let mut waited = Duration::ZERO;
        loop {
            match attempt().await {
                Err(ApiError::RateLimited { what, retry_after }) => {
                    waits += 1;
                    let Some(wait) = self.rate_limit.next(retry_after, waits, waited) else {
                        return Err(ApiError::RateLimited { what, retry_after });
                    };
                    tracing::debug!(
                        call = what,
                        wait_s = wait.as_secs_f64(),
                        "Runpod 429: waiting"
                    );
                    tokio::time::sleep(wait).await;
                    waited += wait;
                }
                other => return other,
            }
        }
    }

    fn decode<T: serde::de::DeserializeOwned>(
        &self,
        what: &str,
        body: &[u8],
    ) -> Result<T, ApiError> {
        serde_json::from_slice(body).map_err(|e| ApiError::Decode {
            what: what.to_owned(),
            cause: self.redactor.server_text(&e.to_string()),
        })
    }

    /// `POST /v2/pods`: one create call (201 and the pod).
    ///
    /// # Errors
    /// Any failure; [`ApiError::refusal`] classifies it for the retry table.
    pub async fn create_pod(&self, body: &CreatePod) -> Result<Pod, ApiError> {
        let what = "POST /pods";
        let answer = self
            .send(what, self.request(Method::POST, "/pods").json(body), &[])
            .await?;
        self.decode(what, &answer.body)
    }

    /// `GET /v2/pods/{id}`: the pod, `None` on 404; a 429 is waited out
    /// ([`RateLimit::next`]).
    ///
    /// # Errors
    /// Any failure but 404.
    pub async fn get_pod(&self, id: &str) -> Result<Option<Pod>, ApiError> {
        let path = format!("/pods/{}", path_id(id)?);
        let what = format!("GET {path}");
        let answer = self
            .send_again(&what, || self.request(Method::GET, &path), &[404])
            .await?;
        if answer.status == 404 {
            return Ok(None);
        }
        self.decode(&what, &answer.body).map(Some)
    }

    /// `GET /v2/pods`: every pod of the account (the list is wrapped, `{"pods": [...]}`);
    /// a 429 is waited out ([`RateLimit::next`]).
    ///
    /// # Errors
    /// Any failure.
    pub async fn list_pods(&self) -> Result<Vec<Pod>, ApiError> {
        let what = "GET /pods";
        let answer = self
            .send_again(what, || self.request(Method::GET, "/pods"), &[])
            .await?;
        let list: wire::PodList = self.decode(what, &answer.body)?;
        Ok(list.pods)
    }

    /// The pods named `name`, oldest first (v2 has no name filter: filtered here).
    ///
    /// # Errors
    /// Any failure of the listing.
    pub async fn pods_named(&self, name: &str) -> Result<Vec<Pod>, ApiError> {
        let mut pods: Vec<Pod> = self
            .list_pods()
            .await?
            .into_iter()
            .filter(|p| p.name == name)
            .collect();
        pods.sort_by_key(|p| (p.created_unix(), p.id.clone()));
        Ok(pods)
    }

    /// `DELETE /v2/pods/{id}`: 204, or 404 when it is already gone; a 429 is waited out
    /// ([`RateLimit::next`]). Not proof that it is gone: see [`Self::gone`].
    ///
    /// # Errors
    /// Any other answer.
    pub async fn delete_pod(&self, id: &str) -> Result<(), ApiError> {
        let path = format!("/pods/{}", path_id(id)?);
        self.send_again(
            &format!("DELETE {path}"),
            || self.request(Method::DELETE, &path),
            &[404],
        )
        .await
        .map(|_| ())
    }

    /// Whether pod `id` is still listed, and whether `GET` still finds it: gone is
    /// `(false, false)`.
    ///
    /// # Errors
    /// Any failure of either call.
    pub async fn gone(&self, id: &str) -> Result<(bool, bool), ApiError> {
        let listed = self.list_pods().await?.iter().any(|p| p.id == id);
        let found = self.get_pod(id).await?.is_some();
        Ok((listed, found))
    }

    /// `POST /v2/account/secrets`: a new account secret `name` holding `value` (sent in
    /// the body only, never logged).
    ///
    /// # Errors
    /// Any failure; 401 or 403 means the key cannot manage secrets (POD-21).
    pub async fn create_secret(
        &self,
        name: &str,
        value: &SecretString,
        description: Option<&str>,
    ) -> Result<Secret, ApiError> {
        let what = "POST /account/secrets";
        let body = wire::CreateSecret {
            name,
            value: value.expose_secret(),
            description,
        };
        let answer = self
            .send(
                what,
                self.request(Method::POST, "/account/secrets").json(&body),
                &[],
            )
            .await?;
        self.decode(what, &answer.body)
    }

    /// `DELETE /v2/account/secrets/{id}`; 404 counts as deleted; a 429 is waited out
    /// ([`RateLimit::next`]).
    ///
    /// # Errors
    /// Any other failure.
    pub async fn delete_secret(&self, id: &str) -> Result<(), ApiError> {
        let path = format!("/account/secrets/{}", path_id(id)?);
        self.send_again(
            &format!("DELETE {path}"),
            || self.request(Method::DELETE, &path),
            &[404],
        )
        .await
        .map(|_| ())
    }
}

/// An ID as a path segment: only letters, digits, `-`, `_` and `.` (Runpod's IDs), so
/// that no answer can steer a call to another path.
fn path_id(id: &str) -> Result<&str, ApiError> {
    let ok = !id.is_empty()
        && id != "."
        && id != ".."
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(id)
    } else {
        Err(ApiError::Url(id.escape_default().to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_ids_become_path_segments() {
        assert_eq!(path_id("xedezhzb9la3ye").unwrap(), "xedezhzb9la3ye");
        for bad in ["", "..", "a/b", "a?b", "a b", "p\n1"] {
            assert!(path_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_key_that_is_no_header_value_is_refused_without_echo() {
        let key = SecretString::from("rpa_CANARY\nZq8Wm3Xv9Kp2Tz5Rb8Nd");
        let error = RunpodClient::new(
            "http://127.0.0.1:9",
            key,
            Redactor::new(),
            Duration::from_secs(1),
        )
        .unwrap_err();
        let text = format!("{error} {error:?}");
        assert!(!text.contains("Zq8Wm3Xv9Kp2"), "{text}");
        assert!(text.contains("OVERBRAINER_RUNPOD__API_KEY"), "{text}");
    }

    // A trial's base URL with a wrong path could not be told from the error: the path
    // is named, credentials and query never.
    #[tokio::test]
    async fn a_refused_connection_names_the_base_url_without_credentials() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let client = RunpodClient::new(
            &format!("http://user:pw8Kq2Zt@127.0.0.1:{port}/v2?token=q9Xw4"),
            SecretString::from("rpa_CANARYz5Lw8Hn2Qc7Vt4Kd1Mx6"),
            Redactor::new(),
            Duration::from_secs(5),
        )
        .unwrap();
        let text = client.list_pods().await.unwrap_err().to_string();
        assert!(
            text.contains(&format!("at `http://127.0.0.1:{port}/v2`")),
            "{text}"
        );
        assert!(
            !text.contains("pw8Kq2Zt") && !text.contains("q9Xw4"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_refused_connection_says_why_and_never_the_key() {
        // A port that was free a moment ago: nothing listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let client = RunpodClient::new(
            &format!("http://127.0.0.1:{port}"),
            SecretString::from("rpa_CANARYq7Wm2Xv8Kp3Tz6Rb9Nd4Lc1"),
            Redactor::new(),
            Duration::from_secs(5),
        )
        .unwrap();
        let error = client.list_pods().await.unwrap_err();
        let text = error.to_string();
        assert!(text.contains("could not be reached: "), "{text}");
        // Where it tried, so a mistyped base URL shows; never credentials.
        assert!(
            text.contains(&format!("`GET /pods` at `http://127.0.0.1:{port}`")),
            "{text}"
        );
        assert!(text.to_lowercase().contains("refused"), "{text}");
        assert!(
            !format!("{text} {error:?}").contains("q7Wm2Xv8Kp3"),
            "{text}"
        );
    }
}

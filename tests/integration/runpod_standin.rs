//! A stand-in of Runpod REST v2 (`/v2/pods`, `/v2/account/secrets`), written from
//! `shared/reference/wire-facts.md` section A: bearer auth (401 problem without it), the
//! closed nested create body (422 on an unknown field, 400 on a missing GPU), `201` with
//! the pod, wrapped lists with no name filter, `DELETE` 204 (404 when unknown), RFC 9457
//! problem bodies as `application/problem+json`, `429` with an integer `Retry-After` (on
//! creates, and on lists, gets and deletes of pods: [`Faults::limited`]), and
//! `status: RUNNING` several polls before `ssh.direct` exists. Stateful: every pod and
//! secret with its creation and deletion times, so a test can assert at its end that no
//! pod outlived its bound and nothing is left. Faults are injected through [`Faults`].
//!
//! Its pods are records ([`Standin::start`], `ssh.direct` pointing where the test says),
//! or real Podman containers ([`Standin::with_pods`], `runpod_pods`), whose own output
//! joins their log as `container` lines when [`State::container_output`] is set.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::runpod_pods::PodRunner;

/// Capacity failure text recorded from the live API (wire-facts A.2).
pub const CAPACITY: &str = "There are no longer any instances available with the requested specifications. Please refresh and try again.";

/// The pod-scoped key every real pod of the stand-in gets as `RUNPOD_API_KEY` (Runpod
/// gives each pod a key of its own); the stand-in accepts it beside the account's.
pub const POD_KEY: &str = "rpp_CANARY8Tn3Wq6Zb1Hx9Lc4Md7Ks2Vf5Jr0Pe";

/// The documented fields of `CreatePodRequest` (closed: anything else is a 422).
const CREATE_FIELDS: [&str; 16] = [
    "name",
    "image",
    "templateId",
    "gpu",
    "cpu",
    "cloud",
    "dataCenterIds",
    "disk",
    "args",
    "env",
    "ports",
    "registry",
    "mounts",
    "startSsh",
    "startJupyter",
    "globalNetworking",
];

/// The route of `GET /v2/pods`, for [`Faults::limited`].
pub const LIST_PODS: &str = "GET /v2/pods";
/// The route of `GET /v2/pods/{id}`, for [`Faults::limited`].
pub const GET_POD: &str = "GET /v2/pods/{id}";
/// The route of `DELETE /v2/pods/{id}`, for [`Faults::limited`].
pub const DELETE_POD: &str = "DELETE /v2/pods/{id}";

/// Faults the stand-in injects; each count is used up one answer at a time.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// GPU types answering the capacity 400.
    pub capacity: BTreeSet<String>,
    /// GPU types answering 403.
    pub forbidden: BTreeSet<String>,
    /// GPU type IDs Runpod does not know: a 400 rule violation, not the capacity text.
    pub unknown_gpu: BTreeSet<String>,
    /// Every create answers 402.
    pub no_credit: bool,
    /// Creates answering 429 with `Retry-After: retry_after` seconds.
    pub rate_limited: u32,
    /// `Retry-After` of those 429s, and of [`Self::limited`]'s, in seconds.
    pub retry_after: u64,
    /// Answers of a route ([`LIST_PODS`], [`GET_POD`], [`DELETE_POD`]) that are 429 with
    /// `Retry-After: retry_after`, by route.
    pub limited: BTreeMap<&'static str, u32>,
    /// Creates that make the pod and then answer 500.
    pub error_after_create: u32,
    /// Creates that make the pod and answer only after this delay (past the client's
    /// timeout).
    pub slow_create: Option<Duration>,
    /// Deletes answered 204 that leave the pod listed and found.
    pub ignored_deletes: u32,
    /// `GET`s of a new pod that show `RUNNING` without `ssh.direct`.
    pub ssh_after_polls: u32,
    /// The key may not manage account secrets: their create answers 403.
    pub secrets_forbidden: bool,
    /// Reads of a pod's log that resume from an event ID (`Last-Event-ID`) and are
    /// refused with a 400, as for an ID Runpod no longer keeps.
    pub refused_event_ids: u32,
    /// Reads of a pod's log whose connection drops after this many events, in the
    /// middle of the next one.
    pub log_drops: Vec<usize>,
    /// The pods' own key ([`POD_KEY`]) may read its pod but not delete it: its
    /// `DELETE`s answer 403 (the watchdog's self-check passes, its deletions fail).
    pub pod_key_cannot_delete: bool,
    /// The next this many `PATCH /v2/network-volumes/{id}` are refused (400).
    pub grow_refusals: u32,
}

/// The catalog and account listings the stand-in serves (`GET /v2/catalog/gpus`,
/// `/v2/catalog/datacenters`, `/v2/network-volumes`, `/v2/templates`): the items of each
/// wrapped list, as the test writes them (planted escape sequences included).
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// `{"gpus": [...]}` items: `availability` and each data center's are sent only
    /// with `include=AVAILABILITY`; a type whose `maxCount` is below `count` is left
    /// out.
    pub gpus: Vec<Value>,
    /// `{"dataCenters": [...]}` items.
    pub data_centers: Vec<Value>,
    /// `{"networkVolumes": [...]}` items.
    pub volumes: Vec<Value>,
    /// `{"templates": [...]}` items.
    pub templates: Vec<Value>,
    /// The GPU items that replace [`Self::gpus`] at the first capacity answer (stock
    /// that changed while a run walked its types).
    pub after_capacity: Option<Vec<Value>>,
    /// GPU catalog reads still to answer 500.
    pub gpu_failures: u32,
}

/// One pod as the stand-in keeps it.
#[derive(Debug, Clone)]
pub struct StandinPod {
    /// Pod ID.
    pub id: String,
    /// The create body as received.
    pub request: Value,
    /// When it was created.
    pub created: SystemTime,
    /// When `DELETE` removed it.
    pub deleted: Option<SystemTime>,
    /// `GET`s answered so far.
    pub polls: u32,
    /// `GET`s still to answer without `ssh.direct`.
    pub ssh_after: u32,
    /// Its container's published port 22, when it is a real pod.
    pub ssh: Option<(String, u16)>,
}

/// One account secret.
#[derive(Debug, Clone)]
pub struct StandinSecret {
    /// Secret ID.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its value (the stand-in holds it; the API never shows it).
    pub value: String,
    /// When it was deleted.
    pub deleted: Option<SystemTime>,
}

/// Everything the stand-in holds.
#[derive(Debug, Default)]
pub struct State {
    /// Every pod ever created.
    pub pods: Vec<StandinPod>,
    /// Every secret ever created.
    pub secrets: Vec<StandinSecret>,
    /// What is still to be injected.
    pub faults: Faults,
    /// Deletes sent with the pods' own key and refused (`pod_key_cannot_delete`).
    pub pod_key_refusals: u32,
    /// Every request: method, path, body.
    pub requests: Vec<(String, String, String)>,
    /// Where `ssh.direct` points for pods without a container.
    pub ssh: (String, u16),
    /// The runner of real pods.
    pub runner: Option<PodRunner>,
    /// What the catalog and account listings answer.
    pub catalog: Catalog,
    /// Each pod's log (`GET /v2/pods/{id}/logs`), oldest first.
    pub logs: BTreeMap<String, Vec<LogLine>>,
    /// The lines (source, line) every new pod's log starts with.
    pub canned_log: Vec<(String, String)>,
    /// Every read of a log: its query and its `Last-Event-ID`.
    pub log_reads: Vec<(String, Option<String>)>,
    /// Whether a real pod's log also holds what its container wrote (`podman logs`),
    /// taken in at each read as `container` lines at the time of the read. Off unless a
    /// test sets it: the tests that place lines of their own read them back in order.
    pub container_output: bool,
    /// How many lines of each real pod's output its log holds.
    output_taken: BTreeMap<String, usize>,
    next: u64,
}

/// One line of a pod's log as the stand-in serves it.
#[derive(Debug, Clone)]
pub struct LogLine {
    /// The event ID, `<ts>/<seq>`.
    pub id: String,
    /// RFC 3339 time.
    pub ts: String,
    /// `container` or `system`.
    pub source: String,
    /// The line.
    pub line: String,
}

impl State {
    /// Adds `line` from `source` to pod `pod`'s log, at `ts` (RFC 3339).
    pub fn log(&mut self, pod: &str, ts: &str, source: &str, line: &str) {
        self.next += 1;
        let id = format!("{ts}/{}", self.next);
        self.logs.entry(pod.to_owned()).or_default().push(LogLine {
            id,
            ts: ts.to_owned(),
            source: source.to_owned(),
            line: line.to_owned(),
        });
    }

    /// A new pod's log starts with [`Self::canned_log`].
    fn seed_log(&mut self, pod: &StandinPod) {
        let at = rfc3339(pod.created);
        for (source, line) in self.canned_log.clone() {
            self.log(&pod.id, &at, &source, &line);
        }
    }

    fn live(&self) -> impl Iterator<Item = &StandinPod> {
        self.pods.iter().filter(|p| p.deleted.is_none())
    }
}

/// The stand-in server.
pub struct Standin {
    /// The mock server (its URI plus `/v2` is the API base).
    pub server: MockServer,
    state: Arc<Mutex<State>>,
    key: String,
}

impl Standin {
    /// A stand-in that accepts `key` as its only bearer key.
    pub async fn start(key: &str) -> Self {
        Self::serve(key, None).await
    }

    /// A stand-in whose pods are real containers (their env files under `dir`).
    pub async fn with_pods(key: &str, dir: std::path::PathBuf) -> Self {
        Self::serve(key, Some(PodRunner::new(dir, POD_KEY))).await
    }

    /// A stand-in whose pods are real containers that also mount `mounts` read-only.
    pub async fn with_pods_mounting(
        key: &str,
        dir: std::path::PathBuf,
        mounts: Vec<std::path::PathBuf>,
    ) -> Self {
        let mut runner = PodRunner::new(dir, POD_KEY);
        runner.mounts = mounts;
        Self::serve(key, Some(runner)).await
    }

    async fn serve(key: &str, runner: Option<PodRunner>) -> Self {
        // With real pods the API listens on their network's gateway, this machine's
        // address there (made by the test), and only there.
        let server = match &runner {
            Some(runner) => {
                let listener = std::net::TcpListener::bind((runner.gateway(), 0))
                    .expect("a port on the pods' network gateway");
                MockServer::builder().listener(listener).start().await
            }
            None => MockServer::start().await,
        };
        let state = Arc::new(Mutex::new(State {
            ssh: ("127.0.0.1".into(), 22),
            runner,
            ..State::default()
        }));
        Mock::given(wiremock::matchers::any())
            .respond_with(Api {
                key: format!("Bearer {key}"),
                pod_key: format!("Bearer {POD_KEY}"),
                state: Arc::clone(&state),
            })
            .mount(&server)
            .await;
        Self {
            server,
            state,
            key: key.to_owned(),
        }
    }

    /// The API base, as `OVERBRAINER_RUNPOD__BASE_URL` takes it.
    pub fn base(&self) -> String {
        format!("{}/v2", self.server.uri())
    }

    /// A client of the stand-in with its key, each call bounded by `timeout`.
    pub fn client(&self, timeout: std::time::Duration) -> overbrainer::runpod::api::RunpodClient {
        overbrainer::runpod::api::RunpodClient::new(
            &self.base(),
            secrecy::SecretString::from(self.key.clone()),
            overbrainer::llm::Redactor::new(),
            timeout,
        )
        .expect("a client of the stand-in")
    }

    /// Runs `script` with `bash -c` inside the container of real pod `id` (what a test
    /// watches on the pod's side); its output.
    pub fn exec(&self, id: &str, script: &str) -> std::process::Output {
        let runner = self
            .state()
            .runner
            .clone()
            .expect("a stand-in with real pods");
        runner.exec(id, script)
    }

    /// Caps real pod `id` at `cpus` cores (`None`: every core), as [`PodRunner::limit_cpus`].
    pub fn limit_cpus(&self, id: &str, cpus: Option<f64>) {
        let runner = self
            .state()
            .runner
            .clone()
            .expect("a stand-in with real pods");
        runner
            .limit_cpus(id, cpus)
            .unwrap_or_else(|e| panic!("cannot cap pod {id}'s cores: {e}"));
    }

    /// The state, to read or to set faults.
    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Fails the test when a pod is still listed or a secret still exists, naming them.
    pub fn assert_nothing_left(&self) {
        let state = self.state();
        let pods: Vec<&str> = state.live().map(|p| p.id.as_str()).collect();
        let secrets: Vec<&str> = state
            .secrets
            .iter()
            .filter(|s| s.deleted.is_none())
            .map(|s| s.name.as_str())
            .collect();
        let containers = state
            .runner
            .as_ref()
            .map(PodRunner::left)
            .unwrap_or_default();
        assert!(
            pods.is_empty() && secrets.is_empty() && containers.is_empty(),
            "left on the stand-in: pods {pods:?}, secrets {secrets:?}, containers {containers:?}"
        );
    }
}

impl Drop for Standin {
    fn drop(&mut self) {
        if let Some(runner) = &self.state().runner {
            runner.remove_all();
        }
    }
}

struct Api {
    key: String,
    pod_key: String,
    state: Arc<Mutex<State>>,
}

fn problem(status: u16, title: &str, detail: &str) -> ResponseTemplate {
    problem_with(status, title, detail, &[])
}

fn problem_with(status: u16, title: &str, detail: &str, errors: &[String]) -> ResponseTemplate {
    let mut body = json!({"title": title, "status": status, "detail": detail});
    if !errors.is_empty() {
        body["errors"] = json!(errors);
    }
    ResponseTemplate::new(status).set_body_raw(
        serde_json::to_vec(&body).unwrap_or_default(),
        "application/problem+json",
    )
}

/// A 429 as v2 answers it (wire-facts A.2): the problem body and an integer
/// `Retry-After`.
fn rate_limited(retry_after: u64) -> ResponseTemplate {
    problem(
        429,
        "Too Many Requests",
        "rate limit exceeded for the minute window",
    )
    .insert_header("Retry-After", retry_after.to_string().as_str())
}

fn rfc3339(time: SystemTime) -> String {
    jiff::Timestamp::try_from(time)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// A pod's JSON as v2 returns it (every required key of `Pod`).
fn pod_json(pod: &StandinPod, ssh: &(String, u16), with_ssh: bool) -> Value {
    let request = &pod.request;
    let ssh = pod.ssh.as_ref().unwrap_or(ssh);
    let direct = with_ssh.then(|| {
        json!({"host": ssh.0, "port": ssh.1, "username": "root",
               "command": format!("ssh root@{} -p {}", ssh.0, ssh.1)})
    });
    json!({
        "id": pod.id,
        "name": request["name"],
        "status": "RUNNING",
        "actions": ["stop", "restart", "terminate"],
        "image": request["image"],
        "args": request.get("args").cloned().unwrap_or(Value::Null),
        "disk": request.get("disk").cloned().unwrap_or(json!(50)),
        "mounts": request.get("mounts").cloned().unwrap_or(json!({})),
        "ports": request.get("ports").cloned().unwrap_or(json!([])),
        "env": request.get("env").cloned().unwrap_or(json!({})),
        "registry": null,
        "cloud": request.get("cloud").cloned().unwrap_or(json!("SECURE")),
        "dataCenterId": "EU-RO-1",
        "cudaVersion": "13.0",
        "ssh": {"proxy": {"host": "ssh.runpod.io", "port": 22,
                          "username": format!("{}-64410d5e", pod.id)},
                "direct": direct},
        "template": null,
        "cost": 0.74,
        "locked": false,
        "runtime": null,
        "createdAt": rfc3339(pod.created),
        "startedAt": rfc3339(pod.created),
        "globalNetworking": false,
        "gpu": request["gpu"],
    })
}

impl Respond for Api {
    #[allow(clippy::too_many_lines, reason = "one arm per route of the API")]
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let path = request.url.path().to_owned();
        let method = request.method.to_string();
        state.requests.push((
            method.clone(),
            path.clone(),
            String::from_utf8_lossy(&request.body).into_owned(),
        ));
        let auth = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        let by_pod = auth == Some(self.pod_key.as_str());
        if auth != Some(self.key.as_str()) && !by_pod {
            return problem(401, "Unauthorized", "missing bearer token");
        }
        if by_pod && method == "DELETE" && state.faults.pod_key_cannot_delete {
            state.pod_key_refusals += 1;
            return problem(403, "Forbidden", "access denied");
        }
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        if let Some(answer) = limited(&mut state.faults, &method, &parts) {
            return answer;
        }
        match (method.as_str(), parts.as_slice()) {
            ("POST", ["v2", "pods"]) => create(&mut state, &request.body),
            ("GET", ["v2", "pods"]) => {
                let ssh = state.ssh.clone();
                let pods: Vec<Value> = state
                    .live()
                    .map(|p| pod_json(p, &ssh, p.ssh_after == 0))
                    .collect();
                ResponseTemplate::new(200).set_body_json(json!({"pods": pods}))
            }
            ("GET", ["v2", "pods", id]) => {
                let ssh = state.ssh.clone();
                match state
                    .pods
                    .iter_mut()
                    .find(|p| p.id == *id && p.deleted.is_none())
                {
                    Some(pod) => {
                        pod.polls += 1;
                        let with_ssh = pod.ssh_after == 0;
                        pod.ssh_after = pod.ssh_after.saturating_sub(1);
                        ResponseTemplate::new(200).set_body_json(pod_json(pod, &ssh, with_ssh))
                    }
                    None => problem(404, "Not Found", "resource not found"),
                }
            }
            ("DELETE", ["v2", "pods", id]) => {
                if state.faults.ignored_deletes > 0 && state.live().any(|p| p.id == *id) {
                    state.faults.ignored_deletes -= 1;
                    return ResponseTemplate::new(204);
                }
                match state
                    .pods
                    .iter_mut()
                    .find(|p| p.id == *id && p.deleted.is_none())
                {
                    Some(pod) => {
                        pod.deleted = Some(SystemTime::now());
                        let id = pod.id.clone();
                        if let Some(Err(error)) = state.runner.as_ref().map(|r| r.remove(&id)) {
                            return problem(500, "Internal Server Error", &error);
                        }
                        ResponseTemplate::new(204)
                    }
                    None => problem(404, "Not Found", "resource not found"),
                }
            }
            ("GET", ["v2", "pods", id, "logs"]) => pod_logs(&mut state, id, request),
            ("GET", ["v2", "catalog", "gpus"]) => {
                let query = request.url.query_pairs().into_owned().collect();
                catalog_gpus(&mut state.catalog, &query)
            }
            ("GET", ["v2", "catalog", "datacenters"]) => ResponseTemplate::new(200)
                .set_body_json(json!({"dataCenters": state.catalog.data_centers})),
            ("GET", ["v2", "network-volumes"]) => ResponseTemplate::new(200)
                .set_body_json(json!({"networkVolumes": state.catalog.volumes})),
            ("PATCH", ["v2", "network-volumes", id]) => grow_volume(&mut state, id, &request.body),
            ("GET", ["v2", "templates"]) => ResponseTemplate::new(200)
                .set_body_json(json!({"templates": state.catalog.templates})),
            ("POST", ["v2", "account", "secrets"]) => create_secret(&mut state, &request.body),
            ("DELETE", ["v2", "account", "secrets", id]) => match state
                .secrets
                .iter_mut()
                .find(|s| s.id == *id && s.deleted.is_none())
            {
                Some(secret) => {
                    secret.deleted = Some(SystemTime::now());
                    ResponseTemplate::new(204)
                }
                None => problem(404, "Not Found", "resource not found"),
            },
            ("GET" | "POST" | "DELETE", _) => problem(404, "Not Found", "resource not found"),
            _ => problem(405, "Method Not Allowed", "method not allowed")
                .insert_header("Allow", "GET, POST, DELETE"),
        }
    }
}

/// `GET /v2/pods/{id}/logs` (wire-facts A.4): server-sent events, `id: <ts>/<seq>` and
/// `data: {"ts","source","line"}`; `source` keeps one source, `tail` (0 to 5000, 100
/// when left out) the last lines, `since` those at or after a time, `Last-Event-ID`
/// those after an event (a 400 for an ID it does not hold, or while
/// [`Faults::refused_event_ids`] lasts). The whole log is sent and the answer ends: a
/// reader reconnects for more. [`Faults::log_drops`] cuts one answer inside an event.
fn pod_logs(state: &mut State, id: &str, request: &Request) -> ResponseTemplate {
    let query: BTreeMap<String, String> = request.url.query_pairs().into_owned().collect();
    let last = request
        .headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    state.log_reads.push((
        request.url.query().unwrap_or_default().to_owned(),
        last.clone(),
    ));
    if !state.live().any(|p| p.id == id) {
        return problem(404, "Not Found", "resource not found");
    }
    take_output(state, id);
    let source = query.get("source").cloned();
    if source
        .as_deref()
        .is_some_and(|s| s != "container" && s != "system")
    {
        return problem(400, "Bad Request", "source must be container or system");
    }
    let tail: usize = match query.get("tail").map(|t| t.parse::<usize>()) {
        None => 100,
        Some(Ok(tail)) if tail <= 5000 => tail,
        Some(_) => return problem(400, "Bad Request", "tail must be between 0 and 5000"),
    };
    let all = state.logs.get(id).cloned().unwrap_or_default();
    let mut lines: Vec<LogLine> = all
        .into_iter()
        .filter(|l| source.as_ref().is_none_or(|s| *s == l.source))
        .collect();
    if let Some(last) = &last {
        let known = state
            .logs
            .get(id)
            .is_some_and(|all| all.iter().any(|l| l.id == *last));
        if state.faults.refused_event_ids > 0 || !known {
            state.faults.refused_event_ids = state.faults.refused_event_ids.saturating_sub(1);
            return problem(400, "Bad Request", "unknown or expired Last-Event-ID");
        }
        let seq = |id: &str| -> u64 {
            id.rsplit_once('/')
                .and_then(|(_, n)| n.parse().ok())
                .unwrap_or(0)
        };
        lines.retain(|l| seq(&l.id) > seq(last));
    } else if let Some(since) = query.get("since") {
        lines.retain(|l| l.ts.as_str() >= since.as_str());
    } else {
        let skip = lines.len().saturating_sub(tail);
        lines.drain(..skip);
    }
    let drop_after = if state.faults.log_drops.is_empty() {
        None
    } else {
        Some(state.faults.log_drops.remove(0))
    };
    let mut body = String::new();
    for (n, line) in lines.iter().enumerate() {
        let data = json!({"ts": line.ts, "source": line.source, "line": line.line}).to_string();
        if drop_after == Some(n) {
            // The connection breaks inside this event: no blank line ends it.
            let _ = write!(body, "id: {}\ndata: {}", line.id, &data[..data.len() / 2]);
            break;
        }
        let _ = write!(body, "id: {}\ndata: {data}\n\n", line.id);
    }
    ResponseTemplate::new(200)
        .insert_header("Cache-Control", "no-cache")
        .insert_header("X-Accel-Buffering", "no")
        .set_body_raw(body, "text/event-stream")
}

/// With [`State::container_output`], what real pod `id`'s container wrote since the
/// last read joins its log.
fn take_output(state: &mut State, id: &str) {
    let Some(runner) = state.runner.clone().filter(|_| state.container_output) else {
        return;
    };
    let output = runner.output(id);
    let taken = state.output_taken.get(id).copied().unwrap_or(0);
    let now = rfc3339(SystemTime::now());
    for line in output.iter().skip(taken) {
        state.log(id, &now, "container", line);
    }
    state
        .output_taken
        .insert(id.to_owned(), taken.max(output.len()));
}

/// `GET /v2/catalog/gpus`: `product` is required with `include`; stock only with
/// `include=AVAILABILITY`; types that cannot have `count` GPUs in a pod left out.
fn catalog_gpus(catalog: &mut Catalog, query: &BTreeMap<String, String>) -> ResponseTemplate {
    if catalog.gpu_failures > 0 {
        catalog.gpu_failures -= 1;
        return problem(500, "Internal Server Error", "catalog unavailable");
    }
    if query.contains_key("include") && !query.contains_key("product") {
        return problem_with(
            422,
            "Unprocessable Entity",
            "Request validation failed.",
            &["$: product is required with include".to_owned()],
        );
    }
    let availability = query.get("include").map(String::as_str) == Some("AVAILABILITY");
    let count: u64 = query.get("count").and_then(|c| c.parse().ok()).unwrap_or(1);
    let gpus: Vec<Value> = catalog
        .gpus
        .iter()
        .filter(|g| {
            let most = |cloud: &str| g["maxCount"][cloud].as_u64().unwrap_or(0);
            most("secure").max(most("community")) >= count
        })
        .map(|g| {
            let mut g = g.clone();
            if !availability {
                if let Some(fields) = g.as_object_mut() {
                    fields.remove("availability");
                }
                for dc in g["dataCenters"].as_array_mut().into_iter().flatten() {
                    if let Some(fields) = dc.as_object_mut() {
                        fields.remove("availability");
                    }
                }
            }
            g
        })
        .collect();
    ResponseTemplate::new(200).set_body_json(json!({ "gpus": gpus }))
}

/// The 429 of [`Faults::limited`] for this request's route, while any is left.
fn limited(faults: &mut Faults, method: &str, parts: &[&str]) -> Option<ResponseTemplate> {
    let route = match (method, parts) {
        ("GET", ["v2", "pods"]) => LIST_PODS,
        ("GET", ["v2", "pods", _]) => GET_POD,
        ("DELETE", ["v2", "pods", _]) => DELETE_POD,
        _ => return None,
    };
    let left = faults.limited.get_mut(route).filter(|left| **left > 0)?;
    *left -= 1;
    Some(rate_limited(faults.retry_after))
}

/// `POST /v2/pods`.
fn create(state: &mut State, body: &[u8]) -> ResponseTemplate {
    let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(body) else {
        return problem(400, "Bad Request", "request body is not a JSON object");
    };
    let unknown: Vec<String> = fields
        .keys()
        .filter(|k| !CREATE_FIELDS.contains(&k.as_str()))
        .map(|k| format!("$: additional properties '{k}' not allowed"))
        .collect();
    if !unknown.is_empty() {
        return problem_with(
            422,
            "Unprocessable Entity",
            "Request validation failed.",
            &unknown,
        );
    }
    let Some(gpu) = fields
        .get("gpu")
        .and_then(|g| g.get("id"))
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        return problem(400, "Bad Request", "exactly one of gpu or cpu is required");
    };
    if !fields.get("name").is_some_and(Value::is_string)
        || !fields.get("image").is_some_and(Value::is_string)
    {
        return problem_with(
            422,
            "Unprocessable Entity",
            "Request validation failed.",
            &["$: name and image are required".to_owned()],
        );
    }
    // The stand-in's choice: how v2 answers `args` no shell could split is not
    // documented.
    if let Some(Err(error)) = fields
        .get("args")
        .and_then(Value::as_str)
        .map(crate::runpod_pods::words)
    {
        return problem(400, "Bad Request", &error);
    }
    let faults = &mut state.faults;
    if faults.no_credit {
        return problem(402, "Payment Required", "insufficient balance");
    }
    if faults.rate_limited > 0 {
        faults.rate_limited -= 1;
        return rate_limited(faults.retry_after);
    }
    if faults.forbidden.contains(&gpu) {
        return problem(403, "Forbidden", "access denied");
    }
    if faults.unknown_gpu.contains(&gpu) {
        return problem(400, "Bad Request", "gpu.id: unknown GPU type");
    }
    if faults.capacity.contains(&gpu) {
        if let Some(gpus) = state.catalog.after_capacity.take() {
            state.catalog.gpus = gpus;
        }
        return problem(400, "Bad Request", CAPACITY);
    }
    state.next += 1;
    let mut pod = StandinPod {
        id: format!("sp{:012}", state.next),
        request: Value::Object(fields),
        created: SystemTime::now(),
        deleted: None,
        polls: 0,
        ssh_after: state.faults.ssh_after_polls,
        ssh: None,
    };
    if let Some(runner) = &state.runner {
        let secrets: Vec<(String, String)> = state
            .secrets
            .iter()
            .filter(|s| s.deleted.is_none())
            .map(|s| (s.name.clone(), s.value.clone()))
            .collect();
        match runner.start(&pod.id, &pod.request, &secrets) {
            Ok(ssh) => pod.ssh = Some(ssh),
            Err(error) => {
                let _ = runner.remove(&pod.id);
                return problem(500, "Internal Server Error", &error);
            }
        }
    }
    let answer = pod_json(&pod, &state.ssh, pod.ssh_after == 0);
    state.seed_log(&pod);
    state.pods.push(pod);
    let faults = &mut state.faults;
    if faults.error_after_create > 0 {
        faults.error_after_create -= 1;
        return problem(500, "Internal Server Error", "Something went wrong.");
    }
    let created = ResponseTemplate::new(201).set_body_json(answer);
    match faults.slow_create.take() {
        Some(delay) => created.set_delay(delay),
        None => created,
    }
}

/// `POST /v2/account/secrets`.
/// `PATCH /v2/network-volumes/{id}` with `{"size": N}`: a volume only grows (a size
/// not above its own is refused, 400, as are the next `grow_refusals`); the
/// answer is the volume with its new size.
fn grow_volume(state: &mut State, id: &str, body: &[u8]) -> ResponseTemplate {
    let fields: BTreeMap<String, Value> = serde_json::from_slice(body).unwrap_or_default();
    let Some(size) = fields.get("size").and_then(Value::as_u64) else {
        return problem(422, "Unprocessable Entity", "Request validation failed.");
    };
    let refused = state.faults.grow_refusals > 0;
    if refused {
        state.faults.grow_refusals -= 1;
    }
    let Some(volume) = state
        .catalog
        .volumes
        .iter_mut()
        .find(|v| v.get("id").and_then(Value::as_str) == Some(id))
    else {
        return problem(404, "Not Found", "network volume not found");
    };
    let now = volume.get("size").and_then(Value::as_u64).unwrap_or(0);
    if refused || size <= now {
        return problem(
            400,
            "Bad Request",
            "network volume size can only be increased",
        );
    }
    volume["size"] = json!(size);
    ResponseTemplate::new(200).set_body_json(volume.clone())
}

fn create_secret(state: &mut State, body: &[u8]) -> ResponseTemplate {
    if state.faults.secrets_forbidden {
        return problem(
            403,
            "Forbidden",
            "This API key does not have access to secrets.",
        );
    }
    let fields: BTreeMap<String, Value> = serde_json::from_slice(body).unwrap_or_default();
    let (Some(name), Some(value)) = (
        fields.get("name").and_then(Value::as_str),
        fields.get("value").and_then(Value::as_str),
    ) else {
        return problem(422, "Unprocessable Entity", "Request validation failed.");
    };
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-/".contains(c))
        && !name.starts_with("RUNPOD");
    if !valid || name.len() > 191 {
        return problem(400, "Bad Request", "invalid secret name");
    }
    if state
        .secrets
        .iter()
        .any(|s| s.name == name && s.deleted.is_none())
    {
        return problem(409, "Conflict", "a secret with this name exists");
    }
    state.next += 1;
    let id = format!("ss{:012}", state.next);
    state.secrets.push(StandinSecret {
        id: id.clone(),
        name: name.to_owned(),
        value: value.to_owned(),
        deleted: None,
    });
    ResponseTemplate::new(201).set_body_json(json!({
        "id": id, "name": name, "description": fields.get("description"),
        "createdAt": rfc3339(SystemTime::now()), "updatedAt": rfc3339(SystemTime::now()),
    }))
}

/// A create body for a pod of run `run` made straight on the stand-in, as a test (or
/// another project's overbrainer) makes it: the test image, one GPU of type `A`, SSH
/// exposed, no environment and the image's own command.
pub(crate) fn bare_body(run: &str) -> overbrainer::runpod::api::CreatePod {
    overbrainer::runpod::api::CreatePod {
        name: overbrainer::runpod::api::pod_name(run),
        image: "overbrainer-pod:test".into(),
        gpu: overbrainer::runpod::api::GpuRequest {
            id: "A".into(),
            count: 1,
        },
        cloud: "SECURE".into(),
        data_center_ids: Vec::new(),
        disk: 20,
        env: BTreeMap::new(),
        ports: vec!["22/tcp".into()],
        mounts: None,
        args: None,
    }
}

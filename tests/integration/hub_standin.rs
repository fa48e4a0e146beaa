//! A stand-in of the Hugging Face Hub's upload and download endpoints, written from
//! `shared/reference/wire-facts.md` section B: `whoami-v2`, `repos/create` (409 when the
//! repo exists, `private` or `visibility`, 403 outside the token's namespaces), repo info,
//! `preupload`, the Git LFS batch API (`basic`, and `multipart` for objects over a size the
//! test sets), the object store behind it, `verify`, the NDJSON commit (`header`, `file`,
//! `lfsFile`, `deletedFile`), `resolve` downloads and the tree listing. Stateful: repos with
//! their commits, the object store, and every request seen (method, path, whether it carried
//! a token), so a test can assert what was sent and what was not. Faults through [`Faults`].
//!
//! Proven faithful by the Hub's own client (`huggingface_hub`, pinned in
//! `scripts/hf-hub-env.sh`) in `hub_standin_serves_huggingface_hub_upload_and_download`.

#![allow(dead_code)]
// Test code: a stand-in answers with whole `ResponseTemplate`s and mirrors the wire text.
#![allow(
    clippy::result_large_err,
    clippy::case_sensitive_file_extension_comparisons,
    clippy::too_many_lines,
    clippy::map_unwrap_or,
    clippy::nonminimal_bool
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The pinned `huggingface_hub` release the stand-in is proven against.
pub const HF_HUB_VERSION: &str = "2.4.0";

/// Extensions the Hub's default `.gitattributes` stores in LFS.
const LFS_EXTENSIONS: [&str; 12] = [
    "safetensors",
    "bin",
    "gguf",
    "pt",
    "pth",
    "ckpt",
    "h5",
    "onnx",
    "msgpack",
    "model",
    "npy",
    "zip",
];

/// The Hub's default `.gitattributes` of a new repo (shortened).
const GITATTRIBUTES: &str = "*.safetensors filter=lfs diff=lfs merge=lfs -text\n*.bin filter=lfs diff=lfs merge=lfs -text\n*.gguf filter=lfs diff=lfs merge=lfs -text\n";

/// Faults the stand-in injects; each count is used up one answer at a time.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Preuploads answering 429 with `Retry-After: retry_after`.
    pub preupload_429: u32,
    /// `Retry-After` of those 429s, in seconds.
    pub retry_after: u64,
    /// Object uploads (basic PUTs or parts) that store nothing and are answered (503)
    /// only after this delay, counted from the `stall_after`-th upload request on (0 = the
    /// first): an upload still under way.
    pub stall: Option<Duration>,
    /// Which upload request starts stalling.
    pub stall_after: usize,
    /// Commits that land and then answer 500, as if the answer were lost.
    pub commit_lost: u32,
}

/// An account a token belongs to.
#[derive(Debug, Clone)]
pub struct Account {
    /// User name.
    pub name: String,
    /// `write` or `read`.
    pub role: String,
    /// Organisations with write rights.
    pub orgs: Vec<String>,
}

/// One file of a commit's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// Stored in git.
    Regular(Vec<u8>),
    /// Stored in LFS: its sha256 and size.
    Lfs { oid: String, size: u64 },
}

/// One commit.
#[derive(Debug, Clone)]
pub struct Commit {
    /// 40 hex digits.
    pub oid: String,
    /// The header's summary.
    pub summary: String,
    /// The whole tree after it.
    pub files: BTreeMap<String, Entry>,
}

/// One repo.
#[derive(Debug, Clone)]
pub struct Repo {
    /// Private or public.
    pub private: bool,
    /// Every commit, the head last.
    pub commits: Vec<Commit>,
}

impl Repo {
    /// The head commit.
    pub fn head(&self) -> &Commit {
        self.commits.last().expect("a repo has its first commit")
    }
}

/// One request as the stand-in saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// HTTP method.
    pub method: String,
    /// Path (no query).
    pub path: String,
    /// The `authorization` header, when sent.
    pub authorization: Option<String>,
}

#[derive(Debug, Default)]
struct State {
    accounts: BTreeMap<String, Account>,
    repos: BTreeMap<String, Repo>,
    objects: BTreeMap<String, Vec<u8>>,
    parts: BTreeMap<String, BTreeMap<u32, Vec<u8>>>,
    requests: Vec<Seen>,
    uploads: usize,
    faults: Faults,
    multipart_over: u64,
    chunk_size: u64,
}

/// The running stand-in.
pub struct HubStandin {
    server: MockServer,
    state: Arc<Mutex<State>>,
}

impl HubStandin {
    /// A stand-in with no accounts and no repos; objects over 8 MiB are uploaded in
    /// `multipart` parts of 4 MiB.
    pub async fn start() -> Self {
        let server = MockServer::start().await;
        let state = Arc::new(Mutex::new(State {
            multipart_over: 8 << 20,
            chunk_size: 4 << 20,
            ..State::default()
        }));
        Mock::given(wiremock::matchers::any())
            .respond_with(Api {
                state: Arc::clone(&state),
                base: server.uri(),
            })
            .mount(&server)
            .await;
        Self { server, state }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn uri(&self) -> String {
        self.server.uri()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A token of `name` with `role` (`write`, `read`) and write rights in `orgs`.
    pub fn add_token(&self, token: &str, name: &str, role: &str, orgs: &[&str]) {
        self.lock().accounts.insert(
            token.to_owned(),
            Account {
                name: name.to_owned(),
                role: role.to_owned(),
                orgs: orgs.iter().map(|o| (*o).to_owned()).collect(),
            },
        );
    }

    /// Objects over `over` bytes go `multipart` in parts of `chunk` bytes.
    pub fn set_multipart(&self, over: u64, chunk: u64) {
        let mut state = self.lock();
        state.multipart_over = over;
        state.chunk_size = chunk;
    }

    /// Sets the faults.
    pub fn set_faults(&self, faults: Faults) {
        self.lock().faults = faults;
    }

    /// Creates `repo` (`ns/name`) as if made elsewhere, with `files` in its first commit
    /// after `.gitattributes`.
    pub fn add_repo(&self, repo: &str, private: bool, files: &[(&str, &[u8])]) {
        let mut tree = BTreeMap::new();
        tree.insert(
            ".gitattributes".to_owned(),
            Entry::Regular(GITATTRIBUTES.as_bytes().to_vec()),
        );
        for (path, bytes) in files {
            tree.insert((*path).to_owned(), Entry::Regular(bytes.to_vec()));
        }
        let commit = Commit {
            oid: commit_oid(repo, 0, "initial commit"),
            summary: "initial commit".to_owned(),
            files: tree,
        };
        self.lock().repos.insert(
            repo.to_owned(),
            Repo {
                private,
                commits: vec![commit],
            },
        );
    }

    /// The repo as the stand-in holds it.
    pub fn repo(&self, repo: &str) -> Option<Repo> {
        self.lock().repos.get(repo).cloned()
    }

    /// Every request seen so far.
    pub fn requests(&self) -> Vec<Seen> {
        self.lock().requests.clone()
    }

    /// The oids of the objects the store holds.
    pub fn objects(&self) -> Vec<String> {
        self.lock().objects.keys().cloned().collect()
    }

    /// How many object upload requests (basic PUTs and parts) came in.
    pub fn uploads(&self) -> usize {
        self.lock().uploads
    }

    /// The bytes of `path` at the head of `repo`.
    pub fn file(&self, repo: &str, path: &str) -> Option<Vec<u8>> {
        let state = self.lock();
        match state.repos.get(repo)?.head().files.get(path)? {
            Entry::Regular(bytes) => Some(bytes.clone()),
            Entry::Lfs { oid, .. } => state.objects.get(oid).cloned(),
        }
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn commit_oid(repo: &str, n: usize, summary: &str) -> String {
    sha256_hex(format!("{repo}\n{n}\n{summary}").as_bytes())[..40].to_owned()
}

/// The blob ID the tree listing and the `ETag` of a regular file give.
fn blob_id(bytes: &[u8]) -> String {
    sha256_hex(bytes)[..40].to_owned()
}

fn error(status: u16, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .insert_header("X-Error-Message", message)
        .set_body_json(json!({ "error": message }))
}

fn not_found(code: &str, message: &str) -> ResponseTemplate {
    error(404, message).insert_header("X-Error-Code", code)
}

struct Api {
    state: Arc<Mutex<State>>,
    base: String,
}

impl Respond for Api {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let path = request.url.path().to_owned();
        let method = request.method.to_string();
        let authorization = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        state.requests.push(Seen {
            method: method.clone(),
            path: path.clone(),
            authorization: authorization.clone(),
        });
        let account = authorization
            .as_deref()
            .and_then(|a| a.strip_prefix("Bearer "))
            .and_then(|t| state.accounts.get(t))
            .cloned();
        let segments: Vec<String> = path
            .trim_start_matches('/')
            .split('/')
            .map(percent_decode)
            .collect();
        let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
        let ctx = Ctx {
            base: &self.base,
            account: account.as_ref(),
            authorization: authorization.is_some(),
            request,
        };
        match (method.as_str(), segs.as_slice()) {
            ("GET", ["api", "whoami-v2"]) => whoami(&ctx),
            ("POST", ["api", "repos", "create"]) => create(&mut state, &ctx),
            ("GET", ["api", "models", ns, name]) => {
                info(&state, &ctx, &format!("{ns}/{name}"), "main")
            }
            ("GET", ["api", "models", ns, name, "revision", rev]) => {
                info(&state, &ctx, &format!("{ns}/{name}"), rev)
            }
            ("GET", ["api", "models", ns, name, "tree", rev, rest @ ..]) => {
                tree(&state, &ctx, &format!("{ns}/{name}"), rev, &rest.join("/"))
            }
            ("POST", ["api", "models", ns, name, "preupload", _rev]) => {
                preupload(&mut state, &ctx, &format!("{ns}/{name}"))
            }
            ("POST", ["api", "models", ns, name, "commit", rev]) => {
                commit(&mut state, &ctx, &format!("{ns}/{name}"), rev)
            }
            ("POST", [ns, git, "info", "lfs", "objects", "batch"]) if git.ends_with(".git") => {
                let name = git.trim_end_matches(".git");
                batch(&mut state, &ctx, &format!("{ns}/{name}"))
            }
            ("GET" | "HEAD", [ns, name, "resolve", rev, rest @ ..]) => {
                resolve(&state, &ctx, &format!("{ns}/{name}"), rev, &rest.join("/"))
            }
            // A stalled upload stores nothing: it stands for one still under way.
            ("PUT", ["lfs-store", oid]) => match stall(&mut state) {
                Some(delay) => error(503, "stalled").set_delay(delay),
                None => put_basic(&mut state, oid, &request.body),
            },
            ("PUT", ["lfs-store", oid, "part", n]) => match stall(&mut state) {
                Some(delay) => error(503, "stalled").set_delay(delay),
                None => put_part(&mut state, oid, n, &request.body),
            },
            ("POST", ["lfs-store", oid, "complete"]) => complete(&mut state, oid, request),
            ("POST", ["lfs-verify", oid]) => verify(&state, &ctx, oid),
            _ => error(404, &format!("no route for {method} {path}")),
        }
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

struct Ctx<'a> {
    base: &'a str,
    account: Option<&'a Account>,
    authorization: bool,
    request: &'a Request,
}

impl Ctx<'_> {
    fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.request.body).ok()
    }

    /// The account, when it may write in `namespace`.
    fn writer(&self, namespace: &str) -> Result<&Account, ResponseTemplate> {
        let Some(account) = self.account else {
            return Err(error(401, "Invalid credentials in Authorization header"));
        };
        let member = account.name == namespace || account.orgs.iter().any(|o| o == namespace);
        if account.role != "write" || !member {
            return Err(error(
                403,
                &format!(
                    "You don't have the rights to create a model under the namespace \"{namespace}\""
                ),
            ));
        }
        Ok(account)
    }

    /// Whether the caller may read `repo`.
    fn reader(&self, repo: &str, held: &Repo) -> bool {
        if !held.private {
            return true;
        }
        let ns = repo.split('/').next().unwrap_or_default();
        self.account
            .is_some_and(|a| a.name == ns || a.orgs.iter().any(|o| o == ns))
    }
}

/// Counts an upload request; the delay of its answer when it stalls.
fn stall(state: &mut State) -> Option<Duration> {
    let n = state.uploads;
    state.uploads += 1;
    state.faults.stall.filter(|_| n >= state.faults.stall_after)
}

fn whoami(ctx: &Ctx<'_>) -> ResponseTemplate {
    let Some(account) = ctx.account else {
        return error(401, "Invalid credentials in Authorization header");
    };
    ResponseTemplate::new(200).set_body_json(json!({
        "type": "user",
        "name": account.name,
        "fullname": account.name,
        "orgs": account.orgs.iter().map(|o| json!({"name": o, "roleInOrg": "write"})).collect::<Vec<_>>(),
        "auth": {"type": "access_token", "accessToken": {"displayName": "test", "role": account.role}},
    }))
}

fn create(state: &mut State, ctx: &Ctx<'_>) -> ResponseTemplate {
    let Some(body) = ctx.json() else {
        return error(400, "body is not JSON");
    };
    let Some(name) = body.get("name").and_then(Value::as_str) else {
        return error(400, "\"name\" is required");
    };
    let Some(account) = ctx.account else {
        return error(401, "Invalid credentials in Authorization header");
    };
    let namespace = body
        .get("organization")
        .and_then(Value::as_str)
        .unwrap_or(&account.name)
        .to_owned();
    if let Err(refusal) = ctx.writer(&namespace) {
        return refusal;
    }
    let private = match (
        body.get("visibility").and_then(Value::as_str),
        body.get("private"),
    ) {
        (Some("private"), _) => true,
        (Some("public"), _) => false,
        (Some(other), _) => return error(400, &format!("unknown visibility {other:?}")),
        (None, Some(Value::Bool(p))) => *p,
        (None, _) => false,
    };
    let repo = format!("{namespace}/{name}");
    let url = format!("{}/{repo}", ctx.base);
    if state.repos.contains_key(&repo) {
        return ResponseTemplate::new(409)
            .set_body_json(json!({"error": "You already created this model repo", "url": url}));
    }
    let mut files = BTreeMap::new();
    files.insert(
        ".gitattributes".to_owned(),
        Entry::Regular(GITATTRIBUTES.as_bytes().to_vec()),
    );
    state.repos.insert(
        repo.clone(),
        Repo {
            private,
            commits: vec![Commit {
                oid: commit_oid(&repo, 0, "initial commit"),
                summary: "initial commit".to_owned(),
                files,
            }],
        },
    );
    ResponseTemplate::new(200).set_body_json(json!({"url": url, "name": repo, "id": repo}))
}

/// The repo at `rev` (a branch name, `main`, or a commit oid).
fn at<'a>(held: &'a Repo, rev: &str) -> Option<&'a Commit> {
    if rev == "main" {
        return Some(held.head());
    }
    held.commits.iter().find(|c| c.oid == rev)
}

fn readable<'a>(state: &'a State, ctx: &Ctx<'_>, repo: &str) -> Result<&'a Repo, ResponseTemplate> {
    match state.repos.get(repo) {
        Some(held) if ctx.reader(repo, held) => Ok(held),
        _ => Err(not_found("RepoNotFound", "Repository not found")),
    }
}

fn info(state: &State, ctx: &Ctx<'_>, repo: &str, rev: &str) -> ResponseTemplate {
    let held = match readable(state, ctx, repo) {
        Ok(held) => held,
        Err(refusal) => return refusal,
    };
    let Some(commit) = at(held, rev) else {
        return not_found("RevisionNotFound", "Invalid rev id");
    };
    ResponseTemplate::new(200).set_body_json(json!({
        "id": repo,
        "modelId": repo,
        "sha": commit.oid,
        "private": held.private,
        "siblings": commit.files.keys().map(|p| json!({"rfilename": p})).collect::<Vec<_>>(),
    }))
}

fn entry_json(state: &State, path: &str, entry: &Entry) -> Value {
    match entry {
        Entry::Regular(bytes) => {
            json!({"type": "file", "oid": blob_id(bytes), "size": bytes.len(), "path": path})
        }
        Entry::Lfs { oid, size } => {
            let _ = state;
            json!({"type": "file", "oid": &oid[..40], "size": size, "path": path,
                   "lfs": {"oid": oid, "size": size, "pointerSize": 134}})
        }
    }
}

fn tree(state: &State, ctx: &Ctx<'_>, repo: &str, rev: &str, under: &str) -> ResponseTemplate {
    let held = match readable(state, ctx, repo) {
        Ok(held) => held,
        Err(refusal) => return refusal,
    };
    let Some(commit) = at(held, rev) else {
        return not_found("RevisionNotFound", "Invalid rev id");
    };
    let recursive = ctx
        .request
        .url
        .query_pairs()
        .any(|(k, v)| k == "recursive" && (v == "true" || v == "True" || v == "1"));
    let prefix = if under.is_empty() {
        String::new()
    } else {
        format!("{under}/")
    };
    let mut out = Vec::new();
    let mut dirs = std::collections::BTreeSet::new();
    for (path, entry) in &commit.files {
        let Some(rest) = path.strip_prefix(&prefix) else {
            continue;
        };
        let parts: Vec<&str> = rest.split('/').collect();
        for depth in 1..parts.len() {
            if depth > 1 && !recursive {
                break;
            }
            dirs.insert(format!("{prefix}{}", parts[..depth].join("/")));
        }
        if parts.len() == 1 || recursive {
            out.push(entry_json(state, path, entry));
        }
    }
    for dir in dirs {
        out.push(
            json!({"type": "directory", "oid": blob_id(dir.as_bytes()), "size": 0, "path": dir}),
        );
    }
    ResponseTemplate::new(200).set_body_json(Value::Array(out))
}

fn preupload(state: &mut State, ctx: &Ctx<'_>, repo: &str) -> ResponseTemplate {
    if state.faults.preupload_429 > 0 {
        state.faults.preupload_429 -= 1;
        return error(429, "rate limited")
            .insert_header("Retry-After", state.faults.retry_after.to_string().as_str());
    }
    let namespace = repo.split('/').next().unwrap_or_default();
    if let Err(refusal) = ctx.writer(namespace) {
        return refusal;
    }
    if !state.repos.contains_key(repo) {
        return not_found("RepoNotFound", "Repository not found");
    }
    let Some(files) = ctx.json().and_then(|b| b.get("files").cloned()) else {
        return error(400, "\"files\" is required");
    };
    let Some(files) = files.as_array() else {
        return error(400, "\"files\" must be an array");
    };
    let mut out = Vec::new();
    for file in files {
        let (Some(path), Some(size), Some(sample)) = (
            file.get("path").and_then(Value::as_str),
            file.get("size").and_then(Value::as_u64),
            file.get("sample").and_then(Value::as_str),
        ) else {
            return error(400, "each file needs \"path\", \"size\" and \"sample\"");
        };
        let Ok(sample) = base64::engine::general_purpose::STANDARD.decode(sample) else {
            return error(400, &format!("sample of {path} is not base64"));
        };
        let extension = path.rsplit('.').next().unwrap_or_default();
        let lfs = size > 0
            && (LFS_EXTENSIONS.contains(&extension) || size > 10 << 20 || sample.contains(&0));
        out.push(json!({
            "path": path,
            "uploadMode": if lfs { "lfs" } else { "regular" },
            "shouldIgnore": false,
        }));
    }
    ResponseTemplate::new(200)
        .set_body_json(json!({"files": out, "commitOid": state.repos[repo].head().oid}))
}

fn batch(state: &mut State, ctx: &Ctx<'_>, repo: &str) -> ResponseTemplate {
    let namespace = repo.split('/').next().unwrap_or_default();
    if let Err(refusal) = ctx.writer(namespace) {
        return refusal;
    }
    if !state.repos.contains_key(repo) {
        return not_found("RepoNotFound", "Repository not found");
    }
    let accept = ctx
        .request
        .headers
        .get("accept")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !accept.contains("application/vnd.git-lfs+json") {
        return error(406, "Accept must be application/vnd.git-lfs+json");
    }
    let Some(body) = ctx.json() else {
        return error(400, "body is not JSON");
    };
    if body.get("operation").and_then(Value::as_str) != Some("upload") {
        return error(400, "only \"upload\" is served");
    }
    let transfers: Vec<&str> = body
        .get("transfers")
        .and_then(Value::as_array)
        .map(|t| t.iter().filter_map(Value::as_str).collect())
        .unwrap_or_else(|| vec!["basic"]);
    let Some(objects) = body.get("objects").and_then(Value::as_array) else {
        return error(400, "\"objects\" is required");
    };
    let mut out = Vec::new();
    let mut chosen = "basic";
    for object in objects {
        let (Some(oid), Some(size)) = (
            object.get("oid").and_then(Value::as_str),
            object.get("size").and_then(Value::as_u64),
        ) else {
            return error(400, "each object needs \"oid\" and \"size\"");
        };
        if oid.len() != 64 || !oid.bytes().all(|b| b.is_ascii_hexdigit()) {
            out.push(
                json!({"oid": oid, "size": size, "error": {"code": 422, "message": "invalid oid"}}),
            );
            continue;
        }
        if state
            .objects
            .get(oid)
            .is_some_and(|o| o.len() as u64 == size)
        {
            out.push(json!({"oid": oid, "size": size}));
            continue;
        }
        let verify = json!({"href": format!("{}/lfs-verify/{oid}", ctx.base),
                            "header": {"Authorization": "Bearer verify-token"}});
        if size > state.multipart_over && transfers.contains(&"multipart") {
            chosen = "multipart";
            let chunk = state.chunk_size;
            let count = size.div_ceil(chunk);
            let mut header = serde_json::Map::new();
            header.insert("chunk_size".to_owned(), json!(chunk.to_string()));
            for n in 1..=count {
                header.insert(
                    n.to_string(),
                    json!(format!("{}/lfs-store/{oid}/part/{n}?size={size}", ctx.base)),
                );
            }
            out.push(json!({"oid": oid, "size": size, "actions": {
                "upload": {"href": format!("{}/lfs-store/{oid}/complete", ctx.base), "header": header},
                "verify": verify,
            }}));
        } else {
            out.push(json!({"oid": oid, "size": size, "actions": {
                "upload": {"href": format!("{}/lfs-store/{oid}", ctx.base)},
                "verify": verify,
            }}));
        }
    }
    ResponseTemplate::new(200)
        .insert_header("content-type", "application/vnd.git-lfs+json")
        .set_body_json(json!({"transfer": chosen, "objects": out}))
}

fn put_basic(state: &mut State, oid: &str, body: &[u8]) -> ResponseTemplate {
    if sha256_hex(body) != oid {
        return error(400, "the body's sha256 is not the oid");
    }
    state.objects.insert(oid.to_owned(), body.to_vec());
    ResponseTemplate::new(200)
}

fn put_part(state: &mut State, oid: &str, n: &str, body: &[u8]) -> ResponseTemplate {
    let Ok(n) = n.parse::<u32>() else {
        return error(400, "bad part number");
    };
    let etag = format!("\"{}\"", &sha256_hex(body)[..32]);
    state
        .parts
        .entry(oid.to_owned())
        .or_default()
        .insert(n, body.to_vec());
    ResponseTemplate::new(200).insert_header("ETag", etag.as_str())
}

fn complete(state: &mut State, oid: &str, request: &Request) -> ResponseTemplate {
    let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
        return error(400, "body is not JSON");
    };
    if body.get("oid").and_then(Value::as_str) != Some(oid) {
        return error(400, "\"oid\" does not match the URL");
    }
    let Some(listed) = body.get("parts").and_then(Value::as_array) else {
        return error(400, "\"parts\" is required");
    };
    let Some(held) = state.parts.get(oid) else {
        return error(400, "no parts uploaded");
    };
    let mut whole = Vec::new();
    for (i, part) in listed.iter().enumerate() {
        let number = part.get("partNumber").and_then(Value::as_u64);
        let etag = part.get("etag").and_then(Value::as_str);
        let expected = u64::try_from(i + 1).unwrap_or_default();
        let (Some(number), Some(etag)) = (number, etag) else {
            return error(400, "each part needs \"partNumber\" and \"etag\"");
        };
        if number != expected {
            return error(400, "parts out of order");
        }
        let Some(bytes) = u32::try_from(number).ok().and_then(|n| held.get(&n)) else {
            return error(400, &format!("part {number} was not uploaded"));
        };
        if etag.trim_matches('"') != &sha256_hex(bytes)[..32] {
            return error(400, &format!("etag of part {number} does not match"));
        }
        whole.extend_from_slice(bytes);
    }
    if sha256_hex(&whole) != oid {
        return error(400, "the parts' sha256 is not the oid");
    }
    state.parts.remove(oid);
    state.objects.insert(oid.to_owned(), whole);
    ResponseTemplate::new(200)
}

fn verify(state: &State, ctx: &Ctx<'_>, oid: &str) -> ResponseTemplate {
    let Some(body) = ctx.json() else {
        return error(400, "body is not JSON");
    };
    let size = body.get("size").and_then(Value::as_u64);
    match state.objects.get(oid) {
        Some(bytes)
            if Some(bytes.len() as u64) == size
                && body.get("oid").and_then(Value::as_str) == Some(oid) =>
        {
            ResponseTemplate::new(200)
        }
        Some(_) => error(422, "size or oid does not match"),
        None => error(404, "object not found"),
    }
}

fn commit(state: &mut State, ctx: &Ctx<'_>, repo: &str, rev: &str) -> ResponseTemplate {
    let namespace = repo.split('/').next().unwrap_or_default();
    if let Err(refusal) = ctx.writer(namespace) {
        return refusal;
    }
    let content_type = ctx
        .request
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !content_type.starts_with("application/x-ndjson") {
        return error(415, "Content-Type must be application/x-ndjson");
    }
    let Some(held) = state.repos.get(repo) else {
        return not_found("RepoNotFound", "Repository not found");
    };
    if rev != "main" {
        return not_found("RevisionNotFound", "Invalid rev id");
    }
    let mut files = held.head().files.clone();
    let mut summary = None;
    let text = String::from_utf8_lossy(&ctx.request.body).into_owned();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let Ok(item) = serde_json::from_str::<Value>(line) else {
            return error(400, &format!("line {} is not JSON", n + 1));
        };
        let value = &item["value"];
        match item.get("key").and_then(Value::as_str) {
            Some("header") => {
                if let Some(parent) = value.get("parentCommit").and_then(Value::as_str) {
                    if parent != held.head().oid {
                        return error(
                            412,
                            "A commit has happened since. Please refresh and try again.",
                        );
                    }
                }
                summary = value
                    .get("summary")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            Some("file") => {
                let (Some(path), Some(content)) = (
                    value.get("path").and_then(Value::as_str),
                    value.get("content").and_then(Value::as_str),
                ) else {
                    return error(400, &format!("line {}: file needs path and content", n + 1));
                };
                if value.get("encoding").and_then(Value::as_str) != Some("base64") {
                    return error(400, &format!("line {}: encoding must be base64", n + 1));
                }
                let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(content) else {
                    return error(400, &format!("line {}: content is not base64", n + 1));
                };
                files.insert(path.to_owned(), Entry::Regular(bytes));
            }
            Some("lfsFile") => {
                let (Some(path), Some(oid), Some(size)) = (
                    value.get("path").and_then(Value::as_str),
                    value.get("oid").and_then(Value::as_str),
                    value.get("size").and_then(Value::as_u64),
                ) else {
                    return error(
                        400,
                        &format!("line {}: lfsFile needs path, oid and size", n + 1),
                    );
                };
                if value.get("algo").and_then(Value::as_str) != Some("sha256") {
                    return error(400, &format!("line {}: algo must be sha256", n + 1));
                }
                if !state
                    .objects
                    .get(oid)
                    .is_some_and(|o| o.len() as u64 == size)
                {
                    return error(
                        422,
                        &format!(
                            "Your push was rejected because an LFS pointer pointed to a file that does not exist: {path}"
                        ),
                    );
                }
                files.insert(
                    path.to_owned(),
                    Entry::Lfs {
                        oid: oid.to_owned(),
                        size,
                    },
                );
            }
            Some("deletedFile") => {
                if let Some(path) = value.get("path").and_then(Value::as_str) {
                    files.remove(path);
                }
            }
            other => return error(400, &format!("line {}: unknown key {other:?}", n + 1)),
        }
    }
    let Some(summary) = summary else {
        return error(400, "the first line must be the header");
    };
    let n = held.commits.len();
    let oid = commit_oid(repo, n, &summary);
    let url = format!("{}/{repo}/commit/{oid}", ctx.base);
    let held = state.repos.get_mut(repo).expect("checked above");
    held.commits.push(Commit {
        oid: oid.clone(),
        summary,
        files,
    });
    if state.faults.commit_lost > 0 {
        state.faults.commit_lost -= 1;
        return error(500, "Internal Error");
    }
    ResponseTemplate::new(200).set_body_json(json!({"commitUrl": url, "commitOid": oid}))
}

fn resolve(state: &State, ctx: &Ctx<'_>, repo: &str, rev: &str, path: &str) -> ResponseTemplate {
    let held = match readable(state, ctx, repo) {
        Ok(held) => held,
        Err(refusal) => return refusal,
    };
    let Some(commit) = at(held, rev) else {
        return not_found("RevisionNotFound", "Invalid rev id");
    };
    let Some(entry) = commit.files.get(path) else {
        return not_found("EntryNotFound", "Entry not found")
            .insert_header("X-Repo-Commit", commit.oid.as_str());
    };
    let (bytes, etag, lfs) = match entry {
        Entry::Regular(bytes) => (bytes.clone(), blob_id(bytes), false),
        Entry::Lfs { oid, .. } => (
            state.objects.get(oid).cloned().unwrap_or_default(),
            oid.clone(),
            true,
        ),
    };
    let _ = ctx.authorization;
    let mut response = ResponseTemplate::new(200)
        .insert_header("X-Repo-Commit", commit.oid.as_str())
        .insert_header("ETag", format!("\"{etag}\"").as_str())
        .insert_header("X-Linked-Size", bytes.len().to_string().as_str());
    if lfs {
        response = response.insert_header("X-Linked-Etag", format!("\"{etag}\"").as_str());
    }
    response.set_body_bytes(bytes)
}

/// The Python of the pinned `huggingface_hub` venv (`scripts/hf-hub-env.sh`, run by
/// `make test`); fails naming the command that installs it.
pub fn hf_python() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .expect("HOME is set");
    let python = cache
        .join("overbrainer")
        .join(format!("hf-hub-{HF_HUB_VERSION}"))
        .join("bin/python");
    assert!(
        python.exists(),
        "huggingface_hub {HF_HUB_VERSION} is not installed at {}; install it with: scripts/hf-hub-env.sh (or make test)",
        python.display()
    );
    python
}

/// Runs `script` with the pinned `huggingface_hub` against `endpoint`, Xet off (the
/// stand-in speaks Git LFS only), with `args`; returns its stdout, failing with its stderr.
pub fn run_python(endpoint: &str, token: Option<&str>, script: &str, args: &[&str]) -> String {
    let home = tempfile::tempdir().expect("temp HF_HOME");
    let mut command = std::process::Command::new(hf_python());
    command
        .arg("-c")
        .arg(script)
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HF_ENDPOINT", endpoint)
        .env("HF_HUB_DISABLE_XET", "1")
        .env("HF_HUB_DISABLE_TELEMETRY", "1")
        .env("HF_HOME", home.path())
        .env("HF_HUB_DISABLE_PROGRESS_BARS", "1");
    if let Some(token) = token {
        command.env("HF_TOKEN", token);
    }
    let output = command.output().expect("run python");
    assert!(
        output.status.success(),
        "python failed: {}\n{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `snapshot_download` of `repo` into `into` by the pinned client.
pub fn snapshot_download(endpoint: &str, token: Option<&str>, repo: &str, into: &Path) {
    run_python(
        endpoint,
        token,
        "import sys\nfrom huggingface_hub import snapshot_download\nsnapshot_download(sys.argv[1], local_dir=sys.argv[2])\n",
        &[repo, &into.display().to_string()],
    );
}

/// Every file under `dir` (relative path → bytes), `.cache/` (the client's) left out.
pub fn read_tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).expect("read dir") {
            let path = entry.expect("entry").path();
            let rel = path
                .strip_prefix(root)
                .expect("under root")
                .display()
                .to_string();
            if rel == ".cache" {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(rel, std::fs::read(&path).expect("read file"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// A canary: a long random token.
pub fn canary(prefix: &str) -> String {
    use rand::Rng as _;
    let mut rng = rand::rng();
    let tail: String = (0..40)
        .map(|_| char::from(b'a' + rng.random_range(0..26u8)))
        .collect();
    format!("{prefix}{tail}")
}

/// Deterministic pseudo-random bytes (not compressible, binary).
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    use rand::{RngCore as _, SeedableRng as _};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut out = vec![0; len];
    rng.fill_bytes(&mut out);
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn hub_standin_serves_huggingface_hub_upload_and_download() {
    let hub = HubStandin::start().await;
    // Small parts so the large file goes `multipart` in three parts.
    hub.set_multipart(1 << 20, 1 << 20);
    let token = canary("hf_");
    hub.add_token(&token, "alice", "write", &[]);
    let folder = tempfile::tempdir().expect("temp dir");
    let small = b"{\"model_type\": \"llama\"}\n".to_vec();
    let large = noise((5 << 19) + 17, 7); // 2.5 MiB + 17 bytes
    let medium = noise(200_000, 8);
    std::fs::write(folder.path().join("config.json"), &small).expect("write");
    std::fs::create_dir(folder.path().join("merged")).expect("mkdir");
    std::fs::write(folder.path().join("merged/model.safetensors"), &large).expect("write");
    std::fs::write(folder.path().join("adapter_model.safetensors"), &medium).expect("write");
    let endpoint = hub.uri();
    let folder_path = folder.path().display().to_string();
    tokio::task::spawn_blocking(move || {
        run_python(
            &endpoint,
            Some(&token),
            "import sys\nfrom huggingface_hub import HfApi\napi = HfApi()\napi.create_repo('alice/proof', private=True)\napi.upload_folder(repo_id='alice/proof', folder_path=sys.argv[1])\n",
            &[&folder_path],
        );
        let into = tempfile::tempdir().expect("temp dir");
        snapshot_download(&endpoint, Some(&token), "alice/proof", into.path());
        let got = read_tree(into.path());
        assert_eq!(got.get("config.json"), Some(&small));
        assert_eq!(got.get("merged/model.safetensors"), Some(&large));
        assert_eq!(got.get("adapter_model.safetensors"), Some(&medium));
        assert!(got.contains_key(".gitattributes"));
        assert_eq!(got.len(), 4, "{:?}", got.keys().collect::<Vec<_>>());
        // Without the token the private repo is not found.
        let anonymous = std::process::Command::new(hf_python())
            .arg("-c")
            .arg("from huggingface_hub import snapshot_download\nsnapshot_download('alice/proof')\n")
            .env("HF_ENDPOINT", &endpoint)
            .env("HF_HUB_DISABLE_XET", "1")
            .env("HF_HOME", into.path().join("anon"))
            .env_remove("HF_TOKEN")
            .output()
            .expect("python");
        assert!(!anonymous.status.success());
    })
    .await
    .expect("python steps");
    let repo = hub.repo("alice/proof").expect("repo created");
    assert!(repo.private);
    assert_eq!(repo.commits.len(), 2, "initial commit + one upload commit");
    assert!(matches!(
        repo.head().files.get("merged/model.safetensors"),
        Some(Entry::Lfs { .. })
    ));
    assert!(matches!(
        repo.head().files.get("config.json"),
        Some(Entry::Regular(_))
    ));
    let requests = hub.requests();
    assert!(
        requests.iter().any(|r| r.path.contains("/part/")),
        "the large file went multipart"
    );
    assert!(
        requests.iter().any(|r| r.path.starts_with("/lfs-verify/")),
        "verify was called"
    );
}

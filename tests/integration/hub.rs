//! `overbrainer push` through the real binary against the Hub stand-in (`hub_standin`),
//! read back with `huggingface_hub`'s `snapshot_download` (issue 16). One run is trained
//! once with real Axolotl (`training`) and copied into each test's own project.
//! No export exists in this branch yet, so the pushed run has no `gguf/` (the GGUF layout
//! is pinned by `hub::files`' unit tests).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use crate::hub_standin::{Entry, Faults, HubStandin, canary, read_tree, snapshot_download};
use crate::training::{Setup, Training};
use crate::util::{TestProject, output_text, poll};

/// The trained demo run every test copies: its project directory and run ID.
struct Trained {
    training: Training,
    id: String,
}

fn trained() -> &'static Trained {
    static TRAINED: OnceLock<Trained> = OnceLock::new();
    TRAINED.get_or_init(|| {
        let training = Training::new(&Setup::default());
        training.cmd().arg("train").assert().success();
        let id = training.run_ids().pop().expect("a run");
        crate::training::assert_merged_run(&training, &id);
        Trained { training, id }
    })
}

/// A fresh project holding a copy of the trained run, its name `tiny_test`.
fn project_with_run() -> (TestProject, String) {
    let trained = trained();
    let project = TestProject::empty();
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", trained.training.project.path().display()))
        .arg(project.path())
        .status()
        .expect("cp");
    assert!(status.success());
    let config = project
        .read("overbrainer.toml")
        .replace("name = \"tiny test\"", "name = \"tiny_test\"");
    project.write("overbrainer.toml", &config);
    (project, trained.id.clone())
}

/// `overbrainer push` in `project` against `hub`, with `token` when given.
fn push(
    project: &TestProject,
    hub: &HubStandin,
    token: Option<&str>,
    args: &[&str],
) -> assert_cmd::Command {
    let mut cmd = project.cmd();
    cmd.env("OVERBRAINER_HUB__BASE_URL", hub.uri())
        .env("OVERBRAINER_TEST_SECOND_MS", "20")
        .timeout(Duration::from_secs(300))
        .arg("push")
        .args(args);
    if let Some(token) = token {
        cmd.env("OVERBRAINER_HF_TOKEN", token);
    }
    cmd
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

/// The token appears in no file under `dir` and not in `text`.
fn assert_no_token(token: &str, text: &str, dirs: &[&Path]) {
    assert!(
        !text.contains(token),
        "the token leaked into the output:\n{text}"
    );
    for dir in dirs {
        for file in files_under(dir) {
            let bytes = std::fs::read(&file).unwrap_or_default();
            assert!(
                !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
                "the token leaked into {}",
                file.display()
            );
        }
    }
}

/// What `snapshot_download` of `repo` gives.
async fn download(hub: &HubStandin, token: Option<&str>, repo: &str) -> BTreeMap<String, Vec<u8>> {
    let endpoint = hub.uri();
    let token = token.map(str::to_owned);
    let repo = repo.to_owned();
    tokio::task::spawn_blocking(move || {
        let into = tempfile::tempdir().expect("temp dir");
        snapshot_download(&endpoint, token.as_deref(), &repo, into.path());
        read_tree(into.path())
    })
    .await
    .expect("download")
}

/// The files of the run's `output/` a push uploads (HUB-3): everything but
/// `checkpoint-*`, `debug.log`, hidden files and `README.md`.
fn expected_model_files(run: &Path) -> BTreeMap<String, Vec<u8>> {
    let output = run.join("output");
    files_under(&output)
        .into_iter()
        .filter_map(|file| {
            let rel = file.strip_prefix(&output).ok()?.display().to_string();
            let skipped = rel
                .split('/')
                .any(|p| p.starts_with("checkpoint-") || p.starts_with('.'))
                || rel == "debug.log"
                || rel == "README.md";
            (!skipped).then(|| (rel, std::fs::read(&file).expect("read")))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn push_of_the_trained_run_creates_a_private_repo_that_huggingface_hub_reads_back() {
    let (project, id) = project_with_run();
    let hub = HubStandin::start().await;
    // Small parts: the merged model goes `multipart`, the adapter `basic`.
    hub.set_multipart(64 << 10, 64 << 10);
    let token = canary("hf_");
    hub.add_token(&token, "alice", "write", &[]);
    let output = push(&project, &hub, Some(&token), &[&id])
        .assert()
        .success();
    let out = output.get_output();
    let text = output_text(out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let repo = "alice/tiny-test";
    let created = hub.repo(repo).expect("repo created");
    assert!(created.private, "a new repo is private");
    assert_eq!(created.commits.len(), 2, "one commit after the Hub's first");
    let head = created.head().oid.clone();
    assert!(
        stdout.starts_with(&format!("pushed {}/{repo}/commit/{head} (", hub.uri())),
        "{text}"
    );
    assert!(text.contains("created alice/tiny-test (private)"), "{text}");
    // Read back by the Hub's own client: exactly the spec's files, bytes equal.
    let got = download(&hub, Some(&token), repo).await;
    let run_dir = project.path().join("runs").join(&id);
    let mut expected = expected_model_files(&run_dir);
    assert!(expected.contains_key("adapter_model.safetensors"));
    assert!(expected.contains_key("merged/model.safetensors"));
    assert!(
        run_dir.join("output/README.md").exists() || !expected.contains_key("README.md"),
        "Axolotl's README is left out"
    );
    let card = std::fs::read(run_dir.join("hub/README.md")).expect("card written");
    expected.insert("README.md".into(), card.clone());
    expected.insert(
        "loss.svg".into(),
        std::fs::read(run_dir.join("hub/loss.svg")).expect("curve written"),
    );
    let mut got_less_attributes = got.clone();
    got_less_attributes.remove(".gitattributes");
    assert_eq!(
        got_less_attributes.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>()
    );
    assert!(got_less_attributes == expected, "bytes differ");
    let card = String::from_utf8(card).expect("utf-8 card");
    assert!(
        card.trim_end().ends_with("<!-- overbrainer:card -->"),
        "{card}"
    );
    assert!(
        card.contains("- lora") && card.contains("## Training"),
        "{card}"
    );
    assert!(card.contains("![loss curve](loss.svg)"), "{card}");
    assert!(matches!(
        created.head().files.get("merged/model.safetensors"),
        Some(Entry::Lfs { .. })
    ));
    let requests = hub.requests();
    assert!(
        requests.iter().any(|r| r.path.contains("/part/")),
        "multipart used"
    );
    assert!(
        requests.iter().any(|r| r.path.starts_with("/lfs-verify/")),
        "verify used"
    );
    // push.json (HUB-10).
    let record: serde_json::Value =
        serde_json::from_str(&project.read(&format!("runs/{id}/hub/push.json")))
            .expect("push.json");
    assert_eq!(record["repo"], repo);
    assert_eq!(record["commit"], head.as_str());
    assert_eq!(record["private"], true);
    assert_eq!(record["files"], expected.len());
    assert!(
        record["pushed"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{record}"
    );
    assert!(record["url"].as_str().is_some_and(|u| u.contains(&head)));
    assert_no_token(&token, &text, &[project.path(), &project.home()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn push_private_to_an_existing_public_repo_is_refused_before_any_file_is_sent() {
    let (project, id) = project_with_run();
    let hub = HubStandin::start().await;
    let token = canary("hf_");
    hub.add_token(&token, "alice", "write", &[]);
    hub.add_repo("alice/shared", false, &[]);
    let output = push(
        &project,
        &hub,
        Some(&token),
        &[&id, "--repo", "alice/shared"],
    )
    .assert()
    .failure();
    let text = output_text(output.get_output());
    assert!(text.contains("alice/shared exists and is public"), "{text}");
    assert!(
        text.contains("--public") && text.contains("[hub] private = false"),
        "{text}"
    );
    let requests = hub.requests();
    assert!(
        requests.iter().all(|r| !r.path.contains("preupload")
            && !r.path.contains("/info/lfs/")
            && !r.path.starts_with("/lfs-store")
            && !r.path.contains("/commit/")
            && !r.path.contains("/resolve/")),
        "{requests:?}"
    );
    assert_eq!(hub.repo("alice/shared").expect("repo").commits.len(), 1);
    assert!(
        !project
            .path()
            .join(format!("runs/{id}/hub/push.json"))
            .exists()
    );
    assert_no_token(&token, &text, &[project.path()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn push_public_creates_a_public_repo_anyone_can_download() {
    let (project, id) = project_with_run();
    let hub = HubStandin::start().await;
    let token = canary("hf_");
    hub.add_token(&token, "alice", "write", &["team"]);
    push(
        &project,
        &hub,
        Some(&token),
        &[&id, "--public", "--repo", "team/child"],
    )
    .assert()
    .success();
    let held = hub.repo("team/child").expect("created in the org");
    assert!(!held.private);
    let got = download(&hub, None, "team/child").await;
    assert!(
        got.contains_key("adapter_model.safetensors"),
        "{:?}",
        got.keys()
    );
    // A second push to the existing public repo: one more commit, still public.
    let output = push(
        &project,
        &hub,
        Some(&token),
        &[&id, "--public", "--repo", "team/child"],
    )
    .assert()
    .success();
    let text = output_text(output.get_output());
    assert!(
        text.contains("team/child exists; it remains public"),
        "{text}"
    );
    assert_eq!(hub.repo("team/child").expect("repo").commits.len(), 3);
    assert!(text.contains("is on the Hub already, not sent"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn push_keeps_a_readme_without_the_marker_unless_overwrite_card() {
    let (project, id) = project_with_run();
    let hub = HubStandin::start().await;
    let token = canary("hf_");
    hub.add_token(&token, "alice", "write", &[]);
    let own = b"# Alice's own card\n".to_vec();
    hub.add_repo("alice/child", true, &[("README.md", &own)]);
    let output = push(
        &project,
        &hub,
        Some(&token),
        &[&id, "--repo", "alice/child"],
    )
    .assert()
    .success();
    let text = output_text(output.get_output());
    assert!(
        text.contains("kept the repo's own README.md") && text.contains("--overwrite-card"),
        "{text}"
    );
    assert!(
        text.contains("alice/child exists; it remains private"),
        "{text}"
    );
    assert_eq!(hub.file("alice/child", "README.md"), Some(own));
    assert!(
        hub.file("alice/child", "adapter_model.safetensors")
            .is_some()
    );
    push(
        &project,
        &hub,
        Some(&token),
        &[&id, "--repo", "alice/child", "--overwrite-card"],
    )
    .assert()
    .success();
    let card =
        String::from_utf8(hub.file("alice/child", "README.md").expect("card")).expect("utf-8");
    assert!(card.contains("<!-- overbrainer:card -->"), "{card}");
    // Now that it holds the marker, a plain push replaces it again.
    let output = push(
        &project,
        &hub,
        Some(&token),
        &[&id, "--repo", "alice/child"],
    )
    .assert()
    .success();
    assert!(!output_text(output.get_output()).contains("kept the repo's own README.md"));
}

#[tokio::test(flavor = "multi_thread")]
async fn push_dry_run_needs_no_token_and_sends_nothing() {
    let (project, id) = project_with_run();
    let hub = HubStandin::start().await;
    let output = push(&project, &hub, None, &[&id, "--dry-run"])
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&output.get_output().stdout).into_owned();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0], "push: <you>/tiny-test (private when created); dry run, nothing is sent",
        "{stdout}"
    );
    assert!(lines.iter().any(|l| l.trim_start().starts_with("adapter_model.safetensors ") && l.ends_with(" MB")), "{stdout}");
    assert!(
        lines
            .iter()
            .any(|l| l.trim_start().starts_with("merged/model.safetensors ")),
        "{stdout}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.trim_start().starts_with("README.md ")),
        "{stdout}"
    );
    let last = lines.last().expect("a last line");
    assert!(
        last.ends_with(&format!("card written to runs/{id}/hub/README.md")),
        "{stdout}"
    );
    assert!(
        project
            .path()
            .join(format!("runs/{id}/hub/README.md"))
            .is_file()
    );
    assert!(hub.requests().is_empty(), "{:?}", hub.requests());
    // And a real push without a token names the variable.
    let output = push(&project, &hub, None, &[&id]).assert().failure();
    assert!(output_text(output.get_output()).contains("OVERBRAINER_HF_TOKEN is not set"));
    assert!(hub.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn push_with_a_token_without_write_access_says_it_needs_write_access() {
    let (project, id) = project_with_run();
    let hub = HubStandin::start().await;
    let reader = canary("hf_");
    hub.add_token(&reader, "alice", "read", &[]);
    let output = push(&project, &hub, Some(&reader), &[&id])
        .assert()
        .failure();
    let text = output_text(output.get_output());
    assert!(
        text.contains(
            "the token in OVERBRAINER_HF_TOKEN needs write access to the namespace \"alice\""
        ),
        "{text}"
    );
    // A write token of another account, pushing into a namespace it is not in.
    let writer = canary("hf_");
    hub.add_token(&writer, "bob", "write", &[]);
    let output = push(
        &project,
        &hub,
        Some(&writer),
        &[&id, "--repo", "alice/child"],
    )
    .assert()
    .failure();
    let text = output_text(output.get_output());
    assert!(
        text.contains("needs write access to the namespace \"alice\""),
        "{text}"
    );
    assert!(hub.repo("alice/child").is_none() && hub.repo("alice/tiny-test").is_none());
    assert_no_token(&reader, &text, &[project.path()]);
    assert_no_token(&writer, &text, &[project.path()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn push_cancelled_during_the_lfs_uploads_commits_nothing_and_the_next_sends_only_missing_objects()
 {
    let (project, id) = project_with_run();
    let hub = HubStandin::start().await;
    let token = canary("hf_");
    hub.add_token(&token, "alice", "write", &[]);
    // The first object upload goes through; the second hangs until the test interrupts.
    hub.set_faults(Faults {
        stall: Some(Duration::from_secs(600)),
        stall_after: 1,
        ..Faults::default()
    });
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_overbrainer"));
    child
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", project.home())
        .env("OVERBRAINER_HUB__BASE_URL", hub.uri())
        .env("OVERBRAINER_HF_TOKEN", &token)
        .arg("-C")
        .arg(project.path())
        .args(["push", &id])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = child.spawn().expect("spawn push");
    poll(Duration::from_secs(120), "the second object upload", || {
        if hub.uploads() >= 2 {
            Ok(())
        } else {
            Err(hub.uploads())
        }
    });
    crate::util::signal(child.id(), "INT");
    let output = child.wait_with_output().expect("push ends");
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("push cancelled before its commit"), "{text}");
    assert!(text.contains(&format!("overbrainer push {id}")), "{text}");
    assert_eq!(
        hub.repo("alice/tiny-test").expect("repo").commits.len(),
        1,
        "nothing committed"
    );
    let stored = hub.objects();
    assert_eq!(stored.len(), 1, "the first object is stored");
    // The next push sends only what the stand-in lacks.
    hub.set_faults(Faults::default());
    let before = hub.requests().len();
    push(&project, &hub, Some(&token), &[&id])
        .assert()
        .success();
    let again: Vec<_> = hub.requests()[before..].to_vec();
    let puts: Vec<&str> = again
        .iter()
        .filter(|r| r.method == "PUT")
        .map(|r| r.path.as_str())
        .collect();
    assert!(!puts.iter().any(|p| p.contains(&stored[0])), "{puts:?}");
    assert!(!puts.is_empty(), "the missing object is sent");
    assert_eq!(hub.repo("alice/tiny-test").expect("repo").commits.len(), 2);
    assert_no_token(&token, &text, &[project.path()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn push_waits_out_a_429_with_retry_after_on_preupload() {
    let (project, id) = project_with_run();
    let hub = HubStandin::start().await;
    let token = canary("hf_");
    hub.add_token(&token, "alice", "write", &[]);
    hub.set_faults(Faults {
        preupload_429: 2,
        retry_after: 3,
        ..Faults::default()
    });
    let output = push(&project, &hub, Some(&token), &[&id])
        .assert()
        .success();
    let text = output_text(output.get_output());
    // 3 rule seconds at 20 ms each.
    assert_eq!(
        text.matches("preupload again in 0.1 s").count(),
        2,
        "{text}"
    );
    let preuploads = hub
        .requests()
        .iter()
        .filter(|r| r.path.contains("/preupload/"))
        .count();
    assert_eq!(preuploads, 3);
    assert_eq!(hub.repo("alice/tiny-test").expect("repo").commits.len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn push_whose_commit_answer_is_lost_checks_the_head_and_commits_once() {
    let (project, id) = project_with_run();
    let hub = HubStandin::start().await;
    let token = canary("hf_");
    hub.add_token(&token, "alice", "write", &[]);
    hub.set_faults(Faults {
        commit_lost: 1,
        ..Faults::default()
    });
    let output = push(&project, &hub, Some(&token), &[&id])
        .assert()
        .success();
    let text = output_text(output.get_output());
    let held = hub.repo("alice/tiny-test").expect("repo");
    assert_eq!(held.commits.len(), 2, "one commit, not two");
    let commits = hub
        .requests()
        .iter()
        .filter(|r| r.path.contains("/commit/"))
        .count();
    assert_eq!(
        commits, 1,
        "the commit is not sent again once the head moved"
    );
    assert!(text.contains(&held.head().oid), "{text}");
}

//! `overbrainer push` through the real binary against the Hub stand-in (`hub_standin`),
//! read back with `huggingface_hub`'s `snapshot_download` (issue 16). One run is trained
//! once with real Axolotl (`fixtures::local_run`, shared with `training`, `export` and
//! `compare`) and copied into each test's own project.
//! One test exports a copy of it with the real llama.cpp (`export`) and pushes the GGUF
//! and `Modelfile`; `[hub] after_training` is followed through `train` (the shared run is
//! trained with it and no token) and `train attach` (HUB-14, HUB-15).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use crate::hub_standin::{Entry, Faults, HubStandin, canary, read_tree, snapshot_download};
use crate::training::Training;
use crate::util::{TestProject, output_text, poll};

/// The trained demo run every test copies: its project directory, run ID and what its
/// `train` printed (stdout, then stderr).
struct Trained {
    training: Training,
    id: String,
    text: String,
}

/// The shared run ([`crate::fixtures::local_run`], also `training`'s, `export`'s and
/// `compare`'s), trained with `[hub] after_training = true` (from the environment, so
/// the copies' `overbrainer.toml` leaves it off) and no token: the push after it is
/// skipped, and nothing reaches a Hub.
fn trained() -> &'static Trained {
    static TRAINED: OnceLock<Trained> = OnceLock::new();
    TRAINED.get_or_init(|| {
        let run = crate::fixtures::local_run();
        let training = Training::reopen(&run.root, vec![crate::fixtures::hub_after_training()]);
        crate::training::assert_merged_run(&training, &run.id);
        Trained {
            training,
            id: run.id.clone(),
            text: format!("{}{}", run.stdout, run.stderr),
        }
    })
}

/// A fresh project holding a copy of the trained run, its name `tiny_test`.
fn project_with_run() -> (TestProject, String) {
    let trained = trained();
    let project = TestProject::empty();
    crate::util::copy_tree(&trained.training.project.path().join("."), project.path());
    let config = project
        .read("overbrainer.toml")
        .replace("name = \"tiny test\"", "name = \"tiny_test\"");
    project.write("overbrainer.toml", &config);
    // The local target's job directory is recorded by its absolute path: point the
    // copy's at the copy, so a job it starts (an export) works in its own project.
    let record = format!("runs/{}/run.json", trained.id);
    let moved = project.read(&record).replace(
        &trained.training.project.path().display().to_string(),
        &project.path().display().to_string(),
    );
    project.write(&record, &moved);
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
    let output = crate::util::wait_output(child, Duration::from_secs(300), "push after Ctrl-C");
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
        text.matches("preupload: the Hub answered 429; trying again in 0.1 s")
            .count(),
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

/// `overbrainer export RUN_ID --quantize QUANT` in `project` with the real llama.cpp.
fn export(project: &TestProject, id: &str, quant: &str) {
    let output = project
        .cmd()
        .env("CUDA_VISIBLE_DEVICES", "")
        .env("HF_HUB_OFFLINE", "1")
        .env(
            "OVERBRAINER_TARGETS__LOCAL__LLAMA_CPP_DIR",
            crate::export::llama_dir(),
        )
        .env("OVERBRAINER_EXPORT__PRE_TOKENIZER", "gpt-2")
        .timeout(Duration::from_secs(1200))
        .args(["export", id, "--quantize", quant])
        .output()
        .expect("export");
    assert!(output.status.success(), "{}", output_text(&output));
}

// Issue 16, test 1 end to end: the GGUF and `Modelfile` of `output/gguf/` land at the repo
// root, where `ollama run hf.co/<repo>:<quant>` looks (HUB-4), and the card says so (HUB-8).
#[tokio::test(flavor = "multi_thread")]
async fn push_of_an_exported_run_puts_the_gguf_and_modelfile_at_the_repo_root_with_usage_in_the_card()
 {
    let (project, id) = project_with_run();
    export(&project, &id, "Q8_0");
    let run_dir = project.path().join("runs").join(&id);
    let gguf = format!("{id}-Q8_0.gguf");
    assert!(run_dir.join("output/gguf").join(&gguf).is_file());
    let hub = HubStandin::start().await;
    let token = canary("hf_");
    hub.add_token(&token, "alice", "write", &[]);
    let output = push(&project, &hub, Some(&token), &[&id])
        .assert()
        .success();
    let text = output_text(output.get_output());
    let repo = "alice/tiny-test";
    let mut got = download(&hub, Some(&token), repo).await;
    got.remove(".gitattributes");
    // The spec's files: output/ less what HUB-3 leaves out, gguf/'s files at the root.
    let mut expected: BTreeMap<String, Vec<u8>> = expected_model_files(&run_dir)
        .into_iter()
        .map(|(path, bytes)| {
            let path = path
                .strip_prefix("gguf/")
                .map_or(path.clone(), str::to_owned);
            (path, bytes)
        })
        .collect();
    for name in ["README.md", "loss.svg"] {
        expected.insert(
            name.into(),
            std::fs::read(run_dir.join("hub").join(name)).expect("hub file"),
        );
    }
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>()
    );
    assert!(got == expected, "bytes differ");
    assert!(
        got.contains_key(&gguf) && got.contains_key("Modelfile"),
        "{got:?}"
    );
    assert!(got.keys().all(|k| !k.starts_with("gguf/")));
    assert_eq!(
        String::from_utf8_lossy(&got["Modelfile"]),
        format!("FROM ./{gguf}\nPARAMETER num_ctx 256\n")
    );
    assert!(matches!(
        hub.repo(repo).expect("repo").head().files.get(&gguf),
        Some(Entry::Lfs { .. })
    ));
    let card = String::from_utf8(got["README.md"].clone()).expect("utf-8 card");
    assert!(card.contains("- gguf\n"), "{card}");
    assert!(card.contains("## Usage"), "{card}");
    assert!(
        card.contains(&format!("ollama run hf.co/{repo}:Q8_0")),
        "{card}"
    );
    assert!(
        card.contains(&format!("llama-cli -hf {repo}:Q8_0")),
        "{card}"
    );
    assert_no_token(&token, &text, &[project.path(), &project.home()]);
}

/// `overbrainer train attach RUN_ID` with `[hub] after_training = true` against `hub`.
fn attach_with_push(
    project: &TestProject,
    hub: &HubStandin,
    token: Option<&str>,
    id: &str,
) -> std::process::Output {
    let mut cmd = project.cmd();
    cmd.env("OVERBRAINER_HUB__BASE_URL", hub.uri())
        .env("OVERBRAINER_TEST_SECOND_MS", "20")
        .env("OVERBRAINER_HUB__AFTER_TRAINING", "true")
        .timeout(Duration::from_secs(300))
        .args(["train", "attach", id]);
    if let Some(token) = token {
        cmd.env("OVERBRAINER_HF_TOKEN", token);
    }
    cmd.output().expect("train attach")
}

// HUB-14 through `train attach`: the ended run is pushed once; attaching again makes no
// second commit; run.json is untouched.
#[tokio::test(flavor = "multi_thread")]
async fn after_training_pushes_an_attached_succeeded_run_once_and_attaching_again_makes_no_second_commit()
 {
    let (project, id) = project_with_run();
    // `[training]` changed since the run: the card keeps what the run was trained with.
    let config = project.read("overbrainer.toml");
    assert!(
        config.contains("learning_rate = 1e-3\nlora_r = 4\n"),
        "{config}"
    );
    project.write(
        "overbrainer.toml",
        &config.replace(
            "learning_rate = 1e-3\nlora_r = 4\n",
            "learning_rate = 5e-2\nlora_r = 32\n",
        ),
    );
    let run_json = project.path().join("runs").join(&id).join("run.json");
    let before = std::fs::read(&run_json).expect("run.json");
    let hub = HubStandin::start().await;
    let token = canary("hf_");
    hub.add_token(&token, "alice", "write", &[]);
    let output = attach_with_push(&project, &hub, Some(&token), &id);
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    let repo = "alice/tiny-test";
    let created = hub.repo(repo).expect("pushed after training");
    assert_eq!(created.commits.len(), 2, "{text}");
    let head = created.head().oid.clone();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!("pushed {}/{repo}/commit/{head} (", hub.uri())),
        "{text}"
    );
    assert!(
        stdout.find("train: adapter in").expect("summary") < stdout.find("pushed ").unwrap(),
        "the push follows the run's summary: {text}"
    );
    assert!(
        text.contains(&format!("pushing run {id} after training")),
        "{text}"
    );
    let record: serde_json::Value =
        serde_json::from_str(&project.read(&format!("runs/{id}/hub/push.json")))
            .expect("push.json");
    assert_eq!(record["commit"], head.as_str());
    let got = download(&hub, Some(&token), repo).await;
    assert!(got.contains_key("merged/model.safetensors"));
    let card = String::from_utf8_lossy(&got["README.md"]);
    assert!(card.contains("| learning rate | 0.001 |"), "{card}");
    assert!(
        card.contains("| LoRA r / alpha / dropout | 4 / 8 / "),
        "{card}"
    );
    // Again: push.json exists, so no second commit.
    let requests = hub.requests().len();
    let output = attach_with_push(&project, &hub, Some(&token), &id);
    let again = output_text(&output);
    assert!(output.status.success(), "{again}");
    assert!(
        again.contains(&format!(
            "run {id} was pushed already (runs/{id}/hub/push.json)"
        )),
        "{again}"
    );
    assert!(again.contains(&format!("`overbrainer push {id}` pushes it again")));
    assert_eq!(hub.repo(repo).expect("repo").commits.len(), 2);
    assert_eq!(hub.requests().len(), requests, "nothing sent");
    assert_eq!(std::fs::read(&run_json).expect("run.json"), before);
    assert_no_token(
        &token,
        &format!("{text}{again}"),
        &[project.path(), &project.home()],
    );
}

// HUB-15: a failed push after training leaves the run succeeded, warns with the cause and
// the command, and the exit status stays the run's.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_push_after_training_warns_with_the_cause_and_leaves_the_run_succeeded() {
    let (project, id) = project_with_run();
    let run_json = project.path().join("runs").join(&id).join("run.json");
    let before = std::fs::read(&run_json).expect("run.json");
    let hub = HubStandin::start().await;
    let reader = canary("hf_");
    hub.add_token(&reader, "alice", "read", &[]);
    let output = attach_with_push(&project, &hub, Some(&reader), &id);
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains(&format!(
            "the push after training failed: the token in OVERBRAINER_HF_TOKEN needs write access to the namespace \"alice\"; run {id} stays succeeded; push it with: overbrainer push {id}"
        )),
        "{text}"
    );
    assert!(hub.repo("alice/tiny-test").is_none());
    assert!(
        !project
            .path()
            .join(format!("runs/{id}/hub/push.json"))
            .exists()
    );
    assert_eq!(std::fs::read(&run_json).expect("run.json"), before);
    let listed = project
        .cmd()
        .args(["runs", "ls"])
        .output()
        .expect("runs ls");
    assert!(
        String::from_utf8_lossy(&listed.stdout)
            .lines()
            .any(|l| l.contains(id.as_str()) && l.contains("succeeded")),
        "{}",
        output_text(&listed)
    );
    assert_no_token(&reader, &text, &[project.path(), &project.home()]);
}

// HUB-14/15 and RUN-11 through `train`: with no token the start warns, and after the run
// the push is skipped with a line naming the variable and the command; nothing is sent
// (the shared run was trained that way, see `trained`). Through `train attach`, against
// the stand-in, the stand-in sees no request.
#[tokio::test(flavor = "multi_thread")]
async fn after_training_without_a_token_warns_at_start_and_skips_the_push_with_a_line() {
    let trained = trained();
    let text = &trained.text;
    let id = &trained.id;
    let start = text
        .find("`[hub] after_training = true` but `OVERBRAINER_HF_TOKEN` is unset")
        .unwrap_or_else(|| panic!("no start warning: {text}"));
    let skipped = format!(
        "the push after training is skipped: OVERBRAINER_HF_TOKEN is not set; push the run later with: overbrainer push {id}"
    );
    let end = text
        .find(&skipped)
        .unwrap_or_else(|| panic!("no skip line: {text}"));
    assert!(start < end, "{text}");
    assert!(text.contains("train: merged model in"), "{text}");
    let (project, id) = project_with_run();
    let hub = HubStandin::start().await;
    let output = attach_with_push(&project, &hub, None, &id);
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains(&skipped.replace(&trained.id, &id)), "{text}");
    assert!(hub.requests().is_empty(), "{:?}", hub.requests());
    assert!(!project.path().join(format!("runs/{id}/hub")).exists());
}

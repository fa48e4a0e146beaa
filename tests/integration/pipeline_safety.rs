//! What the pipeline must never do, through the real binary against stand-in providers:
//! show or store a key that a provider echoes back (SEC-5, LOG-4), lose output on disk
//! when `--force` meets a stage that cannot start or stops early (PIPE-3, PIPE-15), start
//! anything for a `--topic` that is not a topic of the project (PIPE-2), panic when
//! `history --all` writes into a pipe closed early, or lose a record to a byte-order mark.

use std::io::BufRead as _;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::pipeline::{
    config, lines, mount_generator, openai_reply, overbrainer, project, stdout, write_questions,
};
use crate::util::{TestProject, output_text};

/// The key of the tester's report, kept in `.env` as a user would: a long random token,
/// so that nothing else (a timestamp's nanoseconds, an ID) can contain a part of it.
const CANARY: &str = "sk-canary-Xq7Jm2Vp9Rk4Wz8Lt3Nc";

/// The key whole and its tell-tale parts: none may appear anywhere, not even half of the
/// key (each part is at least `llm::redact::FRAGMENT` characters long).
const TELLS: [&str; 3] = [CANARY, "Xq7Jm2Vp9Rk4", "Wz8Lt3Nc"];

/// A project whose `.env` holds [`CANARY`] as both providers' key.
fn canary_project() -> TestProject {
    let project = project(&config("openai", "parent-model", true, ""));
    project.write(
        ".env",
        &format!(
            "OVERBRAINER_PROVIDERS__STAND__API_KEY={CANARY}\nOVERBRAINER_PROVIDERS__OTHER__API_KEY={CANARY}\n"
        ),
    );
    project
}

/// Runs `overbrainer <args>` against `server` with the key from `.env` and `extra`
/// variables, off the async runtime so the stand-in keeps serving.
async fn run(
    project: &TestProject,
    server: &MockServer,
    args: &[&str],
    extra: &[(&str, &str)],
) -> std::process::Output {
    let mut cmd = project.cmd();
    cmd.args(args)
        .env("OVERBRAINER_PROVIDERS__STAND__BASE_URL", server.uri())
        .env("OVERBRAINER_PROVIDERS__OTHER__BASE_URL", server.uri())
        .env("OVERBRAINER_TEST_SECOND_MS", "10");
    for (name, value) in extra {
        cmd.env(name, value);
    }
    tokio::task::spawn_blocking(move || cmd.output().expect("run overbrainer"))
        .await
        .expect("join")
}

/// Every file of the project but `.env`, with its text.
fn project_files(dir: &Path, found: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            project_files(&path, found);
        } else if path.file_name().is_some_and(|name| name != ".env") {
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            found.push((path.display().to_string(), text));
        }
    }
}

/// Asserts that no part of the key reached the output or any project file.
fn assert_no_key(project: &TestProject, output: &std::process::Output) {
    let text = output_text(output);
    let mut files = Vec::new();
    project_files(project.path(), &mut files);
    for tell in TELLS {
        assert!(
            !text.contains(tell),
            "the key leaked into the output: {text}"
        );
        for (path, content) in &files {
            assert!(
                !content.contains(tell),
                "the key leaked into {path}: {content}"
            );
        }
    }
}

/// A stand-in that answers every request with `status` and a body echoing the request's
/// `Authorization` header, whole and in part, as real providers and proxies do.
async fn echoing(status: u16) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(move |request: &Request| {
            let auth = request
                .headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            let key = auth.trim_start_matches("Bearer ");
            let partial = format!("{}***{}", &key[..key.len().min(11)], &key[key.len() - 4..]);
            ResponseTemplate::new(status).set_body_json(json!({"error": {
                "message": format!("bad key {auth}; you gave {partial}")}}))
        })
        .mount(&server)
        .await;
    server
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_key_names_the_provider_and_its_variable_once_and_never_the_key() {
    let server = echoing(401).await;
    let project = canary_project();
    write_questions(&project, &["q1", "q2"]);
    for (command, provider, variable) in [
        (
            "subtopics",
            "stand",
            "OVERBRAINER_PROVIDERS__STAND__API_KEY",
        ),
        ("answers", "other", "OVERBRAINER_PROVIDERS__OTHER__API_KEY"),
        ("run", "stand", "OVERBRAINER_PROVIDERS__STAND__API_KEY"),
    ] {
        let output = run(&project, &server, &[command], &[]).await;
        assert_eq!(output.status.code(), Some(1), "{}", output_text(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&format!(
                "error: stopped: `providers.{provider}` refused the key (HTTP 401); check `{variable}`"
            )),
            "{command}: {stderr}"
        );
        assert_eq!(stderr.matches("HTTP 401").count(), 1, "{command}: {stderr}");
        assert!(!stderr.contains("bad key"), "{command}: {stderr}");
        assert_no_key(&project, &output);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn server_and_request_errors_echoing_the_key_show_only_their_status() {
    let project = canary_project();
    write_questions(&project, &["q1"]);
    for (status, command, expected) in [
        (
            500,
            "subtopics",
            "subtopics: rust failed: server error (HTTP 500)",
        ),
        (400, "answers", "request rejected (HTTP 400"),
        (
            403,
            "answers",
            "`providers.other` refused the key (HTTP 403)",
        ),
    ] {
        let server = echoing(status).await;
        let output = run(&project, &server, &[command], &[]).await;
        assert_eq!(output.status.code(), Some(1), "{}", output_text(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{status}: {stderr}");
        assert!(!stderr.contains("bad key"), "{status}: {stderr}");
        assert_no_key(&project, &output);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn at_debug_level_the_provider_reply_is_shown_redacted() {
    let server = echoing(401).await;
    let project = canary_project();
    let output = run(
        &project,
        &server,
        &["subtopics"],
        &[("OVERBRAINER_LOG", "debug")],
    )
    .await;
    assert_eq!(output.status.code(), Some(1), "{}", output_text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bad key Bearer [redacted]"), "{stderr}");
    assert!(stderr.contains("you gave [redacted]"), "{stderr}");
    assert_no_key(&project, &output);
}

#[tokio::test(flavor = "multi_thread")]
async fn replies_echoing_the_key_are_stored_redacted() {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(|request: &Request| {
            let auth = request
                .headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            openai_reply(
                &json!({"content": format!("The answer; you sent {auth}."),
                        "reasoning": format!("thinking about {auth}")}),
                "stop",
            )
        })
        .mount(&server)
        .await;
    let project = canary_project();
    write_questions(&project, &["q1"]);
    let output = run(&project, &server, &["answers"], &[]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    let answers = lines(&project, "data/answers.jsonl");
    let messages = answers[0]["messages"].as_array().unwrap();
    let reply = messages.last().unwrap();
    assert_eq!(reply["content"], "The answer; you sent Bearer [redacted].");
    assert_eq!(
        reply["reasoning_content"],
        "thinking about Bearer [redacted]"
    );
    assert_no_key(&project, &output);
}

/// Six questions of topic `rust` (and their two subtopics, so `questions` has no
/// subtopics to complete first), as the text on disk.
fn six_questions(project: &TestProject) -> String {
    project.write(
        "data/subtopics.jsonl",
        "{\"topic\":\"rust\",\"subtopic\":\"s\"}\n{\"topic\":\"rust\",\"subtopic\":\"t\"}\n",
    );
    let mut text = String::new();
    for (n, subtopic) in ["s", "s", "s", "t", "t", "t"].iter().enumerate() {
        text.push_str(
            &json!({"id": format!("old{n}"), "topic": "rust", "subtopic": subtopic,
                    "question": format!("old question {n}?")})
            .to_string(),
        );
        text.push('\n');
    }
    project.write("data/questions.jsonl", &text);
    text
}

#[tokio::test(flavor = "multi_thread")]
async fn force_loses_nothing_when_the_stage_cannot_start_or_stops_on_a_refused_key() {
    let project = canary_project();
    let before = six_questions(&project);

    // No base URL: refused before anything is discarded, naming the variable.
    let output = project
        .cmd()
        .args(["questions", "--force"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", output_text(&output));
    assert!(
        output_text(&output).contains("OVERBRAINER_PROVIDERS__STAND__BASE_URL"),
        "{}",
        output_text(&output)
    );
    assert_eq!(project.read("data/questions.jsonl"), before);

    // A `vault:` key that cannot be resolved (no `VAULT_ADDR`).
    let server = echoing(401).await;
    let output = run(
        &project,
        &server,
        &["questions", "--force"],
        &[(
            "OVERBRAINER_PROVIDERS__STAND__API_KEY",
            "vault:secret/llm#key",
        )],
    )
    .await;
    assert_eq!(output.status.code(), Some(1), "{}", output_text(&output));
    assert!(output_text(&output).contains("VAULT_ADDR"));
    assert_eq!(project.read("data/questions.jsonl"), before);

    // A 401 on the first request: the old lines are all still there, and the user is told.
    let output = run(&project, &server, &["questions", "--force"], &[]).await;
    assert_eq!(output.status.code(), Some(1), "{}", output_text(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("`--force` kept 6 old lines"),
        "{}",
        output_text(&output)
    );
    assert_eq!(project.read("data/questions.jsonl"), before);

    // The same for answers.
    project.write(
        "data/answers.jsonl",
        &format!(
            "{}\n",
            json!({"id": "old0", "topic": "rust", "subtopic": "s", "messages": [],
                   "meta": {"model": "m", "input_tokens": 1, "output_tokens": 1}})
        ),
    );
    let answers = project.read("data/answers.jsonl");
    let output = run(&project, &server, &["answers", "--force"], &[]).await;
    assert_eq!(output.status.code(), Some(1), "{}", output_text(&output));
    assert_eq!(project.read("data/answers.jsonl"), answers);
    assert_no_key(&project, &output);
}

#[tokio::test(flavor = "multi_thread")]
async fn force_replaces_the_old_lines_once_the_stage_ends_well() {
    let server = MockServer::start().await;
    mount_generator(&server, Duration::ZERO).await;
    let project = project(&config("openai", "parent-model", true, ""));
    six_questions(&project);
    let output = overbrainer(&project, &server, &["questions", "--force"]).await;
    assert!(output.status.success(), "{}", output_text(&output));
    assert!(
        stdout(&output).starts_with("questions: 2 done, 0 skipped, 0 failed, 6 added"),
        "{}",
        stdout(&output)
    );
    let questions = lines(&project, "data/questions.jsonl");
    assert_eq!(questions.len(), 6);
    assert!(
        questions
            .iter()
            .all(|q| !q["question"].as_str().unwrap().starts_with("old")),
        "{questions:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn force_with_a_failed_answer_keeps_its_old_answer_and_replaces_the_others() {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(|request: &Request| {
            if crate::pipeline::user_text(request) == "bad" {
                ResponseTemplate::new(400)
            } else {
                openai_reply(&json!({"content": "new", "reasoning": "R"}), "stop")
            }
        })
        .mount(&server)
        .await;
    let project = canary_project();
    write_questions(&project, &["good", "bad", "fine"]);
    let mut old = String::new();
    for id in ["good", "bad", "fine"] {
        old.push_str(
            &json!({"id": id, "topic": "rust", "subtopic": "s",
                    "messages": [{"role": "assistant", "content": "old"}],
                    "meta": {"model": "m", "input_tokens": 1, "output_tokens": 1}})
            .to_string(),
        );
        old.push('\n');
    }
    project.write("data/answers.jsonl", &old);
    let output = run(&project, &server, &["answers", "--force"], &[]).await;
    assert_eq!(output.status.code(), Some(1), "{}", output_text(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("`--force` kept 1 old lines"),
        "{}",
        output_text(&output)
    );
    let mut kept: Vec<(String, String)> = lines(&project, "data/answers.jsonl")
        .iter()
        .map(|a| {
            let content = a["messages"].as_array().unwrap().last().unwrap()["content"].clone();
            (
                a["id"].as_str().unwrap().to_owned(),
                content.as_str().unwrap().to_owned(),
            )
        })
        .collect();
    kept.sort();
    assert_eq!(
        kept,
        [("bad", "old"), ("fine", "new"), ("good", "new")]
            .map(|(id, text)| (id.to_owned(), text.to_owned()))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_topic_is_refused_before_anything_starts() {
    let project = canary_project();
    write_questions(&project, &["q1"]);
    for args in [
        &["subtopics", "--topic", "nosuch"][..],
        &["questions", "--topic", "nosuch", "--force"],
        &["answers", "--topic", "nosuch"],
        &["split", "--topic", "nosuch"],
    ] {
        // No base URL either: the topic is checked first.
        let output = project.cmd().args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{}", output_text(&output));
        assert_eq!(stdout(&output), "", "{args:?}: no summary line");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("`nosuch` is not a topic of this project; its topics are `rust`"),
            "{args:?}: {stderr}"
        );
        assert!(
            !project.path().join(".overbrainer/history.jsonl").exists(),
            "{args:?} wrote a history line"
        );
    }
    assert_eq!(lines(&project, "data/questions.jsonl").len(), 1);
}

#[test]
fn history_all_into_a_pipe_closed_after_the_first_line_ends_quietly() {
    let project = TestProject::init();
    project.cmd().arg("split").assert().success();
    let line = project.read(".overbrainer/history.jsonl");
    // Far more than a pipe buffer holds, so the command is still writing when it closes.
    project.write(".overbrainer/history.jsonl", &line.repeat(5_000));
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_overbrainer"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", project.home())
        .arg("-C")
        .arg(project.path())
        .args(["history", "--all"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    assert!(first.starts_with("split"), "{first}");
    drop(reader);
    let output = crate::util::wait_output(
        child,
        std::time::Duration::from_secs(120),
        "the command writing to a closed pipe",
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

// Issue 8: a JSONL file that starts with a UTF-8 byte-order mark (editors on Windows
// write one) lost its first record on read.
#[tokio::test(flavor = "multi_thread")]
async fn a_byte_order_mark_at_the_start_of_a_data_file_loses_no_record() {
    let server = MockServer::start().await;
    crate::pipeline::mount_parent(&server).await;
    let project = project(&config("openai", "parent-model", true, ""));
    write_questions(&project, &["q1", "q2", "q3"]);
    let answers = overbrainer(&project, &server, &["answers"]).await;
    assert!(answers.status.success(), "{}", output_text(&answers));
    for file in ["data/questions.jsonl", "data/answers.jsonl"] {
        let text = project.read(file);
        project.write(file, &format!("\u{feff}{text}"));
    }
    let output = overbrainer(&project, &server, &["split"]).await;
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        stdout(&output).contains("2 train, 1 eval, 0 excluded, 0 orphaned"),
        "{text}"
    );
    assert!(!text.contains("skipped line"), "{text}");
}

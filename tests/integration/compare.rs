//! `compare` end to end (issue 15): the demo's tiny model, trained once by real Axolotl
//! and exported once to `Q8_0` with the pinned llama.cpp b11434, served by the real
//! `llama-server` on the CPU of the run's target (local, and an SSH target served by a
//! real `sshd` on 127.0.0.1); the judge a stand-in provider on 127.0.0.1 (OpenAI-compatible,
//! and one Anthropic-protocol case) whose verdicts are scripted per question and which
//! counts its requests. Every number is checked against values computed here by hand.

#![allow(clippy::too_many_lines, reason = "each test walks one whole scenario")]

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use crate::export::llama_dir;
use crate::fixtures::copy_into;
use crate::sshd::Options;
use crate::training::{Setup, Training};
use crate::util::{TestProject, output_text, poll, signal};

/// The run every test compares: a copy of the shared run `crate::fixtures::local_run`, exported once per test
/// run (a shared fixture on disk: nextest runs each test in a process of its own).
struct Fixture {
    training: Training,
    run_id: String,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let (root, run_id) = crate::util::shared_fixture("compare-run", |root| {
            let (training, run_id) = copy_into(TestProject::at(root));
            let output = training
                .cmd()
                .args(["export", &run_id, "--quantize", "Q8_0"])
                .output()
                .unwrap();
            assert!(output.status.success(), "{}", output_text(&output));
            run_id
        });
        let training = Training::reopen(
            &root,
            crate::fixtures::local_run().training.extra_env.clone(),
        );
        Fixture { training, run_id }
    })
}

/// Copies the tree `from` to `to`, files hard-linked.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_tree(&entry.path(), &target);
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path()).unwrap(), &target).unwrap();
        } else if std::fs::hard_link(entry.path(), &target).is_err() {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What the stand-in judge answers for one question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Script {
    /// Prefers the child in either order.
    Child,
    /// Prefers the parent in either order.
    Parent,
    /// `tie`.
    Tie,
    /// Always `A`, whatever A is.
    AlwaysA,
    /// Always `B`, whatever B is.
    AlwaysB,
    /// A reply without the JSON object the first time it sees the question, then the
    /// child.
    GarbageOnceThenChild,
    /// Never a parseable reply.
    Garbage,
}

/// Which answer the prompt shows as A (the default `judge.txt` layout).
fn parent_is_a(prompt: &str, parent: &str) -> bool {
    let a = prompt
        .split("Answer A:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\nAnswer B:\n").next())
        .unwrap_or_else(|| panic!("no Answer A in {prompt}"));
    a.trim() == parent.trim()
}

#[derive(Default)]
struct Hold {
    /// Requests answered before the stand-in holds every further one.
    answer_first: Option<usize>,
    released: bool,
}

/// A stand-in judge provider on 127.0.0.1: `POST /chat/completions` (openai) or
/// `POST /messages` (anthropic), the key checked, verdicts scripted per question text.
struct Judge {
    url: String,
    scripts: Arc<Mutex<HashMap<String, (Script, String)>>>,
    requests: Arc<AtomicUsize>,
    controls: Arc<AtomicUsize>,
    hold: Arc<(Mutex<Hold>, Condvar)>,
}

impl Judge {
    fn start(anthropic: bool, key: &str, scripts: HashMap<String, (Script, String)>) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(AtomicUsize::new(0));
        let controls = Arc::new(AtomicUsize::new(0));
        let per_question = Arc::new(Mutex::new(HashMap::new()));
        let hold = Arc::new((Mutex::new(Hold::default()), Condvar::new()));
        let scripts = Arc::new(Mutex::new(scripts));
        let (all_requests, asked_times, holding, all_controls) = (
            requests.clone(),
            per_question,
            hold.clone(),
            controls.clone(),
        );
        let key = key.to_owned();
        let all_scripts = scripts.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (count, times, gate, script, secret, controls) = (
                    all_requests.clone(),
                    asked_times.clone(),
                    holding.clone(),
                    all_scripts.clone(),
                    key.clone(),
                    all_controls.clone(),
                );
                std::thread::spawn(move || {
                    serve(
                        stream, anthropic, &secret, &script, &count, &controls, &times, &gate,
                    );
                });
            }
        });
        Self {
            url,
            scripts,
            requests,
            controls,
            hold,
        }
    }

    /// Scripts one more question, with its parent's answer.
    fn learn(&self, question: &str, script: Script, parent: &str) {
        self.scripts
            .lock()
            .unwrap()
            .insert(question.to_owned(), (script, parent.to_owned()));
    }

    fn hold_after(&self, n: usize) {
        self.hold.0.lock().unwrap().answer_first = Some(n);
    }

    fn release(&self) {
        let (lock, wake) = &*self.hold;
        lock.lock().unwrap().released = true;
        wake.notify_all();
    }

    /// Requests about the child's questions.
    fn count(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// Requests about control pairs (issue 35).
    fn controls(&self) -> usize {
        self.controls.load(Ordering::SeqCst)
    }
}

#[allow(
    clippy::too_many_arguments,
    reason = "the stand-in's shared state, each needed"
)]
fn serve(
    mut stream: std::net::TcpStream,
    anthropic: bool,
    key: &str,
    scripts: &Mutex<HashMap<String, (Script, String)>>,
    count: &AtomicUsize,
    controls: &AtomicUsize,
    seen: &Mutex<HashMap<String, usize>>,
    hold: &(Mutex<Hold>, Condvar),
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut length = 0;
    let mut authorized = false;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).is_err() {
            return;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let Some((name, value)) = header.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse().unwrap();
        }
        if (name.eq_ignore_ascii_case("authorization") && value == format!("Bearer {key}"))
            || (name.eq_ignore_ascii_case("x-api-key") && value == key)
        {
            authorized = true;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let path_ok = line.starts_with(if anthropic {
        "POST /messages "
    } else {
        "POST /chat/completions "
    });
    let mut reply = |status: &str, text: String| {
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
            text.len()
        );
    };
    if !authorized || !path_ok {
        reply(
            "401 Unauthorized",
            r#"{"error":{"message":"no"}}"#.to_owned(),
        );
        return;
    }
    let scripts = &scripts.lock().unwrap().clone();
    let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let content = &request["messages"][0]["content"];
    let prompt = content
        .as_str()
        .map(str::to_owned)
        .or_else(|| content[0]["text"].as_str().map(str::to_owned))
        .unwrap();
    let question = prompt
        .split("Question:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\nAnswer A:\n").next())
        .unwrap()
        .to_owned();
    let reply_with = |stream: &mut std::net::TcpStream, text: &str| {
        let body = if anthropic {
            serde_json::json!({
                "id": "msg_1", "type": "message", "role": "assistant", "model": request["model"],
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}
            })
        } else {
            serde_json::json!({
                "id": "c1", "object": "chat.completion", "model": request["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5}
            })
        }
        .to_string();
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    };
    // Issue 35's control pairs: the parent's answer against another question's or
    // against its own first words. Every scripted judge but the position-biased one
    // prefers the parent there; they are counted apart from the child's questions.
    if let Some(parent_label) = control(&prompt, &question, scripts) {
        controls.fetch_add(1, Ordering::SeqCst);
        let verdict = match scripts.get(&question).map(|(script, _)| *script) {
            Some(Script::AlwaysA) => "A",
            Some(Script::AlwaysB) => "B",
            _ => parent_label,
        };
        reply_with(
            &mut stream,
            &format!(r#"{{"verdict": "{verdict}", "reason": "A control."}}"#),
        );
        return;
    }
    let number = count.fetch_add(1, Ordering::SeqCst) + 1;
    {
        let (lock, wake) = hold;
        let mut state = lock.lock().unwrap();
        while state.answer_first.is_some_and(|n| number > n) && !state.released {
            state = wake.wait(state).unwrap();
        }
    }
    let times = {
        let mut seen = seen.lock().unwrap();
        let n = seen.entry(question.clone()).or_insert(0);
        *n += 1;
        *n
    };
    let (script, parent) = scripts
        .get(&question)
        .cloned()
        .unwrap_or((Script::Tie, String::new()));
    let parent_a = parent_is_a(&prompt, &parent);
    let (child, parent_label) = if parent_a { ("B", "A") } else { ("A", "B") };
    let text = match script {
        Script::Child => format!(r#"{{"verdict": "{child}", "reason": "The child is better."}}"#),
        Script::Parent => {
            format!(r#"Sure. {{"verdict": "{parent_label}", "reason": "The parent is better."}}"#)
        }
        Script::Tie => r#"{"verdict": "tie", "reason": "Both are fine."}"#.to_owned(),
        Script::AlwaysA => r#"{"verdict": "A", "reason": "A comes first."}"#.to_owned(),
        Script::AlwaysB => r#"{"verdict": "B", "reason": "B comes last."}"#.to_owned(),
        Script::GarbageOnceThenChild if times == 1 => "I cannot decide.".to_owned(),
        Script::GarbageOnceThenChild => {
            format!(
                r#"```json
{{"verdict": "{child}", "reason": "Second look."}}
```"#
            )
        }
        Script::Garbage => "Both answers have merit.".to_owned(),
    };
    reply_with(&mut stream, &text);
}

/// The two answers of a judge prompt (the default `judge.txt` layout).
fn answers(prompt: &str) -> (String, String) {
    let rest = prompt.split("Answer A:\n").nth(1).unwrap();
    let (a, rest) = rest.split_once("\n\nAnswer B:\n").unwrap();
    let b = rest.split("\n\nWhich answer is better").next().unwrap();
    (a.trim().to_owned(), b.trim().to_owned())
}

/// The parent's label (`A` or `B`) when the prompt is a control pair of `question`:
/// its parent's answer against another question's parent answer or against its own
/// first words.
fn control(
    prompt: &str,
    question: &str,
    scripts: &HashMap<String, (Script, String)>,
) -> Option<&'static str> {
    let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let parent = words(&scripts.get(question)?.1);
    let (a, b) = answers(prompt);
    let (a, b) = (words(&a), words(&b));
    let (label, other) = if a == parent {
        ("A", b)
    } else if b == parent {
        ("B", a)
    } else {
        return None;
    };
    let another = scripts
        .values()
        .any(|(_, answer)| words(answer) == other && other != parent);
    let cut = other.len() < parent.len() && parent.starts_with(&other);
    (another || cut).then_some(label)
}

/// A long random token: the judge's key, searched for in every file and output.
fn canary() -> String {
    format!("sk-canary-{:032x}{:032x}", rand_u128(), rand_u128())
}

fn rand_u128() -> u128 {
    let mut bytes = [0_u8; 16];
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut bytes)
        .unwrap();
    u128::from_le_bytes(bytes)
}

/// One test's project: the fixture's run copied in (on the local target, or recorded as
/// trained on the SSH target, whose work directory does not hold its GGUF yet), the
/// judge provider and role set through the environment.
struct Case {
    training: Training,
    run_id: String,
    judge: Judge,
    key: String,
    eval: Vec<serde_json::Value>,
}

fn case(ssh: bool, anthropic: bool, scripts: &[Script], extra: &[(&str, &str)]) -> Case {
    let fixture = fixture();
    let setup = Setup {
        ssh: ssh.then(Options::default),
        ..Setup::default()
    };
    let mut training = Training::new(&setup);
    let run_id = fixture.run_id.clone();
    let run = training.runs().join(&run_id);
    copy_tree(&fixture.training.runs().join(&run_id), &run);
    let _ = std::fs::remove_dir_all(run.join("compares"));
    let record_path = run.join("run.json");
    let mut record = read_json(&record_path);
    if ssh {
        let workdir = training.project.home().join("remote-work");
        record["dir"] = workdir.join(&run_id).to_string_lossy().into_owned().into();
        record["target"] = "remote".into();
        record["target_kind"] = "ssh".into();
    } else {
        record["dir"] = run.to_string_lossy().into_owned().into();
    }
    // A new file, not the fixture's (the copy is hard-linked).
    std::fs::remove_file(&record_path).unwrap();
    std::fs::write(&record_path, serde_json::to_string_pretty(&record).unwrap()).unwrap();
    let eval = read_lines(&training.project.path().join("data/eval.jsonl"));
    let mut map = HashMap::new();
    for (record, script) in eval.iter().zip(scripts) {
        map.insert(
            record["messages"][0]["content"]
                .as_str()
                .unwrap()
                .to_owned(),
            (
                *script,
                record["messages"][1]["content"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            ),
        );
    }
    let key = canary();
    let judge = Judge::start(anthropic, &key, map);
    let config = training.project.path().join("overbrainer.toml");
    let mut toml = std::fs::read_to_string(&config).unwrap();
    let _ = write!(
        toml,
        "\n[providers.judge]\nprotocol = \"{}\"\n",
        if anthropic { "anthropic" } else { "openai" }
    );
    std::fs::write(&config, toml).unwrap();
    let llama = llama_dir().to_string_lossy().into_owned();
    let target = if ssh { "REMOTE" } else { "LOCAL" };
    training.extra_env.push((
        format!("OVERBRAINER_TARGETS__{target}__LLAMA_CPP_DIR"),
        llama,
    ));
    for (name, value) in [
        ("OVERBRAINER_TEST_SECOND_MS", "20"),
        ("OVERBRAINER_PROVIDERS__JUDGE__BASE_URL", judge.url.as_str()),
        ("OVERBRAINER_PROVIDERS__JUDGE__API_KEY", key.as_str()),
        ("OVERBRAINER_ROLES__JUDGE__PROVIDER", "judge"),
        ("OVERBRAINER_ROLES__JUDGE__MODEL", "judge-model"),
        ("OVERBRAINER_COMPARE__MAX_TOKENS", "12"),
        ("OVERBRAINER_PIPELINE__MAX_RETRIES", "0"),
    ]
    .into_iter()
    .chain(extra.iter().copied())
    {
        training.extra_env.push((name.to_owned(), value.to_owned()));
    }
    Case {
        training,
        run_id,
        judge,
        key,
        eval,
    }
}

impl Case {
    fn compare(&self, args: &[&str]) -> (std::process::Output, String) {
        let output = self
            .training
            .cmd()
            .arg("compare")
            .args(args)
            .output()
            .unwrap();
        let text = output_text(&output);
        assert!(
            !text.contains(&self.key),
            "the judge's key in the output:\n{text}"
        );
        (output, text)
    }

    /// The run's directory on the SSH target `remote`.
    fn remote_run(&self) -> PathBuf {
        self.training
            .project
            .home()
            .join("remote-work")
            .join(&self.run_id)
    }

    fn compares(&self) -> PathBuf {
        self.training.runs().join(&self.run_id).join("compares")
    }

    /// The report's directory named by stdout, checked to be exactly the path (CMP-3).
    fn dir_of(&self, output: &std::process::Output) -> PathBuf {
        let stdout = String::from_utf8_lossy(&output.stdout);
        let path = PathBuf::from(stdout.trim_end_matches('\n'));
        assert!(
            stdout.ends_with("compare.md\n") && stdout.lines().count() == 1,
            "{stdout}"
        );
        assert!(path.starts_with(self.compares()), "{}", path.display());
        path.parent().unwrap().to_path_buf()
    }

    /// No file of the compare directory holds the judge's key.
    fn assert_no_key(&self, dir: &Path) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                let bytes = std::fs::read(&path).unwrap();
                let text = String::from_utf8_lossy(&bytes);
                assert!(
                    !text.contains(&self.key),
                    "the judge's key in {}",
                    path.display()
                );
            }
        }
    }
}

/// A rate of `compare.json`: its count, denominator and interval to 3 decimals.
fn assert_rate(rate: &serde_json::Value, (count, of): (u64, u64), (low, high): (f64, f64)) {
    assert_eq!(
        (rate["count"].as_u64(), rate["of"].as_u64()),
        (Some(count), Some(of)),
        "{rate}"
    );
    assert!((rate["low"].as_f64().unwrap() - low).abs() < 1e-3, "{rate}");
    assert!(
        (rate["high"].as_f64().unwrap() - high).abs() < 1e-3,
        "{rate}"
    );
}

/// The verdicts files of the compare in `dir`.
fn verdict_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("verdicts-")
        })
        .collect();
    files.sort();
    files
}

/// Ctrl-C to a running `compare`: it exits 130 (what was done is kept); its stderr.
fn interrupt(child: &mut std::process::Child) -> String {
    assert!(signal(child.id(), "INT"));
    let status = crate::util::wait_status(child, Duration::from_secs(300), "compare after Ctrl-C");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    stderr
}

/// The stderr lines of a running command, read as they come.
struct Lines(Arc<Mutex<Vec<String>>>, Option<std::thread::JoinHandle<()>>);

impl Lines {
    fn read(child: &mut std::process::Child) -> Self {
        let stderr = child.stderr.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        Self(lines, Some(reader))
    }

    /// The URL the command logged for its metrics endpoint (MET-2).
    fn metrics_url(&self) -> String {
        poll(Duration::from_secs(120), "the metrics URL", || {
            let lines = self.0.lock().unwrap();
            lines
                .iter()
                .find_map(|l| l.split("metrics: serving ").nth(1))
                .map(|rest| rest.split_whitespace().next().unwrap_or("").to_owned())
                .ok_or_else(|| lines.join("\n"))
        })
    }

    /// Everything, once the command has exited.
    fn all(mut self) -> String {
        if let Some(reader) = self.1.take() {
            reader.join().unwrap();
        }
        self.0.lock().unwrap().join("\n")
    }
}

/// `GET` of a `http://127.0.0.1:PORT/metrics` URL: the body.
fn scrape(url: &str) -> String {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (address, path) = rest.split_once('/').expect("a path");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "GET /{path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    response
}

/// Nearest rank, as CMP-24 defines it.
fn nearest_rank(values: &[f64], p: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.max(1) - 1]
}

fn close(a: &serde_json::Value, b: f64) {
    let a = a.as_f64().unwrap_or_else(|| panic!("not a number: {a}"));
    assert!((a - b).abs() < 1e-9 * b.abs().max(1.0), "{a} != {b}");
}

// Issue 15, test 1: the counts, rates and intervals, the order mapping, an unparsed reply
// asked once more, a child error counted as a loss (never judged), cut answers, the
// percentiles and cost rows, and no key anywhere.
#[test]
fn a_local_compare_counts_scripted_verdicts_with_intervals_percentiles_and_costs() {
    use Script::{AlwaysA, Child, Garbage, GarbageOnceThenChild, Parent, Tie};
    let scripts = [
        Child,
        Parent,
        Child,
        Tie,
        AlwaysA,
        GarbageOnceThenChild,
        Garbage,
        Child,
    ];
    let case = case(
        false,
        false,
        &scripts,
        &[
            ("OVERBRAINER_COMPARE__PARENT_PRICE_IN", "3"),
            ("OVERBRAINER_COMPARE__PARENT_PRICE_OUT", "15"),
            ("OVERBRAINER_COMPARE__CHILD_PRICE_PER_HOUR", "0.72"),
            // Three tokens: the demo's answers are longer, so answers are cut (CMP-15).
            ("OVERBRAINER_COMPARE__MAX_TOKENS", "3"),
        ],
    );
    // Question 3 is longer than the server's context (the run's sequence_len, 256): the
    // child's request fails, a child error.
    let eval_path = case.training.project.path().join("data/eval.jsonl");
    let mut eval = case.eval.clone();
    let long = "Please think about this. ".repeat(400);
    eval[2]["messages"][0]["content"] = long.clone().into();
    // Its calibration control (issue 35) shows the judge this question.
    case.judge.learn(
        &long,
        Child,
        eval[2]["messages"][1]["content"].as_str().unwrap(),
    );
    let text: String = eval.iter().fold(String::new(), |mut out, r| {
        let _ = writeln!(out, "{r}");
        out
    });
    std::fs::write(&eval_path, text).unwrap();
    let (output, text) = case.compare(&["--limit", "8"]);
    assert!(output.status.success(), "{text}");
    let dir = case.dir_of(&output);
    // Judged: 6 questions in both orders, the child error never; the garbage-once
    // question asked once more in its first order; the garbage one twice per order.
    assert_eq!(case.judge.count(), 2 + 2 + 2 + 2 + 3 + 4 + 2, "{text}");
    let setup = read_json(&dir.join("setup.json"));
    assert_eq!(setup["questions"].as_array().unwrap().len(), 8);
    assert_eq!(setup["gguf"]["type"], "Q8_0");
    let answers = read_lines(&dir.join("child_answers.jsonl"));
    assert_eq!(answers.len(), 8);
    assert!(answers[2]["error"].is_string(), "{}", answers[2]);
    let verdicts = verdict_files(&dir);
    assert_eq!(verdicts.len(), 1);
    let lines = read_lines(&verdicts[0]);
    assert_eq!(lines.len(), 8);
    let by_id: HashMap<String, &serde_json::Value> = lines
        .iter()
        .map(|l| (l["id"].as_str().unwrap().to_owned(), l))
        .collect();
    let line = |i: usize| by_id[eval[i]["id"].as_str().unwrap()];
    let expected = [
        "win", "loss", "loss", "tie", "tie", "win", "unparsed", "win",
    ];
    for (i, result) in expected.iter().enumerate() {
        assert_eq!(line(i)["result"], *result, "question {i}: {}", line(i));
    }
    assert_eq!(line(2)["child_error"], true);
    assert!(line(2)["first"].is_null());
    assert_eq!(line(4)["flipped"], true);
    assert_eq!(line(5)["first"]["attempts"], 2);
    assert_eq!(line(6)["first"]["attempts"], 2);
    // The always-A question: its first verdict maps to a win exactly when the child was A.
    let first = &line(4)["first"];
    let child_a = first["order"] == "child_a";
    assert_eq!(first["result"], if child_a { "win" } else { "loss" });
    assert_eq!(
        line(4)["swapped"]["order"],
        if child_a { "parent_a" } else { "child_a" }
    );
    let report = read_json(&dir.join("compare.json"));
    let summary = &report["summary"];
    assert_eq!(
        summary["counts"],
        serde_json::json!({"wins": 3, "ties": 2, "losses": 2, "unparsed": 1})
    );
    assert_eq!(
        (
            summary["child_errors"].as_u64(),
            summary["questions"].as_u64()
        ),
        (Some(1), Some(8))
    );
    // Wilson 95% for 5 of 7 and 1 of 6, by hand with z = 1.959964.
    assert_rate(&summary["win_or_tie"], (5, 7), (0.358_9, 0.917_8));
    assert_rate(&summary["flips"], (1, 6), (0.030_0, 0.563_5));
    // Percentiles and speed over the successful answers, as the client recorded them.
    let ok: Vec<&serde_json::Value> = answers.iter().filter(|a| a["error"].is_null()).collect();
    assert_eq!(ok.len(), 7);
    let totals: Vec<f64> = ok
        .iter()
        .map(|a| a["total_secs"].as_f64().unwrap())
        .collect();
    let ttfts: Vec<f64> = ok
        .iter()
        .map(|a| a["ttft_secs"].as_f64().unwrap())
        .collect();
    close(&summary["latency_p50"], nearest_rank(&totals, 50.0));
    close(&summary["latency_p95"], nearest_rank(&totals, 95.0));
    close(&summary["ttft_p50"], nearest_rank(&ttfts, 50.0));
    let tokens: u64 = ok
        .iter()
        .map(|a| a["output_tokens"].as_u64().unwrap())
        .sum();
    let seconds: f64 = totals.iter().sum();
    assert!(tokens > 0);
    #[allow(clippy::cast_precision_loss)]
    close(&summary["tokens_per_second"], tokens as f64 / seconds);
    // A cut answer is one that reached the token limit, and at 3 tokens some must be.
    let cut = ok.iter().filter(|a| a["cut"] == true).count();
    assert!(cut >= 1, "no answer cut at 3 tokens: {answers:?}");
    for answer in &ok {
        if answer["cut"] == true {
            assert_eq!(answer["output_tokens"].as_u64(), Some(3), "{answer}");
        }
    }
    assert_eq!(summary["cut"].as_u64(), Some(cut as u64));
    // By topic, in first-seen order, counted here from the eval records' topics:
    // arithmetic (questions 0, 1, 2, 5, 6, 7) 3 wins, 2 losses, 1 unparsed; logic (3, 4)
    // 2 ties. The rows differ, as a child good on one topic and bad on another shows.
    let mut topics: Vec<(String, [u64; 4])> = Vec::new();
    for (record, result) in eval[..8].iter().zip(expected) {
        let topic = record["topic"].as_str().unwrap().to_owned();
        let slot = ["win", "tie", "loss", "unparsed"]
            .iter()
            .position(|r| *r == result)
            .unwrap();
        if let Some((_, counts)) = topics.iter_mut().find(|(t, _)| *t == topic) {
            counts[slot] += 1;
        } else {
            let mut counts = [0; 4];
            counts[slot] += 1;
            topics.push((topic, counts));
        }
    }
    assert_eq!(
        topics,
        [
            ("arithmetic".to_owned(), [3, 0, 2, 1]),
            ("logic".to_owned(), [0, 2, 0, 0])
        ]
    );
    let rows = summary["topics"].as_array().unwrap();
    assert_eq!(rows.len(), topics.len(), "{rows:?}");
    for (row, (topic, [wins, ties, losses, unparsed])) in rows.iter().zip(&topics) {
        assert_eq!(row["topic"], topic.as_str());
        assert_eq!(
            row["counts"],
            serde_json::json!({"wins": wins, "ties": ties, "losses": losses, "unparsed": unparsed})
        );
        assert_eq!(
            (
                row["win_or_tie"]["count"].as_u64(),
                row["win_or_tie"]["of"].as_u64()
            ),
            (Some(wins + ties), Some(wins + ties + losses)),
            "{row}"
        );
    }
    // Wilson 95% for 3 of 5 and 2 of 2, by hand with z = 1.959964.
    assert_rate(&rows[0]["win_or_tie"], (3, 5), (0.230_7, 0.882_4));
    assert_rate(&rows[1]["win_or_tie"], (2, 2), (0.342_4, 1.0));
    // Costs: the parent's means over the 8 questions' meta, the child's mean seconds.
    let selected = &eval[..8];
    #[allow(clippy::cast_precision_loss)]
    let mean = |key: &str| {
        selected
            .iter()
            .map(|r| r["meta"][key].as_u64().unwrap())
            .sum::<u64>() as f64
            / 8.0
    };
    let parent = 1000.0 * (mean("input_tokens") * 3.0 + mean("output_tokens") * 15.0) / 1e6;
    #[allow(clippy::cast_precision_loss)]
    let child = 1000.0 * (seconds / 7.0) * 0.72 / 3600.0;
    close(&summary["parent_cost_per_1000"], parent);
    close(&summary["child_cost_per_1000"], child);
    close(&summary["cost_ratio"], child / parent);
    let md = std::fs::read_to_string(dir.join("compare.md")).unwrap();
    for part in [
        format!("# Compare of run {}", case.run_id),
        "| Win-or-tie rate | 71.4% [35.9%, 91.8%] (5 of 7) |".to_owned(),
        "| Wins / ties / losses | 3 / 2 / 2 |".to_owned(),
        "| Unparsed verdicts (not counted) | 1 |".to_owned(),
        "| Child errors (counted as losses) | 1 |".to_owned(),
        format!("| Child answers cut at the token limit | {cut} |"),
        "(CPU build)".to_owned(),
        "| Judge | judge/judge-model |".to_owned(),
        "## Losses (first 2 of 2)".to_owned(),
        format!("### {}:", eval[2]["id"].as_str().unwrap()),
        "## Wins (first 3 of 3)".to_owned(),
        "The child ran on a CPU.".to_owned(),
        "Fewer than 100 questions (8).".to_owned(),
        "| arithmetic | 3 | 0 | 2 | 1 | 60.0% [23.1%, 88.2%] (3 of 5) |".to_owned(),
        "| logic | 0 | 2 | 0 | 0 | 100.0% [34.2%, 100.0%] (2 of 2) |".to_owned(),
        "too few to tell the child from the parent".to_owned(),
        "![Win, tie and loss by topic](topics.svg)".to_owned(),
        "![Latency of the child and the parent](latency.svg)".to_owned(),
    ] {
        assert!(md.contains(&part), "missing {part:?} in:\n{md}");
    }
    // Child errors come first among the losses.
    let losses = md.split("## Losses").nth(1).unwrap();
    assert!(
        losses.find(eval[2]["id"].as_str().unwrap()) < losses.find(eval[1]["id"].as_str().unwrap()),
        "{md}"
    );
    assert!(!md.contains("The judge is the parent"), "{md}");
    assert!(dir.join("topics.svg").is_file() && dir.join("latency.svg").is_file());
    for name in [
        "compare.sh",
        "compare_client.py",
        "questions.jsonl",
        "server.log",
        "hardware.json",
        "job.log",
        "run.json",
    ] {
        assert!(dir.join(name).is_file(), "missing {name}");
    }
    assert_eq!(read_json(&dir.join("run.json"))["state"], "succeeded");
    assert!(
        std::fs::read_to_string(dir.join("server.log"))
            .unwrap()
            .contains("127.0.0.1")
    );
    case.assert_no_key(&dir);
}

// Issue 15, test 1 (the Anthropic-protocol case): a judge that always answers "A" gives
// about half wins and half losses in the drawn order, and every verdict flips with the
// order (all 40 questions are judged both ways), so every question counts as a tie.
#[test]
fn a_judge_that_always_answers_a_flips_every_verdict_over_the_anthropic_protocol() {
    let case = case(false, true, &[Script::AlwaysA; 40], &[]);
    // Issue 35: its calibration fails (it prefers the parent's answer only when it
    // comes first), before the child is asked.
    let (output, text) = case.compare(&[]);
    // Its own exit status: nothing was judged, choose another judge.
    assert_eq!(output.status.code(), Some(3), "{text}");
    assert!(
        text.contains("the judge `judge/judge-model` preferred the parent's answer over a clearly worse one, in both orders, in only 0 of 4 control pairs"),
        "{text}"
    );
    // The demo's answers are too short to cut: each control is another's answer.
    let id = |i: usize| case.eval[i]["id"].as_str().unwrap().to_owned();
    let failed = (0..4)
        .map(|i| format!("`{}` against the answer to `{}`", id(i), id(i + 1)))
        .collect::<Vec<_>>()
        .join(", ");
    assert!(text.contains(&format!("failed: {failed}.")), "{text}");
    assert!(text.contains("--skip-calibration"), "{text}");
    assert_eq!(
        (case.judge.count(), case.judge.controls()),
        (0, 8),
        "{text}"
    );
    assert!(!case.compares().exists() || std::fs::read_dir(case.compares()).unwrap().count() == 0);
    let (output, text) = case.compare(&["--skip-calibration"]);
    assert!(output.status.success(), "{text}");
    let dir = case.dir_of(&output);
    assert_eq!(case.judge.count(), 80, "{text}");
    let report = read_json(&dir.join("compare.json"));
    let questions = report["questions"].as_array().unwrap();
    assert_eq!(questions.len(), 40);
    let child_first = questions.iter().filter(|q| q["order"] == "child_a").count();
    assert!(
        (10..=30).contains(&child_first),
        "{child_first} of 40 with the child as A"
    );
    assert!(
        questions
            .iter()
            .all(|q| q["verdict"] == "A" && q["swapped_verdict"] == "A" && q["flipped"] == true)
    );
    let summary = &report["summary"];
    assert_eq!(
        summary["counts"],
        serde_json::json!({"wins": 0, "ties": 40, "losses": 0, "unparsed": 0})
    );
    assert_eq!(
        (
            summary["flips"]["count"].as_u64(),
            summary["flips"]["of"].as_u64()
        ),
        (Some(40), Some(40))
    );
    let md = std::fs::read_to_string(dir.join("compare.md")).unwrap();
    assert!(
        md.contains("| Verdicts that flipped with the A/B order (counted as ties) | 100.0% ["),
        "{md}"
    );
    // Issue 35: such a judge cannot tell the child from the parent, and the report
    // says so before anything else; the gate refuses the compare.
    let run_line = format!("# Compare of run {}\n\n", case.run_id);
    let headline = "**Inconclusive.** The judge gave the same verdict in both A/B orders on 0.0% [0.0%, 8.8%] (0 of 40) of the questions judged both ways, below `[compare] min_judge_consistency` = 0.6: its verdicts cannot tell the child from the parent. Of the verdicts that flipped with the order, 40 preferred whichever answer came first and 0 whichever came second.\n\n**Uncalibrated.** The judge judge/judge-model was not checked on control pairs (`--skip-calibration`): nothing shows it prefers a clearly better answer, so the gate before `push` refuses this compare.\n\n- Judge consistency (both orders agree): 0.0% [0.0%, 8.8%] (0 of 40)\n- Child's win rate among the consistent verdicts: n/a (0 of 0)\n- Win-or-tie rate (flipped verdicts count as ties): 100.0% [91.2%, 100.0%] (40 of 40)\n";
    assert!(md.starts_with(&format!("{run_line}{headline}")), "{md}");
    assert_eq!(summary["judge"]["conclusive"], false);
    assert_eq!(summary["judge"]["flips_first"], 40);
    assert!(
        text.contains("compare: inconclusive: the judge agreed with itself"),
        "{text}"
    );
    let push = case
        .training
        .cmd()
        .args(["push", &case.run_id, "--dry-run", "--repo", "me/child"])
        .env("OVERBRAINER_COMPARE__MIN_WIN_OR_TIE", "0.5")
        .output()
        .unwrap();
    let pushed = output_text(&push);
    assert!(!push.status.success(), "{pushed}");
    assert!(
        pushed.contains(&format!(
            "the judge of its newest compare `{}` is uncalibrated",
            dir.file_name().unwrap().to_string_lossy()
        )),
        "{pushed}"
    );
    // The TUI's Compare view says the same, first (issue 35, in a real tmux).
    let (tmux, _) = crate::tui::start_tui(&case.training);
    tmux.wait_for("the Project view", "project.name");
    tmux.key("6");
    let screen = tmux.wait_for("the Compare view", "INCONCLUSIVE");
    assert!(screen.contains("UNCALIBRATED"), "{screen}");
    assert!(
        screen.contains("Consistency      0.0% [0.0%, 8.8%] (0 of 40)"),
        "{screen}"
    );
    drop(tmux);
    // The verdicts file's lines record the drawn order's raw result: wins exactly where
    // the child was A.
    let verdicts = verdict_files(&dir).pop().unwrap();
    let wins = read_lines(&verdicts)
        .iter()
        .filter(|l| l["first"]["result"] == "win")
        .count();
    assert_eq!(wins, child_first);
    case.assert_no_key(&dir);
}

// Issue 35: a judge that always answers "B" fails its calibration before the child is
// asked, and with `--skip-calibration` its compare is inconclusive, every flip on the
// second position; a judge consistent on half the questions (random verdicts, made
// deterministic) is inconclusive too; an honest judge's compare passes the gate exactly
// when the lower end of its win-or-tie interval reaches `min_win_or_tie`.
#[test]
fn judges_that_cannot_tell_are_stopped_and_an_honest_compare_passes_the_gate_by_its_lower_bound() {
    use Script::{AlwaysA, AlwaysB, Child, Parent};
    let summary = |case: &Case, args: &[&str]| {
        let (output, text) = case.compare(args);
        assert!(output.status.success(), "{text}");
        let dir = case.dir_of(&output);
        (
            read_json(&dir.join("compare.json"))["summary"].clone(),
            text,
        )
    };
    let always_b = case(false, false, &[AlwaysB; 6], &[]);
    let (output, text) = always_b.compare(&["--limit", "6"]);
    assert_eq!(output.status.code(), Some(3), "{text}");
    assert!(text.contains("in only 0 of 4 control pairs"), "{text}");
    assert_eq!(always_b.judge.count(), 0, "{text}");
    let (report, text) = summary(&always_b, &["--limit", "6", "--skip-calibration"]);
    assert_eq!(report["judge"]["conclusive"], false, "{text}");
    assert_eq!(
        (
            report["judge"]["flips_first"].as_u64(),
            report["judge"]["flips_second"].as_u64()
        ),
        (Some(0), Some(6)),
        "{report}"
    );
    // Consistent on every other question: its calibration fails on the biased ones
    // (2 of 4 is not most), and its verdicts agree across orders on half.
    let half = case(
        false,
        false,
        &[Parent, AlwaysA, Parent, AlwaysA, Parent, AlwaysA],
        &[],
    );
    let (output, text) = half.compare(&["--limit", "6"]);
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("in only 2 of 4 control pairs"), "{text}");
    let (report, text) = summary(&half, &["--limit", "6", "--skip-calibration"]);
    assert_eq!(
        (
            report["judge"]["consistency"]["count"].as_u64(),
            report["judge"]["consistency"]["of"].as_u64()
        ),
        (Some(3), Some(6)),
        "{text}"
    );
    assert_eq!(report["judge"]["conclusive"], false, "{text}");
    // An honest judge that prefers the child on all six: 100% [61.0%, 100.0%].
    let honest = case(false, false, &[Child; 6], &[]);
    let (report, text) = summary(&honest, &["--limit", "6"]);
    assert_eq!(report["judge"]["conclusive"], true, "{text}");
    assert!(text.contains("in 4 of 4 control pairs"), "{text}");
    let push = |min: &str| {
        honest
            .training
            .cmd()
            .args(["push", &honest.run_id, "--dry-run", "--repo", "me/child"])
            .env("OVERBRAINER_COMPARE__MIN_WIN_OR_TIE", min)
            .output()
            .unwrap()
    };
    let passed = push("0.6");
    assert!(passed.status.success(), "{}", output_text(&passed));
    let refused = push("0.62");
    let text = output_text(&refused);
    assert!(!refused.status.success(), "{text}");
    assert!(
        text.contains("has a win-or-tie rate of 100.0% whose 95% interval starts at 61.0%, below `[compare] min_win_or_tie` = 0.62"),
        "{text}"
    );
}

// Issue 15, tests 3 and 4: Ctrl-C while judging keeps the verdicts; `--rejudge` with the
// same judge asks only for the missing ones; another judge model starts a new verdicts
// file; the gate refuses `push` below `min_win_or_tie` and `--no-gate` passes.
#[test]
fn ctrl_c_while_judging_keeps_the_verdicts_and_rejudge_asks_only_for_the_missing_ones() {
    let case = case(
        false,
        false,
        &[Script::Parent; 6],
        &[
            ("OVERBRAINER_PIPELINE__CONCURRENCY", "1"),
            ("OVERBRAINER_METRICS__LISTEN", "127.0.0.1:0"),
        ],
    );
    // Three questions judged (two requests each), then the judge holds every request.
    case.judge.hold_after(6);
    let mut child = case.training.spawn(&["compare", "--limit", "6"]);
    let stderr = Lines::read(&mut child);
    let verdicts = poll(Duration::from_secs(300), "three verdicts", || {
        let found = std::fs::read_dir(case.compares()).ok().and_then(|entries| {
            entries
                .flatten()
                .find_map(|e| verdict_files(&e.path()).pop())
        });
        match found {
            Some(path) if read_lines(&path).len() == 3 && case.judge.count() == 7 => Ok(path),
            other => Err(other),
        }
    });
    // MET-9: the six answered judge requests and the eight of the calibration (issue 35)
    // count under stage `compare` with the judge's model, 10 prompt and 5 output tokens
    // each as the stand-in reports; the held one not yet.
    assert_eq!(case.judge.controls(), 8);
    let url = stderr.metrics_url();
    let text = scrape(&url);
    for (direction, tokens) in [("in", 140), ("out", 70)] {
        let line = format!(
            "overbrainer_tokens_total{{stage=\"compare\",model=\"judge-model\",direction=\"{direction}\"}} {tokens}\n"
        );
        assert!(text.contains(&line), "{line} not in:\n{text}");
    }
    assert!(signal(child.id(), "INT"));
    let status =
        crate::util::wait_status(&mut child, Duration::from_secs(300), "compare after Ctrl-C");
    let stderr = stderr.all();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("3 of 6 questions have a verdict"),
        "{stderr}"
    );
    assert!(stderr.contains("--rejudge compare_"), "{stderr}");
    assert!(!stderr.contains(&case.key), "{stderr}");
    assert_eq!(read_lines(&verdicts).len(), 3);
    let dir = verdicts.parent().unwrap().to_path_buf();
    assert!(!dir.join("compare.md").exists());
    let compare_id = dir.file_name().unwrap().to_string_lossy().into_owned();
    case.judge.release();
    let before = case.judge.count();
    let (output, text) = case.compare(&["--rejudge", &compare_id]);
    assert!(output.status.success(), "{text}");
    assert_eq!(case.dir_of(&output), dir);
    assert_eq!(
        case.judge.count() - before,
        6,
        "only the 3 missing questions, both orders: {text}"
    );
    assert_eq!(read_lines(&verdicts).len(), 6);
    let report = read_json(&dir.join("compare.json"));
    assert_eq!(report["summary"]["counts"]["losses"], 6);
    // Issue 35: a judge that prefers the parent is calibrated and consistent; the
    // report's first lines say what it can tell.
    let md = std::fs::read_to_string(dir.join("compare.md")).unwrap();
    let headline = format!(
        "# Compare of run {}\n\n- Judge calibration: preferred the parent's answer over a clearly worse one, in both orders, in 4 of 4 control pairs\n- Judge consistency (both orders agree): 100.0% [61.0%, 100.0%] (6 of 6)\n- Child's win rate among the consistent verdicts: 0.0% [0.0%, 39.0%] (0 of 6)\n- Win-or-tie rate (flipped verdicts count as ties): 0.0% [0.0%, 39.0%] (0 of 6)\n",
        case.run_id
    );
    assert!(md.starts_with(&headline), "{md}");
    assert_eq!(report["header"]["calibrated"], true);
    // Another judge model: a new verdicts file, every question judged again.
    let before = case.judge.count();
    let output = case
        .training
        .cmd()
        .args(["compare", "--rejudge", &compare_id])
        .env("OVERBRAINER_ROLES__JUDGE__MODEL", "another-judge")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", output_text(&output));
    assert_eq!(case.judge.count() - before, 12);
    let files = verdict_files(&dir);
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files.iter().all(|f| read_lines(f).len() == 6));
    assert_eq!(
        read_json(&dir.join("compare.json"))["header"]["judge"],
        "judge/another-judge"
    );
    case.assert_no_key(&dir);
    // The gate: the newest compare's win-or-tie rate is 0%.
    let push = |extra: &[&str]| {
        case.training
            .cmd()
            .args(["push", &case.run_id, "--dry-run", "--repo", "me/child"])
            .args(extra)
            .env("OVERBRAINER_COMPARE__MIN_WIN_OR_TIE", "0.5")
            .output()
            .unwrap()
    };
    let refused = push(&[]);
    let text = output_text(&refused);
    assert!(!refused.status.success(), "{text}");
    assert!(
        text.contains(&format!("newest compare `{compare_id}` has a win-or-tie rate of 0.0% whose 95% interval starts at 0.0%, below `[compare] min_win_or_tie` = 0.5")),
        "{text}"
    );
    let passed = push(&["--no-gate"]);
    assert!(passed.status.success(), "{}", output_text(&passed));
}

// Issue 15, test 2: the same compare on the SSH target; the GGUF is sent once, and a
// second compare finds it there with the right digest and sends nothing.
#[test]
fn a_compare_on_the_ssh_target_sends_the_gguf_once() {
    let case = case(true, false, &[Script::Child; 3], &[]);
    let (output, text) = case.compare(&["--limit", "3"]);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("on target remote"), "{text}");
    assert!(text.contains("compare: sent output/gguf/"), "{text}");
    let dir = case.dir_of(&output);
    let report = read_json(&dir.join("compare.json"));
    assert_eq!(
        report["summary"]["counts"],
        serde_json::json!({"wins": 3, "ties": 0, "losses": 0, "unparsed": 0})
    );
    let remote = case.remote_run();
    let gguf = read_json(&dir.join("setup.json"))["gguf"]["file"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(remote.join(&gguf).is_file());
    assert!(
        remote
            .join("compares")
            .join(dir.file_name().unwrap())
            .join("child_answers.jsonl")
            .is_file()
    );
    assert_eq!(read_lines(&dir.join("child_answers.jsonl")).len(), 3);
    let (output, text) = case.compare(&["--limit", "2"]);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("is on the target with the right digest, not sent"),
        "{text}"
    );
    assert!(!text.contains("compare: sent "), "{text}");
    case.assert_no_key(&case.dir_of(&output));
}

/// Issue 34: a run trained on a pod, whose pod is gone, compares on the project's one
/// local target, or on the target `--target` names, which never held the run; a
/// Runpod target is refused by name.
#[test]
fn a_pod_run_compares_on_the_local_target_or_on_the_one_named() {
    let mut case = case(true, false, &[Script::Child; 2], &[]);
    crate::pod_side_jobs::make_pod_run(&case.training, &case.run_id);
    case.training.extra_env.push((
        "OVERBRAINER_TARGETS__LOCAL__LLAMA_CPP_DIR".to_owned(),
        llama_dir().to_string_lossy().into_owned(),
    ));
    let (output, text) = case.compare(&["--limit", "2", "--target", "gpu"]);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains("`compare` does not run on the Runpod target `gpu`"),
        "{text}"
    );
    assert!(!case.compares().exists(), "{text}");
    // Refused before the judge's calibration: no paid request for a bad target.
    assert_eq!(
        (case.judge.controls(), case.judge.count()),
        (0, 0),
        "{text}"
    );
    for (args, target) in [
        (&["--limit", "2"][..], "local"),
        (&["--limit", "2", "--target", "remote"][..], "remote"),
    ] {
        let (output, text) = case.compare(args);
        assert!(output.status.success(), "{text}");
        assert!(text.contains(&format!("on target {target}")), "{text}");
        let dir = case.dir_of(&output);
        let report = read_json(&dir.join("compare.json"));
        assert_eq!(
            report["summary"]["counts"],
            serde_json::json!({"wins": 2, "ties": 0, "losses": 0, "unparsed": 0}),
            "{text}"
        );
        assert_eq!(read_json(&dir.join("setup.json"))["target"], target);
        case.assert_no_key(&dir);
    }
    let remote = case.remote_run();
    assert!(
        remote.join("output/gguf").is_dir(),
        "the GGUF was sent to `remote`"
    );
}

// CMP-12: Ctrl-C while the child answers cancels the compare job (its llama-server with
// it); the compare's `run.json` says `cancelled` and nothing is judged.
#[test]
fn ctrl_c_while_the_child_answers_cancels_the_job_and_its_server() {
    let case = case(
        false,
        false,
        &[Script::Child; 40],
        &[("OVERBRAINER_COMPARE__MAX_TOKENS", "2048")],
    );
    let mut child = case.training.spawn(&["compare"]);
    let dir = poll(Duration::from_secs(300), "the first answer", || {
        let dir = std::fs::read_dir(case.compares())
            .ok()
            .and_then(|mut entries| entries.next())
            .map(|e| e.unwrap().path());
        match dir {
            Some(dir) if !read_lines(&dir.join("child_answers.jsonl")).is_empty() => Ok(dir),
            other => Err(other),
        }
    });
    let stderr = interrupt(&mut child);
    assert!(
        stderr.contains("cancelled while the child answered"),
        "{stderr}"
    );
    assert_eq!(read_json(&dir.join("run.json"))["state"], "cancelled");
    assert!(read_lines(&dir.join("child_answers.jsonl")).len() < 40);
    assert_eq!(case.judge.count(), 0);
    assert!(!dir.join("compare.md").exists());
    // No llama-server of this compare is left: none has the GGUF's path on its command line.
    let gguf = case.training.runs().join(&case.run_id).join("output/gguf");
    let left = std::process::Command::new("pgrep")
        .args(["-f", &gguf.to_string_lossy()])
        .output()
        .expect("pgrep (apt-get install procps)");
    assert!(
        left.stdout.is_empty(),
        "left running: {}",
        String::from_utf8_lossy(&left.stdout)
    );
}

// Issue 20: under `budget.max_usd` a judge whose provider lists no price is refused
// before the child is asked and before any judge request; with `allow_unpriced` the
// judge's requests go to the ledger, as stage `compare`, their cost unknown.
#[test]
fn an_unpriced_judge_under_a_cap_is_refused_before_the_child_and_allowed_goes_to_the_ledger() {
    let case = case(
        false,
        false,
        &[Script::Child; 2],
        &[("OVERBRAINER_BUDGET__MAX_USD", "5")],
    );
    let (output, text) = case.compare(&["--limit", "2"]);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains("`judge` lists no price for `judge-model`"),
        "{text}"
    );
    assert_eq!(case.judge.count(), 0);
    assert!(!case.compares().exists() || std::fs::read_dir(case.compares()).unwrap().count() == 0);
    let output = case
        .training
        .cmd()
        .args(["compare", "--limit", "2"])
        .env("OVERBRAINER_BUDGET__ALLOW_UNPRICED", "true")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", output_text(&output));
    let ledger = read_lines(
        &case
            .training
            .project
            .path()
            .join(".overbrainer/ledger.jsonl"),
    );
    let judged: Vec<_> = ledger.iter().filter(|l| l["stage"] == "compare").collect();
    // The calibration's requests too (issue 35).
    assert!(case.judge.controls() > 0);
    assert_eq!(
        judged.len(),
        case.judge.count() + case.judge.controls(),
        "{ledger:?}"
    );
    assert!(
        judged
            .iter()
            .all(|l| l["cost_usd"].is_null() && l["model"] == "judge-model")
    );
}

//! `overbrainer tui` as a person would drive it (issue 17): the real binary in a real
//! `tmux` (`new-session -d -x 120 -y 40`) on a training project made of the demo's data,
//! keys sent with `send-keys`, the screen read with `capture-pane -p`. One real Axolotl
//! training (CPU, tiny model) for the module, as the training tests run it.

use std::process::Command;

use crate::training::{DEADLINE, Setup, Training};
use crate::util::{TestProject, output_text, output_within, poll};

/// How long one `tmux` client command may take.
const TMUX_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

const INSTALL: &str =
    "sudo apt-get install -y tmux (or `make test`, which runs scripts/test-deps.sh)";

/// A tmux server of its own (`-L`), killed with everything in it on drop.
pub(crate) struct Tmux {
    socket: String,
}

impl Tmux {
    /// A detached 120x40 session running `sh` with prompt `prompt` and only `env`.
    fn start(env: &[(String, String)], prompt: &str) -> Self {
        let found = Command::new("tmux").arg("-V").output();
        assert!(
            found.is_ok_and(|o| o.status.success()),
            "`tmux` is missing: {INSTALL}"
        );
        let socket = format!("ob-tui-{}", random_token());
        let tmux = Self { socket };
        let mut args = vec![
            "new-session".to_owned(),
            "-d".to_owned(),
            "-x".to_owned(),
            "120".to_owned(),
            "-y".to_owned(),
            "40".to_owned(),
            "-s".to_owned(),
            "tui".to_owned(),
            "env".to_owned(),
            "-i".to_owned(),
            format!("PS1={prompt}"),
            "TERM=screen".to_owned(),
        ];
        args.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
        args.extend(["sh".to_owned()]);
        let output = output_within(tmux.command().args(&args), TMUX_DEADLINE).unwrap();
        assert!(output.status.success(), "{}", output_text(&output));
        tmux
    }

    fn command(&self) -> Command {
        let mut command = Command::new("tmux");
        command.args(["-L", &self.socket]);
        command
    }

    /// Types `text` literally.
    fn type_text(&self, text: &str) {
        let output = output_within(
            self.command().args(["send-keys", "-t", "tui", "-l", text]),
            TMUX_DEADLINE,
        )
        .unwrap();
        assert!(output.status.success(), "{}", output_text(&output));
    }

    /// Sends one key by its tmux name (`Enter`, `q`, `y`).
    pub(crate) fn key(&self, key: &str) {
        let output = output_within(
            self.command().args(["send-keys", "-t", "tui", key]),
            TMUX_DEADLINE,
        )
        .unwrap();
        assert!(output.status.success(), "{}", output_text(&output));
    }

    fn screen(&self) -> String {
        let output = output_within(
            self.command().args(["capture-pane", "-p", "-t", "tui"]),
            TMUX_DEADLINE,
        )
        .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Waits until the screen satisfies `check`, giving its value.
    fn wait<T>(&self, what: &str, mut check: impl FnMut(&str) -> Option<T>) -> T {
        poll(DEADLINE, what, || {
            let screen = self.screen();
            check(&screen).ok_or(screen)
        })
    }

    pub(crate) fn wait_for(&self, what: &str, text: &str) -> String {
        self.wait(what, |s| s.contains(text).then(|| s.to_owned()))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command().arg("kill-server").status();
    }
}

fn random_token() -> String {
    use std::fmt::Write as _;
    let mut bytes = [0u8; 12];
    getrandom(&mut bytes);
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn getrandom(bytes: &mut [u8]) {
    use std::io::Read as _;
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(bytes)
        .unwrap();
}

/// The step the detail line shows (`step N/M`).
fn step_of(screen: &str) -> Option<u64> {
    let at = screen.find("step ")?;
    let rest = &screen[at + 5..];
    rest[..rest.find('/')?].parse().ok()
}

fn row_state<'a>(screen: &'a str, id: &str) -> Option<&'a str> {
    let line = screen
        .lines()
        .find(|l| l.contains(id) && l.starts_with('│'))?;
    let after = &line[line.find(id)? + id.len()..];
    after.split_whitespace().next()
}

/// The TUI on `training`'s project in a fresh tmux session, its shell prompt a canary.
pub(crate) fn start_tui(training: &Training) -> (Tmux, String) {
    start_tui_with(training, Vec::new())
}

/// [`start_tui`] with `extra` variables in the shell's environment.
fn start_tui_with(training: &Training, extra: Vec<(String, String)>) -> (Tmux, String) {
    start_tui_in(&training.project, extra)
}

/// The TUI on `project` in a fresh tmux session whose shell has `PATH`, the project's
/// `HOME`, no GPU, the Hub offline, and `extra`; its shell prompt a canary.
fn start_tui_in(project: &TestProject, extra: Vec<(String, String)>) -> (Tmux, String) {
    let prompt = format!("obprompt-{}$ ", random_token());
    let mut env = vec![
        ("PATH".to_owned(), std::env::var("PATH").unwrap_or_default()),
        (
            "HOME".to_owned(),
            project.home().to_string_lossy().into_owned(),
        ),
        ("CUDA_VISIBLE_DEVICES".to_owned(), String::new()),
        ("HF_HUB_OFFLINE".to_owned(), "1".to_owned()),
    ];
    env.extend(extra);
    let tmux = Tmux::start(&env, &prompt);
    tmux.wait_for("the shell prompt", prompt.trim_end());
    launch(&tmux, project);
    (tmux, prompt)
}

/// Types the command line that starts the TUI on `project` at the prompt.
fn launch(tmux: &Tmux, project: &TestProject) {
    tmux.type_text(&format!(
        "'{}' -C '{}' tui",
        env!("CARGO_BIN_EXE_overbrainer"),
        project.path().display()
    ));
    tmux.key("Enter");
}

/// Whether the TUI is gone and the shell shows its prompt for the `nth` time (the first
/// is the one the TUI was started from).
fn back_at_the_prompt(screen: &str, prompt: &str, nth: usize) -> Option<()> {
    (!screen.contains("1 Project") && screen.matches(prompt.trim_end()).count() >= nth)
        .then_some(())
}

// TUI-1: without a terminal on stdout the TUI refuses, before anything else.
#[test]
fn the_tui_refuses_to_start_without_a_terminal() {
    let training = Training::new(&Setup::default());
    let output = training.cmd().arg("tui").output().unwrap();
    assert!(!output.status.success());
    assert!(
        output_text(&output).contains("`overbrainer tui` needs a terminal on stdout"),
        "{}",
        output_text(&output)
    );
}

// Ctrl-Z hands the terminal back to the shell (restored) and `fg` brings the TUI back;
// `q` then quits to the prompt.
#[test]
fn ctrl_z_suspends_the_tui_and_fg_resumes_it() {
    let training = Training::new(&Setup::default());
    let (tmux, prompt) = start_tui(&training);
    tmux.wait_for("the Project view", "training.base_model");
    tmux.key("C-z");
    tmux.wait("the shell after Ctrl-Z", |s| {
        back_at_the_prompt(s, &prompt, 2)
    });
    tmux.type_text("fg");
    tmux.key("Enter");
    tmux.wait_for("the Project view after fg", "training.base_model");
    tmux.key("q");
    tmux.wait("the shell prompt after quitting", |s| {
        back_at_the_prompt(s, &prompt, 3)
    });
}

// TUI-10, TUI-13, TUI-14, TUI-16, TUI-17, TUI-20: the Project view edits
// `overbrainer.toml` as a person would: an invalid value is refused in the form and
// nothing is written; a valid one is written with every comment and untouched byte kept;
// `u` writes the file back; a change made on disk shows within the 2 s re-read.
#[test]
fn the_project_view_edits_the_file_keeping_comments_undoes_and_reads_changes_on_disk() {
    let training = Training::new(&Setup::default());
    let original = training.project.read("overbrainer.toml");
    assert!(original.contains("# A data set"), "a comment to keep");
    let (tmux, prompt) = start_tui(&training);
    tmux.wait_for("the Project view", "training.base_model");
    tmux.key("Enter");
    tmux.wait_for("the form on project.name", "accepts text");
    tmux.key("C-u");
    tmux.key("Enter");
    tmux.wait_for("the refusal in the form", "not saved: `project.name`");
    assert_eq!(training.project.read("overbrainer.toml"), original);
    tmux.type_text("renamed q1");
    tmux.key("Enter");
    tmux.wait_for("the save", "saved `project.name` = \"renamed q1\"");
    assert_eq!(
        training.project.read("overbrainer.toml"),
        original.replace("name = \"tiny test\"", "name = \"renamed q1\"")
    );
    tmux.key("u");
    tmux.wait_for("the undo", "undone: project.name");
    assert_eq!(training.project.read("overbrainer.toml"), original);
    training.project.write(
        "overbrainer.toml",
        &original.replace("\"tiny test\"", "\"from disk\""),
    );
    tmux.wait_for("the change on disk", "project.name = \"from disk\"");
    // TUI-11: `a` adds a Runpod target as one table that validates as added.
    let before_add = training.project.read("overbrainer.toml");
    tmux.key("a");
    tmux.wait_for("the add flow", "add: what?");
    tmux.key("j");
    tmux.key("j");
    tmux.key("Enter");
    tmux.type_text("cloud_gpu");
    tmux.key("Enter");
    tmux.wait_for("the kinds", "add target `cloud_gpu`: kind");
    for _ in 0..3 {
        tmux.key("j");
    }
    tmux.key("Enter");
    tmux.wait_for("the new target", "added `targets.cloud_gpu`");
    assert_eq!(
        training.project.read("overbrainer.toml"),
        format!(
            "{before_add}\n[targets.cloud_gpu]\nkind = \"runpod\"\ngpu_types = \"auto\"\nmax_hours = 4\n"
        )
    );
    tmux.key("u");
    tmux.wait_for("the add undone", "undone: targets.cloud_gpu");
    assert_eq!(training.project.read("overbrainer.toml"), before_add);
    tmux.key("q");
    tmux.wait("the shell prompt after quitting", |s| {
        back_at_the_prompt(s, &prompt, 2)
    });
}

// TUI-18: `E` hands the file to `$EDITOR`, which gets every key (the TUI stops reading
// them), then the TUI takes the terminal back and shows what the editor wrote; an
// invalid result is kept on disk, named, and the configuration shown stays in use.
#[test]
fn e_hands_the_file_to_the_editor_which_gets_every_key() {
    let training = Training::new(&Setup::default());
    let original = training.project.read("overbrainer.toml");
    let editor = training.project.path().join("editor.sh");
    // A line typed into the editor replaces the name; an empty one breaks the file. Each
    // run says its number, so a wait never sees the last run's line.
    std::fs::write(
        &editor,
        r#"#!/bin/sh
n=$(cat "$0.runs" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > "$0.runs"
# The third run ignores SIGTERM: the TUI must SIGKILL it (TUI-68).
if [ "$n" = 3 ]; then trap '' TERM; fi
printf 'editor-ready %s\n' "$n"
read line
if [ -n "$line" ]; then sed -i "s/\"tiny test\"/$line/" "$1"; else printf '[broken\n' >> "$1"; fi
"#,
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let extra = vec![
        ("EDITOR".to_owned(), editor.to_string_lossy().into_owned()),
        ("VISUAL".to_owned(), String::new()),
    ];
    let (tmux, prompt) = start_tui_with(&training, extra);
    tmux.wait_for("the Project view", "training.base_model");
    tmux.key("E");
    tmux.wait_for("the editor", "editor-ready 1");
    // TUI-68: a SIGINT while the editor owns the terminal is ignored (the TUI goes on
    // below, after the editor).
    let tui = tui_pid(training.project.path());
    signal(&tui, "INT");
    tmux.type_text("\"typed in the editor\"");
    tmux.key("Enter");
    tmux.wait_for("the edited value", "project.name = \"typed in the editor\"");
    assert_eq!(
        training.project.read("overbrainer.toml"),
        original.replace("\"tiny test\"", "\"typed in the editor\"")
    );
    // An edit that leaves the file invalid: named, kept on disk, the shown one in use.
    tmux.key("E");
    tmux.wait_for("the editor again", "editor-ready 2");
    tmux.key("Enter");
    tmux.wait_for("the invalid file", "is not valid");
    tmux.wait_for(
        "the value still shown",
        "project.name = \"typed in the editor\"",
    );
    assert!(
        training
            .project
            .read("overbrainer.toml")
            .ends_with("[broken\n"),
        "the file is as the editor left it"
    );
    // TUI-68: a SIGTERM while the editor runs ends the editor (SIGTERM, then SIGKILL 2 s
    // later: this one ignores SIGTERM) and quits like a confirmed `q`.
    tmux.key("E");
    tmux.wait_for("the editor a third time", "editor-ready 3");
    signal(&tui, "TERM");
    tmux.wait("the shell prompt after SIGTERM", |s| {
        back_at_the_prompt(s, &prompt, 2)
    });
    // The editor's command line (the tmux server's holds the script's path too).
    let script = format!(
        "{} {}",
        editor.display(),
        training.project.path().join("overbrainer.toml").display()
    );
    poll(TMUX_DEADLINE, "the editor to be gone", || {
        let found = Command::new("pgrep")
            .args(["-f", "--", &script])
            .output()
            .expect("pgrep (procps) is missing: sudo apt-get install -y procps");
        if found.stdout.is_empty() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&found.stdout).into_owned())
        }
    });
    // A SIGTERM from outside, no editor running: quits like a confirmed `q`, the
    // terminal restored.
    training.project.write("overbrainer.toml", &original);
    launch(&tmux, &training.project);
    tmux.wait_for("the Project view again", "training.base_model");
    let tui = tui_pid(training.project.path());
    signal(&tui, "TERM");
    tmux.wait("the shell prompt after the second SIGTERM", |s| {
        back_at_the_prompt(s, &prompt, 3)
    });
}

/// The process ID of the TUI started on `project`.
fn tui_pid(project: &std::path::Path) -> String {
    let pattern = format!("-C {} tui", project.display());
    poll(TMUX_DEADLINE, "the TUI's process", || {
        let output = Command::new("pgrep")
            .args(["-f", "--", &pattern])
            .output()
            .expect("pgrep (procps) is missing: sudo apt-get install -y procps");
        let pids: Vec<String> = String::from_utf8_lossy(&output.stdout)
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        match pids.as_slice() {
            [pid] => Ok(pid.clone()),
            _ => Err(pids),
        }
    })
}

/// Sends `SIG<name>` to process `pid`.
fn signal(pid: &str, name: &str) {
    let status = Command::new("kill")
        .args(["-s", name, "--", pid])
        .status()
        .unwrap();
    assert!(status.success(), "kill -s {name} -- {pid}");
}

// TUI-5, TUI-6, TUI-36: the `r` menu's `run` builds the dataset against stand-in
// providers as `overbrainer run` does (stopping after `split`), with its summary lines on
// the Pipeline view and the key never on the screen.
#[tokio::test(flavor = "multi_thread")]
async fn the_r_menu_runs_the_dataset_stages_against_stand_in_providers() {
    use crate::pipeline::{KEY, config, lines, mount_generator, mount_parent, project};
    let server = wiremock::MockServer::start().await;
    mount_generator(&server, std::time::Duration::ZERO).await;
    mount_parent(&server).await;
    let project = project(&config("openai", "parent-model", true, ""));
    let uri = server.uri();
    let project = tokio::task::spawn_blocking(move || {
        let mut env = vec![("OVERBRAINER_TEST_SECOND_MS".to_owned(), "10".to_owned())];
        for provider in ["STAND", "OTHER"] {
            env.push((
                format!("OVERBRAINER_PROVIDERS__{provider}__BASE_URL"),
                uri.clone(),
            ));
            env.push((
                format!("OVERBRAINER_PROVIDERS__{provider}__API_KEY"),
                KEY.to_owned(),
            ));
        }
        let (tmux, prompt) = start_tui_in(&project, env);
        tmux.wait_for("the Project view", "1 Project");
        tmux.key("r");
        tmux.wait_for("the menu", "Enter run  Esc close");
        for _ in 0..5 {
            tmux.key("j");
        }
        tmux.key("Enter");
        let screen = tmux.wait_for("the end of `run`", "`run` done");
        assert!(
            screen.contains("split: 5 train, 1 eval, 0 excluded, 0 orphaned"),
            "{screen}"
        );
        assert!(
            screen.contains("subtopics ✓ → questions ✓ → answers ✓ → split ✓"),
            "{screen}"
        );
        assert!(!screen.contains(KEY), "{screen}");
        tmux.key("q");
        tmux.wait("the shell prompt after quitting", |s| {
            back_at_the_prompt(s, &prompt, 2)
        });
        project
    })
    .await
    .unwrap();
    assert_eq!(
        lines(&project, "data/train.jsonl").len() + lines(&project, "data/eval.jsonl").len(),
        6
    );
    let history = lines(&project, ".overbrainer/history.jsonl");
    let stages: Vec<&str> = history
        .iter()
        .map(|h| h["stage"].as_str().unwrap())
        .collect();
    assert_eq!(stages, ["subtopics", "questions", "answers", "split"]);
    assert!(history.iter().all(|h| h["status"] == "ok"), "{history:?}");
}

// TUI-32, TUI-33, TUI-35: `e` on a question opens its text in the editor; the new text
// gives it a new ID, its old answer goes, and `split` runs again.
#[test]
fn e_in_the_dataset_view_edits_a_question_through_the_editor() {
    let project = crate::pipeline::project(&crate::pipeline::config("openai", "m", false, ""));
    project.write(
        "data/subtopics.jsonl",
        "{\"topic\":\"rust\",\"subtopic\":\"borrowing\"}\n",
    );
    project.write(
        "data/questions.jsonl",
        "{\"id\":\"q-one\",\"topic\":\"rust\",\"subtopic\":\"borrowing\",\"question\":\"What is a borrow?\"}\n",
    );
    let editor = project.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nprintf 'editor-ready\\n'\nread line\nprintf '%s\\n' \"$line\" > \"$1\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let extra = vec![("EDITOR".to_owned(), editor.to_string_lossy().into_owned())];
    let (tmux, prompt) = start_tui_in(&project, extra);
    tmux.wait_for("the Project view", "1 Project");
    tmux.key("2");
    tmux.wait_for("the tree", "rust");
    for key in ["l", "j", "l", "j"] {
        tmux.key(key);
    }
    tmux.wait_for("the question selected", "What is a borrow?");
    tmux.key("e");
    tmux.wait_for("the editor", "editor-ready");
    tmux.type_text("What does borrowing lend?");
    tmux.key("Enter");
    tmux.wait_for("the edit applied", "question q-one is now");
    let questions = project.read("data/questions.jsonl");
    assert!(
        questions.contains("\"question\":\"What does borrowing lend?\""),
        "{questions}"
    );
    assert!(!questions.contains("q-one"), "a new ID: {questions}");
    let leftovers: Vec<String> = std::fs::read_dir(project.path().join("data"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".edit-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    tmux.key("q");
    tmux.wait("the shell prompt after quitting", |s| {
        back_at_the_prompt(s, &prompt, 2)
    });
}

/// An answer line of `answers.jsonl` for question `id`.
fn answer_line(id: &str, question: &str, answer: &str, reasoning: &str) -> String {
    format!(
        "{{\"id\":\"{id}\",\"topic\":\"rust\",\"subtopic\":\"borrowing\",\"messages\":[\
         {{\"role\":\"user\",\"content\":\"{question}\"}},\
         {{\"role\":\"assistant\",\"content\":\"{answer}\",\"reasoning_content\":\"{reasoning}\"}}],\
         \"meta\":{{\"model\":\"m\",\"input_tokens\":3,\"output_tokens\":5,\"finish_reason\":\"stop\",\
         \"reasoning_kind\":\"raw\",\"excluded\":null}}}}"
    )
}

/// A project with three questions of `rust`/`borrowing`, the first two answered; gives the
/// second answer's line.
fn answered_project() -> (TestProject, String) {
    let project = crate::pipeline::project(&crate::pipeline::config("openai", "m", false, ""));
    project.write(
        "data/subtopics.jsonl",
        "{\"topic\":\"rust\",\"subtopic\":\"borrowing\"}\n",
    );
    let question = |id: &str, text: &str| {
        format!(
            "{{\"id\":\"{id}\",\"topic\":\"rust\",\"subtopic\":\"borrowing\",\"question\":\"{text}\"}}\n"
        )
    };
    project.write(
        "data/questions.jsonl",
        &[
            question("q-one", "What is a borrow?"),
            question("q-two", "What is a lifetime?"),
            question("q-three", "What is a move?"),
        ]
        .concat(),
    );
    let untouched = answer_line(
        "q-two",
        "What is a lifetime?",
        "A region of code.",
        "Lifetimes.",
    );
    project.write(
        "data/answers.jsonl",
        &format!(
            "{}\n{untouched}\n",
            answer_line(
                "q-one",
                "What is a borrow?",
                "A borrow is a reference.",
                "Think about references."
            )
        ),
    );
    (project, untouched)
}

/// `answers.jsonl` after the edit of [`big_e_in_the_dataset_view_edits_an_answer_through_the_editor`]:
/// only q-one's line changed, marked edited; `split` trains on the new text, unmarked.
fn assert_answer_edited(project: &TestProject, untouched: &str) {
    let answers = project.read("data/answers.jsonl");
    let answers: Vec<&str> = answers.lines().collect();
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(
        answers[1], untouched,
        "the other answer stays byte for byte"
    );
    let edited: serde_json::Value = serde_json::from_str(answers[0]).unwrap();
    assert_eq!(
        edited["messages"][1]["content"],
        "A borrow lends access without moving."
    );
    assert_eq!(
        edited["messages"][1]["reasoning_content"],
        "Think about references."
    );
    assert_eq!(edited["meta"]["edited"], true);
    assert_eq!(edited["meta"]["output_tokens"], 5);
    let split: Vec<serde_json::Value> = [
        crate::pipeline::lines(project, "data/train.jsonl"),
        crate::pipeline::lines(project, "data/eval.jsonl"),
    ]
    .concat();
    assert_eq!(split.len(), 2, "{split:?}");
    let trained = split.iter().find(|l| l["id"] == "q-one").unwrap();
    assert_eq!(
        trained["messages"][1]["content"],
        "A borrow lends access without moving."
    );
    assert!(trained["meta"].get("edited").is_none(), "{trained}");
}

// TUI-32, TUI-33, TUI-35: `E` on an answered question opens its reasoning and answer
// between two marker lines in the editor (a file readable only by the user); the edit
// rewrites only that answer's line, marked edited, and `split` runs again with the new
// text. `E` on an unanswered question opens nothing and says so.
#[test]
fn big_e_in_the_dataset_view_edits_an_answer_through_the_editor() {
    let (project, untouched) = answered_project();
    let editor = project.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nstat -c %a \"$1\" > \"$(dirname \"$1\")/../edit-mode.txt\"\n\
         printf 'editor-ready\\n'\nread line\n\
         sed -i \"s/^A borrow is a reference\\.\\$/$line/\" \"$1\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let extra = vec![("EDITOR".to_owned(), editor.to_string_lossy().into_owned())];
    let (tmux, prompt) = start_tui_in(&project, extra);
    tmux.wait_for("the Project view", "1 Project");
    tmux.key("2");
    tmux.wait_for("the tree", "rust");
    for key in ["l", "j", "l", "j"] {
        tmux.key(key);
    }
    tmux.wait_for("the answer shown", "A borrow is a reference.");
    tmux.key("E");
    tmux.wait_for("the editor", "editor-ready");
    tmux.type_text("A borrow lends access without moving.");
    tmux.key("Enter");
    tmux.wait_for("the edit applied", "the answer of question q-one is edited");
    tmux.wait_for("the detail read again", "edited by hand");
    assert_eq!(project.read("edit-mode.txt").trim(), "600");
    assert_answer_edited(&project, &untouched);
    let leftovers: Vec<String> = std::fs::read_dir(project.path().join("data"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".edit-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    for key in ["j", "j"] {
        tmux.key(key);
    }
    tmux.wait_for("the unanswered question", "What is a move?");
    tmux.key("E");
    tmux.wait_for("the refusal", "question q-three has no answer to edit yet");
    tmux.key("q");
    tmux.wait("the shell prompt after quitting", |s| {
        back_at_the_prompt(s, &prompt, 2)
    });
}

/// TUI-3: resized below 80x24 the TUI shows only the notice; resized back, the view.
fn too_small_and_back(tmux: &Tmux) {
    let resize = |x: &str, y: &str| {
        let status = tmux
            .command()
            .args(["resize-window", "-t", "tui", "-x", x, "-y", y])
            .status()
            .unwrap();
        assert!(status.success());
    };
    resize("70", "20");
    tmux.wait_for("the too-small notice", "The terminal is too small.");
    resize("120", "40");
    tmux.wait_for("the Project view again", "training.base_model");
}

// Issue 17: the Project view shows `training.base_model` with its source; `4`, `t`, `y`
// start a real run whose step counter moves; `s`, `y` stop it with a snapshot; `T`, `y`
// resume it; `q` while it is followed detaches it with the attach hint (the job goes
// on); a new TUI's `a` follows it to `succeeded`; `q` quits and the shell prompt is back;
// `runs ls` agrees.
// 300 steps, so the run is still going when `s` comes on a loaded machine (20 steps
// ended before the stop key in a full run).
#[test]
fn the_tui_starts_stops_and_resumes_a_real_run_as_a_person_would() {
    let training = Training::new(&Setup {
        max_steps: 300,
        merge: false,
        ..Setup::default()
    });
    let (tmux, prompt) = start_tui(&training);

    // The Project view: the base model with its source.
    let screen = tmux.wait_for("the Project view", "training.base_model");
    let line = screen
        .lines()
        .find(|l| l.contains("training.base_model"))
        .unwrap();
    assert!(line.contains("(toml)"), "{screen}");

    too_small_and_back(&tmux);

    // Start a run.
    tmux.key("4");
    tmux.wait_for("the Training view", "No runs yet.");
    tmux.key("t");
    tmux.wait_for("the start confirmation", "Start a training run");
    tmux.key("y");
    let first = tmux.wait("a first step of the followed run", |s| {
        step_of(s).filter(|step| *step >= 1 && s.contains("● "))
    });
    let ids = training.run_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let id = ids[0].clone();
    tmux.wait("the step counter to move", |s| {
        step_of(s).filter(|step| *step > first)
    });
    tmux.wait("points on the loss chart", |s| {
        s.chars()
            .any(|c| ('\u{2801}'..='\u{28ff}').contains(&c))
            .then_some(())
    });

    // Stop it with a snapshot.
    tmux.key("s");
    tmux.wait_for("the stop confirmation", "Stop with a snapshot");
    tmux.key("y");
    let screen = tmux.wait("the run stopped", |s| {
        (row_state(s, &id) == Some("stopped") && s.contains("stopped at step"))
            .then(|| s.to_owned())
    });
    let record = training.record(&id);
    assert_eq!(record["state"], "stopped", "{record}");
    let snapshot = record["snapshot"]["step"].as_u64().unwrap();
    assert!(
        screen.contains(&format!("stopped at step {snapshot}")),
        "{screen}"
    );

    // Resume it to the end.
    tmux.key("T");
    tmux.wait_for("the resume confirmation", "Resume a stopped run");
    tmux.key("y");
    let resumed = poll(DEADLINE, "the resumed run", || {
        training.run_ids().into_iter().find(|i| *i != id).ok_or(())
    });
    tmux.wait("the resumed run followed", |s| {
        (row_state(s, &resumed) == Some("running") && s.contains(&format!("resumed from {id}")))
            .then_some(())
    });

    // Quit while it is followed: `q` asks, saying the run goes on (TUI-65); `y` detaches
    // it with the attach hint, never cancelled.
    tmux.key("q");
    tmux.wait_for(
        "the quit question",
        &format!("{resumed} goes on on its target"),
    );
    tmux.key("y");
    let screen = tmux.wait("the shell prompt after quitting", |s| {
        back_at_the_prompt(s, &prompt, 2).map(|()| s.to_owned())
    });
    assert!(
        screen.contains(&format!(
            "tui: detached from run {resumed}; the job goes on"
        )) && screen.contains(&format!("overbrainer train attach {resumed}")),
        "{screen}"
    );
    assert_eq!(training.record(&resumed)["state"], "running");

    // A new TUI attaches to it (`a`) and follows it to `succeeded`.
    launch(&tmux, &training.project);
    tmux.wait_for("the Project view", "training.base_model");
    tmux.key("4");
    tmux.wait("the resumed run selected", |s| {
        (row_state(s, &resumed) == Some("running")).then_some(())
    });
    tmux.key("a");
    let screen = tmux.wait("the resumed run succeeded", |s| {
        (row_state(s, &resumed) == Some("succeeded")).then(|| s.to_owned())
    });
    assert!(screen.contains(&format!("resumed from {id}")), "{screen}");

    // Quit: the terminal is restored and the prompt is back.
    tmux.key("q");
    tmux.wait("the shell prompt after quitting again", |s| {
        back_at_the_prompt(s, &prompt, 3)
    });

    let ls = training.cmd().args(["runs", "ls"]).output().unwrap();
    let text = output_text(&ls);
    assert!(ls.status.success(), "{text}");
    let shows = |run: &str, state: &str| {
        text.lines()
            .find(|l| l.contains(run))
            .is_some_and(|l| l.split_whitespace().any(|w| w == state))
    };
    assert!(shows(&id, "stopped"), "{text}");
    assert!(shows(&resumed, "succeeded"), "{text}");
    assert_eq!(training.record(&resumed)["state"], "succeeded");
}

/// The files under `dir`, relative and sorted.
fn files_under(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(at) = todo.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                out.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

// TUI-73..TUI-77, issue 17: `tui` in an empty directory runs the init wizard; answered as a
// person would, it writes the files `init` writes (and `.env`, mode 600, the only file with
// the typed key), `config check` passes on them, and the TUI opens on the new project. A
// directory holding one of the files refuses before the first screen, naming it; `-C` on
// a missing directory fails without creating it.
#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one person's walk through the wizard, then what it wrote"
)]
fn the_init_wizard_in_an_empty_directory_writes_what_init_writes() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let project = root.path().join("sql_tutor");
    std::fs::create_dir(&project).unwrap();
    let key = format!("sk-or-{}", random_token());
    let prompt = format!("obprompt-{}$ ", random_token());
    let env = vec![
        ("PATH".to_owned(), std::env::var("PATH").unwrap_or_default()),
        ("HOME".to_owned(), home.to_string_lossy().into_owned()),
    ];
    let tmux = Tmux::start(&env, &prompt);
    tmux.wait_for("the shell prompt", prompt.trim_end());
    let bin = env!("CARGO_BIN_EXE_overbrainer");
    tmux.type_text(&format!("'{bin}' -C '{}' tui", project.display()));
    tmux.key("Enter");

    tmux.wait_for("the name screen", "Step 1 of 7: Project");
    tmux.key("Enter");
    tmux.wait_for("the provider screen", "https://openrouter.ai/api/v1");
    tmux.key("Enter");
    tmux.wait_for("the key screen", "Step 3 of 7: Key");
    tmux.key("Down");
    tmux.type_text(&key);
    tmux.wait_for("the masked key", &"•".repeat(key.len().min(32)));
    tmux.key("Enter");
    tmux.wait_for("the models screen", "deepseek/deepseek-r1");
    tmux.key("Enter");
    tmux.wait_for("the topics screen", "no topic yet");
    tmux.key("Enter");
    tmux.wait_for("the refusal without a topic", "add at least one topic");
    tmux.key("a");
    tmux.wait_for("the topic form", "New topic");
    tmux.type_text("joins");
    tmux.key("Down");
    tmux.type_text("Joins in SQL");
    tmux.key("Enter");
    tmux.wait_for(
        "the topic added",
        "joins: Joins in SQL (5 subtopics x 10 questions)",
    );
    tmux.key("Enter");
    tmux.wait_for("the training screen", "Step 6 of 7: Training");
    tmux.key("Enter");
    let summary = tmux.wait_for("the summary", "Enter writes:");
    assert!(!summary.contains(&key), "{summary}");
    assert!(
        summary.contains("training   this machine (native)"),
        "{summary}"
    );
    tmux.key("Enter");
    tmux.wait_for("the last screen", "Start auto mode now");
    tmux.key("n");
    tmux.wait_for(
        "the Project view of the new project",
        "project.name = \"sql_tutor\"",
    );
    tmux.key("q");
    tmux.wait("the shell prompt after quitting", |s| {
        back_at_the_prompt(s, &prompt, 2)
    });

    // The files `init` writes, plus `.env`.
    let init_dir = root.path().join("by_init");
    let output = Command::new(bin)
        .args(["init"])
        .arg(&init_dir)
        .env_clear()
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", output_text(&output));
    let mut expected = files_under(&init_dir);
    expected.push(".env".to_owned());
    expected.sort();
    // The TUI that opened afterwards holds its lock in the state directory.
    let written: Vec<String> = files_under(&project)
        .into_iter()
        .filter(|f| !f.starts_with(".overbrainer/"))
        .collect();
    assert_eq!(written, expected);
    for file in ["prompts/questions.txt", "prompts/subtopics.txt"] {
        assert_eq!(
            std::fs::read(project.join(file)).unwrap(),
            std::fs::read(init_dir.join(file)).unwrap(),
            "{file}"
        );
    }
    let dotenv = std::fs::read_to_string(project.join(".env")).unwrap();
    assert!(
        dotenv.contains(&format!(
            "OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY={key}\n"
        )),
        "{dotenv}"
    );
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(project.join(".env"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    for file in files_under(&project).iter().filter(|f| *f != ".env") {
        let text = std::fs::read_to_string(project.join(file)).unwrap();
        assert!(!text.contains(&key), "the key in {file}");
    }
    let config = std::fs::read_to_string(project.join("overbrainer.toml")).unwrap();
    assert!(config.contains("name = \"joins\""), "{config}");
    assert!(
        config.contains("# What the child should learn."),
        "comments kept"
    );
    let check = Command::new(bin)
        .arg("-C")
        .arg(&project)
        .args(["config", "check"])
        .env_clear()
        .env("HOME", &home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", output_text(&check));
    assert!(!output_text(&check).contains(&key));

    // A directory with one of the files: refused before the first screen, naming it.
    let half = root.path().join("half");
    std::fs::create_dir(&half).unwrap();
    std::fs::write(half.join(".env.example"), "MINE=1\n").unwrap();
    tmux.type_text(&format!("'{bin}' -C '{}' tui", half.display()));
    tmux.key("Enter");
    tmux.wait("the refusal naming .env.example", |s| {
        (s.contains(".env.example` already exists") && back_at_the_prompt(s, &prompt, 3).is_some())
            .then_some(())
    });
    assert_eq!(files_under(&half), [".env.example"]);
    // `-C` on a missing directory: fails, creates nothing.
    let missing = root.path().join("missing");
    tmux.type_text(&format!("'{bin}' -C '{}' tui", missing.display()));
    tmux.key("Enter");
    tmux.wait("the missing directory named", |s| {
        (s.matches(prompt.trim_end()).count() >= 4 && s.contains("missing")).then_some(())
    });
    assert!(!missing.exists());
}

/// Moves the Project view's selection down until the detail line names `key`.
fn select_field(tmux: &Tmux, key: &str) {
    let wanted = format!(" {key} from ");
    for _ in 0..200 {
        let screen = tmux.screen();
        if screen.contains(&wanted) {
            return;
        }
        let detail = screen.lines().rev().nth(1).unwrap_or_default().to_owned();
        tmux.key("j");
        tmux.wait("the selection to move", |s| {
            (s.lines().rev().nth(1).unwrap_or_default() != detail).then_some(())
        });
    }
    panic!("`{key}` was never selected: {}", tmux.screen());
}

// TUI-21, TUI-27, TUI-28, TUI-43, TUI-44: Enter on a Runpod target's `gpu_types` opens
// the picker on the account's catalog (the Runpod stand-in), with the VRAM estimate of
// the local base model and each type's fit; Space and Enter write the list. `t` on that
// target shows the preview from the catalog; `g` picks there, `n` drops the pick.
#[tokio::test(flavor = "multi_thread")]
async fn the_runpod_picker_writes_gpu_types_and_the_start_confirmation_previews_the_run() {
    use crate::runpod_catalog::{KEY, catalog};
    let standin = crate::runpod_standin::Standin::start(KEY).await;
    standin.state().catalog = catalog();
    let base = standin.base();
    tokio::task::spawn_blocking(move || {
        let training = Training::new(&Setup::default());
        let config = training.project.read("overbrainer.toml").replacen(
            "target = \"local\"",
            "target = \"gpu\"",
            1,
        );
        let config = format!(
            "{config}\n[targets.gpu]\nkind = \"runpod\"\ngpu_types = \"auto\"\nmax_hours = 2\n"
        );
        training.project.write("overbrainer.toml", &config);
        let env = vec![
            ("OVERBRAINER_RUNPOD__API_KEY".to_owned(), KEY.to_owned()),
            ("OVERBRAINER_RUNPOD__BASE_URL".to_owned(), base),
        ];
        let (tmux, prompt) = start_tui_with(&training, env);
        tmux.wait_for("the Project view", "training.base_model");
        select_field(&tmux, "targets.gpu.gpu_types");
        tmux.key("Enter");
        let screen = tmux.wait_for("the GPU picker", "GPU types, 1 per pod, estimate");
        assert!(screen.contains("FIT"), "{screen}");
        assert!(screen.contains("NVIDIA A40 "), "{screen}");
        // By price: `auto`, then the A40 (cheapest); toggle it, keep it.
        tmux.key("j");
        tmux.key("Space");
        tmux.wait_for("the toggle", "[1]  NVIDIA A40");
        tmux.key("Enter");
        tmux.wait_for("the save", "saved");
        assert_eq!(
            training.project.read("overbrainer.toml"),
            config.replace("gpu_types = \"auto\"", "gpu_types = [\"NVIDIA A40\"]")
        );
        tmux.key("4");
        tmux.key("t");
        let screen = tmux.wait_for("the preview", "the listed types, tried in order");
        assert!(
            screen.contains("NVIDIA A40  USD 0.40/h  48 GB  stock HIGH  fit ok"),
            "{screen}"
        );
        assert!(
            screen.contains("at most USD 0.80 in max_hours = 2"),
            "{screen}"
        );
        tmux.key("g");
        tmux.wait_for("the picker from the confirmation", "GPU types, 1 per pod");
        tmux.key("Home");
        tmux.key("Enter");
        tmux.wait_for("the pick shown", "changed gpu_types = \"auto\"");
        tmux.key("n");
        tmux.wait("the confirmation closed", |s| {
            (!s.contains("Start a training run")).then_some(())
        });
        assert!(
            training
                .project
                .read("overbrainer.toml")
                .contains("gpu_types = [\"NVIDIA A40\"]"),
            "`n` saves nothing"
        );
        assert!(!tmux.screen().contains(&KEY[4..24]));
        tmux.key("q");
        tmux.wait("the shell prompt after quitting", |s| {
            back_at_the_prompt(s, &prompt, 2)
        });
    })
    .await
    .unwrap();
}

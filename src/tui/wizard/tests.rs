//! The wizard's keys as plain unit tests on its state, its writes into a temporary
//! directory, and its screens through `TestBackend` against `insta` snapshots.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::fields::Id;
use super::{Outcome, START, SUMMARY, Summary, TOPICS, Wizard};
use crate::env::EnvSnapshot;

const CANARY: &str = "sk-WIZARD-9c41e7a2b8d05f36e19a7c42d8b60f3e5a17c9d2b4e6f8a0";

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn wizard(dir: &Path) -> Wizard {
    Wizard::new(
        dir,
        EnvSnapshot::from_pairs([("HOME", "/root")]),
        crate::check::RULES,
        crate::pipeline::templates::Template::init_files().to_vec(),
    )
}

fn press(wizard: &mut Wizard, codes: &[KeyCode]) {
    for code in codes {
        wizard.handle_key(key(*code));
    }
}

fn typed(wizard: &mut Wizard, text: &str) {
    for c in text.chars() {
        wizard.handle_key(key(KeyCode::Char(c)));
    }
}

fn screen(wizard: &Wizard, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| super::render::render(wizard, frame))
        .unwrap();
    terminal.backend().to_string()
}

fn snapshot_both(name: &str, wizard: &Wizard) {
    // Temporary directories keep their width: `/tmp/.tmpAbC123`.
    let temporary = regex::Regex::new(r"\.tmp[A-Za-z0-9]{6}").unwrap();
    let shown = |width, height| {
        temporary
            .replace_all(&screen(wizard, width, height), ".tmpXXXXXX")
            .into_owned()
    };
    insta::assert_snapshot!(format!("{name}_80x24"), shown(80, 24));
    insta::assert_snapshot!(format!("{name}_120x40"), shown(120, 40));
}

/// A topic added through the form.
fn add_topic(wizard: &mut Wizard, name: &str, description: &str) {
    typed(wizard, "a");
    typed(wizard, name);
    press(wizard, &[KeyCode::Down]);
    typed(wizard, description);
    press(wizard, &[KeyCode::Enter]);
}

/// To the topics screen with a typed key.
fn to_topics(wizard: &mut Wizard) {
    press(wizard, &[KeyCode::Enter, KeyCode::Enter]);
    press(wizard, &[KeyCode::Down]);
    typed(wizard, CANARY);
    press(wizard, &[KeyCode::Enter, KeyCode::Enter]);
    assert_eq!(wizard.screen, TOPICS);
}

#[test]
#[allow(clippy::too_many_lines, reason = "one walk through the seven screens")]
fn a_walk_through_writes_the_project_with_the_key_in_env_only() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("sql_tutor");
    std::fs::create_dir(&project).unwrap();
    let mut wizard = wizard(&project);
    assert_eq!(wizard.value(Id::Name), "sql_tutor", "the directory's name");
    press(&mut wizard, &[KeyCode::Backspace; 9]);
    // A required field refuses to move on, naming why below it.
    press(&mut wizard, &[KeyCode::Enter]);
    assert_eq!(wizard.screen, 0);
    assert!(
        wizard
            .refused
            .as_ref()
            .is_some_and(|(id, _)| *id == Id::Name)
    );
    typed(&mut wizard, "SQL tutor");
    press(&mut wizard, &[KeyCode::Tab]);
    assert_eq!(wizard.screen, 1);
    // The provider: → to nanogpt offers its models in place of OpenRouter's.
    press(&mut wizard, &[KeyCode::Right]);
    assert_eq!(wizard.value(Id::Preset), "nanogpt");
    assert_eq!(wizard.value(Id::Parent), "deepseek-ai/DeepSeek-R1");
    press(&mut wizard, &[KeyCode::Left, KeyCode::Enter]);
    // The key: typed, masked.
    press(&mut wizard, &[KeyCode::Down]);
    typed(&mut wizard, CANARY);
    let shown = screen(&wizard, 120, 40);
    assert!(
        !shown.contains(CANARY) && !shown.contains("sk-WIZARD"),
        "{shown}"
    );
    assert!(
        shown.contains(&"•".repeat(32))
            && shown.contains(&format!("({} characters)", CANARY.len())),
        "{shown}"
    );
    press(&mut wizard, &[KeyCode::Enter]);
    // Back with Esc keeps every value.
    press(&mut wizard, &[KeyCode::Esc, KeyCode::Esc, KeyCode::BackTab]);
    assert_eq!(wizard.screen, 0);
    assert_eq!(wizard.value(Id::Name), "SQL tutor");
    press(
        &mut wizard,
        &[KeyCode::Enter, KeyCode::Enter, KeyCode::Enter],
    );
    assert_eq!(wizard.value(Id::Key), CANARY);
    // Models: the parent's reasoning off.
    press(&mut wizard, &[KeyCode::Down, KeyCode::Down, KeyCode::Right]);
    assert_eq!(wizard.value(Id::Reasoning), "off");
    press(&mut wizard, &[KeyCode::Enter]);
    assert_eq!(wizard.screen, TOPICS);
    // Topics: at least one; the form refuses a bad name.
    press(&mut wizard, &[KeyCode::Enter]);
    assert_eq!(wizard.screen, TOPICS);
    assert!(wizard.topics_refused.is_some());
    typed(&mut wizard, "a");
    typed(&mut wizard, "SQL");
    press(&mut wizard, &[KeyCode::Enter]);
    let form = wizard.form.as_ref().expect("still open");
    assert_eq!(form.refused.as_ref().map(|(i, _)| *i), Some(0));
    press(&mut wizard, &[KeyCode::Backspace; 3]);
    typed(&mut wizard, "joins");
    press(&mut wizard, &[KeyCode::Down]);
    typed(&mut wizard, "Joins in SQL");
    press(&mut wizard, &[KeyCode::Down, KeyCode::Backspace]);
    typed(&mut wizard, "2");
    press(&mut wizard, &[KeyCode::Enter]);
    assert!(wizard.form.is_none());
    add_topic(&mut wizard, "joins", "again");
    assert!(
        wizard
            .form
            .as_ref()
            .and_then(|f| f.refused.as_ref())
            .is_some_and(|(_, why)| why.contains("already")),
        "a taken name is refused"
    );
    press(&mut wizard, &[KeyCode::Esc]);
    add_topic(&mut wizard, "windows", "Window functions");
    add_topic(&mut wizard, "gone", "Deleted");
    typed(&mut wizard, "d");
    // `e` edits the selected topic.
    press(&mut wizard, &[KeyCode::Up]);
    typed(&mut wizard, "e");
    press(&mut wizard, &[KeyCode::Down]);
    typed(&mut wizard, " (inner, outer)");
    press(&mut wizard, &[KeyCode::Enter]);
    let topics: Vec<_> = wizard
        .topics
        .iter()
        .map(|t| (t.name.as_str(), t.description.as_str(), t.subtopics))
        .collect();
    assert_eq!(
        topics,
        [
            ("joins", "Joins in SQL (inner, outer)", 2),
            ("windows", "Window functions", 5)
        ]
    );
    press(&mut wizard, &[KeyCode::Enter]);
    // Training over SSH needs its host.
    press(&mut wizard, &[KeyCode::Right]);
    assert_eq!(wizard.value(Id::Training), "ssh");
    press(&mut wizard, &[KeyCode::Enter]);
    assert!(
        wizard
            .refused
            .as_ref()
            .is_some_and(|(id, _)| *id == Id::Host)
    );
    typed(&mut wizard, "me@gpu.example");
    press(&mut wizard, &[KeyCode::Enter]);
    assert_eq!(wizard.screen, SUMMARY);
    let Summary::Ready(lines) = &wizard.summary else {
        panic!("{:?}", wizard.summary);
    };
    assert!(
        lines.iter().any(|l| l.contains("me@gpu.example over SSH")),
        "{lines:?}"
    );
    assert!(!screen(&wizard, 120, 40).contains(CANARY));
    press(&mut wizard, &[KeyCode::Enter]);
    assert_eq!(wizard.screen, START, "{:?}", wizard.summary);
    for file in [
        "overbrainer.toml",
        ".env.example",
        ".env",
        ".gitignore",
        "prompts/questions.txt",
    ] {
        assert!(project.join(file).is_file(), "{file}");
    }
    let env = std::fs::read_to_string(project.join(".env")).unwrap();
    assert!(env.contains(&format!(
        "OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY={CANARY}"
    )));
    assert!(env.contains("OVERBRAINER_TARGETS__GPU_BOX__HOST=me@gpu.example"));
    let mode = std::fs::metadata(project.join(".env"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    for file in ["overbrainer.toml", ".env.example"] {
        let text = std::fs::read_to_string(project.join(file)).unwrap();
        assert!(!text.contains(CANARY), "{file}");
    }
    // `config check` loads what was written.
    let loaded =
        crate::check::load(&project, &EnvSnapshot::from_pairs([("HOME", "/root")])).expect("valid");
    assert_eq!(loaded.settings.project.name, "SQL tutor");
    assert_eq!(loaded.settings.topics.len(), 2);
    typed(&mut wizard, "y");
    assert_eq!(wizard.outcome(), Some(&Outcome::Open { auto: true }));
}

#[test]
fn ctrl_c_asks_then_quits_writing_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut wizard = wizard(dir.path());
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    wizard.handle_key(ctrl_c);
    assert!(wizard.quitting);
    snapshot_both("wizard_quit", &wizard);
    typed(&mut wizard, "n");
    assert!(!wizard.quitting && wizard.outcome().is_none());
    // A typed `q` or `y` outside the question is text.
    typed(&mut wizard, "qy");
    assert!(wizard.value(Id::Name).ends_with("qy"));
    wizard.handle_key(ctrl_c);
    typed(&mut wizard, "y");
    assert_eq!(wizard.outcome(), Some(&Outcome::Quit));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_file_appearing_while_the_wizard_is_open_is_named_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut wizard = wizard(dir.path());
    to_topics(&mut wizard);
    add_topic(&mut wizard, "joins", "Joins in SQL");
    press(&mut wizard, &[KeyCode::Enter]);
    // `skip`: no `[training]`.
    press(&mut wizard, &[KeyCode::Left]);
    assert_eq!(wizard.value(Id::Training), "skip");
    std::fs::write(dir.path().join(".env"), "MINE=1\n").unwrap();
    press(&mut wizard, &[KeyCode::Enter]);
    assert_eq!(wizard.screen, SUMMARY);
    assert!(
        matches!(&wizard.summary, Summary::Refused(why) if why.contains(".env") && why.contains("nothing")),
        "{:?}",
        wizard.summary
    );
    press(&mut wizard, &[KeyCode::Enter]);
    assert_eq!(wizard.screen, SUMMARY);
    let mut left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    left.sort();
    assert_eq!(left, [".env"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".env")).unwrap(),
        "MINE=1\n"
    );
    // Removed again: Enter writes, and `n` opens the Project view.
    std::fs::remove_file(dir.path().join(".env")).unwrap();
    press(&mut wizard, &[KeyCode::Enter]);
    assert_eq!(wizard.screen, START, "{:?}", wizard.summary);
    let config = std::fs::read_to_string(dir.path().join("overbrainer.toml")).unwrap();
    assert!(!config.contains("\n[training]"));
    typed(&mut wizard, "n");
    assert_eq!(wizard.outcome(), Some(&Outcome::Open { auto: false }));
}

#[test]
fn a_paste_goes_into_the_field_being_typed_and_a_custom_provider_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let mut wizard = wizard(dir.path());
    press(&mut wizard, &[KeyCode::Enter]);
    press(&mut wizard, &[KeyCode::Left]);
    assert_eq!(wizard.value(Id::Preset), "custom");
    press(&mut wizard, &[KeyCode::Down]);
    wizard.paste("My LLM\n");
    press(&mut wizard, &[KeyCode::Enter]);
    assert_eq!(
        wizard.refused.as_ref().map(|(id, _)| *id),
        Some(Id::CustomName)
    );
    press(&mut wizard, &[KeyCode::Backspace; 6]);
    wizard.paste("my_llm");
    press(&mut wizard, &[KeyCode::Down, KeyCode::Right, KeyCode::Down]);
    assert_eq!(wizard.value(Id::Protocol), "anthropic");
    typed(&mut wizard, "127.0.0.1:9/v1");
    press(&mut wizard, &[KeyCode::Enter]);
    assert_eq!(
        wizard.refused.as_ref().map(|(id, _)| *id),
        Some(Id::BaseUrl)
    );
    snapshot_both("wizard_provider_refused", &wizard);
    press(&mut wizard, &[KeyCode::Backspace; 14]);
    typed(&mut wizard, "http://127.0.0.1:9/v1");
    press(&mut wizard, &[KeyCode::Enter]);
    assert_eq!(wizard.screen, 2);
    // A Vault reference is checked; "fill in .env later" needs nothing.
    press(&mut wizard, &[KeyCode::Right, KeyCode::Down]);
    typed(&mut wizard, "vault:nope");
    press(&mut wizard, &[KeyCode::Enter]);
    assert_eq!(
        wizard.refused.as_ref().map(|(id, _)| *id),
        Some(Id::KeyVault)
    );
    press(&mut wizard, &[KeyCode::Up, KeyCode::Right, KeyCode::Enter]);
    assert_eq!(wizard.screen, 3);
    // No embedder with the Anthropic protocol.
    assert!(!wizard.fields().iter().any(|f| f.id == Id::Embedder));
    // The models are the user's to name for a custom provider: the preset's are cleared.
    press(&mut wizard, &[KeyCode::Enter]);
    assert_eq!(wizard.screen, 3);
    assert_eq!(
        wizard.refused.as_ref().map(|(id, _)| *id),
        Some(Id::Generator)
    );
    typed(&mut wizard, "claude-3-5-haiku-latest");
    press(&mut wizard, &[KeyCode::Down]);
    typed(&mut wizard, "claude-sonnet-4-5");
    press(&mut wizard, &[KeyCode::Enter]);
    assert_eq!(wizard.screen, TOPICS);
}

#[test]
fn the_screens_are_drawn_at_both_sizes() {
    let path = Path::new("/home/me/sql_tutor");
    let mut wizard = wizard(path);
    snapshot_both("wizard_name", &wizard);
    press(
        &mut wizard,
        &[KeyCode::Enter, KeyCode::Enter, KeyCode::Down],
    );
    typed(&mut wizard, CANARY);
    press(&mut wizard, &[KeyCode::Enter, KeyCode::Enter]);
    add_topic(&mut wizard, "joins", "Joins in SQL");
    typed(&mut wizard, "a");
    typed(&mut wizard, "Bad name");
    press(&mut wizard, &[KeyCode::Enter]);
    snapshot_both("wizard_topic_form", &wizard);
    press(
        &mut wizard,
        &[KeyCode::Esc, KeyCode::Enter, KeyCode::Right, KeyCode::Right],
    );
    assert_eq!(wizard.value(Id::Training), "runpod");
    snapshot_both("wizard_training_runpod", &wizard);
    press(&mut wizard, &[KeyCode::Down, KeyCode::Down]);
    typed(&mut wizard, CANARY);
    press(&mut wizard, &[KeyCode::Enter]);
    snapshot_both("wizard_summary", &wizard);
    let small = screen(&wizard, 60, 20);
    assert!(small.contains("too small"), "{small}");
}

#[test]
fn fields_edit_at_their_cursor_and_keys_wait_while_the_terminal_is_too_small() {
    let dir = tempfile::tempdir().unwrap();
    let mut wizard = wizard(dir.path());
    press(
        &mut wizard,
        &[KeyCode::Enter, KeyCode::Enter, KeyCode::Down],
    );
    // Ctrl-U clears what was typed: a masked key is never silently corrupted.
    typed(&mut wizard, "sk-wrong");
    wizard.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    typed(&mut wizard, "sk-right");
    assert_eq!(wizard.value(Id::Key), "sk-right");
    // ←/→ move in a typed field.
    press(
        &mut wizard,
        &[KeyCode::Left, KeyCode::Left, KeyCode::Backspace],
    );
    typed(&mut wizard, "X");
    assert_eq!(wizard.value(Id::Key), "sk-riXht");
    // Below 80x24 keys wait; back to size they work again.
    wizard.set_size(60, 15);
    typed(&mut wizard, "zz");
    press(&mut wizard, &[KeyCode::Enter]);
    assert_eq!((wizard.screen, wizard.value(Id::Key)), (2, "sk-riXht"));
    wizard.set_size(80, 24);
    press(&mut wizard, &[KeyCode::Enter]);
    assert_eq!(wizard.screen, 3);
}

#[test]
fn a_prompts_file_is_refused_and_ctrl_c_after_writing_leaves() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("prompts"), "mine").unwrap();
    let mut wizard = wizard(dir.path());
    assert!(
        wizard
            .refusal()
            .is_some_and(|why| why.contains("prompts") && why.contains("not a directory")),
        "{:?}",
        wizard.refusal()
    );
    std::fs::remove_file(dir.path().join("prompts")).unwrap();
    assert_eq!(wizard.refusal(), None);
    to_topics(&mut wizard);
    add_topic(&mut wizard, "joins", "Joins in SQL");
    press(
        &mut wizard,
        &[KeyCode::Enter, KeyCode::Enter, KeyCode::Enter],
    );
    assert_eq!(wizard.screen, START, "{:?}", wizard.summary);
    wizard.handle_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert_eq!(wizard.outcome(), Some(&Outcome::Leave));
}

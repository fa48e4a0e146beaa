use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use toml_edit::Value;

use super::*;
use crate::tui::theme::Theme;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn entry(key: &str, value: &str, source: Source) -> Entry {
    Entry {
        key: key.to_owned(),
        value: value.to_owned(),
        source,
        ignored: None,
    }
}

fn view() -> ProjectView {
    ProjectView::new(
        Theme::new(true),
        vec![
            entry("project.name", "\"demo\"", Source::File),
            entry("providers.local.protocol", "\"openai\"", Source::File),
            entry("providers.local.api_key", "(unset)", Source::Default),
            entry("pipeline.concurrency", "8", Source::Default),
            entry("pipeline.include_system_prompt", "false", Source::Default),
            entry("training.target", "\"box\"", Source::File),
            entry("training.on_stall", "\"cancel\"", Source::File),
            entry("targets.box.kind", "\"ssh\"", Source::File),
        ],
    )
}

fn select(view: &mut ProjectView, key_name: &str) {
    view.handle_key(key(KeyCode::Home));
    while view.selected_entry().map(|e| e.key.as_str()) != Some(key_name) {
        let before = view.selected_entry().map(|e| e.key.clone());
        view.handle_key(key(KeyCode::Down));
        assert_ne!(
            view.selected_entry().map(|e| e.key.clone()),
            before,
            "{key_name} is not a row"
        );
    }
}

fn typed(view: &mut ProjectView, text: &str) {
    for c in text.chars() {
        assert_eq!(view.handle_key(key(KeyCode::Char(c))), None);
    }
}

#[test]
fn enter_on_a_text_field_opens_a_form_that_takes_every_key_and_saves_on_enter() {
    let mut view = view();
    assert_eq!(view.handle_key(key(KeyCode::Enter)), None);
    let form = view.form.clone().expect("a form opens");
    assert_eq!(
        (form.key.as_str(), form.input.as_str()),
        ("project.name", "demo")
    );
    assert!(view.typing(), "the app's keys go to the form");
    view.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    typed(&mut view, "q1");
    view.handle_key(key(KeyCode::Backspace));
    typed(&mut view, "x 2");
    let action = view.handle_key(key(KeyCode::Enter));
    assert_eq!(
        action,
        Some(Action::EditConfig(vec![Change::Set(
            "project.name".into(),
            Value::from("qx 2")
        )]))
    );
    assert!(view.form.as_ref().is_some_and(|f| f.saving));
    assert_eq!(
        view.handle_key(key(KeyCode::Enter)),
        None,
        "one save at a time"
    );
    view.saved(Some("not saved: `project.name`: bad".into()));
    let form = view.form.clone().expect("a refused save keeps the form");
    assert_eq!(
        form.error.as_deref(),
        Some("not saved: `project.name`: bad")
    );
    assert!(!form.saving);
    assert!(
        view.handle_key(key(KeyCode::Enter)).is_some(),
        "submitted again"
    );
    view.saved(None);
    assert_eq!(view.form, None);
    assert!(!view.typing());
}

#[test]
fn numbers_are_checked_on_enter_and_an_empty_form_unsets_the_key() {
    let mut view = view();
    select(&mut view, "pipeline.concurrency");
    view.handle_key(key(KeyCode::Enter));
    view.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    typed(&mut view, "many");
    assert_eq!(view.handle_key(key(KeyCode::Enter)), None);
    assert_eq!(
        view.form.as_ref().and_then(|f| f.error.as_deref()),
        Some("`many` is not a number")
    );
    view.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    assert_eq!(
        view.handle_key(key(KeyCode::Enter)),
        Some(Action::EditConfig(vec![Change::Unset(
            "pipeline.concurrency".into()
        )]))
    );
    view.saved(None);
    // Esc closes a form without a write.
    view.handle_key(key(KeyCode::Enter));
    assert_eq!(view.handle_key(key(KeyCode::Esc)), None);
    assert_eq!(view.form, None);
}

#[test]
fn a_boolean_toggles_and_a_choice_cycles_at_once() {
    let mut view = view();
    select(&mut view, "pipeline.include_system_prompt");
    assert_eq!(
        view.handle_key(key(KeyCode::Enter)),
        Some(Action::EditConfig(vec![Change::Set(
            "pipeline.include_system_prompt".into(),
            Value::from(true)
        )]))
    );
    select(&mut view, "providers.local.protocol");
    assert_eq!(
        view.handle_key(key(KeyCode::Enter)),
        Some(Action::EditConfig(vec![Change::Set(
            "providers.local.protocol".into(),
            Value::from("anthropic")
        )]))
    );
    select(&mut view, "training.on_stall");
    assert_eq!(
        view.handle_key(key(KeyCode::Enter)),
        Some(Action::EditConfig(vec![Change::Unset(
            "training.on_stall".into()
        )])),
        "an optional choice passes through unset"
    );
    assert_eq!(view.form, None);
}

#[test]
fn env_only_and_used_fields_refuse_enter_naming_why() {
    let mut view = view();
    select(&mut view, "providers.local.api_key");
    let Some(Action::Say { ok: false, text }) = view.handle_key(key(KeyCode::Enter)) else {
        panic!("an env-only key is read-only");
    };
    assert_eq!(
        text,
        "`providers.local.api_key` may only be set in the environment; \
         set `OVERBRAINER_PROVIDERS__LOCAL__API_KEY` in `.env`"
    );
    assert_eq!(view.value("training.target").as_deref(), Some("box"));
    view.used = vec![
        ("training.".into(), "run 20260101-000000-abcd".into()),
        ("targets.box.".into(), "run 20260101-000000-abcd".into()),
    ];
    select(&mut view, "targets.box.kind");
    let Some(Action::Say { ok: false, text }) = view.handle_key(key(KeyCode::Enter)) else {
        panic!("a used key is read-only");
    };
    assert_eq!(
        text,
        "`targets.box.kind` is used by run 20260101-000000-abcd; it can change once that ends"
    );
    assert_eq!(view.form, None);
}

#[test]
fn new_entries_keep_the_selected_key() {
    let mut view = view();
    select(&mut view, "pipeline.concurrency");
    let mut entries = vec![entry("project.name", "\"demo\"", Source::File)];
    entries.push(entry("pipeline.concurrency", "16", Source::File));
    view.set_entries(entries.clone());
    assert_eq!(
        view.selected_entry()
            .map(|e| (e.key.as_str(), e.value.as_str())),
        Some(("pipeline.concurrency", "16"))
    );
    select(&mut view, "project.name");
    view.set_entries(entries[1..].to_vec());
    assert_eq!(
        view.selected_entry().map(|e| e.key.as_str()),
        Some("pipeline.concurrency"),
        "a key gone: the nearest field"
    );
}

#[test]
fn a_adds_a_provider_target_or_topic_by_name_refusing_bad_and_taken_names() {
    let mut view = view();
    let down = || key(KeyCode::Down);
    view.handle_key(key(KeyCode::Char('a')));
    assert!(view.typing(), "the app's keys go to the flow");
    view.handle_key(down());
    view.handle_key(key(KeyCode::Enter));
    typed(&mut view, "Bad name");
    assert_eq!(view.handle_key(key(KeyCode::Enter)), None);
    assert_eq!(
        view.adding
            .as_ref()
            .and_then(|a| a.error.clone())
            .as_deref(),
        Some("`Bad name` is not a name: lowercase letters, digits and `_` only")
    );
    for _ in 0.."Bad name".len() {
        view.handle_key(key(KeyCode::Backspace));
    }
    typed(&mut view, "local");
    view.handle_key(key(KeyCode::Enter));
    assert_eq!(
        view.adding
            .as_ref()
            .and_then(|a| a.error.clone())
            .as_deref(),
        Some("a provider `local` exists already")
    );
    typed(&mut view, "2");
    assert_eq!(
        view.handle_key(key(KeyCode::Enter)),
        None,
        "then its protocol"
    );
    view.handle_key(down());
    assert_eq!(
        view.handle_key(key(KeyCode::Enter)),
        Some(Action::EditConfig(vec![Change::Table(
            "providers.local2".into(),
            vec![("protocol".into(), Value::from("anthropic"))]
        )]))
    );
    view.saved(Some("not saved: x".into()));
    assert_eq!(
        view.adding
            .as_ref()
            .and_then(|a| a.error.clone())
            .as_deref(),
        Some("not saved: x")
    );
    assert_eq!(view.handle_key(key(KeyCode::Esc)), None);
    assert!(view.adding.is_none() && !view.typing());

    view.handle_key(key(KeyCode::Char('a')));
    view.handle_key(down());
    view.handle_key(down());
    view.handle_key(key(KeyCode::Enter));
    typed(&mut view, "gpu");
    view.handle_key(key(KeyCode::Enter));
    for _ in 0..3 {
        view.handle_key(down());
    }
    assert_eq!(
        view.handle_key(key(KeyCode::Enter)),
        Some(Action::EditConfig(vec![Change::Table(
            "targets.gpu".into(),
            vec![
                ("kind".into(), Value::from("runpod")),
                ("gpu_types".into(), Value::from("auto")),
                ("max_hours".into(), Value::from(4))
            ]
        )]))
    );
    view.saved(None);
    assert!(view.adding.is_none());

    view.handle_key(key(KeyCode::Char('a')));
    view.handle_key(key(KeyCode::Enter));
    typed(&mut view, "go");
    assert_eq!(
        view.handle_key(key(KeyCode::Enter)),
        Some(Action::EditConfig(vec![Change::Push(
            "topics".into(),
            vec![
                ("name".into(), Value::from("go")),
                ("subtopics".into(), Value::from(5)),
                ("questions_per_subtopic".into(), Value::from(10)),
            ]
        )]))
    );
}

#[test]
fn d_asks_before_deleting_a_provider_and_refuses_other_sections() {
    let mut view = view();
    select(&mut view, "providers.local.protocol");
    let Some(Action::Ask(dialog)) = view.handle_key(key(KeyCode::Char('d'))) else {
        panic!("d asks");
    };
    assert_eq!(dialog.title, "Delete provider `local`?");
    assert_eq!(
        *dialog.yes,
        Action::EditConfig(vec![Change::Unset("providers.local".into())])
    );
    select(&mut view, "pipeline.concurrency");
    let Some(Action::Say { ok: false, text }) = view.handle_key(key(KeyCode::Char('d'))) else {
        panic!("refused");
    };
    assert_eq!(
        text,
        "only a topic, provider or target can be deleted; `pipeline.concurrency` is in [pipeline]"
    );
    view.used = vec![("targets.box.".into(), "run 20260101-000000-abcd".into())];
    select(&mut view, "targets.box.kind");
    let Some(Action::Say { ok: false, text }) = view.handle_key(key(KeyCode::Char('d'))) else {
        panic!("refused");
    };
    assert_eq!(text, "target `box` is used by run 20260101-000000-abcd");
}

#[test]
fn a_list_of_gpu_types_unsets_the_auto_limits_in_the_same_write() {
    let mut view = ProjectView::new(
        Theme::new(true),
        vec![
            entry("targets.gpu.gpu_types", "\"auto\"", Source::File),
            entry("targets.gpu.max_price_per_hour", "2.0", Source::File),
            entry("targets.gpu.min_vram_gb", "(unset)", Source::Default),
        ],
    );
    view.handle_key(key(KeyCode::Enter));
    view.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    typed(&mut view, "NVIDIA A40, NVIDIA L40S");
    assert_eq!(
        view.handle_key(key(KeyCode::Enter)),
        Some(Action::EditConfig(vec![
            Change::Set(
                "targets.gpu.gpu_types".into(),
                Value::Array(["NVIDIA A40", "NVIDIA L40S"].into_iter().collect())
            ),
            Change::Unset("targets.gpu.max_price_per_hour".into()),
        ]))
    );
}

// A long refusal is shown whole: the form grows under it at 80 columns.
#[test]
fn a_long_refusal_is_shown_whole_in_the_form() {
    let mut view = view();
    view.handle_key(key(KeyCode::Enter));
    view.handle_key(key(KeyCode::Enter));
    let error = "not saved: `topics.0.questions_per_subtopic`: missing required key (in overbrainer.toml): give it a number of at least 1 — the end of it";
    view.saved(Some(error.into()));
    let area = ratatui::layout::Rect::new(0, 0, 80, 24);
    let mut buf = ratatui::buffer::Buffer::empty(area);
    (&view).render(area, &mut buf);
    let text: String = buf
        .content()
        .iter()
        .map(ratatui::buffer::Cell::symbol)
        .collect();
    assert!(text.contains("the end of it"), "{text}");
}

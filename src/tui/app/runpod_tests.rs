use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::config::Entry;
use crate::runpod::catalog::wire::{DataCenter, DataCenterGpu, Stock};
use crate::runs::pod::preview::GpuRead;
use crate::tui::app::Kind;
use crate::tui::config_write::{ConfigNews, Shown};
use crate::tui::event::FlowEvent;
use crate::tui::tests::{ch, entry, key, snapshot_both};

fn entries(volume: Option<&str>, centers: Option<&str>) -> Vec<Entry> {
    let unset = |v: Option<&str>| v.unwrap_or("(unset)").to_owned();
    vec![
        entry("project.name", "\"demo\"", Source::File),
        entry("training.target", "\"gpu\"", Source::File),
        entry("training.base_model", "\"org/model\"", Source::File),
        entry("targets.gpu.kind", "\"runpod\"", Source::File),
        entry("targets.gpu.gpu_types", "\"auto\"", Source::File),
        entry("targets.gpu.min_vram_gb", "20", Source::File),
        entry("targets.gpu.max_price_per_hour", "(unset)", Source::Default),
        entry("targets.gpu.max_hours", "4", Source::File),
        entry(
            "targets.gpu.data_center_ids",
            &unset(centers),
            Source::Default,
        ),
        entry(
            "targets.gpu.network_volume_id",
            &unset(volume),
            Source::Default,
        ),
        entry("targets.gpu.image", "\"runpod/pytorch:2\"", Source::Default),
    ]
}

fn start_lines() -> Vec<String> {
    vec![
        "target  gpu".to_owned(),
        "model   org/model".to_owned(),
        "data    data/train.jsonl, data/eval.jsonl".to_owned(),
    ]
}

fn runpod_app(volume: Option<&str>, centers: Option<&str>) -> App {
    crate::tui::app(
        crate::tui::theme::Theme::new(false),
        entries(volume, centers),
        Ok(start_lines()),
    )
}

fn gpu_read() -> GpuRead {
    crate::tui::start_confirm::tests::read("gpu_types = \"auto\"\nmin_vram_gb = 20", Ok(23.4))
}

fn select(app: &mut App, wanted: &str) {
    app.handle_key(ch('1'));
    app.handle_key(key(KeyCode::Home));
    for _ in 0..30 {
        if app
            .project
            .selected_entry()
            .is_some_and(|e| e.key == wanted)
        {
            return;
        }
        app.handle_key(ch('j'));
    }
    panic!("`{wanted}` is not shown");
}

fn keys(app: &mut App, text: &str) -> Vec<Work> {
    let mut work = Vec::new();
    for c in text.chars() {
        let event = match c {
            '\n' => key(KeyCode::Enter),
            '\u{1b}' => key(KeyCode::Esc),
            c => KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE),
        };
        work = app.handle_key(event);
    }
    work
}

fn centers() -> Vec<DataCenter> {
    ["EU-RO-1", "US-TX-3"]
        .into_iter()
        .map(|id| DataCenter {
            id: id.into(),
            name: id.into(),
            region: "R".into(),
            gpu_availability: vec![DataCenterGpu {
                id: "H100".into(),
                availability: Stock::High,
            }],
        })
        .collect()
}

fn saved(app: &mut App, entries: Vec<Entry>) -> Vec<Work> {
    app.on_flow(FlowEvent::Config(ConfigNews::Written {
        shown: Box::new(Shown {
            entries,
            start: Ok(start_lines()),
            generation: 1,
        }),
        undo: None,
        said: "saved".into(),
    }))
}

#[test]
fn enter_on_gpu_types_reads_the_catalog_and_a_picked_list_unsets_the_auto_limits() {
    let mut app = runpod_app(None, None);
    select(&mut app, "targets.gpu.gpu_types");
    let work = app.handle_key(key(KeyCode::Enter));
    let [Work::ReadRunpod(ask)] = work.as_slice() else {
        panic!("{work:?}")
    };
    assert_eq!(ask.listing, Listing::Gpus("gpu".into()));
    assert_eq!(ask.purpose, Purpose::Picker("targets.gpu.gpu_types".into()));
    assert!(app.picker.is_none(), "opens once read");
    app.on_flow(FlowEvent::Runpod {
        ask: ask.clone(),
        read: Ok(Read::Gpus(Box::new(gpu_read()))),
    });
    assert!(app.picker.is_some());
    snapshot_both("runpod_gpu_picker", &app);
    // Toggle H100 (3rd by price after A4000 and L40S), keep it.
    let work = keys(&mut app, "jjj \n");
    let [Work::SaveConfig { changes, .. }] = work.as_slice() else {
        panic!("{work:?}")
    };
    assert_eq!(
        *changes,
        vec![
            Change::Set(
                "targets.gpu.gpu_types".into(),
                toml_edit::Value::Array(["H100"].into_iter().collect())
            ),
            Change::Unset("targets.gpu.min_vram_gb".into()),
        ]
    );
    assert!(app.picker.is_none());
}

// TUI-27, TUI-5: `?` in a picker shows the picker's own keys over it; Esc closes the
// overlay and the picker stays, its toggles kept. In the start confirmation `?` shows
// the confirmation's keys, without `t` in its pickers (picking only, TUI-44).
#[test]
fn question_mark_in_a_picker_or_the_confirmation_shows_their_keys() {
    let mut app = runpod_app(None, None);
    select(&mut app, "targets.gpu.gpu_types");
    let work = app.handle_key(key(KeyCode::Enter));
    let [Work::ReadRunpod(ask)] = work.as_slice() else {
        panic!("{work:?}")
    };
    app.on_flow(FlowEvent::Runpod {
        ask: ask.clone(),
        read: Ok(Read::Gpus(Box::new(gpu_read()))),
    });
    keys(&mut app, "j ?");
    let shown = crate::tui::tests::screen(&app, 120, 40);
    assert!(
        shown.contains("picker: keys")
            && shown.contains("J / K")
            && shown.contains("type the value instead"),
        "{shown}"
    );
    assert!(!shown.contains("switch view"), "{shown}");
    snapshot_both("runpod_picker_help", &app);
    keys(&mut app, "\u{1b}");
    let shown = crate::tui::tests::screen(&app, 120, 40);
    assert!(!shown.contains("picker: keys"), "{shown}");
    let toggled = app.picker.as_ref().map(|p| p.keys().len());
    assert!(toggled.is_some(), "the picker stays open");

    let mut app = runpod_app(None, None);
    open_confirm(&mut app);
    keys(&mut app, "?");
    let shown = crate::tui::tests::screen(&app, 120, 40);
    assert!(
        shown.contains("start confirmation: keys") && shown.contains("pick the data centers"),
        "{shown}"
    );
    keys(&mut app, "\u{1b}g?");
    let shown = crate::tui::tests::screen(&app, 120, 40);
    assert!(shown.contains("picker: keys"), "{shown}");
    assert!(!shown.contains("type the value instead"), "{shown}");
    keys(&mut app, "\u{1b}\u{1b}");
    assert!(app.picker.is_none() && app.confirm.is_some());
}

#[test]
fn a_failed_read_says_why_and_t_in_a_picker_types_the_value_instead() {
    let mut app = runpod_app(None, None);
    select(&mut app, "targets.gpu.data_center_ids");
    let work = app.handle_key(key(KeyCode::Enter));
    let [Work::ReadRunpod(ask)] = work.as_slice() else {
        panic!("{work:?}")
    };
    assert_eq!(ask.listing, Listing::DataCenters);
    app.on_flow(FlowEvent::Runpod {
        ask: ask.clone(),
        read: Err("`OVERBRAINER_RUNPOD__API_KEY` is not set".into()),
    });
    assert!(app.picker.is_none());
    assert!(
        app.message().is_some_and(|m| !m.ok
            && m.text.contains("API_KEY")
            && m.text.ends_with("; type the value instead")),
        "{:?}",
        app.message()
    );
    // Without the listing, the form opens to type the value; Esc closes it.
    assert_eq!(
        app.project.form.as_ref().map(|f| f.key.as_str()),
        Some("targets.gpu.data_center_ids")
    );
    app.handle_key(key(KeyCode::Esc));
    assert!(app.project.form.is_none());
    // An answer to a read already answered is dropped; Enter asks again.
    app.on_flow(FlowEvent::Runpod {
        ask: ask.clone(),
        read: Ok(Read::DataCenters(centers())),
    });
    assert!(app.picker.is_none());
    let work = app.handle_key(key(KeyCode::Enter));
    let [Work::ReadRunpod(ask)] = work.as_slice() else {
        panic!("{work:?}")
    };
    // A second Enter while it is read asks nothing more.
    assert!(app.handle_key(key(KeyCode::Enter)).is_empty());
    app.on_flow(FlowEvent::Runpod {
        ask: ask.clone(),
        read: Ok(Read::DataCenters(centers())),
    });
    assert!(app.picker.is_some());
    keys(&mut app, "t");
    assert!(app.picker.is_none());
    assert_eq!(
        app.project.form.as_ref().map(|f| f.key.as_str()),
        Some("targets.gpu.data_center_ids")
    );
}

#[test]
fn a_volume_brings_its_data_center_and_binds_it_while_configured() {
    let volume = |id: &str, dc: &str| NetworkVolume {
        id: id.into(),
        name: id.into(),
        size: 50,
        data_center: dc.into(),
    };
    let listing = vec![volume("vol1", "EU-RO-1"), volume("vol2", "US-TX-3")];
    let mut app = runpod_app(None, None);
    select(&mut app, "targets.gpu.network_volume_id");
    let work = app.handle_key(key(KeyCode::Enter));
    let [Work::ReadRunpod(ask)] = work.as_slice() else {
        panic!("{work:?}")
    };
    app.on_flow(FlowEvent::Runpod {
        ask: ask.clone(),
        read: Ok(Read::Volumes(listing.clone())),
    });
    let work = keys(&mut app, "jj\n");
    let [Work::SaveConfig { changes, .. }] = work.as_slice() else {
        panic!("{work:?}")
    };
    assert_eq!(
        *changes,
        vec![
            Change::Set(
                "targets.gpu.network_volume_id".into(),
                toml_edit::Value::from("vol2")
            ),
            Change::Set(
                "targets.gpu.data_center_ids".into(),
                toml_edit::Value::Array(["US-TX-3"].into_iter().collect())
            ),
        ]
    );
    saved(&mut app, entries(Some("\"vol2\""), Some("[\"US-TX-3\"]")));
    // Another data center for the volume's target is refused, naming the volume.
    let refused = app.apply(Action::EditConfig(vec![Change::Set(
        "targets.gpu.data_center_ids".into(),
        toml_edit::Value::Array(["EU-RO-1"].into_iter().collect()),
    )]));
    assert!(refused.is_empty());
    let text = app.message().map(|m| m.text.clone()).unwrap_or_default();
    assert!(
        text.contains("volume `vol2` lives in US-TX-3")
            && text.contains("choose a different volume"),
        "{text}"
    );
    // A listing that shows the configured volume elsewhere corrects data_center_ids.
    let mut app = runpod_app(Some("\"vol1\""), Some("[\"US-TX-3\"]"));
    select(&mut app, "targets.gpu.network_volume_id");
    let work = app.handle_key(key(KeyCode::Enter));
    let [Work::ReadRunpod(ask)] = work.as_slice() else {
        panic!("{work:?}")
    };
    let work = app.on_flow(FlowEvent::Runpod {
        ask: ask.clone(),
        read: Ok(Read::Volumes(listing)),
    });
    let [Work::SaveConfig { changes, .. }] = work.as_slice() else {
        panic!("{work:?}")
    };
    assert_eq!(
        *changes,
        vec![Change::Set(
            "targets.gpu.data_center_ids".into(),
            toml_edit::Value::Array(["EU-RO-1"].into_iter().collect())
        )]
    );
    assert!(
        app.message()
            .is_some_and(|m| m.text.contains("volume `vol1` lives in EU-RO-1")),
        "{:?}",
        app.message()
    );
}

fn open_confirm(app: &mut App) {
    app.handle_key(ch('4'));
    let work = app.handle_key(ch('t'));
    let [Work::ReadRunpod(ask)] = work.as_slice() else {
        panic!("{work:?}")
    };
    assert_eq!(ask.purpose, Purpose::Preview);
    assert_eq!(ask.listing, Listing::Gpus("gpu".into()));
    assert!(app.confirm.as_ref().is_some_and(|c| c.read.is_none()));
    assert!(
        app.busy(),
        "the footer's spinner turns while the catalog is read"
    );
    app.on_flow(FlowEvent::Runpod {
        ask: ask.clone(),
        read: Ok(Read::Gpus(Box::new(gpu_read()))),
    });
    assert!(!app.busy());
}

#[test]
fn t_on_a_runpod_target_shows_the_preview_and_y_without_picks_starts() {
    let mut app = runpod_app(None, None);
    open_confirm(&mut app);
    snapshot_both("runpod_start_confirmation", &app);
    let work = keys(&mut app, "y");
    assert!(
        matches!(
            work.as_slice(),
            [Work::Task {
                kind: Kind::Train,
                vram_estimate: Some(23.4),
                ..
            }]
        ),
        "{work:?}"
    );
    assert!(app.confirm.is_none());
}

/// The confirmation's catalog read of a just-opened confirmation ends with the test's
/// GPU read.
fn answer_preview(app: &mut App, work: &[Work]) {
    let [Work::ReadRunpod(ask)] = work else {
        panic!("{work:?}")
    };
    assert_eq!(ask.purpose, Purpose::Preview);
    app.on_flow(FlowEvent::Runpod {
        ask: ask.clone(),
        read: Ok(Read::Gpus(Box::new(gpu_read()))),
    });
}

// TUI-48 with TUI-43: `T` on a stopped run of a Runpod target shows the resume's
// snapshot and the catalog preview; `y` resumes it with the estimate shown.
#[test]
fn t_upper_on_a_runpod_target_confirms_the_resume_with_the_preview() {
    let mut app = runpod_app(None, None);
    crate::tui::tests::with_runs(&mut app, vec![crate::tui::tests::stopped("r_1")]);
    app.handle_key(ch('4'));
    let work = app.handle_key(ch('T'));
    answer_preview(&mut app, &work);
    let confirm = app.confirm.as_ref().expect("the start confirmation");
    assert_eq!(confirm.title(), "Resume a stopped run");
    let lines = confirm.lines().join("\n");
    assert!(
        lines.contains("Resume run r_1 in a new run?")
            && lines.contains("checkpoint-6 at step 6")
            && lines.contains("target  gpu")
            && lines.contains("23.4"),
        "{lines}"
    );
    let work = keys(&mut app, "y");
    assert!(
        matches!(
            work.as_slice(),
            [Work::Task {
                kind: Kind::Train,
                run: Some(run),
                vram_estimate: Some(23.4),
                ..
            }] if run == "r_1"
        ),
        "{work:?}"
    );
    assert!(app.confirm.is_none());
}

// TUI-38: auto mode's one confirmation shows what `t` would show on Runpod, the
// catalog preview included; `y` runs the chain.
#[test]
fn auto_mode_on_a_runpod_target_confirms_with_the_preview_then_runs_the_chain() {
    let mut app = runpod_app(None, None);
    let work = app.handle_key(ch('A'));
    answer_preview(&mut app, &work);
    let confirm = app.confirm.as_ref().expect("the start confirmation");
    assert_eq!(confirm.title(), "Auto mode?");
    let lines = confirm.lines().join("\n");
    assert!(
        lines.contains("subtopics → questions → answers → split")
            && lines.contains("starts a training run as `t` does")
            && lines.contains("23.4"),
        "{lines}"
    );
    let work = keys(&mut app, "y");
    assert!(
        matches!(
            work.as_slice(),
            [Work::Stages {
                chain: crate::tui::stages::Chain::Auto,
                ..
            }]
        ),
        "{work:?}"
    );
    assert!(app.confirm.is_none());
}

#[test]
fn g_and_c_pick_then_y_saves_first_and_starts_once_written() {
    let mut app = runpod_app(None, None);
    open_confirm(&mut app);
    keys(&mut app, "g");
    assert!(app.picker.is_some());
    // In the confirmation, `t` does not type (TUI-27).
    keys(&mut app, "t");
    assert!(app.project.form.is_none() && app.picker.is_some());
    keys(&mut app, "jjj \n");
    assert!(app.picker.is_none() && app.confirm.is_some());
    let work = keys(&mut app, "c");
    let [Work::ReadRunpod(ask)] = work.as_slice() else {
        panic!("{work:?}")
    };
    assert_eq!(
        ask.purpose,
        Purpose::ConfirmPicker("targets.gpu.data_center_ids".into())
    );
    app.on_flow(FlowEvent::Runpod {
        ask: ask.clone(),
        read: Ok(Read::DataCenters(centers())),
    });
    keys(&mut app, "jj \n");
    let lines = app
        .confirm
        .as_ref()
        .map(StartConfirm::lines)
        .unwrap_or_default()
        .join("\n");
    assert!(
        lines.contains("changed gpu_types = [\"H100\"] (was \"auto\")"),
        "{lines}"
    );
    assert!(
        lines.contains("changed data_center_ids = [\"US-TX-3\"] (was unset)"),
        "{lines}"
    );
    let work = keys(&mut app, "y");
    let [Work::SaveConfig { changes, .. }] = work.as_slice() else {
        panic!("{work:?}")
    };
    assert_eq!(
        changes.len(),
        3,
        "types, the floor unset, data centers: {changes:?}"
    );
    assert!(
        keys(&mut app, "n").is_empty(),
        "a save runs: the confirmation stays"
    );
    assert!(app.confirm.is_some());
    let work = saved(&mut app, entries(None, Some("[\"US-TX-3\"]")));
    assert!(
        matches!(
            work.as_slice(),
            [Work::Task {
                kind: Kind::Train,
                vram_estimate: Some(23.4),
                ..
            }]
        ),
        "{work:?}"
    );
    assert!(app.confirm.is_none());
}

#[test]
fn a_refused_save_starts_nothing_closes_and_says_why() {
    let mut app = runpod_app(None, None);
    open_confirm(&mut app);
    keys(&mut app, "gjjj \n");
    let work = keys(&mut app, "y");
    assert!(
        matches!(work.as_slice(), [Work::SaveConfig { .. }]),
        "{work:?}"
    );
    let work = app.on_flow(FlowEvent::Config(ConfigNews::Refused {
        error: "not saved: overbrainer.toml changed on disk".into(),
        reread: None,
        invalid: Vec::new(),
    }));
    assert!(work.is_empty(), "{work:?}");
    assert!(app.confirm.is_none());
    let text = app.message().map(|m| m.text.clone()).unwrap_or_default();
    assert!(
        text.starts_with(
            "not started: the choice was not saved (not saved: overbrainer.toml changed on disk)"
        ),
        "{text}"
    );
}

#[test]
fn g_is_refused_on_a_field_the_environment_sets() {
    let mut entries = entries(None, None);
    for e in &mut entries {
        if e.key == "targets.gpu.gpu_types" {
            e.source = Source::DotEnv {
                var: "OVERBRAINER_TARGETS__GPU__GPU_TYPES".into(),
            };
        }
    }
    let mut app = crate::tui::app(
        crate::tui::theme::Theme::new(false),
        entries,
        Ok(start_lines()),
    );
    open_confirm(&mut app);
    keys(&mut app, "g");
    assert!(app.picker.is_none());
    assert!(
        app.message().is_some_and(|m| m
            .text
            .contains("set by `OVERBRAINER_TARGETS__GPU__GPU_TYPES`")),
        "{:?}",
        app.message()
    );
}

#[test]
fn selecting_gpu_count_or_max_hours_reads_the_catalog_once_and_shows_the_hint() {
    let mut app = runpod_app(None, None);
    select(&mut app, "targets.gpu.min_vram_gb");
    let work = app.handle_key(ch('j'));
    assert!(work.is_empty(), "max_price_per_hour has no hint: {work:?}");
    let work = app.handle_key(ch('j'));
    assert_eq!(
        app.project.selected_entry().map(|e| e.key.as_str()),
        Some("targets.gpu.max_hours")
    );
    let [Work::ReadRunpod(ask)] = work.as_slice() else {
        panic!("{work:?}")
    };
    assert_eq!(ask.purpose, Purpose::Hint(0));
    assert_eq!(
        app.project.hint.as_deref(),
        Some("reading the Runpod catalog for a hint…")
    );
    app.on_flow(FlowEvent::Runpod {
        ask: ask.clone(),
        read: Ok(Read::Gpus(Box::new(gpu_read()))),
    });
    assert_eq!(
        app.project.hint.as_deref(),
        Some("up to 8 GPUs per pod on Secure Cloud; at most USD 10.76 in 4 h")
    );
    snapshot_both("runpod_max_hours_hint", &app);
    // Moving away hides it; coming back shows it without another read.
    assert!(app.handle_key(ch('j')).is_empty());
    assert_eq!(app.project.hint, None);
    assert!(app.handle_key(ch('k')).is_empty());
    assert!(app.project.hint.is_some());
    // A new configuration reads it again.
    saved(&mut app, entries(None, None));
    assert!(matches!(app.handle_key(ch('k')).as_slice(), []));
    let work = app.handle_key(ch('j'));
    assert!(
        matches!(
            work.as_slice(),
            [Work::ReadRunpod(RunpodAsk {
                purpose: Purpose::Hint(1),
                ..
            })]
        ),
        "{work:?}"
    );
}

#[test]
fn a_typed_volume_brings_its_data_center_and_a_stale_preview_is_dropped() {
    let mut app = runpod_app(None, None);
    select(&mut app, "targets.gpu.network_volume_id");
    let work = app.handle_key(key(KeyCode::Enter));
    let [Work::ReadRunpod(ask)] = work.as_slice() else {
        panic!("{work:?}")
    };
    let volumes = vec![NetworkVolume {
        id: "vol9".into(),
        name: "w".into(),
        size: 10,
        data_center: "EU-RO-1".into(),
    }];
    app.on_flow(FlowEvent::Runpod {
        ask: ask.clone(),
        read: Ok(Read::Volumes(volumes)),
    });
    // `t` types instead; the typed ID is in the listing: its data center comes along.
    keys(&mut app, "t");
    let work = keys(&mut app, "vol9\n");
    let [Work::SaveConfig { changes, .. }] = work.as_slice() else {
        panic!("{work:?}")
    };
    assert_eq!(
        *changes,
        vec![
            Change::Set(
                "targets.gpu.network_volume_id".into(),
                toml_edit::Value::from("vol9")
            ),
            Change::Set(
                "targets.gpu.data_center_ids".into(),
                toml_edit::Value::Array(["EU-RO-1"].into_iter().collect())
            ),
        ]
    );
    saved(&mut app, entries(Some("\"vol9\""), Some("[\"EU-RO-1\"]")));
    // A confirmation opened twice: the first read's answer, arriving last, is dropped.
    app.handle_key(ch('4'));
    let first = app.handle_key(ch('t'));
    keys(&mut app, "n");
    let second = app.handle_key(ch('t'));
    let ([Work::ReadRunpod(first)], [Work::ReadRunpod(second)]) =
        (first.as_slice(), second.as_slice())
    else {
        panic!("{first:?} {second:?}")
    };
    let mut stale = gpu_read();
    stale.target.gpu_count = 7;
    app.on_flow(FlowEvent::Runpod {
        ask: first.clone(),
        read: Ok(Read::Gpus(Box::new(stale))),
    });
    assert!(app.confirm.as_ref().is_some_and(|c| c.read.is_none()));
    app.on_flow(FlowEvent::Runpod {
        ask: second.clone(),
        read: Ok(Read::Gpus(Box::new(gpu_read()))),
    });
    assert!(
        app.confirm
            .as_ref()
            .is_some_and(|c| c.read.as_ref().is_some_and(Result::is_ok))
    );
    // `q` leaves the confirmation and quits (nothing runs: at once).
    keys(&mut app, "q");
    assert!(app.confirm.is_none());
    assert!(app.done());
}

#[test]
fn a_tall_confirmation_keeps_its_answers_and_warnings_at_80x24() {
    let mut app = runpod_app(None, None);
    app.handle_key(ch('4'));
    let work = app.handle_key(ch('t'));
    let [Work::ReadRunpod(ask)] = work.as_slice() else {
        panic!("{work:?}")
    };
    let mut read = crate::tui::start_confirm::tests::read(
        "gpu_types = \"auto\"\nmax_cost_usd = 0.5\ngpu_count = 2",
        Ok(23.4),
    );
    for i in 0..6 {
        read.gpus.push(crate::runpod::catalog::listing::tests::gpu(
            &format!("Extra GPU type number {i}"),
            96,
            if i == 5 {
                None
            } else {
                Some(3.0 + f64::from(i))
            },
            Stock::High,
            &[],
        ));
    }
    app.on_flow(FlowEvent::Runpod {
        ask: ask.clone(),
        read: Ok(Read::Gpus(Box::new(read))),
    });
    let screen = crate::tui::tests::screen(&app, 80, 24);
    assert!(screen.contains("y yes"), "{screen}");
    snapshot_both("runpod_start_confirmation_tall", &app);
}

#[test]
fn max_volume_gb_says_a_grow_is_permanent() {
    let mut lines = entries(Some("\"vol1\""), None);
    lines.push(entry("targets.gpu.max_volume_gb", "500", Source::File));
    let mut app = crate::tui::app(
        crate::tui::theme::Theme::new(false),
        lines,
        Ok(start_lines()),
    );
    select(&mut app, "targets.gpu.max_volume_gb");
    let hint = app.project.hint.clone().unwrap_or_default();
    assert!(
        hint.contains("a grow is permanent: the volume cannot shrink, stays billed monthly"),
        "{hint}"
    );
    assert!(
        hint.contains("every pod using it sees the new size"),
        "{hint}"
    );
}

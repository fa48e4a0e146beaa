//! The TUI without a terminal: key handling on the view structs and the app, and the
//! fixtures and snapshot helper of `screen_tests.rs`, which draws every view through
//! `TestBackend` against `insta` snapshots (the fixtures use fixed run IDs and times, so
//! nothing needs filtering).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::action::Action;
use super::app::{App, Kind, Work};
use super::event::{FlowEvent, TaskEnd};
use super::views::View as _;
use crate::config::{Entry, Source};
use crate::runs::record::{Snapshot, SnapshotReason, fixture};
use crate::runs::{RunEvent, RunRecord, State};
use crate::train::metrics::{EvalLine, TrainLine, Value};

pub(super) fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

pub(super) fn ch(c: char) -> KeyEvent {
    key(KeyCode::Char(c))
}

pub(super) fn entry(key: &str, value: &str, source: Source) -> Entry {
    Entry {
        key: key.to_owned(),
        value: value.to_owned(),
        source,
        ignored: None,
    }
}

pub(super) fn entries() -> Vec<Entry> {
    vec![
        entry("project.name", "\"demo\"", Source::File),
        entry("providers.local.protocol", "\"openai\"", Source::File),
        entry(
            "providers.local.base_url",
            "\"http://127.0.0.1:8080/v1\"",
            Source::DotEnv {
                var: "OVERBRAINER_PROVIDERS__LOCAL__BASE_URL".to_owned(),
            },
        ),
        entry(
            "providers.local.api_key",
            "set",
            Source::DotEnv {
                var: "OVERBRAINER_PROVIDERS__LOCAL__API_KEY".to_owned(),
            },
        ),
        entry("pipeline.concurrency", "8", Source::Default),
        entry("training.target", "\"local\"", Source::File),
        entry("training.base_model", "\"tiny-model\"", Source::File),
        entry("training.epochs", "1", Source::Default),
    ]
}

pub(super) fn start_lines() -> Vec<String> {
    vec![
        "target  local".to_owned(),
        "model   tiny-model".to_owned(),
        "data    data/train.jsonl, data/eval.jsonl".to_owned(),
    ]
}

pub(super) fn running(id: &str) -> RunRecord {
    let mut run = fixture(id, State::Running);
    run.job =
        Some(serde_json::from_value(serde_json::json!({"dir": "/runs/r", "pid": 4242})).unwrap());
    run
}

/// A Slurm run whose job waits in the queue of a drained node (issue 33).
pub(super) fn pending(id: &str) -> RunRecord {
    let mut run = fixture(id, State::Pending);
    run.job = Some(
        serde_json::from_value(serde_json::json!({"dir": "/runs/r", "slurm_job": 7})).unwrap(),
    );
    run.message = Some("pending on Slurm (Nodes required for job are DOWN, DRAINED)".to_owned());
    run
}

pub(super) fn stopped(id: &str) -> RunRecord {
    let mut run = fixture(id, State::Stopped);
    run.last_step = Some(6);
    run.max_steps = Some(20);
    run.snapshot = Some(Snapshot {
        checkpoint: "checkpoint-6".to_owned(),
        step: 6,
        reason: SnapshotReason::Requested,
    });
    run
}

pub(super) fn app() -> App {
    super::app(
        super::theme::Theme::new(false),
        entries(),
        Ok(start_lines()),
    )
}

pub(super) fn with_runs(app: &mut App, runs: Vec<RunRecord>) {
    let work = app.on_flow(FlowEvent::Runs(runs));
    assert!(work.is_empty());
}

pub(super) fn train_line(step: u64, loss: f64) -> RunEvent {
    #[allow(clippy::cast_precision_loss, reason = "test data")]
    RunEvent::Train(TrainLine {
        ts: 1_000.0 + step as f64 * 2.0,
        step,
        max_steps: Some(20),
        epoch: None,
        loss: Some(Value(loss)),
        learning_rate: Some(Value(1e-4 * (1.0 + (step % 5) as f64))),
        grad_norm: Some(Value(0.5 + (step % 3) as f64)),
    })
}

/// Starts a run in `app` and follows it as task 1 with a few steps and one evaluation.
pub(super) fn follow_run(app: &mut App, id: &str) -> tokio_util::sync::CancellationToken {
    let work = app.apply(Action::Start { resume_from: None });
    let [
        Work::Task {
            task,
            kind: Kind::Train,
            cancel,
            ..
        },
    ] = work.as_slice()
    else {
        panic!("{work:?}");
    };
    let task = *task;
    app.on_flow(FlowEvent::Run {
        task,
        event: Box::new(RunEvent::Following {
            run_id: id.to_owned(),
            target: "local".to_owned(),
        }),
    });
    with_runs(app, vec![stopped("20260101T000000Z-a1b2"), running(id)]);
    #[allow(clippy::cast_precision_loss, reason = "test data")]
    for step in 1..=8 {
        app.on_flow(FlowEvent::Run {
            task,
            event: Box::new(train_line(step, 2.0 - step as f64 * 0.1)),
        });
    }
    app.on_flow(FlowEvent::Run {
        task,
        event: Box::new(RunEvent::Eval(EvalLine {
            ts: 1_016.0,
            step: 8,
            eval_loss: Some(Value(1.5)),
            other: std::collections::BTreeMap::new(),
        })),
    });
    cancel.clone()
}

pub(super) fn screen(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| app.render(frame)).unwrap();
    terminal.backend().to_string()
}

pub(super) fn snapshot_both(name: &str, app: &App) {
    insta::assert_snapshot!(format!("{name}_80x24"), screen(app, 80, 24));
    insta::assert_snapshot!(format!("{name}_120x40"), screen(app, 120, 40));
}

// --- key handling ---

#[test]
fn number_keys_tab_and_back_tab_switch_views() {
    let mut app = app();
    assert_eq!(app.tab(), 0, "opens on Project");
    app.handle_key(ch('4'));
    assert_eq!(app.tab(), 3);
    app.handle_key(key(KeyCode::Tab));
    assert_eq!(app.tab(), 4);
    app.handle_key(key(KeyCode::BackTab));
    app.handle_key(key(KeyCode::BackTab));
    assert_eq!(app.tab(), 2);
    app.handle_key(ch('1'));
    app.handle_key(key(KeyCode::BackTab));
    assert_eq!(app.tab(), 5, "Shift-Tab wraps to Compare");
}

#[test]
fn a_dialog_confirms_only_on_y_and_n_esc_enter_cancel() {
    for cancel in [ch('n'), key(KeyCode::Esc), key(KeyCode::Enter)] {
        let mut app = app();
        app.handle_key(ch('4'));
        assert!(app.handle_key(ch('t')).is_empty());
        assert!(app.dialog().is_some(), "t asks first");
        assert!(
            app.handle_key(ch('x')).is_empty(),
            "another key leaves the dialog open"
        );
        assert!(app.dialog().is_some());
        assert!(
            app.handle_key(cancel).is_empty(),
            "{cancel:?} starts nothing"
        );
        assert!(app.dialog().is_none());
    }
    let mut app = app();
    app.handle_key(ch('4'));
    app.handle_key(ch('t'));
    let work = app.handle_key(ch('y'));
    assert!(
        matches!(
            work.as_slice(),
            [Work::Task {
                kind: Kind::Train,
                run: None,
                ..
            }]
        ),
        "{work:?}"
    );
}

#[test]
fn start_is_refused_without_training_and_while_one_starts() {
    let mut view = super::views::training::TrainingView::new(
        super::theme::Theme::new(false),
        Err("no `[training]`".to_owned()),
    );
    assert_eq!(
        view.handle_key(ch('t')),
        Some(Action::refuse("no `[training]`"))
    );
    let mut app = app();
    app.apply(Action::Start { resume_from: None });
    app.handle_key(ch('t'));
    assert!(app.dialog().is_none());
    assert_eq!(
        app.message().map(|m| m.text.as_str()),
        Some("a training run is starting already")
    );
}

#[test]
fn stop_cancel_and_resume_ask_only_for_runs_in_the_right_state() {
    let mut view = super::views::training::TrainingView::new(
        super::theme::Theme::new(false),
        Ok(start_lines()),
    );
    view.set_runs(vec![stopped("r-stopped"), running("r-running")]);
    assert_eq!(
        view.selected_run().map(|r| r.id.as_str()),
        Some("r-running"),
        "the newest is selected"
    );
    assert!(
        matches!(view.handle_key(ch('s')), Some(Action::Ask(d)) if *d.yes == Action::Stop("r-running".into()))
    );
    assert!(
        matches!(view.handle_key(ch('c')), Some(Action::Ask(d)) if *d.yes == Action::Cancel("r-running".into()))
    );
    assert_eq!(
        view.handle_key(ch('a')),
        Some(Action::Attach("r-running".into()))
    );
    assert!(matches!(
        view.handle_key(ch('T')),
        Some(Action::Say { ok: false, .. })
    ));
    view.handle_key(ch('k'));
    assert!(
        matches!(view.handle_key(ch('T')), Some(Action::Ask(d)) if *d.yes == Action::Start { resume_from: Some("r-stopped".into()) })
    );
    assert!(matches!(
        view.handle_key(ch('s')),
        Some(Action::Say { ok: false, .. })
    ));
    assert!(matches!(
        view.handle_key(ch('c')),
        Some(Action::Say { ok: false, .. })
    ));
}

#[test]
fn stopping_a_followed_run_detaches_its_follower_first_then_stops() {
    let mut app = app();
    let follower = follow_run(&mut app, "r-live");
    let work = app.apply(Action::Stop("r-live".into()));
    assert!(
        work.is_empty(),
        "nothing else starts before the follower detached"
    );
    assert!(follower.is_cancelled(), "the follower detaches");
    assert_eq!(app.training.busy.get("r-live"), Some(&"stopping"));
    let work = app.on_flow(FlowEvent::Ended {
        task: 1,
        end: TaskEnd::Detached(running("r-live")),
    });
    assert!(
        work.iter().any(
            |w| matches!(w, Work::Task { kind: Kind::Stop, run: Some(r), .. } if r == "r-live")
        ),
        "{work:?}"
    );
    // The stop follows the run to its end, then nothing follows it or is under way.
    app.on_flow(FlowEvent::Run {
        task: 2,
        event: Box::new(RunEvent::Following {
            run_id: "r-live".to_owned(),
            target: "local".to_owned(),
        }),
    });
    app.on_flow(FlowEvent::Ended {
        task: 2,
        end: TaskEnd::Ended(stopped("r-live")),
    });
    assert!(
        app.training.followed.is_empty(),
        "{:?}",
        app.training.followed
    );
    assert!(app.training.busy.is_empty(), "{:?}", app.training.busy);
    assert_eq!(
        app.message().map(|m| m.text.as_str()),
        Some("run r-live stopped at step 6; `T` resumes it")
    );
}

// The tmux test caught it: a resumed run was followed, but once the runs were re-read the
// selection stayed on the stopped run, because the new run was not listed yet when its
// follower began.
#[test]
fn regression_a_run_started_by_the_tui_is_selected_once_the_runs_list_has_it() {
    let mut view = super::views::training::TrainingView::new(
        super::theme::Theme::new(false),
        Ok(start_lines()),
    );
    view.set_runs(vec![stopped("r-old"), running("r-other")]);
    view.handle_key(ch('k'));
    view.select("r-new");
    assert_eq!(view.selected_run().map(|r| r.id.as_str()), Some("r-old"));
    view.set_runs(vec![stopped("r-old"), running("r-other"), running("r-new")]);
    assert_eq!(view.selected_run().map(|r| r.id.as_str()), Some("r-new"));
}

#[test]
fn quitting_detaches_followed_runs_and_never_cancels_them() {
    let mut app = app();
    let follower = follow_run(&mut app, "r-live");
    // TUI-65: a followed run makes `q` ask, saying the run goes on.
    assert!(app.handle_key(ch('q')).is_empty());
    assert!(!follower.is_cancelled());
    let dialog = app.dialog().expect("asks").clone();
    assert_eq!(*dialog.yes, Action::QuitNow);
    assert!(
        dialog
            .lines
            .iter()
            .any(|l| l.contains("r-live goes on") && l.contains("train attach r-live")),
        "{dialog:?}"
    );
    let work = app.handle_key(ch('y'));
    assert!(work.is_empty(), "no cancel or stop task");
    assert!(follower.is_cancelled());
    assert!(!app.done(), "waits for the follower to detach");
    app.on_flow(FlowEvent::Ended {
        task: 1,
        end: TaskEnd::Detached(running("r-live")),
    });
    assert!(app.done());
    assert_eq!(app.detached, vec!["r-live".to_owned()]);
}

#[test]
fn ctrl_c_quits_and_a_quit_without_tasks_ends_at_once() {
    let mut app = app();
    app.handle_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert!(app.done());
}

#[test]
fn the_help_overlay_closes_on_esc_question_mark_or_q_without_quitting() {
    for close in [key(KeyCode::Esc), ch('?'), ch('q')] {
        let mut app = app();
        app.handle_key(ch('?'));
        app.handle_key(ch('2'));
        assert_eq!(app.tab(), 0, "keys go to the overlay");
        app.handle_key(close);
        assert!(!app.done());
        app.handle_key(ch('2'));
        assert_eq!(app.tab(), 1);
    }
}

#[test]
fn a_field_set_by_the_environment_says_to_change_it_in_dotenv() {
    let mut view =
        super::views::project::ProjectView::new(super::theme::Theme::new(false), entries());
    assert_eq!(
        view.selected_entry().map(|e| e.key.as_str()),
        Some("project.name")
    );
    view.handle_key(ch('j'));
    view.handle_key(ch('j'));
    let Some(Action::Say { ok: false, text }) = view.handle_key(key(KeyCode::Enter)) else {
        panic!("Enter on an env field refuses");
    };
    assert!(
        text.contains("OVERBRAINER_PROVIDERS__LOCAL__BASE_URL") && text.contains(".env"),
        "{text}"
    );
    view.handle_key(key(KeyCode::End));
    assert_eq!(
        view.selected_entry().map(|e| e.key.as_str()),
        Some("training.epochs")
    );
    view.handle_key(key(KeyCode::Home));
    assert_eq!(
        view.selected_entry().map(|e| e.key.as_str()),
        Some("project.name")
    );
}

#[test]
fn the_logs_level_key_hides_lines_below_the_shown_level() {
    let mut app = app();
    app.log(tracing::Level::INFO, "an info line".into());
    app.log(tracing::Level::DEBUG, "a debug line".into());
    app.handle_key(ch('5'));
    let shown = screen(&app, 80, 24);
    assert!(
        shown.contains("an info line") && !shown.contains("a debug line"),
        "{shown}"
    );
    app.handle_key(ch('f'));
    let shown = screen(&app, 80, 24);
    assert!(shown.contains("a debug line"), "debug: {shown}");
    app.handle_key(ch('f'));
    app.handle_key(ch('f'));
    let shown = screen(&app, 80, 24);
    assert!(!shown.contains("an info line"), "error only: {shown}");
}

#[test]
fn x_exports_the_shown_lines_oldest_first_or_says_why_nothing_was_written() {
    let mut app = app();
    app.handle_key(ch('5'));
    assert!(app.handle_key(ch('x')).is_empty());
    assert_eq!(
        app.message().map(|m| (m.ok, m.text.as_str())),
        Some((
            false,
            "no log lines at info or more severe; no file written"
        ))
    );
    app.log(tracing::Level::WARN, "first".into());
    app.log(tracing::Level::DEBUG, "hidden".into());
    app.log(tracing::Level::INFO, "second".into());
    let work = app.handle_key(ch('x'));
    let [Work::ExportLogs(lines)] = work.as_slice() else {
        panic!("{work:?}");
    };
    assert_eq!(
        lines,
        &[" WARN first".to_owned(), " INFO second".to_owned()]
    );
}

#[test]
fn the_eta_follows_the_pace_of_the_steps_seen() {
    let mut live = super::views::training::Live::default();
    live.apply(&train_line(1, 2.0));
    assert_eq!(live.eta_seconds(), None, "one step gives no pace");
    live.apply(&train_line(5, 1.5));
    assert_eq!(live.eta_seconds(), Some(30), "2 s a step, 15 steps left");
}

#[test]
fn a_replayed_follow_draws_each_step_and_evaluation_once() {
    let mut live = super::views::training::Live::default();
    for step in 1..=3 {
        live.apply(&train_line(step, 2.0));
    }
    // An attach replays the run's lines from the start, then the new ones come.
    for step in 1..=4 {
        live.apply(&train_line(step, 2.0));
    }
    assert_eq!(live.learning_rate.len(), 4);
    assert_eq!(live.grad_norm.len(), 4);
    assert_eq!(
        live.loss.iter().map(|(x, _)| *x).collect::<Vec<_>>(),
        [1.0, 2.0, 3.0, 4.0]
    );
    assert_eq!(live.step, 4);
}

// --- screens whose snapshots are named here (see `screen_tests.rs` for the rest) ---

#[test]
fn a_terminal_below_80x24_shows_only_the_notice() {
    let app = app();
    insta::assert_snapshot!("too_small_79x24", screen(&app, 79, 24));
    insta::assert_snapshot!("too_small_100x23", screen(&app, 100, 23));
}

#[test]
fn a_config_change_is_written_once_at_a_time_then_undone_and_runs_lock_training() {
    use super::config_write::{ConfigNews, Shown, UndoPoint};
    use crate::config::edit::Change;
    let mut app = app();
    let change = vec![Change::Unset("training.epochs".into())];
    let work = app.apply(Action::EditConfig(change.clone()));
    assert!(
        matches!(work.as_slice(), [Work::SaveConfig { changes, generation: 0 }] if *changes == change),
        "{work:?}"
    );
    assert!(app.apply(Action::EditConfig(change.clone())).is_empty());
    assert!(
        app.message()
            .is_some_and(|m| !m.ok && m.text.contains("being written")),
        "{:?}",
        app.message()
    );
    assert!(
        app.apply(Action::UndoConfig).is_empty(),
        "nothing to undo yet"
    );
    let point = UndoPoint {
        before: "a".into(),
        after: "b".into(),
        keys: vec!["training.epochs".into()],
    };
    let mut shown = entries();
    shown.pop();
    app.on_flow(FlowEvent::Config(ConfigNews::Written {
        shown: Box::new(Shown {
            entries: shown,
            start: Err("no `[training]`".into()),
            generation: 1,
        }),
        undo: Some(point.clone()),
        said: "unset `training.epochs`; `u` undoes it".into(),
    }));
    assert_eq!(app.training.start, Err("no `[training]`".into()));
    assert!(
        app.message()
            .is_some_and(|m| m.ok && m.text.starts_with("unset `training.epochs`"))
    );
    let work = app.handle_key(ch('u'));
    assert!(
        matches!(work.as_slice(), [Work::UndoConfig(p)] if *p == point),
        "{work:?}"
    );
    // A run followed: the training table and its target are read-only, undo included.
    app.on_flow(FlowEvent::Config(ConfigNews::Refused {
        error: "not saved: x".into(),
        reread: None,
        invalid: Vec::new(),
    }));
    app.on_flow(FlowEvent::Config(ConfigNews::Written {
        shown: Box::new(Shown {
            entries: entries(),
            start: Ok(start_lines()),
            generation: 2,
        }),
        undo: Some(point),
        said: "saved".into(),
    }));
    app.training.followed.insert("20260101T000000Z-a1b2".into());
    assert!(app.apply(Action::UndoConfig).is_empty());
    assert_eq!(
        app.message().map(|m| m.text.as_str()),
        Some(
            "not undone: `training.epochs` is used by run 20260101T000000Z-a1b2; \
             it can change once that ends"
        )
    );
    assert!(
        app.apply(Action::EditConfig(vec![Change::Unset(
            "targets.local.runtime".into()
        )]))
        .is_empty(),
        "the training target is used too"
    );
    assert!(
        matches!(
            app.apply(Action::EditConfig(vec![Change::Unset(
                "pipeline.concurrency".into()
            )]))
            .as_slice(),
            [Work::SaveConfig { .. }]
        ),
        "other sections stay editable"
    );
}

#[test]
fn e_hands_the_file_over_unless_a_run_is_followed_or_a_write_runs() {
    let mut app = app();
    assert!(matches!(
        app.handle_key(ch('E')).as_slice(),
        [Work::EditFile]
    ));
    app.apply(Action::EditConfig(vec![
        crate::config::edit::Change::Unset("pipeline.concurrency".into()),
    ]));
    assert!(app.handle_key(ch('E')).is_empty());
    assert_eq!(
        app.message().map(|m| m.text.as_str()),
        Some("`E` must wait: a change to overbrainer.toml is being written")
    );
    let mut app = super::tests::app();
    app.training.followed.insert("20260101T000000Z-a1b2".into());
    assert!(app.handle_key(ch('E')).is_empty());
    assert_eq!(
        app.message().map(|m| m.text.as_str()),
        Some("`E` must wait: run 20260101T000000Z-a1b2 is followed")
    );
}

#[test]
fn r_opens_the_menu_whose_pick_runs_stages_one_chain_at_a_time() {
    use super::stages::{Chain, StageNews};
    use crate::pipeline::Stage;
    let mut app = app();
    assert!(app.handle_key(ch('r')).is_empty());
    assert_eq!(app.menu(), Some(0), "opens on auto");
    app.handle_key(ch('j'));
    let work = app.handle_key(key(KeyCode::Enter));
    let [Work::Stages { task, chain, .. }] = work.as_slice() else {
        panic!("{work:?}");
    };
    assert_eq!(*chain, Chain::One(Stage::Subtopics));
    let task = *task;
    assert_eq!(app.menu(), None);
    assert_eq!(app.tab(), 2, "the Pipeline view shows it");
    // TUI-64: `r`, `A`, `t` and `d` wait while it runs; TUI-18: so does `E`.
    assert!(app.handle_key(ch('r')).is_empty());
    assert!(
        app.message()
            .is_some_and(|m| m.text.contains("`subtopics` runs"))
    );
    assert!(app.apply(Action::Start { resume_from: None }).is_empty());
    assert!(app.apply(Action::EditFile).is_empty());
    // TUI-19: its roles and their providers are read-only meanwhile.
    app.handle_key(ch('1'));
    assert!(
        app.apply(Action::EditConfig(vec![
            crate::config::edit::Change::Unset("roles.generator.model".into())
        ]))
        .is_empty()
    );
    assert!(
        app.message()
            .is_some_and(|m| m.text.contains("stage `subtopics`"))
    );
    let work = app.on_flow(FlowEvent::Stage {
        task,
        news: StageNews::Finished { ok: true },
    });
    assert!(matches!(work.as_slice(), [Work::ReadDataset]), "{work:?}");
    assert_eq!(
        app.message().map(|m| m.text.as_str()),
        Some("`subtopics` done")
    );
    assert!(matches!(
        app.handle_key(ch('r')).as_slice(),
        [] if app.menu() == Some(0)
    ));
}

#[test]
fn data_is_read_every_two_seconds_while_a_stage_runs_and_its_view_is_shown() {
    let mut app = app();
    assert!(matches!(
        app.every_two_seconds().as_slice(),
        [Work::RereadConfig]
    ));
    app.apply(Action::RunChain(super::stages::Chain::Run));
    assert_eq!(app.tab(), 2);
    assert!(matches!(
        app.every_two_seconds().as_slice(),
        [Work::RereadConfig, Work::ReadDataset]
    ));
    app.handle_key(ch('4'));
    assert!(matches!(
        app.every_two_seconds().as_slice(),
        [Work::RereadConfig]
    ));
}

#[test]
fn auto_mode_asks_then_trains_once_every_stage_succeeded() {
    use super::stages::{Chain, StageNews};
    let mut app = app();
    assert!(app.apply(Action::AskAuto).is_empty());
    let dialog = app.dialog().cloned().expect("A asks");
    assert_eq!(*dialog.yes, Action::RunChain(Chain::Auto));
    assert!(
        dialog
            .lines
            .iter()
            .any(|l| l.contains("starts a training run"))
    );
    let work = app.handle_key(ch('y'));
    let [Work::Stages { task, .. }] = work.as_slice() else {
        panic!("{work:?}");
    };
    let task = *task;
    let work = app.on_flow(FlowEvent::Stage {
        task,
        news: StageNews::Finished { ok: true },
    });
    assert!(
        matches!(
            work.as_slice(),
            [
                Work::ReadDataset,
                Work::Task {
                    kind: Kind::Train,
                    run: None,
                    ..
                }
            ]
        ),
        "{work:?}"
    );
    assert_eq!(app.tab(), 3, "the Training view follows the run");
    // TUI-39: at its end, the status line names the output.
    let train = work
        .iter()
        .find_map(|w| match w {
            Work::Task { task, .. } => Some(*task),
            _ => None,
        })
        .unwrap();
    let mut record = stopped("20260101T000000Z-a1b2");
    record.state = State::Succeeded;
    record.merge = true;
    app.on_flow(FlowEvent::Ended {
        task: train,
        end: TaskEnd::Ended(record),
    });
    assert_eq!(
        app.message().map(|m| m.text.as_str()),
        Some(
            "auto: run 20260101T000000Z-a1b2 succeeded; its output is in \
             runs/20260101T000000Z-a1b2/output (merged model in \
             runs/20260101T000000Z-a1b2/output/merged)"
        )
    );
}

#[test]
fn q_asks_while_a_stage_runs_and_the_tui_ends_once_it_stopped() {
    use super::stages::{Chain, StageNews};
    let mut app = app();
    let work = app.apply(Action::RunChain(Chain::Run));
    let [Work::Stages { task, cancel, .. }] = work.as_slice() else {
        panic!("{work:?}");
    };
    let (task, cancel) = (*task, cancel.clone());
    app.handle_key(ch('q'));
    assert!(app.dialog().is_some_and(|d| *d.yes == Action::QuitNow));
    assert!(!app.done());
    app.handle_key(ch('y'));
    assert!(cancel.is_cancelled(), "the stage is interrupted");
    assert!(!app.done(), "it ends first");
    app.on_flow(FlowEvent::Stage {
        task,
        news: StageNews::Finished { ok: false },
    });
    assert!(app.done());
}

#[test]
fn ctrl_c_asks_like_q_while_a_stage_runs_and_a_second_one_quits() {
    use super::stages::StageNews;
    let mut app = app();
    let work = app.apply(Action::RunChain(super::stages::Chain::Run));
    let [Work::Stages { task, cancel, .. }] = work.as_slice() else {
        panic!("{work:?}");
    };
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    app.handle_key(ctrl_c);
    assert!(app.dialog().is_some_and(|d| *d.yes == Action::QuitNow));
    assert!(!cancel.is_cancelled());
    app.handle_key(ctrl_c);
    assert!(cancel.is_cancelled());
    app.on_flow(FlowEvent::Stage {
        task: *task,
        news: StageNews::Finished { ok: false },
    });
    assert!(app.done());
}

#[test]
fn a_dataset_write_holds_the_data_lock_and_quitting_waits_for_it() {
    let mut app = app();
    let work = app.apply(Action::DeleteData(
        crate::dataset::delete::Target::Question { id: "q1".into() },
    ));
    assert!(matches!(work.as_slice(), [Work::DeleteData(_)]));
    assert!(app.handle_key(ch('r')).is_empty());
    assert_eq!(app.menu(), None, "r waits");
    assert!(
        app.apply(Action::RunChain(super::stages::Chain::Run))
            .is_empty()
    );
    assert!(app.apply(Action::EditFile).is_empty());
    app.apply(Action::Quit);
    let dialog = app.dialog().expect("`q` asks while a write runs").clone();
    assert!(
        dialog.lines.iter().any(|l| l.contains("dataset edit")),
        "{dialog:?}"
    );
    app.apply(Action::QuitNow);
    assert!(!app.done(), "the write is waited for");
    app.on_flow(FlowEvent::DataWritten);
    assert!(app.done());
}

// TUI-57: `s` in the Logs view shows the pod log of the run selected in the Training view,
// read again every 2 s while shown; `x` exports it under its own name; `f` does not apply;
// `s` returns to overbrainer's log.
#[test]
fn s_in_the_logs_view_shows_the_selected_runs_pod_log() {
    let mut app = app();
    app.handle_key(ch('5'));
    app.handle_key(ch('s'));
    assert!(
        app.message()
            .is_some_and(|m| !m.ok && m.text.contains("select a run")),
        "{:?}",
        app.message()
    );
    with_runs(&mut app, vec![running("r-pod")]);
    let work = app.handle_key(ch('s'));
    assert!(
        matches!(work.as_slice(), [Work::ReadPodLog(run)] if run == "r-pod"),
        "{work:?}"
    );
    assert!(screen(&app, 120, 40).contains("Reading the pod log"));
    let again = app.every_two_seconds();
    assert!(
        again
            .iter()
            .any(|w| matches!(w, Work::ReadPodLog(run) if run == "r-pod"))
    );
    app.on_flow(FlowEvent::PodLog {
        run: "r-pod".into(),
        lines: Ok(vec!["2026-01-01T00:00:00Z ctr step 3".into()]),
    });
    let shown = screen(&app, 120, 40);
    assert!(
        shown.contains("pod log of run r-pod") && shown.contains("ctr step 3"),
        "{shown}"
    );
    app.handle_key(ch('f'));
    assert!(
        app.message()
            .is_some_and(|m| !m.ok && m.text.contains("does not apply"))
    );
    let work = app.handle_key(ch('x'));
    assert!(
        matches!(work.as_slice(), [Work::ExportPodLog { run, lines }] if run == "r-pod" && lines.len() == 1),
        "{work:?}"
    );
    app.handle_key(ch('s'));
    assert!(!screen(&app, 120, 40).contains("pod log of run"));
    assert!(
        !app.every_two_seconds()
            .iter()
            .any(|w| matches!(w, Work::ReadPodLog(_)))
    );
}

// An editor the shell cannot find (127) or run (126) is said so, with what to set; any
// other failure is its exit status.
#[test]
fn an_editor_that_cannot_start_says_what_to_set() {
    use std::os::unix::process::ExitStatusExt as _;
    let status = |code: i32| std::process::ExitStatus::from_raw(code << 8);
    assert!(super::not_started(status(127)) && super::not_started(status(126)));
    assert!(!super::not_started(status(1)));
    assert_eq!(
        super::editor_failed("nano-xyz", status(127)),
        "the editor `nano-xyz` was not found: set `VISUAL` or `EDITOR` to an editor on `PATH`"
    );
    assert_eq!(
        super::editor_failed("vi", status(3)),
        "the editor `vi` ended with exit status: 3"
    );
}

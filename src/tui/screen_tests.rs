//! The screens: a pending run as the Training view shows and handles it, and every view
//! drawn through `TestBackend` at 80x24 and 120x40 against `insta` snapshots, named in
//! `tests.rs`'s `snapshot_both` (the snapshots keep its module's names).

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use crossterm::event::KeyCode;

use super::action::Action;
use super::app::Work;
use super::config_write::ConfigNews;
use super::event::FlowEvent;
use super::tests::{
    app, ch, entries, follow_run, key, pending, screen, snapshot_both, start_lines, stopped,
    with_runs,
};
use super::views::View as _;
use crate::runs::RunEvent;

#[test]
fn a_pending_run_is_stopped_cancelled_and_followed_as_a_running_one() {
    let mut view = super::views::training::TrainingView::new(
        super::theme::Theme::new(false),
        Ok(start_lines()),
    );
    view.set_runs(vec![pending("r-pending")]);
    assert!(
        matches!(view.handle_key(ch('s')), Some(Action::Ask(d)) if *d.yes == Action::Stop("r-pending".into()))
    );
    assert!(
        matches!(view.handle_key(ch('c')), Some(Action::Ask(d)) if *d.yes == Action::Cancel("r-pending".into()))
    );
    assert_eq!(
        view.handle_key(ch('a')),
        Some(Action::Attach("r-pending".into()))
    );
}

#[test]
fn a_followed_run_going_pending_or_running_reads_the_runs_again() {
    let mut app = app();
    let work = app.apply(Action::Start { resume_from: None });
    let [Work::Task { task, .. }] = work.as_slice() else {
        panic!("{work:?}");
    };
    let task = *task;
    let run = |event: RunEvent| FlowEvent::Run {
        task,
        event: Box::new(event),
    };
    app.on_flow(run(RunEvent::Following {
        run_id: "r-pending".to_owned(),
        target: "cluster".to_owned(),
    }));
    let work = app.on_flow(run(RunEvent::Pending(
        "pending on Slurm (Resources)".to_owned(),
    )));
    assert!(matches!(work.as_slice(), [Work::ReadRuns]), "{work:?}");
    let work = app.on_flow(run(RunEvent::Started));
    assert!(matches!(work.as_slice(), [Work::ReadRuns]), "{work:?}");
}

#[test]
fn training_view_pending_run_snapshots() {
    let mut app = app();
    with_runs(
        &mut app,
        vec![
            stopped("20260101T000000Z-a1b2"),
            pending("20260103T000000Z-e5f6"),
        ],
    );
    app.handle_key(ch('4'));
    let shown = screen(&app, 120, 40);
    assert!(shown.contains("pending"), "{shown}");
    assert!(
        shown.contains("pending on Slurm (Nodes required"),
        "{shown}"
    );
    snapshot_both("training_pending", &app);
}

#[test]
fn project_view_snapshots() {
    let mut app = app();
    with_runs(&mut app, vec![stopped("20260101T000000Z-a1b2")]);
    snapshot_both("project", &app);
}

#[test]
fn project_stats_snapshots() {
    use crate::budget::{Spend, Summary};
    let mut app = app();
    with_runs(&mut app, vec![stopped("20260101T000000Z-a1b2")]);
    let spend = |usd, unpriced, input_tokens, output_tokens| Spend {
        usd,
        events: 3,
        unpriced,
        input_tokens,
        output_tokens,
    };
    let mut summary = Summary {
        total: spend(1.4231, 1, 12_000, 30_500),
        ..Summary::default()
    };
    summary
        .by_stage
        .insert("answers".into(), spend(1.2, 1, 9_000, 25_000));
    summary
        .by_stage
        .insert("questions".into(), spend(0.0231, 0, 3_000, 5_500));
    summary.by_stage.insert("train".into(), spend(0.2, 0, 0, 0));
    summary.by_model.insert(
        "claude/claude-sonnet-4-5".into(),
        spend(1.2, 1, 9_000, 25_000),
    );
    app.on_flow(FlowEvent::Ledger(Box::new(summary)));
    app.on_flow(FlowEvent::Dataset(dataset_listing(false)));
    snapshot_both("project_stats", &app);
}

#[test]
fn project_form_snapshots() {
    let mut app = app();
    with_runs(&mut app, Vec::new());
    // `training.epochs`, the last row: a form with the error of its last submission.
    app.handle_key(key(KeyCode::End));
    app.handle_key(key(KeyCode::Enter));
    app.handle_key(ch('x'));
    app.handle_key(key(KeyCode::Enter));
    snapshot_both("project_form_error", &app);
}

#[test]
fn project_used_and_invalid_on_disk_snapshots() {
    let mut app = app();
    with_runs(&mut app, Vec::new());
    app.apply(Action::Start { resume_from: None });
    app.handle_key(ch('1'));
    app.on_flow(FlowEvent::Config(ConfigNews::Invalid {
        problems: vec![("pipeline.concurrency".into(), "must be at least 1".into())],
    }));
    snapshot_both("project_used_invalid", &app);
}

#[test]
fn training_view_empty_snapshots() {
    let mut app = app();
    with_runs(&mut app, Vec::new());
    app.handle_key(ch('4'));
    snapshot_both("training_empty", &app);
}

#[test]
fn training_view_followed_run_snapshots() {
    let mut app = app();
    follow_run(&mut app, "20260102T000000Z-c3d4");
    app.handle_key(ch('4'));
    snapshot_both("training_followed", &app);
}

#[test]
fn training_view_stopped_run_and_resume_dialog_snapshots() {
    let mut app = app();
    with_runs(&mut app, vec![stopped("20260101T000000Z-a1b2")]);
    app.handle_key(ch('4'));
    snapshot_both("training_stopped", &app);
    app.handle_key(ch('T'));
    snapshot_both("training_resume_dialog", &app);
}

#[test]
fn training_view_refusal_message_snapshots() {
    let mut app = app();
    with_runs(&mut app, vec![stopped("20260101T000000Z-a1b2")]);
    app.handle_key(ch('4'));
    app.handle_key(ch('s'));
    snapshot_both("training_refused", &app);
}

/// A compare as `compare.json` gives it: an honest judge, two topics, two losses.
fn listed(compare_id: &str, conclusive: bool, calibrated: bool) -> crate::compare::listing::Listed {
    use crate::compare::listing::{Listed, Loss, TopicLine};
    Listed {
        run_id: "20260101T000000Z-a1b2".into(),
        compare_id: compare_id.into(),
        judge: "judge/judge-model".into(),
        calibrated,
        calibration: calibrated.then(|| {
            "preferred the parent's answer over a clearly worse one, in both orders, in 4 of 4 control pairs".to_owned()
        }),
        conclusive,
        min_consistency: 0.6,
        consistency: "100.0% [61.0%, 100.0%] (6 of 6)".into(),
        consistent_wins: "33.3% [9.7%, 70.0%] (2 of 6)".into(),
        win_or_tie: "50.0% [18.8%, 81.2%] (3 of 6)".into(),
        win_or_tie_rate: Some(0.5),
        flips: (0, 0),
        latency_p50: Some(1.25),
        child_cost_per_1000: None,
        topics: vec![
            TopicLine {
                topic: "rust".into(),
                counts: (2, 1, 0),
                win_or_tie: "100.0% [43.9%, 100.0%] (3 of 3)".into(),
            },
            TopicLine {
                topic: "geography".into(),
                counts: (0, 0, 3),
                win_or_tie: "0.0% [0.0%, 56.1%] (0 of 3)".into(),
            },
        ],
        losses: vec![
            Loss {
                id: "q4".into(),
                topic: "geography".into(),
                reason: "The parent names the right capital.".into(),
            },
            Loss {
                id: "q5".into(),
                topic: "geography".into(),
                reason: "the child did not answer".into(),
            },
        ],
    }
}

#[test]
fn compare_view_snapshots() {
    let mut app = app();
    // The older one: a judge that always answers "A", judged with `--skip-calibration`.
    let mut biased = listed("compare_20260101-000000", false, false);
    biased.consistency = "0.0% [0.0%, 39.0%] (0 of 6)".into();
    biased.consistent_wins = "n/a (0 of 0)".into();
    biased.win_or_tie = "100.0% [61.0%, 100.0%] (6 of 6)".into();
    biased.flips = (6, 0);
    app.on_flow(FlowEvent::Compares(vec![
        listed("compare_20260102-000000", true, true),
        biased,
    ]));
    app.handle_key(ch('6'));
    snapshot_both("compare_list", &app);
    // `j` selects the older one: inconclusive and uncalibrated, said first.
    app.handle_key(ch('j'));
    snapshot_both("compare_inconclusive", &app);
}

/// A dataset as `dataset::listing::list` reads it: two questions of topic Rust, one
/// answered, one answer of Rust whose question is gone, one question of the topic Go no
/// longer configured, one bad line.
fn dataset_listing(errors: bool) -> crate::dataset::listing::Listing {
    use crate::dataset::listing::{FileCount, Listing, Row};
    let count = |name, records| FileCount { name, records };
    Listing {
        files: vec![
            count("subtopics.jsonl", Some(2)),
            count("questions.jsonl", Some(2)),
            count("answers.jsonl", Some(1)),
            count("train.jsonl", None),
            count("eval.jsonl", None),
        ],
        subtopics: vec![
            crate::dataset::SubtopicRecord {
                topic: "Rust".into(),
                subtopic: "Ownership".into(),
            },
            crate::dataset::SubtopicRecord {
                topic: "Rust".into(),
                subtopic: "Traits".into(),
            },
        ],
        orphaned_topics: std::iter::once("Go".to_owned()).collect(),
        orphaned_answers: std::iter::once(("Rust".to_owned(), 1)).collect(),
        split: std::collections::BTreeMap::new(),
        rows: vec![
            Row {
                id: "q-3f2a9c".into(),
                topic: "Rust".into(),
                subtopic: "Ownership".into(),
                question: "What does the borrow checker prevent?".into(),
                answer: Some(
                    "Two mutable references to one value at once,\nand use after free.".into(),
                ),
                reasoning: Some("The question asks what the checker rules out.".into()),
                meta: Some(crate::dataset::AnswerMeta {
                    model: "qwen3-235b".into(),
                    input_tokens: 41,
                    output_tokens: 96,
                    finish_reason: Some("stop".into()),
                    reasoning_kind: None,
                    excluded: None,
                    edited: false,
                }),
                excluded: None,
                orphaned: false,
            },
            Row {
                id: "q-77b1e0".into(),
                topic: "Rust".into(),
                subtopic: "Traits".into(),
                question: "When is a trait object needed?".into(),
                answer: None,
                reasoning: None,
                meta: None,
                excluded: None,
                orphaned: false,
            },
            Row {
                id: "q-0c41d8".into(),
                topic: "Go".into(),
                subtopic: "Channels".into(),
                question: "When does a send on a channel block?".into(),
                answer: None,
                reasoning: None,
                meta: None,
                excluded: None,
                orphaned: true,
            },
        ],
        errors: if errors {
            vec!["data/answers.jsonl line 2: expected value at line 1 column 1".into()]
        } else {
            Vec::new()
        },
    }
}

#[test]
fn dataset_view_snapshots() {
    let mut app = app();
    app.handle_key(ch('2'));
    app.on_flow(FlowEvent::Dataset(crate::dataset::listing::list(
        &crate::dataset::DataFiles::new(std::path::Path::new("/nonexistent/data")),
        &["rust"],
    )));
    snapshot_both("dataset_empty", &app);
    app.handle_key(ch('3'));
    snapshot_both("pipeline_empty", &app);
    app.handle_key(ch('2'));
    app.on_flow(FlowEvent::Dataset(dataset_listing(false)));
    snapshot_both("dataset_topics", &app);
    // Open the topic and its first subtopic, select the answered question.
    for c in ['l', 'j', 'l', 'j'] {
        app.handle_key(ch(c));
    }
    snapshot_both("dataset_tree", &app);
    app.handle_key(ch(']'));
    app.handle_key(ch('s'));
    snapshot_both("dataset_reasoning_and_stats", &app);
    app.handle_key(ch('j'));
    app.on_flow(FlowEvent::Dataset(dataset_listing(true)));
    snapshot_both("dataset_unreadable", &app);
    app.handle_key(ch('/'));
    for c in "zzz".chars() {
        app.handle_key(ch(c));
    }
    snapshot_both("dataset_filter_empty", &app);
    app.handle_key(super::tests::key(crossterm::event::KeyCode::Esc));
    assert!(!app.view_typing(), "Esc ends the typing");
    app.handle_key(ch('3'));
    snapshot_both("pipeline_read", &app);
}

#[test]
fn pipeline_chain_and_menu_snapshots() {
    use super::stages::{Chain, StageNews};
    use crate::pipeline::{Event, Progress, Stage};
    let mut app = app();
    app.on_flow(FlowEvent::Dataset(dataset_listing(false)));
    app.handle_key(ch('r'));
    snapshot_both("menu", &app);
    app.handle_key(key(KeyCode::Esc));
    let work = app.apply(Action::RunChain(Chain::Auto));
    let [Work::Stages { task, .. }] = work.as_slice() else {
        panic!("{work:?}");
    };
    let task = *task;
    let news = [
        StageNews::Began(Stage::Subtopics),
        StageNews::Ended {
            stage: Stage::Subtopics,
            ok: true,
            line: "subtopics: 2 done, 0 skipped, 0 failed, 6 added, 120 input tokens, 300 output tokens, $0.0012".into(),
            error: None,
        },
        StageNews::Began(Stage::Questions),
        StageNews::Event(Event::Started {
            stage: Stage::Questions,
            total: 6,
            skipped: 2,
        }),
        StageNews::Event(Event::Progress {
            stage: Stage::Questions,
            progress: Progress {
                done: 3,
                failed: 1,
                in_flight: 2,
                retrying: 1,
                input_tokens: 900,
                output_tokens: 1500,
                ..Progress::default()
            },
        }),
        StageNews::Event(Event::ItemFailed {
            stage: Stage::Questions,
            item: "rust/ownership".into(),
            reason: "HTTP 500 after 3 retries".into(),
        }),
    ];
    for news in news {
        app.on_flow(FlowEvent::Stage { task, news });
    }
    snapshot_both("pipeline_auto_running", &app);
}

#[test]
fn an_orphaned_question_shows_its_marker_and_why() {
    let mut app = app();
    app.handle_key(ch('2'));
    app.on_flow(FlowEvent::Dataset(dataset_listing(false)));
    // Go is the second topic: open it and its subtopic, select its question.
    for c in ['j', 'l', 'j', 'l', 'j'] {
        app.handle_key(ch(c));
    }
    snapshot_both("dataset_orphaned", &app);
    // The topic Go itself can be deleted, with all it holds.
    app.handle_key(ch('h'));
    app.handle_key(ch('h'));
    app.handle_key(ch('h'));
    app.handle_key(ch('d'));
    snapshot_both("dataset_delete_orphaned_topic", &app);
    let work = app.handle_key(ch('y'));
    assert!(
        matches!(work.as_slice(), [Work::DeleteData(crate::dataset::delete::Target::Topic { topic })] if topic == "Go"),
        "{work:?}"
    );
}

#[test]
fn other_views_snapshots() {
    let mut app = app();
    for (n, name) in [
        ('2', "dataset"),
        ('3', "pipeline"),
        ('5', "logs_empty"),
        ('6', "compare"),
    ] {
        app.handle_key(ch(n));
        snapshot_both(name, &app);
    }
    app.log(
        tracing::Level::WARN,
        "cannot reach target `gpu` (1/5): refused".into(),
    );
    app.log(
        tracing::Level::INFO,
        "train: following run 20260102T000000Z-c3d4".into(),
    );
    app.handle_key(ch('5'));
    snapshot_both("logs", &app);
}

#[test]
fn help_overlay_snapshots() {
    let mut app = app();
    app.handle_key(ch('4'));
    app.handle_key(ch('?'));
    snapshot_both("help_training", &app);
}

// TUI-5: a key a view gives its own meaning is listed once in `?`, with the view's;
// `?` over the `r` menu or a question shows their keys, and Esc returns to them.
#[test]
fn help_lists_each_key_once_and_covers_the_menu_and_questions() {
    let mut app = app();
    app.handle_key(ch('3'));
    app.handle_key(ch('?'));
    let shown = screen(&app, 120, 40);
    assert!(
        shown.contains("run a stage") && shown.contains("reload"),
        "{shown}"
    );
    assert!(
        !shown.contains("menu: auto, each stage, run") && !shown.contains("re-read the runs"),
        "{shown}"
    );
    assert!(shown.contains("switch view"), "{shown}");
    app.handle_key(key(KeyCode::Esc));
    app.handle_key(ch('r'));
    app.handle_key(ch('?'));
    let shown = screen(&app, 120, 40);
    assert!(
        shown.contains("menu: keys") && shown.contains("run it"),
        "{shown}"
    );
    app.handle_key(key(KeyCode::Esc));
    assert!(!screen(&app, 120, 40).contains("menu: keys"));
    app.handle_key(key(KeyCode::Esc));
    app.handle_key(ch('4'));
    app.handle_key(ch('t'));
    assert!(screen(&app, 120, 40).contains("Start a training run"));
    app.handle_key(ch('?'));
    assert!(screen(&app, 120, 40).contains("question: keys"));
    app.handle_key(key(KeyCode::Esc));
    let shown = screen(&app, 120, 40);
    assert!(shown.contains("Start a training run") && !shown.contains("question: keys"));
}

#[test]
fn no_color_draws_no_colours() {
    let mut app = super::app(super::theme::Theme::new(true), entries(), Ok(start_lines()));
    follow_run(&mut app, "r-live");
    app.handle_key(ch('4'));
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    terminal.draw(|frame| app.render(frame)).unwrap();
    let buffer = terminal.backend().buffer();
    assert!(
        buffer
            .content()
            .iter()
            .all(|cell| cell.fg == ratatui::style::Color::Reset
                && cell.bg == ratatui::style::Color::Reset),
        "a cell has a colour under NO_COLOR"
    );
}

// Issue 20: the footer shows the ledger's spend against the cap once the flows read it.
#[test]
fn the_footer_shows_the_spend_against_the_cap_once_read() {
    let mut app = app();
    assert!(
        !screen(&app, 120, 40).contains("of $"),
        "no spend before it is read"
    );
    let work = app.on_flow(FlowEvent::Spend(super::components::footer::SpendShown {
        total: crate::budget::Spend {
            usd: 4.25,
            events: 4,
            unpriced: 3,
            ..crate::budget::Spend::default()
        },
        max_usd: Some(5.0),
        warn_at: 0.8,
    }));
    assert!(work.is_empty());
    let shown = screen(&app, 120, 40);
    let last = shown.lines().last().unwrap_or_default();
    assert!(last.contains("! $4.2500 of $5.0000 +3 unpriced"), "{shown}");
}

#[test]
fn the_dataset_and_pipeline_views_read_data_again_whenever_shown() {
    let mut app = app();
    let work = app.handle_key(ch('2'));
    assert!(matches!(work.as_slice(), [Work::ReadDataset]), "{work:?}");
    let work = app.handle_key(ch('2'));
    assert!(work.is_empty(), "{work:?}");
    let work = app.handle_key(ch('3'));
    assert!(matches!(work.as_slice(), [Work::ReadDataset]), "{work:?}");
    let work = app.handle_key(ch('4'));
    assert!(work.is_empty(), "{work:?}");
}

#[test]
fn d_asks_with_the_dependents_per_file_and_y_deletes_through_the_blocking_pool() {
    use crate::dataset::delete::Target;
    let mut app = app();
    app.handle_key(ch('2'));
    app.on_flow(FlowEvent::Dataset(dataset_listing(false)));
    app.handle_key(ch('d'));
    assert!(app.dialog().is_none(), "a topic is not deleted by `d`");
    assert!(app.message().is_some_and(|m| !m.ok));
    // The subtopic Ownership: one question, answered.
    app.handle_key(ch('l'));
    app.handle_key(ch('j'));
    app.handle_key(ch('d'));
    snapshot_both("dataset_delete_subtopic", &app);
    let work = app.handle_key(ch('y'));
    assert!(
        matches!(work.as_slice(), [Work::DeleteData(Target::Subtopic { topic, subtopic })]
            if topic == "Rust" && subtopic == "Ownership"),
        "{work:?}"
    );
    // The deletion holds the data lock until it is written.
    assert!(app.handle_key(ch('d')).is_empty());
    assert!(app.dialog().is_none() || app.handle_key(ch('y')).is_empty());
    app.on_flow(FlowEvent::DataWritten);
    // The unanswered question of Traits: `D` refuses, `d` asks.
    for c in ['j', 'l', 'j'] {
        app.handle_key(ch(c));
    }
    app.handle_key(ch('D'));
    assert!(app.dialog().is_none());
    app.handle_key(ch('d'));
    snapshot_both("dataset_delete_question", &app);
    let work = app.handle_key(ch('y'));
    assert!(
        matches!(work.as_slice(), [Work::DeleteData(Target::Question { id })] if id == "q-77b1e0"),
        "{work:?}"
    );
}

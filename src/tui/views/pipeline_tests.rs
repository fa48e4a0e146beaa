use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;

fn ended(stage: Stage, ok: bool, line: &str, error: Option<&str>) -> StageNews {
    StageNews::Ended {
        stage,
        ok,
        line: line.into(),
        error: error.map(str::to_owned),
    }
}

fn marks(view: &PipelineView) -> Vec<(Stage, Mark)> {
    view.chain
        .as_ref()
        .map(|c| c.rows.iter().map(|r| (r.stage, r.mark)).collect())
        .unwrap_or_default()
}

#[test]
fn a_chain_marks_each_stage_as_its_news_come_and_names_the_one_that_stopped_it() {
    let mut view = new(Theme::new(true));
    assert!(!view.running());
    view.begin(Chain::Run);
    assert!(view.running());
    view.apply(&StageNews::Began(Stage::Subtopics));
    assert_eq!(view.current(), Some(Stage::Subtopics));
    view.apply(&StageNews::Event(Event::Started {
        stage: Stage::Subtopics,
        total: 4,
        skipped: 1,
    }));
    view.apply(&StageNews::Event(Event::Progress {
        stage: Stage::Subtopics,
        progress: Progress {
            done: 2,
            in_flight: 1,
            ..Progress::default()
        },
    }));
    let row = &view.chain.as_ref().unwrap().rows[0];
    assert_eq!((row.total, row.progress.done), (Some((4, 1)), 2));
    view.apply(&ended(Stage::Subtopics, true, "subtopics: 3 done", None));
    view.apply(&StageNews::Began(Stage::Questions));
    // `questions` completes subtopics first: that line is the subtopics row's.
    view.apply(&ended(Stage::Subtopics, true, "subtopics: 1 done", None));
    assert_eq!(view.current(), Some(Stage::Questions));
    for n in 0..5 {
        view.apply(&StageNews::Event(Event::ItemFailed {
            stage: Stage::Questions,
            item: format!("rust/{n}"),
            reason: "HTTP 500".into(),
        }));
    }
    view.apply(&ended(
        Stage::Questions,
        false,
        "questions: 2 done, 5 failed [failed]",
        None,
    ));
    view.apply(&StageNews::Finished { ok: false });
    assert!(!view.running());
    assert_eq!(
        marks(&view),
        [
            (Stage::Subtopics, Mark::Done),
            (Stage::Questions, Mark::Failed),
            (Stage::Answers, Mark::Waiting),
            (Stage::Split, Mark::Waiting),
        ]
    );
    let rows = &view.chain.as_ref().unwrap().rows;
    assert_eq!(rows[0].lines, ["subtopics: 3 done", "subtopics: 1 done"]);
    assert_eq!(rows[1].failures.len(), FAILURES_SHOWN, "the last few");
    assert_eq!(rows[1].failures[0], "rust/2: HTTP 500");
    assert_eq!(
        view.failure(),
        Some((
            "questions".to_owned(),
            "questions: 2 done, 5 failed [failed]".to_owned()
        ))
    );
}

#[test]
fn one_stage_keeps_the_subtopics_line_its_questions_completed() {
    let mut view = new(Theme::new(true));
    view.begin(Chain::One(Stage::Questions));
    view.apply(&StageNews::Began(Stage::Questions));
    view.apply(&ended(Stage::Subtopics, true, "subtopics: 1 done", None));
    view.apply(&ended(Stage::Questions, true, "questions: 4 done", None));
    view.apply(&StageNews::Finished { ok: true });
    let row = &view.chain.as_ref().unwrap().rows[0];
    assert_eq!(row.lines, ["subtopics: 1 done", "questions: 4 done"]);
    assert_eq!(row.mark, Mark::Done);
    assert_eq!(view.failure(), None);
}

#[test]
fn c_asks_before_cancelling_a_running_chain_and_a_asks_for_auto_mode() {
    let key = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
    let mut view = new(Theme::new(true));
    assert!(matches!(
        view.handle_key(key('c')),
        Some(Action::Say { ok: false, .. })
    ));
    assert_eq!(view.handle_key(key('A')), Some(Action::AskAuto));
    view.begin(Chain::Auto);
    view.apply(&StageNews::Began(Stage::Answers));
    let Some(Action::Ask(dialog)) = view.handle_key(key('c')) else {
        panic!("c asks");
    };
    assert_eq!(*dialog.yes, Action::CancelStages);
    assert!(
        dialog.lines[0].contains("`answers` stops"),
        "{:?}",
        dialog.lines
    );
}

#[test]
fn the_bar_fills_with_the_items_done() {
    assert_eq!(bar(fraction(0, 4)), "░".repeat(20));
    assert_eq!(
        bar(fraction(1, 4)),
        format!("{}{}", "█".repeat(5), "░".repeat(15))
    );
    assert_eq!(bar(fraction(4, 4)), "█".repeat(20));
    assert_eq!(bar(fraction(0, 0)), "█".repeat(20), "nothing to do is done");
}

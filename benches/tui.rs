//! Redraw speed of the TUI (issue 17): the Training view at 120x40 following a run with
//! 10,000 loss points, 100 eval points and their learning-rate and grad-norm series (the
//! chart downsamples to two points per column). Target: a redraw under 2 ms. Draws into a
//! ratatui `Buffer` as the terminal backend would before diffing. Run with
//! `cargo bench --bench tui`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use overbrainer::runs::{RunEvent, RunRecord};
use overbrainer::train::metrics::{EvalLine, TrainLine, Value};
use overbrainer::tui::action::Action;
use overbrainer::tui::app::Work;
use overbrainer::tui::event::FlowEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

const POINTS: u64 = 10_000;
const ROUNDS: usize = 500;

fn main() {
    let mut app = overbrainer::tui::app(
        overbrainer::tui::theme::Theme::new(false),
        Vec::new(),
        Ok(vec!["target  local".to_owned()]),
    );
    let work = app.apply(Action::Start { resume_from: None });
    let Some(Work::Task { task, .. }) = work.first() else {
        panic!("no task");
    };
    let task = *task;
    let id = "20260101T000000Z-bench";
    let run = |event| FlowEvent::Run {
        task,
        event: Box::new(event),
    };
    app.on_flow(run(RunEvent::Following {
        run_id: id.to_owned(),
        target: "local".to_owned(),
    }));
    let record: RunRecord = serde_json::from_value(serde_json::json!({
        "id": id, "created": "2026-01-01T00:00:00Z", "target": "local", "target_kind": "local",
        "dir": "/runs/bench", "owner": "bench", "state": "running", "snapshots": true,
        "job": {"dir": "/runs/bench", "pid": 4242}
    }))
    .unwrap();
    app.on_flow(FlowEvent::Runs(vec![record]));
    #[allow(clippy::cast_precision_loss, reason = "bench data")]
    for step in 1..=POINTS {
        let x = step as f64;
        app.on_flow(run(RunEvent::Train(TrainLine {
            ts: 1_000.0 + x,
            step,
            max_steps: Some(POINTS),
            epoch: Some(Value(x / POINTS as f64)),
            loss: Some(Value(2.0 / (1.0 + x / 500.0) + (x * 0.37).sin() * 0.05)),
            learning_rate: Some(Value(1e-4 * (1.0 - x / POINTS as f64))),
            grad_norm: Some(Value(0.5 + (x * 0.11).cos().abs())),
        })));
        if step % 100 == 0 {
            app.on_flow(run(RunEvent::Eval(EvalLine {
                ts: 1_000.0 + x,
                step,
                eval_loss: Some(Value(2.1 / (1.0 + x / 500.0))),
                other: std::collections::BTreeMap::new(),
            })));
        }
    }
    app.handle_key(KeyEvent::new(KeyCode::Char('4'), KeyModifiers::NONE));
    let area = Rect::new(0, 0, 120, 40);
    let mut times = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let mut buf = Buffer::empty(area);
        let start = Instant::now();
        app.draw(area, &mut buf);
        times.push(start.elapsed());
        std::hint::black_box(&buf);
    }
    times.sort();
    let total: Duration = times.iter().sum();
    let mean = total / u32::try_from(ROUNDS).unwrap();
    println!(
        "tui redraw 120x40, {POINTS} loss points: mean {:.3} ms, median {:.3} ms, p99 {:.3} ms, max {:.3} ms (target < 2 ms)",
        mean.as_secs_f64() * 1e3,
        times[ROUNDS / 2].as_secs_f64() * 1e3,
        times[ROUNDS * 99 / 100].as_secs_f64() * 1e3,
        times[ROUNDS - 1].as_secs_f64() * 1e3,
    );
}

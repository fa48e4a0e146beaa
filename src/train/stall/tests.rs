//! Table tests of the stall detector: each row a sequence of metric lines (with the time
//! the follower read them) and ticks (with whether the job lives), and what each gives.

use super::*;
use crate::train::metrics::{MetricReader, Parsed};

/// One input of a row, at a follower time in seconds.
enum In {
    /// A metric line (JSON, as the plugin writes it).
    Line(String),
    /// A tick; the job's process group lives or not.
    Tick(bool),
    /// The job waits in a scheduler's queue.
    Queued,
}

fn train(step: u64, ts: u64) -> In {
    In::Line(format!(
        r#"{{"kind": "train", "ts": {ts}, "step": {step}, "max_steps": 100, "loss": 1.0}}"#
    ))
}

fn line(text: &str) -> In {
    In::Line(text.to_owned())
}

const ALIVE: In = In::Tick(true);
const DEAD: In = In::Tick(false);

struct Row {
    name: &'static str,
    bounds: Bounds,
    /// `(seconds, input, what it gives)`: `-` for nothing, `stalled after S step N
    /// silent X bound B` or `resumed N`.
    steps: Vec<(u64, In, &'static str)>,
}

fn label(change: Option<Change>) -> String {
    match change {
        None => "-".to_owned(),
        Some(Change::Stalled(stall)) => format!(
            "stalled step {} silent {} bound {}",
            stall
                .last_step
                .map_or_else(|| "none".to_owned(), |s| s.step.to_string()),
            stall.silent.as_secs(),
            stall.bound.as_secs()
        ),
        Some(Change::Resumed(step)) => format!(
            "resumed {}",
            step.map_or_else(|| "eval".to_owned(), |s| s.to_string())
        ),
    }
}

fn fixed(seconds: u64) -> Bounds {
    Bounds {
        fixed: Some(Duration::from_secs(seconds)),
        ..Bounds::default()
    }
}

#[allow(clippy::too_many_lines, reason = "one table")]
fn rows() -> Vec<Row> {
    let real = Bounds::default();
    let steady: Vec<(u64, In, &'static str)> =
        (1..=3).map(|n| (9 + n, train(n, 1000 + n), "-")).collect();
    vec![
        Row {
            name: "no step within the first-step bound: stalled once, with no step",
            bounds: real,
            steps: vec![
                (0, ALIVE, "-"),
                (1799, ALIVE, "-"),
                (1800, ALIVE, "stalled step none silent 1800 bound 1800"),
                (1900, ALIVE, "-"),
            ],
        },
        Row {
            name: "the train stage line starts the first-step window again",
            bounds: real,
            steps: vec![
                (0, ALIVE, "-"),
                (
                    100,
                    line(r#"{"kind": "stage", "ts": 5, "stage": "train"}"#),
                    "-",
                ),
                (1800, ALIVE, "-"),
                (1900, ALIVE, "stalled step none silent 1800 bound 1800"),
            ],
        },
        Row {
            name: "a job waiting in the queue starts no clock: the first-step window opens when it runs",
            bounds: real,
            steps: vec![
                (0, In::Queued, "-"),
                (1800, In::Queued, "-"),
                (5000, In::Queued, "-"),
                (5001, ALIVE, "-"),
                (6800, ALIVE, "-"),
                (6801, ALIVE, "stalled step none silent 1800 bound 1800"),
            ],
        },
        Row {
            name: "a job put back in the queue starts its silence afresh when it runs again",
            bounds: real,
            steps: vec![
                (0, ALIVE, "-"),
                (100, In::Queued, "-"),
                (3000, In::Queued, "-"),
                (3001, ALIVE, "-"),
                (4800, ALIVE, "-"),
                (4801, ALIVE, "stalled step none silent 1800 bound 1800"),
            ],
        },
        Row {
            name: "a job whose process group is gone never stalls",
            bounds: real,
            steps: vec![(0, ALIVE, "-"), (5000, DEAD, "-"), (9000, DEAD, "-")],
        },
        Row {
            name: "one step and no step time yet: the first-step bound still",
            bounds: real,
            steps: vec![
                (10, train(1, 1000), "-"),
                (1809, ALIVE, "-"),
                (1810, ALIVE, "stalled step 1 silent 1800 bound 1800"),
            ],
        },
        Row {
            name: "fast steps: the 10-minute floor",
            bounds: real,
            steps: steady
                .into_iter()
                .chain([
                    (611, ALIVE, "-"),
                    (612, ALIVE, "stalled step 3 silent 600 bound 600"),
                ])
                .collect(),
        },
        Row {
            name: "slow steps: 20 times the median step time",
            bounds: real,
            steps: vec![
                (0, train(1, 0), "-"),
                (60, train(2, 60), "-"),
                (120, train(3, 120), "-"),
                (180, train(4, 180), "-"),
                (1379, ALIVE, "-"),
                (1380, ALIVE, "stalled step 4 silent 1200 bound 1200"),
            ],
        },
        Row {
            name: "the median is robust: one long step (a checkpoint save) does not move it",
            bounds: real,
            steps: vec![
                (0, train(1, 0), "-"),
                (60, train(2, 60), "-"),
                (120, train(3, 120), "-"),
                (1000, train(4, 1000), "-"),
                (1060, train(5, 1060), "-"),
                (2259, ALIVE, "-"),
                (2260, ALIVE, "stalled step 5 silent 1200 bound 1200"),
            ],
        },
        Row {
            name: "step times come from the lines' ts: a late follower reads them all at once",
            bounds: real,
            steps: vec![
                (0, train(1, 0), "-"),
                (0, train(2, 100), "-"),
                (0, train(3, 200), "-"),
                (1999, ALIVE, "-"),
                (2000, ALIVE, "stalled step 3 silent 2000 bound 2000"),
            ],
        },
        Row {
            name: "evaluation lines are progress",
            bounds: real,
            steps: vec![
                (10, train(1, 0), "-"),
                (11, train(2, 1), "-"),
                (
                    500,
                    line(r#"{"kind": "eval_progress", "ts": 490, "step": 1, "total": 9}"#),
                    "-",
                ),
                (
                    1000,
                    line(r#"{"kind": "eval", "ts": 990, "step": 2, "eval_loss": 1.0}"#),
                    "-",
                ),
                (1599, ALIVE, "-"),
                (1600, ALIVE, "stalled step 2 silent 600 bound 600"),
            ],
        },
        Row {
            name: "a set stall_minutes is the bound whatever the step time",
            bounds: fixed(300),
            steps: vec![
                (0, train(1, 0), "-"),
                (60, train(2, 60), "-"),
                (359, ALIVE, "-"),
                (360, ALIVE, "stalled step 2 silent 300 bound 300"),
            ],
        },
        Row {
            name: "progress after a stall resumes it, and a second stall is reported again",
            bounds: real,
            steps: vec![
                (10, train(1, 0), "-"),
                (11, train(2, 1), "-"),
                (700, ALIVE, "stalled step 2 silent 689 bound 600"),
                (800, ALIVE, "-"),
                (900, train(3, 890), "resumed 3"),
                (1400, ALIVE, "-"),
                (1600, ALIVE, "stalled step 3 silent 700 bound 600"),
            ],
        },
        Row {
            name: "after the end line, a snapshot line or a merge stage nothing is watched",
            bounds: real,
            steps: vec![
                (10, train(1, 0), "-"),
                (11, line(r#"{"kind": "end", "ts": 1, "step": 1}"#), "-"),
                (9000, ALIVE, "-"),
                (9001, train(2, 2), "-"),
                (99_000, ALIVE, "-"),
            ],
        },
        Row {
            name: "a merge stage line ends the watch, even mid-stall",
            bounds: real,
            steps: vec![
                (10, train(1, 0), "-"),
                (11, train(2, 1), "-"),
                (700, ALIVE, "stalled step 2 silent 689 bound 600"),
                (
                    701,
                    line(r#"{"kind": "stage", "ts": 700, "stage": "merge"}"#),
                    "-",
                ),
                (9000, ALIVE, "-"),
            ],
        },
    ]
}

#[test]
fn the_stall_detector_follows_its_table() {
    for row in rows() {
        let mut detector = Detector::new(row.bounds);
        let mut reader = MetricReader::new();
        for (index, (at, input, expected)) in row.steps.into_iter().enumerate() {
            let at = Duration::from_secs(at);
            let change = match input {
                In::Line(text) => match reader.parse(&text) {
                    Parsed::Line(line) => detector.line(at, &line),
                    other => panic!("{}: {other:?}", row.name),
                },
                In::Tick(alive) => detector.tick(at, alive),
                In::Queued => {
                    detector.queued();
                    None
                }
            };
            assert_eq!(label(change), expected, "{}: input {index}", row.name);
        }
    }
}

#[test]
fn a_slow_but_progressing_job_is_never_flagged() {
    // Steps of 15 minutes each (longer than the 10-minute floor), ticks every 10 s.
    let mut detector = Detector::new(Bounds::default());
    let mut reader = MetricReader::new();
    for step in 1..=20_u64 {
        let at = step * 900;
        for tick in (at - 900..at).step_by(10) {
            assert_eq!(label(detector.tick(Duration::from_secs(tick), true)), "-");
        }
        let In::Line(text) = train(step, at) else {
            unreachable!()
        };
        let Parsed::Line(line) = reader.parse(&text) else {
            panic!("{text}")
        };
        assert_eq!(label(detector.line(Duration::from_secs(at), &line)), "-");
    }
    assert_eq!(detector.median_step(), Some(Duration::from_secs(900)));
    assert_eq!(detector.bound(), Duration::from_secs(18_000));
    assert!(!detector.stalled());
}

#[test]
fn the_rules_durations_scale_and_a_measured_step_time_does_not() {
    let scale = TimeScale::with_second(Duration::from_millis(10));
    let bounds = Policy::default().bounds(scale);
    assert_eq!(bounds.floor, Duration::from_secs(6));
    assert_eq!(bounds.first_step, Duration::from_secs(18));
    assert_eq!(bounds.fixed, None);
    let set = Policy {
        stall_minutes: Some(2.5),
        ..Policy::default()
    };
    assert_eq!(set.bounds(scale).fixed, Some(Duration::from_millis(1500)));
    // 20 x a 1 s step (real, measured) beats the scaled 6 s floor.
    assert_eq!(
        bounds.bound(3, Some(Duration::from_secs(1))),
        Duration::from_secs(20)
    );
    assert_eq!(Bounds::default().floor, Duration::from_secs(600));
    assert_eq!(Bounds::default().first_step, Duration::from_secs(1800));
}

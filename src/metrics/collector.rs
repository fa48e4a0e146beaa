//! What the endpoint serves, fed by the same typed events the front ends render: the
//! counters seeded from the history (MET-7) and moved by the stage events (MET-8, MET-9,
//! MET-18, MET-19), the training, phase, target and GPU gauges of the runs followed
//! (MET-10, MET-11, MET-13, MET-14), removed once nothing follows a run; those run
//! gauges are `collector/runs.rs`'s.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use prometheus_client::registry::Registry;

use super::families::{
    Families, FloatGauge, StageLabel, StageModel, StageResult, Tokens, VersionLabel,
};
use super::spend::Spend;
use crate::history::{Detail, HistoryLine};
use crate::pipeline::{Event, Progress, Stage};

mod runs;

const STAGES: [Stage; 4] = [
    Stage::Subtopics,
    Stage::Questions,
    Stage::Answers,
    Stage::Split,
];

/// One follower of runs in this command (a `follow` of the command line, a TUI pane).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Follower(u64);

/// The metrics of one command: the families, their registry and what the events left.
#[derive(Debug)]
pub struct Metrics {
    families: Families,
    registry: Registry,
    state: Mutex<State>,
    /// Held by each change and by each scrape, so a scrape sees a change whole (the step
    /// and the loss of one metric line, all series of a sample).
    update: Mutex<()>,
}

#[derive(Debug, Default)]
struct State {
    /// The last counters of each stage since its `Started`.
    seen: HashMap<Stage, Progress>,
    /// The run each follower follows now.
    following: HashMap<Follower, String>,
    /// The runs followed, with what they have series of.
    runs: HashMap<String, Followed>,
    next_follower: u64,
}

#[derive(Debug, Default)]
struct Followed {
    followers: usize,
    mounts: BTreeSet<String>,
    gpus: BTreeSet<(String, String)>,
}

fn stage_result(stage: &str, result: &str) -> StageResult {
    StageResult {
        stage: stage.to_owned(),
        result: result.to_owned(),
    }
}

fn stage_label(stage: Stage) -> StageLabel {
    StageLabel {
        stage: stage.name().to_owned(),
    }
}

/// Sets `gauge` to `value`; an infinite value, which OpenMetrics cannot carry as this
/// encoder writes it, leaves no series.
fn set<L: Clone + std::hash::Hash + Eq>(
    family: &prometheus_client::metrics::family::Family<L, FloatGauge>,
    labels: &L,
    value: f64,
) {
    if value.is_infinite() {
        family.remove(labels);
    } else {
        family.get_or_create(labels).set(value);
    }
}

#[allow(
    clippy::cast_precision_loss,
    reason = "byte counts as Prometheus floats"
)]
fn float(value: u64) -> f64 {
    value as f64
}

impl Metrics {
    /// The families registered, `overbrainer_build_info{version}` at 1 (MET-20), every
    /// stage's `overbrainer_stage_running` at 0 (MET-19), the retries at 0 (MET-8) and,
    /// with `spend`, the Runpod spend computed at each scrape (MET-12).
    #[must_use]
    pub fn new(version: &str, spend: Option<Spend>) -> Self {
        let families = Families::default();
        let mut registry = Registry::default();
        families.register(&mut registry);
        if let Some(spend) = spend {
            registry.register_collector(Box::new(spend));
        }
        families
            .build_info
            .get_or_create(&VersionLabel {
                version: version.to_owned(),
            })
            .set(1);
        for stage in STAGES {
            let _ = families
                .stage_running
                .get_or_create_owned(&stage_label(stage));
            let _ = families.retries.get_or_create_owned(&stage_label(stage));
            for result in ["done", "skipped", "failed"] {
                let _ = families
                    .stage_items
                    .get_or_create_owned(&stage_result(stage.name(), result));
            }
        }
        let _ = families
            .stage_items
            .get_or_create_owned(&stage_result(Stage::Answers.name(), "excluded"));
        Self {
            families,
            registry,
            state: Mutex::new(State::default()),
            update: Mutex::new(()),
        }
    }

    fn update(&self) -> std::sync::MutexGuard<'_, ()> {
        self.update
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The endpoint's text: OpenMetrics 1.0, ending with `# EOF` (MET-4).
    #[must_use]
    pub fn encode(&self) -> String {
        let _whole = self.update();
        let mut text = String::with_capacity(8192);
        // Writing to a `String` cannot fail; a collector's error leaves what was written.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }

    /// Adds every line of the history to the counters (MET-7): items by result, tokens
    /// and known cost under the line's stage and model.
    pub fn seed(&self, lines: &[HistoryLine]) {
        let _whole = self.update();
        let f = &self.families;
        for line in lines {
            for (result, n) in [
                ("done", line.done),
                ("skipped", line.skipped),
                ("failed", line.failed),
                ("excluded", line.excluded),
            ] {
                if n > 0 {
                    f.stage_items
                        .get_or_create(&stage_result(&line.stage, result))
                        .inc_by(n);
                }
            }
            if let Detail::Provider {
                model,
                input_tokens,
                output_tokens,
                cost_usd,
                ..
            } = &line.detail
            {
                self.spent(&line.stage, model, *input_tokens, *output_tokens, *cost_usd);
            }
        }
    }

    fn spent(&self, stage: &str, model: &str, input: u64, output: u64, cost: Option<f64>) {
        let f = &self.families;
        for (direction, n) in [("in", input), ("out", output)] {
            f.tokens
                .get_or_create(&Tokens {
                    stage: stage.to_owned(),
                    model: model.to_owned(),
                    direction: direction.to_owned(),
                })
                .inc_by(n);
        }
        if let Some(usd) = cost.filter(|usd| usd.is_finite() && *usd >= 0.0) {
            f.cost
                .get_or_create(&StageModel {
                    stage: stage.to_owned(),
                    model: model.to_owned(),
                })
                .inc_by(usd);
        }
    }

    /// Takes in one stage event (MET-8, MET-9, MET-18, MET-19).
    pub fn stage_event(&self, event: &Event) {
        let _whole = self.update();
        let f = &self.families;
        match event {
            Event::Started { stage, skipped, .. } => {
                self.state().seen.insert(*stage, Progress::default());
                for other in STAGES {
                    f.stage_running
                        .get_or_create(&stage_label(other))
                        .set(i64::from(other == *stage));
                }
                if *skipped > 0 {
                    f.stage_items
                        .get_or_create(&stage_result(stage.name(), "skipped"))
                        .inc_by(*skipped);
                }
            }
            Event::Progress { stage, progress } => {
                let before = {
                    let mut state = self.state();
                    let before = state.seen.get(stage).copied().unwrap_or_default();
                    state.seen.insert(*stage, *progress);
                    before
                };
                // Counters that went down belong to a new tracker: all of it is new.
                let delta = |now: u64, then: u64| if now >= then { now - then } else { now };
                for (result, now, then) in [
                    ("done", progress.done, before.done),
                    ("failed", progress.failed, before.failed),
                    ("excluded", progress.excluded, before.excluded),
                ] {
                    let n = delta(now, then);
                    if n > 0 {
                        f.stage_items
                            .get_or_create(&stage_result(stage.name(), result))
                            .inc_by(n);
                    }
                }
                let retries = delta(progress.retries, before.retries);
                if retries > 0 {
                    f.retries
                        .get_or_create(&stage_label(*stage))
                        .inc_by(retries);
                }
            }
            Event::Spent {
                stage,
                model,
                input_tokens,
                output_tokens,
                cost_usd,
            } => self.spent(
                stage.name(),
                model,
                *input_tokens,
                *output_tokens,
                *cost_usd,
            ),
            Event::Warning(_) | Event::Waiting { .. } | Event::ItemFailed { .. } => {}
        }
    }

    /// A judge request of `compare` settled: its tokens and known cost count under stage
    /// `compare` with the judge's model (MET-9).
    pub fn judge_spent(&self, model: &str, usage: crate::llm::Usage, cost_usd: Option<f64>) {
        let _whole = self.update();
        self.spent(
            "compare",
            model,
            usage.input_tokens,
            usage.output_tokens,
            cost_usd,
        );
    }

    /// `split` began: its running gauge reads 1, every other stage's 0 (MET-19).
    pub fn split_started(&self) {
        let _whole = self.update();
        for other in STAGES {
            self.families
                .stage_running
                .get_or_create(&stage_label(other))
                .set(i64::from(other == Stage::Split));
        }
    }

    /// `split` ended: its counts (which it reports only at its end) and its running gauge.
    pub fn split_ended(&self, report: &crate::pipeline::split::SplitReport) {
        let _whole = self.update();
        let f = &self.families;
        let counts = &report.total;
        for (result, n) in [
            ("done", counts.train + counts.eval),
            ("excluded", counts.excluded_total()),
        ] {
            if n > 0 {
                f.stage_items
                    .get_or_create(&stage_result(Stage::Split.name(), result))
                    .inc_by(n);
            }
        }
        self.end_stage(Stage::Split);
    }

    /// `stage` ended: its `overbrainer_stage_running` reads 0.
    pub fn stage_ended(&self, stage: Stage) {
        let _whole = self.update();
        self.end_stage(stage);
    }

    fn end_stage(&self, stage: Stage) {
        self.families
            .stage_running
            .get_or_create(&stage_label(stage))
            .set(0);
        self.state().seen.remove(&stage);
    }

    /// No stage runs any more in this process.
    pub fn stages_idle(&self) {
        let _whole = self.update();
        for stage in STAGES {
            self.end_stage(stage);
        }
    }
}

#[cfg(test)]
#[path = "collector_tests.rs"]
mod tests;

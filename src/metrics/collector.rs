//! What the endpoint serves, fed by the same typed events the front ends render: the
//! counters seeded from the history (MET-7) and moved by the stage events (MET-8, MET-9,
//! MET-18, MET-19), the training, phase, target and GPU gauges of the runs followed
//! (MET-10, MET-11, MET-13, MET-14), removed once nothing follows a run.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::UNIX_EPOCH;

use prometheus_client::registry::Registry;

use super::families::{
    Families, FloatGauge, PHASES, RunGpu, RunGpuName, RunLabel, RunMount, RunPhase, StageLabel,
    StageModel, StageResult, Tokens, VersionLabel,
};
use super::spend::Spend;
use crate::history::{Detail, HistoryLine};
use crate::pipeline::{Event, Progress, Stage};
use crate::runs::RunEvent;
use crate::system::{DiskRole, Sample};
use crate::train::phase::Phase;

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

    /// A new follower of runs.
    pub fn follower(&self) -> Follower {
        let mut state = self.state();
        state.next_follower += 1;
        Follower(state.next_follower)
    }

    /// Takes in one event of the run `follower` follows (MET-10, MET-11, MET-13).
    pub fn run_event(&self, follower: Follower, event: &RunEvent) {
        let _whole = self.update();
        if let RunEvent::Following { run_id, .. } = event {
            self.follow(follower, run_id);
            return;
        }
        let Some(run_id) = self.state().following.get(&follower).cloned() else {
            return;
        };
        let f = &self.families;
        let run = RunLabel {
            run_id: run_id.clone(),
        };
        match event {
            RunEvent::Phase(phase) => self.phase(&run_id, *phase),
            RunEvent::Train(line) => {
                f.train_step
                    .get_or_create(&run)
                    .set(i64::try_from(line.step).unwrap_or(i64::MAX));
                if let Some(max) = line.max_steps {
                    f.train_max_steps
                        .get_or_create(&run)
                        .set(i64::try_from(max).unwrap_or(i64::MAX));
                }
                if let Some(loss) = line.loss {
                    set(&f.train_loss, &run, loss.0);
                }
                if let Some(lr) = line.learning_rate {
                    set(&f.learning_rate, &run, lr.0);
                }
            }
            RunEvent::Eval(line) => {
                if let Some(loss) = line.eval_loss {
                    set(&f.eval_loss, &run, loss.0);
                }
            }
            RunEvent::Sample(sample) => self.sample(&run_id, sample),
            RunEvent::Following { .. }
            | RunEvent::JobLog(_)
            | RunEvent::Warning(_)
            | RunEvent::Pod(_)
            | RunEvent::Scheduler(_)
            | RunEvent::Pending(_)
            | RunEvent::Started => {}
        }
    }

    fn phase(&self, run_id: &str, phase: Phase) {
        let current = match phase {
            Phase::Starting => None,
            Phase::Training => Some("training"),
            Phase::Evaluating { .. } => Some("evaluating"),
            Phase::FinalEvaluation { .. } | Phase::Saving => Some("finalizing"),
            Phase::Merging => Some("merging"),
            Phase::Exporting => Some("exporting"),
            Phase::Retrieving => Some("retrieving"),
        };
        for name in PHASES {
            self.families
                .train_phase
                .get_or_create(&RunPhase {
                    run_id: run_id.to_owned(),
                    phase: name.to_owned(),
                })
                .set(i64::from(current == Some(name)));
        }
    }

    fn follow(&self, follower: Follower, run_id: &str) {
        let previous = self.state().following.insert(follower, run_id.to_owned());
        match previous {
            Some(previous) if previous == run_id => return,
            Some(previous) => self.release(&previous),
            None => {}
        }
        self.state()
            .runs
            .entry(run_id.to_owned())
            .or_default()
            .followers += 1;
        self.phase(run_id, Phase::Starting);
    }

    /// `follower` follows nothing any more; the series of a run nothing else follows go.
    pub fn unfollow(&self, follower: Follower) {
        let _whole = self.update();
        let previous = self.state().following.remove(&follower);
        if let Some(previous) = previous {
            self.release(&previous);
        }
    }

    fn release(&self, run_id: &str) {
        let gone = {
            let mut state = self.state();
            let Some(run) = state.runs.get_mut(run_id) else {
                return;
            };
            run.followers = run.followers.saturating_sub(1);
            if run.followers > 0 {
                return;
            }
            state.runs.remove(run_id)
        };
        let f = &self.families;
        let run = RunLabel {
            run_id: run_id.to_owned(),
        };
        f.train_step.remove(&run);
        f.train_max_steps.remove(&run);
        f.train_loss.remove(&run);
        f.eval_loss.remove(&run);
        f.learning_rate.remove(&run);
        for name in PHASES {
            f.train_phase.remove(&RunPhase {
                run_id: run_id.to_owned(),
                phase: name.to_owned(),
            });
        }
        if let Some(mut gone) = gone {
            self.clear_target(run_id, &mut gone);
        }
    }

    /// Removes the target and GPU series of `run_id`.
    fn clear_target(&self, run_id: &str, run: &mut Followed) {
        let f = &self.families;
        let label = RunLabel {
            run_id: run_id.to_owned(),
        };
        for family in [
            &f.cpu_usage,
            &f.cpu_load1,
            &f.cpus,
            &f.memory_used,
            &f.memory_limit,
            &f.sample_timestamp,
        ] {
            family.remove(&label);
        }
        for mount in std::mem::take(&mut run.mounts) {
            let labels = RunMount {
                run_id: run_id.to_owned(),
                mount,
            };
            f.disk_used.remove(&labels);
            f.disk_size.remove(&labels);
        }
        for (gpu, name) in std::mem::take(&mut run.gpus) {
            let labels = RunGpu {
                run_id: run_id.to_owned(),
                gpu: gpu.clone(),
            };
            for family in [
                &f.gpu_utilization,
                &f.gpu_memory_used,
                &f.gpu_memory_total,
                &f.gpu_temperature,
                &f.gpu_power,
                &f.gpu_power_limit,
            ] {
                family.remove(&labels);
            }
            f.gpu_info.remove(&RunGpuName {
                run_id: run_id.to_owned(),
                gpu,
                name,
            });
        }
    }

    /// A system sample (SYS-1): the run's target and GPU series become exactly what it
    /// reports (MET-14): a figure it lacks has no series, a network file system none, `/`
    /// only when it is not the run directory's file system.
    fn sample(&self, run_id: &str, sample: &Sample) {
        let mut before = {
            let mut state = self.state();
            let Some(run) = state.runs.get_mut(run_id) else {
                return;
            };
            Followed {
                followers: 0,
                mounts: std::mem::take(&mut run.mounts),
                gpus: std::mem::take(&mut run.gpus),
            }
        };
        self.clear_target(run_id, &mut before);
        let mut run = Followed::default();
        let f = &self.families;
        let label = RunLabel {
            run_id: run_id.to_owned(),
        };
        if let Ok(at) = sample.at.duration_since(UNIX_EPOCH) {
            set(&f.sample_timestamp, &label, at.as_secs_f64());
        }
        if let Some(cpu) = &sample.cpu {
            for (family, value) in [
                (&f.cpu_usage, cpu.usage),
                (&f.cpu_load1, cpu.load1),
                (&f.cpus, cpu.cpus),
            ] {
                if let Some(value) = value {
                    set(family, &label, value);
                }
            }
        }
        if let Some(memory) = &sample.memory {
            set(&f.memory_used, &label, float(memory.used_bytes));
            set(&f.memory_limit, &label, float(memory.limit_bytes));
        }
        let run_mount = sample.run_disk().map(|disk| disk.mount.clone());
        for disk in &sample.disks {
            let same_as_run =
                disk.role == DiskRole::Root && run_mount.as_ref() == Some(&disk.mount);
            if disk.shared || same_as_run {
                continue;
            }
            let labels = RunMount {
                run_id: run_id.to_owned(),
                mount: disk.mount.clone(),
            };
            set(&f.disk_used, &labels, float(disk.used_bytes));
            set(&f.disk_size, &labels, float(disk.size_bytes));
            run.mounts.insert(disk.mount.clone());
        }
        for gpu in &sample.gpus {
            let index = gpu.index.to_string();
            let labels = RunGpu {
                run_id: run_id.to_owned(),
                gpu: index.clone(),
            };
            for (family, value) in [
                (&f.gpu_utilization, gpu.utilization),
                (&f.gpu_memory_used, gpu.memory_used_bytes.map(float)),
                (&f.gpu_memory_total, gpu.memory_total_bytes.map(float)),
                (&f.gpu_temperature, gpu.temperature_celsius),
                (&f.gpu_power, gpu.power_watts),
                (&f.gpu_power_limit, gpu.power_limit_watts),
            ] {
                if let Some(value) = value {
                    set(family, &labels, value);
                }
            }
            f.gpu_info
                .get_or_create(&RunGpuName {
                    run_id: run_id.to_owned(),
                    gpu: index.clone(),
                    name: gpu.name.clone(),
                })
                .set(1);
            run.gpus.insert((index, gpu.name.clone()));
        }
        let mut state = self.state();
        if let Some(slot) = state.runs.get_mut(run_id) {
            slot.mounts = run.mounts;
            slot.gpus = run.gpus;
        }
    }
}

#[cfg(test)]
#[path = "collector_tests.rs"]
mod tests;

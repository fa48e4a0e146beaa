//! Stall detection by training progress, not idleness (issue 21): a pure state machine.
//! Metric lines come in with the time the follower read them, and the clock ticks with
//! whether the job's process group lives; out comes "stalled at T" with the last step
//! and the UTC time of its line, or "progressing again".
//!
//! A job is stalled when its process group lives but no new training step, evaluation
//! or evaluation progress line arrived for the bound: `training.stall_minutes` when set,
//! else the larger of 10 minutes and 20 times the median step time seen so far. Before
//! the first step the bound is `stall_first_step_minutes` (model loading, compilation),
//! counted from the job's `train` stage line or from the first tick that saw the job
//! alive; until two steps give a step time, the larger of that and the 10 minutes. A job
//! that waits in a scheduler's queue (a pending Slurm job) is not alive yet: no silence
//! counts while it waits, and a job put back in the queue starts its silence afresh
//! when it runs again (issue 33).
//! Step times are the differences of consecutive `train` lines' `ts` (the job's own
//! clock), so a follower that attaches late and reads the whole file at once knows them;
//! silences are measured on the follower's clock. Only the training loop is watched:
//! after its `end` line, a `snapshot` line, or a `merge` or `export` stage line there is
//! no step to wait for. The rule's durations (the floor, the first-step bound, a set
//! `stall_minutes`) are on the test-only [`TimeScale`]; a measured step time is what it
//! is.

mod median;

use std::time::Duration;

pub use median::RunningMedian;

use super::metrics::{MetricLine, Stage};
use crate::config::{OnStall, Training};
use crate::env::TimeScale;

/// The least stall bound when `training.stall_minutes` is unset: 10 minutes.
pub const FLOOR_MINUTES: f64 = 10.0;

/// How many median step times make the bound when `training.stall_minutes` is unset.
pub const MEDIAN_FACTOR: u32 = 20;

/// What `[training]` says about stalls, in rule minutes (not yet on a time scale).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    /// `training.stall_minutes`.
    pub stall_minutes: Option<f64>,
    /// `training.stall_first_step_minutes`.
    pub first_step_minutes: f64,
    /// `training.on_stall`.
    pub on_stall: OnStall,
}

impl Default for Policy {
    /// The defaults: the adaptive bound, 30 minutes for the first step, `warn`.
    fn default() -> Self {
        Self {
            stall_minutes: None,
            first_step_minutes: 30.0,
            on_stall: OnStall::Warn,
        }
    }
}

impl Policy {
    /// The policy of `[training]`; the defaults without one.
    #[must_use]
    pub fn of(training: Option<&Training>) -> Self {
        training.map_or_else(Self::default, |t| Self {
            stall_minutes: t.stall_minutes,
            first_step_minutes: t.stall_first_step_minutes,
            on_stall: t.on_stall,
        })
    }

    /// The bounds on `scale`.
    #[must_use]
    pub fn bounds(&self, scale: TimeScale) -> Bounds {
        let minutes = |m: f64| scale.scale(Duration::from_secs_f64(m.max(0.0) * 60.0));
        Bounds {
            fixed: self.stall_minutes.map(minutes),
            floor: minutes(FLOOR_MINUTES),
            factor: MEDIAN_FACTOR,
            first_step: minutes(self.first_step_minutes),
        }
    }
}

/// The stall bounds, already on the time scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// `training.stall_minutes`, when set: the bound whatever the step time.
    pub fixed: Option<Duration>,
    /// The least bound when it is unset (10 minutes).
    pub floor: Duration,
    /// How many median step times make the bound when it is unset (20).
    pub factor: u32,
    /// The bound before the first step.
    pub first_step: Duration,
}

impl Default for Bounds {
    /// The default policy in real time.
    fn default() -> Self {
        Policy::default().bounds(TimeScale::REAL)
    }
}

impl Bounds {
    /// The bound after `steps` training lines whose median step time is `median`.
    #[must_use]
    pub fn bound(&self, steps: u64, median: Option<Duration>) -> Duration {
        if steps == 0 {
            return self.first_step;
        }
        if let Some(fixed) = self.fixed {
            return fixed;
        }
        match median {
            Some(median) => self.floor.max(median.saturating_mul(self.factor)),
            None => self.floor.max(self.first_step),
        }
    }
}

/// The last training step seen: its number and the `ts` of its line (UTC seconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LastStep {
    /// Optimizer step.
    pub step: u64,
    /// UTC seconds of its line, the job's clock.
    pub ts: f64,
}

/// A stall, as declared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stall {
    /// When (the follower's clock).
    pub at: Duration,
    /// The last training step before it, when there was one.
    pub last_step: Option<LastStep>,
    /// How long no progress line had come.
    pub silent: Duration,
    /// The bound that silence passed.
    pub bound: Duration,
}

/// A change the detector reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Change {
    /// The job stalled.
    Stalled(Stall),
    /// A stalled job made progress again, at this step (`None`: an evaluation line).
    Resumed(Option<u64>),
}

/// What part of the job's life the detector watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Watch {
    /// No step yet: the first-step bound.
    Starting,
    /// The training loop.
    Training,
    /// After the loop: nothing to wait for.
    Over,
}

/// The stall detector of one followed job.
#[derive(Debug, Clone)]
pub struct Detector {
    bounds: Bounds,
    watch: Watch,
    /// Start of the current silence: the last progress line's arrival, or the start of
    /// the first-step window.
    since: Option<Duration>,
    last_step: Option<LastStep>,
    steps: u64,
    step_times: RunningMedian,
    stalled: bool,
}

impl Detector {
    /// A detector under `bounds` that has seen nothing.
    #[must_use]
    pub fn new(bounds: Bounds) -> Self {
        Self {
            bounds,
            watch: Watch::Starting,
            since: None,
            last_step: None,
            steps: 0,
            step_times: RunningMedian::default(),
            stalled: false,
        }
    }

    /// The bound in effect now.
    #[must_use]
    pub fn bound(&self) -> Duration {
        self.bounds.bound(self.steps, self.step_times.median())
    }

    /// Whether the job is stalled now.
    #[must_use]
    pub fn stalled(&self) -> bool {
        self.stalled
    }

    /// The median step time so far.
    #[must_use]
    pub fn median_step(&self) -> Option<Duration> {
        self.step_times.median()
    }

    /// The last training step seen.
    #[must_use]
    pub fn last_step(&self) -> Option<LastStep> {
        self.last_step
    }

    /// A metric line read at `at`.
    pub fn line(&mut self, at: Duration, line: &MetricLine) -> Option<Change> {
        match line {
            MetricLine::Stage {
                stage: Stage::Train,
                ..
            } => {
                if self.watch == Watch::Starting {
                    self.since = Some(at);
                }
                None
            }
            MetricLine::Stage { .. } | MetricLine::End { .. } | MetricLine::Snapshot { .. } => {
                self.watch = Watch::Over;
                self.stalled = false;
                None
            }
            MetricLine::Train(train) if self.watch != Watch::Over => {
                // The step that ends a declared stall took the stall's time: no step time.
                if let (Some(previous), false) = (self.last_step, self.stalled) {
                    let seconds = train.ts - previous.ts;
                    if train.step > previous.step && seconds.is_finite() && seconds >= 0.0 {
                        self.step_times.push(Duration::from_secs_f64(seconds));
                    }
                }
                self.last_step = Some(LastStep {
                    step: train.step,
                    ts: train.ts,
                });
                self.steps += 1;
                self.watch = Watch::Training;
                self.progress(at, Some(train.step))
            }
            MetricLine::Eval(_) | MetricLine::EvalProgress { .. } if self.watch != Watch::Over => {
                self.progress(at, None)
            }
            MetricLine::Train(_) | MetricLine::Eval(_) | MetricLine::EvalProgress { .. } => None,
        }
    }

    fn progress(&mut self, at: Duration, step: Option<u64>) -> Option<Change> {
        self.since = Some(at);
        if self.stalled {
            self.stalled = false;
            return Some(Change::Resumed(step));
        }
        None
    }

    /// The job waits in a scheduler's queue (issue 33): no silence counts until a tick
    /// sees it alive, so a job put back in the queue after it ran (a requeue) starts
    /// its silence afresh then. Nothing is declared while it waits.
    pub fn queued(&mut self) {
        if self.watch != Watch::Over {
            self.since = None;
        }
    }

    /// The clock at `at`, with whether the job's process group lives: a stall once the
    /// silence passed the bound (reported once per stall).
    pub fn tick(&mut self, at: Duration, alive: bool) -> Option<Change> {
        if !alive || self.watch == Watch::Over {
            return None;
        }
        let since = *self.since.get_or_insert(at);
        let silent = at.saturating_sub(since);
        let bound = self.bound();
        if self.stalled || silent < bound {
            return None;
        }
        self.stalled = true;
        Some(Change::Stalled(Stall {
            at,
            last_step: self.last_step,
            silent,
            bound,
        }))
    }
}

#[cfg(test)]
mod tests;

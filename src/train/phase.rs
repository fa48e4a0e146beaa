//! The phase of a run as its follower sees it, derived from the metric lines
//! (spec/training.md, MPL-7, RUN-18). A pure state machine: lines in, phase lines out.

use std::fmt;

use super::metrics::{MetricLine, Stage};

/// What a run is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Nothing seen yet.
    Starting,
    /// The training loop runs.
    Training,
    /// A mid-training evaluation, `done` of `total` batches (total unknown: `None`).
    Evaluating {
        /// Batches done.
        done: u64,
        /// Batches in all.
        total: Option<u64>,
    },
    /// The final evaluation after the training loop.
    FinalEvaluation {
        /// Batches done.
        done: u64,
        /// Batches in all.
        total: Option<u64>,
    },
    /// Axolotl saves the model after the loop.
    Saving,
    /// `axolotl merge-lora`.
    Merging,
    /// The GGUF export.
    Exporting,
    /// The follower downloads the results.
    Retrieving,
}

impl Phase {
    fn kind(self) -> u8 {
        match self {
            Self::Starting => 0,
            Self::Training => 1,
            Self::Evaluating { .. } => 2,
            Self::FinalEvaluation { .. } => 3,
            Self::Saving => 4,
            Self::Merging => 5,
            Self::Exporting => 6,
            Self::Retrieving => 7,
        }
    }

    /// The tenth of an evaluation's progress (0..=10), or `None` outside evaluations or
    /// when the total is unknown.
    fn tenth(self) -> Option<u64> {
        match self {
            Self::Evaluating {
                done,
                total: Some(total),
            }
            | Self::FinalEvaluation {
                done,
                total: Some(total),
            } if total > 0 => Some(done.min(total) * 10 / total),
            _ => None,
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let progress = |done: u64, total: Option<u64>| match total {
            Some(total) => format!("{done}/{total}"),
            None => format!("{done}/?"),
        };
        match *self {
            Self::Starting => f.write_str("starting"),
            Self::Training => f.write_str("training"),
            Self::Evaluating { done, total } => write!(f, "evaluating {}", progress(done, total)),
            Self::FinalEvaluation { done, total } => {
                write!(f, "finalizing (evaluation {})", progress(done, total))
            }
            Self::Saving => f.write_str("finalizing (saving model)"),
            Self::Merging => f.write_str("merging adapter"),
            Self::Exporting => f.write_str("exporting"),
            Self::Retrieving => f.write_str("retrieving results"),
        }
    }
}

/// Follows the phase through the metric lines.
#[derive(Debug, Clone)]
pub struct PhaseTracker {
    phase: Phase,
    ended: bool,
}

impl Default for PhaseTracker {
    fn default() -> Self {
        Self {
            phase: Phase::Starting,
            ended: false,
        }
    }
}

impl PhaseTracker {
    /// A tracker before any line.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The current phase.
    #[must_use]
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Takes `line` into account; returns the new phase when a phase line is due: the
    /// phase changed, or an evaluation reached a new tenth of its progress.
    pub fn observe(&mut self, line: &MetricLine) -> Option<Phase> {
        let next = match line {
            MetricLine::Stage {
                stage: Stage::Train,
                ..
            }
            | MetricLine::Train(_) => Phase::Training,
            MetricLine::Stage {
                stage: Stage::Merge,
                ..
            } => Phase::Merging,
            MetricLine::Stage {
                stage: Stage::Export,
                ..
            } => Phase::Exporting,
            MetricLine::EvalProgress { step, total, .. } => {
                if self.ended {
                    Phase::FinalEvaluation {
                        done: *step,
                        total: *total,
                    }
                } else {
                    Phase::Evaluating {
                        done: *step,
                        total: *total,
                    }
                }
            }
            MetricLine::Eval(_) => {
                if self.ended {
                    Phase::Saving
                } else {
                    Phase::Training
                }
            }
            MetricLine::End { .. } => {
                self.ended = true;
                Phase::Saving
            }
            MetricLine::Snapshot { .. } => self.phase,
        };
        self.set(next)
    }

    /// Enters the retrieving phase; returns it when that is a change.
    pub fn retrieving(&mut self) -> Option<Phase> {
        self.set(Phase::Retrieving)
    }

    fn set(&mut self, next: Phase) -> Option<Phase> {
        let previous = self.phase;
        self.phase = next;
        if previous.kind() != next.kind() {
            return Some(next);
        }
        match (previous.tenth(), next.tenth()) {
            (Some(before), Some(after)) if after > before => Some(next),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::metrics::{EvalLine, TrainLine};

    fn train(step: u64) -> MetricLine {
        MetricLine::Train(TrainLine {
            ts: 0.0,
            step,
            max_steps: Some(10),
            epoch: None,
            loss: None,
            learning_rate: None,
            grad_norm: None,
        })
    }

    fn progress(step: u64, total: Option<u64>) -> MetricLine {
        MetricLine::EvalProgress {
            ts: 0.0,
            step,
            total,
        }
    }

    fn eval() -> MetricLine {
        MetricLine::Eval(EvalLine {
            ts: 0.0,
            step: 1,
            eval_loss: None,
            other: std::collections::BTreeMap::new(),
        })
    }

    #[test]
    fn phases_in_order_of_a_run() {
        let mut tracker = PhaseTracker::new();
        let cases: Vec<(MetricLine, Option<&str>)> = vec![
            (
                MetricLine::Stage {
                    ts: 0.0,
                    stage: Stage::Train,
                },
                Some("training"),
            ),
            (train(1), None),
            (progress(1, Some(20)), Some("evaluating 1/20")),
            (progress(1, Some(20)), None),
            (progress(2, Some(20)), Some("evaluating 2/20")),
            (progress(3, Some(20)), None),
            (progress(10, Some(20)), Some("evaluating 10/20")),
            (eval(), Some("training")),
            (train(2), None),
            (
                MetricLine::End { ts: 0.0, step: 2 },
                Some("finalizing (saving model)"),
            ),
            (progress(1, None), Some("finalizing (evaluation 1/?)")),
            (progress(5, None), None),
            (eval(), Some("finalizing (saving model)")),
            (
                MetricLine::Stage {
                    ts: 0.0,
                    stage: Stage::Merge,
                },
                Some("merging adapter"),
            ),
            (
                MetricLine::Stage {
                    ts: 0.0,
                    stage: Stage::Export,
                },
                Some("exporting"),
            ),
        ];
        for (line, expected) in cases {
            let got = tracker.observe(&line).map(|p| p.to_string());
            assert_eq!(got.as_deref(), expected, "{line:?}");
        }
        assert_eq!(
            tracker.retrieving().map(|p| p.to_string()).as_deref(),
            Some("retrieving results")
        );
        assert_eq!(tracker.retrieving(), None);
    }
}

//! [`Live`]: what the TUI saw of a followed run, from its events: the loss, eval loss,
//! learning-rate and gradient-norm series the view draws, and the ETA.

use super::f64_of;
use crate::runs::RunEvent;

/// What the TUI saw of a followed run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Live {
    /// `(step, loss)` of every training line.
    pub loss: Vec<(f64, f64)>,
    /// `(step, eval_loss)` of every evaluation.
    pub eval: Vec<(f64, f64)>,
    /// Learning rates, in step order.
    pub learning_rate: Vec<f64>,
    /// Gradient norms, in step order.
    pub grad_norm: Vec<f64>,
    /// The latest step.
    pub step: u64,
    /// Steps in all, once known.
    pub max_steps: Option<u64>,
    /// `(ts, step)` of the first training line, for the ETA.
    pub first: Option<(f64, u64)>,
    /// `ts` of the latest training line.
    pub last_ts: f64,
    /// The latest phase, in words.
    pub phase: Option<String>,
}

impl Live {
    /// Takes in one run event.
    pub fn apply(&mut self, event: &RunEvent) {
        match event {
            RunEvent::Phase(phase) => self.phase = Some(phase.to_string()),
            // A follow that starts again (an attach, a reconnect) replays the run's lines
            // from the start: a step already seen is not drawn twice.
            RunEvent::Train(line) if self.first.is_some() && line.step <= self.step => {}
            RunEvent::Train(line) => {
                #[allow(clippy::cast_precision_loss, reason = "steps are far below 2^52")]
                let x = line.step as f64;
                if let Some(loss) = line.loss {
                    self.loss.push((x, loss.0));
                }
                if let Some(lr) = line.learning_rate {
                    self.learning_rate.push(lr.0);
                }
                if let Some(grad) = line.grad_norm {
                    self.grad_norm.push(grad.0);
                }
                self.step = line.step;
                if line.max_steps.is_some() {
                    self.max_steps = line.max_steps;
                }
                self.first.get_or_insert((line.ts, line.step));
                self.last_ts = line.ts;
            }
            RunEvent::Eval(line) => {
                #[allow(clippy::cast_precision_loss, reason = "steps are far below 2^52")]
                let x = line.step as f64;
                let seen = self.eval.last().is_some_and(|(step, _)| *step >= x);
                if let Some(loss) = line.eval_loss.filter(|_| !seen) {
                    self.eval.push((x, loss.0));
                }
            }
            _ => {}
        }
    }

    /// Seconds left at the pace seen so far, once two steps were seen.
    #[must_use]
    pub fn eta_seconds(&self) -> Option<u64> {
        let (ts, step) = self.first?;
        let max = self.max_steps?;
        let done = self.step.checked_sub(step).filter(|d| *d > 0)?;
        let per_step = (self.last_ts - ts) / f64_of(done);
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a duration"
        )]
        Some(
            (per_step * f64_of(max.saturating_sub(self.step)))
                .max(0.0)
                .round() as u64,
        )
    }
}

//! [`Meter`]: one command's view of the budget, shared by every request it sends. It
//! starts from the ledger's sum, admits each request through the [`Gate`] with its worst
//! case, and records each reply's cost in the ledger (synced) before counting it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::cap::{Cap, CapReached, Gate};
use super::ledger::{self, Ledger, LedgerLine, RequestLine};
use crate::dataset::jsonl::{JsonlError, SkippedLine};

/// The ledger cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum BudgetError {
    /// Appending failed.
    #[error("the budget's ledger: {0}")]
    Ledger(#[from] JsonlError),
    /// The ledger cannot be read, or a line of it cannot be trusted.
    #[error("the budget's ledger: {0}")]
    Read(#[from] ledger::LedgerError),
}

#[derive(Debug)]
struct Inner {
    gate: Gate,
    ledger: Option<Ledger>,
    path: PathBuf,
    failed: Option<JsonlError>,
}

/// A command's budget: the gate and the ledger behind one lock.
#[derive(Debug, Clone)]
pub struct Meter {
    inner: Arc<Mutex<Inner>>,
    cap: Option<Cap>,
    allow_unpriced: bool,
}

impl Meter {
    /// The meter of the project at `root` under `budget`, starting from the ledger's
    /// spend; returns the lines skipped while reading it (a torn last line), to warn of.
    ///
    /// # Errors
    ///
    /// [`BudgetError`] when the ledger exists but cannot be read.
    pub fn open(
        root: &Path,
        budget: &crate::config::Budget,
    ) -> Result<(Self, Vec<SkippedLine>), BudgetError> {
        let path = ledger::path(root);
        let (lines, skipped) = ledger::read(&path)?;
        let spent = super::summary(&lines).total.usd;
        let cap = budget.max_usd.map(|max_usd| Cap {
            max_usd,
            warn_at: budget.warn_at,
        });
        let meter = Self {
            inner: Arc::new(Mutex::new(Inner {
                gate: Gate::new(cap, spent),
                ledger: None,
                path,
                failed: None,
            })),
            cap,
            allow_unpriced: budget.allow_unpriced,
        };
        Ok((meter, skipped))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The cap, when one is set.
    #[must_use]
    pub fn cap(&self) -> Option<Cap> {
        self.cap
    }

    /// Whether an unpriced model may run under the cap (`budget.allow_unpriced`).
    #[must_use]
    pub fn allow_unpriced(&self) -> bool {
        self.allow_unpriced
    }

    /// USD spent so far (the ledger and this command's settled requests).
    #[must_use]
    pub fn spent(&self) -> f64 {
        self.lock().gate.spent()
    }

    /// What remains of the cap after the spend and the requests in flight.
    #[must_use]
    pub fn remaining(&self) -> Option<f64> {
        self.lock().gate.remaining()
    }

    /// Admits a request of at most `worst` USD (`None`: unpriced); see [`Gate::reserve`].
    /// A meter whose ledger failed admits nothing more.
    ///
    /// # Errors
    ///
    /// [`CapReached`] when the request could pass the cap.
    pub fn reserve(&self, worst: Option<f64>) -> Result<f64, CapReached> {
        let mut inner = self.lock();
        if inner.failed.is_some() {
            let reached = CapReached {
                spent: inner.gate.spent(),
                in_flight: 0.0,
                next: 0.0,
                max_usd: self.cap.map_or(0.0, |cap| cap.max_usd),
            };
            return Err(reached);
        }
        inner.gate.reserve(worst)
    }

    /// Appends `line` to the ledger (synced), then settles the request that reserved
    /// `reserved`; returns the spend and the cap when it first reaches the warning share.
    /// A failed append closes the meter; [`Meter::failure`] hands the error over.
    #[must_use]
    pub fn record(&self, reserved: f64, line: RequestLine) -> Option<(f64, f64)> {
        let mut inner = self.lock();
        let cost = line.cost_usd;
        let written = match inner.ledger.take() {
            Some(ledger) => Ok(ledger),
            None => Ledger::open(&inner.path),
        }
        .and_then(|mut ledger| {
            ledger.append(&LedgerLine::Request(line))?;
            Ok(ledger)
        });
        match written {
            Ok(ledger) => inner.ledger = Some(ledger),
            Err(error) => {
                inner.failed.get_or_insert(error);
            }
        }
        inner.gate.settle(reserved, cost)
    }

    /// The spend and the cap when the spend is already past the warning share (once).
    #[must_use]
    pub fn warning(&self) -> Option<(f64, f64)> {
        self.lock().gate.warning()
    }

    /// What the gate refused, once it has.
    #[must_use]
    pub fn closed(&self) -> Option<CapReached> {
        self.lock().gate.closed()
    }

    /// The ledger's write failure, once (it stopped the meter).
    #[must_use]
    pub fn failure(&self) -> Option<JsonlError> {
        self.lock().failed.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(cost_usd: Option<f64>) -> RequestLine {
        RequestLine {
            at: jiff::Timestamp::now(),
            stage: "answers".into(),
            provider: "p".into(),
            model: "m".into(),
            input_tokens: 1,
            output_tokens: 1,
            cost_usd,
        }
    }

    #[test]
    fn a_meter_starts_from_the_ledger_and_every_recorded_request_is_a_synced_line() {
        let dir = tempfile::tempdir().unwrap();
        let budget = crate::config::Budget {
            max_usd: Some(1.0),
            ..Default::default()
        };
        let (meter, skipped) = Meter::open(dir.path(), &budget).unwrap();
        assert!(skipped.is_empty());
        let reserved = meter.reserve(Some(0.5)).unwrap();
        assert_eq!(meter.record(reserved, line(Some(0.4))), None);
        let reserved = meter.reserve(Some(0.5)).unwrap();
        assert_eq!(meter.record(reserved, line(None)), None);
        let (again, _) = Meter::open(dir.path(), &budget).unwrap();
        assert!((again.spent() - 0.4).abs() < 1e-12);
        assert!(again.reserve(Some(0.61)).is_err());
        let (lines, _) = ledger::read(&ledger::path(dir.path())).unwrap();
        assert_eq!(lines.len(), 2);
    }
}

//! [`Meter`]: one command's view of the budget, shared by every request it sends. Before
//! each request it re-reads the ledger under its lock ([`Book`]), so the spend and the
//! reservations of every other spender (another stage, a pod's cost cap, issue 33)
//! count; it admits the request through the [`Gate`] with its worst case and appends
//! that worst case as a reservation line; each reply's cost is then recorded in the
//! ledger (synced), settling the reservation, before it counts.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use super::book::{self, Book};
use super::cap::{Cap, CapReached, Gate};
use super::ledger::{self, LedgerLine, RequestLine, ReserveLine};
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
    book: Book,
    /// Reservations made so far (their IDs are `<pid>-<started>-<n>`).
    made: u64,
    failed: Option<BudgetError>,
}

/// A request admitted by a [`Meter`]: the worst case it holds, and the ID of its
/// reservation line when it wrote one.
#[derive(Debug, Clone, PartialEq)]
pub struct Reservation {
    /// USD held for it.
    pub usd: f64,
    id: Option<String>,
}

/// A command's budget: the gate and the ledger behind one lock.
#[derive(Debug, Clone)]
pub struct Meter {
    inner: Arc<Mutex<Inner>>,
    cap: Option<Cap>,
    allow_unpriced: bool,
    /// What makes this command's reservation IDs unique in the ledger.
    holder: String,
}

impl Meter {
    /// The meter of the project at `root` under `budget`, starting from the ledger's
    /// spend and reservations; returns the lines skipped while reading it (a torn last
    /// line), to warn of.
    ///
    /// # Errors
    ///
    /// [`BudgetError`] when the ledger exists but cannot be read.
    pub fn open(
        root: &Path,
        budget: &crate::config::Budget,
    ) -> Result<(Self, Vec<SkippedLine>), BudgetError> {
        let mut book = Book::new(root);
        let (spent, reserved, skipped) = {
            let (held, skipped) = book.lock()?;
            let tally = held.tally();
            (tally.spent(), tally.reserved(book::alive, None), skipped)
        };
        let cap = budget.max_usd.map(|max_usd| Cap {
            max_usd,
            warn_at: budget.warn_at,
        });
        let mut gate = Gate::new(cap, spent);
        gate.observe(spent, reserved);
        let meter = Self {
            inner: Arc::new(Mutex::new(Inner {
                gate,
                book,
                made: 0,
                failed: None,
            })),
            cap,
            allow_unpriced: budget.allow_unpriced,
            holder: format!(
                "{}-{}",
                std::process::id(),
                jiff::Timestamp::now().as_nanosecond()
            ),
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

    /// USD spent so far (the ledger at the last look, and this command's settled
    /// requests).
    #[must_use]
    pub fn spent(&self) -> f64 {
        self.lock().gate.spent()
    }

    /// What remains of the cap after the spend and the reservations at the last look.
    #[must_use]
    pub fn remaining(&self) -> Option<f64> {
        self.lock().gate.remaining()
    }

    /// Admits a request of at most `worst` USD (`None`: unpriced); see [`Gate::reserve`],
    /// over the ledger as it is now (every other spender's spend and reservations), its
    /// worst case then written as a reservation line. A meter whose ledger failed admits
    /// nothing more.
    ///
    /// # Errors
    ///
    /// [`CapReached`] when the request could pass the cap.
    pub fn reserve(&self, worst: Option<f64>) -> Result<Reservation, CapReached> {
        let mut guard = self.lock();
        let inner = &mut *guard;
        let refused = |inner: &Inner| CapReached {
            spent: inner.gate.spent(),
            in_flight: 0.0,
            next: 0.0,
            max_usd: self.cap.map_or(0.0, |cap| cap.max_usd),
        };
        if inner.failed.is_some() {
            return Err(refused(inner));
        }
        if self.cap.is_none() || worst.is_none() {
            // Nothing is held: no cap to pass, or nothing known (`allow_unpriced`).
            return inner
                .gate
                .reserve(worst)
                .map(|usd| Reservation { usd, id: None });
        }
        inner.made += 1;
        let id = format!("{}-{}", self.holder, inner.made);
        let looked = inner.book.lock().and_then(|(mut held, _)| {
            let tally = held.tally();
            inner
                .gate
                .observe(tally.spent(), tally.reserved(book::alive, None));
            let usd = inner.gate.reserve(worst);
            if let Ok(usd) = usd {
                held.append(&LedgerLine::Reserve(ReserveLine {
                    at: jiff::Timestamp::now(),
                    id: id.clone(),
                    usd,
                    run: None,
                    pid: Some(std::process::id()),
                }))?;
            }
            Ok(usd)
        });
        match looked {
            Ok(usd) => usd.map(|usd| Reservation { usd, id: Some(id) }),
            Err(error) => {
                inner.failed.get_or_insert(error);
                Err(refused(inner))
            }
        }
    }

    /// Appends `line` to the ledger (synced), settling `reservation`, then settles it in
    /// the gate; returns the spend and the cap when it first reaches the warning share.
    /// A failed append closes the meter; [`Meter::failure`] hands the error over.
    #[must_use]
    pub fn record(&self, reservation: Reservation, mut line: RequestLine) -> Option<(f64, f64)> {
        let mut guard = self.lock();
        let inner = &mut *guard;
        let cost = line.cost_usd;
        line.reservation = reservation.id;
        let written = inner
            .book
            .lock()
            .and_then(|(mut held, _)| held.append(&LedgerLine::Request(line)));
        if let Err(error) = written {
            inner.failed.get_or_insert(error);
        }
        inner.gate.settle(reservation.usd, cost)
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

    /// The ledger's failure, once (it stopped the meter).
    #[must_use]
    pub fn failure(&self) -> Option<BudgetError> {
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
            reservation: None,
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
        // Each request: its reservation, then its line settling it.
        let (lines, _) = ledger::read(&ledger::path(dir.path())).unwrap();
        let kinds: Vec<&str> = lines
            .iter()
            .map(|line| match line {
                LedgerLine::Reserve(_) => "reserve",
                LedgerLine::Request(request) => {
                    assert!(request.reservation.is_some());
                    "request"
                }
                LedgerLine::Pod(_) => "pod",
            })
            .collect();
        assert_eq!(kinds, ["reserve", "request", "reserve", "request"]);
        assert!(
            super::super::Tally::of(&lines)
                .reserved(book::alive, None)
                .abs()
                < 1e-12
        );
    }

    #[test]
    fn another_processs_reservation_is_seen_before_the_next_request() {
        let dir = tempfile::tempdir().unwrap();
        let budget = crate::config::Budget {
            max_usd: Some(1.0),
            ..Default::default()
        };
        let (meter, _) = Meter::open(dir.path(), &budget).unwrap();
        assert!(meter.reserve(Some(0.25)).is_ok());
        // A pod's cost cap reserved by another process after this meter opened.
        let mut other = Book::new(dir.path());
        let (mut held, _) = other.lock().unwrap();
        held.append(&LedgerLine::Reserve(ReserveLine {
            at: jiff::Timestamp::now(),
            id: ReserveLine::pod_id("r1"),
            usd: 0.5,
            run: Some("r1".into()),
            pid: None,
        }))
        .unwrap();
        drop(held);
        let refused = meter.reserve(Some(0.3)).unwrap_err();
        assert!((refused.in_flight - 0.75).abs() < 1e-12, "{refused:?}");
        assert!(meter.reserve(Some(0.25)).is_err(), "the gate stays closed");
    }
}

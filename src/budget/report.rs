//! What `overbrainer budget` shows (issue 20): the ledger's summary against the cap, what
//! is held by spenders at work (issue 33: a pod's cost cap, requests in flight), what
//! remains of it, and the requests without a price.

use std::path::Path;

use serde::Serialize;

use super::ledger;
use super::meter::BudgetError;
use super::summary::{Summary, summary};
use crate::dataset::jsonl::SkippedLine;

/// The spend against the cap.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The ledger, summed.
    #[serde(flatten)]
    pub summary: Summary,
    /// `budget.max_usd`; `null` without a cap.
    pub max_usd: Option<f64>,
    /// USD held by open reservations beyond what they spent (a pod's cost cap, the
    /// requests in flight of a live command).
    pub reserved_usd: f64,
    /// What remains of the cap after the spend and what is held (never below 0); `null`
    /// without a cap.
    pub remaining_usd: Option<f64>,
    /// How far the spend has passed the cap (0 when it has not); `null` without a cap.
    pub over_usd: Option<f64>,
    /// `budget.warn_at`.
    pub warn_at: f64,
}

/// The report of the project at `root` under `budget`, and the ledger lines skipped.
///
/// # Errors
///
/// [`BudgetError`] when the ledger exists but cannot be read.
pub fn report(
    root: &Path,
    budget: &crate::config::Budget,
) -> Result<(Report, Vec<SkippedLine>), BudgetError> {
    let (lines, skipped) = ledger::read(&ledger::path(root))?;
    let summary = summary(&lines);
    // `+ 0.0`: an empty sum is -0.0, which JSON would show as such.
    let reserved_usd = super::Tally::of(&lines).reserved(super::book::alive, None) + 0.0;
    let remaining_usd = budget
        .max_usd
        .map(|cap| (cap - summary.total.usd - reserved_usd).max(0.0));
    // To the hundredth of a cent the reports show: float sums (0.1 + 0.2 against a cap
    // of 0.3) never read as a cap passed by $0.0000.
    let over_usd = budget
        .max_usd
        .map(|cap| ((summary.total.usd - cap).max(0.0) * 1e4).round() / 1e4);
    Ok((
        Report {
            summary,
            max_usd: budget.max_usd,
            reserved_usd,
            remaining_usd,
            over_usd,
            warn_at: budget.warn_at,
        },
        skipped,
    ))
}

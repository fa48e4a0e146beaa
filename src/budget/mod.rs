//! One budget for the whole child (issue 20): the parent's and the judge's tokens and
//! the GPU hours of training in one ledger, with one cap.
//!
//! - `ledger`: `.overbrainer/ledger.jsonl`, its lines, appending and reading.
//! - `summary`: what the ledger sums to, by stage, run and model; `report`: that against
//!   the cap, for `overbrainer budget`.
//! - `cap`: the hard cap's arithmetic ([`Gate`]), pure.
//! - `estimate`: a request's worst case and a stage's estimate, pure.
//! - `pod`: a training pod's cost cap under the budget and a start's estimate, pure.
//! - `meter`: a command's gate over the ledger, shared by its requests ([`Meter`]).

pub mod cap;
pub mod estimate;
pub mod ledger;
mod meter;
pub mod pod;
mod report;
pub mod summary;

pub use cap::{Cap, CapReached, Gate};
pub use estimate::{Basis, Estimate};
pub use ledger::{Ledger, LedgerLine, PodLine, RequestLine};
pub use meter::{BudgetError, Meter};
pub use report::{Report, report};
pub use summary::{Spend, Summary, summary};

/// USD as budget messages show it (`$0.1234`).
#[must_use]
pub fn usd(value: f64) -> String {
    format!("${value:.4}")
}

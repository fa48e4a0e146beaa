//! One budget for the whole child (issue 20): the parent's and the judge's tokens and
//! the GPU hours of training in one ledger, with one cap.
//!
//! - `ledger`: `.overbrainer/ledger.jsonl`, its lines, appending and reading.
//! - `summary`: what the ledger sums to, by stage, run and model; `report`: that against
//!   the cap, for `overbrainer budget`.
//! - `cap`: the hard cap's arithmetic ([`Gate`]), pure.
//! - `estimate`: a request's worst case and a stage's estimate, pure.
//! - `pod`: a training pod's cost cap under the budget and a start's estimate, pure.
//! - `tally`: the ledger's spend and open reservations, pure ([`Tally`]).
//! - `book`: the ledger shared by every spender, read and appended under its lock
//!   ([`Book`], issue 33).
//! - `meter`: a command's gate over the ledger, shared by its requests ([`Meter`]).

pub mod book;
pub mod cap;
pub mod estimate;
pub mod ledger;
mod meter;
pub mod pod;
mod report;
pub mod summary;
pub mod tally;

pub use book::Book;
pub use cap::{Cap, CapReached, Gate};
pub use estimate::{Basis, Estimate};
pub use ledger::{Ledger, LedgerLine, PodLine, RequestLine, ReserveLine};
pub use meter::{BudgetError, Meter, Reservation};
pub use report::{Report, report};
pub use summary::{Spend, Summary, summary};
pub use tally::Tally;

/// USD as budget messages show it (`$0.1234`).
#[must_use]
pub fn usd(value: f64) -> String {
    format!("${value:.4}")
}

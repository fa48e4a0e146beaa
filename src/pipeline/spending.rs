//! The budget of a stage's requests (issue 20): [`Spender`] refuses an unpriced model
//! under a cap (unless `budget.allow_unpriced`), refuses a start whose estimate with the
//! spend passes the cap (unless `--over-budget`), admits each request through the
//! command's [`Meter`] with its worst case, and records each reply in the ledger before
//! counting it. The hard cap holds with `--over-budget` too.

use std::sync::Arc;

use super::progress::{Event, Stage, Tracker};
use super::stage::{Context, RoleClient, StageError};
use crate::budget::estimate::{self, Basis};
use crate::budget::{CapReached, Meter, RequestLine, Reservation, usd};
use crate::llm::Usage;
use crate::pricing::Price;

/// Opens the command's meter over the ledger, warning of lines skipped and of a spend
/// already past the warning share.
///
/// # Errors
///
/// [`StageError::Budget`] when the ledger cannot be read.
pub(crate) fn meter(ctx: &Context) -> Result<Meter, StageError> {
    let (meter, skipped) = Meter::open(&ctx.root, &ctx.settings.budget)?;
    ctx.warn_skipped(&skipped);
    if let Some((spent, cap)) = meter.warning() {
        ctx.emit(Event::Warning(warning_text(spent, cap)));
    }
    Ok(meter)
}

fn warning_text(spent: f64, cap: f64) -> String {
    format!(
        "the budget is at {:.0}%: {} spent of the cap of {} (`budget.max_usd`)",
        spent / cap * 100.0,
        usd(spent),
        usd(cap)
    )
}

/// The budget of one role's requests in one stage.
#[derive(Debug)]
pub(crate) struct Spender {
    meter: Meter,
    stage: Stage,
    provider: String,
    model: String,
    price: Option<Price>,
    max_output: u64,
    attempts: u32,
    events: tokio::sync::mpsc::UnboundedSender<Event>,
}

impl Spender {
    /// The spender of `role`'s requests in `stage` over `meter`; each request is paid for
    /// at most `attempts` times (the answered attempts a stage may reject and ask again).
    ///
    /// # Errors
    ///
    /// [`StageError::Unpriced`] under a cap when the model has no price and
    /// `budget.allow_unpriced` is not set.
    pub(crate) async fn open(
        ctx: &Context,
        meter: &Meter,
        stage: Stage,
        role: &RoleClient,
        attempts: u32,
    ) -> Result<Arc<Self>, StageError> {
        let price = role.price(&ctx.prices).await;
        if price.is_none() && meter.cap().is_some() && !meter.allow_unpriced() {
            return Err(StageError::Unpriced {
                stage,
                provider: role.provider.clone(),
                model: role.role.model.clone(),
            });
        }
        Ok(Arc::new(Self {
            meter: meter.clone(),
            stage,
            provider: role.provider.clone(),
            model: role.role.model.clone(),
            price,
            max_output: u64::from(role.role.max_tokens),
            attempts: attempts.max(1),
            events: ctx.events.clone(),
        }))
    }

    /// The cost of one answered attempt of a chat request made of `texts`, at its
    /// `max_tokens` bound, for an estimate before any item was done; 0 when unpriced.
    pub(crate) fn bound(&self, texts: &[&str]) -> f64 {
        self.price.map_or(0.0, |price| {
            estimate::worst_case(price, estimate::input_bound(texts), self.max_output, 1)
        })
    }

    /// The worst case of a request of `input` tokens at most, `None` when unpriced.
    pub(crate) fn worst_case(&self, input: u64, max_output: Option<u64>) -> Option<f64> {
        self.price.map(|price| {
            estimate::worst_case(
                price,
                input,
                max_output.unwrap_or(self.max_output),
                self.attempts,
            )
        })
    }

    /// Admits a chat request made of `texts` (its messages); returns what it reserved.
    ///
    /// # Errors
    ///
    /// [`CapReached`] when it could pass the cap: it must not be sent.
    pub(crate) fn admit(&self, texts: &[&str]) -> Result<Reservation, CapReached> {
        self.meter
            .reserve(self.worst_case(estimate::input_bound(texts), None))
    }

    /// Admits an embeddings request of `inputs` (no output tokens).
    ///
    /// # Errors
    ///
    /// [`CapReached`] when it could pass the cap.
    pub(crate) fn admit_embeddings(&self, inputs: &[String]) -> Result<Reservation, CapReached> {
        let texts: Vec<&str> = inputs.iter().map(String::as_str).collect();
        self.meter
            .reserve(self.worst_case(estimate::input_bound(&texts), Some(0)))
    }

    /// Records a reply of `usage` to a request that reserved `reserved`: its ledger line
    /// first, then the stage's counters.
    pub(crate) fn settle(&self, tracker: &Tracker, reserved: Reservation, usage: Usage) {
        let cost = self.price.map(|price| price.cost(usage));
        let line = RequestLine {
            at: jiff::Timestamp::now(),
            stage: self.stage.name().to_owned(),
            provider: self.provider.clone(),
            model: self.model.clone(),
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cost_usd: cost,
            reservation: None,
        };
        if let Some((spent, cap)) = self.meter.record(reserved, line) {
            let _ = self.events.send(Event::Warning(warning_text(spent, cap)));
        }
        tracker.spend(&self.model, usage, self.price);
    }

    /// Refuses a start whose estimate of `items` items, with the spend, passes the cap,
    /// unless `--over-budget` accepts it; `bound` is the worst case of one item's
    /// requests, used before any item was done.
    ///
    /// # Errors
    ///
    /// [`StageError::OverBudget`] with the estimate, the spend and the cap.
    pub(crate) fn check_estimate(
        &self,
        ctx: &Context,
        items: u64,
        bound: f64,
    ) -> Result<(), StageError> {
        let (Some(cap), Some(price)) = (self.meter.cap(), self.price) else {
            return Ok(());
        };
        if items == 0 {
            return Ok(());
        }
        let (history, _) = crate::history::read(&ctx.history_path())?;
        let seen = estimate::tokens_per_item(&history, self.stage.name());
        let estimate = estimate::estimate(items, seen, price, bound);
        let spent = self.meter.spent();
        if !estimate::passes(estimate.usd, spent, cap.max_usd) {
            return Ok(());
        }
        if ctx.over_budget {
            ctx.emit(Event::Warning(format!(
                "`{}` is estimated at {} with {} spent, past the cap of {}; accepted with `--over-budget`, and the cap still stops it",
                self.stage.name(),
                usd(estimate.usd),
                usd(spent),
                usd(cap.max_usd)
            )));
            return Ok(());
        }
        Err(StageError::OverBudget {
            stage: self.stage,
            items,
            estimate: estimate.usd,
            seen: estimate.basis == Basis::Seen,
            spent,
            cap: cap.max_usd,
        })
    }

    /// The stage's end as the budget sees it: the ledger's failure, else the cap reached.
    ///
    /// # Errors
    ///
    /// [`StageError::Budget`] or [`StageError::CapReached`].
    pub(crate) fn outcome(&self) -> Result<(), StageError> {
        if let Some(error) = self.meter.failure() {
            return Err(StageError::Budget(error));
        }
        match self.meter.closed() {
            Some(reached) => Err(StageError::CapReached {
                stage: self.stage,
                reached,
            }),
            None => Ok(()),
        }
    }
}

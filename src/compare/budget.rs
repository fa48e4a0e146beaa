//! The judge's requests under the budget (issue 20): each is admitted by the command's
//! [`Meter`] with its worst case and recorded in the ledger as stage `compare`; a judge
//! without a price under a cap is refused unless `budget.allow_unpriced`, and the
//! estimate (the questions left times the judge's tokens of each) is checked before the
//! first judge request.

use crate::budget::estimate::{input_bound, worst_case};
use crate::budget::{CapReached, Meter, RequestLine, Reservation, usd};
use crate::llm::Usage;
use crate::pricing::Price;

/// The budget of the judge's requests.
#[derive(Debug, Clone)]
pub struct JudgeBudget {
    /// The command's meter.
    pub meter: Meter,
    /// The judge's provider.
    pub provider: String,
    /// The judge's model.
    pub model: String,
    /// Its price; `None` when unpriced (then allowed by `budget.allow_unpriced`).
    pub price: Option<Price>,
    /// The judge role's `max_tokens`.
    pub max_output: u64,
}

impl JudgeBudget {
    /// The worst case of one judge request of `user`.
    fn worst(&self, user: &str) -> Option<f64> {
        self.price
            .map(|price| worst_case(price, input_bound(&[user]), self.max_output, 1))
    }

    /// Admits a judge request of `user`; returns what it reserved.
    ///
    /// # Errors
    ///
    /// [`CapReached`]: it must not be sent.
    pub fn admit(&self, user: &str) -> Result<Reservation, CapReached> {
        self.meter.reserve(self.worst(user))
    }

    /// Records the reply of a request that reserved `reserved` in the ledger.
    pub fn settle(&self, reserved: Reservation, usage: Usage) {
        let line = RequestLine {
            at: jiff::Timestamp::now(),
            stage: "compare".to_owned(),
            provider: self.provider.clone(),
            model: self.model.clone(),
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cost_usd: self.price.map(|price| price.cost(usage)),
            reservation: None,
        };
        if let Some((spent, cap)) = self.meter.record(reserved, line) {
            tracing::warn!(
                "the budget is at {:.0}%: {} spent of the cap of {} (`budget.max_usd`)",
                spent / cap * 100.0,
                usd(spent),
                usd(cap)
            );
        }
    }

    /// Refuses judging `users` (each request's prompt; `requests` of them in all, swaps
    /// included) when the estimate with the spend passes the cap, unless `over_budget`.
    ///
    /// # Errors
    ///
    /// The refusal's text, with the estimate, the spend and the cap.
    pub fn check_estimate(&self, users: &[String], over_budget: bool) -> Result<(), String> {
        let Some(cap) = self.meter.cap() else {
            return Ok(());
        };
        let estimate: f64 = users.iter().filter_map(|user| self.worst(user)).sum();
        let spent = self.meter.spent();
        if spent + estimate <= cap.max_usd || over_budget {
            return Ok(());
        }
        Err(format!(
            "judging is estimated at {} for {} requests (each at the judge's `max_tokens`), and with {} already spent that passes the cap of {} (`budget.max_usd`); no judge request was sent: raise the cap, or pass `--over-budget` to accept it (the cap still stops it)",
            usd(estimate),
            users.len(),
            usd(spent),
            usd(cap.max_usd)
        ))
    }
}

/// The prompts of the judge requests still to make: each question of `setup` without a
/// verdict in `done` whose child answered, once, and twice when the swap sample takes it
/// (a reply that does not parse, asked once more, is left out: an estimate).
///
/// # Errors
///
/// The prompt's render error.
#[allow(clippy::implicit_hasher, reason = "the flow's maps")]
pub fn pending_prompts(
    setup: &super::setup::Setup,
    answers: &std::collections::HashMap<String, super::setup::ChildAnswer>,
    done: &std::collections::HashSet<String>,
    prompt: &crate::pipeline::templates::Prompt,
) -> Result<Vec<String>, crate::pipeline::templates::TemplateError> {
    let swaps = super::order::swap_sample(setup.seed, setup.questions.len());
    let mut users = Vec::new();
    for (question, swap) in setup.questions.iter().zip(swaps) {
        let Some(answer) = answers.get(&question.id).filter(|a| a.error.is_none()) else {
            continue;
        };
        if done.contains(&question.id) {
            continue;
        }
        let user = prompt.render(minijinja::context! {
            question => question.user,
            answer_a => answer.text,
            answer_b => question.parent_answer,
        })?;
        if swap {
            users.push(user.clone());
        }
        users.push(user);
    }
    Ok(users)
}

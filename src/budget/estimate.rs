//! Costs before the fact (issue 20), pure: the worst case of one request (what the hard
//! cap reserves) and the estimate of a stage before it starts: its remaining items times
//! the tokens per item seen so far in the history, or, before any, the bound of each
//! request (its prompt's size and `max_tokens`).

use crate::history::{Detail, HistoryLine};
use crate::pricing::Price;

/// Tokens added to a request's input bound per message, for the chat template's framing
/// (role markers, separators).
pub const MESSAGE_OVERHEAD: u64 = 16;

/// An upper bound on the input tokens of a request made of `texts`, one message each: a
/// token of any byte-level tokenizer covers at least one byte, plus
/// [`MESSAGE_OVERHEAD`] per message.
#[must_use]
pub fn input_bound(texts: &[&str]) -> u64 {
    texts
        .iter()
        .map(|text| text.len() as u64 + MESSAGE_OVERHEAD)
        .sum()
}

/// The most a request can cost at `price`: `attempts` answered attempts (a reply the
/// stage rejects is paid for and asked again), each of at most `input` tokens in and
/// `max_output` out.
#[must_use]
pub fn worst_case(price: Price, input: u64, max_output: u64, attempts: u32) -> f64 {
    let one = price.cost(crate::llm::Usage {
        input_tokens: input,
        output_tokens: max_output,
    });
    one * f64::from(attempts.max(1))
}

/// The tokens per item a stage's history lines show (input, output), over every line
/// that did items; `None` before any item was done.
#[must_use]
pub fn tokens_per_item(history: &[HistoryLine], stage: &str) -> Option<(f64, f64)> {
    let (mut items, mut input, mut output) = (0_u64, 0_u64, 0_u64);
    for line in history.iter().filter(|line| line.stage == stage) {
        if let Detail::Provider {
            input_tokens,
            output_tokens,
            ..
        } = &line.detail
        {
            items += line.done;
            input += input_tokens;
            output += output_tokens;
        }
    }
    #[allow(clippy::cast_precision_loss)]
    (items > 0).then(|| (input as f64 / items as f64, output as f64 / items as f64))
}

/// How an estimate was made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Basis {
    /// From the tokens per item seen so far.
    Seen,
    /// From the bound of each request, before any item was done.
    Bound,
}

/// A stage's estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Items left to do.
    pub items: u64,
    /// USD.
    pub usd: f64,
    /// How it was made.
    pub basis: Basis,
}

/// The estimate of `items` items at `price`: `seen` tokens per item when known, else
/// `bound` USD per item (the worst case of its requests).
#[must_use]
pub fn estimate(items: u64, seen: Option<(f64, f64)>, price: Price, bound: f64) -> Estimate {
    #[allow(clippy::cast_precision_loss)]
    let count = items as f64;
    match seen {
        Some((input, output)) => Estimate {
            items,
            usd: count * (input * price.input + output * price.output),
            basis: Basis::Seen,
        },
        None => Estimate {
            items,
            usd: count * bound,
            basis: Basis::Bound,
        },
    }
}

/// Whether starting work estimated at `estimate` USD over `spent` passes `max_usd`.
#[must_use]
pub fn passes(estimate: f64, spent: f64, max_usd: f64) -> bool {
    spent + estimate > max_usd
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Status;

    const PRICE: Price = Price {
        input: 0.001,
        output: 0.002,
    };

    fn line(stage: &str, done: u64, input_tokens: u64, output_tokens: u64) -> HistoryLine {
        HistoryLine {
            stage: stage.into(),
            status: Status::Ok,
            started_at: "2026-01-01T00:00:00Z".parse().unwrap(),
            ended_at: "2026-01-01T00:01:00Z".parse().unwrap(),
            done,
            skipped: 0,
            failed: 0,
            excluded: 0,
            detail: Detail::Provider {
                provider: "p".into(),
                model: "m".into(),
                input_tokens,
                output_tokens,
                cost_usd: None,
                cost_partial: false,
            },
        }
    }

    #[test]
    fn the_worst_case_counts_every_answered_attempt_at_the_full_bound() {
        assert_eq!(input_bound(&["abc", ""]), 3 + 2 * MESSAGE_OVERHEAD);
        let one = worst_case(PRICE, 100, 50, 1);
        assert!((one - (0.1 + 0.1)).abs() < 1e-12);
        assert!((worst_case(PRICE, 100, 50, 4) - 4.0 * one).abs() < 1e-12);
        assert!((worst_case(PRICE, 100, 50, 0) - one).abs() < 1e-12);
    }

    #[test]
    fn the_estimate_uses_the_tokens_per_item_seen_so_far_else_the_bound() {
        let history = [
            line("answers", 2, 20, 40),
            line("questions", 5, 1000, 1000),
            line("answers", 2, 20, 0),
        ];
        assert_eq!(tokens_per_item(&history, "answers"), Some((10.0, 10.0)));
        assert_eq!(tokens_per_item(&history, "subtopics"), None);
        assert_eq!(
            tokens_per_item(&[line("answers", 0, 5, 5)], "answers"),
            None
        );
        let seen = estimate(3, Some((10.0, 10.0)), PRICE, 99.0);
        assert_eq!(seen.basis, Basis::Seen);
        assert!((seen.usd - 3.0 * 0.03).abs() < 1e-12);
        let bound = estimate(3, None, PRICE, 0.5);
        assert_eq!(bound.basis, Basis::Bound);
        assert!((bound.usd - 1.5).abs() < 1e-12);
        assert!(passes(0.6, 0.5, 1.0));
        assert!(!passes(0.5, 0.5, 1.0));
    }
}

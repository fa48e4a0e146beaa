//! Which answer the judge sees as A (CMP-13), drawn per question from the seed in
//! `setup.json`, and which questions it also judges in the swapped order (the position
//! bias check: every question when there are at most [`SWAP_SAMPLE`], else that many);
//! and how a verdict on A/B maps back to the child (CMP-15). Pure: the draws come from
//! `SplitMix64` over the seed and the question's index, so they never change with a
//! library version.

use serde::{Deserialize, Serialize};

/// How many questions the judge also sees swapped, at most.
pub const SWAP_SAMPLE: usize = 50;

/// The order the judge saw: which answer was labelled A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// The child's answer is A, the parent's B.
    ChildA,
    /// The parent's answer is A, the child's B.
    ParentA,
}

impl Order {
    /// The other order.
    #[must_use]
    pub const fn swapped(self) -> Self {
        match self {
            Self::ChildA => Self::ParentA,
            Self::ParentA => Self::ChildA,
        }
    }
}

/// What the judge said of A and B (CMP-15).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// A is better.
    A,
    /// B is better.
    B,
    /// Neither.
    #[serde(rename = "tie")]
    Tie,
}

/// A question's result for the child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The child's answer is better.
    Win,
    /// Neither is better (also a verdict that flipped with the order).
    Tie,
    /// The parent's answer is better (also a child error, CMP-17).
    Loss,
    /// The judge's reply did not parse twice; not counted.
    Unparsed,
}

/// `SplitMix64`: one well-mixed 64-bit value from `x`.
const fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn draw(seed: u64, index: usize, stream: u64) -> u64 {
    mix(seed ^ mix(index as u64 ^ stream.rotate_left(32)))
}

/// The order of question number `index` (0-based, in `setup.json`'s order).
#[must_use]
pub fn order(seed: u64, index: usize) -> Order {
    if draw(seed, index, 1) & 1 == 0 {
        Order::ChildA
    } else {
        Order::ParentA
    }
}

/// Which of `n` questions are also judged in the swapped order: all when `n` is at most
/// [`SWAP_SAMPLE`], else [`SWAP_SAMPLE`] of them drawn from the seed.
#[must_use]
pub fn swap_sample(seed: u64, n: usize) -> Vec<bool> {
    if n <= SWAP_SAMPLE {
        return vec![true; n];
    }
    let mut ranked: Vec<(u64, usize)> = (0..n).map(|i| (draw(seed, i, 2), i)).collect();
    ranked.sort_unstable();
    let mut chosen = vec![false; n];
    for &(_, i) in ranked.iter().take(SWAP_SAMPLE) {
        chosen[i] = true;
    }
    chosen
}

/// The child's result of `verdict` given in `order` (CMP-15).
#[must_use]
pub const fn outcome(order: Order, verdict: Verdict) -> Outcome {
    match (order, verdict) {
        (_, Verdict::Tie) => Outcome::Tie,
        (Order::ChildA, Verdict::A) | (Order::ParentA, Verdict::B) => Outcome::Win,
        (Order::ChildA, Verdict::B) | (Order::ParentA, Verdict::A) => Outcome::Loss,
    }
}

/// A question's result from its first verdict and, when it was judged swapped too, the
/// swapped one: a verdict that changes with the order counts as a tie; an unparsed one
/// on either side leaves the other deciding. Returns the result and whether it flipped.
#[must_use]
pub fn combined(first: Outcome, swapped: Option<Outcome>) -> (Outcome, bool) {
    match swapped {
        None | Some(Outcome::Unparsed) => (first, false),
        Some(second) if first == Outcome::Unparsed => (second, false),
        Some(second) if second == first => (first, false),
        Some(_) => (Outcome::Tie, true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_map_back_to_the_child_in_either_order() {
        let table = [
            (Order::ChildA, Verdict::A, Outcome::Win),
            (Order::ChildA, Verdict::B, Outcome::Loss),
            (Order::ChildA, Verdict::Tie, Outcome::Tie),
            (Order::ParentA, Verdict::A, Outcome::Loss),
            (Order::ParentA, Verdict::B, Outcome::Win),
            (Order::ParentA, Verdict::Tie, Outcome::Tie),
        ];
        for (order, verdict, expected) in table {
            assert_eq!(outcome(order, verdict), expected, "{order:?} {verdict:?}");
        }
    }

    #[test]
    fn a_verdict_that_flips_with_the_order_counts_as_a_tie() {
        use Outcome::{Loss, Tie, Unparsed, Win};
        let table = [
            (Win, None, Win, false),
            (Win, Some(Win), Win, false),
            (Win, Some(Loss), Tie, true),
            (Loss, Some(Win), Tie, true),
            (Tie, Some(Win), Tie, true),
            (Loss, Some(Tie), Tie, true),
            (Tie, Some(Tie), Tie, false),
            (Unparsed, Some(Loss), Loss, false),
            (Win, Some(Unparsed), Win, false),
            (Unparsed, Some(Unparsed), Unparsed, false),
        ];
        for (first, second, expected, flipped) in table {
            assert_eq!(
                combined(first, second),
                (expected, flipped),
                "{first:?} {second:?}"
            );
        }
    }

    #[test]
    fn the_order_is_the_same_for_the_same_seed_and_about_half_child_first() {
        let orders: Vec<Order> = (0..1000).map(|i| order(42, i)).collect();
        assert_eq!(orders, (0..1000).map(|i| order(42, i)).collect::<Vec<_>>());
        let child_a = orders.iter().filter(|o| **o == Order::ChildA).count();
        assert!((450..=550).contains(&child_a), "{child_a}");
        assert_ne!(orders, (0..1000).map(|i| order(43, i)).collect::<Vec<_>>());
    }

    #[test]
    fn every_question_is_swapped_up_to_fifty_then_fifty_of_them() {
        assert_eq!(swap_sample(7, 3), vec![true; 3]);
        assert_eq!(swap_sample(7, 50), vec![true; 50]);
        let sample = swap_sample(7, 400);
        assert_eq!(sample.iter().filter(|s| **s).count(), SWAP_SAMPLE);
        assert_eq!(sample, swap_sample(7, 400));
        assert_ne!(sample, swap_sample(8, 400));
    }
}

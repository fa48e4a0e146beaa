//! The numbers of the report (CMP-21, CMP-24, CMP-25, issue 15): counts, every rate with
//! its Wilson score 95% interval and the count it rests on, the flip rate of the swapped
//! judgements, per-topic rows, nearest-rank percentiles over the successful child
//! answers, tokens per second and the cost rows. Pure.

use serde::Serialize;

use super::order::{Outcome, Verdict};

/// The normal quantile of a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// A rate of `count` out of `of` with its Wilson score 95% interval; all `None` when `of`
/// is 0.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct Rate {
    /// Numerator.
    pub count: u64,
    /// Denominator.
    pub of: u64,
    /// `count / of`.
    pub rate: Option<f64>,
    /// Lower end of the interval.
    pub low: Option<f64>,
    /// Upper end of the interval.
    pub high: Option<f64>,
}

impl Rate {
    /// `count` out of `of`.
    #[must_use]
    #[allow(
        clippy::cast_precision_loss,
        reason = "question counts are far below 2^52"
    )]
    pub fn new(count: u64, of: u64) -> Self {
        if of == 0 {
            return Self {
                count,
                of,
                rate: None,
                low: None,
                high: None,
            };
        }
        let n = of as f64;
        let p = count as f64 / n;
        let z2 = Z95 * Z95;
        let denominator = 1.0 + z2 / n;
        let centre = (p + z2 / (2.0 * n)) / denominator;
        let half = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denominator;
        Self {
            count,
            of,
            rate: Some(p),
            low: Some((centre - half).max(0.0)),
            high: Some((centre + half).min(1.0)),
        }
    }

    /// Whether the interval holds `value`.
    #[must_use]
    pub fn contains(&self, value: f64) -> bool {
        matches!((self.low, self.high), (Some(low), Some(high)) if low <= value && value <= high)
    }
}

/// What the statistics need of one question.
#[derive(Debug, Clone, PartialEq)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent facts of one question"
)]
pub struct Item {
    /// Its topic.
    pub topic: String,
    /// Its result (a child error is a loss).
    pub outcome: Outcome,
    /// The child did not answer.
    pub child_error: bool,
    /// It was judged in the swapped order too.
    pub swapped: bool,
    /// The verdict flipped with the order.
    pub flipped: bool,
    /// The judge's two verdicts on A and B, in the drawn order then the swapped one,
    /// when both parsed.
    pub verdicts: Option<(Verdict, Verdict)>,
    /// The child's answer was cut at the token limit.
    pub cut: bool,
    /// The child's timings, when it answered.
    pub child: Option<Timing>,
    /// The parent's billed tokens from the dataset's `meta`.
    pub parent_tokens: (u64, u64),
}

/// One answer's timings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Timing {
    /// Seconds to the first token.
    pub ttft: f64,
    /// Seconds in all.
    pub total: f64,
    /// Output tokens.
    pub tokens: u64,
}

/// Wins, ties, losses and unparsed verdicts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Child better.
    pub wins: u64,
    /// Neither (flipped verdicts among them).
    pub ties: u64,
    /// Parent better (child errors among them).
    pub losses: u64,
    /// Not counted.
    pub unparsed: u64,
}

impl Counts {
    fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Win => self.wins += 1,
            Outcome::Tie => self.ties += 1,
            Outcome::Loss => self.losses += 1,
            Outcome::Unparsed => self.unparsed += 1,
        }
    }

    /// Wins and ties over wins, ties and losses (unparsed left out).
    #[must_use]
    pub fn win_or_tie(&self) -> Rate {
        Rate::new(self.wins + self.ties, self.wins + self.ties + self.losses)
    }

    /// Wins over wins and losses: whether the judge could tell the two apart at all.
    #[must_use]
    pub fn decided(&self) -> Rate {
        Rate::new(self.wins, self.wins + self.losses)
    }
}

/// A topic's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopicRow {
    /// Topic name.
    pub topic: String,
    /// Its counts.
    pub counts: Counts,
    /// Its win-or-tie rate.
    pub win_or_tie: Rate,
}

/// The child's cost settings (`[compare]`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Prices {
    /// USD per million parent input tokens.
    pub parent_in: Option<f64>,
    /// USD per million parent output tokens.
    pub parent_out: Option<f64>,
    /// USD per hour of the child's hardware.
    pub child_per_hour: Option<f64>,
}

/// What the judge could tell (issue 35): how often its two orders agree, and what
/// the agreeing verdicts say.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Judgement {
    /// Questions whose two orders agree, over those judged in both orders.
    pub consistency: Rate,
    /// The child's wins over the agreeing verdicts (wins, ties and losses).
    pub consistent_wins: Rate,
    /// Verdicts that flipped because the judge preferred the first answer both times.
    pub flips_first: u64,
    /// Verdicts that flipped because the judge preferred the second answer both times.
    pub flips_second: u64,
    /// `[compare] min_judge_consistency`, which it was held to.
    pub min_consistency: f64,
    /// Whether the consistency reached it; otherwise the compare is inconclusive.
    pub conclusive: bool,
}

/// The [`Judgement`] of `items` held to `min_consistency`.
#[must_use]
pub fn judgement(items: &[Item], min_consistency: f64) -> Judgement {
    let both: Vec<&Item> = items.iter().filter(|i| i.swapped).collect();
    let agreeing: Vec<&Item> = both.iter().copied().filter(|i| !i.flipped).collect();
    let counted = agreeing
        .iter()
        .filter(|i| i.outcome != Outcome::Unparsed)
        .count() as u64;
    let wins = agreeing
        .iter()
        .filter(|i| i.outcome == Outcome::Win)
        .count() as u64;
    let flips = |verdict| {
        both.iter()
            .filter(|i| i.flipped && i.verdicts == Some((verdict, verdict)))
            .count() as u64
    };
    let consistency = Rate::new(agreeing.len() as u64, both.len() as u64);
    Judgement {
        consistency,
        consistent_wins: Rate::new(wins, counted),
        flips_first: flips(Verdict::A),
        flips_second: flips(Verdict::B),
        min_consistency,
        conclusive: consistency.rate.is_some_and(|r| r >= min_consistency),
    }
}

/// The summary of a compare (CMP-21 item 2, with the intervals).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Questions compared.
    pub questions: u64,
    /// What the judge could tell (issue 35).
    pub judge: Judgement,
    /// Counts over all questions.
    pub counts: Counts,
    /// Wins and ties over wins, ties and losses.
    pub win_or_tie: Rate,
    /// Wins over wins and losses.
    pub decided: Rate,
    /// Child errors (counted as losses).
    pub child_errors: u64,
    /// Child answers cut at the token limit.
    pub cut: u64,
    /// Verdicts that flipped, over the questions judged in both orders.
    pub flips: Rate,
    /// Latency p50, seconds (successful answers only).
    pub latency_p50: Option<f64>,
    /// Latency p95, seconds.
    pub latency_p95: Option<f64>,
    /// Time to first token p50, seconds.
    pub ttft_p50: Option<f64>,
    /// Time to first token p95, seconds.
    pub ttft_p95: Option<f64>,
    /// Output tokens over generation time.
    pub tokens_per_second: Option<f64>,
    /// Parent cost per 1,000 requests, USD.
    pub parent_cost_per_1000: Option<f64>,
    /// Child cost per 1,000 requests, USD (an upper bound: one request at a time).
    pub child_cost_per_1000: Option<f64>,
    /// Child cost over parent cost.
    pub cost_ratio: Option<f64>,
    /// Per topic, in first-seen order.
    pub topics: Vec<TopicRow>,
}

/// The nearest-rank `p`-th percentile (0 < p <= 100) of `values` (CMP-24).
#[must_use]
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a rank among at most millions of answers"
)]
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted.get(rank.min(sorted.len()) - 1).copied()
}

/// The summary of `items` under `prices`, the judge held to `min_consistency`.
#[must_use]
#[allow(clippy::cast_precision_loss, reason = "token and question counts")]
pub fn summarize(items: &[Item], prices: Prices, min_consistency: f64) -> Summary {
    let mut counts = Counts::default();
    let mut topics: Vec<(String, Counts)> = Vec::new();
    for item in items {
        counts.add(item.outcome);
        if let Some((_, c)) = topics.iter_mut().find(|(t, _)| *t == item.topic) {
            c.add(item.outcome);
        } else {
            let mut c = Counts::default();
            c.add(item.outcome);
            topics.push((item.topic.clone(), c));
        }
    }
    let timings: Vec<Timing> = items.iter().filter_map(|i| i.child).collect();
    let totals: Vec<f64> = timings.iter().map(|t| t.total).collect();
    let ttfts: Vec<f64> = timings.iter().map(|t| t.ttft).collect();
    let seconds: f64 = totals.iter().sum();
    let tokens: u64 = timings.iter().map(|t| t.tokens).sum();
    let n = items.len() as f64;
    let parent_cost_per_1000 = match (prices.parent_in, prices.parent_out) {
        (Some(price_in), Some(price_out)) if !items.is_empty() => {
            let input: u64 = items.iter().map(|i| i.parent_tokens.0).sum();
            let output: u64 = items.iter().map(|i| i.parent_tokens.1).sum();
            Some(1000.0 * (input as f64 / n * price_in + output as f64 / n * price_out) / 1e6)
        }
        _ => None,
    };
    let child_cost_per_1000 = match prices.child_per_hour {
        Some(hourly) if !timings.is_empty() => {
            Some(1000.0 * (seconds / timings.len() as f64) * hourly / 3600.0)
        }
        _ => None,
    };
    let cost_ratio = match (child_cost_per_1000, parent_cost_per_1000) {
        (Some(child), Some(parent)) if parent > 0.0 => Some(child / parent),
        _ => None,
    };
    let swapped = items.iter().filter(|i| i.swapped).count() as u64;
    let flipped = items.iter().filter(|i| i.flipped).count() as u64;
    Summary {
        questions: items.len() as u64,
        judge: judgement(items, min_consistency),
        counts,
        win_or_tie: counts.win_or_tie(),
        decided: counts.decided(),
        child_errors: items.iter().filter(|i| i.child_error).count() as u64,
        cut: items.iter().filter(|i| i.cut).count() as u64,
        flips: Rate::new(flipped, swapped),
        latency_p50: percentile(&totals, 50.0),
        latency_p95: percentile(&totals, 95.0),
        ttft_p50: percentile(&ttfts, 50.0),
        ttft_p95: percentile(&ttfts, 95.0),
        tokens_per_second: (seconds > 0.0).then(|| tokens as f64 / seconds),
        parent_cost_per_1000,
        child_cost_per_1000,
        cost_ratio,
        topics: topics
            .into_iter()
            .map(|(topic, counts)| TopicRow {
                topic,
                win_or_tie: counts.win_or_tie(),
                counts,
            })
            .collect(),
    }
}

/// Questions of `topic` judged in both orders alike (a consistent judge), one per
/// outcome, no child answer timed: the report's and the listing's tests.
#[cfg(test)]
pub(crate) fn judged_alike(topic: &str, outcomes: &[Outcome]) -> Vec<Item> {
    outcomes
        .iter()
        .map(|&outcome| Item {
            topic: topic.into(),
            outcome,
            child_error: false,
            swapped: true,
            flipped: false,
            verdicts: None,
            cut: false,
            child: None,
            parent_tokens: (0, 0),
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::float_cmp)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-5
    }

    #[test]
    fn wilson_intervals_match_hand_computed_values() {
        // (count, of, low, high), computed by hand from the score formula with z = 1.96.
        let table = [
            (7, 10, 0.396_8, 0.892_2),
            (0, 10, 0.0, 0.277_5),
            (10, 10, 0.722_5, 1.0),
            (50, 100, 0.403_8, 0.596_2),
            (1, 1, 0.206_5, 1.0),
        ];
        for (count, of, low, high) in table {
            let rate = Rate::new(count, of);
            assert!(close(rate.low.unwrap(), low), "{count}/{of}: {rate:?}");
            assert!(close(rate.high.unwrap(), high), "{count}/{of}: {rate:?}");
        }
        let none = Rate::new(0, 0);
        assert_eq!((none.rate, none.low, none.high), (None, None, None));
        assert!(Rate::new(5, 10).contains(0.5) && !Rate::new(10, 10).contains(0.5));
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let values = [0.5, 3.0, 1.0, 2.0, 10.0];
        let table = [
            (50.0, 2.0),
            (95.0, 10.0),
            (20.0, 0.5),
            (21.0, 1.0),
            (100.0, 10.0),
        ];
        for (p, expected) in table {
            assert_eq!(percentile(&values, p), Some(expected), "p{p}");
        }
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[4.0], 95.0), Some(4.0));
    }

    fn item(topic: &str, outcome: Outcome, child: Option<(f64, f64, u64)>) -> Item {
        Item {
            topic: topic.into(),
            outcome,
            child_error: child.is_none(),
            swapped: false,
            flipped: false,
            verdicts: None,
            cut: false,
            child: child.map(|(ttft, total, tokens)| Timing {
                ttft,
                total,
                tokens,
            }),
            parent_tokens: (100, 300),
        }
    }

    #[test]
    fn the_summary_counts_rates_latency_and_costs() {
        let mut items = vec![
            item("a", Outcome::Win, Some((0.1, 1.0, 10))),
            item("a", Outcome::Tie, Some((0.2, 2.0, 20))),
            item("b", Outcome::Loss, Some((0.3, 3.0, 30))),
            item("b", Outcome::Loss, None),
            item("b", Outcome::Unparsed, Some((0.4, 4.0, 40))),
        ];
        items[1].swapped = true;
        items[1].flipped = true;
        items[2].swapped = true;
        items[2].cut = true;
        let prices = Prices {
            parent_in: Some(3.0),
            parent_out: Some(15.0),
            child_per_hour: Some(0.72),
        };
        let s = summarize(&items, prices, 0.6);
        assert_eq!(
            s.counts,
            Counts {
                wins: 1,
                ties: 1,
                losses: 2,
                unparsed: 1
            }
        );
        assert_eq!((s.win_or_tie.count, s.win_or_tie.of), (2, 4));
        assert_eq!((s.flips.count, s.flips.of), (1, 2));
        assert_eq!((s.child_errors, s.cut, s.questions), (1, 1, 5));
        assert_eq!(s.latency_p50, Some(2.0));
        assert_eq!(s.latency_p95, Some(4.0));
        assert_eq!(s.ttft_p50, Some(0.2));
        assert!(close(s.tokens_per_second.unwrap(), 10.0));
        // 1000 * (100 * 3 + 300 * 15) / 1e6 = 4.8; 1000 * 2.5 s * 0.72 / 3600 = 0.5.
        assert!(close(s.parent_cost_per_1000.unwrap(), 4.8));
        assert!(close(s.child_cost_per_1000.unwrap(), 0.5));
        assert!(close(s.cost_ratio.unwrap(), 0.5 / 4.8));
        assert_eq!(s.topics.len(), 2);
        assert_eq!(
            (s.topics[0].win_or_tie.count, s.topics[0].win_or_tie.of),
            (2, 2)
        );
        assert_eq!(
            (s.topics[1].win_or_tie.count, s.topics[1].win_or_tie.of),
            (0, 2)
        );
        let unpriced = summarize(
            &items,
            Prices {
                parent_in: Some(1.0),
                ..Prices::default()
            },
            0.6,
        );
        assert_eq!(
            (
                unpriced.parent_cost_per_1000,
                unpriced.child_cost_per_1000,
                unpriced.cost_ratio
            ),
            (None, None, None)
        );
    }

    /// `n` questions judged in both orders, each with its two verdicts and the
    /// child's answer as A in the first order.
    fn judged(pairs: &[(Verdict, Verdict)]) -> Vec<Item> {
        pairs
            .iter()
            .map(|&(first, second)| {
                let (outcome, flipped) = crate::compare::order::combined(
                    crate::compare::order::outcome(crate::compare::order::Order::ChildA, first),
                    Some(crate::compare::order::outcome(
                        crate::compare::order::Order::ParentA,
                        second,
                    )),
                );
                Item {
                    swapped: true,
                    flipped,
                    verdicts: Some((first, second)),
                    ..item("t", outcome, Some((0.1, 1.0, 10)))
                }
            })
            .collect()
    }

    #[test]
    fn a_judge_that_always_answers_the_same_position_is_inconclusive() {
        use Verdict::{A, B, Tie};
        // Always "A": every verdict flips, all of them on the first position.
        let always_a = judgement(&judged(&[(A, A); 20]), 0.6);
        assert_eq!(
            (always_a.consistency.count, always_a.consistency.of),
            (0, 20)
        );
        assert_eq!((always_a.flips_first, always_a.flips_second), (20, 0));
        assert!(!always_a.conclusive);
        assert_eq!(always_a.consistent_wins.rate, None);
        let always_b = judgement(&judged(&[(B, B); 4]), 0.6);
        assert_eq!(
            (
                always_b.flips_first,
                always_b.flips_second,
                always_b.conclusive
            ),
            (0, 4, false)
        );
        // An honest judge that prefers the parent on 3 of 4 and the child on 1: the
        // parent is B in the first order (child A) and A in the swapped one.
        let honest = judgement(&judged(&[(B, A), (B, A), (B, A), (A, B)]), 0.6);
        assert_eq!((honest.consistency.count, honest.consistency.of), (4, 4));
        assert_eq!(
            (honest.consistent_wins.count, honest.consistent_wins.of),
            (1, 4)
        );
        assert!(honest.conclusive);
        // Half consistent: below 0.6 is inconclusive, at the threshold it is not.
        let half = judged(&[(B, A), (A, A), (Tie, Tie), (B, B)]);
        let j = judgement(&half, 0.6);
        assert_eq!(
            (j.consistency.count, j.consistency.of, j.conclusive),
            (2, 4, false)
        );
        assert_eq!((j.flips_first, j.flips_second), (1, 1));
        assert!(judgement(&half, 0.5).conclusive);
        // Nothing judged in both orders: nothing shows the judge consistent.
        assert!(!judgement(&[item("t", Outcome::Loss, None)], 0.0).conclusive);
    }
}

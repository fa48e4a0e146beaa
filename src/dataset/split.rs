//! The train/eval split (SPL-1..SPL-6): a pure function of the answers, the question IDs,
//! the configured topics, `eval_ratio` and `seed`.
//!
//! `E = round(eval_ratio × U)` eval items (clamped to `[1, U − 1]` when `U ≥ 2`) are
//! apportioned over topics, then over each topic's subtopics, by the largest-remainder
//! method with ties broken in an order drawn from a `ChaCha8` generator seeded with
//! `seed`; within a subtopic a seeded shuffle picks the items. Output keeps the order of
//! `answers.jsonl`. `ChaCha8Rng` and `SliceRandom::shuffle` are value-stable within their
//! major versions (rand's documentation), so a seed gives the same split across builds.

use std::collections::{BTreeMap, HashSet};

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use super::records::{AnswerRecord, Exclusion};
use crate::llm::ReasoningKind;

/// Counts of one topic (or of all).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SplitCounts {
    /// Answers in `train.jsonl`.
    pub train: u64,
    /// Answers in `eval.jsonl`.
    pub eval: u64,
    /// Excluded answers by code (orphans not included).
    pub excluded: BTreeMap<Exclusion, u64>,
    /// Answers whose topic is gone or whose question ID is not in `questions.jsonl`.
    pub orphaned: u64,
}

impl SplitCounts {
    /// Total excluded answers.
    #[must_use]
    pub fn excluded_total(&self) -> u64 {
        self.excluded.values().sum()
    }
}

/// The split's files and counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    /// Records of `train.jsonl`, in `answers.jsonl` order.
    pub train: Vec<AnswerRecord>,
    /// Records of `eval.jsonl`, in `answers.jsonl` order.
    pub eval: Vec<AnswerRecord>,
    /// Counts over every topic.
    pub total: SplitCounts,
    /// Counts per topic name (configured or not).
    pub by_topic: BTreeMap<String, SplitCounts>,
}

/// Splits `answers` (SPL-1..SPL-6). `topics` are the configured topic names in file order;
/// `question_ids` the IDs present in `questions.jsonl`.
#[must_use]
pub fn split<S: std::hash::BuildHasher>(
    answers: &[AnswerRecord],
    question_ids: &HashSet<&str, S>,
    topics: &[&str],
    eval_ratio: f64,
    seed: u64,
) -> Split {
    let mut result = Split::default();
    // Usable answer indices grouped by topic (config order), then subtopic (first seen).
    let mut groups: Vec<Vec<(String, Vec<usize>)>> = vec![Vec::new(); topics.len()];
    let mut usable = 0_u64;
    for (index, answer) in answers.iter().enumerate() {
        let counts = result.by_topic.entry(answer.topic.clone()).or_default();
        let topic_index = topics.iter().position(|t| *t == answer.topic);
        match topic_index {
            Some(topic_index) if question_ids.contains(answer.id.as_str()) => {
                if let Some(code) = answer.meta.excluded {
                    *counts.excluded.entry(code).or_default() += 1;
                    *result.total.excluded.entry(code).or_default() += 1;
                    continue;
                }
                usable += 1;
                let subtopics = &mut groups[topic_index];
                match subtopics
                    .iter_mut()
                    .find(|(name, _)| *name == answer.subtopic)
                {
                    Some((_, items)) => items.push(index),
                    None => subtopics.push((answer.subtopic.clone(), vec![index])),
                }
            }
            _ => {
                counts.orphaned += 1;
                result.total.orphaned += 1;
            }
        }
    }

    let eval_total = eval_size(usable, eval_ratio);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let topic_sizes: Vec<u64> = groups
        .iter()
        .map(|subs| subs.iter().map(|(_, items)| items.len() as u64).sum())
        .collect();
    let topic_shares = apportion(eval_total, &topic_sizes, &mut rng);
    let mut in_eval = vec![false; answers.len()];
    for (subtopics, share) in groups.iter().zip(topic_shares) {
        let sizes: Vec<u64> = subtopics
            .iter()
            .map(|(_, items)| items.len() as u64)
            .collect();
        let shares = apportion(share, &sizes, &mut rng);
        for ((_, items), take) in subtopics.iter().zip(shares) {
            let mut order = items.clone();
            order.shuffle(&mut rng);
            for index in order
                .into_iter()
                .take(usize::try_from(take).unwrap_or(usize::MAX))
            {
                in_eval[index] = true;
            }
        }
    }

    for (index, answer) in answers.iter().enumerate() {
        let usable = topics.contains(&answer.topic.as_str())
            && question_ids.contains(answer.id.as_str())
            && answer.meta.excluded.is_none();
        if !usable {
            continue;
        }
        let counts = result.by_topic.entry(answer.topic.clone()).or_default();
        let record = training_record(answer);
        if in_eval[index] {
            counts.eval += 1;
            result.total.eval += 1;
            result.eval.push(record);
        } else {
            counts.train += 1;
            result.total.train += 1;
            result.train.push(record);
        }
    }
    result
}

/// `E` of SPL-3: `round(ratio × usable)` half away from zero, clamped to
/// `[1, usable − 1]` when `usable ≥ 2`, else 0.
#[must_use]
pub fn eval_size(usable: u64, ratio: f64) -> u64 {
    if usable < 2 {
        return 0;
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let raw = (ratio * usable as f64).round().max(0.0) as u64;
    raw.clamp(1, usable - 1)
}

/// Apportions `total` over `sizes` by the largest-remainder method: each part gets
/// `floor(total × size / sum)`, and the parts with the largest remainders get one more,
/// equal remainders ordered by a draw from `rng`. Exact integer arithmetic.
fn apportion(total: u64, sizes: &[u64], rng: &mut ChaCha8Rng) -> Vec<u64> {
    let sum: u64 = sizes.iter().sum();
    if sum == 0 || total == 0 {
        return vec![0; sizes.len()];
    }
    let total = u128::from(total);
    let sum = u128::from(sum);
    let mut shares: Vec<u64> = sizes
        .iter()
        .map(|&size| u64::try_from(total * u128::from(size) / sum).unwrap_or(u64::MAX))
        .collect();
    let given: u128 = shares.iter().map(|&s| u128::from(s)).sum();
    let left = usize::try_from(total - given).unwrap_or(usize::MAX);
    let mut tie_order: Vec<usize> = (0..sizes.len()).collect();
    tie_order.shuffle(rng);
    let mut rank = vec![0; sizes.len()];
    for (position, &index) in tie_order.iter().enumerate() {
        rank[index] = position;
    }
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by(|&a, &b| {
        let ra = total * u128::from(sizes[a]) % sum;
        let rb = total * u128::from(sizes[b]) % sum;
        rb.cmp(&ra).then(rank[a].cmp(&rank[b]))
    });
    for &index in order.iter().take(left) {
        shares[index] += 1;
    }
    shares
}

/// The record as trained on (SPL-6): reasoning kept only when it is raw; no `edited` mark,
/// so the lines keep the DAT-4 format.
fn training_record(answer: &AnswerRecord) -> AnswerRecord {
    let mut record = answer.clone();
    record.meta.edited = false;
    if record.meta.reasoning_kind != Some(ReasoningKind::Raw) {
        for message in &mut record.messages {
            message.reasoning_content = None;
        }
    }
    record
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::records::test_answer;

    fn answer(id: &str, topic: &str, subtopic: &str, excluded: Option<Exclusion>) -> AnswerRecord {
        test_answer((id, topic, subtopic), ReasoningKind::Summary, excluded)
    }

    #[test]
    fn eval_sizes() {
        assert_eq!(eval_size(0, 0.1), 0);
        assert_eq!(eval_size(1, 0.9), 0);
        assert_eq!(eval_size(2, 0.0), 1);
        assert_eq!(eval_size(2, 0.99), 1);
        assert_eq!(eval_size(100, 0.1), 10);
        assert_eq!(eval_size(25, 0.1), 3); // 2.5 rounds away from zero
        assert_eq!(eval_size(15, 0.1), 2); // 1.5 rounds away from zero
    }

    #[test]
    fn apportion_is_exact_and_complete() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        assert_eq!(apportion(10, &[50, 30, 20], &mut rng), vec![5, 3, 2]);
        let shares = apportion(3, &[1, 1, 1, 1, 1], &mut rng);
        assert_eq!(shares.iter().sum::<u64>(), 3);
        assert!(shares.iter().all(|&s| s <= 1));
        assert_eq!(apportion(0, &[3, 4], &mut rng), vec![0, 0]);
        assert_eq!(apportion(2, &[], &mut rng), Vec::<u64>::new());
    }

    #[test]
    fn split_spreads_counts_and_is_deterministic() {
        let mut answers = Vec::new();
        let mut ids = Vec::new();
        for t in ["a", "b"] {
            for s in 0..5 {
                for q in 0..10 {
                    let id = format!("{t}{s}{q}");
                    ids.push(id.clone());
                    answers.push(answer(&id, t, &format!("s{s}"), None));
                }
            }
        }
        answers.push(answer("x1", "a", "s0", Some(Exclusion::Truncated)));
        answers.push(answer("gone", "a", "s0", None));
        answers.push(answer("o1", "removed", "s", None));
        ids.push("x1".into());
        ids.push("o1".into());
        let id_set: HashSet<&str> = ids.iter().map(String::as_str).collect();
        let result = split(&answers, &id_set, &["a", "b"], 0.1, 42);
        assert_eq!(result.total.train, 90);
        assert_eq!(result.total.eval, 10);
        assert_eq!(result.total.orphaned, 2);
        assert_eq!(result.total.excluded.get(&Exclusion::Truncated), Some(&1));
        assert_eq!(result.by_topic["a"].eval, 5);
        assert_eq!(result.by_topic["b"].eval, 5);
        // One eval item per subtopic.
        for t in ["a", "b"] {
            for s in 0..5 {
                let sub = format!("s{s}");
                assert_eq!(
                    result
                        .eval
                        .iter()
                        .filter(|r| r.topic == t && r.subtopic == sub)
                        .count(),
                    1
                );
            }
        }
        // Summaries are not trained on.
        assert!(
            result
                .train
                .iter()
                .all(|r| r.messages[1].reasoning_content.is_none())
        );
        assert_eq!(split(&answers, &id_set, &["a", "b"], 0.1, 42), result);
        let other = split(&answers, &id_set, &["a", "b"], 0.1, 7);
        assert_ne!(other.eval, result.eval);
        // Order of answers.jsonl is kept.
        let positions: Vec<usize> = result
            .train
            .iter()
            .map(|r| answers.iter().position(|a| a.id == r.id).unwrap())
            .collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn never_an_empty_train_set() {
        let answers = vec![answer("1", "a", "s", None), answer("2", "a", "s", None)];
        let ids: HashSet<&str> = ["1", "2"].into_iter().collect();
        let result = split(&answers, &ids, &["a"], 0.99, 1);
        assert_eq!((result.total.train, result.total.eval), (1, 1));
        let one = split(&answers[..1], &ids, &["a"], 0.5, 1);
        assert_eq!((one.total.train, one.total.eval), (1, 0));
    }

    #[test]
    fn raw_reasoning_is_kept() {
        let mut raw = answer("1", "a", "s", None);
        raw.meta.reasoning_kind = Some(ReasoningKind::Raw);
        let ids: HashSet<&str> = ["1"].into_iter().collect();
        let result = split(&[raw], &ids, &["a"], 0.1, 1);
        assert_eq!(
            result.train[0].messages[1].reasoning_content.as_deref(),
            Some("r")
        );
    }
}

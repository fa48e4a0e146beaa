//! The lexical near-duplicate check (DDP-2): questions are normalized (lower-cased,
//! punctuation removed, whitespace collapsed) and compared as word sets; two are
//! duplicates when the Jaccard similarity of their sets is strictly above the threshold,
//! or when their normalized texts are identical.
//!
//! Speed: an inverted index from word to questions. A stored set `B` can exceed the
//! threshold `t` against a candidate `A` only if it shares at least `m = ⌊t·|A|⌋ + 1` of
//! `A`'s words (as `|A ∪ B| ≥ |A|`), so by pigeonhole it contains one of `A`'s
//! `|A| − m + 1` rarest words. Only the questions listed under those words are verified,
//! which keeps a check fast on topics of tens of thousands of questions (the "prefix
//! filter" of Chaudhuri, Ganti and Kaushik, "A Primitive Operator for Similarity Joins in
//! Data Cleaning", ICDE 2006, with a probe-side order that may change as the index grows).

use std::collections::{HashMap, HashSet};

/// Lower-cases `text`, drops punctuation and symbols, and collapses whitespace.
#[must_use]
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text
        .chars()
        .flat_map(char::to_lowercase)
        .filter(|c| c.is_alphanumeric() || c.is_whitespace())
        .collect::<String>()
        .split_whitespace()
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// The lexical index of one topic.
#[derive(Debug, Clone)]
pub struct LexicalIndex {
    threshold: f64,
    exact: HashSet<String>,
    vocabulary: HashMap<String, u32>,
    /// Question numbers under each word ID.
    postings: Vec<Vec<u32>>,
    /// Each question's sorted, distinct word IDs.
    sets: Vec<Box<[u32]>>,
}

impl LexicalIndex {
    /// An empty index with Jaccard threshold `threshold` (0..=1).
    #[must_use]
    pub fn new(threshold: f64) -> Self {
        Self {
            threshold,
            exact: HashSet::new(),
            vocabulary: HashMap::new(),
            postings: Vec::new(),
            sets: Vec::new(),
        }
    }

    /// The threshold.
    #[must_use]
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// Number of questions inserted.
    #[must_use]
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    /// Whether nothing was inserted.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// Adds a question.
    pub fn insert(&mut self, text: &str) {
        let normalized = normalize(text);
        let number = u32::try_from(self.sets.len()).unwrap_or(u32::MAX);
        let mut ids: Vec<u32> = normalized
            .split(' ')
            .filter(|w| !w.is_empty())
            .map(|word| {
                if let Some(&id) = self.vocabulary.get(word) {
                    id
                } else {
                    let id = u32::try_from(self.postings.len()).unwrap_or(u32::MAX);
                    self.vocabulary.insert(word.to_owned(), id);
                    self.postings.push(Vec::new());
                    id
                }
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        for &id in &ids {
            self.postings[id as usize].push(number);
        }
        self.sets.push(ids.into_boxed_slice());
        self.exact.insert(normalized);
    }

    /// Whether `text` duplicates an inserted question.
    #[must_use]
    pub fn is_duplicate(&self, text: &str) -> bool {
        let normalized = normalize(text);
        if self.exact.contains(&normalized) {
            return true;
        }
        let words: HashSet<&str> = normalized.split(' ').filter(|w| !w.is_empty()).collect();
        let size = words.len();
        if size == 0 {
            return false;
        }
        // Words unknown to the index have no postings and count as the rarest.
        let mut known: Vec<(usize, u32)> = Vec::with_capacity(size);
        let mut unknown = 0_usize;
        for word in &words {
            match self.vocabulary.get(*word) {
                Some(&id) => known.push((self.postings[id as usize].len(), id)),
                None => unknown += 1,
            }
        }
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let needed = ((self.threshold * size as f64) - 1e-9).floor().max(0.0) as usize + 1;
        if needed > size {
            return false;
        }
        let probes = size - needed + 1;
        if probes <= unknown {
            return false;
        }
        known.sort_unstable();
        let mut candidates: Vec<u32> = known
            .iter()
            .take(probes - unknown)
            .flat_map(|&(_, id)| self.postings[id as usize].iter().copied())
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        let mut mine: Vec<u32> = known.iter().map(|&(_, id)| id).collect();
        mine.sort_unstable();
        candidates.into_iter().any(|number| {
            let other = &self.sets[number as usize];
            let shared = intersection_size(&mine, other);
            let union = size + other.len() - shared;
            #[allow(clippy::cast_precision_loss)]
            let similarity = shared as f64 / union as f64;
            similarity > self.threshold
        })
    }
}

/// Size of the intersection of two sorted, distinct lists.
fn intersection_size(a: &[u32], b: &[u32]) -> usize {
    let (mut i, mut j, mut shared) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    shared
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn jaccard(a: &str, b: &str) -> f64 {
        let (a, b) = (normalize(a), normalize(b));
        let a: HashSet<&str> = a.split(' ').filter(|w| !w.is_empty()).collect();
        let b: HashSet<&str> = b.split(' ').filter(|w| !w.is_empty()).collect();
        let union = a.union(&b).count();
        if union == 0 {
            return 0.0;
        }
        #[allow(clippy::cast_precision_loss)]
        let j = a.intersection(&b).count() as f64 / union as f64;
        j
    }

    #[test]
    fn normalization() {
        assert_eq!(
            normalize("  What's   THE\tbest, way?! "),
            "whats the best way"
        );
        assert_eq!(normalize("?!"), "");
    }

    #[test]
    fn exact_variants_and_threshold() {
        let mut index = LexicalIndex::new(0.8);
        index.insert("How does a hash map resolve collisions?");
        assert!(index.is_duplicate("how does a HASH map resolve   collisions"));
        // 6 of 7 words shared: 6/8 = 0.75, not above 0.8.
        assert!(!index.is_duplicate("How does a hash map avoid collisions?"));
        // Superset by one word: 7/8 = 0.875.
        assert!(index.is_duplicate("How does a hash map resolve collisions quickly?"));
        assert!(!index.is_duplicate("Explain lifetimes in Rust."));
        // Strictly greater: with threshold 0.75 a similarity of exactly 0.75 is kept.
        let mut strict = LexicalIndex::new(0.75);
        strict.insert("a b c d e f g");
        assert!(!strict.is_duplicate("a b c d e f x"));
        let mut zero = LexicalIndex::new(0.0);
        zero.insert("alpha beta");
        assert!(zero.is_duplicate("beta gamma"));
        assert!(!zero.is_duplicate("gamma delta"));
        let mut one = LexicalIndex::new(1.0);
        one.insert("a b");
        assert!(!one.is_duplicate("b a"));
        assert!(one.is_duplicate("A b!"));
    }

    proptest! {
        #[test]
        fn index_agrees_with_brute_force(
            stored in proptest::collection::vec("[a-e]( [a-e]){0,5}", 0..20),
            candidate in "[a-e]( [a-e]){0,5}",
            threshold in 0.0..=1.0f64,
        ) {
            let mut index = LexicalIndex::new(threshold);
            for text in &stored {
                index.insert(text);
            }
            let expected = stored.iter().any(|s| normalize(s) == normalize(&candidate) || jaccard(s, &candidate) > threshold);
            prop_assert_eq!(index.is_duplicate(&candidate), expected);
        }
    }
}

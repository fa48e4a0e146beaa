//! Near-duplicate questions (DDP-1..DDP-3): one [`Deduplicator`] per topic, seeded with
//! its accepted and rejected questions. A candidate is checked lexically first
//! ([`lexical`]: Jaccard similarity of word sets), then, when an embedder is configured,
//! by cosine similarity of embeddings ([`embedding`]). The checks are pure; the stage
//! fetches embeddings and admits one batch of a topic at a time (PIPE-23).

pub mod embedding;
pub mod lexical;

pub use embedding::EmbeddingIndex;
pub use lexical::{LexicalIndex, normalize};

/// The deduplicator of one topic.
#[derive(Debug, Clone)]
pub struct Deduplicator {
    lexical: LexicalIndex,
    embeddings: Option<EmbeddingIndex>,
}

impl Deduplicator {
    /// An empty deduplicator with the lexical threshold (`pipeline.dedup_threshold`).
    #[must_use]
    pub fn new(dedup_threshold: f64) -> Self {
        Self {
            lexical: LexicalIndex::new(dedup_threshold),
            embeddings: None,
        }
    }

    /// Adds a seed or accepted question to the lexical check.
    pub fn insert_text(&mut self, text: &str) {
        self.lexical.insert(text);
    }

    /// Number of questions in the lexical check.
    #[must_use]
    pub fn len(&self) -> usize {
        self.lexical.len()
    }

    /// Whether no question was added.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.lexical.len() == 0
    }

    /// The embedding check, once its seed vectors are set.
    #[must_use]
    pub fn embeddings(&self) -> Option<&EmbeddingIndex> {
        self.embeddings.as_ref()
    }

    /// Sets the embedding check (seed vectors already inside).
    pub fn set_embeddings(&mut self, index: EmbeddingIndex) {
        self.embeddings = Some(index);
    }

    /// The candidates (by index) that pass the lexical check against the seeded questions
    /// and against the candidates before them that passed (DDP-1, DDP-2).
    #[must_use]
    pub fn lexical_pass(&self, candidates: &[String]) -> Vec<usize> {
        let mut batch = LexicalIndex::new(self.lexical.threshold());
        let mut passed = Vec::new();
        for (index, candidate) in candidates.iter().enumerate() {
            if self.lexical.is_duplicate(candidate) || batch.is_duplicate(candidate) {
                continue;
            }
            batch.insert(candidate);
            passed.push(index);
        }
        passed
    }

    /// Records an accepted question: its text, and its vector when embeddings are on.
    pub fn commit(&mut self, text: &str, vector: Option<Vec<f32>>) {
        self.lexical.insert(text);
        if let (Some(index), Some(vector)) = (self.embeddings.as_mut(), vector) {
            index.insert(vector);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_members_are_checked_against_each_other() {
        let mut dedup = Deduplicator::new(0.8);
        dedup.insert_text("What is a monad?");
        let candidates = vec![
            "what is a MONAD".to_owned(),
            "How do closures capture variables?".to_owned(),
            "How do closures capture  variables".to_owned(),
            "Why use traits?".to_owned(),
        ];
        assert_eq!(dedup.lexical_pass(&candidates), vec![1, 3]);
        dedup.commit(&candidates[1], None);
        assert_eq!(dedup.lexical_pass(&candidates[1..]), vec![2]);
        assert_eq!(dedup.len(), 2);
    }
}

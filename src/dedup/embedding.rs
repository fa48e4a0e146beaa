//! The embedding near-duplicate check (DDP-3): a candidate is a duplicate when the cosine
//! similarity of its embedding to any stored one is strictly above
//! `pipeline.embedding_threshold`. Vectors are stored unit-length, so cosine is a dot
//! product.

/// The embeddings of one topic's seeded and accepted questions.
#[derive(Debug, Clone)]
pub struct EmbeddingIndex {
    threshold: f64,
    vectors: Vec<Vec<f32>>,
}

fn unit(mut vector: Vec<f32>) -> Vec<f32> {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in &mut vector {
            *x /= norm;
        }
    }
    vector
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum()
}

impl EmbeddingIndex {
    /// An index with threshold `threshold` (0..=1) holding `seeds`.
    #[must_use]
    pub fn new(threshold: f64, seeds: Vec<Vec<f32>>) -> Self {
        Self {
            threshold,
            vectors: seeds.into_iter().map(unit).collect(),
        }
    }

    /// Adds a vector.
    pub fn insert(&mut self, vector: Vec<f32>) {
        self.vectors.push(unit(vector));
    }

    /// Number of vectors.
    #[must_use]
    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    /// Whether there is none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    /// For each candidate vector, in order, whether it passes: not above the threshold
    /// against the stored vectors nor against the earlier passing candidates.
    #[must_use]
    pub fn pass(&self, candidates: &[Vec<f32>]) -> Vec<bool> {
        let mut accepted: Vec<Vec<f32>> = Vec::new();
        candidates
            .iter()
            .map(|candidate| {
                let candidate = unit(candidate.clone());
                let duplicate = self
                    .vectors
                    .iter()
                    .chain(accepted.iter())
                    .any(|other| dot(&candidate, other) > self.threshold);
                if !duplicate {
                    accepted.push(candidate);
                }
                !duplicate
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_above_threshold_is_a_duplicate() {
        let index = EmbeddingIndex::new(0.9, vec![vec![1.0, 0.0]]);
        let passes = index.pass(&[
            vec![2.0, 0.1], // cos ≈ 0.999
            vec![0.0, 1.0], // orthogonal
            vec![0.1, 1.0], // near the previous passing candidate
            vec![1.0, 1.0], // cos ≈ 0.707 to both
        ]);
        assert_eq!(passes, vec![false, true, false, true]);
    }
}

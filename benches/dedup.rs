//! Dedup speed: a topic holding 50,000 accepted questions admits a new batch of 10
//! (lexical check of each candidate against the topic and the batch, then commit).
//! Target: under 10 ms per batch. Run with `cargo bench --bench dedup`.

use std::time::{Duration, Instant};

use overbrainer::dedup::Deduplicator;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const STARTS: [&str; 8] = [
    "what is the difference between",
    "how does",
    "why would you use",
    "explain how",
    "when should one prefer",
    "what are the trade-offs of",
    "how can you debug",
    "describe the role of",
];

fn question(rng: &mut ChaCha8Rng, vocabulary: &[String]) -> String {
    let start = STARTS[rng.random_range(0..STARTS.len())];
    let words = rng.random_range(4..9);
    let mut text = start.to_owned();
    for _ in 0..words {
        // Skewed toward the start of the vocabulary, like real word frequencies.
        let x: f64 = rng.random();
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let index = ((x * x * x) * vocabulary.len() as f64) as usize;
        text.push(' ');
        text.push_str(&vocabulary[index.min(vocabulary.len() - 1)]);
    }
    text.push('?');
    text
}

fn main() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let vocabulary: Vec<String> = (0..20_000).map(|i| format!("term{i}")).collect();
    let mut dedup = Deduplicator::new(0.8);
    let build = Instant::now();
    let mut stored = Vec::new();
    for _ in 0..50_000 {
        let q = question(&mut rng, &vocabulary);
        dedup.commit(&q, None);
        stored.push(q);
    }
    println!(
        "dedup: indexed {} questions in {:.2?}",
        dedup.len(),
        build.elapsed()
    );
    let mut times: Vec<Duration> = Vec::new();
    let mut admitted = 0;
    for _ in 0..200 {
        // Seven fresh questions and three near-duplicates (a stored question, re-cased,
        // with one word more).
        let mut batch: Vec<String> = (0..7).map(|_| question(&mut rng, &vocabulary)).collect();
        for _ in 0..3 {
            let old = &stored[rng.random_range(0..stored.len())];
            batch.push(format!("{} in practice", old.to_uppercase()));
        }
        let start = Instant::now();
        let passed = dedup.lexical_pass(&batch);
        for &index in &passed {
            dedup.commit(&batch[index], None);
        }
        times.push(start.elapsed());
        admitted += passed.len();
    }
    times.sort();
    println!(
        "dedup: batch of 10 against ~50,000: median {:.3?}, p99 {:.3?}, max {:.3?} ({admitted} of 2000 admitted)",
        times[times.len() / 2],
        times[times.len() * 99 / 100],
        times[times.len() - 1]
    );
}

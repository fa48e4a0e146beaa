//! `[pipeline]`: how the dataset stages run, with the defaults and the rules
//! (spec/config.md, table 2.5).

use serde::{Deserialize, Serialize};

use super::rules::Check;

/// `[pipeline]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Pipeline {
    /// Parallel subtopics in `questions`, parallel requests in `answers` and the judge.
    pub concurrency: u32,
    /// Retries per request; also the no-progress batches after which a subtopic stops.
    pub max_retries: u32,
    /// Word-overlap similarity above which two questions are duplicates, 0..=1.
    pub dedup_threshold: f64,
    /// Embedding similarity above which two questions are duplicates, 0..=1.
    pub embedding_threshold: f64,
    /// Questions asked per generator call.
    pub question_batch_size: u32,
    /// Timeout of one request, in seconds.
    pub request_timeout_secs: u64,
    /// The longest `Retry-After` a request waits for, in seconds; a longer one stops the
    /// stage with what is done saved.
    pub max_retry_wait_secs: u64,
    /// Share of usable answers held out for eval, 0 <= r < 1.
    pub eval_ratio: f64,
    /// Seed of the split.
    pub seed: u64,
    /// Store the answer system prompt as the first message.
    pub include_system_prompt: bool,
}

impl Default for Pipeline {
    fn default() -> Self {
        Self {
            concurrency: 8,
            max_retries: 5,
            dedup_threshold: 0.8,
            embedding_threshold: 0.9,
            question_batch_size: 10,
            request_timeout_secs: 600,
            max_retry_wait_secs: 600,
            eval_ratio: 0.1,
            seed: 42,
            include_system_prompt: false,
        }
    }
}

/// The rules of `[pipeline]`.
pub(super) fn check(check: &mut Check<'_>, pipeline: &Pipeline) {
    if !(1..=1024).contains(&pipeline.concurrency) {
        check.fail("pipeline.concurrency", "out of range: must be 1..=1024");
    }
    check.unit("pipeline.dedup_threshold", pipeline.dedup_threshold, false);
    check.unit(
        "pipeline.embedding_threshold",
        pipeline.embedding_threshold,
        false,
    );
    check.at_least(
        "pipeline.question_batch_size",
        pipeline.question_batch_size.into(),
        1,
    );
    check.at_least(
        "pipeline.request_timeout_secs",
        pipeline.request_timeout_secs,
        1,
    );
    check.unit("pipeline.eval_ratio", pipeline.eval_ratio, true);
}

//! `[compare]`: the child against the parent, with defaults and rules
//! (spec/config.md, table 2.10).

use serde::{Deserialize, Serialize};

use super::rules::Check;

/// `[compare]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Compare {
    /// USD per million parent input tokens.
    pub parent_price_in: Option<f64>,
    /// USD per million parent output tokens.
    pub parent_price_out: Option<f64>,
    /// USD per hour of the child's hardware.
    pub child_price_per_hour: Option<f64>,
    /// Token limit of each child answer.
    pub max_tokens: u32,
    /// Child sampling temperature, 0..=2.
    pub temperature: f64,
    /// Seconds `llama-server` may take to become ready.
    pub server_start_secs: u64,
    /// The gate (issue 15): `push` and `[hub] after_training` refuse a run whose newest
    /// compare has a lower win-or-tie rate, a share in 0..=1; unset: no gate.
    pub min_win_or_tie: Option<f64>,
    /// Below this share of questions whose two orders agree, a compare is
    /// inconclusive (issue 35): its report says so first and the gate never passes it.
    pub min_judge_consistency: f64,
}

impl Default for Compare {
    fn default() -> Self {
        Self {
            parent_price_in: None,
            parent_price_out: None,
            child_price_per_hour: None,
            max_tokens: 2048,
            temperature: 0.0,
            server_start_secs: 300,
            min_win_or_tie: None,
            min_judge_consistency: 0.6,
        }
    }
}

/// The rules of `[compare]`.
pub(super) fn check(check: &mut Check<'_>, compare: &Compare) {
    for (key, price) in [
        ("compare.parent_price_in", compare.parent_price_in),
        ("compare.parent_price_out", compare.parent_price_out),
        ("compare.child_price_per_hour", compare.child_price_per_hour),
    ] {
        if price.is_some_and(|p| p.is_nan() || p < 0.0) {
            check.fail(key, "out of range: must be at least 0");
        }
    }
    check.at_least("compare.max_tokens", compare.max_tokens.into(), 1);
    check.temperature("compare.temperature", compare.temperature);
    check.at_least("compare.server_start_secs", compare.server_start_secs, 1);
    if compare
        .min_win_or_tie
        .is_some_and(|m| m.is_nan() || !(0.0..=1.0).contains(&m))
    {
        check.fail(
            "compare.min_win_or_tie",
            "out of range: a share from 0 to 1 (0.8 is 80%)",
        );
    }
    let consistency = compare.min_judge_consistency;
    if consistency.is_nan() || !(0.0..=1.0).contains(&consistency) {
        check.fail(
            "compare.min_judge_consistency",
            "out of range: a share from 0 to 1 (0.6 is 60%)",
        );
    }
}

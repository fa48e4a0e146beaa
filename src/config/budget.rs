//! `[budget]`: one cap over the parent's and the judge's tokens and the GPU hours of
//! training (issue 20), with its rules.

use serde::{Deserialize, Serialize};

use super::rules::Check;

/// `[budget]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Budget {
    /// The project-wide cap in USD; unset: no cap.
    pub max_usd: Option<f64>,
    /// The share of the cap at which a warning is given, in 0..=1.
    pub warn_at: f64,
    /// With a cap, whether a stage whose model has no price may run anyway (its cost
    /// then counts as unknown).
    pub allow_unpriced: bool,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            max_usd: None,
            warn_at: 0.8,
            allow_unpriced: false,
        }
    }
}

/// The rules of `[budget]`.
pub(super) fn check(check: &mut Check<'_>, budget: &Budget) {
    if budget
        .max_usd
        .is_some_and(|cap| !cap.is_finite() || cap < 0.0)
    {
        check.fail(
            "budget.max_usd",
            "out of range: USD, a finite number of at least 0",
        );
    }
    if !(0.0..=1.0).contains(&budget.warn_at) {
        check.fail(
            "budget.warn_at",
            "out of range: a share from 0 to 1 (0.8 warns at 80% of the cap)",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::error::Problem;
    use crate::config::rules::Declared;

    fn problems(budget: &Budget) -> Vec<Problem> {
        let mut problems = Vec::new();
        let declared = Declared::default();
        check(&mut Check::new(&mut problems, &declared), budget);
        problems
    }

    #[test]
    fn a_negative_cap_and_a_warning_share_above_one_are_refused_by_key() {
        assert!(problems(&Budget::default()).is_empty());
        let bad = Budget {
            max_usd: Some(-1.0),
            warn_at: 1.5,
            allow_unpriced: false,
        };
        let keys: Vec<String> = problems(&bad).into_iter().map(|p| p.key).collect();
        assert_eq!(keys, ["budget.max_usd", "budget.warn_at"]);
        let nan = Budget {
            max_usd: Some(f64::NAN),
            warn_at: f64::NAN,
            allow_unpriced: true,
        };
        assert_eq!(problems(&nan).len(), 2);
    }
}

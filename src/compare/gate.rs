//! The gate before publishing (issue 15): with `[compare] min_win_or_tie` set, a run
//! whose newest compare (by compare ID) is missing, has no report yet, or has a
//! win-or-tie rate below it is refused by `push` and `[hub] after_training`, naming the
//! compare and its rate; `push --no-gate` passes knowingly. [`decide`] is pure.

use std::path::Path;

use super::{COMPARES_DIR, report::COMPARE_JSON};

/// What the gate knows of a run's newest compare.
#[derive(Debug, Clone, PartialEq)]
pub struct Newest {
    /// Compare ID.
    pub compare_id: String,
    /// Its win-or-tie rate; `None` when it has no `compare.json` (judging not finished)
    /// or no counted verdict.
    pub rate: Option<f64>,
}

/// Why the gate refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    /// No compare at all.
    #[error(
        "run `{run_id}` has no compare, and `[compare] min_win_or_tie` = {min} asks for one: run `overbrainer compare --run {run_id}`, or pass `--no-gate`"
    )]
    Missing {
        /// Run ID.
        run_id: String,
        /// The threshold.
        min: f64,
    },
    /// The newest compare has no rate.
    #[error(
        "run `{run_id}`: its newest compare `{compare_id}` has no win-or-tie rate yet, and `[compare] min_win_or_tie` = {min} asks for one: finish it with `overbrainer compare --rejudge {compare_id}`, or pass `--no-gate`"
    )]
    Unfinished {
        /// Run ID.
        run_id: String,
        /// Compare ID.
        compare_id: String,
        /// The threshold.
        min: f64,
    },
    /// Below the threshold.
    #[error("run `{run_id}`: its newest compare `{compare_id}` has a win-or-tie rate of {:.1}%, below `[compare] min_win_or_tie` = {min}; pass `--no-gate` to push it anyway", rate * 100.0)]
    Below {
        /// Run ID.
        run_id: String,
        /// Compare ID.
        compare_id: String,
        /// Its rate.
        rate: f64,
        /// The threshold.
        min: f64,
    },
}

/// The gate's answer for `run_id` under `min`, given its newest compare.
///
/// # Errors
///
/// The [`Refusal`].
pub fn decide(run_id: &str, min: Option<f64>, newest: Option<Newest>) -> Result<(), Refusal> {
    let Some(min) = min else { return Ok(()) };
    let Some(newest) = newest else {
        return Err(Refusal::Missing {
            run_id: run_id.to_owned(),
            min,
        });
    };
    match newest.rate {
        None => Err(Refusal::Unfinished {
            run_id: run_id.to_owned(),
            compare_id: newest.compare_id,
            min,
        }),
        Some(rate) if rate < min => Err(Refusal::Below {
            run_id: run_id.to_owned(),
            compare_id: newest.compare_id,
            rate,
            min,
        }),
        Some(_) => Ok(()),
    }
}

/// The newest compare of the run in `run_dir`.
#[must_use]
pub fn newest(run_dir: &Path) -> Option<Newest> {
    let mut ids: Vec<String> = std::fs::read_dir(run_dir.join(COMPARES_DIR))
        .ok()?
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|id| id.starts_with("compare_"))
        .collect();
    ids.sort_by_key(|id| sort_key(id));
    let compare_id = ids.pop()?;
    let rate = std::fs::read_to_string(
        run_dir
            .join(COMPARES_DIR)
            .join(&compare_id)
            .join(COMPARE_JSON),
    )
    .ok()
    .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
    .and_then(|v| v["summary"]["win_or_tie"]["rate"].as_f64());
    Some(Newest { compare_id, rate })
}

/// `compare_<stamp>[_<n>]` ordered by stamp, then by `n` as a number.
fn sort_key(id: &str) -> (String, u32) {
    let rest = id.trim_start_matches("compare_");
    match rest.split_once('_') {
        Some((stamp, n)) => (stamp.to_owned(), n.parse().unwrap_or(0)),
        None => (rest.to_owned(), 1),
    }
}

/// The gate for the run in `run_dir` under `min`.
///
/// # Errors
///
/// The [`Refusal`].
pub fn check(run_id: &str, run_dir: &Path, min: Option<f64>) -> Result<(), Refusal> {
    decide(run_id, min, min.and_then(|_| newest(run_dir)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_refuses_missing_unfinished_and_low_compares() {
        let newest = |rate| {
            Some(Newest {
                compare_id: "compare_1".into(),
                rate,
            })
        };
        assert_eq!(decide("r", None, None), Ok(()));
        assert_eq!(decide("r", Some(0.8), newest(Some(0.8))), Ok(()));
        assert_eq!(decide("r", Some(0.8), newest(Some(0.9))), Ok(()));
        let low = decide("r", Some(0.8), newest(Some(0.625)))
            .unwrap_err()
            .to_string();
        assert!(
            low.contains("`compare_1`")
                && low.contains("62.5%")
                && low.contains("min_win_or_tie")
                && low.contains("--no-gate"),
            "{low}"
        );
        assert!(matches!(
            decide("r", Some(0.8), None),
            Err(Refusal::Missing { .. })
        ));
        assert!(matches!(
            decide("r", Some(0.8), newest(None)),
            Err(Refusal::Unfinished { .. })
        ));
    }

    #[test]
    fn the_newest_compare_is_by_stamp_then_number() {
        let mut ids = vec![
            "compare_20260102-000000",
            "compare_20260101-000000_10",
            "compare_20260102-000000_2",
            "compare_20260101-000000_9",
        ];
        ids.sort_by_key(|id| sort_key(id));
        assert_eq!(
            ids,
            [
                "compare_20260101-000000_9",
                "compare_20260101-000000_10",
                "compare_20260102-000000",
                "compare_20260102-000000_2"
            ]
        );
    }
}

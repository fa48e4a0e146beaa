//! The gate before publishing (issue 15, issue 35): with `[compare] min_win_or_tie`
//! set, a run whose newest compare (by compare ID) is missing, has no report yet, is
//! inconclusive (its judge below `[compare] min_judge_consistency`), or whose win-or-tie
//! rate's 95% interval starts below it is refused by `push` and `[hub] after_training`,
//! naming the compare, the figure and the setting; `push --no-gate` passes knowingly.
//! [`decide`] is pure.

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
    /// The lower end of that rate's 95% interval.
    pub low: Option<f64>,
    /// Its judge's consistency, and whether it reached `min_judge_consistency`
    /// (`None` for a report made before judges were checked).
    pub judge: Option<(Option<f64>, bool)>,
    /// Whether its judge passed its calibration on control pairs.
    pub calibrated: bool,
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
    /// The judge was not checked on control pairs, or failed them (issue 35).
    #[error(
        "run `{run_id}`: the judge of its newest compare `{compare_id}` is uncalibrated (not checked on control pairs, `--skip-calibration`, or a compare made before calibration); `[compare] min_win_or_tie` = {min} needs a calibrated one: run `overbrainer compare` again without `--skip-calibration`, or pass `--no-gate`"
    )]
    Uncalibrated {
        /// Run ID.
        run_id: String,
        /// Compare ID.
        compare_id: String,
        /// The threshold.
        min: f64,
    },
    /// The judge could not tell the child from the parent (issue 35).
    #[error(
        "run `{run_id}`: its newest compare `{compare_id}` is inconclusive: {}; `[compare] min_win_or_tie` = {min} needs a conclusive one: compare again with another judge (`[roles.judge]`), or pass `--no-gate`",
        match consistency {
            Some(c) => format!("its judge agreed with itself in both A/B orders on {:.1}% of the questions, below `[compare] min_judge_consistency`", c * 100.0),
            None => "it was judged before judges were checked for consistency (`overbrainer compare --rejudge` reports it again)".to_owned(),
        }
    )]
    Inconclusive {
        /// Run ID.
        run_id: String,
        /// Compare ID.
        compare_id: String,
        /// The judge's consistency, when known.
        consistency: Option<f64>,
        /// The threshold.
        min: f64,
    },
    /// The rate's interval starts below the threshold.
    #[error("run `{run_id}`: its newest compare `{compare_id}` has a win-or-tie rate of {:.1}% whose 95% interval starts at {:.1}%, below `[compare] min_win_or_tie` = {min}; pass `--no-gate` to push it anyway", rate * 100.0, low * 100.0)]
    Below {
        /// Run ID.
        run_id: String,
        /// Compare ID.
        compare_id: String,
        /// Its rate.
        rate: f64,
        /// The lower end of its 95% interval.
        low: f64,
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
    let Some(rate) = newest.rate else {
        return Err(Refusal::Unfinished {
            run_id: run_id.to_owned(),
            compare_id: newest.compare_id,
            min,
        });
    };
    if !newest.calibrated {
        return Err(Refusal::Uncalibrated {
            run_id: run_id.to_owned(),
            compare_id: newest.compare_id,
            min,
        });
    }
    match newest.judge {
        Some((_, true)) => {}
        judge => {
            return Err(Refusal::Inconclusive {
                run_id: run_id.to_owned(),
                compare_id: newest.compare_id,
                consistency: judge.and_then(|(c, _)| c),
                min,
            });
        }
    }
    let low = newest.low.unwrap_or(0.0);
    if low < min {
        return Err(Refusal::Below {
            run_id: run_id.to_owned(),
            compare_id: newest.compare_id,
            rate,
            low,
            min,
        });
    }
    Ok(())
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
    let report = std::fs::read_to_string(
        run_dir
            .join(COMPARES_DIR)
            .join(&compare_id)
            .join(COMPARE_JSON),
    )
    .ok()
    .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
    .unwrap_or_default();
    let summary = &report["summary"];
    let judge = &summary["judge"];
    Some(Newest {
        rate: summary["win_or_tie"]["rate"].as_f64(),
        low: summary["win_or_tie"]["low"].as_f64(),
        judge: judge["conclusive"]
            .as_bool()
            .map(|conclusive| (judge["consistency"]["rate"].as_f64(), conclusive)),
        calibrated: report["header"]["calibrated"].as_bool().unwrap_or(false),
        compare_id,
    })
}

/// `compare_<stamp>[_<n>]` ordered by stamp, then by `n` as a number.
pub(super) fn sort_key(id: &str) -> (String, u32) {
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
    fn the_gate_refuses_missing_unfinished_inconclusive_and_low_compares() {
        let newest = |rate: Option<f64>, low: f64, judge| {
            Some(Newest {
                compare_id: "compare_1".into(),
                rate,
                low: rate.map(|_| low),
                judge,
                calibrated: true,
            })
        };
        let sure = Some((Some(0.95), true));
        assert_eq!(decide("r", None, None), Ok(()));
        // The interval's lower end decides, not the point estimate.
        assert_eq!(decide("r", Some(0.8), newest(Some(0.9), 0.8, sure)), Ok(()));
        let low = decide("r", Some(0.8), newest(Some(0.9), 0.625, sure))
            .unwrap_err()
            .to_string();
        assert!(
            low.contains("`compare_1`")
                && low.contains("90.0%")
                && low.contains("starts at 62.5%")
                && low.contains("min_win_or_tie")
                && low.contains("--no-gate"),
            "{low}"
        );
        // An inconclusive compare never passes, whatever its rate.
        let biased = decide(
            "r",
            Some(0.5),
            newest(Some(1.0), 0.839, Some((Some(0.0), false))),
        )
        .unwrap_err()
        .to_string();
        assert!(
            biased.contains("inconclusive")
                && biased.contains("0.0% of the questions")
                && biased.contains("min_judge_consistency")
                && biased.contains("--no-gate"),
            "{biased}"
        );
        assert!(matches!(
            decide("r", Some(0.5), newest(Some(1.0), 0.9, None)),
            Err(Refusal::Inconclusive {
                consistency: None,
                ..
            })
        ));
        // An uncalibrated judge never passes either.
        let mut unchecked = newest(Some(1.0), 0.9, sure);
        if let Some(n) = unchecked.as_mut() {
            n.calibrated = false;
        }
        let refused = decide("r", Some(0.5), unchecked).unwrap_err().to_string();
        assert!(
            refused.contains("uncalibrated")
                && refused.contains("--skip-calibration")
                && refused.contains("--no-gate"),
            "{refused}"
        );
        assert!(matches!(
            decide("r", Some(0.8), None),
            Err(Refusal::Missing { .. })
        ));
        assert!(matches!(
            decide("r", Some(0.8), newest(None, 0.0, sure)),
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

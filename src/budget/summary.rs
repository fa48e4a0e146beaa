//! The spend a ledger shows (issue 20), pure: its total (requests, and each pod's latest
//! line), by stage, by run (pods), by provider and model, and the requests without a
//! price, for `overbrainer budget` and the hard cap's starting point.

use std::collections::BTreeMap;

use serde::Serialize;

use super::ledger::LedgerLine;

/// Spend of one group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Spend {
    /// USD of what had a price.
    pub usd: f64,
    /// Requests (or pods) counted.
    pub events: u64,
    /// Requests without a price (not in `usd`).
    pub unpriced: u64,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
}

/// The whole ledger, summed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Everything.
    pub total: Spend,
    /// By stage (`subtopics`, `questions`, `answers`, `compare`, `train` for pods).
    pub by_stage: BTreeMap<String, Spend>,
    /// Pods by run ID.
    pub by_run: BTreeMap<String, Spend>,
    /// Requests by `provider/model`.
    pub by_model: BTreeMap<String, Spend>,
}

impl Spend {
    fn add(&mut self, usd: Option<f64>, input_tokens: u64, output_tokens: u64) {
        self.events += 1;
        match usd {
            Some(usd) => self.usd += usd,
            None => self.unpriced += 1,
        }
        self.input_tokens += input_tokens;
        self.output_tokens += output_tokens;
    }
}

/// The spend of `lines`: every request, and the latest line of each pod (a pod's lines
/// are its spend so far, the last one final).
#[must_use]
pub fn summary(lines: &[LedgerLine]) -> Summary {
    let mut summary = Summary::default();
    let mut pods = BTreeMap::new();
    for line in lines {
        match line {
            LedgerLine::Request(request) => {
                let usd = request.cost_usd;
                let tokens = (request.input_tokens, request.output_tokens);
                for spend in [
                    &mut summary.total,
                    summary.by_stage.entry(request.stage.clone()).or_default(),
                    summary
                        .by_model
                        .entry(format!("{}/{}", request.provider, request.model))
                        .or_default(),
                ] {
                    spend.add(usd, tokens.0, tokens.1);
                }
            }
            LedgerLine::Pod(pod) => {
                pods.insert((pod.run.clone(), pod.pod.clone()), pod.cost_usd);
            }
            // Held, not spent.
            LedgerLine::Reserve(_) => {}
        }
    }
    for ((run, _), usd) in pods {
        for spend in [
            &mut summary.total,
            summary.by_stage.entry("train".to_owned()).or_default(),
            summary.by_run.entry(run).or_default(),
        ] {
            spend.add(Some(usd), 0, 0);
        }
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::ledger::{PodLine, RequestLine};

    fn request(stage: &str, model: &str, cost_usd: Option<f64>) -> LedgerLine {
        LedgerLine::Request(RequestLine {
            at: "2026-01-01T00:00:00Z".parse().unwrap(),
            stage: stage.into(),
            provider: "p".into(),
            model: model.into(),
            input_tokens: 1,
            output_tokens: 2,
            cost_usd,
            reservation: None,
        })
    }

    #[test]
    fn the_summary_counts_every_request_and_the_latest_line_of_each_pod() {
        let lines = [
            request("answers", "a", Some(0.5)),
            request("answers", "a", None),
            request("questions", "g", Some(0.25)),
            LedgerLine::Pod(PodLine::new(("r1", "pod-1"), 3600.0, 1.0, 3600.0, false)),
            LedgerLine::Pod(PodLine::new(("r1", "pod-1"), 3600.0, 3.0, 3600.0, true)),
            LedgerLine::Pod(PodLine::new(("r1", "pod-2"), 3600.0, 0.5, 3600.0, true)),
        ];
        let summary = summary(&lines);
        assert!((summary.total.usd - (0.75 + 3.5)).abs() < 1e-9);
        assert_eq!(summary.total.unpriced, 1);
        assert_eq!(summary.by_stage["answers"].events, 2);
        assert!((summary.by_stage["train"].usd - 3.5).abs() < 1e-9);
        assert_eq!(summary.by_run["r1"].events, 2);
        assert_eq!(summary.by_model["p/a"].unpriced, 1);
        assert_eq!(summary.by_model["p/g"].input_tokens, 1);
    }
}

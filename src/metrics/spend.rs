//! `overbrainer_runpod_spend_usd` (MET-12): computed at each scrape from every run's
//! `pod.json`, followed or not: the rate times the uptime, the recorded figure once the pod
//! is deleted. A run whose pod has no known rate or creation time has no series.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric as _};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Unit;

use super::families::RunLabel;
use crate::runpod::record::{POD_FILE, PodRecord};

/// The spend collector of one project.
#[derive(Debug, Clone)]
pub struct Spend {
    runs_dir: PathBuf,
    hour: Duration,
}

impl Spend {
    /// Reads the runs in `runs_dir`; `hour` is the length of the hour the rates are per
    /// (an hour, on the test-only time scale in tests).
    #[must_use]
    pub fn new(runs_dir: PathBuf, hour: Duration) -> Self {
        Self { runs_dir, hour }
    }

    /// Every run's estimated spend now, by run ID, sorted.
    #[must_use]
    pub fn figures(&self, now: SystemTime) -> Vec<(String, f64)> {
        let Ok(entries) = std::fs::read_dir(&self.runs_dir) else {
            return Vec::new();
        };
        let hour = self.hour.as_secs_f64().max(f64::MIN_POSITIVE);
        let mut figures: Vec<(String, f64)> = entries
            .filter_map(Result::ok)
            .filter(|entry| entry.path().join(POD_FILE).is_file())
            .filter_map(|entry| {
                let record = PodRecord::read(&entry.path()).ok().flatten()?;
                let usd = spend(&record, now, hour)?;
                usd.is_finite().then_some((record.run_id, usd))
            })
            .collect();
        figures.sort_by(|a, b| a.0.cmp(&b.0));
        figures
    }
}

/// A pod's spend in USD: deleted, its recorded cost (or rate × recorded uptime); else rate ×
/// time since creation.
fn spend(record: &PodRecord, now: SystemTime, hour: f64) -> Option<f64> {
    if let Some(deleted) = &record.deleted {
        return deleted
            .cost_usd
            .or_else(|| Some(record.rate_usd_per_hour? * deleted.uptime_s / hour));
    }
    let rate = record.rate_usd_per_hour?;
    let created: SystemTime = record.created_at?.into();
    let uptime = now.duration_since(created).unwrap_or_default();
    Some(rate * uptime.as_secs_f64() / hour)
}

impl Collector for Spend {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let figures = self.figures(SystemTime::now());
        if figures.is_empty() {
            return Ok(());
        }
        let unit = Unit::Other("usd".to_owned());
        let mut family = encoder.encode_descriptor(
            "overbrainer_runpod_spend",
            "Estimated pod spend of a run.",
            Some(&unit),
            MetricType::Gauge,
        )?;
        for (run_id, usd) in figures {
            let labels = RunLabel { run_id };
            ConstGauge::new(usd).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(json: &str) -> PodRecord {
        serde_json::from_str(json).unwrap()
    }

    const BASE: &str = r#""version":1,"run_id":"r1","pod_name":"p","state":"running","pod_id":"x","gpu_type":"g","data_center_ids":[],"network_volume_id":null,"rate_usd_per_hour":2.0,"keep_pod":false,"attempts":[],"retrieved":false"#;

    #[test]
    fn a_running_pod_costs_its_rate_times_its_uptime() {
        let r = record(&format!(
            r#"{{{BASE},"created_at":"2026-01-01T00:00:00Z"}}"#
        ));
        let now: SystemTime = "2026-01-01T00:30:00Z"
            .parse::<jiff::Timestamp>()
            .unwrap()
            .into();
        assert_eq!(spend(&r, now, 3600.0), Some(1.0));
    }

    #[test]
    fn a_deleted_pod_costs_what_was_recorded_and_no_rate_means_no_figure() {
        let deleted = record(&format!(
            r#"{{{BASE},"created_at":"2026-01-01T00:00:00Z","deleted":{{"at":"2026-01-01T01:00:00Z","by":"client","uptime_s":3600.0,"cost_usd":1.75}}}}"#
        ));
        assert_eq!(spend(&deleted, SystemTime::now(), 3600.0), Some(1.75));
        let unpriced = BASE.replace(r#""rate_usd_per_hour":2.0"#, r#""rate_usd_per_hour":null"#);
        let unpriced = record(&format!("{{{unpriced}}}"));
        assert_eq!(spend(&unpriced, SystemTime::now(), 3600.0), None);
    }
}

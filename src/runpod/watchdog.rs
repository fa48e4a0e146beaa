//! The pod's watchdog (POD-29, POD-33..POD-35, POD-40, POD-41, POD-50, issue 21's stalls):
//! one shell script,
//! [`WATCHDOG`], that deletes its own pod through the Runpod API with the pod-scoped
//! `RUNPOD_API_KEY` when a rule says so, and the environment that carries its bounds
//! ([`bounds_env`]). Every overbrainer pod carries its bound in its environment (issue
//! 12), so any process holding the account key can see a pod past it.
//!
//! The script's files are those of the driver and the job ([`super::driver`]'s `.pod/`
//! files, the job's `job.pid` and `exit_code`, `snapshot.request`); its bounds are whole
//! seconds of the rules, already on the test-only [`crate::env::TimeScale`].

use std::collections::BTreeMap;
use std::time::Duration;

use super::driver::DEADLINE_VAR;
use super::lifecycle::Rules;

/// The watchdog script (bash).
pub const WATCHDOG: &str = include_str!("watchdog.sh");

/// Whole seconds, rounded up, at least one (a rule never shrinks to nothing).
fn secs(rule: Duration) -> String {
    let whole = rule.as_secs() + u64::from(rule.subsec_nanos() > 0);
    whole.max(1).to_string()
}

/// The environment of the watchdog of a pod whose `max_hours` ends at `deadline_at`
/// (UNIX time; the driver sets it again at each create call), whose run directory on the pod is `run_dir`, and which reaches the
/// API at `api_base`.
#[must_use]
pub fn bounds_env(
    rules: &Rules,
    deadline_at: Duration,
    run_dir: &str,
    api_base: &str,
) -> BTreeMap<String, String> {
    [
        ("OVERBRAINER_RUN_DIR", run_dir.to_owned()),
        ("OVERBRAINER_API_BASE", api_base.to_owned()),
        (DEADLINE_VAR, deadline_at.as_secs().to_string()),
        ("OVERBRAINER_KEEP_POD", u8::from(rules.keep_pod).to_string()),
        ("OVERBRAINER_TICK_S", secs(rules.tick)),
        ("OVERBRAINER_BOOT_GRACE_S", secs(rules.boot_grace)),
        ("OVERBRAINER_RETRIEVE_GRACE_S", secs(rules.retrieve_grace)),
        ("OVERBRAINER_LEASE_FRESH_S", secs(rules.lease_fresh)),
        ("OVERBRAINER_SNAPSHOT_LEAD_S", secs(rules.snapshot_lead)),
        ("OVERBRAINER_SNAPSHOT_WINDOW_S", secs(rules.snapshot_window)),
        (
            "OVERBRAINER_STALL_S",
            rules.stall.fixed.map_or_else(|| "0".to_owned(), secs),
        ),
        ("OVERBRAINER_STALL_FLOOR_S", secs(rules.stall.floor)),
        ("OVERBRAINER_STALL_FIRST_S", secs(rules.stall.first_step)),
        ("OVERBRAINER_STALL_FACTOR", rules.stall.factor.to_string()),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value))
    .collect()
}

/// The watchdog's environment for a pod with a network volume mounted at `path` whose
/// size at pod creation was `gb` (0 when unknown): its disk backstop measures the volume
/// with a background `du` (POD-48).
#[must_use]
pub fn volume_env(path: &str, gb: Option<u64>) -> [(String, String); 2] {
    [
        ("OVERBRAINER_VOLUME_PATH".to_owned(), path.to_owned()),
        (
            "OVERBRAINER_VOLUME_GB".to_owned(),
            gb.unwrap_or(0).to_string(),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::TimeScale;
    use crate::exec::{EXIT_FILE, PID_FILE};
    use crate::runpod::driver::{
        COST_CAP_AT_FILE, LEASE_FILE, RETRIEVED_FILE, SNAPSHOT_AT_FILE, VOLUME_GB_FILE,
    };
    use crate::runpod::lifecycle::tests::target;
    use crate::train::plugin::SNAPSHOT_REQUEST;

    #[test]
    fn the_watchdog_passes_shellcheck() {
        crate::exec::shellcheck::assert_passes(WATCHDOG, "");
    }

    #[test]
    fn the_watchdog_reads_the_files_the_driver_and_the_job_write() {
        for pod_file in [
            LEASE_FILE,
            SNAPSHOT_AT_FILE,
            COST_CAP_AT_FILE,
            RETRIEVED_FILE,
            VOLUME_GB_FILE,
        ] {
            let name = pod_file.strip_prefix(".pod/").unwrap();
            assert!(
                WATCHDOG.contains(&format!("\"$pod_dir/{name}\"")),
                "{pod_file}"
            );
        }
        for run_file in [PID_FILE, EXIT_FILE, SNAPSHOT_REQUEST] {
            assert!(
                WATCHDOG.contains(&format!("\"$run_dir/{run_file}\"")),
                "{run_file}"
            );
        }
        for name in bounds_env(&rules(TimeScale::REAL), Duration::ZERO, "/r", "http://x").keys() {
            assert!(WATCHDOG.contains(name.as_str()), "{name}");
        }
        for (name, _) in volume_env("/v", None) {
            assert!(WATCHDOG.contains(name.as_str()), "{name}");
        }
    }

    fn rules(scale: TimeScale) -> Rules {
        Rules::new(&target(2.0, None), false, scale)
    }

    #[test]
    fn the_watchdog_bounds_are_the_rules_in_whole_seconds_on_the_scale() {
        let env = bounds_env(
            &rules(TimeScale::with_second(Duration::from_millis(50))),
            Duration::from_millis(1_796_137_200_400),
            "/workspace/runs/r_1",
            "http://127.0.0.1:9/v2",
        );
        assert_eq!(env["OVERBRAINER_DEADLINE_AT"], "1796137200");
        assert_eq!(env["OVERBRAINER_TICK_S"], "3");
        assert_eq!(env["OVERBRAINER_BOOT_GRACE_S"], "90");
        assert_eq!(env["OVERBRAINER_LEASE_FRESH_S"], "45");
        assert_eq!(env["OVERBRAINER_KEEP_POD"], "0");
        assert_eq!(env["OVERBRAINER_STALL_S"], "0");
        assert_eq!(env["OVERBRAINER_STALL_FLOOR_S"], "30");
        assert_eq!(env["OVERBRAINER_STALL_FIRST_S"], "90");
        assert_eq!(env["OVERBRAINER_STALL_FACTOR"], "20");
        let real = bounds_env(&rules(TimeScale::REAL), Duration::ZERO, "/r", "http://x");
        assert_eq!(real["OVERBRAINER_TICK_S"], "60");
        assert_eq!(real["OVERBRAINER_RETRIEVE_GRACE_S"], "3600");
        assert_eq!(secs(Duration::from_millis(1)), "1");
    }
}

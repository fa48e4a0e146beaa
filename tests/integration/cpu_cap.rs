//! A CPU cap for a real job that a test lets run only to wait for the clock (a Slurm
//! time limit, a deadline signal): the cgroup v1 `cpu` controller's CFS quota holds the
//! job's processes, and every process they start, to a fraction of a core, so that the
//! minutes of waiting do not take the cores from the tests beside it (issue 31). The
//! job stays real and keeps training, only slower; the pods of the Runpod rule tests
//! get the same through `podman update --cpus`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long an emptied cgroup may take to be removable.
const DEADLINE: Duration = Duration::from_secs(30);

/// The scheduler's period for the quota, in microseconds (the kernel's default).
const PERIOD_US: u32 = 100_000;

/// A cgroup of the `cpu` controller whose processes share at most a fraction of a
/// core. Its processes go back to the root group, and the group is removed, when the
/// value is dropped.
pub struct CpuCap {
    dir: PathBuf,
}

impl CpuCap {
    /// A cap of `cores` cores (above 0) named after `name` and this test process.
    pub fn new(name: &str, cores: f64) -> Self {
        let root = Path::new("/sys/fs/cgroup/cpu");
        assert!(
            root.join("cpu.cfs_quota_us").exists(),
            "this test needs the cgroup v1 cpu controller mounted at {} and root rights \
             (`mount -t cgroup -o cpu cpu {}`)",
            root.display(),
            root.display()
        );
        assert!(cores > 0.0, "a CPU cap of {cores} cores");
        let dir = root.join(format!("overbrainer-test-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot make the cgroup {}: {e}", dir.display()));
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let quota = ((cores * f64::from(PERIOD_US)) as u64).max(1_000);
        let cap = Self { dir };
        cap.set("cpu.cfs_period_us", &PERIOD_US.to_string());
        cap.set("cpu.cfs_quota_us", &quota.to_string());
        cap
    }

    /// Moves processes `pids`, all their threads, into the cap; the processes they
    /// start from now on are born in it. A process that has ended meanwhile is skipped.
    /// Returns how many were moved.
    pub fn hold(&self, pids: &[u32]) -> usize {
        pids.iter()
            .filter(|pid| std::fs::write(self.dir.join("cgroup.procs"), pid.to_string()).is_ok())
            .count()
    }

    /// The processes in the cap now.
    pub fn processes(&self) -> Vec<u32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.trim().parse().ok())
            .collect()
    }

    /// How often the scheduler held the group back (`nr_throttled` of `cpu.stat`).
    pub fn throttled(&self) -> u64 {
        std::fs::read_to_string(self.dir.join("cpu.stat"))
            .unwrap_or_default()
            .lines()
            .find_map(|line| line.strip_prefix("nr_throttled "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    }

    fn set(&self, file: &str, value: &str) {
        std::fs::write(self.dir.join(file), value).unwrap_or_else(|e| {
            panic!(
                "cannot write {value} to {}: {e}",
                self.dir.join(file).display()
            )
        });
    }
}

impl Drop for CpuCap {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("cpu.cfs_quota_us"), "-1");
        let root = self.dir.parent().map(|p| p.join("cgroup.procs"));
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(root) = &root {
                for pid in self.processes() {
                    let _ = std::fs::write(root, pid.to_string());
                }
            }
            if std::fs::remove_dir(&self.dir).is_ok() || Instant::now() > deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

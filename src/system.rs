//! Sampling the machine a job runs on (spec/training.md, SYS-1..SYS-5).
//!
//! [`probe_script`] renders one read-only POSIX shell script that prints tagged
//! lines about the GPUs (`nvidia-smi`), the CPUs, the memory (cgroup v2, else v1,
//! else `/proc/meminfo`) and the disks of the run directory and of `/` (`df`).
//! The executor runs it on the target ([`crate::exec::Executor::probe`]) and
//! [`parse`] turns its output into a [`Sample`]. The parser never fails: a part
//! that is missing or garbled leaves its figure absent, never zero.
//!
//! Output lines, one fact each (`KEY VALUE...`):
//!
//! | key | values | source |
//! |---|---|---|
//! | `gpu` | `index, name, util %, mem used MiB, mem total MiB, temp C, power W, limit W` | `nvidia-smi --query-gpu=... --format=csv,noheader,nounits` |
//! | `nproc` | CPUs online | `nproc` or `getconf _NPROCESSORS_ONLN` |
//! | `loadavg` | the content of `/proc/loadavg` | `proc(5)` |
//! | `procstat` | the `cpu` line of `/proc/stat` (clock ticks) | `proc(5)` |
//! | `cg2_cpu_max` | `quota period` or `max period` | cgroup v2 `cpu.max` |
//! | `cg2_cpu_usec` | CPU time used, microseconds | cgroup v2 `cpu.stat` `usage_usec` |
//! | `cg1_cpu_quota`, `cg1_cpu_period` | microseconds, `-1` for none | cgroup v1 `cpu.cfs_*` |
//! | `cg1_cpu_nsec` | CPU time used, nanoseconds | cgroup v1 `cpuacct.usage` |
//! | `cg2_mem_max`, `cg2_mem_current`, `cg2_mem_inactive_file` | bytes or `max` | cgroup v2 `memory.*` |
//! | `cg1_mem_limit`, `cg1_mem_usage`, `cg1_mem_inactive_file` | bytes | cgroup v1 `memory.*` |
//! | `meminfo_total`, `meminfo_available` | KiB | `/proc/meminfo` |
//! | `df run` / `df root` | `fstype size_kib used_kib mount` | `df -P -k` and `df -P -T -k` |
//! | `node` | the machine's name: Slurm's name of the node in a job step, else `uname -n` | `SLURMD_NODENAME`, `uname(1)` |
//! | `slurm_job` | the Slurm job whose step took the sample (issue 33) | `SLURM_JOB_ID`, printed by `exec::SlurmExecutor::sample` |

use std::time::SystemTime;

use crate::shell::quote;

/// Seconds `nvidia-smi` and `df` may each take before they are abandoned (SYS-2).
pub const PROBE_TIMEOUT_SECONDS: u32 = 5;

/// File system types whose `df` figures describe a shared cluster rather than a
/// disk of this machine (SYS-4).
pub const NETWORK_FILE_SYSTEMS: &[&str] = &[
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "ceph",
    "cephfs",
    "glusterfs",
    "lustre",
    "gpfs",
    "beegfs",
    "9p",
    "fuse.sshfs",
    "fuse.juicefs",
    "fuse.s3fs",
    "fuse.mfs",
    "mfs",
    "fuse.gcsfuse",
    "fuse.weka",
    "wekafs",
];

/// The read-only probe script for a run directory `run_dir` on the target.
#[must_use]
pub fn probe_script(run_dir: &str) -> String {
    format!(
        r#"echo "node ${{SLURMD_NODENAME:-$(uname -n 2>/dev/null)}}"
if command -v timeout >/dev/null 2>&1; then ob_t="timeout {t}"; else ob_t=; fi
if command -v nvidia-smi >/dev/null 2>&1; then
  $ob_t nvidia-smi --query-gpu=index,name,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw,power.limit --format=csv,noheader,nounits 2>/dev/null | sed 's/^/gpu /'
fi
ob_n=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null) && echo "nproc $ob_n"
[ -r /proc/loadavg ] && echo "loadavg $(cat /proc/loadavg)"
[ -r /proc/stat ] && sed -n 's/^cpu  */procstat /p' /proc/stat
ob_cg=/sys/fs/cgroup
if [ -r $ob_cg/cgroup.controllers ]; then
  [ -r $ob_cg/cpu.max ] && echo "cg2_cpu_max $(cat $ob_cg/cpu.max)"
  [ -r $ob_cg/cpu.stat ] && sed -n 's/^usage_usec /cg2_cpu_usec /p' $ob_cg/cpu.stat
  [ -r $ob_cg/memory.max ] && echo "cg2_mem_max $(cat $ob_cg/memory.max)"
  [ -r $ob_cg/memory.current ] && echo "cg2_mem_current $(cat $ob_cg/memory.current)"
  [ -r $ob_cg/memory.stat ] && sed -n 's/^inactive_file /cg2_mem_inactive_file /p' $ob_cg/memory.stat
else
  for ob_d in $ob_cg/cpu,cpuacct $ob_cg/cpu $ob_cg/cpuacct; do
    if [ -r $ob_d/cpu.cfs_quota_us ]; then
      echo "cg1_cpu_quota $(cat $ob_d/cpu.cfs_quota_us)"
      echo "cg1_cpu_period $(cat $ob_d/cpu.cfs_period_us)"
      break
    fi
  done
  for ob_d in $ob_cg/cpu,cpuacct $ob_cg/cpuacct $ob_cg/cpu; do
    if [ -r $ob_d/cpuacct.usage ]; then echo "cg1_cpu_nsec $(cat $ob_d/cpuacct.usage)"; break; fi
  done
  if [ -r $ob_cg/memory/memory.limit_in_bytes ]; then
    echo "cg1_mem_limit $(cat $ob_cg/memory/memory.limit_in_bytes)"
    echo "cg1_mem_usage $(cat $ob_cg/memory/memory.usage_in_bytes)"
    sed -n 's/^total_inactive_file /cg1_mem_inactive_file /p' $ob_cg/memory/memory.stat 2>/dev/null
  fi
fi
if [ -r /proc/meminfo ]; then
  sed -n -e 's/^MemTotal: *\([0-9]*\).*/meminfo_total \1/p' -e 's/^MemAvailable: *\([0-9]*\).*/meminfo_available \1/p' /proc/meminfo
fi
ob_df() {{
  ob_type=$($ob_t df -P -T -k -- "$2" 2>/dev/null | awk 'NR==2 {{print $2}}')
  $ob_t df -P -k -- "$2" 2>/dev/null | awk -v role="$1" -v type="${{ob_type:-unknown}}" 'NR==2 {{print "df", role, type, $2, $3, $NF}}'
}}
ob_run={run_dir}
while [ ! -e "$ob_run" ] && [ "$ob_run" != / ] && [ -n "$ob_run" ]; do ob_run=$(dirname -- "$ob_run"); done
ob_df run "$ob_run"
ob_df root /
exit 0
"#,
        t = PROBE_TIMEOUT_SECONDS,
        run_dir = quote(run_dir),
    )
}

/// One sample of a machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// When it was taken.
    pub at: SystemTime,
    /// The machine it describes: Slurm's name of the node when a job step took it,
    /// else the host name; `None` when the probe could not tell.
    pub node: Option<String>,
    /// The Slurm job inside whose allocation it was taken (a `slurm` target samples
    /// the job's first node through `srun --jobid`, issue 33); `None` elsewhere.
    pub slurm_job: Option<u64>,
    /// GPUs as `nvidia-smi` lists them; empty without `nvidia-smi` (SYS-5).
    pub gpus: Vec<Gpu>,
    /// CPU figures; `None` when none could be read.
    pub cpu: Option<Cpu>,
    /// Memory figures; `None` when none could be read.
    pub memory: Option<Memory>,
    /// The run directory's file system first (role [`DiskRole::Run`]), then `/`
    /// (role [`DiskRole::Root`]) when `df` answered for it.
    pub disks: Vec<Disk>,
}

impl Sample {
    /// The file system holding the run directory, when `df` answered.
    #[must_use]
    pub fn run_disk(&self) -> Option<&Disk> {
        self.disks.iter().find(|disk| disk.role == DiskRole::Run)
    }

    /// The root file system, when `df` answered.
    #[must_use]
    pub fn root_disk(&self) -> Option<&Disk> {
        self.disks.iter().find(|disk| disk.role == DiskRole::Root)
    }
}

/// One GPU. Each figure is `None` when `nvidia-smi` reported it as unavailable.
#[derive(Debug, Clone, PartialEq)]
pub struct Gpu {
    /// Index as `nvidia-smi` reports it.
    pub index: u32,
    /// Model name.
    pub name: String,
    /// Share of time a kernel ran, 0..1.
    pub utilization: Option<f64>,
    /// Memory used, bytes.
    pub memory_used_bytes: Option<u64>,
    /// Memory total, bytes.
    pub memory_total_bytes: Option<u64>,
    /// Temperature, degrees Celsius.
    pub temperature_celsius: Option<f64>,
    /// Power draw, watts.
    pub power_watts: Option<f64>,
    /// Power limit, watts.
    pub power_limit_watts: Option<f64>,
}

/// CPU figures (SYS-3: a container's quota and usage win over the host's).
#[derive(Debug, Clone, PartialEq)]
pub struct Cpu {
    /// CPUs available: the container's quota when it has one, else the CPUs online.
    pub cpus: Option<f64>,
    /// Whether `cpus` and `usage` describe a container's cgroup limit.
    pub container: bool,
    /// 1-minute load average of the host, even in a container.
    pub load1: Option<f64>,
    /// Share of `cpus` busy since the previous sample, 0..1; `None` without a
    /// previous sample.
    pub usage: Option<f64>,
    /// Cumulative busy CPU time in seconds (the cgroup's, or the host's from
    /// `/proc/stat`), for the next sample's `usage`.
    pub busy_seconds: Option<f64>,
    /// Cumulative total CPU time in seconds from `/proc/stat` (busy and idle, all
    /// CPUs); `None` for a container.
    pub total_seconds: Option<f64>,
}

/// Memory figures, bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Memory {
    /// Used, without reclaimable page cache.
    pub used_bytes: u64,
    /// The container's limit when it has one, else the machine's memory.
    pub limit_bytes: u64,
    /// Whether the figures are a container's cgroup.
    pub container: bool,
}

/// Which file system a [`Disk`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskRole {
    /// The file system holding the run directory.
    Run,
    /// `/`.
    Root,
}

/// One file system as `df` sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disk {
    /// Run directory or root.
    pub role: DiskRole,
    /// Mount point.
    pub mount: String,
    /// File system type, for example `ext4` or `nfs4`; `unknown` when `df -T` is
    /// unavailable.
    pub fs_type: String,
    /// Size, bytes.
    pub size_bytes: u64,
    /// Used, bytes.
    pub used_bytes: u64,
    /// A network file system whose figures describe a shared cluster (SYS-4).
    pub shared: bool,
}

/// Clock ticks per second of `/proc/stat` (`USER_HZ`, 100 on every Linux ABI in
/// use, see `proc(5)`).
const USER_HZ: f64 = 100.0;

/// Reads the output of [`probe_script`] taken at `at`. `previous`, the sample
/// before it from the same machine, gives CPU usage over the interval. Never
/// fails: lines it does not understand are ignored and their figures left absent.
#[must_use]
pub fn parse(output: &str, at: SystemTime, previous: Option<&Sample>) -> Sample {
    let mut facts = Facts::default();
    for line in output.lines() {
        let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = rest.trim();
        match key {
            "gpu" => facts.gpus.extend(parse_gpu(rest)),
            "df" => facts.disks.extend(parse_df(rest)),
            _ => {
                facts.values.insert(key.to_owned(), rest.to_owned());
            }
        }
    }
    let cpu = facts.cpu(at, previous);
    let memory = facts.memory();
    let mut disks = facts.disks;
    disks.sort_by_key(|disk| disk.role == DiskRole::Root);
    disks.dedup_by_key(|disk| disk.role);
    let node = facts
        .values
        .get("node")
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty());
    let slurm_job = facts
        .values
        .get("slurm_job")
        .and_then(|id| id.trim().parse().ok());
    Sample {
        at,
        node,
        slurm_job,
        gpus: facts.gpus,
        cpu,
        memory,
        disks,
    }
}

#[derive(Default)]
struct Facts {
    values: std::collections::HashMap<String, String>,
    gpus: Vec<Gpu>,
    disks: Vec<Disk>,
}

impl Facts {
    fn number(&self, key: &str) -> Option<f64> {
        self.values
            .get(key)?
            .split_whitespace()
            .next()?
            .parse::<f64>()
            .ok()
            .filter(|value| value.is_finite())
    }

    fn bytes(&self, key: &str) -> Option<u64> {
        self.values.get(key)?.trim().parse::<u64>().ok()
    }

    /// The container's CPU quota, when one applies.
    fn quota(&self) -> Option<f64> {
        if let Some(max) = self.values.get("cg2_cpu_max") {
            let mut parts = max.split_whitespace();
            let quota = parts.next()?.parse::<f64>().ok()?;
            let period = parts.next()?.parse::<f64>().ok()?;
            return (quota > 0.0 && period > 0.0).then(|| quota / period);
        }
        let quota = self.number("cg1_cpu_quota")?;
        let period = self.number("cg1_cpu_period")?;
        (quota > 0.0 && period > 0.0).then(|| quota / period)
    }

    fn cpu(&self, at: SystemTime, previous: Option<&Sample>) -> Option<Cpu> {
        let load1 = self.number("loadavg");
        let online = self.number("nproc").filter(|n| *n > 0.0);
        let quota = self.quota();
        let container = quota.is_some();
        let cpus = quota.or(online);
        let (busy_seconds, total_seconds) = if container {
            let busy = self
                .number("cg2_cpu_usec")
                .map(|usec| usec / 1e6)
                .or_else(|| self.number("cg1_cpu_nsec").map(|nsec| nsec / 1e9));
            (busy, None)
        } else {
            self.proc_stat()
                .map_or((None, None), |(busy, total)| (Some(busy), Some(total)))
        };
        let usage = previous
            .and_then(|previous| previous.cpu.as_ref().map(|cpu| (previous.at, cpu)))
            .and_then(|(then, before)| {
                if before.container != container {
                    return None;
                }
                let busy = busy_seconds? - before.busy_seconds?;
                let span = if container {
                    at.duration_since(then).ok()?.as_secs_f64() * cpus?
                } else {
                    total_seconds? - before.total_seconds?
                };
                (span > 0.0 && busy >= 0.0).then(|| (busy / span).clamp(0.0, 1.0))
            });
        if load1.is_none() && cpus.is_none() && busy_seconds.is_none() {
            return None;
        }
        Some(Cpu {
            cpus,
            container,
            load1,
            usage,
            busy_seconds,
            total_seconds,
        })
    }

    /// Busy and total seconds of all CPUs from the `cpu` line of `/proc/stat`:
    /// user nice system idle iowait irq softirq steal (guest time is already in user).
    fn proc_stat(&self) -> Option<(f64, f64)> {
        let ticks: Vec<f64> = self
            .values
            .get("procstat")?
            .split_whitespace()
            .map(str::parse::<f64>)
            .collect::<Result<_, _>>()
            .ok()?;
        if ticks.len() < 4 {
            return None;
        }
        let counted = &ticks[..ticks.len().min(8)];
        let total: f64 = counted.iter().sum();
        let idle = ticks[3] + ticks.get(4).copied().unwrap_or(0.0);
        Some(((total - idle) / USER_HZ, total / USER_HZ))
    }

    fn memory(&self) -> Option<Memory> {
        let cgroup = if self.values.contains_key("cg2_mem_max") {
            self.bytes("cg2_mem_max").and_then(|limit| {
                let current = self.bytes("cg2_mem_current")?;
                let inactive = self.bytes("cg2_mem_inactive_file").unwrap_or(0);
                Some((limit, current.saturating_sub(inactive)))
            })
        } else {
            self.bytes("cg1_mem_limit")
                .filter(|limit| *limit < (1 << 60))
                .and_then(|limit| {
                    let usage = self.bytes("cg1_mem_usage")?;
                    let inactive = self.bytes("cg1_mem_inactive_file").unwrap_or(0);
                    Some((limit, usage.saturating_sub(inactive)))
                })
        };
        if let Some((limit_bytes, used_bytes)) = cgroup {
            return Some(Memory {
                used_bytes,
                limit_bytes,
                container: true,
            });
        }
        let total = self.bytes("meminfo_total")?.checked_mul(1024)?;
        let available = self.bytes("meminfo_available")?.checked_mul(1024)?;
        Some(Memory {
            used_bytes: total.saturating_sub(available),
            limit_bytes: total,
            container: false,
        })
    }
}

/// `index, name, util, mem used, mem total, temp, power, limit` with `[N/A]` or
/// `[Not Supported]` for a missing figure.
fn parse_gpu(rest: &str) -> Option<Gpu> {
    let fields: Vec<&str> = rest.split(',').map(str::trim).collect();
    if fields.len() < 8 {
        return None;
    }
    let number = |text: &str| text.parse::<f64>().ok().filter(|value| value.is_finite());
    let mib = |text: &str| text.parse::<u64>().ok()?.checked_mul(1_048_576);
    Some(Gpu {
        index: fields[0].parse().ok()?,
        name: fields[1].to_owned(),
        utilization: number(fields[2]).map(|percent| (percent / 100.0).clamp(0.0, 1.0)),
        memory_used_bytes: mib(fields[3]),
        memory_total_bytes: mib(fields[4]),
        temperature_celsius: number(fields[5]),
        power_watts: number(fields[6]),
        power_limit_watts: number(fields[7]),
    })
}

/// `run|root fstype size_kib used_kib mount`.
fn parse_df(rest: &str) -> Option<Disk> {
    let mut parts = rest.splitn(5, ' ');
    let role = match parts.next()? {
        "run" => DiskRole::Run,
        "root" => DiskRole::Root,
        _ => return None,
    };
    let fs_type = parts.next()?.to_owned();
    let size_bytes = parts.next()?.parse::<u64>().ok()?.checked_mul(1024)?;
    let used_bytes = parts.next()?.parse::<u64>().ok()?.checked_mul(1024)?;
    let mount = parts.next()?.to_owned();
    let shared = NETWORK_FILE_SYSTEMS.contains(&fs_type.as_str());
    Some(Disk {
        role,
        mount,
        fs_type,
        size_bytes,
        used_bytes,
        shared,
    })
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests run real programs and read the test environment"
)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    const HOST: &str = "gpu 0, NVIDIA H100 80GB HBM3, 87, 40000, 81559, 61, 512.3, 700.00
gpu 1, NVIDIA H100 80GB HBM3, [N/A], [N/A], 81559, 40, [Not Supported], 700.00
nproc 16
loadavg 3.50 2.00 1.00 2/300 1234
procstat 100 0 100 800 0 0 0 0 0 0
meminfo_total 16000000
meminfo_available 4000000
df run nfs4 1000 500 /mnt/volume
df root ext4 2000 100 /
";

    #[test]
    fn parses_a_host() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let sample = parse(HOST, at, None);
        assert_eq!(sample.gpus.len(), 2);
        assert_eq!(sample.gpus[0].utilization, Some(0.87));
        assert_eq!(sample.gpus[0].memory_used_bytes, Some(40000 * 1_048_576));
        assert_eq!(sample.gpus[1].utilization, None);
        assert_eq!(sample.gpus[1].power_watts, None);
        let cpu = sample.cpu.clone().unwrap();
        assert_eq!(cpu.cpus, Some(16.0));
        assert!(!cpu.container);
        assert_eq!(cpu.load1, Some(3.5));
        assert_eq!(cpu.usage, None);
        let memory = sample.memory.clone().unwrap();
        assert_eq!(memory.limit_bytes, 16_000_000 * 1024);
        assert_eq!(memory.used_bytes, 12_000_000 * 1024);
        let run = sample.run_disk().unwrap();
        assert!(run.shared);
        assert_eq!(run.mount, "/mnt/volume");
        assert!(!sample.root_disk().unwrap().shared);
        let later = HOST.replace("procstat 100 0 100 800", "procstat 150 0 150 900");
        let next = parse(&later, at + Duration::from_secs(10), Some(&sample));
        let usage = next.cpu.unwrap().usage.unwrap();
        assert!((usage - 0.5).abs() < 1e-9, "{usage}");
    }

    #[test]
    fn a_container_limit_wins() {
        let output = "nproc 64
loadavg 10.0 1 1 1/1 1
cg2_cpu_max 400000 100000
cg2_cpu_usec 10000000
cg2_mem_max 8589934592
cg2_mem_current 4294967296
cg2_mem_inactive_file 1073741824
meminfo_total 1000
meminfo_available 10
";
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let sample = parse(output, at, None);
        let cpu = sample.cpu.clone().unwrap();
        assert_eq!(cpu.cpus, Some(4.0));
        assert!(cpu.container);
        let memory = sample.memory.clone().unwrap();
        assert!(memory.container);
        assert_eq!(memory.limit_bytes, 8_589_934_592);
        assert_eq!(memory.used_bytes, 3_221_225_472);
        let later = output
            .replace("usage_usec 10000000", "")
            .replace("cg2_cpu_usec 10000000", "cg2_cpu_usec 30000000");
        let next = parse(&later, at + Duration::from_secs(10), Some(&sample));
        assert_eq!(next.cpu.unwrap().usage, Some(0.5));
        let unlimited = output.replace("cg2_mem_max 8589934592", "cg2_mem_max max");
        let sample = parse(&unlimited, at, None);
        assert!(!sample.memory.unwrap().container);
    }

    #[test]
    fn missing_parts_stay_absent() {
        let sample = parse("", SystemTime::UNIX_EPOCH, None);
        assert!(sample.gpus.is_empty());
        assert!(sample.cpu.is_none());
        assert!(sample.memory.is_none());
        assert!(sample.disks.is_empty());
        assert!(sample.node.is_none() && sample.slurm_job.is_none());
        let garbled = parse(
            "gpu x\nnproc many\ndf run ext4 a b /\nmeminfo_total 5\n",
            SystemTime::UNIX_EPOCH,
            None,
        );
        assert!(garbled.gpus.is_empty());
        assert!(garbled.cpu.is_none());
        assert!(garbled.memory.is_none());
        assert!(garbled.disks.is_empty());
    }

    #[test]
    fn the_node_and_the_slurm_job_are_read() {
        let sample = parse("slurm_job 42\nnode gpu-07\n", SystemTime::UNIX_EPOCH, None);
        assert_eq!(sample.node.as_deref(), Some("gpu-07"));
        assert_eq!(sample.slurm_job, Some(42));
        let blank = parse("node \nslurm_job \n", SystemTime::UNIX_EPOCH, None);
        assert!(blank.node.is_none() && blank.slurm_job.is_none());
    }

    #[test]
    fn the_script_runs_here_and_passes_shellcheck() {
        let dir = tempfile::tempdir().unwrap();
        let script = probe_script(&dir.path().join("not/yet").to_string_lossy());
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .output()
            .unwrap();
        assert!(output.status.success());
        let sample = parse(
            &String::from_utf8_lossy(&output.stdout),
            SystemTime::now(),
            None,
        );
        assert!(
            sample.run_disk().is_some_and(|disk| disk.size_bytes > 0),
            "{sample:?}"
        );
        assert!(sample.root_disk().is_some(), "{sample:?}");
        assert!(sample.node.is_some(), "{sample:?}");
        crate::shell::shellcheck::assert_passes(&script, "SC2016,SC3040,SC2086");
    }

    proptest! {
        #[test]
        fn parse_never_panics(text in "(gpu|df|nproc|procstat|cg2_cpu_max|meminfo_total|loadavg)? ?[ -~\n]{0,80}") {
            let sample = parse(&text, SystemTime::UNIX_EPOCH, None);
            if let Some(cpu) = sample.cpu {
                prop_assert!(cpu.cpus.is_none_or(|n| n > 0.0));
            }
        }
    }
}

//! `[targets.<name>] kind = "slurm"` (issue 19): a run's job submitted with `sbatch`
//! through the cluster's login node (`host`, env only, as for ssh; unset: this machine
//! is the login node), its run directory under `workdir` on the shared file system. The
//! keys, their defaults and rules; the scheduler's side is `exec::SlurmExecutor`.

use serde::{Deserialize, Serialize};

use super::rules::Check;
use super::runtime::{Engine, Runtime, default_image};
use super::ssh_client::SshClient;

/// `kind = "slurm"`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SlurmTarget {
    /// How the job runs on the node.
    #[serde(default)]
    pub runtime: Runtime,
    /// Native runtime: directory holding `bin/axolotl` on the nodes; unset uses `PATH`.
    #[serde(default)]
    pub venv: Option<String>,
    /// Docker runtime: container engine on the nodes.
    #[serde(default)]
    pub engine: Engine,
    /// Docker runtime: image reference.
    #[serde(default = "default_image")]
    pub image: String,
    /// A prebuilt llama.cpp tree for export, as for a local target.
    #[serde(default)]
    pub llama_cpp_dir: Option<String>,
    /// Directory of the run directories on the shared file system, relative to the
    /// login node's home when not absolute (absolute when `host` is unset, or relative
    /// to the project's `runs/` then, as for a local target).
    #[serde(default)]
    pub workdir: Option<String>,
    /// SSH client to the login node.
    #[serde(default)]
    pub ssh_client: SshClient,
    /// The login node, `user@host` or an alias; env only
    /// (`OVERBRAINER_TARGETS__<NAME>__HOST`); unset: this machine submits.
    #[serde(default)]
    pub host: Option<String>,
    /// `--partition`; unset: the cluster's default partition.
    #[serde(default)]
    pub partition: Option<String>,
    /// `--account`.
    #[serde(default)]
    pub account: Option<String>,
    /// `--qos`.
    #[serde(default)]
    pub qos: Option<String>,
    /// `--gpus-per-node`; unset or 0: no GPU is asked for.
    #[serde(default)]
    pub gpus_per_node: Option<u32>,
    /// `--nodes`, at least 1.
    #[serde(default = "default_nodes")]
    pub nodes: u32,
    /// `--cpus-per-task`.
    #[serde(default)]
    pub cpus_per_task: Option<u32>,
    /// `--mem`, in GB per node.
    #[serde(default)]
    pub mem_gb: Option<u32>,
    /// The job's time limit in hours (`--time`, rounded up to whole minutes); unset:
    /// the partition's. With it, the job is sent `SIGUSR1` before the limit and saves
    /// a snapshot (`deadline`).
    #[serde(default)]
    pub max_hours: Option<f64>,
    /// Further `#SBATCH` lines, each one option as `sbatch` reads it (`--constraint=a100`).
    #[serde(default)]
    pub extra_sbatch: Vec<String>,
}

fn default_nodes() -> u32 {
    1
}

/// The `sbatch` options overbrainer sets itself, long and short spellings: an
/// `extra_sbatch` line may not set them.
pub const MANAGED_SBATCH: &[&str] = &[
    "--output",
    "-o",
    "--error",
    "-e",
    "--time",
    "-t",
    "--job-name",
    "-J",
    "--signal",
    "--chdir",
    "-D",
    "--parsable",
    "--wrap",
    "--export",
];

/// The managed option an `extra_sbatch` line sets, if any: its first word, with a
/// leading `#SBATCH` dropped, up to `=`, matched whole (`--time-min` is not `--time`)
/// or as a short option with its value attached (`-t10`).
#[must_use]
pub fn managed_option(line: &str) -> Option<&'static str> {
    let line = line.trim();
    let line = line.strip_prefix("#SBATCH").unwrap_or(line).trim_start();
    let word = line.split_whitespace().next()?;
    let name = word.split('=').next().unwrap_or(word);
    MANAGED_SBATCH.iter().copied().find(|managed| {
        name == *managed
            || (managed.len() == 2 && !managed.starts_with("--") && name.starts_with(managed))
    })
}

/// The rules of a slurm target `name`.
pub(super) fn check(check: &mut Check<'_>, name: &str, slurm: &SlurmTarget) {
    let key = |k: &str| format!("targets.{name}.{k}");
    if let Some(venv) = &slurm.venv {
        check.safe(&key("venv"), venv);
    }
    if let Some(dir) = &slurm.llama_cpp_dir {
        check.safe(&key("llama_cpp_dir"), dir);
    }
    check.safe(&key("image"), &slurm.image);
    if let Some(workdir) = &slurm.workdir {
        check.safe(&key("workdir"), workdir);
    }
    if let Some(host) = &slurm.host {
        check.non_empty(&key("host"), host);
        if host.starts_with('-') || host.chars().any(char::is_whitespace) {
            check.fail(
                key("host"),
                "invalid value: expected `user@host` or an alias",
            );
        }
    }
    for (field, value) in [
        ("partition", &slurm.partition),
        ("account", &slurm.account),
        ("qos", &slurm.qos),
    ] {
        if let Some(value) = value {
            check.safe(&key(field), value);
        }
    }
    if slurm.nodes == 0 {
        check.fail(key("nodes"), "out of range: must be at least 1");
    }
    if slurm.cpus_per_task == Some(0) {
        check.fail(key("cpus_per_task"), "out of range: must be at least 1");
    }
    if slurm.mem_gb == Some(0) {
        check.fail(key("mem_gb"), "out of range: must be at least 1");
    }
    if let Some(hours) = slurm.max_hours
        && !(hours > 0.0 && hours <= 8760.0)
    {
        check.fail(key("max_hours"), "out of range: must be 0 < h <= 8760");
    }
    for (index, line) in slurm.extra_sbatch.iter().enumerate() {
        let at = format!("{}[{index}]", key("extra_sbatch"));
        if line.trim().is_empty() || line.contains(['\n', '\r', '\0']) {
            check.fail(at, "invalid value: one `sbatch` option per line");
        } else if !line.trim_start().starts_with('-') && !line.trim_start().starts_with("#SBATCH") {
            check.fail(
                at,
                "invalid value: expected an `sbatch` option such as `--constraint=a100`",
            );
        } else if let Some(option) = managed_option(line) {
            check.fail(
                at,
                format!(
                    "`{option}` is set by overbrainer (the job's output, time limit, name and deadline signal); remove it{}",
                    if option == "--time" || option == "-t" {
                        ", and set `max_hours` instead"
                    } else {
                        ""
                    }
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn managed_options_are_found_in_every_spelling() {
        let cases = [
            ("--output=x.log", Some("--output")),
            ("#SBATCH --time=10", Some("--time")),
            ("  -t 10", Some("-t")),
            ("-t10", Some("-t")),
            ("--job-name foo", Some("--job-name")),
            ("-J foo", Some("-J")),
            ("--signal=B:USR1@60", Some("--signal")),
            ("--time-min=5", None),
            ("--constraint=a100", None),
            ("--exclusive", None),
            ("--mail-type=END", None),
            ("-N 2", None),
        ];
        for (line, expected) in cases {
            assert_eq!(managed_option(line), expected, "{line}");
        }
    }
}

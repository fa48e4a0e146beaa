//! Submitting a job with `sbatch` (issue 19): the options overbrainer sets, the batch
//! script (the user's `#SBATCH` lines, then the job wrapper, which the batch shell runs
//! on the first node), and the launcher that the login node runs. Pure text.

use std::fmt::Write as _;

use crate::env::TimeScale;
use crate::exec::local::{STALE_FILES, STRIPPED_ENV_PREFIXES, engine_record};
use crate::exec::script::{DeadlineSignal, batch_job_script};
use crate::exec::{ExecError, JobCommand};
use crate::shell::quote;

/// The batch script's name in the run directory.
pub const BATCH_FILE: &str = "job.sbatch";
/// The batch shell's own output in the run directory (the job's is `job.log`).
pub const SLURM_OUT: &str = "slurm.out";

/// What a Slurm target asks of the scheduler (`[targets.NAME] kind = "slurm"`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SlurmOptions {
    /// `--partition`.
    pub partition: Option<String>,
    /// `--account`.
    pub account: Option<String>,
    /// `--qos`.
    pub qos: Option<String>,
    /// `--gpus-per-node`.
    pub gpus_per_node: Option<u32>,
    /// `--nodes` (one task per node).
    pub nodes: u32,
    /// `--cpus-per-task`.
    pub cpus_per_task: Option<u32>,
    /// `--mem`, GB per node.
    pub mem_gb: Option<u32>,
    /// `--time`, in hours.
    pub max_hours: Option<f64>,
    /// Further `#SBATCH` lines, checked by the configuration.
    pub extra_sbatch: Vec<String>,
    /// What the wrapper writes when `SIGUSR1` comes before the time limit; `None`
    /// sends no signal (`--signal` left out).
    pub deadline: Option<DeadlineSignal>,
}

/// `--time` in whole minutes for `hours`, rounded up, at least 1.
#[must_use]
pub fn time_minutes(hours: f64) -> u64 {
    let minutes = (hours * 60.0).ceil();
    if minutes.is_finite() && minutes >= 1.0 {
        // A float of whole minutes below 2^53 converts exactly.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let whole = minutes as u64;
        whole
    } else {
        1
    }
}

/// Seconds before the time limit at which the batch shell gets `SIGUSR1`: a tenth of
/// the limit, between 30 seconds and 15 minutes, and never more than half of it. Slurm
/// may send it up to a minute early (its event resolution), never late.
#[must_use]
pub fn signal_lead_seconds(minutes: u64) -> u64 {
    let limit = minutes * 60;
    (limit / 10).clamp(30, 900).min(limit / 2)
}

/// `sbatch`'s arguments for a job in `dir` (absolute), each one shell word, quoted.
#[must_use]
pub fn sbatch_args(options: &SlurmOptions, dir: &str) -> Vec<String> {
    let name = dir
        .rsplit('/')
        .find(|part| !part.is_empty())
        .unwrap_or("job");
    let mut args = vec![
        "--parsable".to_owned(),
        format!("--job-name=ob-{name}"),
        format!("--output={dir}/{SLURM_OUT}"),
        format!("--chdir={dir}"),
        format!("--nodes={}", options.nodes.max(1)),
        "--ntasks-per-node=1".to_owned(),
        "--export=ALL".to_owned(),
    ];
    let mut push = |flag: &str, value: Option<String>| {
        if let Some(value) = value {
            args.push(format!("--{flag}={value}"));
        }
    };
    push("partition", options.partition.clone());
    push("account", options.account.clone());
    push("qos", options.qos.clone());
    push(
        "gpus-per-node",
        options
            .gpus_per_node
            .filter(|gpus| *gpus > 0)
            .map(|g| g.to_string()),
    );
    push(
        "cpus-per-task",
        options.cpus_per_task.map(|c| c.to_string()),
    );
    push("mem", options.mem_gb.map(|gb| format!("{gb}G")));
    if let Some(hours) = options.max_hours {
        let minutes = time_minutes(hours);
        args.push(format!("--time={minutes}"));
        if options.deadline.is_some() {
            args.push(format!("--signal=B:USR1@{}", signal_lead_seconds(minutes)));
        }
    }
    args.iter().map(|arg| quote(arg)).collect()
}

/// What the script of a job in a container does first on a Slurm node: when its shell
/// exits (its stages done, one failed, or its engine client killed), it stops and
/// removes the container whose ID the job recorded
/// ([`crate::exec::CONTAINER_ID_FILE`]), with the engine environment of its start, as
/// a cancel does ([`crate::exec::engine::container_stop`]; nothing is left to stop
/// after a normal end), then exits with its own code. Elsewhere a cancel finds a
/// container that outlived its job; on a cluster no step can reach the node once the
/// job has ended, so the job's own shell does it.
#[must_use]
pub fn container_end(dir: &str, container: &crate::exec::Container) -> String {
    format!(
        "ob_container_end() {{\nob_end_code=$1\n{read}{restore}{stop}exit \"$ob_end_code\"\n}}\ntrap 'ob_container_end \"$?\"' EXIT\n",
        read = crate::exec::engine::read_container_id(&format!(
            "{}/{}",
            quote(dir),
            crate::exec::CONTAINER_ID_FILE
        )),
        restore = crate::exec::engine::restore_engine_env(&quote(dir)),
        stop = crate::exec::engine::container_stop(container),
    )
}

/// The batch script of `job`: `#!/bin/sh`, the user's `#SBATCH` lines, then the job
/// wrapper (with the deadline trap when a time limit and a deadline are set), whose
/// script starts with [`container_end`] for a job in a container.
#[must_use]
pub fn batch_script(options: &SlurmOptions, job: &JobCommand, scale: TimeScale) -> String {
    let script = match &job.container {
        Some(container) => format!("{}{}", container_end(&job.dir, container), job.script),
        None => job.script.clone(),
    };
    let mut text = String::from("#!/bin/sh\n");
    for line in &options.extra_sbatch {
        let line = line.trim();
        let line = line.strip_prefix("#SBATCH").unwrap_or(line).trim();
        text.push_str("#SBATCH ");
        text.push_str(line);
        text.push('\n');
    }
    // The deadline trap only when a time limit is set: no limit, no warning to trap.
    let deadline = options
        .deadline
        .as_ref()
        .filter(|_| options.max_hours.is_some());
    text.push_str(&batch_job_script(&job.dir, &script, scale, deadline));
    text
}

/// The launcher the login node runs: prepares the run directory as the other
/// executors do (stale state files removed, the engine environment recorded), writes
/// the batch script, drops the `OVERBRAINER_*` and `VAULT_*` variables, reads the
/// secrets from standard input into exported variables (`sbatch --export=ALL` hands
/// the job this environment), and submits; it prints the job ID.
#[must_use]
pub fn launcher(options: &SlurmOptions, job: &JobCommand, scale: TimeScale) -> String {
    let mut reads = String::new();
    for (name, _) in &job.secrets {
        reads.push_str("IFS= read -r ob_v || { echo 'secret input ended early' >&2; exit 4; }\n");
        let _ = write!(reads, "{name}=$ob_v\nexport {name}\n");
    }
    format!(
        r#"d={dir}
mkdir -p -- "$d" && cd -- "$d" || exit 1
rm -f -- {stale} {out}
{record}cat > {batch}.tmp <<'OB_BATCH_END'
{script}OB_BATCH_END
mv -f {batch}.tmp {batch} || exit 1
{strip}
{reads}unset ob_v ob_n
sbatch {args} {batch}
"#,
        dir = quote(&job.dir),
        stale = STALE_FILES.join(" "),
        out = SLURM_OUT,
        record = engine_record(job),
        batch = BATCH_FILE,
        script = batch_script(options, job, scale),
        strip = strip_line(),
        args = sbatch_args(options, &job.dir).join(" "),
    )
}

/// The shell line that unsets every variable of overbrainer's own (`OVERBRAINER_*`,
/// `VAULT_*`) before a Slurm client runs: `sbatch --export=ALL` and `srun` carry the
/// caller's environment to the node, and secrets never reach a job or a step (SEC-3).
#[must_use]
pub fn strip_line() -> String {
    let strip: Vec<String> = STRIPPED_ENV_PREFIXES
        .iter()
        .map(|prefix| format!("s/^\\({prefix}[A-Za-z0-9_]*\\)=.*/\\1/p"))
        .collect();
    format!(
        "for ob_n in $(env | sed -n {}); do unset \"$ob_n\"; done",
        quote(&strip.join("; "))
    )
}

/// The job ID in `sbatch --parsable`'s answer (`ID` or `ID;cluster`).
///
/// # Errors
///
/// [`ExecError::Protocol`] for anything else.
pub fn parse_submitted(output: &str) -> Result<u64, ExecError> {
    let line = output.lines().rev().find(|line| !line.trim().is_empty());
    line.and_then(|line| line.trim().split(';').next())
        .and_then(|id| id.parse::<u64>().ok())
        .ok_or_else(|| {
            ExecError::Protocol(format!(
                "sbatch answered `{}`, not a job ID",
                crate::exec::script::truncate(output.trim(), 80)
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> JobCommand {
        JobCommand {
            dir: "/shared/runs/r_1".into(),
            script: "echo hi".into(),
            secrets: vec![("HF_TOKEN".into(), "never-in-the-script".into())],
            container: None,
        }
    }

    #[test]
    fn time_limits_round_up_to_minutes_and_the_signal_comes_before() {
        for (hours, minutes, lead) in [
            (1.0, 60, 360),
            (0.01, 1, 30),
            (1.0 / 60.0, 1, 30),
            (0.05, 3, 30),
            (24.0, 1440, 900),
            (0.0, 1, 30),
        ] {
            assert_eq!(time_minutes(hours), minutes, "{hours}");
            assert_eq!(signal_lead_seconds(minutes), lead, "{hours}");
        }
    }

    #[test]
    fn sbatch_gets_our_options_and_the_targets_own() {
        let options = SlurmOptions {
            partition: Some("gpu".into()),
            account: Some("lab".into()),
            qos: None,
            gpus_per_node: Some(2),
            nodes: 2,
            cpus_per_task: Some(8),
            mem_gb: Some(64),
            max_hours: Some(2.0),
            extra_sbatch: vec!["--constraint=a100".into()],
            deadline: Some(DeadlineSignal {
                file: "snapshot.request".into(),
                content: "deadline".into(),
            }),
        };
        assert_eq!(
            sbatch_args(&options, "/shared/runs/r_1")
                .join(" ")
                .replace('\'', ""),
            "--parsable --job-name=ob-r_1 --output=/shared/runs/r_1/slurm.out \
             --chdir=/shared/runs/r_1 --nodes=2 --ntasks-per-node=1 --export=ALL \
             --partition=gpu --account=lab --gpus-per-node=2 --cpus-per-task=8 --mem=64G \
             --time=120 --signal=B:USR1@720"
        );
        let without = SlurmOptions {
            deadline: None,
            ..options.clone()
        };
        assert!(!sbatch_args(&without, "/d").join(" ").contains("--signal"));
        let script = batch_script(&options, &job(), TimeScale::REAL);
        assert!(script.starts_with("#!/bin/sh\n#SBATCH --constraint=a100\ncd "));
        assert!(script.contains("trap ob_deadline USR1"));
        assert!(!script.contains("never-in-the-script"));
        let plain = batch_script(&without, &job(), TimeScale::REAL);
        assert!(!plain.contains("USR1"));
    }

    #[test]
    fn the_launcher_names_secrets_but_never_holds_their_values() {
        let options = SlurmOptions {
            nodes: 1,
            max_hours: Some(1.0),
            deadline: Some(DeadlineSignal {
                file: "snapshot.request".into(),
                content: "deadline".into(),
            }),
            ..SlurmOptions::default()
        };
        let text = launcher(&options, &job(), TimeScale::REAL);
        assert!(text.contains("HF_TOKEN=$ob_v"));
        assert!(!text.contains("never-in-the-script"));
        crate::exec::shellcheck::assert_passes(&text, "SC2016");
        crate::exec::shellcheck::assert_passes(
            &batch_script(&options, &job(), TimeScale::REAL),
            "SC2016",
        );
    }

    /// A container job's script stops its container when its shell exits, before
    /// its stages; a native job's is left as it is.
    #[test]
    fn a_container_jobs_script_stops_its_container_when_it_exits() {
        let options = SlurmOptions {
            nodes: 1,
            ..SlurmOptions::default()
        };
        assert!(!batch_script(&options, &job(), TimeScale::REAL).contains("ob_container_end"));
        let mut container = job();
        container.container = Some(crate::exec::Container {
            engine: crate::config::Engine::Docker,
            name: "overbrainer-r_1".into(),
        });
        let script = batch_script(&options, &container, TimeScale::REAL);
        let trap = script.find("trap 'ob_container_end \"$?\"' EXIT");
        assert!(trap.is_some() && trap < script.find("echo hi"), "{script}");
        assert!(
            script.contains("'/shared/runs/r_1'/job.container"),
            "{script}"
        );
        assert!(script.contains("docker stop -t 30"), "{script}");
        // SC2317: the function runs from the trap, which shellcheck does not follow.
        crate::exec::shellcheck::assert_passes(&script, "SC2016,SC2317");
    }

    /// The exit trap keeps the script's exit code: an `exit 7`, and a failing command
    /// under `set -e`.
    #[test]
    #[allow(clippy::disallowed_methods, reason = "runs the trap under a real sh")]
    fn the_container_end_keeps_the_scripts_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let container = crate::exec::Container {
            engine: crate::config::Engine::Podman,
            name: "overbrainer-r_1".into(),
        };
        let end = container_end(&dir.path().to_string_lossy(), &container);
        for (body, code) in [("exit 7", 7), ("set -e\nfalse\necho never", 1), ("true", 0)] {
            let status = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("{end}{body}\n"))
                .status()
                .unwrap();
            assert_eq!(status.code(), Some(code), "{body}");
        }
    }

    #[test]
    fn submitted_job_ids_are_read_strictly() {
        assert_eq!(parse_submitted("42\n").unwrap(), 42);
        assert_eq!(parse_submitted("7;obtest\n").unwrap(), 7);
        assert!(parse_submitted("Submitted batch job 42").is_err());
        assert!(parse_submitted("").is_err());
    }
}

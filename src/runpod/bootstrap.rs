//! The pod's command (POD-27): the bootstrap script, with the run's directory, ID and
//! venv, the check of what a custom image must keep ([`IMAGE_CHECK`], POD-74), the
//! claim of `exec` (RUN-4), the job environment's writer ([`JOB_ENV`]) and the
//! watchdog ([`super::watchdog::WATCHDOG`]) rendered into it in one place, and the
//! create body's `args` that start it. The secrets it needs come in the pod's
//! environment as Runpod substitutes them (`OVERBRAINER_HOST_KEY` from the run's account
//! secret); none is part of the rendered text.
//!
//! What `args` is on a real pod (issue 34): REST v2's `CreatePodRequest.args` is
//! "Arguments passed to the container entrypoint", and v2 has no entrypoint override
//! (`runpod/docs` `api-reference-v2/openapi.json`, `BaseContainerConfig.args`); Runpod's
//! container start command "overrides the default CMD instruction" and is written as
//! shell words, `bash -c '/start.sh'` (`pods/templates/manage-templates.mdx`). So `args`
//! replaces the image's `CMD` and runs under its `ENTRYPOINT`: on a `runpod/pytorch`
//! image (nvidia/cuda's entrypoint, which ends in `exec "$@"`; `CMD ["/start.sh"]`) it
//! runs instead of `/start.sh`, on a plain image (no entrypoint) it is the command
//! itself. [`args`] is therefore a command, `bash -c <word>`, and the word holds no
//! whitespace, no quote and no backslash: however Runpod splits the string into words
//! (by whitespace, or as a shell does), it is these three. The word writes the script,
//! carried in base64, to [`BOOTSTRAP_FILE`] and runs it with `bash`.

use base64::Engine as _;

use crate::exec::{claim_script, quote};

use super::watchdog::WATCHDOG;

/// The bootstrap's body (bash); [`script`] renders the rest around it.
pub const BOOTSTRAP: &str = include_str!("bootstrap.sh");

/// The writer of the job environment (bash functions), rendered into [`script`].
pub const JOB_ENV: &str = include_str!("job_env.sh");

/// The check of what a custom image must keep (bash functions), rendered into [`script`]
/// and run first by the bootstrap (POD-74).
pub const IMAGE_CHECK: &str = include_str!("image_check.sh");

/// The tools a pod's image must provide (POD-74), in the order [`IMAGE_CHECK`] names
/// the missing ones; Axolotl in the target's `venv` comes after them.
pub const REQUIRED_TOOLS: [&str; 10] = [
    "bash",
    "sshd",
    "ssh-keygen",
    "base64",
    "curl",
    "setsid",
    "nohup",
    "tar",
    "find",
    "sha256sum",
];

/// What the bootstrap's line in the pod's log says before the missing items (after
/// its `<time> bootstrap: ` prefix) when the image lacks what POD-74 requires.
pub const IMAGE_LACKS: &str = "the image lacks what overbrainer needs: ";

/// The missing items a line of the pod's log names when it is the bootstrap's
/// [`IMAGE_LACKS`] line: tools of [`REQUIRED_TOOLS`] and `axolotl in <venv>`, in its
/// order. Anything else the line holds is left out (the line comes from the pod); `None`
/// for any other line.
#[must_use]
pub fn image_lacks(line: &str) -> Option<Vec<String>> {
    let (_, rest) = line.split_once(&format!("bootstrap: {IMAGE_LACKS}"))?;
    let missing: Vec<String> = rest
        .trim_end()
        .split(", ")
        .filter(|item| {
            REQUIRED_TOOLS.contains(item)
                || item
                    .strip_prefix("axolotl in ")
                    .is_some_and(|venv| venv.starts_with('/') && crate::config::safe_path(venv))
        })
        .map(str::to_owned)
        .collect();
    (!missing.is_empty()).then_some(missing)
}

/// Where [`args`] writes the bootstrap on the pod before it runs it.
pub const BOOTSTRAP_FILE: &str = "/etc/overbrainer/bootstrap.sh";

/// The image's environment for the jobs, written by the bootstrap (POD-74).
pub const JOB_ENV_FILE: &str = "/etc/overbrainer/job.env";

/// The here-document delimiter that carries the watchdog.
const DELIMITER: &str = "OVERBRAINER_WATCHDOG_END";

/// The bootstrap script of run `run_id` whose directory on the pod is `run_dir`, on an
/// image that holds Axolotl in `venv` (the target's `venv`).
#[must_use]
pub fn script(run_dir: &str, run_id: &str, venv: &str) -> String {
    debug_assert!(!WATCHDOG.lines().any(|l| l == DELIMITER));
    let claim = claim_script(run_dir, run_id);
    format!(
        "#!/bin/bash\nrun_dir={dir}\nvenv={venv}\nclaim() {{\n(\n{claim})\n}}\nwatchdog() {{\ncat <<'{DELIMITER}'\n\
         {WATCHDOG}{DELIMITER}\n}}\n{IMAGE_CHECK}{JOB_ENV}{BOOTSTRAP}",
        dir = quote(run_dir),
        venv = quote(venv),
    )
}

/// The pod's `args`: `bash -c <word>`, the word writing [`script`] to
/// [`BOOTSTRAP_FILE`] and running it (see the module's documentation).
#[must_use]
pub fn args(run_dir: &str, run_id: &str, venv: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(script(run_dir, run_id, venv));
    let dir = BOOTSTRAP_FILE.rsplit_once('/').map_or("/", |(dir, _)| dir);
    format!(
        "bash -c mkdir${{IFS}}-p${{IFS}}{dir}&&echo${{IFS}}{encoded}|base64${{IFS}}-d>{BOOTSTRAP_FILE}&&exec${{IFS}}bash${{IFS}}{BOOTSTRAP_FILE}"
    )
}

/// The first lines of a job's script on a pod: the image's environment from
/// [`JOB_ENV_FILE`], so that a job started over SSH keeps what the image set (the
/// job's own prelude comes after it and wins). A missing file ends the job with a
/// line in its log that says why (a POSIX shell exits at once on a `.` of a missing
/// file, before any message).
#[must_use]
pub fn source_job_env() -> String {
    format!(
        "if [ ! -r {JOB_ENV_FILE} ]; then echo 'overbrainer: cannot read {JOB_ENV_FILE}, which the pod'\"'\"'s bootstrap writes' >&2; exit 1; fi\n. {JOB_ENV_FILE}\n"
    )
}

#[cfg(test)]
#[path = "bootstrap_tests.rs"]
mod tests;

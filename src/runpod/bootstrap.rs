//! The pod's command (POD-27): the bootstrap script, run as the create body's `args`,
//! with the run's directory and ID, the claim of `exec` (RUN-4) and the watchdog
//! ([`super::watchdog::WATCHDOG`]) rendered into it in one place. The secrets it needs
//! come in the pod's environment as Runpod substitutes them (`OVERBRAINER_HOST_KEY` from
//! the run's account secret); none is part of the rendered text.

use crate::exec::{claim_script, quote};

use super::watchdog::WATCHDOG;

/// The bootstrap's body (bash); [`args`] renders the rest around it.
pub const BOOTSTRAP: &str = include_str!("bootstrap.sh");

/// The here-document delimiter that carries the watchdog.
const DELIMITER: &str = "OVERBRAINER_WATCHDOG_END";

/// The pod's `args`: the bootstrap of run `run_id` whose directory on the pod is
/// `run_dir`.
#[must_use]
pub fn args(run_dir: &str, run_id: &str) -> String {
    debug_assert!(!WATCHDOG.lines().any(|l| l == DELIMITER));
    let claim = claim_script(run_dir, run_id);
    format!(
        "#!/bin/bash\nrun_dir={dir}\nclaim() {{\n(\n{claim})\n}}\nwatchdog() {{\ncat <<'{DELIMITER}'\n\
         {WATCHDOG}{DELIMITER}\n}}\n{BOOTSTRAP}",
        dir = quote(run_dir),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bootstrap_passes_shellcheck() {
        crate::exec::shellcheck::assert_passes(&args("/workspace/runs/r_1 x", "r_1"), "");
    }

    #[test]
    fn the_watchdog_travels_whole_inside_the_bootstrap() {
        let rendered = args("/workspace/runs/r_1", "r_1");
        assert!(rendered.contains(WATCHDOG));
        assert!(!WATCHDOG.lines().any(|l| l == DELIMITER));
        assert!(
            rendered.contains("run_dir='/workspace/runs/r_1'\n"),
            "{rendered}"
        );
    }
}

//! Test helper: `shellcheck` over a generated script (STYLE 13). A test that calls it
//! fails when shellcheck is missing, naming the command that installs it (`make test`
//! installs it through `scripts/test-deps.sh`); it never passes silently.

use std::io::Write as _;
use std::process::{Command, Stdio};

/// How to install shellcheck, for the failure message.
const INSTALL: &str = "sudo apt-get install shellcheck (or run `make test`, which installs it)";

/// Asserts that shellcheck, as POSIX `sh` and with the checks `excluded` (comma-separated
/// codes) left out, finds nothing in `script`.
///
/// # Panics
///
/// When shellcheck is not installed (naming [`INSTALL`]) or reports something.
pub(crate) fn assert_passes(script: &str, excluded: &str) {
    assert_passes_as("sh", script, excluded);
}

/// [`assert_passes`] of a bash script (bash's own features allowed).
///
/// # Panics
///
/// As [`assert_passes`].
pub(crate) fn assert_passes_bash(script: &str, excluded: &str) {
    assert_passes_as("bash", script, excluded);
}

#[allow(
    clippy::disallowed_methods,
    reason = "a test helper that runs the real shellcheck"
)]
fn assert_passes_as(dialect: &str, script: &str, excluded: &str) {
    let child = Command::new("shellcheck")
        .args(["-s", dialect, "-e", excluded, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            panic!("shellcheck is not installed; install it: {INSTALL}")
        }
        Err(error) => panic!("cannot run shellcheck: {error}"),
    };
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(script.as_bytes())
        .expect("shellcheck reads the script");
    let output = child.wait_with_output().expect("shellcheck ends");
    assert!(
        output.status.success(),
        "shellcheck finds problems in:\n{script}\n{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

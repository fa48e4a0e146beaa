//! The engine calls that stop a job's container (TGT-6): `stop`, `rm -f` and the wait
//! until the engine no longer knows it, each bounded where the target has `timeout`.
//! Run by [`super::cancel_script`]; the container's start is [`super::runtime`]'s.

use super::Container;
use super::shell::quote;

/// Seconds [`container_stop`] lets one call of the engine run where `timeout`
/// exists: `stop -t 30` and a margin.
pub(crate) const ENGINE_CALL_SECONDS: u32 = 45;

/// The shell commands that stop and remove `container` (TGT-6), whatever it is
/// doing: `<engine> stop -t 30` (its main process gets `SIGTERM`, then `SIGKILL`
/// after 30 seconds, or the container's own stop signal: `SIGINT` for the
/// containers of [`super::stage_command`]), then `<engine> rm -f` (a container
/// started with `--rm` is usually being removed already), then up to 30 seconds
/// for `<engine> container inspect` to stop finding it. Errors of the engine are
/// ignored: no engine, or no such container, means nothing to stop.
///
/// Each call of the engine runs under `timeout -s KILL` where the target has
/// `timeout`, for at most [`ENGINE_CALL_SECONDS`]: an engine that does not answer
/// (a hung daemon) cannot hold the cancel for ever. The first call that runs out
/// prints, on standard error, the command and that the container may still run,
/// sets `ob_stop_rc=4`, and no later engine call is made. Used by
/// [`super::cancel_script`].
#[must_use]
pub fn container_stop(container: &Container) -> String {
    let program = container.engine.program();
    let name = quote(&container.name);
    format!(
        r#"ob_to=
if command -v timeout >/dev/null 2>&1; then ob_to="timeout -s KILL"; fi
ob_engine() {{
  [ -z "${{ob_stop_rc:-}}" ] || return 2
  if [ -z "$ob_to" ]; then "$@" >/dev/null 2>&1; return; fi
  # shellcheck disable=SC2086
  $ob_to {ENGINE_CALL_SECONDS} "$@" >/dev/null 2>&1
  ob_r=$?
  if [ "$ob_r" -eq 137 ]; then
    echo "\`$*\` did not return within {ENGINE_CALL_SECONDS} seconds: the container may still run" >&2
    ob_stop_rc=4
    return 2
  fi
  return "$ob_r"
}}
ob_engine {program} stop -t 30 {name} || true
ob_engine {program} rm -f {name} || true
ob_c=0
while ob_engine {program} container inspect {name} && [ "$ob_c" -lt 150 ]; do
  sleep 0.2 2>/dev/null || sleep 1
  ob_c=$((ob_c + 1))
done
"#
    )
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests run the scripts in a real shell"
)]
mod tests {
    use super::*;
    use crate::config::Engine;

    // Issue 11: cancel stops the container, removes it and waits until the engine no
    // longer knows it.
    #[test]
    fn container_stop_stops_removes_and_waits_for_the_container_to_be_gone() {
        let dir = tempfile::tempdir().unwrap();
        let calls = dir.path().join("calls");
        // A stand-in Podman whose container is still listed by the first two
        // `container inspect` calls, behind a stand-in `timeout` that runs it.
        let engine = format!(
            "timeout() {{ shift 3; \"$@\"; }}\n\
             podman() {{ printf '%s\\n' \"$*\" >> '{calls}'; [ \"$1\" = container ] || return 0; [ \"$(grep -c '^container' '{calls}')\" -lt 3 ]; }}\n",
            calls = calls.display()
        );
        let (code, stderr) = run_stop(&engine);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(
            std::fs::read_to_string(&calls).unwrap(),
            "stop -t 30 overbrainer-r 1\nrm -f overbrainer-r 1\ncontainer inspect overbrainer-r 1\n\
             container inspect overbrainer-r 1\ncontainer inspect overbrainer-r 1\n"
        );
        assert!(stderr.is_empty(), "{stderr}");
    }

    /// Runs [`container_stop`] of `overbrainer-r 1` on Podman after `stand_ins` (shell
    /// functions, which must cover `timeout` and `podman`: the real ones are never
    /// run), then prints `ob_stop_rc`. Returns (that code, standard error).
    fn run_stop(stand_ins: &str) -> (i32, String) {
        let container = Container {
            engine: Engine::Podman,
            name: "overbrainer-r 1".into(),
        };
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "{stand_ins}{}printf %s \"${{ob_stop_rc:-0}}\"",
                container_stop(&container)
            ))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        (
            String::from_utf8_lossy(&out.stdout).parse().unwrap(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    // Issue 11: an engine that does not answer cannot hold a cancel for ever; the
    // first call that runs out is named, and no later call is made.
    #[test]
    fn a_hung_engine_call_is_cut_short_named_and_not_repeated() {
        let dir = tempfile::tempdir().unwrap();
        let calls = dir.path().join("calls");
        // A stand-in `timeout` that reports the engine killed, as `timeout -s KILL`
        // does when its time runs out.
        let stand_ins = format!(
            "timeout() {{ printf '%s\\n' \"$*\" >> '{calls}'; return 137; }}\npodman() {{ return 0; }}\n",
            calls = calls.display()
        );
        let (code, stderr) = run_stop(&stand_ins);
        assert_eq!(code, 4, "{stderr}");
        assert_eq!(
            std::fs::read_to_string(&calls).unwrap(),
            format!("-s KILL {ENGINE_CALL_SECONDS} podman stop -t 30 overbrainer-r 1\n")
        );
        assert!(
            stderr.contains(&format!(
                "`podman stop -t 30 overbrainer-r 1` did not return within {ENGINE_CALL_SECONDS} seconds"
            )),
            "{stderr}"
        );
    }
}

//! The engine calls that stop a job's container (TGT-6): `stop`, `rm -f` and the wait
//! until the engine no longer knows it, each bounded where the target has `timeout`.
//! Run by [`super::cancel_script`]; the container's start is [`super::runtime`]'s.

use super::Container;

/// Seconds [`container_stop`] lets one call of the engine run where `timeout`
/// exists: `stop -t 30` and a margin.
pub(crate) const ENGINE_CALL_SECONDS: u32 = 45;

/// The shell commands that stop and remove the container whose ID the variable
/// `ob_container_id` holds (TGT-6), an ID the job itself recorded
/// ([`super::CONTAINER_ID_FILE`], read by [`super::cancel_script`]); with it empty
/// they do nothing. The container is never looked up by its name
/// (`container.name`): a container of that name that the job did not start is not
/// the job's. Whatever the container is doing: `<engine> stop -t 30` (its main
/// process gets `SIGTERM`, then `SIGKILL` after 30 seconds, or the container's own
/// stop signal: `SIGINT` for the containers of [`super::stage_command`]), then
/// `<engine> rm -f` (a container started with `--rm` is usually being removed
/// already), then up to 30 seconds for `<engine> container inspect` to stop finding
/// it. Errors of the engine are ignored: no engine, or no such container, means
/// nothing to stop.
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
if [ -n "${{ob_container_id:-}}" ] && ! command -v {program} >/dev/null 2>&1; then
  echo "the container engine \`{program}\` is not on the PATH here: container $ob_container_id may still run; cancel again where \`{program}\` runs" >&2
  ob_stop_rc=4
fi
if [ -n "${{ob_container_id:-}}" ]; then
  ob_engine {program} stop -t 30 "$ob_container_id" || true
  ob_engine {program} rm -f "$ob_container_id" || true
  ob_c=0
  while ob_engine {program} container inspect "$ob_container_id" && [ "$ob_c" -lt 150 ]; do
    sleep 0.2 2>/dev/null || sleep 1
    ob_c=$((ob_c + 1))
  done
fi
"#
    )
}

/// The shell commands that set `ob_container_id` from the file `id_file` (a shell
/// word): the container ID the engine's client wrote there, when it is one (12 to 64
/// lowercase hexadecimal digits), else empty.
#[must_use]
pub(crate) fn read_container_id(id_file: &str) -> String {
    format!(
        r"ob_container_id=
if [ -s {id_file} ]; then ob_container_id=$(tr -d ' \n' < {id_file} 2>/dev/null) || ob_container_id=; fi
case $ob_container_id in
  *[!0-9a-f]*) ob_container_id= ;;
  ????????????*) ;;
  *) ob_container_id= ;;
esac
"
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
            format!(
                "stop -t 30 {ID}\nrm -f {ID}\ncontainer inspect {ID}\n\
                 container inspect {ID}\ncontainer inspect {ID}\n"
            )
        );
        assert!(stderr.is_empty(), "{stderr}");
    }

    #[test]
    fn regression_a_missing_engine_is_a_failed_stop_naming_it_never_a_gone_container() {
        // No `podman` at all: a stop that cannot run must not read as a container gone.
        let (code, stderr) =
            run_stop("timeout() { shift 3; \"$@\"; }\nPATH=/nonexistent-0sVq7Lr2\n");
        assert_eq!(code, 4, "{stderr}");
        assert!(stderr.contains("`podman` is not on the PATH"), "{stderr}");
        assert!(stderr.contains(ID), "{stderr}");
    }

    /// A container ID as an engine writes it.
    const ID: &str = "4f1c0b8e9d2a7f6e5c3b1a0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f";

    /// Runs [`container_stop`] of the container [`ID`] (named `overbrainer-r 1`) on
    /// Podman after `stand_ins` (shell functions, which must cover `timeout` and
    /// `podman`: the real ones are never run), then prints `ob_stop_rc`. Returns
    /// (that code, standard error).
    fn run_stop(stand_ins: &str) -> (i32, String) {
        run_stop_of(stand_ins, ID)
    }

    /// [`run_stop`] with `ob_container_id` set to `id`.
    fn run_stop_of(stand_ins: &str, id: &str) -> (i32, String) {
        let container = Container {
            engine: Engine::Podman,
            name: "overbrainer-r 1".into(),
        };
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "{stand_ins}ob_container_id='{id}'\n{}printf %s \"${{ob_stop_rc:-0}}\"",
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
            format!("-s KILL {ENGINE_CALL_SECONDS} podman stop -t 30 {ID}\n")
        );
        assert!(
            stderr.contains(&format!(
                "`podman stop -t 30 {ID}` did not return within {ENGINE_CALL_SECONDS} seconds"
            )),
            "{stderr}"
        );
    }

    // Defect 2: without a container ID the job recorded, nothing is stopped, and a
    // container of the job's name is never looked up.
    #[test]
    fn regression_without_a_recorded_container_id_no_engine_call_is_made() {
        let dir = tempfile::tempdir().unwrap();
        let calls = dir.path().join("calls");
        let stand_ins = format!(
            "timeout() {{ shift 3; \"$@\"; }}\npodman() {{ printf '%s\\n' \"$*\" >> '{calls}'; }}\n",
            calls = calls.display()
        );
        let (code, stderr) = run_stop_of(&stand_ins, "");
        assert_eq!(code, 0, "{stderr}");
        assert!(!calls.exists(), "{:?}", std::fs::read_to_string(&calls));
    }

    // Defect 2: the recorded ID is read strictly: anything but 12 to 64 lowercase
    // hexadecimal digits (a line break at the end allowed) is no container of ours.
    #[test]
    fn regression_a_container_id_file_is_read_strictly() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("job.container");
        let long = "a".repeat(64);
        let newline = format!("{ID}\n");
        for (content, expected) in [
            (Some(ID), ID),
            (Some(newline.as_str()), ID),
            (Some(long.as_str()), long.as_str()),
            (Some("0123456789ab"), "0123456789ab"),
            (Some("0123456789a"), ""),
            (Some("overbrainer-r1"), ""),
            (Some("ABCDEF0123456789"), ""),
            (Some("$(touch x)"), ""),
            (Some(""), ""),
            (None, ""),
        ] {
            let _ = std::fs::remove_file(&file);
            if let Some(content) = content {
                std::fs::write(&file, content).unwrap();
            }
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "{}printf %s \"$ob_container_id\"",
                    read_container_id(&crate::exec::quote(&file.to_string_lossy()))
                ))
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                expected,
                "{content:?}"
            );
        }
    }
}

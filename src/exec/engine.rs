//! The engine calls that stop a job's container (TGT-6): `stop`, `rm -f` and the wait
//! until the engine no longer knows it, each bounded where the target has `timeout`.
//! Run by [`super::cancel_script`]; the container's start is [`super::runtime`]'s.

use super::Container;
use crate::shell::quote;

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
/// `timeout`, for at most `ENGINE_CALL_SECONDS` (45): an engine that does not answer
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

/// The variables that point a container engine's client at its engine: the
/// configuration, storage and connection of Podman (and the `containers` libraries),
/// the daemon, context and client configuration of Docker, and the XDG directories
/// where rootless Podman keeps its state. A job's start records them
/// (in [`ENGINE_ENV_DIR`]) and its cancel runs the engine with them
/// ([`cancel_script`](super::cancel_script)), so that a cancel from a shell with another
/// configuration still finds the job's container instead of reading it as gone.
/// They name files, sockets and hosts, never secrets.
pub const ENGINE_ENV: &[&str] = &[
    "CONTAINERS_CONF",
    "CONTAINERS_CONF_OVERRIDE",
    "CONTAINERS_STORAGE_CONF",
    "CONTAINERS_REGISTRIES_CONF",
    "CONTAINER_HOST",
    "CONTAINER_CONNECTION",
    "CONTAINER_SSHKEY",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CONFIG",
    "DOCKER_CERT_PATH",
    "DOCKER_TLS_VERIFY",
    "DOCKER_API_VERSION",
];

/// Directory in a container job's directory holding the engine environment of its
/// start: one file per variable of [`ENGINE_ENV`] that was set, named after it and
/// holding its value; a variable that was unset has no file.
pub const ENGINE_ENV_DIR: &str = "job.engine-env";

/// The shell commands that record, in `dir` (a path, quoted here), the variables of
/// [`ENGINE_ENV`] as this shell has them, leaving out those named in `skip` (the
/// job's secrets: a value handed to the job as a secret is never written to a file).
/// The record is made aside and renamed into place, so a cancel reads a whole one or
/// none; a record that cannot be made is left out (the cancel then runs the engine
/// in its own environment, as before records existed).
#[must_use]
pub(crate) fn record_engine_env(dir: &str, skip: &[String]) -> String {
    let names: Vec<&str> = ENGINE_ENV
        .iter()
        .copied()
        .filter(|name| !skip.iter().any(|s| s == name))
        .collect();
    format!(
        r#"ob_e={dir}/{ENGINE_ENV_DIR}
rm -rf -- "$ob_e.tmp"
if mkdir -- "$ob_e.tmp"; then
  for ob_n in {names}; do
    eval "ob_set=\${{$ob_n+x}}"
    [ -n "$ob_set" ] || continue
    eval "printf '%s' \"\$$ob_n\"" > "$ob_e.tmp/$ob_n" || ob_e_failed=1
  done
  if [ -z "${{ob_e_failed:-}}" ]; then rm -rf -- "$ob_e"; mv -f -- "$ob_e.tmp" "$ob_e"; else rm -rf -- "$ob_e.tmp"; fi
fi
unset ob_e ob_n ob_set ob_e_failed
"#,
        dir = quote(dir),
        names = names.join(" "),
    )
}

/// The shell commands that give this shell the engine environment recorded by
/// [`record_engine_env`] in the job directory `dir_word` (a shell word): every
/// variable of [`ENGINE_ENV`] set to its recorded value, or unset when the start had
/// it unset. Without a record (a job started before records existed) nothing changes.
/// Values are read as data, never evaluated.
#[must_use]
pub(crate) fn restore_engine_env(dir_word: &str) -> String {
    format!(
        r#"if [ -d {dir_word}/{ENGINE_ENV_DIR} ]; then
  for ob_n in {names}; do
    if [ -f {dir_word}/{ENGINE_ENV_DIR}/"$ob_n" ]; then
      ob_v=$(cat {dir_word}/{ENGINE_ENV_DIR}/"$ob_n") && export "$ob_n=$ob_v"
    else
      unset "$ob_n"
    fi
  done
  unset ob_n ob_v
fi
"#,
        names = ENGINE_ENV.join(" "),
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
    use std::fmt::Write as _;

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

    // Tester defect 2: `train cancel` from a shell with another engine configuration
    // runs the engine with the one the job's start recorded, values read as data,
    // unset variables unset, a secret of the job never written down.
    #[test]
    fn regression_a_cancel_gets_the_engine_environment_recorded_at_the_start() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("run 'r1'");
        std::fs::create_dir_all(&dir).unwrap();
        let conf = "/the job's/containers.conf $(touch pwned) `id`";
        let secret = "docker-config-secret-Qm7Xv2Lp9Rz4Tn8W";
        let record = record_engine_env(&dir.to_string_lossy(), &["DOCKER_CONFIG".to_owned()]);
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&record)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("CONTAINERS_CONF", conf)
            .env("DOCKER_HOST", "unix:///run/job.sock")
            .env("DOCKER_CONFIG", secret)
            .current_dir(root.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let recorded = dir.join(ENGINE_ENV_DIR);
        let mut names: Vec<_> = std::fs::read_dir(&recorded)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["CONTAINERS_CONF", "DOCKER_HOST"],
            "the secret is left out"
        );
        let mut print = String::new();
        for name in ENGINE_ENV {
            writeln!(print, "printf '%s=%s|\\n' {name} \"${{{name}-<unset>}}\"").unwrap();
        }
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "d={}\n{}{print}",
                crate::exec::quote(&dir.to_string_lossy()),
                restore_engine_env("\"$d\"")
            ))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("CONTAINERS_CONF", "/the cancel's/containers.conf")
            .env("CONTAINERS_STORAGE_CONF", "/the cancel's/storage.conf")
            .env("DOCKER_HOST", "unix:///run/other.sock")
            .current_dir(root.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(&format!("CONTAINERS_CONF={conf}|")),
            "{stdout}"
        );
        assert!(
            stdout.contains("CONTAINERS_STORAGE_CONF=<unset>|"),
            "{stdout}"
        );
        assert!(
            stdout.contains("DOCKER_HOST=unix:///run/job.sock|"),
            "{stdout}"
        );
        assert!(stdout.contains("DOCKER_CONFIG=<unset>|"), "{stdout}");
        assert!(!root.path().join("pwned").exists(), "a value was evaluated");
        for name in names {
            assert!(
                !std::fs::read_to_string(recorded.join(name))
                    .unwrap()
                    .contains(secret)
            );
        }
        // Without a record, the cancel's own environment stays.
        std::fs::remove_dir_all(&recorded).unwrap();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "d={}\n{}printf %s \"$DOCKER_HOST\"",
                crate::exec::quote(&dir.to_string_lossy()),
                restore_engine_env("\"$d\"")
            ))
            .env("DOCKER_HOST", "unix:///run/other.sock")
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "unix:///run/other.sock"
        );
    }

    #[test]
    fn the_engine_environment_scripts_pass_shellcheck() {
        crate::exec::shellcheck::assert_passes(
            &format!(
                "d=/w\n{}{}",
                record_engine_env("/w/r 1", &[]),
                restore_engine_env("\"$d\"")
            ),
            "SC2016",
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

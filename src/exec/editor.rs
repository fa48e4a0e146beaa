//! The user's editor in the foreground, on the terminal the caller gave up (the TUI's `E`,
//! TUI-18). Only `exec/` spawns processes, so the call lives here. The editor is run as git
//! runs `$EDITOR`, through `sh -c`, so a value with arguments (`code --wait`) works; the
//! file's path is an argument, never part of the script. The script `exec`s the editor,
//! so the process waited for, and signalled, is the editor itself (a value that is a
//! compound shell command, `a; b`, runs its first part only).
//!
//! TUI-68: when the caller must end while the editor runs (a SIGTERM or SIGHUP from
//! outside), the editor gets SIGTERM, then SIGKILL when it has not exited within the grace.

use std::future::Future;
use std::path::Path;
use std::time::Duration;

/// How an editor's run ended.
#[derive(Debug)]
pub enum EditorEnd {
    /// The editor exited by itself, with this status.
    Exited(std::process::ExitStatus),
    /// The caller had to stop it (the reason `stop` gave): it was sent SIGTERM, and
    /// SIGKILL after the grace.
    Stopped(&'static str),
}

#[allow(
    clippy::disallowed_methods,
    reason = "exec/ is where processes are spawned"
)]
fn command(editor: &str, path: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(format!("exec {editor} \"$@\""))
        .arg(editor)
        .arg(path);
    command
}

/// Runs `editor` on `path` with the terminal inherited and waits for it to end.
///
/// # Errors
///
/// When `sh` cannot be started; the editor's own failure is its exit status.
pub async fn run_editor(editor: &str, path: &Path) -> std::io::Result<std::process::ExitStatus> {
    command(editor, path).status().await
}

/// Runs `editor` on `path` with the terminal inherited until it exits, or until `stop`
/// gives a reason: then the editor is sent SIGTERM, and SIGKILL when it has not exited
/// `grace` later (TUI-68).
///
/// # Errors
///
/// When `sh` cannot be started or waited for.
pub async fn run_editor_until(
    editor: &str,
    path: &Path,
    stop: impl Future<Output = &'static str>,
    grace: Duration,
) -> std::io::Result<EditorEnd> {
    let mut child = command(editor, path).spawn()?;
    tokio::select! {
        status = child.wait() => Ok(EditorEnd::Exited(status?)),
        reason = stop => {
            if let Some(pid) = child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .and_then(rustix::process::Pid::from_raw)
            {
                // Already gone is fine: the wait below reaps it.
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
            if tokio::time::timeout(grace, child.wait()).await.is_err() {
                tracing::warn!("the editor did not exit {grace:?} after SIGTERM: SIGKILL");
                child.kill().await?;
            }
            Ok(EditorEnd::Stopped(reason))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(dir: &Path, body: &str) -> String {
        let path = dir.join("editor.sh");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        path.to_string_lossy().into_owned()
    }

    #[tokio::test]
    async fn an_editor_that_exits_gives_its_status_and_the_path_as_its_argument() {
        let dir = tempfile::tempdir().unwrap();
        let editor = script(dir.path(), "echo edited > \"$1\"; exit 3");
        let file = dir.path().join("file with space.toml");
        let end = run_editor_until(
            &editor,
            &file,
            std::future::pending(),
            Duration::from_secs(2),
        )
        .await
        .unwrap();
        assert!(
            matches!(end, EditorEnd::Exited(s) if s.code() == Some(3)),
            "{end:?}"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "edited\n");
    }

    /// Waits (bounded) until `marker` exists: the editor has started.
    async fn started(marker: &Path) {
        tokio::time::timeout(Duration::from_secs(60), async {
            while !marker.exists() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the editor did not start within 60 s");
    }

    /// Runs `editor` (which touches `marker` once started) on a file of `dir`; once it
    /// started, asks it to stop as `signal` with `grace`: its end, and how long after
    /// the ask it came.
    async fn stopped_once_started(
        dir: &Path,
        editor: String,
        marker: &Path,
        (signal, grace): (&'static str, Duration),
    ) -> (EditorEnd, Duration) {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let file = dir.join("f");
        let run = tokio::spawn(async move {
            run_editor_until(
                &editor,
                &file,
                async { rx.await.map_or("dropped", |()| signal) },
                grace,
            )
            .await
        });
        started(marker).await;
        let asked = std::time::Instant::now();
        tx.send(()).unwrap();
        let end = tokio::time::timeout(Duration::from_secs(60), run)
            .await
            .expect("the stop ended the editor within 60 s")
            .unwrap()
            .unwrap();
        (end, asked.elapsed())
    }

    #[tokio::test]
    async fn a_stop_sends_sigterm_then_sigkill_to_an_editor_that_ignores_it() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("started");
        // Obeys SIGTERM: ends at once, the grace long.
        let polite = script(
            dir.path(),
            &format!("touch '{}'; exec sleep 600", marker.display()),
        );
        let (end, _) = stopped_once_started(
            dir.path(),
            polite,
            &marker,
            ("SIGTERM", Duration::from_secs(600)),
        )
        .await;
        assert!(matches!(end, EditorEnd::Stopped("SIGTERM")), "{end:?}");

        // Ignores SIGTERM: killed after the grace.
        std::fs::remove_file(&marker).unwrap();
        let stubborn = script(
            dir.path(),
            &format!(
                "trap '' TERM; touch '{}'; while :; do sleep 1; done",
                marker.display()
            ),
        );
        let (end, waited) = stopped_once_started(
            dir.path(),
            stubborn,
            &marker,
            ("SIGHUP", Duration::from_millis(200)),
        )
        .await;
        assert!(matches!(end, EditorEnd::Stopped("SIGHUP")), "{end:?}");
        assert!(
            waited >= Duration::from_millis(200),
            "the grace was not waited: SIGTERM was not ignored"
        );
    }
}

//! The user's editor in the foreground, on the terminal the caller gave up (the TUI's `E`,
//! TUI-18). Only `exec/` spawns processes, so the call lives here. The editor is run as git
//! runs `$EDITOR`, through `sh -c`, so a value with arguments (`code --wait`) works; the
//! file's path is an argument, never part of the script.

use std::path::Path;

/// Runs `editor` on `path` with the terminal inherited and waits for it to end.
///
/// # Errors
///
/// When `sh` cannot be started; the editor's own failure is its exit status.
#[allow(
    clippy::disallowed_methods,
    reason = "exec/ is where processes are spawned"
)]
pub async fn run_editor(editor: &str, path: &Path) -> std::io::Result<std::process::ExitStatus> {
    tokio::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$@\""))
        .arg(editor)
        .arg(path)
        .status()
        .await
}

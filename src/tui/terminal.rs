//! The terminal: raw mode and the alternate screen on entry, restored on every way out —
//! a normal quit, an error, a panic (the hook restores before the message prints), and
//! around Ctrl-Z, which suspends the process and redraws on resume (TUI-65..).

use std::io::{Stdout, stdout};

use crossterm::cursor::{Hide, Show};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

/// The TUI's terminal.
pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// Puts the terminal back as the shell had it; harmless when already restored.
pub fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(stdout(), LeaveAlternateScreen, Show);
}

fn raw() -> std::io::Result<()> {
    enable_raw_mode()?;
    execute!(stdout(), EnterAlternateScreen, Hide)
}

/// Enters raw mode and the alternate screen, with a panic hook that restores them first.
///
/// # Errors
///
/// When the terminal cannot be set up (it is restored again).
pub fn enter() -> std::io::Result<Term> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
    if let Err(error) = raw() {
        restore();
        return Err(error);
    }
    Terminal::new(CrosstermBackend::new(stdout()))
}

/// Ctrl-Z: restores the terminal, stops the process as the shell's job control expects,
/// and once continued sets the terminal up again and clears it for a full redraw.
///
/// # Errors
///
/// When the terminal cannot be set up again.
pub fn suspend(terminal: &mut Term) -> std::io::Result<()> {
    restore();
    // Stops this process; `kill` returns once the shell continues it (`fg`).
    let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::TSTP);
    raw()?;
    terminal.clear()
}

/// `E` (TUI-18): hands the terminal to the user's `editor` on `path`
/// ([`crate::exec::run_editor_until`]), then takes it back and clears it for a full
/// redraw. The caller stops reading keys first, so the editor gets them all. A SIGTERM or
/// SIGHUP meanwhile ends the editor (SIGTERM, SIGKILL after `grace`, TUI-68).
///
/// # Errors
///
/// When the terminal cannot be set up again; the editor's own failure is its status.
pub async fn hand_over(
    terminal: &mut Term,
    editor: &str,
    path: &std::path::Path,
    signals: &mut super::signals::Signals,
    grace: std::time::Duration,
) -> std::io::Result<std::io::Result<crate::exec::EditorEnd>> {
    restore();
    let end = crate::exec::run_editor_until(editor, path, signals.next_ending(), grace).await;
    raw()?;
    terminal.clear()?;
    Ok(end)
}

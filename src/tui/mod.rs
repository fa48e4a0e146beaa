//! `overbrainer tui` (spec/tui.md): the project in six views over one terminal.
//!
//! - [`app`](mod@app): the state and every decision, pure (keys and flow events in, [`app::Work`]
//!   out), drawn from `&self`;
//! - [`views`]: one file per view; [`components`]: dialog, help, footer, chart;
//! - [`flows`]: the flows as spawned tasks through the command line's library calls;
//!   [`dataset_delete`]: the Dataset view's deletion, then `split` again; [`dataset_edit`]:
//!   its `e` and `E` edits through the user's editor;
//!   [`config_write`]: the Project view's writes of `overbrainer.toml` and its re-reads;
//!   [`stages`]: the dataset stages, `run` and auto mode as the TUI starts them;
//! - [`event`]: what flows send back; [`action`]: what keys ask for;
//! - [`terminal`]: raw mode, the panic hook, Ctrl-Z; [`theme`]: colours and `NO_COLOR`.
//!
//! [`run`] is the one `tokio::select!` loop over terminal events, the flows' channel, the
//! captured log lines and a redraw tick; it never awaits the network or the disk.

pub mod action;
pub mod app;
pub mod components;
pub mod config_write;
pub mod dataset_delete;
pub mod dataset_edit;
pub mod event;
pub mod flows;
pub mod motion;
pub mod signals;
pub mod stages;
pub mod start_confirm;
pub mod terminal;
pub mod theme;
pub mod views;
pub mod wizard;

#[cfg(test)]
mod screen_tests;
#[cfg(test)]
mod tests;

use std::time::Duration;

use crossterm::event::{Event, EventStream, KeyCode, KeyEventKind, KeyModifiers};
use futures_util::StreamExt as _;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tracing::Level;

use crate::exec::EditorEnd;
use app::{App, Work};
use flows::{FlowContext, Flows, Hooks};
use theme::Theme;
use views::project::ProjectView;
use views::training::TrainingView;

/// Redraw tick while work runs; a message expires after 40 ticks (10 s).
const TICK: Duration = Duration::from_millis(250);
const MESSAGE_TICKS: u32 = 40;
/// The shortest time between two redraws for what flows send (keys redraw at once).
const FRAME: Duration = Duration::from_millis(100);
/// How often `overbrainer.toml` and `.env` are compared with what is shown (TUI-20).
const REREAD: Duration = Duration::from_secs(2);

/// How the TUI ended.
#[derive(Debug, Default)]
pub struct Exit {
    /// Runs detached on quit; their jobs go on (`train attach` follows them again).
    pub detached: Vec<String>,
}

/// Why the TUI stopped.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// The terminal could not be set up, read or drawn.
    #[error("terminal")]
    Terminal(#[from] std::io::Error),
}

/// The start confirmation's lines from `settings`.
///
/// # Errors
///
/// Why `t` is refused: no `[training]`.
pub fn start_lines(settings: &crate::config::Settings) -> Result<Vec<String>, String> {
    let training = settings
        .training
        .as_ref()
        .ok_or_else(|| "no `[training]` in overbrainer.toml: add it to train".to_owned())?;
    Ok(vec![
        format!("target  {}", training.target),
        format!("model   {}", training.base_model),
        "data    data/train.jsonl, data/eval.jsonl".to_owned(),
    ])
}

/// The app of a project whose configuration lists `entries`.
#[must_use]
pub fn app(
    theme: Theme,
    entries: Vec<crate::config::Entry>,
    start: Result<Vec<String>, String>,
) -> App {
    App::new(
        theme,
        ProjectView::new(theme, entries),
        TrainingView::new(theme, start),
    )
}

/// Runs the TUI on `context` until quit; followed runs are detached, never cancelled.
///
/// # Errors
///
/// [`TuiError::Terminal`] when the terminal fails (it is restored all the same).
pub async fn run(
    mut app: App,
    context: FlowContext,
    hooks: Hooks,
    logs: Option<UnboundedReceiver<(Level, String)>>,
) -> Result<Exit, TuiError> {
    let mut signals = signals::Signals::new()?;
    let mut terminal = terminal::enter()?;
    let result = event_loop(&mut app, &mut terminal, &mut signals, context, hooks, logs).await;
    terminal::restore();
    result?;
    Ok(Exit {
        detached: std::mem::take(&mut app.detached),
    })
}

#[allow(
    clippy::too_many_lines,
    reason = "one select over every source of events: keys, signals, flows, logs, ticks"
)]
async fn event_loop(
    app: &mut App,
    terminal: &mut terminal::Term,
    signals: &mut signals::Signals,
    context: FlowContext,
    hooks: Hooks,
    logs: Option<UnboundedReceiver<(Level, String)>>,
) -> Result<(), TuiError> {
    let (sender, mut flow_events) = unbounded_channel();
    let flows = Flows::new(context, hooks, sender);
    let spawn = |work: Vec<Work>| work.into_iter().for_each(|w| flows.spawn(w));
    spawn(vec![Work::ReadRuns]);
    // Without captured logs, a channel that never yields (its sender kept alive here).
    let (_keep, mut logs) = if let Some(logs) = logs {
        (None, logs)
    } else {
        let (sender, receiver) = unbounded_channel();
        (Some(sender), receiver)
    };
    let mut keys = EventStream::new();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut reread = tokio::time::interval(REREAD);
    reread.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut message_ticks = 0;
    // Keys draw at once; what flows send is drawn at most once per FRAME (a fast run sends
    // many steps a second), the tick drawing what is left.
    let mut dirty = true;
    let mut pending = false;
    let mut drawn = std::time::Instant::now();
    let mut next_frame = tokio::time::Instant::now();
    loop {
        if dirty || (pending && drawn.elapsed() >= FRAME) {
            terminal.draw(|frame| app.render(frame))?;
            drawn = std::time::Instant::now();
            dirty = false;
            pending = false;
        }
        if app.done() {
            return Ok(());
        }
        let before = app.message().cloned();
        // The animation's next frame: one tick after it starts, then every tick, however
        // often other events come (TUI-72).
        let animating = app.animating();
        if !animating {
            next_frame = tokio::time::Instant::now() + motion::ANIMATION_TICK;
        }
        tokio::select! {
            key = keys.next() => match key {
                Some(Ok(Event::Key(key))) if key.kind != KeyEventKind::Release => {
                    if key.code == KeyCode::Char('z') && key.modifiers.contains(KeyModifiers::CONTROL) {
                        terminal::suspend(terminal)?;
                    } else {
                        let (edit, work): (Vec<Work>, Vec<Work>) = app
                            .handle_key(key)
                            .into_iter()
                            .partition(|w| matches!(w, Work::EditFile | Work::EditData(_)));
                        spawn(work);
                        // Keys are read only while `keys` is polled, and it is not while
                        // the editor runs: the editor gets every key.
                        for edit in edit {
                            let handed = (&mut *terminal, &mut *signals);
                            spawn(match edit {
                                Work::EditData(data) => edit_data(app, handed, &flows, data).await?,
                                _ => edit_file(app, handed, &flows).await?,
                            });
                            signals.forget_interrupts();
                        }
                    }
                    dirty = true;
                }
                Some(Ok(Event::Resize(..))) => dirty = true,
                Some(Ok(_)) => {}
                Some(Err(error)) => return Err(error.into()),
                // The terminal is gone: detach like a confirmed quit (TUI-69).
                None => spawn(app.apply(action::Action::QuitNow)),
            },
            // TUI-68: like a confirmed quit, no question.
            name = signals.next() => {
                tracing::info!("{name} received: quitting");
                spawn(app.apply(action::Action::QuitNow));
                dirty = true;
            }
            Some(event) = flow_events.recv() => {
                spawn(app.on_flow(event));
                pending = true;
            }
            Some((level, text)) = logs.recv() => {
                app.log(level, text);
                pending |= app.tab() == 4;
            }
            _ = reread.tick() => spawn(app.every_two_seconds()),
            // TUI-72: only while a bar eases or something fades.
            () = tokio::time::sleep_until(next_frame), if animating => {
                app.animate();
                next_frame = tokio::time::Instant::now() + motion::ANIMATION_TICK;
                dirty = true;
            }
            _ = tick.tick() => {
                dirty = app.busy() || pending;
                if app.busy() {
                    app.advance_spinner();
                }
                if app.message().is_some() {
                    message_ticks += 1;
                    if message_ticks >= MESSAGE_TICKS {
                        app.expire_message();
                        dirty = true;
                    }
                }
            }
        }
        if app.message() != before.as_ref() {
            message_ticks = 0;
        }
    }
}

/// The terminal and the signals, handed to the editor's run.
type Handed<'a> = (&'a mut terminal::Term, &'a mut signals::Signals);

/// TUI-68: a SIGTERM or SIGHUP ended the editor; the TUI quits like a confirmed `q`.
fn quit_on(app: &mut App, signal: &str) -> Vec<Work> {
    tracing::info!("{signal} received while the editor ran: the editor was ended, quitting");
    app.apply(action::Action::QuitNow)
}

/// `E` (TUI-18): the file in the user's editor, then read again; the result goes to the
/// Project view as a change on disk would.
async fn edit_file(
    app: &mut App,
    (terminal, signals): Handed<'_>,
    flows: &Flows,
) -> Result<Vec<Work>, TuiError> {
    let config = flows.config();
    let (editor, path) = config.editor();
    config.set_editing(true);
    let grace = flows.editor_grace();
    let status = terminal::hand_over(terminal, &editor, &path, signals, grace).await;
    let news = config.after_editor();
    let status = status?;
    let failed = match &status {
        Ok(EditorEnd::Exited(status)) if status.success() => None,
        Ok(EditorEnd::Exited(status)) => Some(editor_failed(&editor, *status)),
        Ok(EditorEnd::Stopped(signal)) => return Ok(quit_on(app, signal)),
        Err(error) => Some(format!("the editor `{editor}` did not start: {error}")),
    };
    Ok(match (news, failed) {
        (Some(news), _) => app.on_flow(event::FlowEvent::Config(news)),
        (None, failed) => app.on_flow(event::FlowEvent::Said {
            ok: failed.is_none(),
            text: failed.map_or_else(
                || "overbrainer.toml unchanged".to_owned(),
                |why| format!("{why}; overbrainer.toml unchanged"),
            ),
        }),
    })
}

/// Whether the shell that runs the editor could not find it (127) or run it (126).
fn not_started(status: std::process::ExitStatus) -> bool {
    matches!(status.code(), Some(126 | 127))
}

/// Why the editor `editor` failed with `status`, saying what to do when it was never
/// started.
fn editor_failed(editor: &str, status: std::process::ExitStatus) -> String {
    match status.code() {
        Some(127) => format!(
            "the editor `{editor}` was not found: set `VISUAL` or `EDITOR` to an editor on `PATH`"
        ),
        Some(126) => format!(
            "the editor `{editor}` cannot be run: set `VISUAL` or `EDITOR` to an editor on `PATH`"
        ),
        _ => format!("the editor `{editor}` ended with {status}"),
    }
}

/// `e` or `E` in the Dataset view (TUI-32): the text in a file under `data/` in the user's
/// editor, then applied on the blocking pool.
async fn edit_data(
    app: &mut App,
    (terminal, signals): Handed<'_>,
    flows: &Flows,
    edit: dataset_edit::DataEdit,
) -> Result<Vec<Work>, TuiError> {
    let config = flows.config();
    let (editor, _) = config.editor();
    let data = config.get().project.data_dir();
    let path = match dataset_edit::prepare(&data, &edit) {
        Ok(path) => path,
        Err(error) => {
            return Ok(app.on_flow(event::FlowEvent::Said {
                ok: false,
                text: format!(
                    "cannot write the file to edit under `{}`: {error}",
                    data.display()
                ),
            }));
        }
    };
    match terminal::hand_over(terminal, &editor, &path, signals, flows.editor_grace()).await? {
        Ok(EditorEnd::Exited(status)) if status.success() => {
            Ok(app.data_write(Work::ApplyDataEdit { edit, path }))
        }
        Ok(EditorEnd::Stopped(signal)) => Ok(quit_on(app, signal)),
        Ok(EditorEnd::Exited(status)) if not_started(status) => {
            // Nothing was typed: the file goes.
            let _ = std::fs::remove_file(&path);
            Ok(app.on_flow(event::FlowEvent::Said {
                ok: false,
                text: format!("{}; nothing changed", editor_failed(&editor, status)),
            }))
        }
        Ok(EditorEnd::Exited(status)) => Ok(app.on_flow(event::FlowEvent::Said {
            ok: false,
            text: format!(
                "{}; nothing changed; your text is in `{}`",
                editor_failed(&editor, status),
                path.display()
            ),
        })),
        Err(error) => Ok(app.on_flow(event::FlowEvent::Said {
            ok: false,
            text: format!("the editor `{editor}` did not start: {error}"),
        })),
    }
}

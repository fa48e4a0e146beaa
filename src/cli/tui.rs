//! `overbrainer tui`: the terminal UI (spec/tui.md). Refuses without a terminal on stdout
//! (TUI-1); where there is no `overbrainer.toml` runs the init wizard first (TUI-73); holds
//! the project lock while it runs, feeds the Prometheus endpoint from the runs it follows
//! (MET-3), and on quit names each detached run with its attach hint.

use std::collections::HashMap;
use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use super::Context;
use crate::tui::flows::{FlowContext, Hooks, Observed};

/// Arguments of `tui`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `tui`.
///
/// # Errors
///
/// Without a terminal on stdout, without a project or with an invalid configuration, when
/// the project lock is held, or when the terminal fails.
pub async fn run(ctx: &Context, _args: &Args) -> anyhow::Result<ExitCode> {
    if !std::io::stdout().is_terminal() {
        anyhow::bail!(
            "`overbrainer tui` needs a terminal on stdout; use the other commands in scripts"
        );
    }
    let mut auto = false;
    if ctx.dir.is_dir() && !ctx.dir.join(crate::config::FILE_NAME).exists() {
        match init_wizard(ctx).await? {
            Some(start_auto) => auto = start_auto,
            None => return Ok(ExitCode::SUCCESS),
        }
    }
    let (project, _) = ctx.load()?;
    let _lock = project.lock()?;
    // The text shown is the text loaded: later writes are checked against it (TUI-16).
    let file = project.root().join(crate::config::FILE_NAME);
    let text = std::fs::read_to_string(&file)
        .map_err(|error| anyhow::anyhow!("cannot read `{}`: {error}", file.display()))?;
    let dotenv = crate::tui::config_write::read_dotenv(project.root());
    let loaded = crate::config::load_text(project.root(), &text, &ctx.env, crate::check::RULES)?;
    for warning in &loaded.warnings {
        tracing::warn!("{warning}");
    }
    // TUI-70, TUI-71: an unknown `OVERBRAINER_TUI_*` value is ignored with a warning in
    // the Logs view.
    let (theme, theme_warnings) = crate::tui::theme::Theme::from_env(&ctx.env);
    for warning in theme_warnings {
        tracing::warn!("{warning}");
    }
    let mut app = crate::tui::app(
        theme,
        crate::config::entries(&loaded),
        crate::tui::start_lines(&loaded.settings),
    );
    if auto {
        // TUI-77: the TUI opens on auto mode's confirmation.
        app.apply(crate::tui::action::Action::AskAuto);
    }
    let followers: Mutex<HashMap<u64, Option<crate::metrics::Follower>>> = Mutex::default();
    let observe = move |observed: Observed<'_>| {
        let Ok(mut followers) = followers.lock() else {
            return;
        };
        match observed {
            Observed::Began(task) => {
                followers.insert(task, super::metrics::follower());
            }
            Observed::Event(task, event) => {
                if let Some(follower) = followers.get(&task) {
                    super::metrics::run_event(*follower, event);
                }
            }
            Observed::Ended(task) => {
                if let Some(follower) = followers.remove(&task) {
                    super::metrics::unfollow(follower);
                }
            }
        }
    };
    let hooks = Hooks {
        warning_text: super::follow::warning_text,
        observe: Arc::new(observe),
    };
    let context = FlowContext {
        project: project.clone(),
        settings: loaded.settings,
        provenance: loaded.provenance,
        env: loaded.env,
        process_env: ctx.env.clone(),
        text,
        dotenv,
    };
    let exit = crate::tui::run(app, context, hooks, crate::logging::take_captured()).await?;
    for id in &exit.detached {
        errln!(
            "tui: detached from run {id}; the job goes on. Follow it again with:\n  overbrainer train attach {id}"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The init wizard (TUI-73..TUI-77) in `ctx.dir`: `Some(auto)` once the files are written
/// (`auto`: open on auto mode's confirmation), `None` when quit with nothing written.
///
/// # Errors
///
/// When a file the wizard would write exists already (named; before the first screen), or
/// the terminal fails.
async fn init_wizard(ctx: &Context) -> anyhow::Result<Option<bool>> {
    let wizard = crate::tui::wizard::Wizard::new(
        &ctx.dir,
        ctx.env.clone(),
        crate::check::RULES,
        crate::pipeline::templates::Template::init_files().to_vec(),
    );
    if let Some(why) = wizard.refusal() {
        anyhow::bail!(
            "the init wizard did not start: {why} (move it away, or write `overbrainer.toml` yourself)"
        );
    }
    let (wizard, outcome) = crate::tui::wizard::run(wizard).await?;
    match outcome {
        crate::tui::wizard::Outcome::Quit => {
            anyhow::bail!("the init wizard was quit; nothing was written")
        }
        crate::tui::wizard::Outcome::Leave => {
            errln!(
                "tui: the init wizard wrote {} in `{}`; `overbrainer -C {} tui` opens it",
                wizard.written.join(", "),
                wizard.dir().display(),
                crate::shell::quote(&wizard.dir().display().to_string())
            );
            Ok(None)
        }
        crate::tui::wizard::Outcome::Open { auto } => {
            errln!(
                "tui: the init wizard wrote {} in `{}`",
                wizard.written.join(", "),
                wizard.dir().display()
            );
            Ok(Some(auto))
        }
    }
}

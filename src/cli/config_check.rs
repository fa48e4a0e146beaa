//! `overbrainer config check [--resolve]`: print every effective setting with its source,
//! secrets masked (CHK-1..CHK-6), a blank line between sections; the checks are
//! [`crate::check`]'s. Never takes the project lock; without `--resolve` it makes no
//! network request.

use std::process::ExitCode;

use super::Context;
use crate::check::Checked;
use crate::config::Source;

/// Arguments of `config check`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Also resolve every configured secret (Vault references included); fails on the first
    /// one that cannot be resolved.
    #[arg(long)]
    pub resolve: bool,
}

/// Loads, validates and prints the configuration.
///
/// # Errors
///
/// When there is no project, the configuration is invalid (every problem listed), eval
/// settings lack eval data, or with `--resolve` a secret cannot be resolved.
pub async fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let (project, loaded) = ctx.load()?;
    let readiness =
        crate::config::readiness_warnings(&loaded.settings.targets, &loaded.settings.runpod);
    let hint = crate::runs::start::base_model_hint(&project, &loaded.settings);
    for warning in loaded.warnings.iter().chain(&readiness).chain(&hint) {
        tracing::warn!("{warning}");
    }
    if let Some(address) = crate::metrics::listen_address(&loaded.settings)
        .filter(|address| crate::metrics::is_exposed(*address))
    {
        tracing::warn!(
            "`metrics.listen` is `{address}`, not a loopback address: the metrics endpoint has no authentication and other machines can read it"
        );
    }
    let checked = crate::check::check(&project, &loaded, args.resolve).await?;
    let mut section = None;
    for line in &checked {
        let top = line.entry.key.split('.').next().unwrap_or_default();
        if section.is_some_and(|s| s != top) {
            outln!();
        }
        outln!("{}", text(line));
        section = Some(top);
    }
    Ok(ExitCode::SUCCESS)
}

/// `key = value  (origin, notes)`.
fn text(line: &Checked) -> String {
    let entry = &line.entry;
    let mut note = if line.resolved {
        ", resolved".to_owned()
    } else {
        String::new()
    };
    if let Some(rule) = &line.rule {
        note = format!("{note}; {rule}");
    }
    // POD-49: a grow of the network volume is permanent.
    if crate::config::is_max_volume_gb(&entry.key) {
        note = format!("{note}; {}", crate::config::MAX_VOLUME_GB_NOTE);
    }
    // CFG-8: a key the target's runtime ignores says so instead of a plain default.
    let origin = match (&entry.ignored, &entry.source) {
        (Some(ignored), Source::Default) => ignored.clone(),
        (Some(ignored), source) => format!("{source}, {ignored}"),
        (None, source) => source.to_string(),
    };
    format!("{} = {}  ({origin}{note})", entry.key, entry.value)
}

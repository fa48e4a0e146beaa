//! The start confirmation's read of a Runpod target (TUI-43, POD-17): one catalog read
//! scoped to the target's `gpu_count` and the VRAM estimate, turned into a
//! [`Preview`] (pure, [`crate::runpod::catalog::preview`]). Nothing is created.

use crate::config::{EnvSnapshot, Settings, Target};
use crate::runpod::catalog::preview::Preview;

/// The preview of a start on `target` (a Runpod target of `settings`), or why it could
/// not be read: the key missing or refused, the catalog unreadable (redacted).
///
/// # Errors
/// A sentence naming the target and what failed.
pub async fn read(settings: &Settings, env: &EnvSnapshot, target: &str) -> Result<Preview, String> {
    let Some(Target::Runpod(runpod)) = settings.targets.get(target) else {
        return Err(format!("target `{target}` is not a Runpod target"));
    };
    let client = super::client(settings, env)
        .await
        .map_err(|e| format!("target `{target}`: {e}"))?;
    let gpus = client
        .gpu_catalog(runpod.gpu_count)
        .await
        .map_err(|e| format!("target `{target}`: the Runpod GPU catalog could not be read: {e}"))?;
    let estimate = super::choose::estimate(settings, env).await;
    Ok(Preview::build(runpod, &gpus, estimate))
}

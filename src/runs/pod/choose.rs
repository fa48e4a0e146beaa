//! `"auto"` of a Runpod target, resolved from one catalog read right before the run's
//! first create call (POD-12..POD-16): the GPU types to try with their data centers
//! (`gpu_types = "auto"`), or the data centers of the listed types (`data_center_ids =
//! "auto"`). Nothing in stock that fits fails the run before any pod or file exists,
//! naming the request. The choice is shown before any pod is made.

use std::time::Duration;

use crate::config::{EnvSnapshot, ListOrAuto, RunpodTarget, Settings};
use crate::runpod::api::RunpodClient;
use crate::runpod::body::Chosen;
use crate::runpod::catalog::auto::{
    AutoError, AutoState, Floor, Placement, Request, Walk, auto_data_centers, describe,
};
use crate::runpod::catalog::shape;
use crate::runpod::catalog::vram::{Load, estimate_gb};
use crate::runpod::lifecycle::Notice;
use crate::runs::{Events, Refusal, RunError, RunEvent, RunWarning, emit};

/// How long one Hub call of the VRAM estimate may take.
const HUB_TIMEOUT: Duration = Duration::from_secs(30);

/// The VRAM estimate of the run in GB (POD-18), or why there is none (POD-19): the base
/// model's shape from its directory on this machine, else from the Hub.
pub(super) async fn estimate(settings: &Settings, env: &EnvSnapshot) -> Result<f64, String> {
    let Some(training) = settings.training.as_ref() else {
        return Err("there is no `[training]`".to_owned());
    };
    let load = Load::of(training).map_err(|e| e.to_string())?;
    let base = std::path::Path::new(&training.base_model);
    let shape = if base.is_dir() {
        shape::local(base)?
    } else {
        let token = match &settings.hf_token {
            None => None,
            Some(reference) => Some(
                crate::secrets::Resolver::new(env)
                    .resolve(crate::hub::TOKEN_VAR, reference)
                    .await
                    .map_err(|e| e.to_string())?,
            ),
        };
        shape::hub(
            settings.hub.endpoint(),
            &training.base_model,
            token.as_ref(),
            HUB_TIMEOUT,
        )
        .await?
    };
    let gb = estimate_gb(shape, &load);
    tracing::info!(gb, ?shape, "VRAM estimate");
    Ok(gb)
}

/// What `"auto"` resolved to: the body's choice and the driver's walk.
#[derive(Debug, Default)]
pub(super) struct Choice {
    /// For the create body; `None` without `"auto"`.
    pub chosen: Option<Chosen>,
    /// For the driver (`gpu_types = "auto"` only).
    pub auto: Option<AutoState>,
}

/// Resolves the `"auto"` values of `target` (named `name`), or does nothing.
///
/// # Errors
/// [`Refusal::AutoChoice`] when the catalog cannot be read or nothing fits (POD-16).
pub(super) async fn resolve(
    client: &RunpodClient,
    (name, target): (&str, &RunpodTarget),
    (settings, env, known): (&Settings, &EnvSnapshot, Option<f64>),
    events: &Events,
) -> Result<Choice, RunError> {
    let gpu_auto = matches!(target.gpu_types, ListOrAuto::Auto(_));
    let placement = match &target.data_center_ids {
        None => Placement::Any,
        Some(ListOrAuto::List(ids)) => Placement::Listed(ids.clone()),
        Some(ListOrAuto::Auto(_)) => Placement::Auto,
    };
    if !gpu_auto && placement != Placement::Auto {
        return Ok(Choice::default());
    }
    let refused = |reason: String| -> RunError {
        Refusal::AutoChoice {
            target: name.to_owned(),
            reason,
        }
        .into()
    };
    let gpus = client
        .gpu_catalog(target.gpu_count)
        .await
        .map_err(|e| refused(format!("the Runpod GPU catalog could not be read: {e}")))?;
    let ListOrAuto::List(listed) = &target.gpu_types else {
        let floor = match target.min_vram_gb {
            Some(gb) => Floor::Set(gb),
            None => match match known {
                // POD-19: the estimate the TUI's confirmation showed.
                Some(shown) => Ok(shown),
                None => estimate(settings, env).await,
            } {
                Ok(gb) => Floor::Estimate(gb),
                Err(why) => {
                    emit(
                        events,
                        RunEvent::Warning(RunWarning::NoVramFloor {
                            target: name.to_owned(),
                            why,
                        }),
                    );
                    Floor::None
                }
            },
        };
        let request = Request {
            gpu_count: target.gpu_count,
            floor,
            max_price: target.max_price_per_hour,
            placement,
        };
        let walk = Walk::new(request.clone());
        let first = walk.first(&gpus).map_err(|e| refused(e.to_string()))?;
        tracing::info!(order = ?first.iter().map(|c| &c.gpu_type).collect::<Vec<_>>(), "gpu_types = \"auto\": first order");
        emit(
            events,
            RunEvent::Pod(Notice::Picked {
                request: request.describe(),
                choices: first.iter().map(describe).collect(),
            }),
        );
        let chosen = Chosen {
            gpu_types: first.iter().map(|c| c.gpu_type.clone()).collect(),
            data_center_ids: first[0].data_centers.clone(),
        };
        return Ok(Choice {
            chosen: Some(chosen),
            auto: Some(AutoState::new(walk, first)),
        });
    };
    // Listed types, automatic data centers (POD-14): one list for every call.
    let types: Vec<&str> = listed.iter().map(String::as_str).collect();
    let centers = auto_data_centers(&gpus, &types);
    if centers.is_empty() {
        return Err(refused(
            AutoError::NoDataCenter {
                types: types.join(", "),
                gpu_count: target.gpu_count,
            }
            .to_string(),
        ));
    }
    tracing::info!(data_centers = ?centers, "data_center_ids = \"auto\"");
    emit(
        events,
        RunEvent::Pod(Notice::Picked {
            request: format!(
                "`data_center_ids = \"auto\"` for {} with gpu_count = {}",
                types.join(", "),
                target.gpu_count
            ),
            choices: centers.clone(),
        }),
    );
    Ok(Choice {
        chosen: Some(Chosen {
            gpu_types: listed.clone(),
            data_center_ids: centers,
        }),
        auto: None,
    })
}

//! `"auto"` of a Runpod target, resolved from one catalog read right before the run's
//! first create call (POD-12..POD-16): the GPU types to try with their data centers
//! (`gpu_types = "auto"`), or the data centers of the listed types (`data_center_ids =
//! "auto"`). Nothing in stock that fits fails the run before any pod or file exists,
//! naming the request. The choice is shown before any pod is made.

use crate::config::{ListOrAuto, RunpodTarget};
use crate::runpod::api::RunpodClient;
use crate::runpod::body::Chosen;
use crate::runpod::catalog::auto::{
    AutoError, AutoState, Floor, Placement, Request, Walk, auto_data_centers, describe,
};
use crate::runpod::lifecycle::Notice;
use crate::runs::{Events, Refusal, RunError, RunEvent, RunWarning, emit};

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
    name: &str,
    target: &RunpodTarget,
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
        let floor = target.min_vram_gb.map_or(Floor::None, Floor::Set);
        if floor == Floor::None {
            emit(
                events,
                RunEvent::Warning(RunWarning::NoVramFloor {
                    target: name.to_owned(),
                }),
            );
        }
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

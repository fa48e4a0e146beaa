//! The Runpod reads of the TUI's pickers and start confirmation (TUI-21..TUI-23,
//! TUI-27, TUI-28, TUI-43, POD-17): the GPU catalog scoped to a target's `gpu_count`
//! with the VRAM estimate, the data centers, the account's network volumes and pod
//! templates. Nothing is created; what they show is computed by the pure
//! [`crate::runpod::catalog::preview`] and the picker.

use crate::config::{EnvSnapshot, RunpodTarget, Settings, Target};
use crate::runpod::catalog::preview::Preview;
use crate::runpod::catalog::wire::{CatalogGpu, DataCenter, NetworkVolume, Template};

/// What to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listing {
    /// The GPU catalog for the Runpod target of this name, with the estimate.
    Gpus(String),
    /// The data centers.
    DataCenters,
    /// The account's network volumes.
    Volumes,
    /// The account's pod templates.
    Templates,
}

/// What was read.
#[derive(Debug, Clone, PartialEq)]
pub enum Read {
    /// The GPU catalog of a target.
    Gpus(Box<GpuRead>),
    /// The data centers.
    DataCenters(Vec<DataCenter>),
    /// The network volumes.
    Volumes(Vec<NetworkVolume>),
    /// The pod templates.
    Templates(Vec<Template>),
}

/// One read of the GPU catalog for a target.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuRead {
    /// The target's name.
    pub name: String,
    /// The target as configured when read.
    pub target: RunpodTarget,
    /// The catalog for its `gpu_count`.
    pub gpus: Vec<CatalogGpu>,
    /// The VRAM estimate in GB, or why there is none (POD-20's `?`: also for a target
    /// other than `training.target`).
    pub estimate: Result<f64, String>,
}

impl GpuRead {
    /// The start preview of the target, or of `changed` (the target with the
    /// confirmation's picks) when given.
    #[must_use]
    pub fn preview(&self, changed: Option<&RunpodTarget>) -> Preview {
        Preview::build(
            changed.unwrap_or(&self.target),
            &self.gpus,
            self.estimate.clone(),
        )
    }
}

/// Reads `listing` with the account's key.
///
/// # Errors
/// A sentence naming what failed: not a Runpod target, the key missing or refused, the
/// API call (redacted).
pub async fn read(
    settings: &Settings,
    env: &EnvSnapshot,
    listing: Listing,
) -> Result<Read, String> {
    if let Listing::Gpus(name) = &listing
        && !matches!(settings.targets.get(name), Some(Target::Runpod(_)))
    {
        return Err(format!("target `{name}` is not a Runpod target"));
    }
    let client = super::client(settings, env).await.map_err(|e| match e {
        // A read creates nothing: the start's wording ("no pod was created") would
        // mislead here.
        crate::runs::RunError::Refused(super::Refusal::NoRunpodKey { variable }) => {
            super::Refusal::NoRunpodKeyForCatalog { variable }.to_string()
        }
        other => other.to_string(),
    })?;
    let failed = |what: &str, e: crate::runpod::api::ApiError| {
        format!("the Runpod {what} could not be read: {e}")
    };
    Ok(match listing {
        Listing::Gpus(name) => {
            let Some(Target::Runpod(target)) = settings.targets.get(&name) else {
                return Err(format!("target `{name}` is not a Runpod target"));
            };
            let gpus = client
                .gpu_catalog(target.gpu_count)
                .await
                .map_err(|e| failed("GPU catalog", e))?;
            let estimate = match settings.training.as_ref() {
                Some(training) if training.target == name => {
                    super::choose::estimate(settings, env).await
                }
                _ => Err(format!("`{name}` is not `training.target`")),
            };
            Read::Gpus(Box::new(GpuRead {
                name,
                target: target.clone(),
                gpus,
                estimate,
            }))
        }
        Listing::DataCenters => Read::DataCenters(
            client
                .data_centers()
                .await
                .map_err(|e| failed("data centers", e))?,
        ),
        Listing::Volumes => Read::Volumes(
            client
                .network_volumes()
                .await
                .map_err(|e| failed("network volumes", e))?,
        ),
        Listing::Templates => Read::Templates(
            client
                .templates()
                .await
                .map_err(|e| failed("pod templates", e))?,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // A read without the account's key says what it needs and claims nothing about pods.
    #[tokio::test]
    async fn a_read_without_the_key_names_the_variable_and_no_pod() {
        let settings: Settings = toml::from_str(
            "[project]\nname = \"x\"\n\n[targets.gpu]\nkind = \"runpod\"\ngpu_types = \"auto\"\nmax_hours = 2\n",
        )
        .unwrap();
        let env = EnvSnapshot::default();
        for listing in [Listing::Gpus("gpu".into()), Listing::Templates] {
            let why = read(&settings, &env, listing).await.unwrap_err();
            assert_eq!(
                why,
                "`OVERBRAINER_RUNPOD__API_KEY` is not set: the Runpod catalog is read with the account's API key (set it in `.env`)"
            );
        }
    }
}

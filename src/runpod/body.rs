//! The create body of a run's pods (`POST /v2/pods`, wire-facts A.2) from its `runpod`
//! target: the image, one GPU type per call (the driver sets `gpu.id`), Secure Cloud, the
//! data centers, the container disk, the network volume at [`VOLUME_PATH`], port 22, the
//! run marker, the run's client key, the reference to its host-key secret (never the
//! key), the watchdog's bounds (POD-33; the deadline set again at each create call) and
//! the bootstrap as `args` (POD-27).

use std::time::Duration;

use super::api::{
    CreatePod, GpuRequest, Mounts, NetworkMount, host_key_secret, pod_name, secret_reference,
};
use super::keys::RunKeys;
use super::lifecycle::Rules;
use super::{bootstrap, watchdog};
use crate::config::{ListOrAuto, RunpodTarget};

/// The run marker in the pod's environment (POD-24): the run ID.
pub const RUN_ID_VAR: &str = "OVERBRAINER_RUN_ID";
/// The pinned host key, as a reference to the run's account secret (POD-26).
pub const HOST_KEY_VAR: &str = "OVERBRAINER_HOST_KEY";
/// The run's client public key, for the pod's `authorized_keys`.
pub const AUTHORIZED_KEY_VAR: &str = "OVERBRAINER_AUTHORIZED_KEY";

/// A target this issue cannot create pods for yet.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// `"auto"` comes with the next Runpod issue (catalog, VRAM estimate).
    #[error("`{key} = \"auto\"` is not supported yet: list the IDs to try, in order")]
    Auto {
        /// The key.
        key: &'static str,
    },
}

/// Where a network volume is mounted on the pod (spec/runpod.md section 1).
pub const VOLUME_PATH: &str = "/workspace/data";

/// What a run's pods are made from.
#[derive(Debug, Clone, Copy)]
pub struct PodSpec<'a> {
    /// The run's `runpod` target.
    pub target: &'a RunpodTarget,
    /// The run ID.
    pub run_id: &'a str,
    /// The run directory on the pod.
    pub run_dir: &'a str,
    /// The API base the watchdog calls.
    pub api_base: &'a str,
    /// The run's SSH access.
    pub keys: &'a RunKeys,
    /// The pod's rules.
    pub rules: &'a Rules,
    /// Now, on the driver's clock (the first deadline; the driver sets it again).
    pub now: Duration,
}

/// The create body and the GPU types to try, in order.
///
/// # Errors
/// [`BodyError::Auto`] for `gpu_types` or `data_center_ids` set to `"auto"`.
pub fn create_body(spec: &PodSpec<'_>) -> Result<(CreatePod, Vec<String>), BodyError> {
    let target = spec.target;
    let ListOrAuto::List(gpu_types) = &target.gpu_types else {
        return Err(BodyError::Auto { key: "gpu_types" });
    };
    let data_center_ids = match &target.data_center_ids {
        None => Vec::new(),
        Some(ListOrAuto::List(ids)) => ids.clone(),
        Some(ListOrAuto::Auto(_)) => {
            return Err(BodyError::Auto {
                key: "data_center_ids",
            });
        }
    };
    let mut env = watchdog::bounds_env(
        spec.rules,
        spec.now + spec.rules.deadline,
        spec.run_dir,
        spec.api_base,
    );
    env.insert(RUN_ID_VAR.to_owned(), spec.run_id.to_owned());
    env.insert(
        HOST_KEY_VAR.to_owned(),
        secret_reference(&host_key_secret(spec.run_id)),
    );
    env.insert(
        AUTHORIZED_KEY_VAR.to_owned(),
        spec.keys.client_public.clone(),
    );
    let body = CreatePod {
        name: pod_name(spec.run_id),
        image: target.image.clone(),
        gpu: GpuRequest {
            id: gpu_types.first().cloned().unwrap_or_default(),
            count: target.gpu_count,
        },
        cloud: "SECURE".into(),
        data_center_ids,
        disk: target.container_disk_gb,
        env,
        ports: vec!["22/tcp".into()],
        mounts: target.network_volume_id.as_ref().map(|volume| Mounts {
            network: vec![NetworkMount {
                volume_id: volume.clone(),
                path: VOLUME_PATH.into(),
            }],
        }),
        args: Some(bootstrap::args(spec.run_dir, spec.run_id)),
    };
    Ok((body, gpu_types.clone()))
}

#[cfg(test)]
#[path = "body_tests.rs"]
mod tests;

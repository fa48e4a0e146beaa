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

/// A body that cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// `"auto"` not resolved from the catalog first ([`PodSpec::chosen`]).
    #[error("`{key} = \"auto\"` was not resolved from the Runpod catalog before the create body")]
    Auto {
        /// The key.
        key: &'static str,
    },
}

/// What `"auto"` resolved to for a run (POD-12, POD-14): the GPU types to try, in
/// order, and the data centers of the first create call (the driver sets each call's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chosen {
    /// GPU type IDs, in order.
    pub gpu_types: Vec<String>,
    /// `dataCenterIds` of the first create call.
    pub data_center_ids: Vec<String>,
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
    /// What `"auto"` resolved to, for a target with `"auto"` in `gpu_types` or
    /// `data_center_ids`.
    pub chosen: Option<&'a Chosen>,
    /// The run's SSH access.
    pub keys: &'a RunKeys,
    /// The pod's rules.
    pub rules: &'a Rules,
    /// Now, on the driver's clock (the first deadline; the driver sets it again).
    pub now: Duration,
    /// The network volume's size in GB at pod creation, when the API reported it: the
    /// watchdog's disk backstop weighs the volume against it until overbrainer writes
    /// `.pod/volume_gb` (POD-48).
    pub volume_gb: Option<u64>,
}

/// The create body and the GPU types to try, in order.
///
/// # Errors
/// [`BodyError::Auto`] for `gpu_types` or `data_center_ids` set to `"auto"` without
/// [`PodSpec::chosen`].
pub fn create_body(spec: &PodSpec<'_>) -> Result<(CreatePod, Vec<String>), BodyError> {
    let target = spec.target;
    let (gpu_types, data_center_ids) =
        match (spec.chosen, &target.gpu_types, &target.data_center_ids) {
            (Some(chosen), _, _) => (chosen.gpu_types.clone(), chosen.data_center_ids.clone()),
            (None, ListOrAuto::Auto(_), _) => return Err(BodyError::Auto { key: "gpu_types" }),
            (None, _, Some(ListOrAuto::Auto(_))) => {
                return Err(BodyError::Auto {
                    key: "data_center_ids",
                });
            }
            (None, ListOrAuto::List(types), ids) => (
                types.clone(),
                match ids {
                    Some(ListOrAuto::List(ids)) => ids.clone(),
                    _ => Vec::new(),
                },
            ),
        };
    let mut env = watchdog::bounds_env(
        spec.rules,
        spec.now + spec.rules.deadline,
        spec.run_dir,
        spec.api_base,
    );
    if target.network_volume_id.is_some() {
        env.extend(watchdog::volume_env(VOLUME_PATH, spec.volume_gb));
    }
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
        args: Some(bootstrap::args(spec.run_dir, spec.run_id, &target.venv)),
    };
    Ok((body, gpu_types))
}

#[cfg(test)]
#[path = "body_tests.rs"]
mod tests;

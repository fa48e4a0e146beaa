//! The bodies of Runpod REST v2 as its public API document gives them (wire-facts A.2,
//! A.3): the nested create body, the pod, wrapped lists and account secrets, with the
//! pod's view for [`crate::runpod::lifecycle`].

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::exec::PodEndpoint;
use crate::runpod::lifecycle::{PodStatus, PodView};

/// `POST /v2/pods` (`CreatePodRequest`): closed on Runpod's side (an unknown field is a
/// 422), so only documented fields are sent and unset ones are left out.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CreatePod {
    /// Pod name (derived from the run ID, [`pod_name`]).
    pub name: String,
    /// Image reference.
    pub image: String,
    /// One GPU type per call.
    pub gpu: GpuRequest,
    /// `SECURE` (overbrainer creates Secure Cloud pods only).
    pub cloud: String,
    /// Data centers; empty: the scheduler picks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub data_center_ids: Vec<String>,
    /// Container disk in GB.
    pub disk: u32,
    /// Environment; secret values only as `{{ RUNPOD_SECRET_<name> }}` references.
    pub env: BTreeMap<String, String>,
    /// Exposed ports, such as `22/tcp`.
    pub ports: Vec<String>,
    /// A network volume, when the target has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mounts: Option<Mounts>,
    /// The container's command line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<String>,
}

/// `gpu` of a create body.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct GpuRequest {
    /// GPU type ID.
    pub id: String,
    /// GPUs per pod.
    pub count: u32,
}

/// `mounts` of a create body: a network volume (overbrainer never asks for a pod volume).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Mounts {
    /// At most one network volume.
    pub network: Vec<NetworkMount>,
}

/// One network volume and where it is mounted.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct NetworkMount {
    /// Volume ID.
    pub volume_id: String,
    /// Mount path (`/workspace/data`, POD-1).
    pub path: String,
}

/// The name of a run's pod (POD-24): the run ID after a fixed prefix, so that a search
/// by name finds the pods of one run and no other.
#[must_use]
pub fn pod_name(run_id: &str) -> String {
    format!("overbrainer-{run_id}")
}

/// The account secret that holds a run's host private key (POD-26).
#[must_use]
pub fn host_key_secret(run_id: &str) -> String {
    format!("overbrainer_host_key_{run_id}")
}

/// How a pod's environment refers to the account secret `name` (wire-facts A.3):
/// Runpod substitutes it inside the container, the API never shows the value.
#[must_use]
pub fn secret_reference(name: &str) -> String {
    format!("{{{{ RUNPOD_SECRET_{name} }}}}")
}

/// A pod as v2 returns it. Only the fields overbrainer reads are kept; unknown fields
/// are ignored.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Pod {
    /// Pod ID.
    pub id: String,
    /// Name.
    #[serde(default)]
    pub name: String,
    /// `PROVISIONING`, `STARTING`, `RUNNING`, `EXITED`, `ERROR`, `TERMINATED`.
    #[serde(default)]
    pub status: String,
    /// USD per hour (0 when stopped).
    #[serde(default)]
    pub cost: Option<f64>,
    /// The SSH endpoints.
    #[serde(default)]
    pub ssh: Option<PodSsh>,
    /// RFC 3339 creation time.
    #[serde(default)]
    pub created_at: Option<String>,
    /// Its environment as the API shows it (secret references unexpanded).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Its GPU.
    #[serde(default)]
    pub gpu: Option<PodGpu>,
    /// Its data center.
    #[serde(default)]
    pub data_center_id: Option<String>,
}

/// `ssh` of a pod.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct PodSsh {
    /// SSH over the exposed TCP port: `null` until a public port is assigned.
    #[serde(default)]
    pub direct: Option<SshDirect>,
}

/// `ssh.direct`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct SshDirect {
    /// Public IP address.
    pub host: String,
    /// Public port mapped to 22.
    pub port: u16,
}

/// `gpu` of a pod.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct PodGpu {
    /// GPU type ID.
    pub id: String,
    /// Count.
    #[serde(default)]
    pub count: u32,
}

impl Pod {
    /// Its status; an unknown value counts as `STARTING` (alive, not ready: readiness
    /// still needs the endpoint and the pinned host key).
    #[must_use]
    pub fn status(&self) -> PodStatus {
        match self.status.as_str() {
            "PROVISIONING" => PodStatus::Provisioning,
            "RUNNING" => PodStatus::Running,
            "EXITED" => PodStatus::Exited,
            "ERROR" => PodStatus::Error,
            "TERMINATED" => PodStatus::Terminated,
            _ => PodStatus::Starting,
        }
    }

    /// Its creation time as the time since the UNIX epoch.
    #[must_use]
    pub fn created_unix(&self) -> Option<Duration> {
        let stamp: jiff::Timestamp = self.created_at.as_deref()?.parse().ok()?;
        u64::try_from(stamp.as_millisecond())
            .ok()
            .map(Duration::from_millis)
    }

    /// What the lifecycle needs of it, on the UNIX clock.
    #[must_use]
    pub fn view(&self) -> PodView {
        PodView {
            id: self.id.clone(),
            status: self.status(),
            cost_per_hour: self.cost.filter(|c| c.is_finite() && *c > 0.0),
            ssh: self
                .ssh
                .as_ref()
                .and_then(|s| s.direct.as_ref())
                .map(|d| PodEndpoint {
                    host: d.host.clone(),
                    port: d.port,
                }),
            created_at: self.created_unix(),
        }
    }
}

/// `GET /v2/pods`: a wrapped list.
#[derive(Debug, Deserialize)]
pub(super) struct PodList {
    pub pods: Vec<Pod>,
}

/// `POST /v2/account/secrets`.
#[derive(Debug, Serialize)]
pub(super) struct CreateSecret<'a> {
    pub name: &'a str,
    pub value: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<&'a str>,
}

/// An account secret's metadata (its value is write-only).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct Secret {
    /// Secret ID (the path parameter of its delete).
    pub id: String,
    /// Its name.
    pub name: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_create_body_is_nested_and_leaves_unset_fields_out() {
        let body = CreatePod {
            name: pod_name("r_1"),
            image: "img@sha256:00".into(),
            gpu: GpuRequest {
                id: "NVIDIA A40".into(),
                count: 1,
            },
            cloud: "SECURE".into(),
            data_center_ids: Vec::new(),
            disk: 50,
            env: BTreeMap::from([(
                "OVERBRAINER_HOST_KEY".to_owned(),
                secret_reference(&host_key_secret("r_1")),
            )]),
            ports: vec!["22/tcp".into()],
            mounts: None,
            args: Some("bash /boot.sh".into()),
        };
        let json = serde_json::to_value(&body).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "name": "overbrainer-r_1",
                "image": "img@sha256:00",
                "gpu": {"id": "NVIDIA A40", "count": 1},
                "cloud": "SECURE",
                "disk": 50,
                "env": {"OVERBRAINER_HOST_KEY": "{{ RUNPOD_SECRET_overbrainer_host_key_r_1 }}"},
                "ports": ["22/tcp"],
                "args": "bash /boot.sh",
            })
        );
        let volume = CreatePod {
            data_center_ids: vec!["EU-RO-1".into()],
            mounts: Some(Mounts {
                network: vec![NetworkMount {
                    volume_id: "v1".into(),
                    path: "/workspace/data".into(),
                }],
            }),
            ..body
        };
        let json = serde_json::to_value(&volume).unwrap();
        assert_eq!(json["dataCenterIds"], serde_json::json!(["EU-RO-1"]));
        assert_eq!(
            json["mounts"],
            serde_json::json!({"network": [{"volumeId": "v1", "path": "/workspace/data"}]})
        );
    }

    #[test]
    fn a_running_pod_without_ssh_direct_has_no_endpoint() {
        let running: Pod = serde_json::from_str(
            r#"{"id":"p1","name":"overbrainer-r_1","status":"RUNNING","cost":0.74,
                "ssh":{"proxy":{"host":"ssh.runpod.io","port":22},"direct":null},
                "createdAt":"2026-12-01T10:00:00Z","bogus":1}"#,
        )
        .unwrap();
        let view = running.view();
        assert_eq!(view.status, PodStatus::Running);
        assert_eq!(view.ssh, None);
        assert_eq!(view.cost_per_hour, Some(0.74));
        assert_eq!(view.created_at, Some(Duration::from_secs(1_796_119_200)));
        let ready: Pod = serde_json::from_str(
            r#"{"id":"p1","status":"RUNNING","cost":0,
                "ssh":{"direct":{"host":"203.0.113.7","port":40022,"username":"root"}}}"#,
        )
        .unwrap();
        let view = ready.view();
        assert_eq!(
            view.ssh,
            Some(PodEndpoint {
                host: "203.0.113.7".into(),
                port: 40022
            })
        );
        // A rate of 0 is no rate (POD-42).
        assert_eq!(view.cost_per_hour, None);
        let odd: Pod = serde_json::from_str(r#"{"id":"p2","status":"WEIRD"}"#).unwrap();
        assert_eq!(odd.status(), PodStatus::Starting);
    }
}

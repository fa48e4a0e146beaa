//! Runpod: the keys of a `kind = "runpod"` target (spec/runpod.md, POD-1, POD-2) and the
//! env-only account settings (`OVERBRAINER_RUNPOD__*`), with defaults and rules.

use serde::{Deserialize, Serialize};

use super::rules::{Check, url_problem};
use super::ssh_client::SshClient;
use crate::secrets::SecretRef;

/// Default image of Runpod targets (spec/runpod.md, POD-1).
pub const DEFAULT_RUNPOD_IMAGE: &str = "axolotlai/axolotl-cloud-term:0.19.0-py3.12-cu130-2.12.1@sha256:f7b94da82913920a003e28e091d8528f57f76da7360fca87e95faf62fa32a680";

/// A list of IDs, or `"auto"`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum ListOrAuto {
    /// The IDs, tried in order.
    List(Vec<String>),
    /// The string `"auto"` (any other string is refused by validation).
    Auto(String),
}

/// `kind = "runpod"` (spec/runpod.md, POD-1).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RunpodTarget {
    /// Runpod GPU type IDs, or `"auto"`.
    pub gpu_types: ListOrAuto,
    /// Least VRAM per GPU in GB, only with `"auto"`.
    #[serde(default)]
    pub min_vram_gb: Option<u32>,
    /// Highest Secure Cloud list price of one GPU, USD per hour, only with `"auto"`.
    #[serde(default)]
    pub max_price_per_hour: Option<f64>,
    /// Watchdog deadline after pod creation, in hours, 0 < h <= 720.
    pub max_hours: f64,
    /// Spend cap for the pod in USD.
    #[serde(default)]
    pub max_cost_usd: Option<f64>,
    /// GPUs per pod.
    #[serde(default = "default_gpu_count")]
    pub gpu_count: u32,
    /// Image reference.
    #[serde(default = "default_runpod_image")]
    pub image: String,
    /// Absolute path holding `bin/axolotl` on the pod.
    #[serde(default = "default_runpod_venv")]
    pub venv: String,
    /// Container disk in GB, at least 20.
    #[serde(default = "default_container_disk_gb")]
    pub container_disk_gb: u32,
    /// Minutes a pod may take to boot, at least 5.
    #[serde(default = "default_boot_grace_minutes")]
    pub boot_grace_minutes: u32,
    /// Minutes left for retrieval after the job, at least 1.
    #[serde(default = "default_retrieve_grace_minutes")]
    pub retrieve_grace_minutes: u32,
    /// Data centers to use, or `"auto"`; unset is any.
    #[serde(default)]
    pub data_center_ids: Option<ListOrAuto>,
    /// Network volume mounted at `/workspace/data`.
    #[serde(default)]
    pub network_volume_id: Option<String>,
    /// Largest size, in GB, the volume may be grown to when it fills (POD-47); a grow
    /// is permanent ([`MAX_VOLUME_GB_NOTE`]).
    #[serde(default)]
    pub max_volume_gb: Option<u32>,
    /// SSH client.
    #[serde(default)]
    pub ssh_client: SshClient,
}

fn default_gpu_count() -> u32 {
    1
}
fn default_runpod_image() -> String {
    DEFAULT_RUNPOD_IMAGE.to_owned()
}
fn default_runpod_venv() -> String {
    "/workspace/axolotl-venv".to_owned()
}
fn default_container_disk_gb() -> u32 {
    50
}
fn default_boot_grace_minutes() -> u32 {
    30
}
fn default_retrieve_grace_minutes() -> u32 {
    60
}

/// Default Runpod REST API base (spec/config.md, ENV-7).
pub const DEFAULT_RUNPOD_BASE_URL: &str = "https://api.runpod.io/v2";

/// Env-only Runpod account settings.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RunpodAccount {
    /// API key, a literal or a `vault:` reference.
    /// An empty value is unset.
    #[serde(default, deserialize_with = "crate::secrets::optional")]
    pub api_key: Option<SecretRef>,
    /// REST API base URL, default `https://api.runpod.io/v2`.
    #[serde(default)]
    pub base_url: Option<String>,
}

impl RunpodAccount {
    /// The account from the environment alone (`OVERBRAINER_RUNPOD__API_KEY`,
    /// `OVERBRAINER_RUNPOD__BASE_URL`; an empty value is unset), for the catalog commands,
    /// which need no project (POD-5).
    ///
    /// # Errors
    /// A message naming the variable when the key's `vault:` reference is malformed or
    /// the base URL is refused (never the value).
    pub fn from_env(env: &crate::env::EnvSnapshot) -> Result<Self, String> {
        let value = |name: &str| env.get(name).filter(|v| !v.is_empty());
        let api_key = value(RUNPOD_KEY_VAR)
            .map(SecretRef::parse)
            .transpose()
            .map_err(|e| format!("`{RUNPOD_KEY_VAR}`: {e}"))?;
        let base_url = value(RUNPOD_BASE_URL_VAR).map(str::to_owned);
        if let Some(problem) = base_url.as_deref().and_then(|url| url_problem(url, true)) {
            return Err(format!("`{RUNPOD_BASE_URL_VAR}`: {problem}"));
        }
        Ok(Self { api_key, base_url })
    }

    /// The REST API base in effect: `OVERBRAINER_RUNPOD__BASE_URL`, else
    /// [`DEFAULT_RUNPOD_BASE_URL`].
    #[must_use]
    pub fn endpoint(&self) -> &str {
        self.base_url.as_deref().unwrap_or(DEFAULT_RUNPOD_BASE_URL)
    }
}

/// The rules of a Runpod target's keys.
pub(super) fn check(check: &mut Check<'_>, name: &str, runpod: &RunpodTarget) {
    let key = |k: &str| format!("targets.{name}.{k}");
    let auto = match &runpod.gpu_types {
        ListOrAuto::Auto(text) if text == "auto" => true,
        ListOrAuto::Auto(_) => {
            check.fail(
                key("gpu_types"),
                "invalid value: expected a list of GPU type IDs or `\"auto\"`",
            );
            false
        }
        ListOrAuto::List(list) => {
            if list.is_empty() || list.iter().any(|t| t.trim().is_empty()) {
                check.fail(
                    key("gpu_types"),
                    "must list at least one GPU type ID, or be `\"auto\"`",
                );
            } else if list.iter().any(|t| t.trim().eq_ignore_ascii_case("auto")) {
                // Not a GPU type ID: the automatic choice is the plain string.
                check.fail(
                    key("gpu_types"),
                    "`\"auto\"` is not a GPU type ID: write `gpu_types = \"auto\"`, not a list holding it",
                );
            }
            false
        }
    };
    if let Some(vram) = runpod.min_vram_gb {
        check.at_least(&key("min_vram_gb"), vram.into(), 1);
        if !auto {
            check.fail(key("min_vram_gb"), "only with `gpu_types = \"auto\"`");
        }
    }
    if let Some(price) = runpod.max_price_per_hour {
        if !price.is_finite() || price <= 0.0 {
            check.fail(
                key("max_price_per_hour"),
                "out of range: must be a number greater than 0",
            );
        }
        if !auto {
            check.fail(
                key("max_price_per_hour"),
                "only with `gpu_types = \"auto\"`",
            );
        }
    }
    if !(runpod.max_hours > 0.0 && runpod.max_hours <= 720.0) {
        check.fail(
            key("max_hours"),
            "out of range: must be greater than 0 and at most 720",
        );
    }
    if runpod
        .max_cost_usd
        .is_some_and(|c| !c.is_finite() || c <= 0.0)
    {
        check.fail(
            key("max_cost_usd"),
            "out of range: must be a number greater than 0",
        );
    }
    check.at_least(&key("gpu_count"), runpod.gpu_count.into(), 1);
    check.safe(&key("image"), &runpod.image);
    check.safe(&key("venv"), &runpod.venv);
    if !runpod.venv.starts_with('/') {
        check.fail(key("venv"), "must be an absolute path");
    }
    check.at_least(
        &key("container_disk_gb"),
        runpod.container_disk_gb.into(),
        20,
    );
    check.at_least(
        &key("boot_grace_minutes"),
        runpod.boot_grace_minutes.into(),
        5,
    );
    check.at_least(
        &key("retrieve_grace_minutes"),
        runpod.retrieve_grace_minutes.into(),
        1,
    );
    check_volume(check, name, runpod);
}

fn check_volume(check: &mut Check<'_>, name: &str, runpod: &RunpodTarget) {
    let key = |k: &str| format!("targets.{name}.{k}");
    let centers = match &runpod.data_center_ids {
        None => None,
        Some(ListOrAuto::Auto(text)) if text == "auto" => Some(None),
        Some(ListOrAuto::Auto(_)) => {
            check.fail(
                key("data_center_ids"),
                "invalid value: expected a list of data center IDs or `\"auto\"`",
            );
            None
        }
        Some(ListOrAuto::List(list)) => Some(Some(list.len())),
    };
    if let Some(volume) = &runpod.network_volume_id {
        check.non_empty(&key("network_volume_id"), volume);
        match centers {
            Some(Some(1)) => {}
            Some(None) => check.fail(
                key("data_center_ids"),
                "`\"auto\"` is not allowed with `network_volume_id`",
            ),
            _ => check.fail(
                key("network_volume_id"),
                "needs `data_center_ids` with exactly one entry: the volume's data center",
            ),
        }
    }
    if let Some(size) = runpod.max_volume_gb {
        check.at_least(&key("max_volume_gb"), size.into(), 1);
        if runpod.network_volume_id.is_none() {
            check.fail(key("max_volume_gb"), "only with `network_volume_id`");
        }
    }
}

/// What `max_volume_gb` allows, as `config check` and the TUI describe it (POD-49).
pub const MAX_VOLUME_GB_NOTE: &str = "overbrainer grows the network volume up to this size when it fills; a grow is permanent: the volume cannot shrink, stays billed monthly at its new size, and every pod using it sees the new size";

/// Whether `key` is a target's `max_volume_gb` (`targets.<name>.max_volume_gb`).
#[must_use]
pub fn is_max_volume_gb(key: &str) -> bool {
    key.strip_prefix("targets.")
        .and_then(|rest| rest.split_once('.'))
        .is_some_and(|(_, field)| field == "max_volume_gb")
}

/// The variable of the Runpod account's API key (POD-4).
pub const RUNPOD_KEY_VAR: &str = "OVERBRAINER_RUNPOD__API_KEY";

/// The variable of the Runpod REST API base (ENV-7).
pub const RUNPOD_BASE_URL_VAR: &str = "OVERBRAINER_RUNPOD__BASE_URL";

/// What `config check` notes about Runpod targets that validate: `gpu_types = "auto"`
/// with no VRAM floor, and a missing [`RUNPOD_KEY_VAR`]. Names keys and variables,
/// never a value.
#[must_use]
pub fn readiness_warnings(
    targets: &std::collections::BTreeMap<String, super::Target>,
    account: &RunpodAccount,
) -> Vec<String> {
    let mut warnings = Vec::new();
    let runpod: Vec<(&String, &RunpodTarget)> = targets
        .iter()
        .filter_map(|(name, target)| match target {
            super::Target::Runpod(runpod) => Some((name, runpod)),
            _ => None,
        })
        .collect();
    for (name, runpod) in &runpod {
        if matches!(runpod.gpu_types, ListOrAuto::Auto(_)) && runpod.min_vram_gb.is_none() {
            warnings.push(format!(
                "`targets.{name}.gpu_types = \"auto\"` without `min_vram_gb`: `train` estimates the VRAM from the base model's shape, and picks with no floor when it cannot read the shape; set `min_vram_gb` to fix the floor"
            ));
        }
    }
    if let (Some((name, _)), None) = (runpod.first(), &account.api_key) {
        warnings.push(format!(
            "`{RUNPOD_KEY_VAR}` is not set: Runpod target `{name}` needs the account's API key to train"
        ));
    }
    warnings
}

/// The rules of the account settings.
pub(super) fn check_account(check: &mut Check<'_>, account: &RunpodAccount) {
    if let Some(url) = &account.base_url {
        if let Some(message) = url_problem(url, true) {
            check.fail("runpod.base_url", message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_targets_max_volume_gb_carries_the_note_that_a_grow_is_permanent() {
        assert!(is_max_volume_gb("targets.gpu.max_volume_gb"));
        assert!(!is_max_volume_gb("targets.gpu.max_hours"));
        assert!(!is_max_volume_gb("runpod.max_volume_gb"));
        assert!(MAX_VOLUME_GB_NOTE.contains("cannot shrink"));
        assert!(MAX_VOLUME_GB_NOTE.contains("billed monthly"));
        assert!(MAX_VOLUME_GB_NOTE.contains("every pod using it"));
    }
}

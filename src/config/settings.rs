//! [`Settings`]: the whole configuration, one field per section, and [`SECTIONS`], the
//! one list of its top-level keys that the layering, the loader and `config check` share.
//! Each section's type, defaults and rules are in a file of its own; [`validate`] and
//! [`warnings`] run the rules of every section in this order.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::budget::{self, Budget};
use super::compare::{self, Compare};
use super::error::Problem;
use super::export::{self, Export};
use super::hub::{self, Hub};
use super::metrics::{self, Metrics};
use super::pipeline::{self, Pipeline};
use super::project::{self, ProjectSettings, Topic};
use super::provenance::Provenance;
use super::providers::{self, Provider};
use super::roles::{self, Roles};
use super::rules::{Check, Declared};
use super::runpod::{self, RunpodAccount};
use super::ssh_client::SshClient;
use super::targets::{self, Target};
use super::training::{self, Training};
use crate::secrets::SecretRef;

/// The top-level keys of [`Settings`], in the order `config check` prints them: the
/// sections of `overbrainer.toml` and the env-only keys (ENV-5). A key not listed here
/// is unknown, in the file and as a variable.
pub const SECTIONS: [&str; 16] = [
    "project",
    "topics",
    "providers",
    "roles",
    "pipeline",
    "training",
    "targets",
    "export",
    "hub",
    "compare",
    "metrics",
    "budget",
    "runpod",
    "hf_token",
    "ssh_client",
    "log",
];

/// The whole configuration of a project, after layering.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// `[project]`.
    #[serde(default)]
    pub project: ProjectSettings,
    /// `[[topics]]`, in file order.
    #[serde(default)]
    pub topics: Vec<Topic>,
    /// `[providers.<name>]`, by name.
    #[serde(default)]
    pub providers: BTreeMap<String, Provider>,
    /// `[roles]`.
    #[serde(default)]
    pub roles: Roles,
    /// `[pipeline]`.
    #[serde(default)]
    pub pipeline: Pipeline,
    /// `[training]`, absent when the project does not train.
    #[serde(default)]
    pub training: Option<Training>,
    /// `[targets.<name>]`, by name.
    #[serde(default)]
    pub targets: BTreeMap<String, Target>,
    /// `[export]`.
    #[serde(default)]
    pub export: Export,
    /// `[hub]`.
    #[serde(default)]
    pub hub: Hub,
    /// `[compare]`.
    #[serde(default)]
    pub compare: Compare,
    /// `[metrics]`.
    #[serde(default)]
    pub metrics: Metrics,
    /// `[budget]`.
    #[serde(default)]
    pub budget: Budget,
    /// Env-only Runpod account settings (`OVERBRAINER_RUNPOD__*`).
    #[serde(default)]
    pub runpod: RunpodAccount,
    /// Env-only Hugging Face token reference (`OVERBRAINER_HF_TOKEN`): a literal or a
    /// `vault:` reference, resolved lazily.
    #[serde(default, deserialize_with = "crate::secrets::optional")]
    pub hf_token: Option<SecretRef>,
    /// Env-only override of every target's SSH client (`OVERBRAINER_SSH_CLIENT`).
    #[serde(default)]
    pub ssh_client: Option<SshClient>,
    /// Env-only log filter (`OVERBRAINER_LOG`), in `tracing` directive syntax.
    #[serde(default)]
    pub log: Option<String>,
}

impl Settings {
    /// The SSH client in effect for an `ssh` or `runpod` target: `OVERBRAINER_SSH_CLIENT`
    /// when set, else the target's `ssh_client` (CHK-4); `None` for a `local` target.
    #[must_use]
    pub fn ssh_client_for(&self, target: &Target) -> Option<SshClient> {
        let own = match target {
            Target::Ssh(ssh) => ssh.ssh_client,
            Target::Runpod(runpod) => runpod.ssh_client,
            Target::Slurm(slurm) if slurm.host.is_some() => slurm.ssh_client,
            Target::Local(_) | Target::Slurm(_) => return None,
        };
        Some(self.ssh_client.unwrap_or(own))
    }
}

/// Adds a problem for every rule `settings` breaks, section by section.
pub(super) fn validate(settings: &Settings, declared: &Declared, problems: &mut Vec<Problem>) {
    let mut check = Check::new(problems, declared);
    project::check(&mut check, &settings.project, &settings.topics);
    providers::check(&mut check, &settings.providers);
    roles::check(&mut check, &settings.roles, &settings.providers);
    pipeline::check(&mut check, &settings.pipeline);
    if let Some(training) = &settings.training {
        training::check(&mut check, training, &settings.targets);
    }
    targets::check(&mut check, &settings.targets);
    export::check(&mut check, &settings.export);
    hub::check(&mut check, &settings.hub);
    runpod::check_account(&mut check, &settings.runpod);
    compare::check(&mut check, &settings.compare);
    metrics::check(&mut check, &settings.metrics);
    budget::check(&mut check, &settings.budget);
    if let Some(filter) = &settings.log {
        if tracing_subscriber::EnvFilter::try_new(filter).is_err() {
            check.fail("log", "invalid value: expected a log filter such as `debug` or `overbrainer=trace,reqwest=info`");
        }
    }
}

/// Notes for stderr: deprecated keys in use and keys ignored under a target's runtime
/// (CHK-5, CFG-8).
#[must_use]
pub(super) fn warnings(settings: &Settings, provenance: &Provenance) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(training) = &settings.training {
        training::warnings(training, &mut warnings);
    }
    targets::warnings(&settings.targets, provenance, &mut warnings);
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_of_sections_is_every_field_of_the_settings() {
        let serde_json::Value::Object(fields) = serde_json::to_value(Settings::default()).unwrap()
        else {
            panic!("settings are not an object");
        };
        let mut fields: Vec<&str> = fields.keys().map(String::as_str).collect();
        let mut sections = SECTIONS.to_vec();
        fields.sort_unstable();
        sections.sort_unstable();
        assert_eq!(fields, sections);
    }
}

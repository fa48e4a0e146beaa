//! Project settings: the typed sections of `overbrainer.toml`, layered with `.env`
//! and the process environment (spec/config.md).
//!
//! - `settings`: [`Settings`], one field per section, and [`SECTIONS`], the one list of
//!   its top-level keys; it runs every section's rules.
//! - one file per section, its types, defaults and rules side by side: `project`
//!   (`[project]`, `[[topics]]`), `providers`, `roles`, `pipeline`, `training`, `targets`,
//!   `runpod` (a Runpod target's keys and the account), `ssh_client`, `export`, `hub`, `compare`,
//!   `metrics`, `budget`; `rules`: what their rules share.
//! - `provenance`: where each value came from ([`Source`], [`Provenance`]).
//! - `layers`: the file, `.env` and variables as one tree.
//! - `load`: [`load`] turns the tree into [`Settings`], listing every problem at once,
//!   the sections' own and those of the [`Rules`] a layer above hands it (what Axolotl
//!   accepts, `train::rules`); `typer`: the typing of the tree, section by section;
//!   `describe`: its messages.
//! - `edit`: one change to `overbrainer.toml`, validated whole, written atomically with
//!   its comments kept (the TUI's Project view), and its undo.
//! - `show`: the lines of `config check`; `exposure`: whether `.env` holds a secret that
//!   other users can read.
//!
//! The environment itself is read once into [`EnvSnapshot`] (`crate::env`, below this
//! module and `secrets`).

mod budget;
mod compare;
mod describe;
pub mod edit;
mod error;
mod export;
mod exposure;
mod hub;
mod layers;
mod load;
mod metrics;
mod pipeline;
mod project;
mod provenance;
mod providers;
mod roles;
mod rules;
mod runpod;
mod runtime;
mod settings;
mod show;
mod slurm;
mod ssh_client;
mod targets;
mod training;
mod typer;

pub use crate::env::EnvSnapshot;
pub use budget::Budget;
pub use compare::Compare;
pub use error::{ConfigError, Problem};
pub use export::{Export, QUANTIZE_TYPES};
pub use exposure::{DotenvExposed, dotenv_exposed, is_secret_variable};
pub use hub::{DEFAULT_HUB_BASE_URL, Hub, MAX_REPO_NAME, repo_problem};
pub use layers::{PREFIX, extra_value, var_name};
pub use load::{DOTENV_NAME, FILE_NAME, Loaded, Rules, dotenv_pairs, load, load_text};
pub use metrics::Metrics;
pub use pipeline::Pipeline;
pub use project::{ProjectSettings, Topic};
pub use provenance::{Provenance, Source};
pub use providers::{Protocol, Provider};
pub use roles::{ReasoningEffort, Role, Roles};
pub use rules::{safe_path, valid_name};
pub use runpod::{
    DEFAULT_RUNPOD_BASE_URL, DEFAULT_RUNPOD_IMAGE, ListOrAuto, MAX_VOLUME_GB_NOTE,
    RUNPOD_BASE_URL_VAR, RUNPOD_KEY_VAR, RunpodAccount, RunpodTarget, is_max_volume_gb,
    readiness_warnings,
};
pub use settings::{SECTIONS, Settings};
pub use show::{Entry, entries};
pub use slurm::{MANAGED_SBATCH, SlurmTarget, managed_option};
pub use ssh_client::SshClient;
pub use targets::{DEFAULT_IMAGE, Engine, LocalTarget, Runtime, SshTarget, Target};
pub use training::{AdapterKind, OnStall, Training};

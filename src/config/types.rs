//! The typed settings of `overbrainer.toml`, one struct per section, with every
//! default in one place (spec/config.md, section 2).
//!
//! These types only describe shapes and defaults. Layering (file, `.env`, process
//! environment), provenance and semantic validation live beside them in
//! [`crate::config`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::secrets::SecretRef;

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
            Target::Local(_) => return None,
            Target::Ssh(ssh) => ssh.ssh_client,
            Target::Runpod(runpod) => runpod.ssh_client,
        };
        Some(self.ssh_client.unwrap_or(own))
    }
}

/// `[project]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProjectSettings {
    /// Project name, used for run IDs and the default Hub repository. Required.
    #[serde(default)]
    pub name: String,
}

/// One `[[topics]]` entry.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Topic {
    /// Unique name of the topic.
    pub name: String,
    /// Free text handed to the prompt templates.
    #[serde(default)]
    pub description: String,
    /// Number of subtopics to generate, at least 1.
    pub subtopics: u32,
    /// Number of questions to keep per subtopic, at least 1.
    pub questions_per_subtopic: u32,
}

/// Wire protocol of a provider.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// OpenAI-compatible chat completions (`/chat/completions`, `/embeddings`, `/models`).
    Openai,
    /// Anthropic Messages API (`/v1/messages`).
    Anthropic,
}

/// `[providers.<name>]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Provider {
    /// Wire protocol.
    pub protocol: Protocol,
    /// Base URL; env only (`OVERBRAINER_PROVIDERS__<NAME>__BASE_URL`).
    #[serde(default)]
    pub base_url: Option<String>,
    /// Key, a literal or a `vault:` reference; env only
    /// (`OVERBRAINER_PROVIDERS__<NAME>__API_KEY`). Unset: no authentication.
    /// An empty value is unset.
    #[serde(default, deserialize_with = "crate::secrets::optional")]
    pub api_key: Option<SecretRef>,
}

/// `[roles]`: which provider and model plays each part.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Roles {
    /// Writes subtopics and questions.
    #[serde(default)]
    pub generator: Option<Role>,
    /// Answers the questions with its reasoning.
    #[serde(default)]
    pub parent: Option<Role>,
    /// Embeds questions for similarity dedup (openai protocol only).
    #[serde(default)]
    pub embedder: Option<Role>,
    /// Judges child against parent in `compare`; the parent judges when unset.
    #[serde(default)]
    pub judge: Option<Role>,
}

/// Reasoning effort asked of an openai-protocol model.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    /// Sends no reasoning request.
    None,
    /// Low effort.
    Low,
    /// Medium effort.
    Medium,
    /// High effort.
    High,
}

/// One role's model and sampling settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Role {
    /// Name of a declared provider.
    pub provider: String,
    /// Model name as the provider spells it.
    pub model: String,
    /// Ask for reasoning.
    #[serde(default)]
    pub reasoning: bool,
    /// Bound on generated tokens, reasoning included.
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    /// Sampling temperature, 0..=2; unset leaves the provider's default.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Reasoning effort (openai protocol).
    #[serde(default)]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Thinking budget in tokens (anthropic protocol); unset is adaptive thinking.
    #[serde(default)]
    pub thinking_budget: Option<u32>,
}

fn default_max_tokens() -> u32 {
    16_384
}

/// `[pipeline]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Pipeline {
    /// Parallel subtopics in `questions`, parallel requests in `answers` and the judge.
    pub concurrency: u32,
    /// Retries per request; also the no-progress batches after which a subtopic stops.
    pub max_retries: u32,
    /// Word-overlap similarity above which two questions are duplicates, 0..=1.
    pub dedup_threshold: f64,
    /// Embedding similarity above which two questions are duplicates, 0..=1.
    pub embedding_threshold: f64,
    /// Questions asked per generator call.
    pub question_batch_size: u32,
    /// Timeout of one request, in seconds.
    pub request_timeout_secs: u64,
    /// The longest `Retry-After` a request waits for, in seconds; a longer one stops the
    /// stage with what is done saved.
    pub max_retry_wait_secs: u64,
    /// Share of usable answers held out for eval, 0 <= r < 1.
    pub eval_ratio: f64,
    /// Seed of the split.
    pub seed: u64,
    /// Store the answer system prompt as the first message.
    pub include_system_prompt: bool,
}

impl Default for Pipeline {
    fn default() -> Self {
        Self {
            concurrency: 8,
            max_retries: 5,
            dedup_threshold: 0.8,
            embedding_threshold: 0.9,
            question_batch_size: 10,
            request_timeout_secs: 600,
            max_retry_wait_secs: 600,
            eval_ratio: 0.1,
            seed: 42,
            include_system_prompt: false,
        }
    }
}

/// Kind of fine-tuning.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AdapterKind {
    /// LoRA adapter on the full-precision base.
    Lora,
    /// LoRA adapter on a 4-bit base.
    Qlora,
    /// Full fine-tuning.
    Full,
}

/// `[training]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Training {
    /// Name of a declared target.
    pub target: String,
    /// Hugging Face repo ID or a path on the target.
    pub base_model: String,
    /// Kind of fine-tuning.
    pub adapter: AdapterKind,
    /// Epochs, at least 1.
    #[serde(default = "default_epochs")]
    pub epochs: u32,
    /// Peak learning rate, > 0.
    #[serde(default = "default_learning_rate")]
    pub learning_rate: f64,
    /// LoRA rank.
    #[serde(default = "default_lora_r")]
    pub lora_r: u32,
    /// LoRA alpha.
    #[serde(default = "default_lora_alpha")]
    pub lora_alpha: u32,
    /// LoRA dropout, 0 <= v < 1.
    #[serde(default = "default_lora_dropout")]
    pub lora_dropout: f64,
    /// Sequence length in tokens.
    #[serde(default = "default_sequence_len")]
    pub sequence_len: u32,
    /// Micro-batch size per device.
    #[serde(default = "default_micro_batch_size")]
    pub micro_batch_size: u32,
    /// Gradient accumulation steps.
    #[serde(default = "default_gradient_accumulation_steps")]
    pub gradient_accumulation_steps: u32,
    /// Axolotl optimizer name.
    #[serde(default = "default_optimizer")]
    pub optimizer: String,
    /// Axolotl learning-rate scheduler name.
    #[serde(default = "default_lr_scheduler")]
    pub lr_scheduler: String,
    /// Pack several samples into one sequence.
    #[serde(default = "default_true")]
    pub sample_packing: bool,
    /// Evaluations per epoch.
    #[serde(default = "default_evals_per_epoch")]
    pub evals_per_epoch: u32,
    /// Checkpoint saves per epoch.
    #[serde(default = "default_saves_per_epoch")]
    pub saves_per_epoch: u32,
    /// Merge the adapter into the base after training (lora/qlora only).
    #[serde(default)]
    pub merge: bool,
    /// Deprecated: use `[hub] repo`.
    #[serde(default)]
    pub hub_model_id: Option<String>,
    /// Extra Axolotl keys, merged last into the generated YAML.
    #[serde(default)]
    pub axolotl_extra: toml::Table,
}

fn default_epochs() -> u32 {
    3
}
fn default_learning_rate() -> f64 {
    2e-4
}
fn default_lora_r() -> u32 {
    16
}
fn default_lora_alpha() -> u32 {
    32
}
fn default_lora_dropout() -> f64 {
    0.05
}
fn default_sequence_len() -> u32 {
    4096
}
fn default_micro_batch_size() -> u32 {
    2
}
fn default_gradient_accumulation_steps() -> u32 {
    4
}
fn default_optimizer() -> String {
    "adamw_torch_fused".to_owned()
}
fn default_lr_scheduler() -> String {
    "cosine".to_owned()
}
fn default_true() -> bool {
    true
}
fn default_evals_per_epoch() -> u32 {
    4
}
fn default_saves_per_epoch() -> u32 {
    1
}

/// How a job runs on a local or SSH target.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Runtime {
    /// `<venv>/bin/axolotl`, or `axolotl` on `PATH`, directly on the host.
    #[default]
    Native,
    /// Inside a container of the target's `image`.
    Docker,
}

/// Container engine of the docker runtime.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// Docker (`--gpus all`).
    #[default]
    Docker,
    /// Podman (`--device nvidia.com/gpu=all`, needs a CDI spec).
    Podman,
}

impl Engine {
    /// The engine's program name.
    #[must_use]
    pub fn program(self) -> &'static str {
        match self {
            Self::Docker => "docker",
            Self::Podman => "podman",
        }
    }
}

/// SSH client used for `ssh` and `runpod` targets.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SshClient {
    /// The system `ssh` with a ControlMaster connection.
    #[default]
    Openssh,
    /// The client built into overbrainer.
    Builtin,
}

/// Default container image of local and SSH targets (spec/config.md, table 2.7).
pub const DEFAULT_IMAGE: &str = "axolotlai/axolotl:0.19.0-py3.12-cu130-2.12.1@sha256:9de7c7a5b8830480a7d2eb3b6d49759586615f5f8eb1126d5df29f8bd9fa324b";
/// Default image of Runpod targets (spec/runpod.md, POD-1).
pub const DEFAULT_RUNPOD_IMAGE: &str = "axolotlai/axolotl-cloud-term:0.19.0-py3.12-cu130-2.12.1@sha256:f7b94da82913920a003e28e091d8528f57f76da7360fca87e95faf62fa32a680";

/// `[targets.<name>]`, by `kind`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Target {
    /// This machine.
    Local(LocalTarget),
    /// A host reached over SSH.
    Ssh(SshTarget),
    /// A fresh Runpod pod per job.
    Runpod(RunpodTarget),
}

/// `kind = "local"`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LocalTarget {
    /// How the job runs.
    #[serde(default)]
    pub runtime: Runtime,
    /// Native runtime: directory holding `bin/axolotl`; unset uses `PATH`.
    #[serde(default)]
    pub venv: Option<String>,
    /// Docker runtime: container engine.
    #[serde(default)]
    pub engine: Engine,
    /// Docker runtime: image reference.
    #[serde(default = "default_image")]
    pub image: String,
}

/// `kind = "ssh"`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SshTarget {
    /// How the job runs.
    #[serde(default)]
    pub runtime: Runtime,
    /// Native runtime: directory holding `bin/axolotl` on the host; unset uses `PATH`.
    #[serde(default)]
    pub venv: Option<String>,
    /// Docker runtime: container engine.
    #[serde(default)]
    pub engine: Engine,
    /// Docker runtime: image reference.
    #[serde(default = "default_image")]
    pub image: String,
    /// Remote directory of the run directories, relative to the remote home.
    #[serde(default = "default_workdir")]
    pub workdir: String,
    /// SSH client.
    #[serde(default)]
    pub ssh_client: SshClient,
    /// `user@host` or a `~/.ssh/config` alias; env only
    /// (`OVERBRAINER_TARGETS__<NAME>__HOST`).
    #[serde(default)]
    pub host: Option<String>,
}

fn default_image() -> String {
    DEFAULT_IMAGE.to_owned()
}
fn default_workdir() -> String {
    "overbrainer".to_owned()
}

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
    /// Largest size, in GB, the volume may be grown to.
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

/// GGUF quantization types accepted by `[export] quantize`.
pub const QUANTIZE_TYPES: [&str; 10] = [
    "Q4_K_M", "Q4_K_S", "Q5_K_M", "Q5_K_S", "Q6_K", "Q8_0", "Q3_K_M", "Q2_K", "F16", "BF16",
];

/// `[export]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct Export {
    /// Export inside each training job.
    pub after_training: bool,
    /// GGUF quantization type, one of [`QUANTIZE_TYPES`].
    pub quantize: String,
    /// Ollama model name for `ollama create`.
    pub ollama_name: Option<String>,
}

impl Default for Export {
    fn default() -> Self {
        Self {
            after_training: false,
            quantize: "Q4_K_M".to_owned(),
            ollama_name: None,
        }
    }
}

/// `[hub]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct Hub {
    /// `NAMESPACE/NAME`.
    pub repo: Option<String>,
    /// Create new repositories private.
    pub private: bool,
    /// Push each run that succeeded and came back.
    pub after_training: bool,
    /// Hub endpoint; env only (`OVERBRAINER_HUB__BASE_URL`).
    pub base_url: Option<String>,
}

/// Default Hugging Face Hub endpoint (spec/config.md, ENV-7).
pub const DEFAULT_HUB_BASE_URL: &str = "https://huggingface.co";
/// Default Runpod REST API base (spec/config.md, ENV-7).
pub const DEFAULT_RUNPOD_BASE_URL: &str = "https://api.runpod.io/v2";

impl Hub {
    /// The Hub endpoint in effect: `OVERBRAINER_HUB__BASE_URL`, else
    /// [`DEFAULT_HUB_BASE_URL`].
    #[must_use]
    pub fn endpoint(&self) -> &str {
        self.base_url.as_deref().unwrap_or(DEFAULT_HUB_BASE_URL)
    }
}

impl Default for Hub {
    fn default() -> Self {
        Self {
            repo: None,
            private: true,
            after_training: false,
            base_url: None,
        }
    }
}

/// `[compare]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Compare {
    /// USD per million parent input tokens.
    pub parent_price_in: Option<f64>,
    /// USD per million parent output tokens.
    pub parent_price_out: Option<f64>,
    /// USD per hour of the child's hardware.
    pub child_price_per_hour: Option<f64>,
    /// Token limit of each child answer.
    pub max_tokens: u32,
    /// Child sampling temperature, 0..=2.
    pub temperature: f64,
    /// Seconds `llama-server` may take to become ready.
    pub server_start_secs: u64,
}

impl Default for Compare {
    fn default() -> Self {
        Self {
            parent_price_in: None,
            parent_price_out: None,
            child_price_per_hour: None,
            max_tokens: 2048,
            temperature: 0.0,
            server_start_secs: 300,
        }
    }
}

/// `[metrics]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    /// `IP:port` of the Prometheus endpoint; unset turns it off.
    #[serde(default)]
    pub listen: Option<String>,
}

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
    /// The REST API base in effect: `OVERBRAINER_RUNPOD__BASE_URL`, else
    /// [`DEFAULT_RUNPOD_BASE_URL`].
    #[must_use]
    pub fn endpoint(&self) -> &str {
        self.base_url.as_deref().unwrap_or(DEFAULT_RUNPOD_BASE_URL)
    }
}

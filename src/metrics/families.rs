//! The registry of metric families (MET-16): every family's name, type, unit, help and
//! labels, registered once. Label values are only stage names, model names, run IDs, the
//! version string, mount points, GPU indices and GPU model names (MET-15).

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

/// A float gauge.
pub type FloatGauge = Gauge<f64, AtomicU64>;
/// A float counter.
pub type FloatCounter = Counter<f64, AtomicU64>;

/// `stage`, `result`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StageResult {
    /// Stage name.
    pub stage: String,
    /// `done`, `skipped`, `failed` or `excluded`.
    pub result: String,
}

/// `stage`, `model`, `direction`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Tokens {
    /// Stage name.
    pub stage: String,
    /// Model name.
    pub model: String,
    /// `in` or `out`.
    pub direction: String,
}

/// `stage`, `model`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StageModel {
    /// Stage name.
    pub stage: String,
    /// Model name.
    pub model: String,
}

/// `stage`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StageLabel {
    /// Stage name.
    pub stage: String,
}

/// `run_id`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RunLabel {
    /// Run ID.
    pub run_id: String,
}

/// `run_id`, `phase`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RunPhase {
    /// Run ID.
    pub run_id: String,
    /// One of [`PHASES`].
    pub phase: String,
}

/// `run_id`, `mount`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RunMount {
    /// Run ID.
    pub run_id: String,
    /// Mount point.
    pub mount: String,
}

/// `run_id`, `gpu`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RunGpu {
    /// Run ID.
    pub run_id: String,
    /// GPU index as `nvidia-smi` reports it.
    pub gpu: String,
}

/// `run_id`, `gpu`, `name`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RunGpuName {
    /// Run ID.
    pub run_id: String,
    /// GPU index.
    pub gpu: String,
    /// GPU model name.
    pub name: String,
}

/// `version`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VersionLabel {
    /// The version string.
    pub version: String,
}

/// The values of `overbrainer_train_phase`'s `phase` label (MET-16).
pub const PHASES: [&str; 6] = [
    "training",
    "evaluating",
    "finalizing",
    "merging",
    "exporting",
    "retrieving",
];

/// Every family of MET-16, held by handle; the [`Registry`] holds clones of the same.
#[derive(Debug, Default, Clone)]
pub struct Families {
    /// `overbrainer_stage_items_total`.
    pub stage_items: Family<StageResult, Counter>,
    /// `overbrainer_tokens_total`.
    pub tokens: Family<Tokens, Counter>,
    /// `overbrainer_cost_usd_total`.
    pub cost: Family<StageModel, FloatCounter>,
    /// `overbrainer_stage_running`.
    pub stage_running: Family<StageLabel, Gauge>,
    /// `overbrainer_item_retries_total`.
    pub retries: Family<StageLabel, Counter>,
    /// `overbrainer_train_step`.
    pub train_step: Family<RunLabel, Gauge>,
    /// `overbrainer_train_max_steps`.
    pub train_max_steps: Family<RunLabel, Gauge>,
    /// `overbrainer_train_phase`.
    pub train_phase: Family<RunPhase, Gauge>,
    /// `overbrainer_train_loss`.
    pub train_loss: Family<RunLabel, FloatGauge>,
    /// `overbrainer_eval_loss`.
    pub eval_loss: Family<RunLabel, FloatGauge>,
    /// `overbrainer_learning_rate`.
    pub learning_rate: Family<RunLabel, FloatGauge>,
    /// `overbrainer_target_disk_used_bytes`.
    pub disk_used: Family<RunMount, FloatGauge>,
    /// `overbrainer_target_disk_size_bytes`.
    pub disk_size: Family<RunMount, FloatGauge>,
    /// `overbrainer_target_cpu_usage_ratio`.
    pub cpu_usage: Family<RunLabel, FloatGauge>,
    /// `overbrainer_target_cpu_load1`.
    pub cpu_load1: Family<RunLabel, FloatGauge>,
    /// `overbrainer_target_cpus`.
    pub cpus: Family<RunLabel, FloatGauge>,
    /// `overbrainer_target_memory_used_bytes`.
    pub memory_used: Family<RunLabel, FloatGauge>,
    /// `overbrainer_target_memory_limit_bytes`.
    pub memory_limit: Family<RunLabel, FloatGauge>,
    /// `overbrainer_target_sample_timestamp_seconds`.
    pub sample_timestamp: Family<RunLabel, FloatGauge>,
    /// `overbrainer_gpu_utilization_ratio`.
    pub gpu_utilization: Family<RunGpu, FloatGauge>,
    /// `overbrainer_gpu_memory_used_bytes`.
    pub gpu_memory_used: Family<RunGpu, FloatGauge>,
    /// `overbrainer_gpu_memory_total_bytes`.
    pub gpu_memory_total: Family<RunGpu, FloatGauge>,
    /// `overbrainer_gpu_temperature_celsius`.
    pub gpu_temperature: Family<RunGpu, FloatGauge>,
    /// `overbrainer_gpu_power_watts`.
    pub gpu_power: Family<RunGpu, FloatGauge>,
    /// `overbrainer_gpu_power_limit_watts`.
    pub gpu_power_limit: Family<RunGpu, FloatGauge>,
    /// `overbrainer_gpu_info`.
    pub gpu_info: Family<RunGpuName, Gauge>,
    /// `overbrainer_build_info`.
    pub build_info: Family<VersionLabel, Gauge>,
}

fn unit(name: &str) -> Unit {
    Unit::Other(name.to_owned())
}

impl Families {
    /// Registers every family in `registry` under its MET-16 name (the unit suffix is the
    /// registry's, counters get `_total` on their samples); `overbrainer_runpod_spend_usd`
    /// is the spend collector's ([`super::spend`]).
    pub fn register(&self, registry: &mut Registry) {
        self.register_stages(registry);
        self.register_training(registry);
        self.register_target(registry);
        self.register_gpus(registry);
        registry.register(
            "overbrainer_build_info",
            "Always 1; version is overbrainer's",
            self.build_info.clone(),
        );
    }

    fn register_stages(&self, r: &mut Registry) {
        r.register(
            "overbrainer_stage_items",
            "Items of the dataset stages by result",
            self.stage_items.clone(),
        );
        r.register(
            "overbrainer_tokens",
            "Tokens sent (in) and received (out), every attempt",
            self.tokens.clone(),
        );
        r.register_with_unit(
            "overbrainer_cost",
            "Cost in USD of the requests with a known price",
            unit("usd"),
            self.cost.clone(),
        );
        r.register(
            "overbrainer_stage_running",
            "1 while the stage runs in this process",
            self.stage_running.clone(),
        );
        r.register(
            "overbrainer_item_retries",
            "Failed attempts that were retried, since the command started",
            self.retries.clone(),
        );
    }

    fn register_training(&self, r: &mut Registry) {
        r.register(
            "overbrainer_train_step",
            "Last optimizer step of a followed run",
            self.train_step.clone(),
        );
        r.register(
            "overbrainer_train_max_steps",
            "Total optimizer steps of a followed run",
            self.train_max_steps.clone(),
        );
        r.register(
            "overbrainer_train_phase",
            "1 for the followed run's current phase, 0 for the others",
            self.train_phase.clone(),
        );
        r.register(
            "overbrainer_train_loss",
            "Last training loss of a followed run",
            self.train_loss.clone(),
        );
        r.register(
            "overbrainer_eval_loss",
            "Last evaluation loss of a followed run",
            self.eval_loss.clone(),
        );
        r.register(
            "overbrainer_learning_rate",
            "Last learning rate of a followed run",
            self.learning_rate.clone(),
        );
    }

    fn register_target(&self, r: &mut Registry) {
        r.register_with_unit(
            "overbrainer_target_disk_used",
            "Bytes used on the run directory's file system, and on / when different",
            Unit::Bytes,
            self.disk_used.clone(),
        );
        r.register_with_unit(
            "overbrainer_target_disk_size",
            "Size of that file system",
            Unit::Bytes,
            self.disk_size.clone(),
        );
        r.register_with_unit(
            "overbrainer_target_cpu_usage",
            "Share of CPUs busy since the previous sample",
            unit("ratio"),
            self.cpu_usage.clone(),
        );
        r.register(
            "overbrainer_target_cpu_load1",
            "1-minute load average of the host",
            self.cpu_load1.clone(),
        );
        r.register(
            "overbrainer_target_cpus",
            "The container's CPU quota when it has one, else the CPUs online",
            self.cpus.clone(),
        );
        r.register_with_unit(
            "overbrainer_target_memory_used",
            "Memory used, excluding reclaimable page cache",
            Unit::Bytes,
            self.memory_used.clone(),
        );
        r.register_with_unit(
            "overbrainer_target_memory_limit",
            "The container's memory limit when it has one, else the machine's memory",
            Unit::Bytes,
            self.memory_limit.clone(),
        );
        r.register_with_unit(
            "overbrainer_target_sample_timestamp",
            "Unix time of the last system sample",
            Unit::Seconds,
            self.sample_timestamp.clone(),
        );
    }

    fn register_gpus(&self, r: &mut Registry) {
        r.register_with_unit(
            "overbrainer_gpu_utilization",
            "Share of time a kernel ran",
            unit("ratio"),
            self.gpu_utilization.clone(),
        );
        r.register_with_unit(
            "overbrainer_gpu_memory_used",
            "GPU memory used",
            Unit::Bytes,
            self.gpu_memory_used.clone(),
        );
        r.register_with_unit(
            "overbrainer_gpu_memory_total",
            "GPU memory total",
            Unit::Bytes,
            self.gpu_memory_total.clone(),
        );
        r.register_with_unit(
            "overbrainer_gpu_temperature",
            "GPU temperature",
            Unit::Celsius,
            self.gpu_temperature.clone(),
        );
        r.register_with_unit(
            "overbrainer_gpu_power",
            "GPU power draw",
            unit("watts"),
            self.gpu_power.clone(),
        );
        r.register_with_unit(
            "overbrainer_gpu_power_limit",
            "GPU power limit",
            unit("watts"),
            self.gpu_power_limit.clone(),
        );
        r.register(
            "overbrainer_gpu_info",
            "Always 1; name is the GPU model",
            self.gpu_info.clone(),
        );
    }
}

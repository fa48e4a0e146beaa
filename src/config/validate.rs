//! Semantic validation of typed settings (spec/config.md tables 2.1-2.11, POD-1/POD-2,
//! AXO-4..AXO-6, CFG-5..CFG-9) and the warnings of `config check` (CHK-5).
//!
//! Every rule adds a [`Problem`] naming its key; nothing stops at the first one.

use std::net::SocketAddr;

use super::error::Problem;
use super::layers::Provenance;
use super::types::{
    AdapterKind, ListOrAuto, Protocol, QUANTIZE_TYPES, Role, RunpodTarget, Runtime, Settings,
    Target, Training,
};

/// Keys of the generated Axolotl YAML that come from a typed `[training]` setting (AXO-4),
/// with that setting.
pub const AXOLOTL_TYPED_KEYS: [(&str, &str); 17] = [
    ("base_model", "training.base_model"),
    ("adapter", "training.adapter"),
    ("load_in_4bit", "training.adapter = \"qlora\""),
    ("lora_r", "training.lora_r"),
    ("lora_alpha", "training.lora_alpha"),
    ("lora_dropout", "training.lora_dropout"),
    ("num_epochs", "training.epochs"),
    ("learning_rate", "training.learning_rate"),
    ("sequence_len", "training.sequence_len"),
    ("micro_batch_size", "training.micro_batch_size"),
    (
        "gradient_accumulation_steps",
        "training.gradient_accumulation_steps",
    ),
    ("optimizer", "training.optimizer"),
    ("lr_scheduler", "training.lr_scheduler"),
    ("sample_packing", "training.sample_packing"),
    ("evals_per_epoch", "training.evals_per_epoch"),
    ("saves_per_epoch", "training.saves_per_epoch"),
    ("hub_model_id", "hub.repo"),
];

/// Keys of the generated Axolotl YAML that overbrainer manages (AXO-5).
pub const AXOLOTL_MANAGED_KEYS: [&str; 7] = [
    "datasets",
    "test_datasets",
    "val_set_size",
    "output_dir",
    "dataset_prepared_path",
    "plugins",
    "resume_from_checkpoint",
];

/// Whether `name` is a valid provider or target name, `^[a-z0-9_]+$` (ENV-8).
#[must_use]
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Whether `value` uses only the shell-safe path characters of CFG-9: letters, digits and
/// `/ . _ - ~ : @ +`.
#[must_use]
pub fn safe_path(value: &str) -> bool {
    !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-~:@+".contains(c))
}

/// Whether `url` is an `http` or `https` URL; with `loopback_http`, `http` only on a
/// loopback host.
fn url_problem(url: &str, https_only_except_loopback: bool) -> Option<&'static str> {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return Some("invalid value: expected a URL");
    };
    match parsed.scheme() {
        "https" => None,
        "http" if !https_only_except_loopback => None,
        "http" => {
            let host = parsed.host_str().unwrap_or_default();
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let loopback = host == "localhost"
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback());
            (!loopback)
                .then_some("invalid value: expected `https`, or `http` only on a loopback host")
        }
        _ => Some("invalid value: expected an `http` or `https` URL"),
    }
}

/// Provider and target names present in the configuration, including entries whose own
/// values failed to type (so a role naming one is not also reported as unknown).
#[derive(Debug, Default)]
pub(crate) struct Declared {
    pub providers: std::collections::BTreeSet<String>,
    pub targets: std::collections::BTreeSet<String>,
}

struct Check<'a> {
    problems: &'a mut Vec<Problem>,
    declared: &'a Declared,
}

impl Check<'_> {
    fn fail(&mut self, key: impl Into<String>, message: impl Into<String>) {
        self.problems.push(Problem::new(key, message));
    }

    fn at_least(&mut self, key: &str, value: u64, min: u64) {
        if value < min {
            self.fail(key, format!("out of range: must be at least {min}"));
        }
    }

    fn unit(&mut self, key: &str, value: f64, upper_open: bool) {
        let ok = value >= 0.0
            && if upper_open {
                value < 1.0
            } else {
                value <= 1.0
            };
        if !ok {
            let range = if upper_open {
                "0 <= v < 1"
            } else {
                "0 <= v <= 1"
            };
            self.fail(key, format!("out of range: must be {range}"));
        }
    }

    fn temperature(&mut self, key: &str, value: f64) {
        if !(0.0..=2.0).contains(&value) {
            self.fail(key, "out of range: must be 0 <= t <= 2");
        }
    }

    fn non_empty(&mut self, key: &str, value: &str) {
        if value.trim().is_empty() {
            self.fail(key, "must not be empty");
        }
    }

    fn safe(&mut self, key: &str, value: &str) {
        if !safe_path(value) {
            self.fail(
                key,
                "invalid value: use only letters, digits and `/ . _ - ~ : @ +`",
            );
        }
    }
}

/// Adds a problem for every rule `settings` breaks.
pub(crate) fn validate(settings: &Settings, declared: &Declared, problems: &mut Vec<Problem>) {
    let mut check = Check { problems, declared };
    check.non_empty("project.name", &settings.project.name);

    let mut seen = std::collections::BTreeSet::new();
    for (i, topic) in settings.topics.iter().enumerate() {
        let key = |k: &str| format!("topics.{i}.{k}");
        check.non_empty(&key("name"), &topic.name);
        if !seen.insert(topic.name.as_str()) {
            check.fail(
                key("name"),
                format!("topic `{}` is declared twice", topic.name),
            );
        }
        check.at_least(&key("subtopics"), topic.subtopics.into(), 1);
        check.at_least(
            &key("questions_per_subtopic"),
            topic.questions_per_subtopic.into(),
            1,
        );
    }

    for (name, provider) in &settings.providers {
        if !valid_name(name) {
            check.fail(
                format!("providers.{name}"),
                "invalid name: use only `a-z`, `0-9` and `_`",
            );
        }
        if let Some(url) = &provider.base_url {
            if let Some(message) = url_problem(url, false) {
                check.fail(format!("providers.{name}.base_url"), message);
            }
        }
    }

    for (role_name, role) in [
        ("generator", &settings.roles.generator),
        ("parent", &settings.roles.parent),
        ("embedder", &settings.roles.embedder),
        ("judge", &settings.roles.judge),
    ] {
        if let Some(role) = role {
            check_role(&mut check, settings, role_name, role);
        }
    }

    check_sections(&mut check, settings);
}

fn check_sections(check: &mut Check<'_>, settings: &Settings) {
    let pipeline = &settings.pipeline;
    if !(1..=1024).contains(&pipeline.concurrency) {
        check.fail("pipeline.concurrency", "out of range: must be 1..=1024");
    }
    check.unit("pipeline.dedup_threshold", pipeline.dedup_threshold, false);
    check.unit(
        "pipeline.embedding_threshold",
        pipeline.embedding_threshold,
        false,
    );
    check.at_least(
        "pipeline.question_batch_size",
        pipeline.question_batch_size.into(),
        1,
    );
    check.at_least(
        "pipeline.request_timeout_secs",
        pipeline.request_timeout_secs,
        1,
    );
    check.unit("pipeline.eval_ratio", pipeline.eval_ratio, true);

    if let Some(training) = &settings.training {
        check_training(check, settings, training);
    }
    check_targets(check, settings);
    check_outputs(check, settings);
}

fn check_targets(check: &mut Check<'_>, settings: &Settings) {
    for (name, target) in &settings.targets {
        let key = |k: &str| format!("targets.{name}.{k}");
        if !valid_name(name) {
            check.fail(
                format!("targets.{name}"),
                "invalid name: use only `a-z`, `0-9` and `_`",
            );
        }
        match target {
            Target::Local(local) => {
                if let Some(venv) = &local.venv {
                    check.safe(&key("venv"), venv);
                }
                check.safe(&key("image"), &local.image);
            }
            Target::Ssh(ssh) => {
                if let Some(venv) = &ssh.venv {
                    check.safe(&key("venv"), venv);
                }
                check.safe(&key("image"), &ssh.image);
                check.safe(&key("workdir"), &ssh.workdir);
                if let Some(host) = &ssh.host {
                    check.non_empty(&key("host"), host);
                    if host.starts_with('-') || host.chars().any(char::is_whitespace) {
                        check.fail(
                            key("host"),
                            "invalid value: expected `user@host` or an alias",
                        );
                    }
                }
            }
            Target::Runpod(runpod) => check_runpod(check, name, runpod),
        }
    }
}

fn check_outputs(check: &mut Check<'_>, settings: &Settings) {
    if !QUANTIZE_TYPES.contains(&settings.export.quantize.as_str()) {
        check.fail(
            "export.quantize",
            format!(
                "invalid value: expected one of {}",
                QUANTIZE_TYPES.join(", ")
            ),
        );
    }
    if let Some(name) = &settings.export.ollama_name {
        check.non_empty("export.ollama_name", name);
    }
    if let Some(repo) = &settings.hub.repo {
        let ok = repo.split_once('/').is_some_and(|(ns, n)| {
            !ns.is_empty()
                && !n.is_empty()
                && !n.contains('/')
                && !repo.contains(char::is_whitespace)
        });
        if !ok {
            check.fail("hub.repo", "invalid value: expected `NAMESPACE/NAME`");
        }
    }
    if let Some(url) = &settings.hub.base_url {
        if let Some(message) = url_problem(url, true) {
            check.fail("hub.base_url", message);
        }
    }
    if let Some(url) = &settings.runpod.base_url {
        if let Some(message) = url_problem(url, true) {
            check.fail("runpod.base_url", message);
        }
    }
    let compare = &settings.compare;
    for (key, price) in [
        ("compare.parent_price_in", compare.parent_price_in),
        ("compare.parent_price_out", compare.parent_price_out),
        ("compare.child_price_per_hour", compare.child_price_per_hour),
    ] {
        if price.is_some_and(|p| p.is_nan() || p < 0.0) {
            check.fail(key, "out of range: must be at least 0");
        }
    }
    check.at_least("compare.max_tokens", compare.max_tokens.into(), 1);
    check.temperature("compare.temperature", compare.temperature);
    check.at_least("compare.server_start_secs", compare.server_start_secs, 1);
    if let Some(listen) = &settings.metrics.listen {
        if listen.parse::<SocketAddr>().is_err() {
            check.fail(
                "metrics.listen",
                "invalid value: expected an IP address and a port (`127.0.0.1:9464`, `[::1]:9464`)",
            );
        }
    }
    if let Some(filter) = &settings.log {
        if tracing_subscriber::EnvFilter::try_new(filter).is_err() {
            check.fail("log", "invalid value: expected a log filter such as `debug` or `overbrainer=trace,reqwest=info`");
        }
    }
}

fn check_role(check: &mut Check<'_>, settings: &Settings, name: &str, role: &Role) {
    let key = |k: &str| format!("roles.{name}.{k}");
    let protocol = settings.providers.get(&role.provider).map(|p| p.protocol);
    if protocol.is_none() && !check.declared.providers.contains(&role.provider) {
        check.fail(
            key("provider"),
            format!(
                "names provider `{}`, which is not declared under `[providers]`",
                role.provider
            ),
        );
    }
    check.non_empty(&key("model"), &role.model);
    check.at_least(&key("max_tokens"), role.max_tokens.into(), 1);
    if let Some(t) = role.temperature {
        check.temperature(&key("temperature"), t);
        if role.reasoning && protocol == Some(Protocol::Anthropic) {
            check.fail(
                key("temperature"),
                "cannot be set with `reasoning = true` on the `anthropic` protocol",
            );
        }
    }
    if let Some(effort) = role.reasoning_effort {
        if effort != super::types::ReasoningEffort::None && !role.reasoning {
            check.fail(
                key("reasoning_effort"),
                "`low`, `medium` and `high` require `reasoning = true`",
            );
        }
    }
    if let Some(budget) = role.thinking_budget {
        if protocol == Some(Protocol::Openai) {
            check.fail(key("thinking_budget"), "only for the `anthropic` protocol");
        }
        if !role.reasoning {
            check.fail(key("thinking_budget"), "requires `reasoning = true`");
        }
        if budget < 1024 || budget >= role.max_tokens {
            check.fail(
                key("thinking_budget"),
                "out of range: must be at least 1024 and below `max_tokens`",
            );
        }
        if role.reasoning_effort.is_some() {
            check.fail(
                key("thinking_budget"),
                "cannot be combined with `reasoning_effort`",
            );
        }
    }
    if name == "embedder" && protocol.is_some_and(|p| p != Protocol::Openai) {
        check.fail(
            key("provider"),
            "the embedder needs a provider with `protocol = \"openai\"`",
        );
    }
}

fn check_training(check: &mut Check<'_>, settings: &Settings, training: &Training) {
    if !settings.targets.contains_key(&training.target)
        && !check.declared.targets.contains(&training.target)
    {
        check.fail(
            "training.target",
            format!(
                "names target `{}`, which is not declared under `[targets]`",
                training.target
            ),
        );
    }
    check.non_empty("training.base_model", &training.base_model);
    check.at_least("training.epochs", training.epochs.into(), 1);
    if training.learning_rate.is_nan() || training.learning_rate <= 0.0 {
        check.fail(
            "training.learning_rate",
            "out of range: must be greater than 0",
        );
    }
    check.at_least("training.lora_r", training.lora_r.into(), 1);
    check.at_least("training.lora_alpha", training.lora_alpha.into(), 1);
    check.unit("training.lora_dropout", training.lora_dropout, true);
    check.at_least("training.sequence_len", training.sequence_len.into(), 1);
    check.at_least(
        "training.micro_batch_size",
        training.micro_batch_size.into(),
        1,
    );
    check.at_least(
        "training.gradient_accumulation_steps",
        training.gradient_accumulation_steps.into(),
        1,
    );
    check.non_empty("training.optimizer", &training.optimizer);
    check.non_empty("training.lr_scheduler", &training.lr_scheduler);
    check.at_least(
        "training.evals_per_epoch",
        training.evals_per_epoch.into(),
        1,
    );
    check.at_least(
        "training.saves_per_epoch",
        training.saves_per_epoch.into(),
        1,
    );
    if training.merge && training.adapter == AdapterKind::Full {
        check.fail(
            "training.merge",
            "only with `adapter = \"lora\"` or `\"qlora\"`",
        );
    }
    for (key, value) in &training.axolotl_extra {
        let path = format!("training.axolotl_extra.{key}");
        if let Some((_, setting)) = AXOLOTL_TYPED_KEYS.iter().find(|(k, _)| k == key) {
            check.fail(
                path,
                format!("comes from a typed setting; use `{setting}` instead"),
            );
        } else if AXOLOTL_MANAGED_KEYS.contains(&key.as_str()) {
            check.fail(path, "is managed by overbrainer and cannot be set");
        } else if key == "save_only_model" && value.as_bool() == Some(true) {
            check.fail(
                path,
                "`true` is refused: a checkpoint without optimizer state cannot be resumed",
            );
        }
    }
}

fn check_runpod(check: &mut Check<'_>, name: &str, runpod: &RunpodTarget) {
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
        if price.is_nan() || price <= 0.0 {
            check.fail(
                key("max_price_per_hour"),
                "out of range: must be greater than 0",
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
    if runpod.max_cost_usd.is_some_and(|c| c.is_nan() || c <= 0.0) {
        check.fail(key("max_cost_usd"), "out of range: must be greater than 0");
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

/// Whether Axolotl reads the `axolotl_extra` value `value` as set (Python truthiness
/// of the YAML value: `false`, `0`, `""` and empty collections are not).
#[must_use]
pub fn axolotl_truthy(value: &toml::Value) -> bool {
    match value {
        toml::Value::Boolean(b) => *b,
        toml::Value::Integer(i) => *i != 0,
        toml::Value::Float(f) => *f != 0.0,
        toml::Value::String(s) => !s.is_empty(),
        toml::Value::Array(a) => !a.is_empty(),
        toml::Value::Table(t) => !t.is_empty(),
        toml::Value::Datetime(_) => true,
    }
}

/// Adds a problem for every pair of settings that Axolotl 0.19 refuses together
/// (`check_evals`, `check_saves` and `check_warmup` in its
/// `utils/schemas/validation.py`), naming both keys. A typed setting counts only when
/// it is set (in `overbrainer.toml` or a variable): its default gives way to the
/// `axolotl_extra` key instead (AXO-7). Whether there is eval data is checked where the
/// data is known (`train::axolotl::eval_data_conflict`).
pub(crate) fn combinations(
    settings: &Settings,
    provenance: &Provenance,
    problems: &mut Vec<Problem>,
) {
    let Some(training) = &settings.training else {
        return;
    };
    let extra = &training.axolotl_extra;
    let set = |key: &str| extra.get(key).filter(|v| axolotl_truthy(v));
    let extra_key = |key: &str| format!("training.axolotl_extra.{key}");
    let not_steps = |key: &str| set(key).filter(|v| v.as_str() != Some("steps"));
    for (steps, per_epoch, strategy) in [
        ("eval_steps", "training.evals_per_epoch", "eval_strategy"),
        ("save_steps", "training.saves_per_epoch", "save_strategy"),
    ] {
        if set(steps).is_some() && provenance.is_set(per_epoch) {
            problems.push(Problem::new(
                extra_key(steps),
                format!(
                    "cannot be used with `{per_epoch}`: Axolotl refuses both together; remove one of them"
                ),
            ));
        }
        if not_steps(strategy).is_some() && set(steps).is_some() {
            problems.push(Problem::new(
                extra_key(strategy),
                format!(
                    "other than `steps` cannot be used with `{}`: Axolotl takes `{steps}` only with `{strategy} = \"steps\"`; set that or remove one of them",
                    extra_key(steps)
                ),
            ));
        }
    }
    if not_steps("eval_strategy").is_some() && provenance.is_set("training.evals_per_epoch") {
        problems.push(Problem::new(
            extra_key("eval_strategy"),
            "other than `steps` cannot be used with `training.evals_per_epoch`: Axolotl takes `evals_per_epoch` only with `eval_strategy = \"steps\"` or none; remove one of them",
        ));
    }
    if set("warmup_steps").is_some() && set("warmup_ratio").is_some() {
        problems.push(Problem::new(
            extra_key("warmup_steps"),
            format!(
                "cannot be used with `{}`: Axolotl refuses both together; remove one of them",
                extra_key("warmup_ratio")
            ),
        ));
    }
}

/// Notes for stderr: deprecated keys in use and keys ignored under a target's runtime
/// (CHK-5, CFG-8).
#[must_use]
pub fn warnings(settings: &Settings, provenance: &Provenance) -> Vec<String> {
    let mut warnings = Vec::new();
    if settings
        .training
        .as_ref()
        .is_some_and(|t| t.hub_model_id.is_some())
    {
        warnings.push("`training.hub_model_id` is deprecated; set `[hub] repo` instead".to_owned());
    }
    for (name, target) in &settings.targets {
        let runtime = match target {
            Target::Local(t) => t.runtime,
            Target::Ssh(t) => t.runtime,
            Target::Runpod(_) => continue,
        };
        let ignored: &[&str] = match runtime {
            Runtime::Native => &["engine", "image"],
            Runtime::Docker => &["venv"],
        };
        for key in ignored {
            let full = format!("targets.{name}.{key}");
            if provenance.is_set(&full) {
                warnings.push(format!(
                    "`{full}` is ignored with `runtime = \"{}\"`",
                    match runtime {
                        Runtime::Native => "native",
                        Runtime::Docker => "docker",
                    }
                ));
            }
        }
    }
    warnings
}

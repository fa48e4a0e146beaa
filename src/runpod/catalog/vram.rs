//! The GPU memory a training run needs per GPU (POD-18, POD-19), from the base model's
//! shape and the `[training]` settings, `axolotl_extra` first where it sets them. Pure;
//! [`super::shape`] reads the shape.

use crate::config::{AdapterKind, Training};

/// The base model's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Parameters (`P`, from the `safetensors` metadata).
    pub parameters: u64,
    /// `hidden_size` (`H`).
    pub hidden: u64,
    /// `num_hidden_layers` (`L`).
    pub layers: u64,
    /// `vocab_size` (`V`).
    pub vocab: u64,
}

/// What the estimate takes from the training settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Load {
    /// Adapter kind.
    pub adapter: AdapterKind,
    /// LoRA rank.
    pub lora_r: u64,
    /// `micro_batch_size` (`B`).
    pub micro_batch: u64,
    /// `sequence_len` (`S`).
    pub sequence_len: u64,
    /// The optimizer's name (`8bit` in it: 10 bytes of state per parameter, not 16).
    pub optimizer: String,
    /// Gradient checkpointing (on unless `axolotl_extra` turns it off).
    pub checkpointing: bool,
}

/// Why no estimate is made (POD-19).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoEstimate {
    /// `axolotl_extra` shards the model: the per-GPU memory is not this formula's.
    #[error("`training.axolotl_extra` sets `{0}`, which shards the model across GPUs")]
    Sharded(String),
    /// An `axolotl_extra` value of the wrong type.
    #[error("`training.axolotl_extra.{key}` is not {expected}")]
    BadExtra {
        /// The key.
        key: &'static str,
        /// What it should be.
        expected: &'static str,
    },
}

impl Load {
    /// The load of `training`, `axolotl_extra` first for `micro_batch_size`,
    /// `sequence_len`, `optimizer` and `gradient_checkpointing`.
    ///
    /// # Errors
    /// [`NoEstimate`] when `axolotl_extra` sets `deepspeed`, `fsdp` or `fsdp_config`, or
    /// one of the four keys with a value of the wrong type.
    pub fn of(training: &Training) -> Result<Self, NoEstimate> {
        let extra = &training.axolotl_extra;
        if let Some(key) = ["deepspeed", "fsdp", "fsdp_config"]
            .into_iter()
            .find(|k| extra.contains_key(*k))
        {
            return Err(NoEstimate::Sharded(key.to_owned()));
        }
        let number = |key: &'static str, default: u32| match extra.get(key) {
            None => Ok(u64::from(default)),
            Some(toml::Value::Integer(n)) if *n > 0 => Ok(n.unsigned_abs()),
            Some(_) => Err(NoEstimate::BadExtra {
                key,
                expected: "a positive integer",
            }),
        };
        let optimizer = match extra.get("optimizer") {
            None => training.optimizer.clone(),
            Some(toml::Value::String(name)) => name.clone(),
            Some(_) => {
                return Err(NoEstimate::BadExtra {
                    key: "optimizer",
                    expected: "a string",
                });
            }
        };
        let checkpointing = match extra.get("gradient_checkpointing") {
            Some(toml::Value::Boolean(on)) => *on,
            // Axolotl also takes "unsloth" and "offload": checkpointing on.
            None | Some(toml::Value::String(_)) => true,
            Some(_) => {
                return Err(NoEstimate::BadExtra {
                    key: "gradient_checkpointing",
                    expected: "a boolean",
                });
            }
        };
        Ok(Self {
            adapter: training.adapter,
            lora_r: u64::from(training.lora_r),
            micro_batch: number("micro_batch_size", training.micro_batch_size)?,
            sequence_len: number("sequence_len", training.sequence_len)?,
            optimizer,
            checkpointing,
        })
    }
}

/// The memory needed per GPU, in GB (10^9 bytes): weights, gradients and optimizer
/// state of the trained parameters, activations, logits, plus 2 GB, times 1.2 (POD-18).
#[must_use]
#[allow(
    clippy::cast_precision_loss,
    reason = "byte counts of models, far below 2^52"
)]
pub fn estimate_gb(shape: Shape, load: &Load) -> f64 {
    let params = shape.parameters as f64;
    let hidden_layers = shape.hidden as f64 * shape.layers as f64;
    let tokens = load.micro_batch as f64 * load.sequence_len as f64;
    let weights = match load.adapter {
        AdapterKind::Qlora => 0.6 * params,
        AdapterKind::Lora | AdapterKind::Full => 2.0 * params,
    };
    let trained = match load.adapter {
        AdapterKind::Full => params,
        AdapterKind::Lora | AdapterKind::Qlora => 18.0 * load.lora_r as f64 * hidden_layers,
    };
    let per_trained = if load.optimizer.contains("8bit") {
        10.0
    } else {
        16.0
    };
    let activations = tokens * hidden_layers * 2.0 * if load.checkpointing { 1.0 } else { 17.0 };
    let logits = tokens * shape.vocab as f64 * 4.0;
    (weights + trained * per_trained + activations + logits + 2e9) * 1.2 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Llama-3.1-8B's shape.
    const LLAMA_8B: Shape = Shape {
        parameters: 8_030_261_248,
        hidden: 4096,
        layers: 32,
        vocab: 128_256,
    };

    fn load(adapter: AdapterKind, optimizer: &str, checkpointing: bool) -> Load {
        Load {
            adapter,
            lora_r: 16,
            micro_batch: 2,
            sequence_len: 2048,
            optimizer: optimizer.into(),
            checkpointing,
        }
    }

    #[test]
    fn the_estimate_follows_the_formula_for_each_adapter_and_optimizer() {
        // By hand: weights 16.06e9; LoRA trained 18·16·4096·32 = 37,748,736 × 16 bytes;
        // activations 2·2048·4096·32·2; logits 2·2048·128256·4; + 2e9; × 1.2.
        let lora = 2.0 * 8_030_261_248.0
            + 37_748_736.0 * 16.0
            + 2.0 * 2048.0 * 4096.0 * 32.0 * 2.0
            + 2.0 * 2048.0 * 128_256.0 * 4.0;
        let cases = [
            (
                load(AdapterKind::Lora, "adamw_torch", true),
                (lora + 2e9) * 1.2 / 1e9,
            ),
            (
                load(AdapterKind::Qlora, "paged_adamw_8bit", true),
                (0.6 * 8_030_261_248.0
                    + 37_748_736.0 * 10.0
                    + 2.0 * 2048.0 * 4096.0 * 32.0 * 2.0
                    + 2.0 * 2048.0 * 128_256.0 * 4.0
                    + 2e9)
                    * 1.2
                    / 1e9,
            ),
            (
                load(AdapterKind::Full, "adamw_torch", false),
                (2.0 * 8_030_261_248.0
                    + 8_030_261_248.0 * 16.0
                    + 17.0 * 2.0 * 2048.0 * 4096.0 * 32.0 * 2.0
                    + 2.0 * 2048.0 * 128_256.0 * 4.0
                    + 2e9)
                    * 1.2
                    / 1e9,
            ),
        ];
        for (load, want) in cases {
            let got = estimate_gb(LLAMA_8B, &load);
            assert!((got - want).abs() < 1e-9, "{load:?}: {got} != {want}");
        }
        // A LoRA run of an 8B model fits a 40 GB card, not a 24 GB one.
        let got = estimate_gb(LLAMA_8B, &load(AdapterKind::Lora, "adamw_torch", true));
        assert!(got > 24.0 && got < 40.0, "{got}");
    }

    #[test]
    fn axolotl_extra_wins_and_sharding_gives_no_estimate() {
        let mut training: Training = toml::from_str(
            "target = \"pod\"\nbase_model = \"org/model\"\nadapter = \"lora\"\nmicro_batch_size = 4",
        )
        .unwrap();
        let base = Load::of(&training).unwrap();
        assert_eq!((base.micro_batch, base.checkpointing), (4, true));
        let extra: toml::Table = toml::from_str(
            "micro_batch_size = 8\nsequence_len = 4096\noptimizer = \"adamw_bnb_8bit\"\ngradient_checkpointing = false",
        )
        .unwrap();
        training.axolotl_extra = extra;
        let load = Load::of(&training).unwrap();
        assert_eq!(
            (
                load.micro_batch,
                load.sequence_len,
                load.optimizer.as_str(),
                load.checkpointing
            ),
            (8, 4096, "adamw_bnb_8bit", false)
        );
        for key in ["deepspeed", "fsdp", "fsdp_config"] {
            let mut sharded = training.clone();
            sharded
                .axolotl_extra
                .insert(key.into(), toml::Value::String("x".into()));
            assert_eq!(Load::of(&sharded), Err(NoEstimate::Sharded(key.into())));
        }
        training
            .axolotl_extra
            .insert("micro_batch_size".into(), toml::Value::String("8".into()));
        assert!(matches!(
            Load::of(&training),
            Err(NoEstimate::BadExtra {
                key: "micro_batch_size",
                ..
            })
        ));
    }
}

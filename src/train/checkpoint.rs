//! Whether a checkpoint directory holds what a resume needs (RUN-30, RUN-35): the state
//! Hugging Face's `Trainer` reads back in `_load_from_checkpoint`,
//! `_load_optimizer_and_scheduler` and `_load_rng_state` (Transformers 5.16, which
//! Axolotl 0.19 runs). Without `trainer_state.json` the resume fails in Axolotl half a
//! minute after the start (Axolotl #1631, Transformers #35782); without the optimizer,
//! scheduler or RNG state the `Trainer` logs a line and goes on from fresh state, which
//! is not a resume.
//!
//! What Axolotl 0.19 writes into `checkpoint-N/` of a LoRA run on one device:
//! `adapter_config.json`, `adapter_model.safetensors`, `optimizer.pt`, `scheduler.pt`,
//! `rng_state.pth`, `trainer_state.json`, `training_args.bin`, the tokenizer files and
//! `tokens_state.json`. A run on several devices writes `rng_state_<rank>.pth` instead,
//! a full fine-tune `model.safetensors` (or shards listed in
//! `model.safetensors.index.json`), FSDP an `optimizer_0/` and `pytorch_model_fsdp_0/`
//! directory, `DeepSpeed` a `global_step<N>/` directory holding optimizer and scheduler.
//! Each of these layouts counts as complete.

use std::path::Path;

/// Reads the checkpoint directory `dir` and lists what a resume needs but does not
/// find, each as a short phrase naming the file (for example `` `optimizer.pt` (the
/// optimizer state) ``). An empty list means the checkpoint is complete. The step in
/// `trainer_state.json` (`global_step`) must be the `N` of a directory named
/// `checkpoint-N`.
///
/// # Errors
///
/// An I/O error when `dir` cannot be listed (a missing `dir` is one).
pub fn missing(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let meta = std::fs::metadata(entry.path())?;
        if meta.is_dir() {
            dirs.push(name);
        } else if meta.len() > 0 {
            files.push(name);
        }
    }
    let step = dir
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("checkpoint-"))
        .and_then(|n| n.parse::<u64>().ok());
    let state = if files.iter().any(|f| f == TRAINER_STATE) {
        Some(std::fs::read(dir.join(TRAINER_STATE))?)
    } else {
        None
    };
    let shards = |index: &str| -> Option<Vec<String>> {
        let text = std::fs::read(dir.join(index)).ok()?;
        let value: serde_json::Value = serde_json::from_slice(&text).ok()?;
        let map = value.get("weight_map")?.as_object()?;
        let mut names: Vec<String> = map
            .values()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        names.sort();
        names.dedup();
        Some(names)
    };
    let listing = Listing {
        files: &files,
        dirs: &dirs,
        step,
        trainer_state: state.as_deref(),
        shards: &shards,
    };
    Ok(listing.missing())
}

/// The file of the `Trainer`'s own state.
pub const TRAINER_STATE: &str = "trainer_state.json";

/// Weight files that stand alone, each with the file it also needs (`None`: nothing).
const WEIGHTS: [(&str, Option<&str>); 4] = [
    ("adapter_model.safetensors", Some("adapter_config.json")),
    ("adapter_model.bin", Some("adapter_config.json")),
    ("model.safetensors", None),
    ("pytorch_model.bin", None),
];

/// Index files of sharded weights.
const WEIGHT_INDEXES: [&str; 2] = [
    "model.safetensors.index.json",
    "pytorch_model.bin.index.json",
];

/// A checkpoint directory as [`missing`] sees it: its non-empty files and its
/// directories by name, the step of its name, the bytes of its `trainer_state.json`,
/// and the shard files an index names.
struct Listing<'a> {
    files: &'a [String],
    dirs: &'a [String],
    step: Option<u64>,
    trainer_state: Option<&'a [u8]>,
    shards: &'a dyn Fn(&str) -> Option<Vec<String>>,
}

impl Listing<'_> {
    fn has(&self, name: &str) -> bool {
        self.files.iter().any(|f| f == name)
    }

    fn missing(&self) -> Vec<String> {
        let mut missing = Vec::new();
        missing.extend(self.trainer_state());
        let deepspeed = self.dirs.iter().any(|d| d.starts_with("global_step"));
        let optimizer = self.has("optimizer.pt")
            || self.has("optimizer.bin")
            || self.files.iter().any(|f| f.starts_with("optimizer.pt_"))
            || self.dirs.iter().any(|d| d.starts_with("optimizer"))
            || deepspeed;
        if !optimizer {
            missing.push("`optimizer.pt` (the optimizer state)".to_owned());
        }
        if !self.has("scheduler.pt") && !deepspeed {
            missing.push("`scheduler.pt` (the learning-rate scheduler state)".to_owned());
        }
        let rng = self.files.iter().any(|f| {
            f == "rng_state.pth"
                || f.strip_prefix("rng_state_")
                    .and_then(|rest| rest.strip_suffix(".pth"))
                    .is_some_and(|rank| {
                        !rank.is_empty() && rank.bytes().all(|b| b.is_ascii_digit())
                    })
        });
        if !rng {
            missing.push("`rng_state.pth` (the random number generator state)".to_owned());
        }
        missing.extend(self.weights());
        missing
    }

    /// What `trainer_state.json` lacks: the file, a JSON object, or its step.
    fn trainer_state(&self) -> Option<String> {
        let Some(bytes) = self.trainer_state else {
            return Some(format!("`{TRAINER_STATE}` (the trainer's state)"));
        };
        let bytes = crate::dataset::jsonl::strip_bom(bytes);
        let Ok(serde_json::Value::Object(state)) = serde_json::from_slice(bytes) else {
            return Some(format!(
                "a readable `{TRAINER_STATE}` (it is not a JSON object)"
            ));
        };
        match (
            self.step,
            state.get("global_step").and_then(serde_json::Value::as_u64),
        ) {
            (_, None) => Some(format!("a `global_step` in `{TRAINER_STATE}`")),
            (Some(step), Some(global)) if step != global => Some(format!(
                "a `{TRAINER_STATE}` of step {step} (it says step {global})"
            )),
            _ => None,
        }
    }

    /// What the model weights lack; nothing when one complete layout is there.
    fn weights(&self) -> Vec<String> {
        for (file, companion) in WEIGHTS {
            if self.has(file) {
                return match companion {
                    Some(companion) if !self.has(companion) => {
                        vec![format!("`{companion}` (beside `{file}`)")]
                    }
                    _ => Vec::new(),
                };
            }
        }
        for index in WEIGHT_INDEXES {
            if self.has(index) {
                return match (self.shards)(index) {
                    None => vec![format!("a readable `{index}`")],
                    Some(shards) => shards
                        .into_iter()
                        .filter(|shard| !self.has(shard))
                        .map(|shard| format!("`{shard}` (a shard named in `{index}`)"))
                        .collect(),
                };
            }
        }
        if self.has("pytorch_model_fsdp.bin")
            || self
                .dirs
                .iter()
                .any(|d| d.starts_with("pytorch_model_fsdp"))
        {
            return Vec::new();
        }
        vec!["the model weights (`adapter_model.safetensors`, `model.safetensors` or `pytorch_model.bin`)".to_owned()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Axolotl 0.19 wrote into `checkpoint-2/` of a LoRA run on this machine's CPU.
    const AXOLOTL_LORA: [&str; 13] = [
        "README.md",
        "adapter_config.json",
        "adapter_model.safetensors",
        "chat_template.jinja",
        "optimizer.pt",
        "rng_state.pth",
        "scheduler.pt",
        "tokenizer.json",
        "tokenizer_config.json",
        "tokens_state.json",
        "trainer_state.json",
        "training_args.bin",
        "extra.txt",
    ];

    fn checkpoint(files: &[&str], dirs: &[&str]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("checkpoint-2");
        std::fs::create_dir(&dir).unwrap();
        for file in files {
            let content = if *file == TRAINER_STATE {
                "{\"global_step\": 2, \"log_history\": []}"
            } else {
                "x"
            };
            std::fs::write(dir.join(file), content).unwrap();
        }
        for sub in dirs {
            std::fs::create_dir(dir.join(sub)).unwrap();
        }
        root
    }

    fn without(files: &[&'static str], gone: &[&str]) -> Vec<&'static str> {
        files
            .iter()
            .copied()
            .filter(|f| !gone.contains(f))
            .collect()
    }

    fn missing_of(root: &tempfile::TempDir) -> Vec<String> {
        missing(&root.path().join("checkpoint-2")).unwrap()
    }

    #[test]
    fn what_axolotl_writes_is_complete_and_each_part_is_required() {
        assert_eq!(
            missing_of(&checkpoint(&AXOLOTL_LORA, &[])),
            Vec::<String>::new()
        );
        for (gone, named) in [
            (&["trainer_state.json"][..], "`trainer_state.json`"),
            (&["optimizer.pt"][..], "`optimizer.pt`"),
            (&["scheduler.pt"][..], "`scheduler.pt`"),
            (&["rng_state.pth"][..], "`rng_state.pth`"),
            (&["adapter_config.json"][..], "`adapter_config.json`"),
            (&["adapter_model.safetensors"][..], "the model weights"),
        ] {
            let got = missing_of(&checkpoint(&without(&AXOLOTL_LORA, gone), &[]));
            assert_eq!(got.len(), 1, "{gone:?}: {got:?}");
            assert!(got[0].contains(named), "{gone:?}: {got:?}");
        }
        let got = missing_of(&checkpoint(
            &without(&AXOLOTL_LORA, &["trainer_state.json", "optimizer.pt"]),
            &[],
        ));
        assert_eq!(got.len(), 2, "{got:?}");
    }

    #[test]
    fn an_empty_or_foreign_trainer_state_is_not_complete() {
        let root = checkpoint(&AXOLOTL_LORA, &[]);
        let state = root.path().join("checkpoint-2").join(TRAINER_STATE);
        for (content, named) in [
            ("", "`trainer_state.json` (the trainer's state)"),
            ("{\"global_st", "it is not a JSON object"),
            ("{\"global_step\": 7}", "it says step 7"),
            ("{}", "a `global_step`"),
        ] {
            std::fs::write(&state, content).unwrap();
            let got = missing_of(&root);
            assert_eq!(got.len(), 1, "{content}: {got:?}");
            assert!(got[0].contains(named), "{content}: {got:?}");
        }
        std::fs::write(&state, "\u{feff}{\"global_step\": 2}").unwrap();
        assert!(missing_of(&root).is_empty());
        assert!(missing(&root.path().join("checkpoint-9")).is_err());
    }

    #[test]
    fn multi_device_full_fsdp_and_deepspeed_layouts_are_complete() {
        let ranks = [
            "adapter_config.json",
            "adapter_model.safetensors",
            "optimizer.pt",
            "scheduler.pt",
            "rng_state_0.pth",
            "rng_state_1.pth",
            "trainer_state.json",
        ];
        assert!(missing_of(&checkpoint(&ranks, &[])).is_empty());
        let bad_rank = [
            "rng_state_x.pth",
            "optimizer.pt",
            "scheduler.pt",
            "model.safetensors",
            "trainer_state.json",
        ];
        assert_eq!(missing_of(&checkpoint(&bad_rank, &[])).len(), 1);
        let fsdp = ["scheduler.pt", "rng_state_0.pth", "trainer_state.json"];
        assert!(
            missing_of(&checkpoint(&fsdp, &["optimizer_0", "pytorch_model_fsdp_0"])).is_empty()
        );
        let deepspeed = [
            "rng_state.pth",
            "trainer_state.json",
            "model.safetensors",
            "latest",
        ];
        assert!(missing_of(&checkpoint(&deepspeed, &["global_step2"])).is_empty());
    }

    #[test]
    fn every_shard_an_index_names_must_be_there() {
        let files = [
            "optimizer.pt",
            "scheduler.pt",
            "rng_state.pth",
            "trainer_state.json",
            "model-00001-of-00002.safetensors",
        ];
        let root = checkpoint(&files, &[]);
        let index = root
            .path()
            .join("checkpoint-2/model.safetensors.index.json");
        std::fs::write(
            &index,
            r#"{"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors", "c": "model-00001-of-00002.safetensors"}}"#,
        )
        .unwrap();
        let got = missing_of(&root);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].contains("`model-00002-of-00002.safetensors`"),
            "{got:?}"
        );
        std::fs::write(
            root.path()
                .join("checkpoint-2/model-00002-of-00002.safetensors"),
            "x",
        )
        .unwrap();
        assert!(missing_of(&root).is_empty());
        std::fs::write(&index, "not json").unwrap();
        assert!(missing_of(&root)[0].contains("a readable `model.safetensors.index.json`"));
    }
}

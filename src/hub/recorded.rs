//! The training settings a run recorded at its start: the top-level scalars of its
//! `runs/<run-id>/axolotl.yaml`, kept as written (AXO-9). The card reads them, so it says
//! how the run was trained even when `[training]` changed since.

use std::collections::BTreeMap;
use std::path::Path;

use crate::train::axolotl::AXOLOTL_YAML;

/// A run's recorded top-level `key: value` scalars (nested entries left out).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recorded {
    entries: BTreeMap<String, String>,
}

impl Recorded {
    /// The scalars of an `axolotl.yaml` overbrainer wrote: a double-quoted value is
    /// unquoted (JSON's escapes), a plain one kept as written; comments, keys without a
    /// value on their line and indented lines are left out.
    #[must_use]
    pub fn parse(text: &str) -> Self {
        let entries = text
            .lines()
            .filter(|line| !line.starts_with([' ', '#', '-']))
            .filter_map(|line| {
                let (key, value) = line.split_once(':')?;
                let value = value.trim();
                if key.is_empty() || value.is_empty() {
                    return None;
                }
                let value = if value.starts_with('"') {
                    serde_json::from_str::<String>(value).ok()?
                } else {
                    value.to_owned()
                };
                Some((key.to_owned(), value))
            })
            .collect();
        Self { entries }
    }

    /// The record of the run in `run_dir`; `None` when it has no readable `axolotl.yaml`.
    #[must_use]
    pub fn read(run_dir: &Path) -> Option<Self> {
        std::fs::read_to_string(run_dir.join(AXOLOTL_YAML))
            .ok()
            .map(|text| Self::parse(&text))
    }

    /// The value of `key`, as recorded.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries.get(key).map(String::as_str)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parse_reads_top_level_scalars_unquoting_strings_and_skips_nested_entries() {
        let recorded = Recorded::parse(
            "# Written by overbrainer at the start of the run; kept as written (AXO-9).\nbase_model: \"/models/tiny: one\"\nadapter: lora\nlearning_rate: 0.001\nnum_epochs: 2\nsample_packing: false\ndatasets:\n- path: train.jsonl\n  type: chat_template\nplugins:\n  - x\n",
        );
        assert_eq!(recorded.get("base_model"), Some("/models/tiny: one"));
        assert_eq!(recorded.get("adapter"), Some("lora"));
        assert_eq!(recorded.get("learning_rate"), Some("0.001"));
        assert_eq!(recorded.get("num_epochs"), Some("2"));
        assert_eq!(recorded.get("sample_packing"), Some("false"));
        assert_eq!(recorded.get("datasets"), None);
        assert_eq!(recorded.get("path"), None);
        assert_eq!(recorded.get("type"), None);
    }
}

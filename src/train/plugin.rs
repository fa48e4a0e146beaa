//! The metrics plugin: a Python module shipped inside the binary and written into each
//! run directory, which Axolotl loads through the `plugins:` list (spec/training.md,
//! MPL-1). Its source is `metrics_plugin.py` next to this file; its behaviour is
//! described there.

/// Source of the plugin module.
pub const PLUGIN_SOURCE: &str = include_str!("metrics_plugin.py");
/// File name of the plugin in the run directory; the job runs there, so Python finds
/// it as the module `overbrainer_metrics`.
pub const PLUGIN_FILE: &str = "overbrainer_metrics.py";
/// The plugin's entry in Axolotl's `plugins:` list, `module.Class`
/// (`axolotl.integrations.base.load_plugin`).
pub const PLUGIN_ENTRY: &str = "overbrainer_metrics.MetricsPlugin";
/// File whose presence asks the plugin for a snapshot (MPL-5), in the run directory.
pub const SNAPSHOT_REQUEST: &str = "snapshot.request";
/// File the plugin writes once a snapshot checkpoint was saved, in the run directory:
/// `{"checkpoint": "checkpoint-N", "step": N, "reason": "cost"}` (`reason` since issue 12).
pub const SNAPSHOT_FILE: &str = "snapshot.json";

/// `snapshot.json` as the plugin writes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SnapshotFile {
    /// Directory name of the checkpoint under `output/`, `checkpoint-N`.
    pub checkpoint: String,
    /// Optimizer step of the checkpoint.
    pub step: u64,
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests run real programs and read the test environment"
)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn the_plugin_is_valid_python_with_the_names_we_use() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(PLUGIN_FILE);
        std::fs::write(&path, PLUGIN_SOURCE).unwrap();
        let output = Command::new("python3")
            .args(["-m", "py_compile"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let (module, class) = PLUGIN_ENTRY.rsplit_once('.').unwrap();
        assert_eq!(format!("{module}.py"), PLUGIN_FILE);
        assert!(PLUGIN_SOURCE.contains(&format!("class {class}(BasePlugin)")));
        for name in [
            SNAPSHOT_REQUEST,
            SNAPSHOT_FILE,
            super::super::metrics::METRICS_FILE,
        ] {
            assert!(PLUGIN_SOURCE.contains(&format!("\"{name}\"")), "{name}");
        }
    }
}

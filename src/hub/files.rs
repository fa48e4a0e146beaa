//! Which files of a run's `output/` a push uploads and where they land in the repo
//! (HUB-3, HUB-4).

use std::path::{Path, PathBuf};

use super::HubError;

/// One file to upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFile {
    /// Where it is on disk.
    pub local: PathBuf,
    /// Its path in the repo (`/`-separated).
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
}

/// The directory under `output/` whose files go to the repo root (HUB-4).
pub const GGUF_DIR: &str = "gguf";

/// The files of `output` to upload, sorted by their path in the repo: every file except
/// `checkpoint-*` directories, `debug.log`, hidden files and any `README.md` that would land
/// at the repo root (Axolotl's own among them); `gguf/`'s files go to the root.
///
/// # Errors
///
/// [`HubError::Io`] when `output` cannot be read, [`HubError::Clash`] when two files would
/// land on the same repo path.
pub fn select(output: &Path) -> Result<Vec<PlannedFile>, HubError> {
    let mut out = Vec::new();
    walk(output, output, &mut out)?;
    out.sort_by(|a, b| a.path.cmp(&b.path));
    for pair in out.windows(2) {
        if pair[0].path == pair[1].path {
            return Err(HubError::Clash {
                path: pair[0].path.clone(),
                first: pair[0].local.clone(),
                second: pair[1].local.clone(),
            });
        }
    }
    Ok(out)
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<PlannedFile>) -> Result<(), HubError> {
    let io = |source| HubError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries = std::fs::read_dir(dir)
        .map_err(io)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(io)?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if name.starts_with('.') {
            continue;
        }
        let meta = std::fs::metadata(&path).map_err(|source| HubError::Io {
            path: path.clone(),
            source,
        })?;
        if meta.is_dir() {
            if name.starts_with("checkpoint-") {
                continue;
            }
            walk(root, &path, out)?;
            continue;
        }
        if !meta.is_file() || name == "debug.log" {
            continue;
        }
        let Some(path_in_repo) = repo_path(root, &path) else {
            continue;
        };
        out.push(PlannedFile {
            local: path,
            path: path_in_repo,
            size: meta.len(),
        });
    }
    Ok(())
}

/// The repo path of `file` under `root`, or `None` when it is not uploaded (a `README.md`
/// landing at the root).
fn repo_path(root: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(root).ok()?;
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.len() == 2 && parts[0] == GGUF_DIR {
        parts.remove(0);
    }
    if parts.len() == 1 && parts[0] == "README.md" {
        return None;
    }
    Some(parts.join("/"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn tree(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for file in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, file.as_bytes()).unwrap();
        }
        dir
    }

    #[test]
    fn select_leaves_out_checkpoints_debug_log_hidden_files_and_root_readmes() {
        let dir = tree(&[
            "adapter_config.json",
            "adapter_model.safetensors",
            "README.md",
            "debug.log",
            ".hidden",
            "checkpoint-4/adapter_model.safetensors",
            "merged/model.safetensors",
            "merged/README.md",
            "merged/.cache/x",
            "gguf/child-Q4_K_M.gguf",
            "gguf/Modelfile",
            "gguf/README.md",
        ]);
        let paths: Vec<String> = select(dir.path())
            .unwrap()
            .into_iter()
            .map(|f| f.path)
            .collect();
        assert_eq!(
            paths,
            [
                "Modelfile",
                "adapter_config.json",
                "adapter_model.safetensors",
                "child-Q4_K_M.gguf",
                "merged/README.md",
                "merged/model.safetensors",
            ]
        );
    }

    #[test]
    fn select_refuses_a_gguf_file_clashing_with_a_root_file() {
        let dir = tree(&["Modelfile", "gguf/Modelfile"]);
        let error = select(dir.path()).unwrap_err();
        assert!(error.to_string().contains("Modelfile"), "{error}");
    }

    #[test]
    fn select_gives_sizes() {
        let dir = tree(&["a.json"]);
        assert_eq!(select(dir.path()).unwrap()[0].size, 6);
    }
}

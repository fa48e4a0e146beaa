//! SHA-256 manifests of run files: computed on the target by a POSIX shell script,
//! or here by [`local_manifest`], with one exclusion rule for both.
//!
//! A retrieval checks every downloaded file against the target's manifest
//! (spec/training.md, RUN-23), so both sides must list the same files: regular
//! files only, symbolic links not followed, and a name matching an `exclude`
//! pattern left out at any depth together with everything under it.

use std::io::Read;
use std::path::{Component, Path};

use sha2::{Digest, Sha256};

use super::ExecError;
use super::script::{quote, truncate};

/// One regular file of a manifest.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct FileDigest {
    /// Path relative to the manifest's root, `/`-separated, never absolute and
    /// without `.` or `..` components.
    pub path: String,
    /// SHA-256 of the content, 64 lowercase hexadecimal digits.
    pub sha256: String,
}

/// Whether the file name `name` (one path component) matches the glob `pattern`:
/// `*` matches any run of characters, `?` one character, `[...]` a set, as
/// `fnmatch(3)` and `find -name` do (through `globset`, without any special
/// meaning for `/`). An invalid pattern matches only itself.
#[must_use]
pub fn glob_match(pattern: &str, name: &str) -> bool {
    globset::GlobBuilder::new(pattern)
        .literal_separator(false)
        .backslash_escape(true)
        .build()
        .map_or(pattern == name, |glob| {
            glob.compile_matcher().is_match(name)
        })
}

/// The SHA-256 of the file `path`, as 64 lowercase hexadecimal digits.
///
/// # Errors
///
/// Returns [`ExecError::Io`] when the file cannot be read.
pub fn sha256_file(path: &Path) -> Result<String, ExecError> {
    let io = |source| ExecError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0_u8; 1 << 20];
    loop {
        let read = file.read(&mut buffer).map_err(io)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// The same list as [`super::Executor::manifest`] for the local directory `root`:
/// every regular file under `entries` (relative to `root`), names matching an
/// `exclude` pattern left out at any depth (an entry itself by its last name, as
/// `find -name` does), missing entries skipped, symbolic
/// links not followed, sorted by path.
///
/// # Errors
///
/// Returns [`ExecError::Io`] when a directory or file cannot be read, and
/// [`ExecError::Protocol`] for an entry that is absolute, holds `..` or names a
/// file whose path is not UTF-8.
pub fn local_manifest(
    root: &Path,
    entries: &[String],
    exclude: &[String],
) -> Result<Vec<FileDigest>, ExecError> {
    let mut digests = Vec::new();
    for entry in entries {
        let relative = checked_relative(entry)?;
        if relative.is_empty() {
            walk(root, root, exclude, &mut digests)?;
            continue;
        }
        let last = relative.rsplit('/').next().unwrap_or_default();
        if exclude.iter().any(|pattern| glob_match(pattern, last)) {
            continue;
        }
        walk(root, &root.join(&relative), exclude, &mut digests)?;
    }
    digests.sort();
    digests.dedup();
    Ok(digests)
}

fn walk(
    root: &Path,
    path: &Path,
    exclude: &[String],
    out: &mut Vec<FileDigest>,
) -> Result<(), ExecError> {
    let io = |source| ExecError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(io(error)),
    };
    if meta.is_file() {
        let relative = path
            .strip_prefix(root)
            .ok()
            .and_then(Path::to_str)
            .ok_or_else(|| {
                ExecError::Protocol(format!("file name is not UTF-8: {}", path.display()))
            })?;
        out.push(FileDigest {
            path: relative.to_owned(),
            sha256: sha256_file(path)?,
        });
    } else if meta.is_dir() {
        for child in std::fs::read_dir(path).map_err(io)? {
            let child = child.map_err(io)?;
            let name = child.file_name();
            let name = name.to_string_lossy();
            if exclude.iter().any(|pattern| glob_match(pattern, &name)) {
                continue;
            }
            walk(root, &child.path(), exclude, out)?;
        }
    }
    Ok(())
}

/// Checks a relative entry and returns it without `.` components, `/`-separated;
/// empty for the root itself.
pub(crate) fn checked_relative(entry: &str) -> Result<String, ExecError> {
    let path = Path::new(entry);
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(ExecError::Protocol(format!(
                    "path `{}` is absolute or leaves its directory",
                    truncate(entry, 200)
                )));
            }
        }
    }
    Ok(parts.join("/"))
}

/// A POSIX shell script that prints the manifest of `entries` under `remote` in the
/// format of `sha256sum` (GNU coreutils): `<hex>  ./<path>` per file, with a
/// leading `\` and `\\`, `\n`, `\r` escapes when the name holds one of those.
/// It exits 3 with `<remote> does not exist` on standard error when `remote` is not
/// a directory. Files are found with `find -print0 | xargs -0 sha256sum`
/// (POSIX.1-2024), names matching an `exclude` pattern pruned with `-name`.
#[must_use]
pub fn manifest_script(remote: &str, entries: &[String], exclude: &[String]) -> String {
    let prune = prune_expression(exclude);
    format!(
        r#"cd {remote} 2>/dev/null || {{ printf '%s does not exist\n' {remote} >&2; exit 3; }}
set --
for ob_e in {entries}; do
  if [ -e "./$ob_e" ] || [ -L "./$ob_e" ]; then set -- "$@" "./$ob_e"; fi
done
[ "$#" -eq 0 ] && exit 0
find "$@" {prune}-type f -print0 | LC_ALL=C xargs -0 -r sha256sum --
"#,
        remote = quote(remote),
        entries = entries_words(entries),
    )
}

/// The `find` expression that prunes excluded names, ending in `-o ` when there is
/// one; empty otherwise.
pub(crate) fn prune_expression(exclude: &[String]) -> String {
    if exclude.is_empty() {
        return String::new();
    }
    let names: Vec<String> = exclude
        .iter()
        .map(|pattern| format!("-name {}", quote(pattern)))
        .collect();
    format!("\\( {} \\) -prune -o ", names.join(" -o "))
}

/// The entries as shell words, an empty root entry written `.`.
pub(crate) fn entries_words(entries: &[String]) -> String {
    entries
        .iter()
        .map(|entry| {
            let trimmed = entry.trim_start_matches("./");
            quote(if trimmed.is_empty() { "." } else { trimmed })
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Reads the output of [`manifest_script`] into digests sorted by path.
///
/// # Errors
///
/// Returns [`ExecError::Protocol`] for a line that is not `<64 hex digits>  <path>`,
/// a path that is absolute or holds `..`, or output that is not UTF-8.
pub fn parse_manifest(output: &[u8]) -> Result<Vec<FileDigest>, ExecError> {
    let text = std::str::from_utf8(output)
        .map_err(|_| ExecError::Protocol("manifest is not UTF-8".to_owned()))?;
    let mut digests = Vec::new();
    for line in text.split('\n').filter(|line| !line.is_empty()) {
        let (escaped, line) = match line.strip_prefix('\\') {
            Some(rest) => (true, rest),
            None => (false, line),
        };
        let bad = || ExecError::Protocol(format!("manifest line `{}`", truncate(line, 120)));
        let (hash, name) = line.split_at_checked(64).ok_or_else(bad)?;
        let name = name
            .strip_prefix("  ")
            .or_else(|| name.strip_prefix(" *"))
            .ok_or_else(bad)?;
        if !hash
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(bad());
        }
        let name = if escaped {
            unescape(name).ok_or_else(bad)?
        } else {
            name.to_owned()
        };
        if name.starts_with('/') {
            return Err(ExecError::Protocol(format!(
                "manifest path `{}` is absolute",
                truncate(&name, 200)
            )));
        }
        let path = checked_relative(&name)?;
        if path.is_empty() {
            return Err(bad());
        }
        digests.push(FileDigest {
            path,
            sha256: hash.to_owned(),
        });
    }
    digests.sort();
    digests.dedup();
    Ok(digests)
}

/// Undoes the escapes of `sha256sum` (`\\`, `\n`, `\r`).
fn unescape(name: &str) -> Option<String> {
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next()? {
                '\\' => out.push('\\'),
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HASH: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn parse_manifest_reads_sha256sum_lines() {
        let text = format!("{HASH}  ./a b\n\\{HASH}  ./new\\nline\\\\x\n");
        let digests = parse_manifest(text.as_bytes()).unwrap();
        assert_eq!(digests.len(), 2);
        assert_eq!(digests[0].path, "a b");
        assert_eq!(digests[1].path, "new\nline\\x");
    }

    #[test]
    fn parse_manifest_refuses_escaping_paths() {
        for name in ["/etc/passwd", "./../x", "a/../../b", ".."] {
            let text = format!("{HASH}  {name}\n");
            assert!(parse_manifest(text.as_bytes()).is_err(), "{name}");
        }
        assert!(parse_manifest(b"nothex  ./a\n").is_err());
    }

    #[test]
    fn glob_match_is_per_name() {
        assert!(glob_match("checkpoint-*", "checkpoint-12"));
        assert!(!glob_match("checkpoint-*", "output"));
        assert!(glob_match("*.bin", "a.bin"));
        assert!(glob_match("a?c", "abc"));
    }

    #[test]
    fn local_manifest_matches_the_script() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("out/checkpoint-2")).unwrap();
        std::fs::create_dir_all(root.join("out/empty")).unwrap();
        std::fs::write(root.join("out/a b.txt"), "hello").unwrap();
        std::fs::write(root.join("out/new\nline"), "").unwrap();
        std::fs::write(root.join("out/-dash"), "x").unwrap();
        std::fs::write(root.join("out/checkpoint-2/w"), "w").unwrap();
        std::fs::write(root.join("log"), "l").unwrap();
        std::os::unix::fs::symlink("log", root.join("out/link")).unwrap();
        let entries = vec!["out".to_owned(), "log".to_owned(), "missing".to_owned()];
        let exclude = vec!["checkpoint-*".to_owned()];
        let local = local_manifest(root, &entries, &exclude).unwrap();
        let script = manifest_script(&root.to_string_lossy(), &entries, &exclude);
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .output()
            .unwrap();
        assert!(output.status.success());
        let remote = parse_manifest(&output.stdout).unwrap();
        assert_eq!(local, remote);
        let paths: Vec<&str> = local.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["log", "out/-dash", "out/a b.txt", "out/new\nline"]);
    }

    proptest! {
        #[test]
        fn parse_manifest_round_trips(names in proptest::collection::btree_set("[a-z \\\\\n\u{e9}-]{1,12}", 0..6)) {
            let mut text = String::new();
            let mut expected = Vec::new();
            for name in &names {
                let clean = checked_relative(name).unwrap();
                if clean.is_empty() { continue; }
                let escaped = name.contains(['\\', '\n']);
                let written = name.replace('\\', "\\\\").replace('\n', "\\n");
                if escaped { text.push('\\'); }
                text.push_str(HASH);
                text.push_str("  ./");
                text.push_str(&written);
                text.push('\n');
                expected.push(FileDigest { path: clean, sha256: HASH.to_owned() });
            }
            expected.sort();
            expected.dedup();
            prop_assert_eq!(parse_manifest(text.as_bytes()).unwrap(), expected);
        }

        #[test]
        fn parse_manifest_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse_manifest(&bytes);
        }
    }
}

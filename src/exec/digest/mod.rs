//! SHA-256 manifests of run files: computed on the target by a POSIX shell script,
//! or here by [`local_manifest`], with one exclusion rule for both.
//!
//! A retrieval checks every downloaded entry against the target's manifest
//! (spec/training.md, RUN-23), so both sides must list the same entries: regular
//! files with the SHA-256 of their content, and symbolic links (never followed) with
//! their target; a name matching an `exclude` pattern is left out at any depth
//! together with everything under it.
//!
//! File names are bytes. A name that is not valid UTF-8 travels losslessly: the wire
//! format is read as bytes ([`parse_manifest`]), and a [`FileDigest`] keeps such a
//! name's bytes in [`FileDigest::raw_path`] beside a lossy [`FileDigest::path`] for
//! messages.
//!
//! A symbolic link is kept only when its target is relative and stays inside the
//! manifest's root, read lexically from the link's directory (`a/l -> ../b` is
//! `b`); any other link makes the whole manifest fail, naming the link, so a
//! retrieval never reports a tree as verified while a link of it points elsewhere.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use sha2::{Digest, Sha256};

mod remote;

pub(crate) use remote::{entries_words, prune_expression};
pub use remote::{manifest_script, parse_manifest};

use super::ExecError;
use super::script::truncate;

/// Marks a symbolic link's line in the output of [`manifest_script`]:
/// `L <hex of the path> <hex of the target and readlink's newline>`. A line of
/// `sha256sum` starts with a lowercase hexadecimal digit or `\`, never with `L`.
pub(super) const LINK_TAG: &[u8] = b"L ";

/// One entry of a manifest: a regular file with the SHA-256 of its content, or a
/// symbolic link with its target.
///
/// The seed's two fields keep their meaning for every regular file with a UTF-8
/// name; [`FileDigest::raw_path`] and [`FileDigest::link`] extend it (issue 8).
/// Build entries with [`FileDigest::file`] and [`FileDigest::symlink`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct FileDigest {
    /// Path relative to the manifest's root, `/`-separated, never absolute and
    /// without `.` or `..` components. When the name is not valid UTF-8, this is its
    /// lossy form (U+FFFD for each bad sequence), for messages only, and
    /// [`FileDigest::raw_path`] holds the bytes.
    pub path: String,
    /// SHA-256 of the content, 64 lowercase hexadecimal digits; for a symbolic
    /// link, the SHA-256 of its target's bytes.
    pub sha256: String,
    /// The path's bytes when they are not valid UTF-8; `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_path: Option<Vec<u8>>,
    /// For a symbolic link, its target's bytes: relative, and staying inside the
    /// manifest's root. `None` for a regular file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<Vec<u8>>,
}

impl FileDigest {
    /// A regular file at the relative path `path` (bytes, `/`-separated, already
    /// checked) with the SHA-256 `sha256`.
    #[must_use]
    pub fn file(path: &[u8], sha256: &str) -> Self {
        let (path, raw_path) = split_name(path);
        Self {
            path,
            sha256: sha256.to_owned(),
            raw_path,
            link: None,
        }
    }

    /// A symbolic link at the relative path `path` pointing at `target`.
    ///
    /// # Errors
    ///
    /// [`ExecError::Protocol`], naming the link and its target, when the target is
    /// empty, absolute, or leaves the manifest's root.
    pub fn symlink(path: &[u8], target: &[u8]) -> Result<Self, ExecError> {
        check_link(path, target)?;
        Ok(Self::any_symlink(path, target))
    }

    /// [`FileDigest::symlink`] without the check, for a list that
    /// [`refuse_escaping_links`] checks whole.
    pub(crate) fn any_symlink(path: &[u8], target: &[u8]) -> Self {
        let (path, raw_path) = split_name(path);
        Self {
            path,
            sha256: hex::encode(Sha256::digest(target)),
            raw_path,
            link: Some(target.to_vec()),
        }
    }

    /// The path's bytes, exactly as on the target.
    #[must_use]
    pub fn path_bytes(&self) -> &[u8] {
        self.raw_path.as_deref().unwrap_or(self.path.as_bytes())
    }

    /// The path as a relative [`Path`], byte for byte.
    #[must_use]
    pub fn relative_path(&self) -> &Path {
        Path::new(OsStr::from_bytes(self.path_bytes()))
    }

    /// The target of a symbolic link, byte for byte; `None` for a regular file.
    #[must_use]
    pub fn link_target(&self) -> Option<&Path> {
        self.link
            .as_deref()
            .map(|target| Path::new(OsStr::from_bytes(target)))
    }
}

/// A name as UTF-8 text, with its bytes beside it when it is not UTF-8.
pub(super) fn split_name(name: &[u8]) -> (String, Option<Vec<u8>>) {
    match std::str::from_utf8(name) {
        Ok(text) => (text.to_owned(), None),
        Err(_) => (
            String::from_utf8_lossy(name).into_owned(),
            Some(name.to_vec()),
        ),
    }
}

/// Refuses the symbolic link at the relative path `path` with target `target`
/// unless it stays inside the root of `path` (see [`link_stays_inside`]).
///
/// # Errors
///
/// [`ExecError::EscapingLinks`] naming the link and its target.
pub(crate) fn check_link(path: &[u8], target: &[u8]) -> Result<(), ExecError> {
    if link_stays_inside(path, target) {
        return Ok(());
    }
    Err(ExecError::EscapingLinks(vec![link_name(path, target)]))
}

/// `` `path` -> `target` `` of a symbolic link, for messages.
fn link_name(path: &[u8], target: &[u8]) -> String {
    format!(
        "`{}` -> `{}`",
        truncate(&String::from_utf8_lossy(path), 200),
        truncate(&String::from_utf8_lossy(target), 200),
    )
}

/// Refuses the list `digests` when any of its symbolic links leaves the tree, naming
/// every such link at once (the first 20, then how many more), so that one fix on
/// the target takes them all.
///
/// # Errors
///
/// [`ExecError::EscapingLinks`].
pub(crate) fn refuse_escaping_links(digests: &[FileDigest]) -> Result<(), ExecError> {
    const SHOWN: usize = 20;
    let escaping: Vec<String> = digests
        .iter()
        .filter_map(|digest| {
            let target = digest.link.as_deref()?;
            let path = digest.path_bytes();
            (!link_stays_inside(path, target)).then(|| link_name(path, target))
        })
        .collect();
    if escaping.is_empty() {
        return Ok(());
    }
    let more = escaping.len().saturating_sub(SHOWN);
    let mut shown: Vec<String> = escaping.into_iter().take(SHOWN).collect();
    if more > 0 {
        shown.push(format!("and {more} more"));
    }
    Err(ExecError::EscapingLinks(shown))
}

/// Whether the symbolic link at the relative path `path` with target `target` stays
/// inside the root of `path`, read lexically: the target is relative and its `..`
/// components never climb above the root from the link's directory.
#[must_use]
pub(crate) fn link_stays_inside(path: &[u8], target: &[u8]) -> bool {
    if target.is_empty() || target.starts_with(b"/") {
        return false;
    }
    let mut dirs: Vec<&[u8]> = path
        .split(|b| *b == b'/')
        .filter(|part| !part.is_empty() && *part != b".")
        .collect();
    dirs.pop();
    for part in target.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                if dirs.pop().is_none() {
                    return false;
                }
            }
            _ => dirs.push(part),
        }
    }
    true
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
/// every regular file and symbolic link under `entries` (relative to `root`), names
/// matching an `exclude` pattern left out at any depth (an entry itself by its last
/// name, as `find -name` does), missing entries skipped, symbolic links listed with
/// their target and not followed, sorted.
///
/// # Errors
///
/// Returns [`ExecError::Io`] when a directory or file cannot be read, and
/// [`ExecError::Protocol`] for an entry that is absolute or holds `..`, or a
/// symbolic link whose target leaves `root`.
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
    refuse_escaping_links(&digests)?;
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
    let relative = || {
        path.strip_prefix(root)
            .map(|relative| relative.as_os_str().as_bytes().to_vec())
            .map_err(|_| ExecError::Protocol(format!("`{}` is outside its root", path.display())))
    };
    if meta.is_file() {
        out.push(FileDigest::file(&relative()?, &sha256_file(path)?));
    } else if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path).map_err(io)?;
        out.push(FileDigest::any_symlink(
            &relative()?,
            target.as_os_str().as_bytes(),
        ));
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
    let clean = checked_relative_bytes(entry.as_bytes())?;
    // Only whole components were dropped or joined with `/`: still UTF-8.
    Ok(String::from_utf8_lossy(&clean).into_owned())
}

/// [`checked_relative`] for a name of any bytes.
pub(super) fn checked_relative_bytes(name: &[u8]) -> Result<Vec<u8>, ExecError> {
    let escapes = || {
        ExecError::Protocol(format!(
            "path `{}` is absolute or leaves its directory",
            truncate(&String::from_utf8_lossy(name), 200)
        ))
    };
    if name.starts_with(b"/") {
        return Err(escapes());
    }
    let mut parts: Vec<&[u8]> = Vec::new();
    for part in name.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => return Err(escapes()),
            _ => parts.push(part),
        }
    }
    Ok(parts.join(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_that_leave_the_tree_are_refused_by_name() {
        for (path, target) in [
            (&b"l"[..], &b"/etc/passwd"[..]),
            (b"l", b"../x"),
            (b"a/b/l", b"../../../x"),
            (b"a/l", b"b/../../../x"),
            (b"l", b""),
        ] {
            let error = FileDigest::symlink(path, target).unwrap_err();
            let message = error.to_string();
            assert!(message.contains("point outside the tree"), "{message}");
            assert!(
                message.contains(&*String::from_utf8_lossy(path)),
                "{message}"
            );
        }
        for (path, target) in [
            (&b"l"[..], &b"x"[..]),
            (b"a/b/l", b"../../x"),
            (b"a/l", b"./b/../c"),
            (b"a/l", b".."),
        ] {
            assert!(FileDigest::symlink(path, target).is_ok());
        }
    }

    #[test]
    fn glob_match_is_per_name() {
        assert!(glob_match("checkpoint-*", "checkpoint-12"));
        assert!(!glob_match("checkpoint-*", "output"));
        assert!(glob_match("*.bin", "a.bin"));
        assert!(glob_match("a?c", "abc"));
    }
}

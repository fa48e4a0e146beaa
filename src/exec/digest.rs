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

use super::ExecError;
use super::script::{quote, truncate};

/// Marks a symbolic link's line in the output of [`manifest_script`]:
/// `L <hex of the path> <hex of the target and readlink's newline>`. A line of
/// `sha256sum` starts with a lowercase hexadecimal digit or `\`, never with `L`.
const LINK_TAG: &[u8] = b"L ";

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
        let (path, raw_path) = split_name(path);
        Ok(Self {
            path,
            sha256: hex::encode(Sha256::digest(target)),
            raw_path,
            link: Some(target.to_vec()),
        })
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
fn split_name(name: &[u8]) -> (String, Option<Vec<u8>>) {
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
/// [`ExecError::Protocol`] naming the link and its target.
pub(crate) fn check_link(path: &[u8], target: &[u8]) -> Result<(), ExecError> {
    if link_stays_inside(path, target) {
        return Ok(());
    }
    Err(ExecError::Protocol(format!(
        "symbolic link `{}` points outside the tree (to `{}`): only relative links that stay inside the run directory are kept; remove or replace it on the target",
        truncate(&String::from_utf8_lossy(path), 200),
        truncate(&String::from_utf8_lossy(target), 200),
    )))
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
        out.push(FileDigest::symlink(
            &relative()?,
            target.as_os_str().as_bytes(),
        )?);
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
fn checked_relative_bytes(name: &[u8]) -> Result<Vec<u8>, ExecError> {
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

/// A POSIX shell script that prints the manifest of `entries` under `remote`, one
/// line per entry, read as bytes by [`parse_manifest`]:
///
/// - a regular file: the line of `sha256sum` (GNU coreutils), `<hex>  ./<path>`,
///   with a leading `\` and `\\`, `\n`, `\r` escapes when the name holds one of
///   those; any other byte of the name as it is;
/// - a symbolic link: `L <hex of ./path> <hex of the target and a newline>`
///   (`od -A n -v -t x1` of the path and of `readlink`'s output), so no byte of
///   either needs escaping.
///
/// It exits 3 with `<remote> does not exist` on standard error when `remote` is not
/// a directory, and with a failure when a file or link cannot be read. Files are
/// found with `find -print0 | xargs -0 sha256sum`, links with `find -type l -exec`
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
ob_rc=0
find "$@" {prune}-type f -print0 | LC_ALL=C xargs -0 -r sha256sum -- || ob_rc=1
find "$@" {prune}-type l -exec sh -c '
for ob_l do
  ob_p=$(printf %s "$ob_l" | od -A n -v -t x1 | tr -d " \n") &&
  ob_t=$(readlink -- "$ob_l" | od -A n -v -t x1 | tr -d " \n") &&
  printf "L %s %s\n" "$ob_p" "$ob_t" || exit 1
done' sh {{}} + || ob_rc=1
exit "$ob_rc"
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

/// Reads the output of [`manifest_script`] into digests, sorted. Names are bytes:
/// any byte string comes back as it was on the target.
///
/// # Errors
///
/// Returns [`ExecError::Protocol`] for a line that is neither `<64 hex digits>
/// <path>` nor a link line, a path that is absolute or holds `..`, or a symbolic
/// link whose target is absolute or leaves the root.
pub fn parse_manifest(output: &[u8]) -> Result<Vec<FileDigest>, ExecError> {
    let mut digests = Vec::new();
    for line in output
        .split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
    {
        let digest = match line.strip_prefix(LINK_TAG) {
            Some(rest) => link_line(line, rest)?,
            None => file_line(line)?,
        };
        digests.push(digest);
    }
    digests.sort();
    digests.dedup();
    Ok(digests)
}

/// The error for a manifest line that cannot be read.
fn bad_line(line: &[u8]) -> ExecError {
    ExecError::Protocol(format!(
        "manifest line `{}`",
        truncate(&String::from_utf8_lossy(line), 120)
    ))
}

/// One line of `sha256sum`.
fn file_line(line: &[u8]) -> Result<FileDigest, ExecError> {
    let (escaped, rest) = match line.strip_prefix(b"\\") {
        Some(rest) => (true, rest),
        None => (false, line),
    };
    let (hash, name) = rest.split_at_checked(64).ok_or_else(|| bad_line(line))?;
    let name = name
        .strip_prefix(b"  ")
        .or_else(|| name.strip_prefix(b" *"))
        .ok_or_else(|| bad_line(line))?;
    if !hash
        .iter()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    {
        return Err(bad_line(line));
    }
    let name = if escaped {
        unescape(name).ok_or_else(|| bad_line(line))?
    } else {
        name.to_vec()
    };
    let path = checked_relative_bytes(&name)?;
    if path.is_empty() {
        return Err(bad_line(line));
    }
    // The hash was checked to be ASCII hexadecimal digits.
    Ok(FileDigest::file(&path, &String::from_utf8_lossy(hash)))
}

/// One link line, `rest` following its tag.
fn link_line(line: &[u8], rest: &[u8]) -> Result<FileDigest, ExecError> {
    let mut fields = rest.split(|b| *b == b' ');
    let (Some(path), Some(target), None) = (fields.next(), fields.next(), fields.next()) else {
        return Err(bad_line(line));
    };
    let path = hex::decode(path).map_err(|_| bad_line(line))?;
    let mut target = hex::decode(target).map_err(|_| bad_line(line))?;
    // `readlink` ends its output with one newline of its own.
    if target.pop() != Some(b'\n') {
        return Err(bad_line(line));
    }
    let path = checked_relative_bytes(&path)?;
    if path.is_empty() {
        return Err(bad_line(line));
    }
    FileDigest::symlink(&path, &target)
}

/// Undoes the escapes of `sha256sum` (`\\`, `\n`, `\r`).
fn unescape(name: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(name.len());
    let mut bytes = name.iter();
    while let Some(&b) = bytes.next() {
        if b == b'\\' {
            match bytes.next()? {
                b'\\' => out.push(b'\\'),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                _ => return None,
            }
        } else {
            out.push(b);
        }
    }
    Some(out)
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests run real programs and read the test environment"
)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HASH: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn paths(digests: &[FileDigest]) -> Vec<&[u8]> {
        digests.iter().map(FileDigest::path_bytes).collect()
    }

    fn run_script(script: &str) -> std::process::Output {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .output()
            .unwrap()
    }

    #[test]
    fn parse_manifest_reads_sha256sum_lines() {
        let text = format!("{HASH}  ./a b\n\\{HASH}  ./new\\nline\\\\x\n");
        let digests = parse_manifest(text.as_bytes()).unwrap();
        assert_eq!(digests.len(), 2);
        assert_eq!(digests[0].path, "a b");
        assert_eq!(digests[1].path, "new\nline\\x");
        assert!(
            digests
                .iter()
                .all(|d| d.raw_path.is_none() && d.link.is_none())
        );
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
    fn a_name_that_is_not_utf8_round_trips_through_the_manifest() {
        let mut line = format!("{HASH}  ./out/caf").into_bytes();
        line.extend_from_slice(b"\xe9\xff/x\n");
        let digests = parse_manifest(&line).unwrap();
        assert_eq!(paths(&digests), [&b"out/caf\xe9\xff/x"[..]]);
        assert_eq!(digests[0].path, "out/caf\u{fffd}\u{fffd}/x");
        assert_eq!(
            digests[0].relative_path().as_os_str().as_bytes(),
            b"out/caf\xe9\xff/x"
        );
    }

    #[test]
    fn link_lines_carry_any_bytes() {
        let text = format!(
            "L {} {}\n",
            hex::encode(b"./out/l\xff\nk"),
            hex::encode(b"../a b\xfe\n")
        );
        let digests = parse_manifest(text.as_bytes()).unwrap();
        assert_eq!(paths(&digests), [&b"out/l\xff\nk"[..]]);
        assert_eq!(digests[0].link.as_deref(), Some(&b"../a b\xfe"[..]));
        assert_eq!(
            digests[0].sha256,
            hex::encode(Sha256::digest(b"../a b\xfe"))
        );
        for bad in [
            format!("L {}\n", hex::encode(b"./l")),
            format!("L {} {}\n", hex::encode(b"./l"), hex::encode(b"t")),
            format!("L zz {}\n", hex::encode(b"t\n")),
            format!("L {} {} x\n", hex::encode(b"./l"), hex::encode(b"t\n")),
        ] {
            assert!(parse_manifest(bad.as_bytes()).is_err(), "{bad}");
        }
    }

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
            assert!(message.contains("points outside the tree"), "{message}");
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

    #[test]
    fn local_manifest_matches_the_script() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("out/checkpoint-2")).unwrap();
        std::fs::create_dir_all(root.join("out/empty")).unwrap();
        std::fs::write(root.join("out/a b.txt"), "hello").unwrap();
        std::fs::write(root.join("out/new\nline"), "").unwrap();
        std::fs::write(root.join("out/-dash"), "x").unwrap();
        std::fs::write(root.join(OsStr::from_bytes(b"out/caf\xe9")), "latin-1").unwrap();
        std::fs::write(root.join("out/checkpoint-2/w"), "w").unwrap();
        std::fs::write(root.join("log"), "l").unwrap();
        std::os::unix::fs::symlink("../log", root.join("out/link")).unwrap();
        std::os::unix::fs::symlink("checkpoint-2", root.join("out/latest")).unwrap();
        std::os::unix::fs::symlink(
            OsStr::from_bytes(b"caf\xe9"),
            root.join(OsStr::from_bytes(b"out/\xffnew\nlink")),
        )
        .unwrap();
        let entries = vec!["out".to_owned(), "log".to_owned(), "missing".to_owned()];
        let exclude = vec!["checkpoint-*".to_owned()];
        let local = local_manifest(root, &entries, &exclude).unwrap();
        let output = run_script(&manifest_script(
            &root.to_string_lossy(),
            &entries,
            &exclude,
        ));
        assert!(output.status.success(), "{output:?}");
        let remote = parse_manifest(&output.stdout).unwrap();
        assert_eq!(local, remote);
        let mut listed = paths(&local);
        listed.sort_unstable();
        assert_eq!(
            listed,
            [
                &b"log"[..],
                b"out/-dash",
                b"out/a b.txt",
                b"out/caf\xe9",
                b"out/latest",
                b"out/link",
                b"out/new\nline",
                b"out/\xffnew\nlink",
            ]
        );
        let link = local.iter().find(|d| d.path == "out/link").unwrap();
        assert_eq!(link.link_target(), Some(Path::new("../log")));
    }

    #[test]
    fn a_link_leaving_the_tree_fails_both_manifests() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("out")).unwrap();
        std::fs::write(root.join("out/a"), "a").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("out/evil")).unwrap();
        let entries = vec!["out".to_owned()];
        let local = local_manifest(root, &entries, &[]).unwrap_err();
        assert!(local.to_string().contains("`out/evil`"), "{local}");
        let output = run_script(&manifest_script(&root.to_string_lossy(), &entries, &[]));
        assert!(output.status.success(), "{output:?}");
        let remote = parse_manifest(&output.stdout).unwrap_err();
        assert!(remote.to_string().contains("`out/evil`"), "{remote}");
    }

    #[test]
    fn an_unreadable_file_fails_the_script_even_with_links_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a"), "a").unwrap();
        std::os::unix::fs::symlink("a", root.join("l")).unwrap();
        let script = manifest_script(&root.to_string_lossy(), &[".".to_owned()], &[]);
        // `sha256sum` failing on a file must not be hidden by the link pass after it.
        let broken = script.replace("sha256sum --", "sha256sum -- ./missing-file");
        let output = run_script(&broken);
        assert!(!output.status.success(), "{output:?}");
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
                expected.push(FileDigest::file(clean.as_bytes(), HASH));
            }
            expected.sort();
            expected.dedup();
            prop_assert_eq!(parse_manifest(text.as_bytes()).unwrap(), expected);
        }

        #[test]
        fn any_byte_name_round_trips_through_sha256sum(name in proptest::collection::vec(1_u8..=255, 1..24)) {
            let clean = checked_relative_bytes(&name);
            prop_assume!(clean.as_ref().is_ok_and(|c| !c.is_empty()) && !name.contains(&b'/'));
            let clean = clean.unwrap();
            let mut line = Vec::new();
            if name.contains(&b'\\') || name.contains(&b'\n') || name.contains(&b'\r') {
                line.push(b'\\');
            }
            line.extend_from_slice(HASH.as_bytes());
            line.extend_from_slice(b"  ./");
            for &b in &name {
                match b {
                    b'\\' => line.extend_from_slice(b"\\\\"),
                    b'\n' => line.extend_from_slice(b"\\n"),
                    b'\r' => line.extend_from_slice(b"\\r"),
                    _ => line.push(b),
                }
            }
            line.push(b'\n');
            let digests = parse_manifest(&line).unwrap();
            prop_assert_eq!(paths(&digests), vec![&clean[..]]);
        }

        #[test]
        fn parse_manifest_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse_manifest(&bytes);
        }
    }
}

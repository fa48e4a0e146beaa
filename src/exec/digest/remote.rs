//! The manifest as the target computes it: the POSIX shell script that lists files with
//! their SHA-256 and links with their target, and the reader of its output, as bytes.

use super::{FileDigest, LINK_TAG, checked_relative_bytes};
use crate::exec::ExecError;
use crate::exec::script::truncate;
use crate::shell::quote;

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
/// - a regular file hashed by `openssl dgst -sha256 -r` (issue 10: several times
///   faster than `sha256sum` where the CPU has SHA instructions): `<hex> *./<path>`;
///   only names without `\`, newline or carriage return go there, so no version of
///   `openssl` escapes any, and only when the target's `openssl` gives this line for
///   `/dev/null`; every other file goes to `sha256sum`.
///
/// It exits 3 with `<remote> does not exist` on standard error when `remote` is not
/// a directory, and with a failure when a file or link cannot be read. Files are
/// found with `find -print0 | xargs -0`, links with `find -type l -exec`
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
if [ "$(openssl dgst -sha256 -r /dev/null 2>/dev/null)" = "{EMPTY_SHA256} */dev/null" ]; then
  ob_nl=$(printf '*\n*') ob_cr=$(printf '*\r*')
  find "$@" {prune}-type f ! -path '*\\*' ! -path "$ob_nl" ! -path "$ob_cr" -print0 | xargs -0 -r openssl dgst -sha256 -r || ob_rc=1
  find "$@" {prune}-type f \( -path '*\\*' -o -path "$ob_nl" -o -path "$ob_cr" \) -print0 | LC_ALL=C xargs -0 -r sha256sum -- || ob_rc=1
else
  find "$@" {prune}-type f -print0 | LC_ALL=C xargs -0 -r sha256sum -- || ob_rc=1
fi
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

/// The SHA-256 of no bytes.
const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

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
    super::refuse_escaping_links(&digests)?;
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
    Ok(FileDigest::any_symlink(&path, &target))
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
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt as _;

    use std::path::Path;

    use sha2::{Digest, Sha256};

    use super::super::{checked_relative, local_manifest};
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

    /// The manifest script's output with `openssl` on the path, or with an `openssl`
    /// that fails ahead of it (the target without one).
    fn script_output(root: &Path, without_openssl: bool) -> Vec<u8> {
        let script = manifest_script(&root.to_string_lossy(), &[".".to_owned()], &[]);
        let mut command = std::process::Command::new("sh");
        command.arg("-c").arg(script);
        let bin = tempfile::tempdir().unwrap();
        if without_openssl {
            let fake = bin.path().join("openssl");
            std::fs::write(&fake, "#!/bin/sh\nexit 1\n").unwrap();
            std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
            let path = std::env::var("PATH").unwrap_or_default();
            command.env("PATH", format!("{}:{path}", bin.path().display()));
        }
        let output = command.output().unwrap();
        assert!(output.status.success(), "{output:?}");
        output.stdout
    }

    #[test]
    fn regression_the_manifest_is_the_same_through_openssl_and_through_sha256sum() {
        let installed = std::process::Command::new("openssl")
            .arg("version")
            .output()
            .is_ok_and(|output| output.status.success());
        assert!(
            installed,
            "openssl is missing: sudo apt-get install -y openssl"
        );
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("d\\ir/sub")).unwrap();
        for (name, content) in [
            (&b"plain"[..], &b"plain"[..]),
            (b"back\\slash", b"b"),
            (b"new\nline", b"n"),
            (b"carriage\rreturn", b"c"),
            (b"caf\xe9", b"latin-1"),
            (b"d\\ir/sub/inside", b"i"),
            (b"-dash", b""),
        ] {
            std::fs::write(root.join(OsStr::from_bytes(name)), content).unwrap();
        }
        let local = local_manifest(root, &[".".to_owned()], &[]).unwrap();
        let through_openssl = script_output(root, false);
        let text = String::from_utf8_lossy(&through_openssl);
        let line =
            |end: &str, mark: &str| text.lines().any(|l| l.ends_with(end) && l.contains(mark));
        assert!(line("/plain", " *./"), "{text}");
        assert!(line("/back\\\\slash", "  ./"), "{text}");
        assert_eq!(parse_manifest(&through_openssl).unwrap(), local);
        let through_sha256sum = script_output(root, true);
        let text = String::from_utf8_lossy(&through_sha256sum);
        assert!(text.lines().any(|l| l.ends_with("  ././plain")), "{text}");
        assert_eq!(parse_manifest(&through_sha256sum).unwrap(), local);
        assert_eq!(local.len(), 7);
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
    fn regression_every_link_leaving_the_tree_is_named_at_once_by_both_manifests() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("out")).unwrap();
        std::fs::write(root.join("out/a"), "a").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("out/evil")).unwrap();
        std::fs::create_dir_all(root.join("out/sub")).unwrap();
        std::os::unix::fs::symlink("../../../etc/hostname", root.join("out/sub/evil2")).unwrap();
        std::os::unix::fs::symlink("../a", root.join("out/sub/fine")).unwrap();
        let entries = vec!["out".to_owned()];
        // Every escaping link is named at once, so one fix on the target takes them all.
        let named = [
            "`out/evil` -> `/etc/passwd`",
            "`out/sub/evil2` -> `../../../etc/hostname`",
        ];
        let local = local_manifest(root, &entries, &[]).unwrap_err();
        let output = run_script(&manifest_script(&root.to_string_lossy(), &entries, &[]));
        assert!(output.status.success(), "{output:?}");
        let remote = parse_manifest(&output.stdout).unwrap_err();
        for error in [local, remote] {
            let message = error.to_string();
            for link in named {
                assert!(message.contains(link), "{message}");
            }
            assert!(!message.contains("out/sub/fine"), "{message}");
            assert!(!message.contains("unexpected answer"), "{message}");
        }
    }

    #[test]
    fn an_unreadable_file_fails_the_script_even_with_links_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a"), "a").unwrap();
        std::os::unix::fs::symlink("a", root.join("l")).unwrap();
        let script = manifest_script(&root.to_string_lossy(), &[".".to_owned()], &[]);
        // A name that goes to `sha256sum` even where `openssl` hashes the others.
        std::fs::write(root.join("back\\slash"), "b").unwrap();
        // A hasher failing on a file must not be hidden by the passes after it.
        for (hasher, broken) in [
            ("sha256sum --", "sha256sum -- ./missing-file"),
            (
                "-r openssl dgst -sha256 -r",
                "-r openssl dgst -sha256 -r ./missing-file",
            ),
        ] {
            assert!(script.contains(hasher), "{script}");
            let output = run_script(&script.replace(hasher, broken));
            assert!(!output.status.success(), "{hasher}: {output:?}");
        }
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

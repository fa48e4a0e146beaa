//! The target side of an upload through the blob cache: [`place_script`] verifies
//! the blobs that arrived in an incoming directory (hashed several at once), renames each verified one into
//! `sha256/<digest>` (an atomic rename: two runs placing the same blob at once
//! both leave one intact blob, the later rename replacing identical content), and
//! hard-links every file of the tree into the run directory, copying where hard
//! links are refused and saying so once. It records each blob it verified in the
//! record of verified blobs ([`VERIFIED`]), and moves a blob's record along when it
//! links the blob (a link changes the blob's status-change time) if the record
//! matched the blob just before, so the next upload's check need not read it again.

use std::path::Path;

use super::remote::{BLOBS_DIR, PARALLEL_SUMS, VERIFIED, VERIFIED_DIR, is_digest};
use crate::exec::ExecError;
use crate::exec::runtime::shell_path;
use crate::shell::quote;

/// The line [`place_script`] writes, once, when it copied instead of linking.
pub const COPIED: &str = "W hard links refused, copied";

/// The script that verifies every blob under `incoming` (a directory of files named
/// by digest, or by one of the provisional names of `provisional`, each with the
/// digest it must have: a file sent while it was hashed), moves each into
/// `<workdir>/.cache/blobs/sha256/<digest>`, and links each `(path, digest)` of
/// `files` to `<run_dir>/<path>`; it removes `incoming` at the end. It fails, naming
/// the digest, when an incoming blob does not match its digest or a blob to link is
/// missing; it writes [`COPIED`] once when a link was refused.
///
/// # Errors
///
/// [`ExecError::Protocol`] naming a digest that is not 64 lowercase hexadecimal
/// digits, a provisional name that is not lowercase letters and digits, or a path
/// that is not UTF-8 or not relative.
pub fn place_script(
    workdir: &str,
    incoming: &str,
    run_dir: &str,
    files: &[(&Path, &str)],
    provisional: &[(&str, &str)],
) -> Result<String, ExecError> {
    let mut expect = String::new();
    for (name, digest) in provisional {
        if !is_digest(digest) {
            return Err(ExecError::Protocol(format!(
                "not a SHA-256 digest: `{digest}`"
            )));
        }
        if name.is_empty()
            || is_digest(name)
            || !name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        {
            return Err(ExecError::Protocol(format!(
                "not a provisional blob name: `{name}`"
            )));
        }
        expect.extend(["  ", name, ") ob_e=", digest, ";;\n"]);
    }
    let mut links = String::new();
    for (path, digest) in files {
        if !is_digest(digest) {
            return Err(ExecError::Protocol(format!(
                "not a SHA-256 digest: `{digest}`"
            )));
        }
        let text = path
            .to_str()
            .filter(|text| !text.is_empty() && !path.is_absolute())
            .ok_or_else(|| {
                ExecError::Protocol(format!(
                    "cannot upload `{}`: not a relative UTF-8 path",
                    path.display()
                ))
            })?;
        if path
            .components()
            .any(|part| !matches!(part, std::path::Component::Normal(_)))
        {
            return Err(ExecError::Protocol(format!(
                "cannot upload `{text}`: not a plain relative path"
            )));
        }
        links.extend(["ob_link ", digest, " ", &quote(text), "\n"]);
    }
    let dir = shell_path(&format!("{}/{BLOBS_DIR}", workdir.trim_end_matches('/')));
    Ok(format!(
        r#"set -u
ob_blobs={dir}/sha256
ob_ver={dir}/{VERIFIED_DIR}
ob_in={incoming}
ob_run={run_dir}
ob_copied=
mkdir -p -- "$ob_blobs" "$ob_ver" "$ob_run" || exit 1
ob_expect() {{
  case $1 in
{expect}  *) ob_e=$1;;
  esac
}}
{PARALLEL_SUMS}{VERIFIED}if [ -d "$ob_in" ]; then
  ob_sums=$ob_in.sums
  mkdir -p -- "$ob_sums" || exit 1
  for ob_f in "$ob_in"/*; do
    if [ -f "$ob_f" ]; then
      ob_key "$ob_f"
      printf '%s\n' "$ob_k" > "$ob_sums/${{ob_f##*/}}.key"
      ob_sum "$ob_f" "$ob_sums/${{ob_f##*/}}"
    fi
  done
  wait
  for ob_f in "$ob_in"/*; do
    [ -f "$ob_f" ] || continue
    ob_n=${{ob_f##*/}}
    ob_expect "$ob_n"
    read -r ob_s < "$ob_sums/$ob_n" || ob_s=
    if [ "${{ob_s%% *}}" != "$ob_e" ]; then
      rm -rf -- "$ob_sums"
      echo "blob $ob_e arrived corrupted" >&2
      exit 4
    fi
    read -r ob_k0 < "$ob_sums/$ob_n.key" || ob_k0=
    mv -f -- "$ob_f" "$ob_blobs/$ob_e" || exit 1
    ob_key "$ob_blobs/$ob_e"
    if [ -n "$ob_k0" ] && [ "${{ob_k0% *}}" = "${{ob_k% *}}" ]; then ob_note "$ob_e" "$ob_k"; fi
  done
  rm -rf -- "$ob_sums" "$ob_in"
fi
ob_link() {{
  [ -f "$ob_blobs/$1" ] || {{ echo "blob $1 for $2 is missing from the cache" >&2; exit 5; }}
  case $2 in */*) mkdir -p -- "$ob_run/${{2%/*}}" || exit 1;; esac
  ob_key "$ob_blobs/$1"
  ob_k0=$ob_k
  if ln -f -- "$ob_blobs/$1" "$ob_run/$2" 2>/dev/null; then
    if ob_seen "$1" "$ob_k0"; then ob_key "$ob_blobs/$1"; ob_note "$1" "$ob_k"; fi
  else
    cp -f -- "$ob_blobs/$1" "$ob_run/$2" || exit 1
    if [ -z "$ob_copied" ]; then echo "{COPIED}"; ob_copied=1; fi
  fi
}}
{links}"#,
        incoming = shell_path(incoming),
        run_dir = shell_path(run_dir),
    ))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt as _;

    use super::*;

    const HELLO: &str = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
    const OTHER: &str = "d9298a10d1b0735837dc4bd85dac641b0f3cef27a47e5d53a54f2f3f5b2fcffa";

    #[allow(clippy::disallowed_methods)] // a test runs the script with the local `sh`
    fn run(script: &str) -> std::process::Output {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .output()
            .unwrap()
    }

    /// A working directory whose upload `u1` brought the blobs of "hello" and "other",
    /// and the placing of `a.bin`, `sub/b.bin` (both "hello") and `sub/c.bin` into
    /// `run_dir`, run.
    fn place_three(work: &Path, run_dir: &Path) -> (std::process::Output, std::path::PathBuf) {
        let incoming = work.join(".cache/blobs/incoming/u1");
        std::fs::create_dir_all(&incoming).unwrap();
        std::fs::write(incoming.join(HELLO), "hello").unwrap();
        std::fs::write(incoming.join(OTHER), "other").unwrap();
        let files = [
            (Path::new("a.bin"), HELLO),
            (Path::new("sub/b.bin"), HELLO),
            (Path::new("sub/c.bin"), OTHER),
        ];
        let script = place_script(
            work.to_str().unwrap(),
            incoming.to_str().unwrap(),
            run_dir.to_str().unwrap(),
            &files,
            &[],
        )
        .unwrap();
        (run(&script), incoming)
    }

    #[test]
    fn verified_blobs_are_moved_into_the_cache_and_linked_into_the_run() {
        let work = tempfile::tempdir().unwrap();
        let run_dir = work.path().join("runs/r1/base_model");
        let (out, incoming) = place_three(work.path(), &run_dir);
        assert!(out.status.success(), "{out:?}");
        assert!(!incoming.exists());
        assert_eq!(std::fs::read(run_dir.join("sub/b.bin")).unwrap(), b"hello");
        assert_eq!(std::fs::read(run_dir.join("sub/c.bin")).unwrap(), b"other");
        let blob = work.path().join(".cache/blobs/sha256").join(HELLO);
        assert_eq!(std::fs::metadata(&blob).unwrap().nlink(), 3);
        // Each blob's record is its key after the last link: the next check trusts it.
        for digest in [HELLO, OTHER] {
            let blob = work.path().join(".cache/blobs/sha256").join(digest);
            let key = run(&format!(
                "{VERIFIED}ob_key {}; printf '%s\\n' \"$ob_k\"",
                quote(blob.to_str().unwrap())
            ));
            let record =
                std::fs::read_to_string(work.path().join(".cache/blobs/verified").join(digest));
            assert!(key.status.success());
            assert_eq!(record.unwrap(), String::from_utf8(key.stdout).unwrap());
        }
    }

    // Issue 21: where the run directory is on another file system than the cache (a
    // tmpfs here), hard links are refused: each file is copied, the script says so once,
    // and the run gets every file whole.
    #[test]
    fn refused_hard_links_are_copies_said_once() {
        let shm = std::path::Path::new("/dev/shm");
        assert!(
            shm.is_dir(),
            "this test needs a tmpfs at /dev/shm (another file system than the temporary directory)"
        );
        let work = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir_in(shm).unwrap();
        assert_ne!(
            std::fs::metadata(work.path()).unwrap().dev(),
            std::fs::metadata(elsewhere.path()).unwrap().dev(),
            "the run directory must be on another file system"
        );
        let run_dir = elsewhere.path().join("r1/base_model");
        let (out, _) = place_three(work.path(), &run_dir);
        assert!(out.status.success(), "{out:?}");
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(said.matches(COPIED).count(), 1, "{said}");
        assert_eq!(std::fs::read(run_dir.join("a.bin")).unwrap(), b"hello");
        assert_eq!(std::fs::read(run_dir.join("sub/b.bin")).unwrap(), b"hello");
        assert_eq!(std::fs::read(run_dir.join("sub/c.bin")).unwrap(), b"other");
        let blob = work.path().join(".cache/blobs/sha256").join(HELLO);
        assert_eq!(
            std::fs::metadata(&blob).unwrap().nlink(),
            1,
            "copies, no links"
        );
    }

    /// A working directory whose upload brought `arrived` (incoming name, content)
    /// into `<work>/in`, and the placing of `files` into `<work>/run` with
    /// `provisional`, run: the directory, the run directory and the script's output.
    fn place_arrived(
        arrived: &[(&str, &str)],
        files: &[(&Path, &str)],
        provisional: &[(&str, &str)],
    ) -> (tempfile::TempDir, std::path::PathBuf, std::process::Output) {
        let work = tempfile::tempdir().unwrap();
        let incoming = work.path().join("in");
        std::fs::create_dir_all(&incoming).unwrap();
        for (name, content) in arrived {
            std::fs::write(incoming.join(name), content).unwrap();
        }
        let run_dir = work.path().join("run");
        let script = place_script(
            work.path().to_str().unwrap(),
            incoming.to_str().unwrap(),
            run_dir.to_str().unwrap(),
            files,
            provisional,
        )
        .unwrap();
        let out = run(&script);
        (work, run_dir, out)
    }

    /// The placing of `a.bin` (digest of "hello") from "hellO" arrived as `name` fails
    /// naming the digest, and nothing is placed.
    fn refused_naming_the_digest(name: &str, provisional: &[(&str, &str)]) {
        let (work, run_dir, out) = place_arrived(
            &[(name, "hellO")],
            &[(Path::new("a.bin"), HELLO)],
            provisional,
        );
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains(HELLO));
        assert!(!work.path().join(".cache/blobs/sha256").join(HELLO).exists());
        assert!(!run_dir.join("a.bin").exists());
    }

    #[test]
    fn a_corrupted_incoming_blob_fails_naming_it_and_is_never_placed() {
        refused_naming_the_digest(HELLO, &[]);
    }

    // Issue 21: a file sent while it was hashed arrives under a provisional name and is
    // placed under the digest it was given, once its content matches it.
    #[test]
    fn a_provisional_name_is_placed_under_its_digest_once_verified() {
        let (work, run_dir, out) = place_arrived(
            &[("u0", "hello"), (OTHER, "other")],
            &[(Path::new("a.bin"), HELLO), (Path::new("c.bin"), OTHER)],
            &[("u0", HELLO)],
        );
        assert!(out.status.success(), "{out:?}");
        let blobs = work.path().join(".cache/blobs/sha256");
        assert_eq!(std::fs::read(blobs.join(HELLO)).unwrap(), b"hello");
        assert!(!blobs.join("u0").exists());
        assert_eq!(std::fs::read(run_dir.join("a.bin")).unwrap(), b"hello");
        assert_eq!(std::fs::read(run_dir.join("c.bin")).unwrap(), b"other");
    }

    // A provisional file whose content is not the digest it was given (changed while
    // it was sent, or damaged on the way) fails naming that digest and is never placed.
    #[test]
    fn a_provisional_name_with_other_content_fails_naming_its_digest() {
        refused_naming_the_digest("u0", &[("u0", HELLO)]);
    }

    #[test]
    fn a_provisional_name_that_is_not_a_plain_word_is_refused() {
        for name in ["", "U0", "a b", "../x", HELLO] {
            let error = place_script("/w", "/w/in", "/w/run", &[], &[(name, HELLO)]).unwrap_err();
            assert!(error.to_string().contains("provisional"), "{name}: {error}");
        }
    }

    #[test]
    fn a_path_leaving_the_run_is_refused() {
        let error =
            place_script("/w", "/w/in", "/w/run", &[(Path::new("../x"), HELLO)], &[]).unwrap_err();
        assert!(error.to_string().contains("../x"), "{error}");
    }
}

//! The target side of the blob cache: POSIX shell scripts over
//! `<workdir>/`[`BLOBS_DIR`]`/sha256/<digest>` and the parsers of their answers.
//!
//! [`check_script`] tells, for each digest, whether its blob is there and intact
//! (read again, several blobs at once, [`PARALLEL_SUMS`], unless the record of
//! verified blobs shows it untouched since it was last read, [`VERIFIED`]): a blob
//! whose content does not match its name is removed and answered as corrupted, so it
//! is sent again and never linked.
//! [`prune_script`] removes the blobs that no run directory links to (link count 1)
//! and answers each one's size.
//!
//! Both scripts change the target, so they run as a command that may (the
//! executors' `command`), never through [`crate::exec::Executor::probe`], whose
//! scripts only read.
//!
//! Caveat: a prune running while an upload links blobs can remove a blob the upload
//! found present a moment before; the upload's link step must then fail, naming it.

use std::collections::BTreeMap;

use super::super::runtime::shell_path;
use crate::exec::ExecError;

/// The shell function `ob_sum FILE OUT`: writes the SHA-256 line of `FILE` (the
/// digest first) into `OUT` in the background, as many at once as the target has
/// processors (a model's shards are hashed side by side); the script `wait`s before
/// reading the sums. It hashes with `openssl dgst -sha256` when the target's `openssl`
/// answers a known digest right (it uses the processor's SHA instructions, about four
/// times `sha256sum` where they exist), with `sha256sum` otherwise.
pub(super) const PARALLEL_SUMS: &str = r#"ob_n=$(getconf _NPROCESSORS_ONLN 2>/dev/null) || ob_n=1
case $ob_n in ''|*[!0-9]*|0) ob_n=1;; esac
ob_i=0
ob_hash=sha256sum
case $(printf abc | LC_ALL=C openssl dgst -sha256 -r 2>/dev/null) in
  'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad '*) ob_hash='openssl dgst -sha256 -r';;
esac
ob_sum() {
  (LC_ALL=C $ob_hash < "$1" > "$2" 2>/dev/null) &
  ob_i=$((ob_i + 1))
  if [ "$ob_i" -ge "$ob_n" ]; then wait; ob_i=0; fi
}
"#;

/// The shell functions of the record of verified blobs, `<workdir>/`[`BLOBS_DIR`]`/`
/// [`VERIFIED_DIR`]`/<digest>`: one line, the blob's inode, size, modification time
/// and status-change time (nanoseconds) when its content was last found to match its
/// name. A blob whose four are unchanged since is not read again; any write to it
/// changes its status-change time, which `touch` cannot set back, and a replaced blob
/// has another inode. Linking a blob changes its status-change time too, so a link
/// made just after the record was checked moves the record along ([`super::place_script`]).
/// `$ob_ver` names the record's directory.
///
/// - `ob_key FILE` sets `ob_k` to `FILE`'s four (GNU `stat`), or to nothing where
///   `stat` cannot tell them with nanoseconds: then nothing is recorded or trusted,
///   and every blob is read again.
/// - `ob_seen DIGEST KEY`: whether the record of `DIGEST` is `KEY` (not empty).
/// - `ob_note DIGEST KEY` records `KEY` for `DIGEST` through a temporary renamed into
///   place (two uploads at once each leave a whole record; a stale one only costs a
///   read).
pub(super) const VERIFIED: &str = r#"ob_key() {
  ob_k=$(LC_ALL=C stat -c '%i %s %.9Y %.9Z' -- "$1" 2>/dev/null) || ob_k=
  case $ob_k in
    [0-9]*' '[0-9]*' '[0-9]*.[0-9]*' '[0-9]*.[0-9]*) ;;
    *) ob_k=;;
  esac
}
ob_seen() {
  [ -n "$2" ] && [ -f "$ob_ver/$1" ] && read -r ob_r < "$ob_ver/$1" && [ "$ob_r" = "$2" ]
}
ob_note() {
  [ -n "$2" ] || return 0
  if printf '%s\n' "$2" > "$ob_ver/$1.$$" 2>/dev/null; then
    mv -f -- "$ob_ver/$1.$$" "$ob_ver/$1" 2>/dev/null || rm -f -- "$ob_ver/$1.$$"
  fi
}
"#;

/// The directory of the record of verified blobs, beside `sha256/` ([`VERIFIED`]).
pub const VERIFIED_DIR: &str = "verified";

/// The cache's directory under a target's working directory.
pub const BLOBS_DIR: &str = ".cache/blobs";

/// What [`check_script`] answered for one digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlobState {
    /// The blob is there and its content has this digest.
    Intact,
    /// No blob of this digest.
    Missing,
    /// A blob was there with other content; it was removed.
    Corrupted,
}

/// Whether `digest` is 64 lowercase hexadecimal digits, the only form a blob's name
/// takes (so it is safe as a word of a script).
pub(super) fn is_digest(digest: &str) -> bool {
    digest.len() == 64
        && digest
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The blob directory `<workdir>/.cache/blobs/sha256` as a shell word (`~` expanded
/// on the target).
fn sha256_dir(workdir: &str) -> String {
    shell_path(&format!(
        "{}/{BLOBS_DIR}/sha256",
        workdir.trim_end_matches('/')
    ))
}

/// The record directory `<workdir>/.cache/blobs/verified` as a shell word.
fn verified_dir(workdir: &str) -> String {
    shell_path(&format!(
        "{}/{BLOBS_DIR}/{VERIFIED_DIR}",
        workdir.trim_end_matches('/')
    ))
}

/// The script that answers, one line per digest of `digests`, `H <digest>` for an
/// intact blob, `M <digest>` for a missing one, and `C <digest>` for a corrupted one
/// (which it removes).
///
/// # Errors
///
/// [`ExecError::Protocol`] naming the first entry of `digests` that is not 64
/// lowercase hexadecimal digits.
pub fn check_script(workdir: &str, digests: &[&str]) -> Result<String, ExecError> {
    if let Some(bad) = digests.iter().find(|digest| !is_digest(digest)) {
        return Err(ExecError::Protocol(format!(
            "not a SHA-256 digest: `{bad}`"
        )));
    }
    let words = digests.join(" ");
    Ok(format!(
        r#"set -u
ob_dir={dir}
ob_ver={ver}
[ -d "$ob_dir" ] && mkdir -p -- "$ob_ver" 2>/dev/null
ob_sums=$(mktemp -d 2>/dev/null) || {{ echo "cannot create a temporary directory" >&2; exit 1; }}
{PARALLEL_SUMS}{VERIFIED}for ob_h in {words}; do
  if [ -f "$ob_dir/$ob_h" ]; then
    ob_key "$ob_dir/$ob_h"
    if ob_seen "$ob_h" "$ob_k"; then
      echo "$ob_h" > "$ob_sums/$ob_h"
    else
      printf '%s\n' "$ob_k" > "$ob_sums/$ob_h.key"
      ob_sum "$ob_dir/$ob_h" "$ob_sums/$ob_h"
    fi
  fi
done
wait
for ob_h in {words}; do
  if [ -f "$ob_sums/$ob_h" ]; then
    read -r ob_s < "$ob_sums/$ob_h" || ob_s=
    if [ "${{ob_s%% *}}" = "$ob_h" ]; then
      echo "H $ob_h"
      if [ -f "$ob_sums/$ob_h.key" ]; then
        read -r ob_k < "$ob_sums/$ob_h.key" || ob_k=
        ob_note "$ob_h" "$ob_k"
      fi
    else
      rm -f -- "$ob_dir/$ob_h" "$ob_ver/$ob_h"
      echo "C $ob_h"
    fi
  else
    echo "M $ob_h"
  fi
done
rm -rf -- "$ob_sums"
"#,
        dir = sha256_dir(workdir),
        ver = verified_dir(workdir),
    ))
}

/// The lines to append to [`check_script`] that answer `S <size>` for each of
/// `sizes` that some blob of the cache has (once per size): a file whose size no blob
/// has cannot be there, so it is sent without being hashed first.
#[must_use]
pub(super) fn sizes_probe(sizes: &[u64]) -> String {
    if sizes.is_empty() {
        return String::new();
    }
    let tests: Vec<String> = sizes.iter().map(|size| format!("-size {size}c")).collect();
    format!(
        "if [ -d \"$ob_dir\" ]; then\n  find \"$ob_dir\" -type f \\( {} \\) -exec ls -ln {{}} + 2>/dev/null | awk '{{print \"S \" $5}}' | sort -u\nfi\n",
        tests.join(" -o ")
    )
}

/// The sizes a [`sizes_probe`] answered, and the rest of `output` (the check's own
/// lines, for [`parse_check`]).
#[must_use]
pub(super) fn split_sizes(output: &str) -> (std::collections::BTreeSet<u64>, String) {
    let mut sizes = std::collections::BTreeSet::new();
    let mut rest = String::new();
    for line in output.lines() {
        if let Some(Ok(size)) = line.strip_prefix("S ").map(str::parse) {
            sizes.insert(size);
        } else {
            rest.push_str(line);
            rest.push('\n');
        }
    }
    (sizes, rest)
}

/// The answer of [`check_script`] for `digests`: each one's state.
///
/// # Errors
///
/// [`ExecError::Protocol`] for a line that is not `H`, `M` or `C` and a digest, or
/// when a digest of `digests` is not answered.
pub fn parse_check(
    output: &str,
    digests: &[&str],
) -> Result<BTreeMap<String, BlobState>, ExecError> {
    let mut states = BTreeMap::new();
    for line in output.lines().filter(|line| !line.is_empty()) {
        let (state, digest) = match line.split_once(' ') {
            Some(("H", digest)) => (BlobState::Intact, digest),
            Some(("M", digest)) => (BlobState::Missing, digest),
            Some(("C", digest)) => (BlobState::Corrupted, digest),
            _ => {
                return Err(ExecError::Protocol(format!(
                    "unexpected line from the blob check: `{line}`"
                )));
            }
        };
        states.insert(digest.to_owned(), state);
    }
    if let Some(missing) = digests.iter().find(|digest| !states.contains_key(**digest)) {
        return Err(ExecError::Protocol(format!(
            "the blob check did not answer for `{missing}`"
        )));
    }
    Ok(states)
}

/// The directory where uploads stage their blobs, one directory per upload.
fn incoming_dir(workdir: &str) -> String {
    shell_path(&format!(
        "{}/{BLOBS_DIR}/{INCOMING_DIR}",
        workdir.trim_end_matches('/')
    ))
}

/// The directory under the blob cache where each upload stages what it sends.
pub const INCOMING_DIR: &str = "incoming";

/// Minutes without a write after which an upload's incoming directory is left over
/// from an interrupted upload, and pruned.
pub const INCOMING_STALE_MINUTES: u32 = 60;

/// The script that removes every blob with link count 1 under `<workdir>`'s blob
/// directory and writes `P <bytes>` for each; then what interrupted uploads left in
/// the incoming directory (an upload's directory with nothing written for
/// [`INCOMING_STALE_MINUTES`]; one being written is left alone), a `P <bytes>` for each
/// file; then the records of verified blobs whose blob is gone; nothing
/// when there is no cache.
#[must_use]
pub fn prune_script(workdir: &str) -> String {
    format!(
        r#"set -u
ob_inc={inc}
if [ -d "$ob_inc" ]; then
  for ob_i in "$ob_inc"/*; do
    [ -d "$ob_i" ] || continue
    if [ -z "$(find "$ob_i" -mmin -{stale} -print 2>/dev/null | head -n 1)" ]; then
      find "$ob_i" -type f -exec sh -c 'for f; do s=$(wc -c < "$f") && echo "P $s"; done' sh {{}} +
      rm -rf -- "$ob_i"
    fi
  done
fi
ob_dir={dir}
[ -d "$ob_dir" ] || exit 0
find "$ob_dir" -type f -links 1 -exec sh -c 'for f; do s=$(wc -c < "$f") && rm -f -- "$f" && echo "P $s"; done' sh {{}} +
ob_ver={ver}
[ -d "$ob_ver" ] || exit 0
for ob_v in "$ob_ver"/*; do
  if [ -f "$ob_v" ] && [ ! -f "$ob_dir/${{ob_v##*/}}" ]; then rm -f -- "$ob_v"; fi
done
"#,
        inc = incoming_dir(workdir),
        stale = INCOMING_STALE_MINUTES,
        dir = sha256_dir(workdir),
        ver = verified_dir(workdir),
    )
}

/// Blobs removed by a prune and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// Blobs removed.
    pub blobs: usize,
    /// Their bytes.
    pub bytes: u64,
}

/// The answer of [`prune_script`].
///
/// # Errors
///
/// [`ExecError::Protocol`] for a line that is not `P` and a byte count.
pub fn parse_prune(output: &str) -> Result<PruneReport, ExecError> {
    let mut report = PruneReport::default();
    for line in output.lines().filter(|line| !line.is_empty()) {
        let bytes = line
            .strip_prefix("P ")
            .and_then(|size| size.trim().parse::<u64>().ok())
            .ok_or_else(|| {
                ExecError::Protocol(format!("unexpected line from the blob prune: `{line}`"))
            })?;
        report.blobs += 1;
        report.bytes += bytes;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELLO: &str = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
    const OTHER: &str = "d9298a10d1b0735837dc4bd85dac641b0f3cef27a47e5d53a54f2f3f5b2fcffa";
    const ABSENT: &str = "0000000000000000000000000000000000000000000000000000000000000000";

    #[allow(clippy::disallowed_methods)] // a test runs the script with the local `sh`
    fn run(script: &str) -> String {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    fn cache() -> (tempfile::TempDir, std::path::PathBuf) {
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join(BLOBS_DIR).join("sha256");
        std::fs::create_dir_all(&dir).unwrap();
        (work, dir)
    }

    #[test]
    fn the_check_answers_intact_missing_and_removes_a_corrupted_blob() {
        let (work, dir) = cache();
        std::fs::write(dir.join(HELLO), "hello").unwrap();
        std::fs::write(dir.join(OTHER), "not what its name says").unwrap();
        let digests = [HELLO, OTHER, ABSENT];
        let workdir = work.path().to_str().unwrap();
        let output = run(&check_script(workdir, &digests).unwrap());
        let states = parse_check(&output, &digests).unwrap();
        assert_eq!(states[HELLO], BlobState::Intact);
        assert_eq!(states[OTHER], BlobState::Corrupted);
        assert_eq!(states[ABSENT], BlobState::Missing);
        assert!(!dir.join(OTHER).exists(), "a corrupted blob stays");
        assert!(dir.join(HELLO).exists());
    }

    /// The record of `digest` under `work`, if any.
    fn record(work: &std::path::Path, digest: &str) -> Option<String> {
        std::fs::read_to_string(work.join(BLOBS_DIR).join(VERIFIED_DIR).join(digest)).ok()
    }

    #[test]
    fn a_verified_blob_is_recorded_and_then_trusted_while_untouched() {
        let (work, dir) = cache();
        std::fs::write(dir.join(HELLO), "hello").unwrap();
        let workdir = work.path().to_str().unwrap();
        let output = run(&check_script(workdir, &[HELLO]).unwrap());
        assert_eq!(
            parse_check(&output, &[HELLO]).unwrap()[HELLO],
            BlobState::Intact
        );
        let first = record(work.path(), HELLO).expect("no record of a verified blob");
        // A record matching the blob's inode, size and times is trusted: the blob is
        // not read (shown here by a record written for content that does not match).
        std::fs::write(dir.join(HELLO), "hellO").unwrap();
        let key = run(&format!(
            "{VERIFIED}ob_key {}; printf '%s\\n' \"$ob_k\"",
            crate::shell::quote(dir.join(HELLO).to_str().unwrap())
        ));
        assert_ne!(key, first, "a write left the key as it was");
        std::fs::write(
            work.path().join(BLOBS_DIR).join(VERIFIED_DIR).join(HELLO),
            &key,
        )
        .unwrap();
        let output = run(&check_script(workdir, &[HELLO]).unwrap());
        assert_eq!(
            parse_check(&output, &[HELLO]).unwrap()[HELLO],
            BlobState::Intact
        );
    }

    #[test]
    fn a_blob_written_in_place_with_its_time_set_back_is_read_again() {
        let (work, dir) = cache();
        let blob = dir.join(HELLO);
        std::fs::write(&blob, "hello").unwrap();
        let workdir = work.path().to_str().unwrap();
        run(&check_script(workdir, &[HELLO]).unwrap());
        assert!(record(work.path(), HELLO).is_some());
        let mtime = std::fs::metadata(&blob).unwrap().modified().unwrap();
        std::fs::write(&blob, "hellO").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&blob)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        let output = run(&check_script(workdir, &[HELLO]).unwrap());
        assert_eq!(
            parse_check(&output, &[HELLO]).unwrap()[HELLO],
            BlobState::Corrupted
        );
        assert!(!blob.exists());
        assert!(record(work.path(), HELLO).is_none(), "the record stays");
    }

    #[test]
    fn an_openssl_that_answers_wrong_is_not_used() {
        let (work, dir) = cache();
        std::fs::write(dir.join(HELLO), "hello").unwrap();
        let bin = work.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(
            bin.join("openssl"),
            format!("#!/bin/sh\necho '{OTHER} *stdin'\n"),
        )
        .unwrap();
        std::fs::set_permissions(
            bin.join("openssl"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        std::fs::write(dir.join(OTHER), "not what its name says").unwrap();
        let script = check_script(work.path().to_str().unwrap(), &[HELLO, OTHER]).unwrap();
        let output = run(&format!(
            "PATH={}:$PATH\n{script}",
            crate::shell::quote(bin.to_str().unwrap())
        ));
        let states = parse_check(&output, &[HELLO, OTHER]).unwrap();
        assert_eq!(states[HELLO], BlobState::Intact);
        assert_eq!(states[OTHER], BlobState::Corrupted);
    }

    #[test]
    fn the_check_without_a_cache_answers_missing() {
        let work = tempfile::tempdir().unwrap();
        let output = run(&check_script(work.path().to_str().unwrap(), &[HELLO]).unwrap());
        assert_eq!(
            parse_check(&output, &[HELLO]).unwrap()[HELLO],
            BlobState::Missing
        );
    }

    // Issue 21: the probe answers the asked sizes some blob has, once each, beside the
    // check's own lines; a size no blob has, and no cache at all, answer nothing.
    #[test]
    fn the_sizes_probe_answers_the_sizes_some_blob_has() {
        let (work, dir) = cache();
        std::fs::write(dir.join(HELLO), "hello").unwrap();
        std::fs::write(dir.join(OTHER), "other blob").unwrap();
        let script = check_script(work.path().to_str().unwrap(), &[HELLO]).unwrap()
            + &sizes_probe(&[5, 10, 11]);
        let (sizes, rest) = split_sizes(&run(&script));
        assert_eq!(sizes.into_iter().collect::<Vec<_>>(), [5, 10]);
        assert_eq!(
            parse_check(&rest, &[HELLO]).unwrap()[HELLO],
            BlobState::Intact
        );
        let empty = tempfile::tempdir().unwrap();
        let script =
            check_script(empty.path().to_str().unwrap(), &[]).unwrap() + &sizes_probe(&[5]);
        assert!(split_sizes(&run(&script)).0.is_empty());
        assert_eq!(sizes_probe(&[]), "");
    }

    #[test]
    fn the_check_refuses_a_word_that_is_not_a_digest() {
        let error = check_script("/w", &["$(reboot)"]).unwrap_err();
        assert!(error.to_string().contains("$(reboot)"), "{error}");
    }

    #[test]
    fn parse_check_refuses_an_unanswered_digest_and_an_odd_line() {
        assert!(parse_check("H x\n", &[HELLO]).is_err());
        assert!(parse_check("Q x\n", &[]).is_err());
    }

    #[test]
    fn prune_removes_exactly_the_unlinked_blobs_and_reports_their_bytes() {
        let (work, dir) = cache();
        std::fs::write(dir.join(HELLO), "hello").unwrap();
        std::fs::write(dir.join(OTHER), "other blob").unwrap();
        let run_dir = work.path().join("runs/r1");
        std::fs::create_dir_all(&run_dir).unwrap();
        std::fs::hard_link(dir.join(HELLO), run_dir.join("a.bin")).unwrap();
        let workdir = work.path().to_str().unwrap();
        let records = work.path().join(BLOBS_DIR).join(VERIFIED_DIR);
        std::fs::create_dir_all(&records).unwrap();
        for digest in [HELLO, OTHER] {
            std::fs::write(records.join(digest), "1 2 3.4 5.6\n").unwrap();
        }
        let output = run(&prune_script(workdir));
        assert_eq!(
            parse_prune(&output).unwrap(),
            PruneReport {
                blobs: 1,
                bytes: 10
            }
        );
        assert!(record(work.path(), HELLO).is_some());
        assert!(
            record(work.path(), OTHER).is_none(),
            "a pruned blob's record stays"
        );
        assert!(dir.join(HELLO).exists(), "a linked blob was pruned");
        assert!(!dir.join(OTHER).exists());
        assert_eq!(std::fs::read(run_dir.join("a.bin")).unwrap(), b"hello");
    }

    // Issue 21: an interrupted upload's incoming directory (nothing written for an
    // hour) is pruned with its bytes; one an upload writes now is left alone.
    #[test]
    fn prune_removes_what_interrupted_uploads_left_and_spares_a_running_one() {
        let work = tempfile::tempdir().unwrap();
        let incoming = work.path().join(BLOBS_DIR).join(INCOMING_DIR);
        let stale = incoming.join("u-old");
        let fresh = incoming.join("u-now");
        for dir in [&stale, &fresh] {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join(HELLO), "hello").unwrap();
            std::fs::write(dir.join(OTHER), "other blob").unwrap();
        }
        let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        for file in [stale.join(HELLO), stale.join(OTHER), stale.clone()] {
            std::fs::File::open(&file)
                .unwrap()
                .set_modified(two_hours_ago)
                .unwrap();
        }
        let output = run(&prune_script(work.path().to_str().unwrap()));
        assert_eq!(
            parse_prune(&output).unwrap(),
            PruneReport {
                blobs: 2,
                bytes: 15
            }
        );
        assert!(!stale.exists());
        assert!(fresh.join(OTHER).is_file(), "a running upload was pruned");
    }

    #[test]
    fn prune_without_a_cache_frees_nothing() {
        let work = tempfile::tempdir().unwrap();
        let output = run(&prune_script(work.path().to_str().unwrap()));
        assert_eq!(parse_prune(&output).unwrap(), PruneReport::default());
    }

    #[test]
    fn parse_prune_reads_padded_sizes_and_refuses_an_odd_line() {
        assert_eq!(
            parse_prune("P      7\nP 3\n").unwrap(),
            PruneReport {
                blobs: 2,
                bytes: 10
            }
        );
        assert!(parse_prune("P x\n").is_err());
    }
}

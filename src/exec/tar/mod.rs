//! The local side of file transfers: tar streams written (`pack.rs`) and read
//! (`unpack.rs`) with the `tar` crate, while the target's own `tar` reads or writes
//! the other end.
//!
//! Each transfer runs on one blocking thread that reads or writes the command's
//! pipe itself (grown to 1 MiB where allowed), so a transfer streams with constant
//! memory and no copy through the async runtime.
//! Extraction refuses every entry that would land outside its destination: an
//! absolute path, a `..` component, a path through a symbolic link, a hard link
//! to such a path, or a symbolic link whose target is absolute or leaves the
//! stream's root. It extracts into a fresh directory beside the destination and
//! moves the result into place only when the whole stream was accepted and the
//! sending `tar` exited 0, so a refused stream or a failed sender leaves nothing
//! behind (`place.rs`).

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::os::fd::OwnedFd;
use std::path::Path;

mod pack;
mod place;
mod unpack;

pub(crate) use pack::pack;
pub(crate) use place::STAGING_PREFIX;
pub(crate) use unpack::Extracted;
#[cfg(test)]
use unpack::unpack;

use super::ExecError;
use super::digest::{entries_words, prune_expression};
use crate::shell::quote;

/// Buffer between a transfer thread and its pipe, for tar headers and small files:
/// 256 KiB.
const CHUNK: usize = 256 * 1024;
/// Size asked for the pipe of a transfer: 1 MiB, Linux's default limit for an
/// unprivileged process (`/proc/sys/fs/pipe-max-size`).
const PIPE_SIZE: usize = 1 << 20;

/// The target side of an upload: creates `remote` and extracts the tar stream on
/// standard input there with the target's `tar`, reading records of
/// [`RECORD_BLOCKS`] blocks (GNU and BSD `tar` take a short read from a pipe as it
/// comes, and our stream's last record is short).
#[must_use]
pub(crate) fn extract_script(remote: &str) -> String {
    format!(
        "mkdir -p -- {remote} && cd -- {remote} && exec tar -b {RECORD_BLOCKS} -xf -\n",
        remote = quote(remote)
    )
}

/// The target side of a download: writes to standard output a tar stream of the
/// `entries` (relative to `remote`) that exist, with names matching an `exclude`
/// pattern pruned at any depth (`find -name`, the same rule as
/// [`super::Executor::manifest`]). The member names start with `./`. Nothing is
/// written when no entry exists; it exits 3 with `<remote> does not exist` on
/// standard error when `remote` is not a directory. Needs GNU or BSD `tar` for
/// `-b`, and with `exclude` for `--null -T -` and `--no-recursion`.
///
/// Without `exclude` the target's `tar` walks the tree itself (no `find` listing
/// every name first); it writes records of [`RECORD_BLOCKS`] blocks either way
/// (issue 10: a tenth of the reads and writes of its default 10 KiB).
#[must_use]
pub(crate) fn archive_script(remote: &str, entries: &[String], exclude: &[String]) -> String {
    let archive = if exclude.is_empty() {
        format!("exec tar -b {RECORD_BLOCKS} -cf - -- \"$@\"")
    } else {
        format!(
            "find \"$@\" {prune}-print0 | tar --null --no-recursion -T - -b {RECORD_BLOCKS} -cf -",
            prune = prune_expression(exclude),
        )
    };
    format!(
        r#"cd {remote} 2>/dev/null || {{ printf '%s does not exist\n' {remote} >&2; exit 3; }}
set --
for ob_e in {entries}; do
  if [ -e "./$ob_e" ] || [ -L "./$ob_e" ]; then set -- "$@" "./$ob_e"; fi
done
[ "$#" -eq 0 ] && exit 0
{archive}
"#,
        remote = quote(remote),
        entries = entries_words(entries),
    )
}

/// Blocks of 512 bytes in one record of the target's `tar`: 256, so it moves the
/// stream and the files' data 128 KiB at a time.
const RECORD_BLOCKS: u32 = 256;

/// A pipe to a command, as the blocking file descriptor a transfer thread reads or
/// writes directly: no copy through the async runtime, no wake-up per chunk.
pub(crate) trait IntoPipeFd {
    /// The pipe's descriptor, in blocking mode.
    ///
    /// # Errors
    ///
    /// When its mode cannot be changed.
    fn into_pipe_fd(self) -> std::io::Result<OwnedFd>;
}

macro_rules! pipe_fd {
    ($($type:ty),*) => {$(
        impl IntoPipeFd for $type {
            fn into_pipe_fd(self) -> std::io::Result<OwnedFd> {
                self.into_owned_fd()
            }
        }
    )*};
}

pipe_fd!(
    openssh::ChildStdin,
    openssh::ChildStdout,
    tokio::process::ChildStdin,
    tokio::process::ChildStdout
);

/// Grows the pipe `fd` to [`PIPE_SIZE`] where the system allows: fewer, larger
/// reads and writes on both of its ends. A pipe that stays small still works.
fn widen(fd: &OwnedFd) {
    if let Err(error) = rustix::pipe::fcntl_setpipe_size(fd, PIPE_SIZE) {
        tracing::debug!(%error, "the transfer pipe keeps its size");
    }
}

/// The error of a transfer thread that could not finish.
fn joined(path: &Path, error: &tokio::task::JoinError) -> ExecError {
    ExecError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(error.to_string()),
    }
}

/// Streams a tar of `local` (see [`pack`]) into `stdin`, then closes it. A blocking
/// thread writes the pipe itself.
///
/// # Errors
///
/// Returns the packing error, or [`ExecError::Io`] when `stdin` breaks.
pub(crate) async fn feed(
    local: &Path,
    skip: &[String],
    stdin: impl IntoPipeFd,
) -> Result<(), ExecError> {
    let fd = stdin.into_pipe_fd().map_err(|source| ExecError::Io {
        path: local.to_path_buf(),
        source,
    })?;
    let local_owned = local.to_path_buf();
    let skip = skip.to_vec();
    let packer = tokio::task::spawn_blocking(move || {
        let _span = tracing::debug_span!("pack", local = %local_owned.display()).entered();
        widen(&fd);
        let out = BufWriter::with_capacity(CHUNK, File::from(fd));
        // Dropping `out` at the end closes standard input: the stream ends.
        pack(&local_owned, &skip, out)
    });
    packer.await.map_err(|error| joined(local, &error))?
}

/// The pipe a transfer streams through, taken from the command started with it.
///
/// # Errors
///
/// [`ExecError::Protocol`] naming the standard `which` (`input`, `output`) when the
/// command has none.
pub(crate) fn pipe<T>(pipe: Option<T>, which: &str) -> Result<T, ExecError> {
    pipe.ok_or_else(|| ExecError::Protocol(format!("no standard {which}")))
}

/// Reads a tar stream from `stdout` and extracts it beside `dest` (see
/// [`unpack::extract`]), not yet in place: the caller places it
/// ([`Extracted::place`]) once the target's `tar` has exited 0. A blocking thread
/// reads the pipe itself; after the end of the archive it reads the rest (the padding
/// of the last record), so the target's `tar` ends cleanly.
///
/// # Errors
///
/// Returns the extraction error, or [`ExecError::Io`] when `stdout` breaks.
pub(crate) async fn drain(stdout: impl IntoPipeFd, dest: &Path) -> Result<Extracted, ExecError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ExecError::Io { path, source }
    };
    let fd = stdout.into_pipe_fd().map_err(io(dest))?;
    let dest_owned = dest.to_path_buf();
    let unpacker = tokio::task::spawn_blocking(move || {
        let _span = tracing::debug_span!("unpack", dest = %dest_owned.display()).entered();
        widen(&fd);
        let mut input = BufReader::with_capacity(CHUNK, File::from(fd));
        let extracted = unpack::extract(&mut input, &dest_owned)?;
        std::io::copy(&mut input, &mut std::io::sink()).map_err(io(&dest_owned))?;
        Ok(extracted)
    });
    unpacker.await.map_err(|error| joined(dest, &error))?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream_with(path: &[u8]) -> Vec<u8> {
        let mut header = tar::Header::new_gnu();
        header.as_gnu_mut().unwrap().name[..path.len()].copy_from_slice(path);
        header.set_size(4);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_cksum();
        let mut out = Vec::new();
        out.extend_from_slice(header.as_bytes());
        let mut data = b"evil".to_vec();
        data.resize(512, 0);
        out.extend_from_slice(&data);
        out.extend_from_slice(&[0; 1024]);
        out
    }

    #[test]
    fn escaping_entries_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let dest = root.path().join("dest");
        for path in [
            &b"../escaped"[..],
            b"/tmp/absolute-escape",
            b"a/../../escaped",
        ] {
            let result = unpack(&stream_with(path)[..], &dest);
            assert!(matches!(result, Err(ExecError::Protocol(_))), "{result:?}");
        }
        assert!(!root.path().join("escaped").exists());
        assert!(!dest.exists());
    }

    #[test]
    fn writing_through_a_symlink_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let dest = root.path().join("dest");
        let outside = root.path().join("outside");
        std::fs::create_dir_all(&dest).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, dest.join("link")).unwrap();
        let result = unpack(&stream_with(b"link/file")[..], &dest);
        assert!(result.is_err(), "{result:?}");
        assert!(!outside.join("file").exists());
    }

    #[test]
    fn pack_then_unpack_round_trips() {
        let root = tempfile::tempdir().unwrap();
        let src = root.path().join("src");
        std::fs::create_dir_all(src.join("empty")).unwrap();
        std::fs::create_dir_all(src.join("skipme")).unwrap();
        std::fs::write(src.join("a b"), "x").unwrap();
        std::fs::write(src.join("new\nline"), "").unwrap();
        std::os::unix::fs::symlink("a b", src.join("link")).unwrap();
        let mut stream = Vec::new();
        pack(&src, &["skipme".to_owned()], &mut stream).unwrap();
        let dest = root.path().join("dest");
        unpack(&stream[..], &dest).unwrap();
        assert_eq!(std::fs::read_to_string(dest.join("a b")).unwrap(), "x");
        assert!(dest.join("empty").is_dir());
        assert!(!dest.join("skipme").exists());
        assert_eq!(
            std::fs::read_link(dest.join("link")).unwrap(),
            Path::new("a b")
        );
    }

    /// A stream of a regular file `good` and then a symbolic link `name -> target`.
    fn stream_with_link(name: &str, target: &str) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_size(4);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        builder
            .append_data(&mut header, "good", &b"good"[..])
            .unwrap();
        let mut link = tar::Header::new_gnu();
        link.set_entry_type(tar::EntryType::Symlink);
        link.set_size(0);
        link.set_mode(0o777);
        builder.append_link(&mut link, name, target).unwrap();
        builder.into_inner().unwrap()
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with(".ob-download-"))
            .collect()
    }

    #[test]
    fn a_refused_link_leaves_nothing_of_its_archive() {
        let root = tempfile::tempdir().unwrap();
        let fresh = root.path().join("fresh/dest");
        let existing = root.path().join("existing");
        std::fs::create_dir_all(&existing).unwrap();
        std::fs::write(existing.join("old"), "old").unwrap();
        for (name, target) in [
            ("evil", "/etc"),
            ("evil", "../outside"),
            ("a/evil", "../../outside"),
        ] {
            let stream = stream_with_link(name, target);
            let result = unpack(&stream[..], &fresh);
            assert!(
                matches!(&result, Err(ExecError::EscapingLinks(links)) if links.iter().any(|l| l.contains(name))),
                "{name} -> {target}: {result:?}"
            );
            assert!(!root.path().join("fresh").exists(), "{name} -> {target}");
            let result = unpack(&stream[..], &existing);
            assert!(result.is_err(), "{name} -> {target}");
            let names: Vec<_> = std::fs::read_dir(&existing)
                .unwrap()
                .map(|entry| entry.unwrap().file_name())
                .collect();
            assert_eq!(names, ["old"], "{name} -> {target}");
            assert!(leftovers(root.path()).is_empty());
        }
    }

    #[test]
    fn an_in_tree_link_is_kept_and_merged_into_an_existing_destination() {
        let root = tempfile::tempdir().unwrap();
        let dest = root.path().join("dest");
        std::fs::create_dir_all(&dest).unwrap();
        std::fs::write(dest.join("old"), "old").unwrap();
        std::fs::write(dest.join("good"), "stale").unwrap();
        unpack(&stream_with_link("latest", "good")[..], &dest).unwrap();
        assert_eq!(std::fs::read_to_string(dest.join("old")).unwrap(), "old");
        assert_eq!(std::fs::read_to_string(dest.join("good")).unwrap(), "good");
        assert_eq!(
            std::fs::read_link(dest.join("latest")).unwrap(),
            Path::new("good")
        );
        assert!(leftovers(root.path()).is_empty());
        let fresh = root.path().join("a/b/fresh");
        unpack(&stream_with_link("latest", "good")[..], &fresh).unwrap();
        assert_eq!(
            std::fs::read_link(fresh.join("latest")).unwrap(),
            Path::new("good")
        );
        assert!(leftovers(&root.path().join("a/b")).is_empty());
        assert!(leftovers(root.path()).is_empty());
    }

    fn regular(builder: &mut tar::Builder<Vec<u8>>, name: &str, data: &[u8]) {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        builder.append_data(&mut header, name, data).unwrap();
    }

    fn symlink(builder: &mut tar::Builder<Vec<u8>>, name: &str, target: &str) {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Symlink);
        header.set_size(0);
        header.set_mode(0o777);
        builder.append_link(&mut header, name, target).unwrap();
    }

    #[test]
    fn a_stream_that_ends_inside_a_file_fails_and_leaves_nothing() {
        let root = tempfile::tempdir().unwrap();
        let mut builder = tar::Builder::new(Vec::new());
        regular(&mut builder, "a/first", b"first");
        regular(&mut builder, "a/second", &[7; 5000]);
        let stream = builder.into_inner().unwrap();
        // Cut inside the data of `a/second`: its header and 1,000 of its bytes.
        let cut = 512 * 3 + 1000;
        let dest = root.path().join("dest");
        let result = unpack(&stream[..cut], &dest);
        assert!(
            matches!(&result, Err(ExecError::Io { path, .. }) if path.ends_with("a/second")),
            "{result:?}"
        );
        assert!(!dest.exists());
        assert!(leftovers(root.path()).is_empty());
    }

    #[test]
    fn a_file_replaces_a_link_of_its_name_without_writing_through_it() {
        let root = tempfile::tempdir().unwrap();
        let mut builder = tar::Builder::new(Vec::new());
        regular(&mut builder, "good", b"good");
        symlink(&mut builder, "latest", "good");
        regular(&mut builder, "latest", b"newer");
        let dest = root.path().join("dest");
        unpack(&builder.into_inner().unwrap()[..], &dest).unwrap();
        assert_eq!(std::fs::read_to_string(dest.join("good")).unwrap(), "good");
        let latest = dest.join("latest");
        assert!(std::fs::symlink_metadata(&latest).unwrap().is_file());
        assert_eq!(std::fs::read_to_string(latest).unwrap(), "newer");
    }

    #[test]
    fn a_path_through_a_link_the_stream_made_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let outside = root.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        // `sub` is a directory the stream made; `link` points at it from inside,
        // then a file through `link`; then a link replacing the known directory `a`.
        for entries in [
            &[("sub/x", None), ("link", Some("sub")), ("link/y", None)][..],
            &[("a/f1", None), ("a", Some("sub")), ("a/f2", None)][..],
        ] {
            let mut builder = tar::Builder::new(Vec::new());
            for (name, target) in entries {
                match target {
                    Some(target) => symlink(&mut builder, name, target),
                    None => regular(&mut builder, name, b"data"),
                }
            }
            let dest = root.path().join("dest");
            let result = unpack(&builder.into_inner().unwrap()[..], &dest);
            assert!(result.is_err(), "{entries:?}: {result:?}");
            assert!(!dest.exists(), "{entries:?}");
            assert!(leftovers(root.path()).is_empty(), "{entries:?}");
        }
    }

    #[test]
    fn packed_files_keep_their_bytes_mode_time_and_long_names() {
        use std::os::unix::fs::PermissionsExt as _;
        let root = tempfile::tempdir().unwrap();
        let src = root.path().join("src");
        let long = format!("{}/{}", "d".repeat(120), "f".repeat(150));
        std::fs::create_dir_all(src.join(&long).parent().unwrap()).unwrap();
        // Larger than the 256 KiB buffer and not a whole number of blocks.
        let big: Vec<u8> = (0..(3 << 20) + 77_u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(src.join("big"), &big).unwrap();
        std::fs::write(src.join(&long), "long").unwrap();
        std::fs::write(src.join("read-only"), "ro").unwrap();
        let modified =
            std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
        for (name, mode) in [("big", 0o751), ("read-only", 0o444)] {
            let file = std::fs::File::options()
                .write(true)
                .open(src.join(name))
                .unwrap();
            file.set_modified(modified).unwrap();
            file.set_permissions(std::fs::Permissions::from_mode(mode))
                .unwrap();
        }
        let mut stream = Vec::new();
        pack(&src, &[], &mut stream).unwrap();
        let dest = root.path().join("dest");
        unpack(&stream[..], &dest).unwrap();
        assert!(std::fs::read(dest.join("big")).unwrap() == big);
        assert_eq!(std::fs::read_to_string(dest.join(&long)).unwrap(), "long");
        for (name, mode) in [("big", 0o751), ("read-only", 0o444)] {
            let meta = std::fs::metadata(dest.join(name)).unwrap();
            assert_eq!(meta.permissions().mode() & 0o777, mode, "{name}");
            assert_eq!(meta.modified().unwrap(), modified, "{name}");
        }
    }

    #[test]
    fn regression_modes_the_umask_strips_are_set_exactly() {
        use std::os::unix::fs::PermissionsExt as _;
        // The mask this test runs under, as the extraction reads it: a mode it strips
        // (group or other write under the usual 022) still arrives whole.
        let mask = unpack::umask().unwrap();
        let root = tempfile::tempdir().unwrap();
        let mut builder = tar::Builder::new(Vec::new());
        let modes = [0o644, 0o666, 0o777, 0o400, 0o600, 0o020];
        for mode in modes {
            let mut header = tar::Header::new_gnu();
            header.set_size(1);
            header.set_mode(mode);
            header.set_entry_type(tar::EntryType::Regular);
            let name = format!("f{mode:o}");
            builder.append_data(&mut header, &name, &b"x"[..]).unwrap();
        }
        let dest = root.path().join("dest");
        unpack(&builder.into_inner().unwrap()[..], &dest).unwrap();
        for mode in modes {
            let meta = std::fs::metadata(dest.join(format!("f{mode:o}"))).unwrap();
            assert_eq!(
                meta.permissions().mode() & 0o777,
                mode,
                "{mode:o}, umask {mask:o}"
            );
        }
    }

    #[tokio::test]
    async fn drain_reads_a_real_pipe_to_its_end() {
        let root = tempfile::tempdir().unwrap();
        let mut builder = tar::Builder::new(Vec::new());
        let data = vec![3_u8; 70_000];
        regular(&mut builder, "a/file", &data);
        let mut stream = builder.into_inner().unwrap();
        // Zeros after the end of the archive, as `tar` pads its last record, more
        // than the pipe holds: `cat` ends well only when they are read.
        stream.resize(stream.len() + (3 << 20), 0);
        let archive = root.path().join("stream.tar");
        std::fs::write(&archive, &stream).unwrap();
        #[allow(clippy::disallowed_methods, reason = "a test runs a real process")]
        let mut child = tokio::process::Command::new("cat")
            .arg(&archive)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let dest = root.path().join("dest");
        let extracted = drain(child.stdout.take().unwrap(), &dest).await.unwrap();
        // `cat` wrote everything: the padding was read, nothing broke its pipe.
        assert!(child.wait().await.unwrap().success());
        assert!(!dest.exists(), "not in place before it is placed");
        extracted.place().unwrap();
        assert!(std::fs::read(dest.join("a/file")).unwrap() == data);
    }
}

//! Writing a local directory as a tar stream.
//!
//! Regular files, the bulk of every upload, are written by hand after their header:
//! read in pieces of up to 1 MiB (one read for most files, where the `tar` crate
//! copies through 8 KiB and probes every file for holes) and written to the
//! stream's buffer, so small files share one write to the pipe. Every other kind of
//! entry goes through the `tar` crate's own `append_path_with_name`.

use std::ffi::OsString;
use std::fs::File;
use std::io::{Read as _, Write};
use std::path::{Path, PathBuf};

use crate::exec::ExecError;

/// Largest read of file data: 1 MiB.
const READ_CHUNK: usize = 1 << 20;

/// Writes the content of the directory `local` as a tar stream to `out`: every
/// top-level entry except those named in `skip`, recursively, symbolic links kept as
/// links, empty directories kept.
///
/// # Errors
///
/// Returns [`ExecError::Io`] when `local` or a file under it cannot be read, a file
/// changes size while it is read, or the stream cannot be written.
pub(crate) fn pack(local: &Path, skip: &[String], out: impl Write) -> Result<(), ExecError> {
    let mut builder = tar::Builder::new(out);
    let mut buffer = vec![0_u8; READ_CHUNK];
    builder.follow_symlinks(false);
    let mut names: Vec<OsString> = read_dir(local)?
        .into_iter()
        .filter(|name| {
            !skip
                .iter()
                .any(|skipped| name.as_os_str() == skipped.as_str())
        })
        .collect();
    names.sort();
    // Depth first; a directory's entry comes before its content.
    let mut stack: Vec<(PathBuf, PathBuf)> = names
        .into_iter()
        .rev()
        .map(|name| (local.join(&name), PathBuf::from(name)))
        .collect();
    while let Some((path, name)) = stack.pop() {
        let io = |source| ExecError::Io {
            path: path.clone(),
            source,
        };
        let meta = std::fs::symlink_metadata(&path).map_err(io)?;
        if meta.is_file() {
            append_file(&mut builder, &path, &name, &mut buffer)?;
            continue;
        }
        builder.append_path_with_name(&path, &name).map_err(io)?;
        if meta.is_dir() {
            for child in read_dir(&path)? {
                stack.push((path.join(&child), name.join(&child)));
            }
        }
    }
    builder
        .into_inner()
        .map_err(io_at(local))?
        .flush()
        .map_err(io_at(local))?;
    Ok(())
}

fn io_at(path: &Path) -> impl FnOnce(std::io::Error) -> ExecError {
    let path = path.to_path_buf();
    move |source| ExecError::Io { path, source }
}

/// The names in the directory `dir`.
fn read_dir(dir: &Path) -> Result<Vec<OsString>, ExecError> {
    std::fs::read_dir(dir)
        .map_err(io_at(dir))?
        .map(|entry| entry.map(|entry| entry.file_name()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(io_at(dir))
}

/// The header of the regular file at `path` (named `name` in the stream), then its
/// bytes read through `buffer`, then the padding to a whole block.
fn append_file<W: Write>(
    builder: &mut tar::Builder<W>,
    path: &Path,
    name: &Path,
    buffer: &mut [u8],
) -> Result<(), ExecError> {
    let io = |source| ExecError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    let mut header = tar::Header::new_gnu();
    header.set_metadata_in_mode(&meta, tar::HeaderMode::Complete);
    let size = meta.len();
    // The header (and a long name's extra entry) with no data: the data follows here.
    builder
        .append_data(&mut header, name, std::io::empty())
        .map_err(io)?;
    let out = builder.get_mut();
    let mut copied = 0_u64;
    while copied < size {
        let want =
            usize::try_from(size - copied).map_or(buffer.len(), |left| left.min(buffer.len()));
        let n = file.read(&mut buffer[..want]).map_err(io)?;
        if n == 0 {
            break;
        }
        out.write_all(&buffer[..n]).map_err(io)?;
        copied += n as u64;
    }
    if copied != size {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("the file shrank from {size} to {copied} bytes while it was read"),
        )));
    }
    let padding = (512 - size % 512) % 512;
    out.write_all(&[0; 512][..usize::try_from(padding).unwrap_or(0)])
        .map_err(io)?;
    Ok(())
}

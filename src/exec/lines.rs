//! Following a growing file on a target one complete line at a time.
//!
//! The follower of a run polls `metrics.jsonl` and `job.log` while the job writes
//! them. A poll reads at most [`MAX_TAIL_READ`] bytes, returns only the lines that
//! end in `\n`, and keeps the partial last line for the next poll, so a line is
//! never split between two polls. A line longer than the bound is handed out in
//! pieces of [`MAX_TAIL_READ`] bytes rather than stalling the follower for ever.

use super::{ExecError, Executor};

/// Most bytes one [`LineStream::poll`] reads from the target: 1 MiB.
pub const MAX_TAIL_READ: u64 = 1 << 20;

/// Splits `bytes` into its complete lines and returns them with the number of bytes
/// they took. A line is everything up to a `\n`, which is removed along with a `\r`
/// just before it; invalid UTF-8 is replaced with `U+FFFD`. Bytes after the last
/// `\n` are not consumed.
#[must_use]
pub fn complete_lines(bytes: &[u8]) -> (Vec<String>, usize) {
    let Some(end) = bytes.iter().rposition(|&b| b == b'\n') else {
        return (Vec::new(), 0);
    };
    let lines = bytes[..end]
        .split(|&b| b == b'\n')
        .map(|line| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            String::from_utf8_lossy(line).into_owned()
        })
        .collect();
    (lines, end + 1)
}

/// Follows one file on a target from a byte offset; see [`Executor::tail`].
#[derive(Debug)]
pub struct LineStream<'a, E: ?Sized> {
    executor: &'a E,
    path: String,
    offset: u64,
}

impl<'a, E: Executor + ?Sized> LineStream<'a, E> {
    /// Follows `path` on `executor`'s target from byte `offset`.
    pub fn new(executor: &'a E, path: &str, offset: u64) -> Self {
        Self {
            executor,
            path: path.to_owned(),
            offset,
        }
    }

    /// Byte offset of the first byte not handed out yet. Saving it lets a later
    /// follower resume where this one stopped.
    #[must_use]
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads what was appended since the last poll, with one bounded read of at
    /// most [`MAX_TAIL_READ`] bytes, and returns its complete lines (empty when
    /// nothing new ends in a line break). When a full read holds no line break at
    /// all, its bytes are returned as one piece of a longer line.
    ///
    /// # Errors
    ///
    /// Returns the [`ExecError`] of [`Executor::read_from`]; the offset is then
    /// unchanged and the next poll reads the same bytes again.
    pub async fn poll(&mut self) -> Result<Vec<String>, ExecError> {
        let bytes = self
            .executor
            .read_from(&self.path, self.offset, MAX_TAIL_READ)
            .await?;
        let (mut lines, used) = complete_lines(&bytes);
        let mut used = used as u64;
        if used == 0 && bytes.len() as u64 >= MAX_TAIL_READ {
            lines.push(String::from_utf8_lossy(&bytes).into_owned());
            used = bytes.len() as u64;
        }
        self.offset += used;
        Ok(lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn keeps_the_partial_last_line() {
        let (lines, used) = complete_lines(b"a\r\nb\nc");
        assert_eq!(lines, ["a", "b"]);
        assert_eq!(used, 5);
        assert_eq!(complete_lines(b"no break"), (Vec::new(), 0));
        assert_eq!(complete_lines(b"\n"), (vec![String::new()], 1));
    }

    proptest! {
        #[test]
        fn complete_lines_rebuilds_its_input(text in "[a-z\n]{0,60}") {
            let (lines, used) = complete_lines(text.as_bytes());
            let mut rebuilt = String::new();
            for line in &lines {
                rebuilt.push_str(line);
                rebuilt.push('\n');
            }
            prop_assert_eq!(&rebuilt, &text[..used]);
            prop_assert!(!text[used..].contains('\n'));
        }
    }
}

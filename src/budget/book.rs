//! [`Book`]: the ledger shared by every spender of the project (issue 33). Each look and
//! each append happens under an advisory `flock` on `.overbrainer/ledger.lock` (released
//! when dropped or when the process dies), after reading the lines other processes
//! appended since the last look: a spender that reserves under the lock sees every
//! other spender's reservations and spend, so no two spenders pass the cap together.

use std::fs::File;
use std::path::{Path, PathBuf};

use fs4::fs_std::FileExt;

use super::ledger::{self, Ledger, LedgerLine, Position};
use super::meter::BudgetError;
use super::tally::Tally;
use crate::dataset::jsonl::{JsonlError, SkippedLine};

/// The lock file beside the ledger.
pub const LOCK_FILE: &str = "ledger.lock";

/// The ledger of one project as one process reads and appends it.
#[derive(Debug)]
pub struct Book {
    path: PathBuf,
    at: Position,
    tally: Tally,
    ledger: Option<Ledger>,
}

/// The ledger's lock, held: the tally is current until it is dropped.
#[derive(Debug)]
pub struct Locked<'a> {
    book: &'a mut Book,
    _lock: File,
}

impl Book {
    /// The book of the project at `root`; nothing is read before the first [`Book::lock`].
    #[must_use]
    pub fn new(root: &Path) -> Self {
        Self {
            path: ledger::path(root),
            at: Position::default(),
            tally: Tally::default(),
            ledger: None,
        }
    }

    /// Takes the ledger's lock (waiting for another holder) and reads the lines appended
    /// since the last look; returns the held book and the lines skipped (torn).
    ///
    /// # Errors
    ///
    /// [`BudgetError`] when the lock cannot be taken or the ledger cannot be read.
    pub fn lock(&mut self) -> Result<(Locked<'_>, Vec<SkippedLine>), BudgetError> {
        let io = |action: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| {
                BudgetError::Ledger(JsonlError::Io {
                    action,
                    path,
                    source,
                })
            }
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io("create the directory of", &self.path))?;
        let lock_path = dir.join(LOCK_FILE);
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io("open", &lock_path))?;
        FileExt::lock_exclusive(&lock).map_err(io("lock", &lock_path))?;
        let skipped = self.catch_up()?;
        Ok((
            Locked {
                book: self,
                _lock: lock,
            },
            skipped,
        ))
    }

    fn catch_up(&mut self) -> Result<Vec<SkippedLine>, BudgetError> {
        let (lines, skipped, at) = ledger::read_from(&self.path, self.at)?;
        for line in &lines {
            self.tally.add(line);
        }
        self.at = at;
        Ok(skipped)
    }
}

impl Locked<'_> {
    /// The ledger's spend and reservations, current while the lock is held.
    #[must_use]
    pub fn tally(&self) -> &Tally {
        &self.book.tally
    }

    /// Appends `line` (synced) and counts it.
    ///
    /// # Errors
    ///
    /// [`BudgetError`] when it cannot be written, or the ledger read back.
    pub fn append(&mut self, line: &LedgerLine) -> Result<(), BudgetError> {
        let book = &mut *self.book;
        let mut writer = match book.ledger.take() {
            Some(writer) => writer,
            None => Ledger::open(&book.path)?,
        };
        writer.append(line)?;
        book.ledger = Some(writer);
        // Read back through the file, so the position stays past this line.
        book.catch_up()?;
        Ok(())
    }
}

/// Whether process `pid` of this machine still lives (a request reservation's holder).
#[must_use]
pub fn alive(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        Err(error) => error != rustix::io::Errno::SRCH,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::ledger::ReserveLine;

    #[test]
    fn two_books_of_one_project_see_each_others_lines_after_each_lock() {
        let dir = tempfile::tempdir().unwrap();
        let (mut a, mut b) = (Book::new(dir.path()), Book::new(dir.path()));
        let reserve = |id: &str| {
            LedgerLine::Reserve(ReserveLine {
                at: jiff::Timestamp::now(),
                id: id.into(),
                usd: 1.0,
                run: None,
                pid: Some(std::process::id()),
            })
        };
        {
            let (mut held, _) = a.lock().unwrap();
            held.append(&reserve("a1")).unwrap();
            assert!((held.tally().reserved(alive, None) - 1.0).abs() < 1e-12);
        }
        {
            let (mut held, _) = b.lock().unwrap();
            assert!((held.tally().reserved(alive, None) - 1.0).abs() < 1e-12);
            held.append(&reserve("b1")).unwrap();
        }
        let (held, _) = a.lock().unwrap();
        assert!((held.tally().reserved(alive, None) - 2.0).abs() < 1e-12);
        assert!(alive(std::process::id()));
        assert!(!alive(u32::MAX));
    }
}

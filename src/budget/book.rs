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
        take_lock(&lock, &lock_path, LOCK_WAIT).map_err(io("lock", &lock_path))?;
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

/// How long a spender waits for another process to release the ledger's lock. Each
/// holder keeps it for one read and one append, so a lock held this long belongs to a
/// stopped or hung process.
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Takes `lock` exclusively: at once when it is free; else says once, on the log, that
/// it waits, and tries every 100 ms for `wait` ([`LOCK_WAIT`]), then fails naming the
/// wait.
fn take_lock(lock: &File, path: &Path, wait: std::time::Duration) -> std::io::Result<()> {
    let deadline = std::time::Instant::now() + wait;
    let mut said = false;
    loop {
        if FileExt::try_lock_exclusive(lock)? {
            return Ok(());
        }
        if std::time::Instant::now() >= deadline {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "another process held it for {} s; find it with `fuser {}` and let it end or stop it",
                    wait.as_secs_f64(),
                    path.display()
                ),
            ));
        }
        if !said {
            tracing::warn!(
                "waiting for the budget's ledger lock {}, held by another overbrainer process",
                path.display()
            );
            said = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Whether the process that wrote a request reservation at `at` still lives: process
/// `pid` of this machine exists and started no later than `at` (a process that started
/// after the line was written reuses the ID of the one that wrote it, gone since).
#[must_use]
pub fn alive(pid: u32, at: jiff::Timestamp) -> bool {
    let Some(raw) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    let exists = match rustix::process::test_kill_process(raw) {
        Ok(()) => true,
        Err(error) => error != rustix::io::Errno::SRCH,
    };
    // Where `/proc` cannot say when it started, the process ID alone decides.
    exists && started(pid).is_none_or(|start| start <= at + jiff::SignedDuration::from_secs(2))
}

/// When process `pid` started (`/proc/<pid>/stat` field 22 in clock ticks after the
/// boot, `/proc/stat`'s `btime`), to the second.
fn started(pid: u32) -> Option<jiff::Timestamp> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 2, the command, is in parentheses and may hold spaces.
    let after_command = stat.rsplit_once(") ")?.1;
    let ticks: i64 = after_command.split_whitespace().nth(19)?.parse().ok()?;
    let boot: i64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let per_second = i64::try_from(rustix::param::clock_ticks_per_second()).ok()?;
    jiff::Timestamp::from_second(boot.checked_add(ticks / per_second.max(1))?).ok()
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
        let now = jiff::Timestamp::now();
        assert!(alive(std::process::id(), now));
        assert!(!alive(u32::MAX, now));
        // A line written before this process started is another process's, gone.
        let before = now - jiff::SignedDuration::from_hours(24 * 365 * 30);
        assert!(!alive(std::process::id(), before));
    }

    /// A lock another holder keeps past the wait fails, naming how long and how to find
    /// the holder; the holder's own lock is untouched.
    #[test]
    fn a_lock_held_past_the_wait_fails_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        let holder = File::create(&path).unwrap();
        FileExt::lock_exclusive(&holder).unwrap();
        let waiter = File::open(&path).unwrap();
        let error = take_lock(&waiter, &path, std::time::Duration::from_millis(300)).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::TimedOut);
        let text = error.to_string();
        assert!(text.contains("held it for 0.3 s"), "{text}");
        assert!(
            text.contains(&format!("fuser {}", path.display())),
            "{text}"
        );
        FileExt::unlock(&holder).unwrap();
        take_lock(&waiter, &path, std::time::Duration::from_millis(300)).unwrap();
    }
}

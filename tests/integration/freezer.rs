//! A process that survives `SIGKILL` for tests of what a cancel leaves behind: the
//! cgroup v1 freezer holds a frozen process in uninterruptible sleep (state `D`),
//! as a process stuck in a GPU driver is, until it is thawed.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long the freezer may take.
const DEADLINE: Duration = Duration::from_secs(60);

/// The cgroup v1 freezer, where a frozen process stays through `SIGKILL` (in
/// uninterruptible sleep, state `D`) until it is thawed: a real process that a
/// cancel cannot stop, as one stuck in a GPU driver. Thawed and removed when
/// dropped.
pub struct Frozen {
    dir: PathBuf,
}

impl Frozen {
    /// Freezes process `pid` in a cgroup of its own.
    pub fn freeze(pid: u32) -> Self {
        let root = Path::new("/sys/fs/cgroup/freezer");
        assert!(
            root.join("cgroup.procs").exists(),
            "this test needs the cgroup v1 freezer mounted at {} and root rights \
             (`mount -t cgroup -o freezer freezer {}`)",
            root.display(),
            root.display()
        );
        let dir = root.join(format!("overbrainer-test-{pid}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("freezer cgroup");
        let frozen = Self { dir };
        std::fs::write(frozen.dir.join("cgroup.procs"), pid.to_string()).expect("move");
        std::fs::write(frozen.dir.join("freezer.state"), "FROZEN").expect("freeze");
        crate::util::poll(DEADLINE, &format!("the freezer to freeze {pid}"), || {
            let state =
                std::fs::read_to_string(frozen.dir.join("freezer.state")).unwrap_or_default();
            if state == "FROZEN\n" {
                Ok(())
            } else {
                Err(state)
            }
        });
        frozen
    }

    /// Lets the process run again (a pending `SIGKILL` then ends it).
    pub fn thaw(&self) {
        let _ = std::fs::write(self.dir.join("freezer.state"), "THAWED");
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        self.thaw();
        let deadline = Instant::now() + DEADLINE;
        while std::fs::remove_dir(&self.dir).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

//! The project lock across processes (LCK-2, LCK-3): a second holder is refused with the
//! first one's PID, and the lock disappears with its holder even after `kill -9`.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use overbrainer::project::{LockError, Project};

use crate::util::{TestProject, build_dir, poll};

#[test]
fn a_second_process_is_refused_with_the_pid_and_kill_9_releases_the_lock() {
    let project = TestProject::init();
    let helper = build_dir().join("examples/hold_lock");
    assert!(
        helper.is_file(),
        "{} is missing; `cargo test` builds it (run the whole suite, or `cargo build --examples`)",
        helper.display()
    );
    let mut child = Command::new(&helper)
        .arg(project.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), format!("locked {}", child.id()));

    let opened = Project::open(project.path()).unwrap();
    match opened.lock() {
        Err(LockError::Held { pid, .. }) => assert_eq!(pid, Some(child.id())),
        other => panic!("expected the lock to be held, got {other:?}"),
    }
    let message = opened.lock().unwrap_err().to_string();
    assert!(
        message.contains(&format!("PID {}", child.id())),
        "{message}"
    );

    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // The kernel drops the lock when the process is gone; poll briefly for it.
    poll(
        Duration::from_secs(10),
        "the lock to be released",
        || match opened.lock() {
            Ok(_lock) => Ok(()),
            Err(LockError::Held { .. }) => Err("held"),
            Err(error) => panic!("lock not released after kill -9: {error}"),
        },
    );
}

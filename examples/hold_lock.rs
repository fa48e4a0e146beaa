//! Holds a project's lock until killed: `cargo run --example hold_lock -- DIR`.
//!
//! The lock tests run it as a second process (LCK-2, LCK-3); it is also a quick way to see
//! what another overbrainer command says while the project is busy.

use std::io::Write as _;

fn main() -> std::process::ExitCode {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: hold_lock DIR");
        return std::process::ExitCode::FAILURE;
    };
    let project = match overbrainer::project::Project::open(std::path::Path::new(&dir)) {
        Ok(project) => project,
        Err(error) => {
            eprintln!("error: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match project.lock() {
        Ok(_lock) => {
            println!("locked {}", std::process::id());
            let _ = std::io::stdout().flush();
            loop {
                std::thread::park();
            }
        }
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

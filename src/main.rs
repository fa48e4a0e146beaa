//! The `overbrainer` binary: parses the command line and maps errors to exit codes.

fn main() -> std::process::ExitCode {
    match overbrainer::cli::run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

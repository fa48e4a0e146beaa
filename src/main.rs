//! The `overbrainer` binary: everything happens in [`overbrainer::cli::main`].

fn main() -> std::process::ExitCode {
    overbrainer::cli::main()
}

//! The compare job's script, `compare.sh` (CMP-8, CMP-10, CMP-11): llama.cpp made ready
//! as the export job makes it (the pinned build in the target's cache, or a checked
//! `llama_cpp_dir`), then `compare_client.py` with the target's Python, which serves the
//! GGUF with `llama-server` bound to 127.0.0.1 and asks the questions one at a time. The
//! client runs on the target beside the server, so no port leaves the target and a lost
//! SSH connection does not lose the answers: the job is detached like every job, and
//! its files come back with the compare directory.

use std::fmt::Write as _;

use crate::exec::{self, JobSpec, quote, shell_path};
use crate::gguf::script::{Llama, llama_lines};

/// The client, written into the compare directory.
pub const CLIENT: &str = include_str!("compare_client.py");
/// Its file name.
pub const CLIENT_FILE: &str = "compare_client.py";
/// The script's file name.
pub const SCRIPT_FILE: &str = "compare.sh";
/// The prefix of the client's progress and failure lines in `job.log`.
pub const LINE_PREFIX: &str = "overbrainer-compare: ";

/// Everything the script depends on.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The compare directory on the target, absolute.
    pub dir: String,
    /// The GGUF on the target, absolute.
    pub gguf: String,
    /// llama.cpp.
    pub llama: Llama,
    /// The server's context.
    pub context: u64,
    /// `[compare] max_tokens`.
    pub max_tokens: u32,
    /// `[compare] temperature`.
    pub temperature: f64,
    /// `[compare] server_start_secs`.
    pub server_start_secs: u64,
}

impl Plan {
    /// `compare.sh`, without the runtime's prelude.
    #[must_use]
    pub fn script(&self, spec: &JobSpec) -> String {
        let p = |path: &str| shell_path(path);
        let dir = self.dir.trim_end_matches('/');
        let tree = self.llama.tree();
        let bin = format!("{tree}/build/bin");
        let mut s = String::from("set -e\n");
        let _ = writeln!(s, "cd {}", p(dir));
        let _ = writeln!(
            s,
            "echo {} >&2",
            quote(&format!("{LINE_PREFIX}step llama.cpp"))
        );
        llama_lines(&self.llama, &mut s, dir, &tree, &bin);
        let _ = writeln!(
            s,
            "echo {} >&2",
            quote(&format!("{LINE_PREFIX}step serve and ask"))
        );
        let python = exec::stage_command(spec, "python3", &[]);
        let _ = writeln!(
            s,
            "{python} {} --server {} --gguf {} --questions {} --answers {} --log {} --hardware {} --ctx {} --max-tokens {} --temperature {} --start-secs {}",
            p(&format!("{dir}/{CLIENT_FILE}")),
            p(&format!("{bin}/llama-server")),
            p(&self.gguf),
            p(&format!("{dir}/{}", super::setup::QUESTIONS_JSONL)),
            p(&format!("{dir}/{}", super::setup::CHILD_ANSWERS_JSONL)),
            p(&format!("{dir}/{}", super::setup::SERVER_LOG)),
            p(&format!("{dir}/{}", super::setup::HARDWARE_JSON)),
            self.context,
            self.max_tokens,
            self.temperature,
            self.server_start_secs,
        );
        s
    }
}

/// The failure line of a job's log, if any.
#[must_use]
pub fn failure(log: &str) -> Option<&str> {
    log.lines()
        .rev()
        .find_map(|line| {
            line.trim()
                .strip_prefix(LINE_PREFIX)?
                .strip_prefix("failed: ")
        })
        .or_else(|| crate::gguf::script::refusal(log))
}

/// How many answers the client reported, from a `job.log` line.
#[must_use]
pub fn answered(line: &str) -> Option<(usize, usize)> {
    let rest = line
        .trim()
        .strip_prefix(LINE_PREFIX)?
        .strip_prefix("answered ")?;
    let rest = rest.split_whitespace().next()?;
    let (done, total) = rest.split_once('/')?;
    Some((done.parse().ok()?, total.parse().ok()?))
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::disallowed_methods,
    reason = "tests run python3 and sh"
)]
mod tests {
    use super::*;
    use crate::exec::JobRuntime;

    fn plan() -> Plan {
        Plan {
            dir: "/w/r 1/compares/compare_1".into(),
            gguf: "/w/r 1/output/gguf/r-Q8_0.gguf".into(),
            llama: Llama::Prebuilt {
                dir: "/opt/llama.cpp".into(),
                key: "targets.local.llama_cpp_dir".into(),
            },
            context: 256,
            max_tokens: 64,
            temperature: 0.0,
            server_start_secs: 30,
        }
    }

    #[test]
    fn the_script_checks_llama_cpp_then_runs_the_client_in_the_compare_directory() {
        let spec = JobSpec {
            run_id: "r".into(),
            run_dir: "/w/r 1".into(),
            hf_home: "/w/.hf-cache".into(),
            runtime: JobRuntime::Native { venv: None },
            secret_names: Vec::new(),
            env: Vec::new(),
            container_suffix: None,
        };
        let script = plan().script(&spec);
        assert!(
            script.starts_with("set -e\ncd '/w/r 1/compares/compare_1'\n"),
            "{script}"
        );
        assert!(script.contains("'(build 11434,'"), "{script}");
        assert!(
            script.contains("--server '/opt/llama.cpp/build/bin/llama-server'"),
            "{script}"
        );
        assert!(
            script.contains("--gguf '/w/r 1/output/gguf/r-Q8_0.gguf'"),
            "{script}"
        );
        assert!(
            script.contains("--ctx 256 --max-tokens 64 --temperature 0 --start-secs 30"),
            "{script}"
        );
        let checked = std::process::Command::new("sh")
            .args(["-n", "-c", &script])
            .status()
            .unwrap();
        assert!(checked.success());
    }

    #[test]
    fn the_client_is_valid_python() {
        let status = std::process::Command::new("python3")
            .args(["-c", "import ast,sys; ast.parse(sys.stdin.read())"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write as _;
                child.stdin.take().unwrap().write_all(CLIENT.as_bytes())?;
                child.wait()
            })
            .unwrap();
        assert!(status.success(), "compare_client.py does not parse");
    }

    #[test]
    fn progress_and_failure_lines_are_read_back() {
        assert_eq!(
            answered("overbrainer-compare: answered 3/10"),
            Some((3, 10))
        );
        assert_eq!(
            answered("overbrainer-compare: answered 4/10 (error)"),
            Some((4, 10))
        );
        assert_eq!(answered("answered 3/10"), None);
        let log = "x\noverbrainer-compare: failed: llama-server exited\n";
        assert_eq!(failure(log), Some("llama-server exited"));
        assert_eq!(
            failure("overbrainer-export: refused: `k` is not a tree\n"),
            Some("`k` is not a tree")
        );
        assert_eq!(failure("fine\n"), None);
    }
}

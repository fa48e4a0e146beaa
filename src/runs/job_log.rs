//! A job's `job.log`: where it says why the job failed (the root-cause traceback, or the
//! last error line, and a pointer to its lines for a run's message), and its retrieved
//! lines for `runs logs` ([`retrieved_lines`]).

use super::RunError;
use super::record::RunRecord;
use super::refusal::Refusal;
use crate::project::Project;

/// The retrieved `job.log` of a run, for `runs logs`.
#[derive(Debug)]
pub struct RetrievedLog {
    /// Its lines (the last `tail` with `Some`).
    pub lines: Vec<String>,
    /// Why the run's `run.json` could not be read ([`RunError::BadRecord`], naming the
    /// file), when it could not: the log is shown anyway and this is the warning.
    pub bad_record: Option<RunError>,
}

/// The lines of the retrieved `job.log` of run `run_id` of `project`, only the last
/// `tail` with `Some` (RUN-45); never contacts the target. Bytes that are not UTF-8 read
/// as U+FFFD. A `run.json` that cannot be parsed does not hide the log: it is read from
/// the run's directory all the same, the record's problem handed back as a warning.
///
/// # Errors
///
/// A bad run ID, an unknown run or an unreadable `run.json` ([`RunRecord::load`]),
/// [`Refusal::LogNotRetrieved`] when there is no local `job.log` yet, [`RunError::Io`]
/// when it cannot be read.
pub fn retrieved_lines(
    project: &Project,
    run_id: &str,
    tail: Option<usize>,
) -> Result<RetrievedLog, RunError> {
    let (id, bad_record) = match RunRecord::load(&project.runs_dir(), run_id) {
        Ok(record) => (record.id, None),
        Err(bad @ RunError::BadRecord { .. }) => (run_id.to_owned(), Some(bad)),
        Err(other) => return Err(other),
    };
    let path = project.run_dir(&id).join(crate::exec::JOB_LOG);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(Refusal::LogNotRetrieved { run_id: id }.into());
        }
        Err(source) => return Err(RunError::Io { path, source }),
    };
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    let start = tail.map_or(0, |n| lines.len().saturating_sub(n));
    Ok(RetrievedLog {
        lines: lines[start..]
            .iter()
            .map(|line| (*line).to_owned())
            .collect(),
        bad_record,
    })
}

/// The `; `-prefixed pointer into the log `log` (a path relative to the run directory
/// `local_dir` of run `run_id`) at the lines that say why a job failed, see
/// [`error_lines`]; with `last`, see [`last_error_lines`].
#[must_use]
pub fn log_pointer(local_dir: &std::path::Path, run_id: &str, log: &str, last: bool) -> String {
    let text = std::fs::read(local_dir.join(log)).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines = if last {
        last_error_lines(&text)
    } else {
        error_lines(&text)
    };
    lines.map_or_else(
        || format!("; see `runs/{run_id}/{log}`"),
        |(first, last, text)| format!("; `runs/{run_id}/{log}` lines {first}-{last}: {text}"),
    )
}

/// Where `job.log` says why the job failed: the first and last line numbers (1-based)
/// of the root cause, and its error line trimmed to 300 characters.
///
/// The root cause is the first Python traceback whose final exception line is not
/// a launcher wrapper's `subprocess.CalledProcessError` (the `accelerate launch` and
/// `axolotl` command-line wrappers re-raise a child's failure that way, after the
/// child's own traceback): the lines from its `Traceback (most recent call last):`
/// header to its exception line, the first line after the header that is not an
/// indented frame or source line (Python's `traceback` module format). A
/// `[rankN]: ` prefix, as `torch.distributed` writes it, is ignored. Without such a
/// traceback, the last line naming an error (and the traceback it ends, if any).
#[must_use]
pub fn error_lines(log: &str) -> Option<(usize, usize, String)> {
    let lines: Vec<&str> = log.lines().map(strip_rank).collect();
    root_traceback(&lines).or_else(|| last_error_line(&lines))
}

/// `line` without a leading `[rankN]: ` prefix.
fn strip_rank(line: &str) -> &str {
    line.strip_prefix("[rank")
        .and_then(|rest| rest.split_once("]: "))
        .filter(|(rank, _)| !rank.is_empty() && rank.bytes().all(|b| b.is_ascii_digit()))
        .map_or(line, |(_, rest)| rest)
}

/// Whether `line` is the exception line of a launcher wrapper's traceback.
fn is_wrapper_exception(line: &str) -> bool {
    line.trim().contains("CalledProcessError")
}

/// The first traceback in `lines` whose exception is not a wrapper's, see
/// [`error_lines`].
fn root_traceback(lines: &[&str]) -> Option<(usize, usize, String)> {
    root_tracebacks(lines).into_iter().next()
}

/// Every traceback in `lines` whose exception is not a wrapper's, in order: the first
/// and last line numbers (1-based) and the exception line trimmed to 300 characters.
fn root_tracebacks(lines: &[&str]) -> Vec<(usize, usize, String)> {
    let mut found = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        if !lines[index].starts_with("Traceback (most recent call last)") {
            index += 1;
            continue;
        }
        let header = index;
        let Some(exception) = lines[header + 1..]
            .iter()
            .position(|line| !line.is_empty() && !line.starts_with(char::is_whitespace))
            .map(|offset| header + 1 + offset)
        else {
            break;
        };
        let (end, text) = exception_with_reason(lines, exception);
        if !is_wrapper_exception(lines[exception]) {
            found.push((header + 1, end + 1, text));
        }
        index = end + 1;
    }
    found
}

/// Where the log of a job whose last command failed after earlier ones succeeded (a
/// merge after training) says why: the last traceback whose exception is not a
/// wrapper's (an earlier one did not stop the job), else as [`error_lines`].
#[must_use]
pub fn last_error_lines(log: &str) -> Option<(usize, usize, String)> {
    let lines: Vec<&str> = log.lines().map(strip_rank).collect();
    root_tracebacks(&lines)
        .pop()
        .or_else(|| last_error_line(&lines))
}

/// The last line of `lines` naming an error, and the traceback it ends if any.
fn last_error_line(lines: &[&str]) -> Option<(usize, usize, String)> {
    let is_error = |line: &str| {
        let line = line.trim();
        line.contains("Error") || line.contains("Exception") || line.starts_with("error")
    };
    let last = lines.iter().rposition(|line| {
        let trimmed = line.trim_start();
        is_error(line) && !trimmed.starts_with("File ") && !trimmed.starts_with("raise ")
    })?;
    let first = lines[..last]
        .iter()
        .rposition(|line| line.starts_with("Traceback (most recent call last)"))
        .unwrap_or(last);
    let (end, text) = exception_with_reason(lines, last);
    Some((first + 1, end + 1, text))
}

/// The exception line at `index` with the indented lines right after it, which carry
/// its reason when it has several lines (pydantic's `ValidationError: 1 validation
/// error for ...` is followed by `  Value error, <reason> [type=...]` and a `For
/// further information` line): the index of the last of them, and the exception line
/// joined with the first reason line, trimmed to 300 characters.
fn exception_with_reason(lines: &[&str], index: usize) -> (usize, String) {
    let reasons = lines[index + 1..]
        .iter()
        .take_while(|line| line.starts_with(char::is_whitespace) && !line.trim().is_empty())
        .count();
    let mut text = lines[index].trim().to_owned();
    if let Some(reason) = lines[index + 1..index + 1 + reasons]
        .iter()
        .map(|line| line.trim())
        .find(|line| !line.starts_with("For further information"))
    {
        text.push(' ');
        text.push_str(reason);
    }
    (index + reasons, text.chars().take(300).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::record::{State, fixture};

    #[test]
    fn runs_logs_reads_the_retrieved_log_or_says_it_is_not_retrieved_yet() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("overbrainer.toml"), "").unwrap();
        let project = Project::open(dir.path()).unwrap();
        std::fs::create_dir_all(project.run_dir("r_1")).unwrap();
        fixture("r_1", State::Running)
            .save(&project.runs_dir())
            .unwrap();
        let error = retrieved_lines(&project, "r_1", None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the log of run `r_1` was not retrieved yet; run `overbrainer train attach r_1`"
        );
        std::fs::write(
            project.run_dir("r_1").join(crate::exec::JOB_LOG),
            b"one\ntwo\xff\nthree\n",
        )
        .unwrap();
        assert_eq!(
            retrieved_lines(&project, "r_1", Some(2)).unwrap().lines,
            ["two\u{fffd}", "three"]
        );
        assert_eq!(
            retrieved_lines(&project, "r_1", Some(9))
                .unwrap()
                .lines
                .len(),
            3
        );
        assert_eq!(
            retrieved_lines(&project, "r_1", None).unwrap().lines[0],
            "one"
        );
        assert!(matches!(
            retrieved_lines(&project, "x/y", None),
            Err(RunError::BadRunId(_))
        ));
    }

    // Tester defect 4: a corrupt `run.json` does not hide the retrieved log; the
    // problem comes back as a warning naming the file.
    #[test]
    fn regression_runs_logs_shows_the_log_of_a_run_whose_record_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("overbrainer.toml"), "").unwrap();
        let project = Project::open(dir.path()).unwrap();
        let run = project.run_dir("r_2");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(
            run.join(super::super::record::RUN_JSON),
            "{\"id\": \"r_2\", trunc",
        )
        .unwrap();
        std::fs::write(run.join(crate::exec::JOB_LOG), "first\nlast\n").unwrap();
        let log = retrieved_lines(&project, "r_2", None).unwrap();
        assert_eq!(log.lines, ["first", "last"]);
        let warning = log.bad_record.expect("a warning").to_string();
        assert!(warning.contains("run.json"), "{warning}");
        assert!(warning.contains("r_2"), "{warning}");
        // Without a log, the refusal says so as before.
        std::fs::remove_file(run.join(crate::exec::JOB_LOG)).unwrap();
        assert!(matches!(
            retrieved_lines(&project, "r_2", None),
            Err(RunError::Refused(_))
        ));
    }

    // Tester defect 4: the failure message's line range of a real Axolotl 0.19 log of a
    // configuration pydantic refused ended at the `ValidationError` line and missed the
    // reason below it; it covers the reason lines and the text carries the reason.
    #[test]
    fn regression_the_line_range_of_a_pydantic_error_includes_its_reason() {
        let log = include_str!("../../tests/fixtures/logs/axolotl-pydantic.log");
        let (first, last, text) = error_lines(log).expect("a root cause");
        assert_eq!((first, last), (2, 35));
        assert!(
            text.starts_with(
                "pydantic_core._pydantic_core.ValidationError: 1 validation error for AxolotlConfigWCapabilities Value error, Can't load qlora in 8bit"
            ),
            "{text}"
        );
        assert_eq!(last_error_lines(log).map(|(f, l, _)| (f, l)), Some((2, 35)));
        // Without a traceback, the error line's reason lines count as well.
        assert_eq!(
            error_lines(
                "x\nValidationError: 1 validation error\n  Value error, bad [type=v]\nnext\n"
            ),
            Some((
                2,
                3,
                "ValidationError: 1 validation error Value error, bad [type=v]".to_owned()
            ))
        );
    }

    #[test]
    fn error_lines_point_at_the_last_traceback() {
        let log = "loading\nTraceback (most recent call last):\n  File \"x.py\", line 1\n    raise OSError(x)\nOSError: /nope is not a directory\nwarning: later\n";
        assert_eq!(
            error_lines(log),
            Some((2, 5, "OSError: /nope is not a directory".to_owned()))
        );
        assert_eq!(
            error_lines("a\nValueError: bad\n"),
            Some((2, 2, "ValueError: bad".to_owned()))
        );
        assert_eq!(error_lines("all good\n"), None);
    }

    /// Numbered `job.log` text: `filler` plain lines, then `tail`.
    fn log_with(filler: usize, tail: &[&str]) -> String {
        let mut log = String::new();
        for n in 1..=filler {
            log.push_str("[INFO] step ");
            log.push_str(&n.to_string());
            log.push('\n');
        }
        for line in tail {
            log.push_str(line);
            log.push('\n');
        }
        log
    }

    /// The wrapper traceback that `accelerate launch` prints after its child failed.
    const ACCELERATE_WRAPPER: [&str; 11] = [
        "Traceback (most recent call last):",
        "  File \"/venv/bin/accelerate\", line 8, in <module>",
        "    sys.exit(main())",
        "  File \"/venv/lib/python3.11/site-packages/accelerate/commands/accelerate_cli.py\", line 50, in main",
        "    args.func(args)",
        "  File \"/venv/lib/python3.11/site-packages/accelerate/commands/launch.py\", line 1204, in launch_command",
        "    simple_launcher(args)",
        "  File \"/venv/lib/python3.11/site-packages/accelerate/commands/launch.py\", line 825, in simple_launcher",
        "    raise subprocess.CalledProcessError(returncode=process.returncode, cmd=cmd)",
        "subprocess.CalledProcessError: Command '['/venv/bin/python', '-m', 'axolotl.cli.train', 'axolotl.yaml']' returned non-zero exit status 1.",
        "Error: the training process failed",
    ];

    #[test]
    fn a_missing_base_model_points_at_the_root_exception_not_the_launcher() {
        let mut tail = vec![
            "Traceback (most recent call last):",
            "  File \"/venv/lib/python3.11/site-packages/transformers/utils/hub.py\", line 402, in cached_file",
            "    resolved_file = hf_hub_download(",
            "  File \"/venv/lib/python3.11/site-packages/huggingface_hub/utils/_validators.py\", line 106, in _inner_fn",
            "    validate_repo_id(arg_value)",
            "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': '/models/none'.",
            "",
            "During handling of the above exception, another exception occurred:",
            "",
            "Traceback (most recent call last):",
            "  File \"/venv/lib/python3.11/site-packages/transformers/utils/hub.py\", line 466, in cached_file",
            "    raise EnvironmentError(",
            "OSError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': '/models/none'. Use `repo_type` argument if needed.",
        ];
        tail.extend(ACCELERATE_WRAPPER);
        // The first traceback's exception is the root cause: line 60 + 6.
        let log = log_with(60, &tail);
        assert_eq!(
            error_lines(&log),
            Some((
                61,
                66,
                "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': '/models/none'.".to_owned()
            ))
        );

        // Only the OSError traceback (as the brief's log had it at line 81), then
        // the wrapper at 82-92.
        let mut tail = vec![
            "Traceback (most recent call last):",
            "  File \"/venv/lib/python3.11/site-packages/axolotl/cli/train.py\", line 30, in do_cli",
            "    model, tokenizer = load_model_and_tokenizer(cfg=cfg)",
            "  File \"/venv/lib/python3.11/site-packages/transformers/utils/hub.py\", line 466, in cached_file",
            "    raise EnvironmentError(",
            "OSError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': '/models/none'.",
        ];
        tail.extend(ACCELERATE_WRAPPER);
        let log = log_with(75, &tail);
        let (first, last, text) = error_lines(&log).expect("a root cause");
        assert_eq!((first, last), (76, 81));
        assert!(text.starts_with("OSError: Repo id must be"), "{text}");
    }

    #[test]
    fn bad_json_points_at_the_arrow_error_and_skips_rank_prefixes() {
        let mut tail = vec![
            "[rank0]: Traceback (most recent call last):",
            "[rank0]:   File \"/venv/lib/python3.11/site-packages/datasets/packaged_modules/json/json.py\", line 153, in _generate_tables",
            "[rank0]:     pa_table = paj.read_json(",
            "[rank0]:   File \"pyarrow/_json.pyx\", line 308, in pyarrow._json.read_json",
            "[rank0]: pyarrow.lib.ArrowInvalid: JSON parse error: Missing a name for object member. in row 0",
        ];
        tail.extend(std::iter::repeat_n("[INFO] shutting down", 72));
        tail.extend(ACCELERATE_WRAPPER);
        let log = log_with(262, &tail);
        assert_eq!(
            error_lines(&log),
            Some((
                263,
                267,
                "pyarrow.lib.ArrowInvalid: JSON parse error: Missing a name for object member. in row 0".to_owned()
            ))
        );
    }

    #[test]
    fn a_failed_merge_points_at_its_own_traceback_not_an_earlier_one() {
        let mut tail = vec![
            "Traceback (most recent call last):",
            "  File \"/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py\", line 9",
            "ResourceWarning: unclosed file",
            "[INFO] training done",
            "Traceback (most recent call last):",
            "  File \"/venv/lib/python3.11/site-packages/axolotl/cli/merge_lora.py\", line 40",
            "OSError: [Errno 28] No space left on device",
        ];
        tail.extend(ACCELERATE_WRAPPER);
        let log = log_with(10, &tail);
        assert_eq!(
            last_error_lines(&log),
            Some((
                15,
                17,
                "OSError: [Errno 28] No space left on device".to_owned()
            ))
        );
        assert_eq!(error_lines(&log).map(|(first, ..)| first), Some(11));
        assert_eq!(
            last_error_lines("a\nValueError: bad\n"),
            Some((2, 2, "ValueError: bad".to_owned()))
        );
    }

    #[test]
    fn only_a_wrapper_traceback_falls_back_to_the_last_error_line() {
        let log = log_with(3, &ACCELERATE_WRAPPER);
        assert_eq!(
            error_lines(&log),
            Some((4, 14, "Error: the training process failed".to_owned()))
        );
        assert_eq!(strip_rank("[rank]: x"), "[rank]: x");
        assert_eq!(strip_rank("[rank12]: x"), "x");
    }
}

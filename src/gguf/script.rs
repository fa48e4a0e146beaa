//! An export job's script (issue 14, EXP-4): the steps, in order, and the command of
//! each; the runtime's prelude comes first ([`JobSpec::job`]). The steps: llama.cpp
//! (built once into the target's cache, or a prebuilt tree checked to be the pinned
//! build), the preflight (before anything slow), the merge into `export-work/` when the
//! run has only an adapter, the conversion to a 16-bit GGUF, `llama-quantize`, and the
//! check (read-back, one answer from `llama-server`, `export.json` and the `Modelfile`).
//! `export-work/` is removed when the script exits, also after a failed step.

use std::fmt::Write as _;

use super::llama::{LLAMA_BUILD, LLAMA_ENV_SCRIPT, tree_in};
use crate::exec::{self, JobRuntime, JobSpec, quote, shell_path};
use crate::train::axolotl::{AXOLOTL_YAML, MERGED_DIR, OUTPUT_DIR};

/// The Python side of the job, written into the job's directory.
pub const EXPORT_TOOL: &str = include_str!("export_tool.py");
/// Its file name there.
pub const EXPORT_TOOL_FILE: &str = "export_tool.py";
/// The scratch directory inside the job's directory (EXP-4).
pub const WORK_DIR: &str = "export-work";
/// `export.json`, in the job's directory (EXP-7).
pub const EXPORT_JSON: &str = "export.json";
/// The GGUF directory inside the run directory (EXP-5).
pub const GGUF_DIR: &str = "gguf";
/// The prefix of the job's progress and refusal lines in `job.log`.
pub const LINE_PREFIX: &str = "overbrainer-export: ";
/// What follows [`LINE_PREFIX`] on a refusal line.
pub const REFUSED: &str = "refused: ";
/// The job's exit status after a refusal.
pub const REFUSED_STATUS: i32 = 3;

/// Where llama.cpp comes from on the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Llama {
    /// Built by the job into this cache directory (absolute on the target).
    Build {
        /// `<workdir>/.cache/llama.cpp/b11434`.
        cache: String,
    },
    /// A prebuilt tree (`[targets.NAME] llama_cpp_dir`), checked to be the pinned build.
    Prebuilt {
        /// The tree.
        dir: String,
        /// The key naming it, for the refusal.
        key: String,
    },
}

impl Llama {
    /// The llama.cpp tree the steps use.
    #[must_use]
    pub fn tree(&self) -> String {
        match self {
            Self::Build { cache } => tree_in(cache),
            Self::Prebuilt { dir, .. } => dir.trim_end_matches('/').to_owned(),
        }
    }
}

/// What the model to export is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The run's `output/merged/` (or a full fine-tune's `output/`, or a stopped full
    /// fine-tune's snapshot checkpoint), used as is.
    Model(String),
    /// Only an adapter: merged into `export-work/` over this base model.
    Adapter {
        /// `base_model` of `axolotl.yaml`: a directory on the target, or a Hub ID the
        /// preflight finds in the target's Hugging Face cache, where training put it.
        base_model: String,
        /// The adapter's directory on the target, absolute: `output/`, or a stopped
        /// run's snapshot checkpoint `output/checkpoint-N/`.
        adapter: String,
    },
}

/// Everything an export job's script depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Run ID (the GGUF's `general.name` and file name).
    pub run_id: String,
    /// Run directory on the target, absolute.
    pub run_dir: String,
    /// The export's job directory on the target, absolute.
    pub job_dir: String,
    /// Quantization type, already checked.
    pub quantize: String,
    /// llama.cpp.
    pub llama: Llama,
    /// The model.
    pub source: Source,
    /// `[export] pre_tokenizer`.
    pub pre_tokenizer: Option<String>,
    /// The Modelfile's `num_ctx` (`sequence_len` of the run's `axolotl.yaml`).
    pub num_ctx: u64,
    /// Where `export.json` goes, absolute: the job's directory, or `output/gguf/` for
    /// an in-job export.
    pub export_json: String,
    /// For a stopped run (EXP-1): the snapshot's step, recorded in `export.json` as a
    /// partial model.
    pub partial_step: Option<u64>,
}

/// How the job's programs see the target's paths: as they are (native), or through a
/// container's mounts (the run directory at [`exec::CONTAINER_RUN_DIR`], llama.cpp at
/// [`exec::CONTAINER_TOOLS_CACHE`]); paths elsewhere (a base model in the image) as
/// they are.
struct Paths<'a> {
    run: &'a str,
    tools: Option<&'a str>,
    container: bool,
}

impl Paths<'_> {
    fn inside(&self, path: &str) -> String {
        if !self.container {
            return path.to_owned();
        }
        let under = |root: &str| {
            path.strip_prefix(root)
                .filter(|rest| rest.is_empty() || rest.starts_with('/'))
                .map(str::to_owned)
        };
        if let Some(rest) = under(self.run) {
            return format!("{}{rest}", exec::CONTAINER_RUN_DIR);
        }
        if let Some(rest) = self.tools.and_then(under) {
            return format!("{}{rest}", exec::CONTAINER_TOOLS_CACHE);
        }
        path.to_owned()
    }
}

impl Plan {
    /// The GGUF's file name, `<run-id>-<TYPE>.gguf` (EXP-5).
    #[must_use]
    pub fn file_name(&self) -> String {
        format!("{}-{}.gguf", self.run_id, self.quantize)
    }

    /// The GGUF's path relative to the run directory.
    #[must_use]
    pub fn file(&self) -> String {
        format!("{OUTPUT_DIR}/{GGUF_DIR}/{}", self.file_name())
    }

    /// Whether the conversion writes the final type itself (`F16`, `BF16`: no
    /// `llama-quantize`, EXP-4).
    fn unquantized(&self) -> bool {
        matches!(self.quantize.as_str(), "F16" | "BF16")
    }

    fn paths<'a>(&'a self, spec: &'a JobSpec) -> Paths<'a> {
        match &spec.runtime {
            JobRuntime::Native { .. } => Paths {
                run: self.run_dir.trim_end_matches('/'),
                tools: None,
                container: false,
            },
            JobRuntime::Container { tools_cache, .. } => Paths {
                run: self.run_dir.trim_end_matches('/'),
                tools: tools_cache.as_deref().map(|t| t.trim_end_matches('/')),
                container: true,
            },
        }
    }

    /// The script, without the runtime's prelude. In a container runtime each program
    /// runs through [`exec::stage_command`] with the paths it sees there; the script's
    /// own shell steps (the trap, moving the results) use the target's.
    #[must_use]
    #[allow(
        clippy::too_many_lines,
        reason = "the job's steps in order, read top to bottom"
    )]
    pub fn script(&self, spec: &JobSpec) -> String {
        let p = |path: &str| shell_path(path);
        let paths = self.paths(spec);
        let i = |path: &str| paths.inside(path);
        let run = self.run_dir.trim_end_matches('/');
        let job = self.job_dir.trim_end_matches('/');
        let work = format!("{job}/{WORK_DIR}");
        let tree = self.llama.tree();
        let bin = format!("{tree}/build/bin");
        let tool = format!("{job}/{EXPORT_TOOL_FILE}");
        let python = |args: Vec<String>| {
            let mut all = vec![i(&tool)];
            all.extend(args);
            let all: Vec<&str> = all.iter().map(String::as_str).collect();
            exec::stage_command(spec, "python3", &all)
        };
        let mut s = String::from("set -e\n");
        let remove = quote(&work).replace('\'', "'\\''");
        // A cancel's SIGTERM (or a hang-up) ends the script through the trap too.
        let _ = writeln!(
            s,
            "trap 'rm -rf {remove}' EXIT\ntrap 'rm -rf {remove}; exit 143' TERM INT HUP"
        );
        // `export-work/` exists from the job's start (the trap removes it).
        let _ = writeln!(s, "rm -rf {}\nmkdir -p {}", p(&work), p(&work));
        let _ = writeln!(
            s,
            "cat > {} <<'OB_EXPORT_TOOL'\n{EXPORT_TOOL}OB_EXPORT_TOOL",
            p(&tool)
        );
        // The target's Python before anything slow: without the modules the export needs
        // (no `venv` set), a llama.cpp build of many minutes would come before the refusal.
        let _ = writeln!(s, "{}", python(vec!["python".to_owned()]));
        step(&mut s, "1/6 llama.cpp");
        self.llama_step(&mut s, spec, &paths, job, &bin);
        let (model, tokenizer, merge) = match &self.source {
            Source::Model(dir) => (dir.clone(), dir.clone(), false),
            Source::Adapter {
                base_model,
                adapter,
            } => (base_model.clone(), adapter.clone(), true),
        };
        // The steps from the preflight (or, after a merge, the conversion) to the check run
        // in one Python process (`:::` between them): Python, numpy and torch start once.
        let mut chain: Vec<Vec<String>> = Vec::new();
        let say = |chain: &mut Vec<Vec<String>>, what: &str| {
            chain.push(vec!["step".to_owned(), what.to_owned()]);
        };
        let mut preflight = vec![
            "preflight".to_owned(),
            "--tree".to_owned(),
            i(&tree),
            "--model".to_owned(),
            i(&model),
            "--tokenizer".to_owned(),
            i(&tokenizer),
            "--quantize".to_owned(),
            self.quantize.clone(),
            "--work".to_owned(),
            i(&work),
        ];
        let model = if merge {
            // The merge is Axolotl's own process, between the preflight and the rest.
            step(&mut s, "2/6 preflight");
            preflight.push("--merge".to_owned());
            let _ = writeln!(s, "{}", python(preflight));
            Self::merge_step(&mut s, spec, &paths, run, &tokenizer, &work)
        } else {
            say(&mut chain, "2/6 preflight");
            chain.push(preflight);
            say(&mut chain, "3/6 merge: not needed");
            model
        };
        let staged = format!("{work}/{}", self.file_name());
        let sixteen = if self.unquantized() {
            staged.clone()
        } else {
            format!("{work}/{}-16bit.gguf", self.run_id)
        };
        let outtype = match self.quantize.as_str() {
            "F16" => "f16",
            "BF16" => "bf16",
            _ => "auto",
        };
        say(&mut chain, "4/6 convert to a 16-bit GGUF");
        let mut convert = vec![
            "convert".to_owned(),
            "--tree".to_owned(),
            i(&tree),
            "--model".to_owned(),
            i(&model),
            "--out".to_owned(),
            i(&sixteen),
            "--outtype".to_owned(),
            outtype.to_owned(),
            "--name".to_owned(),
            self.run_id.clone(),
        ];
        if let Some(pre) = &self.pre_tokenizer {
            convert.extend(["--pre-tokenizer".to_owned(), pre.clone()]);
        }
        chain.push(convert);
        if self.unquantized() {
            say(&mut chain, "5/6 quantize: not needed");
        } else {
            say(&mut chain, &format!("5/6 quantize to {}", self.quantize));
            chain.push(vec![
                "quantize".to_owned(),
                "--bin".to_owned(),
                i(&format!("{bin}/llama-quantize")),
                "--src".to_owned(),
                i(&sixteen),
                "--dst".to_owned(),
                i(&staged),
                "--type".to_owned(),
                self.quantize.clone(),
            ]);
        }
        say(&mut chain, "6/6 check the GGUF and answer one prompt");
        let gguf_dir = format!("{run}/{OUTPUT_DIR}/{GGUF_DIR}");
        let _ = writeln!(s, "mkdir -p {}", p(&gguf_dir));
        let mut check = vec![
            "check".to_owned(),
            "--tree".to_owned(),
            i(&tree),
            "--gguf".to_owned(),
            i(&staged),
            "--tokenizer".to_owned(),
            i(&tokenizer),
            "--name".to_owned(),
            self.run_id.clone(),
            "--server".to_owned(),
            i(&format!("{bin}/llama-server")),
            "--modelfile".to_owned(),
            i(&format!("{work}/Modelfile")),
            "--export-json".to_owned(),
            i(&self.export_json),
            "--quantize".to_owned(),
            self.quantize.clone(),
            "--file".to_owned(),
            self.file(),
            "--num-ctx".to_owned(),
            self.num_ctx.to_string(),
            "--source".to_owned(),
            relative_to(run, &tokenizer),
        ];
        if let Some(step) = self.partial_step {
            check.extend(["--partial-step".to_owned(), step.to_string()]);
        }
        chain.push(check);
        let _ = writeln!(s, "{}", python(chain.join(&[":::".to_owned()][..])));
        let _ = writeln!(
            s,
            "mv {} {}/\nmv {} {}/",
            p(&staged),
            p(&gguf_dir),
            p(&format!("{work}/Modelfile")),
            p(&gguf_dir)
        );
        step(&mut s, "done");
        s
    }

    fn llama_step(&self, s: &mut String, spec: &JobSpec, paths: &Paths<'_>, job: &str, bin: &str) {
        let tree = self.llama.tree();
        if !paths.container {
            llama_lines(&self.llama, s, job, &tree, bin);
            return;
        }
        let p = |path: &str| shell_path(path);
        match &self.llama {
            Llama::Build { cache } => {
                let env = format!("{job}/llama-env.sh");
                let _ = writeln!(
                    s,
                    "cat > {} <<'OB_LLAMA_ENV'\n{LLAMA_ENV_SCRIPT}OB_LLAMA_ENV",
                    p(&env)
                );
                let _ = writeln!(
                    s,
                    "{} >/dev/null",
                    exec::stage_command(spec, "bash", &[&paths.inside(&env), &paths.inside(cache)])
                );
            }
            Llama::Prebuilt { dir, key } => {
                let server = paths.inside(&format!("{bin}/llama-server"));
                let version = format!(
                    "{{ {}; }}",
                    exec::stage_command(spec, &server, &["--version"])
                );
                let _ = writeln!(
                    s,
                    "if ! {version} 2>&1 | grep -q '(build {LLAMA_BUILD},' || [ ! -x {quantize} ] || [ ! -f {converter} ]; then\n  echo {msg} >&2\n  exit {REFUSED_STATUS}\nfi",
                    quantize = p(&format!("{bin}/llama-quantize")),
                    converter = p(&format!("{tree}/convert_hf_to_gguf.py")),
                    msg = quote(&format!(
                        "{LINE_PREFIX}{REFUSED}`{key}` = `{dir}` is not a llama.cpp b{LLAMA_BUILD} tree (convert_hf_to_gguf.py, build/bin/llama-server and build/bin/llama-quantize); point it at one or unset it to build the pinned llama.cpp"
                    )),
                );
            }
        }
    }

    /// The merge of `adapter` into `export-work/merged/` (EXP-4 step 1), with the
    /// adapter's tokenizer files copied beside the merged model where the merge left
    /// them out; returns the merged directory.
    fn merge_step(
        s: &mut String,
        spec: &JobSpec,
        paths: &Paths<'_>,
        run: &str,
        adapter: &str,
        work: &str,
    ) -> String {
        let p = |path: &str| shell_path(path);
        step(s, "3/6 merge into export-work/");
        let merged = format!("{work}/{MERGED_DIR}");
        let lora = format!("--lora-model-dir={}", paths.inside(adapter));
        let output = format!("--output-dir={}", paths.inside(work));
        let _ = writeln!(
            s,
            "(cd {} && {})",
            p(run),
            exec::stage_command(
                spec,
                "axolotl",
                &["merge-lora", AXOLOTL_YAML, &lora, &output]
            ),
        );
        let _ = writeln!(
            s,
            "for f in {out}/tokenizer.json {out}/tokenizer.model {out}/tokenizer_config.json {out}/special_tokens_map.json {out}/chat_template.jinja; do\n  if [ -e \"$f\" ] && [ ! -e {merged}/\"${{f##*/}}\" ]; then cp \"$f\" {merged}/; fi\ndone",
            out = p(adapter),
            merged = p(&merged),
        );
        merged
    }
}

/// `program args` where the job's programs run: directly, or in the job's container.
/// `path` relative to the run directory `run` (as `export.json` names files), or as it
/// is when outside it.
fn relative_to(run: &str, path: &str) -> String {
    path.strip_prefix(run)
        .and_then(|rest| rest.strip_prefix('/'))
        .unwrap_or(path)
        .trim_end_matches('/')
        .to_owned()
}

/// The lines that make llama.cpp ready in a job whose directory is `job`: the pinned
/// build into its cache, or the prebuilt tree checked to be that build (the refusal names
/// its key). The export and compare jobs both start with them.
pub fn llama_lines(llama: &Llama, s: &mut String, job: &str, tree: &str, bin: &str) {
    let p = |path: &str| shell_path(path);
    match llama {
        Llama::Build { cache } => {
            let env = format!("{job}/llama-env.sh");
            let _ = writeln!(
                s,
                "cat > {} <<'OB_LLAMA_ENV'\n{LLAMA_ENV_SCRIPT}OB_LLAMA_ENV",
                p(&env)
            );
            let _ = writeln!(s, "bash {} {} >/dev/null", p(&env), p(cache));
        }
        Llama::Prebuilt { dir, key } => {
            let _ = writeln!(
                s,
                "if ! {server} --version 2>&1 | grep -q '(build {LLAMA_BUILD},' || [ ! -x {quantize} ] || [ ! -f {converter} ]; then\n  echo {msg} >&2\n  exit {REFUSED_STATUS}\nfi",
                server = p(&format!("{bin}/llama-server")),
                quantize = p(&format!("{bin}/llama-quantize")),
                converter = p(&format!("{tree}/convert_hf_to_gguf.py")),
                msg = quote(&format!(
                    "{LINE_PREFIX}{REFUSED}`{key}` = `{dir}` is not a llama.cpp b{LLAMA_BUILD} tree (convert_hf_to_gguf.py, build/bin/llama-server and build/bin/llama-quantize); point it at one or unset it to build the pinned llama.cpp"
                )),
            );
        }
    }
}

/// The export stage of a training job with `[export] after_training = true` (EXP-12):
/// [`Plan::script`] in a subshell (so its `EXIT` trap stays its own), run in the run
/// directory after the merge; its `export-work/` is there, and `export.json` goes to
/// `output/gguf/` so it comes back with `output/` \[design\].
#[must_use]
pub fn in_job(plan: &Plan, spec: &JobSpec) -> String {
    format!("(\n{})", plan.script(spec))
}

fn step(script: &mut String, what: &str) {
    let _ = writeln!(
        script,
        "echo {} >&2",
        quote(&format!("{LINE_PREFIX}step {what}"))
    );
}

/// The refusal a job's log ends with, if any: the text after `refused: ` of its last
/// refusal line.
#[must_use]
pub fn refusal(log: &str) -> Option<&str> {
    log.lines()
        .rev()
        .find_map(|line| line.trim().strip_prefix(LINE_PREFIX)?.strip_prefix(REFUSED))
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests run the script's shell with sh"
)]
#[path = "script_tests.rs"]
mod tests;

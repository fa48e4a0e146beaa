//! The stand-in's pods as real Podman containers (issue 12): each created pod runs a
//! pod image of `scripts/container-env.sh` (sshd, bash, python3, curl, tar, sha256sum,
//! setsid): the one its create body names when it is one of those (`pod-plain`, no
//! entrypoint) or one a test added ([`PodRunner::images`]), else the `pod` image (an
//! entrypoint and a `/start.sh` like runpod/pytorch's), with the body's `env`, its
//! `{{ RUNPOD_SECRET_<name> }}` references substituted as Runpod does inside the pod.
//! Its `args` are what v2 makes of them (issue 34: "Arguments passed to the container
//! entrypoint"): split into words as a shell splits them, they replace the image's
//! `CMD` and run under its `ENTRYPOINT`; without them the image's own command runs.
//! Every pod holds the test Axolotl venv read-only at [`DEFAULT_VENV`], the default
//! `venv` of a `runpod` target, as the default image holds Axolotl there (POD-74).
//! Port 22 is published on 127.0.0.1 only; the pods live on a network the runner
//! makes, whose gateway (this machine) is where the stand-in listens, so the pods'
//! watchdog reaches the API and nothing else. `DELETE` removes the container, so a
//! leaked pod is a running container anyone can see. Every container carries the
//! stand-in's own label, found and removed when the stand-in is dropped.
//!
//! The environment goes to Podman in a private file (`--env-file`, removed once the
//! container exists), never as `-e NAME=value`: secrets stay out of every argv. An env
//! file holds one line per variable, so secret values must be single-line (the host key
//! secret is base64).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

use crate::engines::container_env;

/// Where every pod holds the test Axolotl venv: the default `venv` of a `runpod` target.
pub const DEFAULT_VENV: &str = "/workspace/axolotl-venv";

/// Starts and removes the stand-in's containers.
#[derive(Debug, Clone)]
pub struct PodRunner {
    podman: PathBuf,
    image: String,
    /// The images a create body may name (the others get [`Self::image`]): the two pod
    /// images, and those a test adds (built from them).
    pub images: Vec<String>,
    /// The test Axolotl venv, mounted at [`DEFAULT_VENV`].
    venv: String,
    /// The label value every container of this stand-in carries.
    pub label: String,
    dir: PathBuf,
    /// The key the pods get as their pod-scoped `RUNPOD_API_KEY`.
    api_key: String,
    /// The network the test made for its pods.
    network: String,
    /// Its gateway: this machine's address on that network, where the stand-in listens.
    gateway: std::net::Ipv4Addr,
    /// Directories of this machine mounted read-only at the same path in every pod (the
    /// Axolotl venv, its Python and the tiny model, as a Runpod image would hold them).
    pub mounts: Vec<PathBuf>,
}

fn run(command: &mut Command) -> Result<Output, String> {
    let output = crate::util::output_within(command, std::time::Duration::from_secs(300))
        .map_err(|e| format!("cannot run {command:?}: {e}"))?;
    if output.status.success() {
        Ok(output)
    } else {
        Err(format!(
            "{:?} failed: {}",
            command.get_args().collect::<Vec<_>>(),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

impl PodRunner {
    /// A runner of the pod image, its env files under `dir`, giving its pods `api_key`.
    /// It makes the pods' own network, and starts an anchor container on it so that the
    /// network's gateway address exists here before the stand-in listens on it.
    pub fn new(dir: PathBuf, api_key: &str) -> Self {
        let env = container_env();
        let label = format!("sr{}", rand_suffix());
        let podman = env.shims().join("podman");
        let network = format!("{label}-net");
        let gateway = (0..8)
            .find_map(|_| {
                let octets = rand_suffix();
                let a = 200 + u8::from_str_radix(&octets[0..2], 16).unwrap() % 50;
                let b = u8::from_str_radix(&octets[2..4], 16).unwrap();
                run(Command::new(&podman)
                    .args(["network", "create", "--subnet"])
                    .arg(format!("10.{a}.{b}.0/24"))
                    .arg("--label")
                    .arg(format!("overbrainer-standin={label}"))
                    .arg(&network))
                .ok()
                .map(|_| std::net::Ipv4Addr::new(10, a, b, 1))
            })
            .expect("podman network create: no free subnet under 10.200.0.0/10");
        let runner = Self {
            podman,
            image: env.get("POD_IMAGE").to_owned(),
            images: vec![
                env.get("POD_IMAGE").to_owned(),
                env.get("POD_PLAIN_IMAGE").to_owned(),
            ],
            venv: env.get("AXOLOTL_VENV").to_owned(),
            label,
            dir,
            api_key: api_key.to_owned(),
            network,
            gateway,
            mounts: Vec::new(),
        };
        if let Err(error) = run(runner
            .podman()
            .args([
                "run",
                "-d",
                "--name",
                &runner.anchor(),
                "--network",
                &runner.network,
            ])
            .arg("--label")
            .arg(format!("overbrainer-standin={}", runner.label))
            .args([&runner.image, "sleep", "infinity"]))
        {
            runner.remove_all();
            panic!("the pods' network anchor: {error}");
        }
        runner
    }

    /// This machine's address on the pods' network.
    pub fn gateway(&self) -> std::net::Ipv4Addr {
        self.gateway
    }

    fn anchor(&self) -> String {
        format!("{}-anchor", self.label)
    }

    fn podman(&self) -> Command {
        Command::new(&self.podman)
    }

    /// Runs pod `id` from its create body with `secrets` (name, value) for the
    /// references; the public `(host, port)` of its port 22.
    pub fn start(
        &self,
        id: &str,
        request: &Value,
        secrets: &[(String, String)],
    ) -> Result<(String, u16), String> {
        let mut lines = String::new();
        if let Some(env) = request.get("env").and_then(Value::as_object) {
            for (name, value) in env {
                let mut value = value.as_str().unwrap_or_default().to_owned();
                for (secret, text) in secrets {
                    value = value.replace(&format!("{{{{ RUNPOD_SECRET_{secret} }}}}"), text);
                }
                if value.contains('\n') {
                    return Err(format!("env `{name}` is not single-line"));
                }
                let _ = writeln!(lines, "{name}={value}");
            }
        }
        let _ = writeln!(lines, "RUNPOD_POD_ID={id}");
        let _ = writeln!(lines, "RUNPOD_API_KEY={}", self.api_key);
        let env_file = self.dir.join(format!("{id}.env"));
        {
            use std::os::unix::fs::OpenOptionsExt;
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&env_file)
                .map_err(|e| format!("cannot write {}: {e}", env_file.display()))?;
            file.write_all(lines.as_bytes())
                .map_err(|e| format!("cannot write {}: {e}", env_file.display()))?;
        }
        let args = words(
            request
                .get("args")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        )?;
        let image = request
            .get("image")
            .and_then(Value::as_str)
            .filter(|image| self.images.iter().any(|i| i == image))
            .unwrap_or(&self.image);
        let started = run(self
            .podman()
            .args([
                "run",
                "-d",
                "--name",
                &self.name(id),
                "--network",
                &self.network,
            ])
            .args(["-p", "127.0.0.1::22", "--label"])
            .arg(format!("overbrainer-standin={}", self.label))
            .arg("--env-file")
            .arg(&env_file)
            .args(
                self.mounts
                    .iter()
                    .flat_map(|m| ["-v".to_owned(), format!("{0}:{0}:ro", m.display())]),
            )
            .args(["-v", &format!("{}:{DEFAULT_VENV}:ro", self.venv)])
            .arg(image)
            .args(&args));
        let _ = std::fs::remove_file(&env_file);
        started?;
        let port = run(self.podman().args(["port", &self.name(id), "22/tcp"]))?;
        let text = String::from_utf8_lossy(&port.stdout);
        let port = text
            .trim()
            .rsplit_once(':')
            .and_then(|(_, p)| p.parse::<u16>().ok())
            .ok_or_else(|| format!("podman port {id}: {text}"))?;
        Ok(("127.0.0.1".to_owned(), port))
    }

    /// The container of pod `id`: pod IDs count from 1 in every stand-in, so the name
    /// carries the stand-in's label (tests run side by side).
    fn name(&self, id: &str) -> String {
        format!("{}-{id}", self.label)
    }

    /// What pod `id`'s container wrote on its standard output so far, line by line
    /// (`podman logs`); nothing once it is removed.
    pub fn output(&self, id: &str) -> Vec<String> {
        run(self.podman().args(["logs", &self.name(id)]))
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Runs `script` with `bash -c` in pod `id`'s container; its output.
    pub fn exec(&self, id: &str, script: &str) -> Output {
        let mut command = self.podman();
        command.args(["exec", &self.name(id), "bash", "-c", script]);
        crate::util::output_within(&mut command, std::time::Duration::from_secs(300))
            .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"))
    }

    /// Caps pod `id`'s container at `cpus` cores through its cgroup, or at every core of
    /// this machine for `None` (this Podman cannot lift a quota: 0 and -1 keep it).
    pub fn limit_cpus(&self, id: &str, cpus: Option<f64>) -> Result<(), String> {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let cpus = cpus.map_or_else(|| cores.to_string(), |c| c.to_string());
        run(self
            .podman()
            .args(["update", "--cpus", &cpus, &self.name(id)]))
        .map(|_| ())
    }

    /// Removes pod `id`'s container.
    pub fn remove(&self, id: &str) -> Result<(), String> {
        self.remove_container(&self.name(id))
    }

    fn remove_container(&self, name: &str) -> Result<(), String> {
        run(self.podman().args(["rm", "-f", "-t", "0", name])).map(|_| ())
    }

    /// The names of this stand-in's pod containers that still exist.
    pub fn left(&self) -> Vec<String> {
        let anchor = self.anchor();
        self.containers()
            .into_iter()
            .filter(|name| *name != anchor)
            .collect()
    }

    fn containers(&self) -> Vec<String> {
        run(self
            .podman()
            .args(["ps", "-a", "--format", "{{.Names}}", "--filter"])
            .arg(format!("label=overbrainer-standin={}", self.label)))
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
    }

    /// Removes every container of this stand-in and its network (a failed test leaves
    /// none behind).
    pub fn remove_all(&self) {
        for name in self.containers() {
            let _ = self.remove_container(&name);
        }
        let _ = run(self.podman().args(["network", "rm", "-f", &self.network]));
    }
}

/// `args` split into words as a POSIX shell splits them (blanks between words; `'...'`
/// literal; `"..."` with `\\`, `\"`, `\$` and `` \` `` escaped; `\` escaping the next
/// character outside quotes), how Runpod's own examples quote a start command
/// (`bash -c 'mkdir /testdir1 && /start.sh'`). Nothing is expanded.
pub fn words(args: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = args.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => words.extend(word.take()),
            '\'' => {
                let word = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(format!("args: unterminated ' in {args:?}")),
                    }
                }
            }
            '"' => {
                let word = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('\\' | '"' | '$' | '`')) => word.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(format!("args: unterminated \" in {args:?}")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(format!("args: unterminated \" in {args:?}")),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => return Err(format!("args: a lone \\ ends {args:?}")),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

#[test]
fn args_split_into_words_as_a_shell_splits_them() {
    let split = |s: &str| words(s).unwrap();
    assert_eq!(split("bash -c '/start.sh'"), ["bash", "-c", "/start.sh"]);
    assert_eq!(
        split("  bash -c 'mkdir /t && \"x\"'\n"),
        ["bash", "-c", "mkdir /t && \"x\""]
    );
    assert_eq!(split(r#"a"b \" \$c"d\ e ''"#), ["ab \" $cd e", ""]);
    assert_eq!(split("sleep infinity"), ["sleep", "infinity"]);
    assert!(split("").is_empty());
    assert!(words("bash -c 'open").is_err());
}

/// 12 random hex digits.
fn rand_suffix() -> String {
    let mut bytes = [0u8; 6];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .expect("/dev/urandom");
    bytes.iter().fold(String::new(), |mut hex, b| {
        let _ = write!(hex, "{b:02x}");
        hex
    })
}

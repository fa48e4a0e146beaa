//! How the train stage launches Axolotl when a job has several processes (issue 19):
//! `axolotl train axolotl.yaml --launcher accelerate -- ...` with the process count and
//! machine count; on several Slurm nodes, one task per node through `srun`, each with
//! its rank (`SLURM_NODEID`) and the rendezvous on the first host of
//! `SLURM_JOB_NODELIST`. The snapshot request reaches every rank through the metrics
//! plugin, which reads it on rank 0 and broadcasts the decision (MPL-5). Pure text.

use crate::exec::{self, JobSpec, quote};

use super::axolotl::{AXOLOTL_YAML, PROGRAM};

/// Port of the rendezvous on the first node.
pub const MAIN_PROCESS_PORT: u16 = 29500;

/// The processes of a training job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch {
    /// Machines (Slurm nodes), one task each.
    pub nodes: u32,
    /// Processes per machine (its GPUs).
    pub processes_per_node: u32,
}

impl Default for Launch {
    fn default() -> Self {
        Self {
            nodes: 1,
            processes_per_node: 1,
        }
    }
}

impl Launch {
    /// The launch of a Slurm target's job: `nodes`, and a process per GPU of
    /// `gpus_per_node` (one without GPUs).
    #[must_use]
    pub fn slurm(nodes: u32, gpus_per_node: Option<u32>) -> Self {
        Self {
            nodes: nodes.max(1),
            processes_per_node: gpus_per_node.unwrap_or(1).max(1),
        }
    }

    /// The launch of a job on one machine (a `local` or `ssh` target) with
    /// `gpu_count` GPUs, a process each (one for 0).
    #[must_use]
    pub fn one_machine(gpu_count: u32) -> Self {
        Self {
            nodes: 1,
            processes_per_node: gpu_count.max(1),
        }
    }

    /// Whether the job runs more than one process.
    #[must_use]
    pub fn is_multi(self) -> bool {
        self.nodes > 1 || self.processes_per_node > 1
    }

    /// The arguments of `axolotl`: `train axolotl.yaml`, and for several processes
    /// accelerate's total process and machine counts after `--launcher accelerate --`.
    #[must_use]
    pub fn train_args(self) -> Vec<String> {
        let mut args = vec!["train".to_owned(), AXOLOTL_YAML.to_owned()];
        if self.is_multi() {
            args.extend([
                "--launcher".to_owned(),
                "accelerate".to_owned(),
                "--".to_owned(),
                "--num_processes".to_owned(),
                (self.nodes * self.processes_per_node).to_string(),
                "--num_machines".to_owned(),
                self.nodes.to_string(),
            ]);
        }
        args
    }

    /// The train stage's command in the job script. On one machine, the program and
    /// [`Launch::train_args`] as the runtime runs them. On several, the first host of
    /// the allocation becomes the rendezvous and `srun` starts one task per node, whose
    /// shell adds its rank and the rendezvous to the same command.
    #[must_use]
    pub fn train_command(self, spec: &JobSpec) -> String {
        let args = self.train_args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let command = exec::stage_command(spec, PROGRAM, &args);
        if self.nodes <= 1 {
            return command;
        }
        let per_node = format!(
            "{command} --machine_rank \"$SLURM_NODEID\" --main_process_ip \"$OB_MAIN_HOST\" --main_process_port {MAIN_PROCESS_PORT}"
        );
        format!(
            "OB_MAIN_HOST=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\nexport OB_MAIN_HOST\nsrun --nodes={nodes} --ntasks-per-node=1 --kill-on-bad-exit=1 sh -c {inner}",
            nodes = self.nodes,
            inner = quote(&per_node),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::JobRuntime;

    fn spec() -> JobSpec {
        JobSpec {
            run_id: "r_1".into(),
            container_suffix: None,
            run_dir: "/shared/r_1".into(),
            hf_home: "/shared/.hf-cache".into(),
            runtime: JobRuntime::Native {
                venv: Some("/opt/venv".into()),
            },
            secret_names: Vec::new(),
            env: Vec::new(),
        }
    }

    #[test]
    fn one_process_keeps_the_plain_train_line() {
        let launch = Launch::slurm(1, None);
        assert!(!launch.is_multi());
        assert_eq!(
            launch.train_command(&spec()),
            "'/opt/venv'/bin/'axolotl' 'train' 'axolotl.yaml'"
        );
        assert_eq!(Launch::slurm(1, Some(0)), Launch::default());
    }

    #[test]
    fn several_processes_on_one_node_go_through_accelerate() {
        let launch = Launch::slurm(1, Some(2));
        assert_eq!(
            launch.train_command(&spec()),
            "'/opt/venv'/bin/'axolotl' 'train' 'axolotl.yaml' '--launcher' 'accelerate' '--' '--num_processes' '2' '--num_machines' '1'"
        );
    }

    /// A `local` or `ssh` target's `gpu_count` of 2: the same accelerate line as a
    /// Slurm node with two GPUs, natively and in the job's container (which gets every
    /// GPU of the machine).
    #[test]
    fn a_local_or_ssh_target_with_two_gpus_goes_through_accelerate() {
        let launch = Launch::one_machine(2);
        assert_eq!(launch, Launch::slurm(1, Some(2)));
        assert!(launch.is_multi());
        assert_eq!(
            launch.train_command(&spec()),
            "'/opt/venv'/bin/'axolotl' 'train' 'axolotl.yaml' '--launcher' 'accelerate' '--' '--num_processes' '2' '--num_machines' '1'"
        );
        let mut container = spec();
        container.runtime = JobRuntime::Container {
            engine: crate::config::Engine::Podman,
            image: "img:1".into(),
            tools_cache: None,
        };
        let command = launch.train_command(&container);
        assert!(
            command.contains(
                " 'img:1' 'axolotl' 'train' 'axolotl.yaml' '--launcher' 'accelerate' '--' '--num_processes' '2' '--num_machines' '1' || ob_engine_failed $?"
            ),
            "{command}"
        );
        assert!(!command.contains("srun"), "{command}");
        assert_eq!(Launch::one_machine(1), Launch::default());
        assert_eq!(Launch::one_machine(0), Launch::default());
    }

    #[test]
    fn several_nodes_take_rank_and_rendezvous_from_slurm() {
        let command = Launch::slurm(2, Some(4)).train_command(&spec());
        assert!(
            command.starts_with(
                "OB_MAIN_HOST=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\nexport OB_MAIN_HOST\nsrun --nodes=2 --ntasks-per-node=1 --kill-on-bad-exit=1 sh -c "
            ),
            "{command}"
        );
        assert!(
            command.contains(
                "'\\''--num_processes'\\'' '\\''8'\\'' '\\''--num_machines'\\'' '\\''2'\\''"
            ),
            "{command}"
        );
        assert!(command.contains("--machine_rank \"$SLURM_NODEID\" --main_process_ip \"$OB_MAIN_HOST\" --main_process_port 29500'"), "{command}");
        crate::exec::shellcheck::assert_passes(&command, "SC2016");
    }

    /// The per-node shell sees its own rank: the line, run by `sh` with Slurm's
    /// variables as `srun` sets them, passes accelerate the values (a stand-in `srun`
    /// and `axolotl` that print their arguments).
    #[test]
    #[allow(
        clippy::disallowed_methods,
        reason = "the test runs the generated line under a real sh"
    )]
    fn the_generated_multi_node_line_runs_with_each_ranks_values() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let write = |name: &str, body: &str| {
            use std::os::unix::fs::PermissionsExt as _;
            let path = bin.join(name);
            std::fs::write(&path, body).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        write("scontrol", "#!/bin/sh\nprintf 'node-a\\nnode-b\\n'\n");
        // `srun`: runs its command once per node with that node's SLURM_NODEID.
        write(
            "srun",
            "#!/bin/sh\nwhile [ \"${1#--}\" != \"$1\" ]; do shift; done\nfor r in 0 1; do SLURM_NODEID=$r \"$@\"; done\n",
        );
        write("axolotl", "#!/bin/sh\necho \"$*\"\n");
        let mut spec = spec();
        spec.runtime = JobRuntime::Native { venv: None };
        let command = Launch::slurm(2, Some(1)).train_command(&spec);
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(&command)
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("SLURM_JOB_NODELIST", "node-[a-b]")
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "train axolotl.yaml --launcher accelerate -- --num_processes 2 --num_machines 2 --machine_rank 0 --main_process_ip node-a --main_process_port 29500\n\
             train axolotl.yaml --launcher accelerate -- --num_processes 2 --num_machines 2 --machine_rank 1 --main_process_ip node-a --main_process_port 29500\n"
        );
    }
}

//! The one integration test binary: each area adds its module here, in layer order, and
//! shares the helpers of `util` (a temp project and a ready `overbrainer` command).

// Test code: failing loudly is the point (clippy.toml allows these inside `#[test]` only).
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]
// Test code runs real programs (`sshd`, the binary, Python) and reads the test's own
// environment; clippy.toml's `disallowed-methods` hold for the library only.
#![allow(clippy::disallowed_methods)]

// Shared helpers.
mod util;
// A real OpenSSH server on 127.0.0.1 for tests of SSH targets (reusable by every area).
mod sshd;
// A process that survives SIGKILL (the cgroup freezer), for what a cancel leaves behind.
mod freezer;
// A CPU cap (the cgroup v1 cpu controller) for a real job that only waits for the clock.
mod cpu_cap;
// Real container engines (Podman, a private Docker daemon) and their local images.
mod engines;
// A real single-node Slurm cluster (slurm-wlm and munge), once per test binary.
mod slurm_cluster;

// Ground: settings, `.env`, environment layering, secrets, `init`, `config check`.
mod config;
// Ground: configuration messages and values (empty secrets, `.env` lines, sources).
mod config_messages;
// Front end: dynamic completion of topics, targets and run IDs as bash drives it.
mod completion;
// Front end: checked writes to stdout (closed pipe, full disk) and `init` refusing cleanly.
mod output;
// Ground: the project lock held by a second process.
mod lock;
// Ground: key files others could read (`.env` at mode 644 warned about, `init`'s advice).
mod key_files;
// Execution: one executor conformance suite on the local target and on a real `sshd`:
// claim, transfers, jobs and files, secrets, the status table, cancel, survival, and the
// job's processes: escaped setsid workers, leftovers, identity, zombies.
mod exec;
// Execution: uploads through the blob cache over `sshd` and its prune (issue 21).
mod blobs;
// Execution: the Slurm executor on a real single-node cluster, from here and from a login
// node over `sshd` (issue 19).
mod slurm;
// Flows: the dataset pipeline against stand-in providers (openai and anthropic protocols).
mod pipeline;
// Flows: provider replies no retry fixes or that hide reasoning in odd places (issue 8).
mod providers;
// Flows: what the pipeline must never do (show an echoed key, lose output under `--force`,
// start for an unknown topic) and `history --all` into a closed pipe.
mod pipeline_safety;
// Flows: one budget over every priced request: the ledger, the hard cap mid-`answers`,
// the estimate refused before any request, `--over-budget`, `overbrainer budget` (issue 20).
mod budget;
// Flows: training runs with real Axolotl on the CPU, local and over a real `sshd`;
// refusals before a start.
mod training;
// Flows: `train` uploading a local base model through the SSH target's blob cache, twice
// (issue 21).
mod upload_train;
// Flows: training runs on a `slurm` target, real Axolotl inside jobs of the test's
// single-node Slurm, and the refusals before any job (issue 19).
mod slurm_train;
// Flows: the Prometheus endpoint scraped by a real Prometheus during a real training run.
mod metrics;
// The trained runs several areas share, each trained once per test run (issue 31).
mod fixtures;
// Flows: `export` with the real llama.cpp b11434 on a local and an SSH target, the
// preflight's refusals, and Ollama's REST route against a stand-in (issue 14).
mod export;
// Flows: `export` of a stopped run's partial model, the refusals before any job, SIGTERM
// and `export attach`, an export in a copied project, and one in a Podman container.
mod export_flows;
// Flows: `compare` with the real llama-server serving the exported GGUF on the CPU, local
// and over a real `sshd`, the judge a scripted stand-in (issue 15).
mod compare;
// Flows: the export and compare of a run trained on a pod, on another target, and
// `[export] after_training` refused on a Runpod target (issue 34).
mod pod_side_jobs;
// `make demo` (scripts/demo.sh) end to end with the real llama-server and SmolLM2-135M as
// parent, generator and judge, and no process left behind on success, on a failed step
// and on Ctrl-C (issue 36).
mod demo;
// Flows: a pipeline session and the `run` sequence through library calls only (no CLI),
// and the chat template check of a run start against the real venv and tiny model.
mod flows;
// Flows: runs that meet faults and the way back: an incomplete snapshot checkpoint, a
// merge that fails after training (`train merge`), metric lines from another writer.
mod training_faults;
// Flows: stall detection by training progress (issue 21): a stand-in job that stops
// writing steps, for each `on_stall`, a slow job never flagged, real Axolotl SIGSTOPped.
mod stall;
// Flows: the `docker` runtime on real Podman and Docker with real Axolotl (issue 11).
mod training_containers;
// A wire-faithful, stateful stand-in of Runpod REST v2 with fault injection (issue 12).
mod runpod_standin;
// The stand-in's pods as real Podman containers (sshd on 127.0.0.1 only).
mod runpod_pods;
// Flows: the stand-in's pods as real containers, reached only with the pinned host key.
mod runpod_containers;
// Flows: the Runpod v2 client and the pod lifecycle against the stand-in (issue 12).
mod runpod;
// Flows: the real bootstrap on a runpod/pytorch-like image and on a plain one, and the
// image's environment it writes for the jobs (issue 34).
mod runpod_images;
// Flows: a 429 on a pod listing, get or delete waited out within its bounds (issue 34).
mod runpod_rate;
// Flows: the pod driver performs the lifecycle's effects on real container pods (issue 12).
mod runpod_driver;
// Flows: the pod's watchdog script by real bash and curl against the stand-in (issue 12).
mod runpod_watchdog;
// Flows: `train` on a `runpod` target through the binary, its pods real (issue 12, case 1).
mod runpod_train;
// Flows: `pod gpus`, `pod datacenters`, `pod volumes`, `pod templates` on the stand-in's
// canned catalog (issue 13).
mod runpod_catalog;
// Flows: `gpu_types = "auto"` and `data_center_ids = "auto"` through `train` on the
// stand-in: the pick, the fresh read after a capacity answer, the refusals (issue 13).
mod runpod_auto;
// A stand-in of the Hugging Face Hub, proven by `huggingface_hub` (issue 16).
mod hub_standin;
// Flows: `push` of a trained run to the Hub stand-in, read back by `huggingface_hub`.
mod hub;
// Flows: the Runpod API's faults through the binary, its pods real (issue 12, case 3).
mod runpod_faults;
// Flows: `pod rm`'s refusals and `--force` through the binary, its pods real (POD-65, POD-66).
mod runpod_pod_rm;
// Flows: the time rules of a pod through the binary with real training (issue 12, case 4):
// the deadline and cost snapshots, the lease, the client guard.
mod runpod_rules;
// Flows: `kill -9` of `train` on a pod during the upload and the retrieval (issue 12, case 2).
mod runpod_kill;
// Flows: a pod's log stream read into `.pod/pod.log` from the stand-in: backfill, cursor,
// drops, a refused event ID, redaction (issue 13, POD-55, POD-57, POD-59).
mod runpod_logs;
// Flows: a custom `image` without `sshd` or without Axolotl in `venv`, refused with its
// pod deleted and no other GPU type tried (issue 13, POD-74).
mod runpod_custom_image;
// Flows: `overbrainer tui` as a person drives it, the real binary in `tmux`: the Project
// view, a real training run started, stopped with a snapshot and resumed (issue 17).
mod tui;

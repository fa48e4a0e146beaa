//! Runpod pods as a training target (spec/runpod.md; issue 12). A flow-level module: it
//! uses `config`, `secrets`, `exec` and `llm::Redactor`; nothing below it imports it
//! (`runs::pod` above it drives it for a run).
//!
//! What exists:
//! - [`lifecycle`]: a pod's life as a pure state machine beside the run's (create with
//!   the retry table, adoption, readiness, lease, deadline and cost snapshots, client
//!   guard, retrieve grace, deletion until gone), table-tested.
//! - [`api`]: the Runpod REST v2 client (pods, account secrets), RFC 9457 problem bodies
//!   as typed, redacted errors, and the create retry table's classification.
//! - [`driver`]: performs the lifecycle's effects (API calls through the client, the
//!   handshake against the pinned host key through the executor's SSH client and the
//!   run's `ssh -F` file, the cost files, the lease, snapshot requests and the retrieved
//!   mark through `put_file` to `.pod/`) on the UNIX clock of the client's pod views; the
//!   run's own part comes through [`driver::PodJob`], `pod.json` and notices through
//!   [`driver::PodHooks`].
//! - [`record`]: `pod.json`, written atomically from the lifecycle's state and read back
//!   to its facts (field names in its doc).
//! - [`keys`]: the run's SSH access under `runs/<run-id>/ssh/` (client key pair, the
//!   pinned host key under the run's alias, the `ssh -F` file) and its host-key account
//!   secret, whose creation is the POD-21 check that the key can manage secrets.
//! - [`watchdog`]: the pod's watchdog script (self-check of the pod-scoped key, deletion
//!   at the retrieved mark, boot and retrieve graces, deadline with lease and snapshot,
//!   cost snapshot and cap) and the environment that carries its bounds.
//! - [`bootstrap`]: the pod's `args`, rendered in one place: the check of what a custom
//!   image must keep (POD-74), the claim, the pinned host key, the watchdog as the first
//!   process, `sshd` only after its self-check.
//!
//! - [`disk`]: the disk of a followed run (POD-45..POD-47) as a pure state machine:
//!   warnings at 85/90/95/100%, the grow of a network volume, the `disk` snapshot.
//! - [`rate`]: how a 429 is waited out, one policy for the create retry table and
//!   the client's reads and deletes.
//! - [`body`]: the create body of a run's pods from its target (the bounds, the
//!   bootstrap, the host key by reference only).
//!
//! The run's side ([`driver::PodJob`]), the `runpod` target in `train`, `train
//! attach|stop|cancel`, reconciliation, `pod ls` and `pod rm` are `crate::runs::pod`
//! (a flow above this one). What is next (issue 12): POD-56 logs, the network volume's
//! size, the strays report and the secrets sweep (POD-62, POD-63).

pub mod api;
pub mod body;
pub mod bootstrap;
pub mod catalog;
pub mod disk;
pub mod driver;
pub mod keys;
pub mod lifecycle;
pub mod logs;
pub mod rate;
pub mod record;
pub mod watchdog;

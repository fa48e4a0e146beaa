//! Runpod pods as a training target (spec/runpod.md; issue 12). A flow-level module: it
//! uses `config`, `secrets`, `exec` and `llm::Redactor`; nothing below it imports it.
//!
//! What exists:
//! - [`lifecycle`]: a pod's life as a pure state machine beside the run's (create with
//!   the retry table, adoption, readiness, lease, deadline and cost snapshots, client
//!   guard, retrieve grace, deletion until gone), table-tested.
//! - [`api`]: the Runpod REST v2 client (pods, account secrets), RFC 9457 problem bodies
//!   as typed, redacted errors, and the create retry table's classification.
//!
//! What is next (issue 12): the driver that performs the lifecycle's effects through
//! [`api::RunpodClient`] and the executor (handshake against the pinned host key, cost
//! files, lease, snapshot requests, `.pod/retrieved`) on the UNIX clock the client's
//! pod views use; `pod.json` from [`lifecycle::PodFacts`]; the run's SSH keys and
//! host-key secret (base64, one line, as the tests' bootstrap reads it); the bootstrap
//! and watchdog scripts; strays, the secrets sweep and reconciliation; `pod ls` /
//! `pod rm`; and only then the `runpod` target in `train`. Nothing here is called from
//! the CLI yet.

pub mod api;
pub mod lifecycle;

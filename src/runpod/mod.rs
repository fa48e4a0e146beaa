//! Runpod pods as a training target (spec/runpod.md; issue 12). A flow-level module: it
//! uses `config`, `secrets`, `exec` and `llm::Redactor`; nothing below it imports it.
//!
//! What exists:
//! - [`lifecycle`]: a pod's life as a pure state machine beside the run's (create with
//!   the retry table, adoption, readiness, lease, deadline and cost snapshots, client
//!   guard, retrieve grace, deletion until gone), table-tested.
//!
//! What is next (issue 12): the REST v2 client, the driver that performs the
//! lifecycle's effects through it and the executor, the bootstrap and watchdog scripts,
//! `pod.json`, and the `runpod` target in `train`. Nothing here is called from the CLI
//! yet.

pub mod lifecycle;

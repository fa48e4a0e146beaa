//! Everything overbrainer knows about Axolotl jobs, without running anything itself
//! (spec/training.md, sections 6 and 12, TGT-12):
//!
//! - [`yaml`]: a YAML emitter that PyYAML (YAML 1.1) reads back exactly (AXO-1);
//! - [`axolotl`]: the run's Axolotl configuration from `[training]` (AXO-2..AXO-9) and
//!   the resume comparison (RUN-36);
//! - [`job`]: a training job's script: its stages, their commands and `stage` lines,
//!   and the job's fixed environment (RUN-15, MPL-2, MPL-6);
//! - [`rules`]: what Axolotl accepts of `[training]` (the refused keys of
//!   `axolotl_extra`, settings it refuses together; AXO-4..AXO-7), a rule that loading
//!   the configuration runs (`config::Rules`);
//! - [`checkpoint`]: whether a checkpoint holds what a resume needs (RUN-30, RUN-35);
//! - [`plugin`]: the metrics plugin shipped in the binary (MPL-1, MPL-5);
//! - [`metrics`]: the lines of `metrics.jsonl` and their tolerant reader (MPL-2, MPL-3);
//! - [`phase`]: the follower's phase derived from those lines (MPL-7, RUN-18);
//! - [`stall`]: whether a living job stopped making training progress (issue 21);
//! - [`template`]: whether a chat template renders reasoning, by rendering it on a probe
//!   conversation (TGT-12).

pub mod axolotl;
pub mod checkpoint;
pub mod job;
pub mod launch;
pub mod metrics;
pub mod phase;
pub mod plugin;
pub mod rules;
pub mod stall;
pub mod template;
pub mod yaml;

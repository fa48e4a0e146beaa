//! GGUF jobs' parts below the flows (issue 14): the pinned llama.cpp and its cache
//! ([`llama`]), the export job's steps and their commands ([`script`], whose Python is
//! `export_tool.py`), and the in-job export stage of a training job ([`in_job_stage`]).
//! `runs::start` and the `export` flow both use them; they use neither.

pub mod llama;
pub mod script;
mod stage;

pub(crate) use stage::llama_of;
pub use stage::{RunFacts, in_job_stage, tools_dir};

//! The dataset pipeline (spec/pipeline.md): the stages `subtopics`, `questions`,
//! `answers` and `split`, each resumable, each sending typed events instead of
//! printing.

pub mod parse;
pub mod stage;
pub mod templates;

pub use stage::{Context, Event, Progress, Stage, StageError, StageReport};
pub mod answers;
pub mod questions;
pub mod split;
pub mod subtopics;

//! The dataset pipeline (spec/pipeline.md): the stages `subtopics`, `questions`,
//! `answers` and `split`, each resumable, each sending typed events instead of
//! printing; [`session`] opens a project for them (lock, keys, prices, redactor) and
//! [`sequence`] is the `run` flow (every stage, reloads, then training), both callable
//! from any front end; [`pump`] runs a flow while handling its events.

pub mod parse;
pub mod progress;
pub mod pump;
pub(crate) mod runner;
pub(crate) mod spending;
pub mod stage;
pub mod templates;

pub use progress::{Event, Progress};
pub use stage::{Context, Rerun, Stage, StageError, StageReport};
pub mod answers;
pub mod questions;
pub mod sequence;
pub mod session;
pub mod split;
pub mod subtopics;

//! The dataset pipeline (spec/pipeline.md): the stages `subtopics`, `questions`,
//! `answers` and `split`, each resumable, each sending typed events instead of
//! printing.

pub mod parse;
pub mod templates;

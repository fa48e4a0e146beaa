//! The Dataset view (`2`, TUI-29..TUI-35): not built yet; it says so and names the commands and files that hold the dataset today, and shows nothing it has not read.

use super::super::theme::Theme;
use super::not_built::NotBuilt;

/// The Dataset view: an empty state naming the commands that do its work today.
pub type DatasetView = NotBuilt;

const LINES: &[&str] = &[
    "The dataset browser is not built in this version of the TUI.",
    "",
    "The dataset lives in data/ (topics, subtopics, questions, answers;",
    "train.jsonl and eval.jsonl after split).",
    "",
    "From the command line: `overbrainer history` shows the stages run and their cost.",
];

/// The view.
#[must_use]
pub fn new(theme: Theme) -> DatasetView {
    NotBuilt::new("Dataset", " dataset ", LINES, theme)
}

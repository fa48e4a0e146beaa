//! The Pipeline view (`3`, TUI-36..TUI-40): not built yet; it says so and names the commands that run the stages today, and shows nothing it has not measured.

use super::super::theme::Theme;
use super::not_built::NotBuilt;

/// The Pipeline view: an empty state naming the commands that do its work today.
pub type PipelineView = NotBuilt;

const LINES: &[&str] = &[
    "Running stages from the TUI is not built in this version.",
    "",
    "From the command line: `overbrainer subtopics`, `questions`, `answers`, `split`,",
    "or `overbrainer run` for all of them (then training, with [training]).",
    "",
    "Training runs started from the command line show in the Training view (4) after R.",
];

/// The view.
#[must_use]
pub fn new(theme: Theme) -> PipelineView {
    NotBuilt::new("Pipeline", " pipeline ", LINES, theme)
}

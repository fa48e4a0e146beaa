//! The Compare view (`6`, TUI-58, TUI-59): not built yet; it says so and names `overbrainer compare` and where its reports are.

use super::super::theme::Theme;
use super::not_built::NotBuilt;

/// The Compare view: an empty state naming the commands that do its work today.
pub type CompareView = NotBuilt;

const LINES: &[&str] = &[
    "This view is not built yet: it does not list compares.",
    "",
    "`overbrainer compare --run RUN_ID` compares an exported run with its parent;",
    "its report is `runs/RUN_ID/compares/COMPARE_ID/compare.md`.",
];

/// The view.
#[must_use]
pub fn new(theme: Theme) -> CompareView {
    NotBuilt::new("Compare", " compare ", LINES, theme)
}

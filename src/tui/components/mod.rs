//! Pieces the views share: the confirmation dialog, the help overlay, the `r` menu, the
//! footer, the downsampled loss chart and the Runpod catalog picker.

pub mod chart;
pub mod dialog;
pub mod footer;
pub mod help;
pub mod menu;
pub mod picker;

use ratatui::layout::Rect;

/// A rectangle of at most `width` x `height` centred in `area`.
#[must_use]
pub fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}

//! Colours and emphasis of the TUI; with `NO_COLOR` only modifiers (bold, dim, reversed)
//! remain (spec/tui.md, colour and motion).

use ratatui::style::{Color, Modifier, Style};

/// The styles every view draws with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// Whether colours are drawn (`NO_COLOR` unset).
    pub color: bool,
}

impl Theme {
    /// A theme with colours unless `no_color`.
    #[must_use]
    pub fn new(no_color: bool) -> Self {
        Self { color: !no_color }
    }

    fn fg(self, color: Color) -> Style {
        if self.color {
            Style::new().fg(color)
        } else {
            Style::new()
        }
    }

    /// Plain text.
    #[must_use]
    pub fn text(self) -> Style {
        Style::new()
    }

    /// Default values and secondary text.
    #[must_use]
    pub fn dim(self) -> Style {
        Style::new().add_modifier(Modifier::DIM)
    }

    /// Titles and the current tab.
    #[must_use]
    pub fn title(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    /// The selected row.
    #[must_use]
    pub fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    /// Success.
    #[must_use]
    pub fn ok(self) -> Style {
        self.fg(Color::Green)
    }

    /// Failure.
    #[must_use]
    pub fn error(self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    /// Warnings.
    #[must_use]
    pub fn warn(self) -> Style {
        self.fg(Color::Yellow)
    }

    /// The training-loss line.
    #[must_use]
    pub fn loss(self) -> Style {
        self.fg(Color::Cyan)
    }

    /// The eval-loss line.
    #[must_use]
    pub fn eval(self) -> Style {
        self.fg(Color::Magenta)
    }

    /// The style of a run state's name.
    #[must_use]
    pub fn state(self, state: crate::runs::State) -> Style {
        use crate::runs::State;
        match state {
            State::Succeeded => self.ok(),
            State::Failed | State::MergeFailed => self.error(),
            State::Running | State::Pending | State::Starting => self.warn(),
            State::Cancelled | State::Stopped => self.dim(),
        }
    }
}

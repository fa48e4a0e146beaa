//! Colours and emphasis of the TUI; with `NO_COLOR` only modifiers (bold, dim, reversed)
//! remain (spec/tui.md, colour and motion).

use ratatui::style::{Color, Modifier, Style};

/// How many colours the terminal shows (TUI-70).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// `NO_COLOR`: modifiers only.
    Mono,
    /// The 16 named colours on the terminal's own background and palette.
    Named,
    /// The 256-colour palette, on the theme's dark crimson background.
    Indexed,
    /// 24-bit colour, on the theme's dark crimson background.
    TrueColor,
}

/// How much moves on screen (TUI-71, TUI-72).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Motion {
    /// Spinners and easing.
    On,
    /// Spinners and bars only (the default over SSH).
    Reduced,
    /// Nothing moves.
    Off,
}

/// The styles every view draws with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// The colour level.
    pub level: Level,
    /// The motion.
    pub motion: Motion,
}

/// The accents of the theme, by level.
#[derive(Clone, Copy)]
enum Tone {
    Accent,
    Ok,
    Error,
    Warn,
    Eval,
}

impl Theme {
    /// A theme with the 16 named colours unless `no_color`, and no motion (what the tests
    /// draw).
    #[must_use]
    pub fn new(no_color: bool) -> Self {
        Self {
            level: if no_color { Level::Mono } else { Level::Named },
            motion: Motion::Off,
        }
    }

    /// The theme `env` asks for (TUI-70, TUI-71), with a warning for each unknown value of
    /// an `OVERBRAINER_TUI_*` variable (ignored).
    #[must_use]
    pub fn from_env(env: &crate::env::EnvSnapshot) -> (Self, Vec<String>) {
        let mut warnings = Vec::new();
        let set = |name: &str| env.get(name).filter(|v| !v.is_empty());
        let mut unknown = |name: &str, value: &str, known: &str| {
            warnings.push(format!("{name}={value:?} is not one of {known}; ignored"));
        };
        let detected = if set("COLORTERM").is_some_and(|v| v == "truecolor" || v == "24bit") {
            Level::TrueColor
        } else if set("TERM").is_some_and(|v| v.contains("256color")) {
            Level::Indexed
        } else {
            Level::Named
        };
        let level = match set("OVERBRAINER_TUI_COLOR") {
            Some("truecolor") => Level::TrueColor,
            Some("256") => Level::Indexed,
            Some("16") => Level::Named,
            Some(other) => {
                unknown("OVERBRAINER_TUI_COLOR", other, "truecolor, 256, 16");
                detected
            }
            None => detected,
        };
        let ssh = set("SSH_CONNECTION").is_some() || set("SSH_TTY").is_some();
        let default_motion = if ssh { Motion::Reduced } else { Motion::On };
        let motion = match set("OVERBRAINER_TUI_MOTION") {
            Some("on") => Motion::On,
            Some("reduced") => Motion::Reduced,
            Some("off") => Motion::Off,
            Some(other) => {
                unknown("OVERBRAINER_TUI_MOTION", other, "on, reduced, off");
                default_motion
            }
            None => default_motion,
        };
        let theme = if env.no_color() {
            Self {
                level: Level::Mono,
                motion: Motion::Off,
            }
        } else {
            Self { level, motion }
        };
        (theme, warnings)
    }

    /// The style the whole screen is painted with first: the dark crimson background of
    /// the 256-colour and 24-bit themes, else the terminal's own.
    #[must_use]
    pub fn base(self) -> Style {
        match self.level {
            Level::TrueColor => Style::new()
                .bg(Color::Rgb(0x2b, 0x08, 0x12))
                .fg(Color::Rgb(0xf0, 0xe6, 0xe8)),
            Level::Indexed => Style::new().bg(Color::Indexed(52)).fg(Color::Indexed(255)),
            Level::Named | Level::Mono => Style::new(),
        }
    }

    /// The spinner's glyph at redraw `frame` (a still `●` without motion).
    #[must_use]
    pub fn spinner(self, frame: u64) -> char {
        const GLYPHS: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
        match self.motion {
            Motion::Off => '●',
            Motion::On | Motion::Reduced => GLYPHS[usize::try_from(frame % 10).unwrap_or(0)],
        }
    }

    fn tone(self, tone: Tone) -> Style {
        let color = match (self.level, tone) {
            (Level::Mono, _) => return Style::new(),
            (Level::Named, Tone::Accent) => Color::Cyan,
            (Level::Named, Tone::Ok) => Color::Green,
            (Level::Named, Tone::Error) => Color::Red,
            (Level::Named, Tone::Warn) => Color::Yellow,
            (Level::Named, Tone::Eval) => Color::Magenta,
            (Level::Indexed, Tone::Accent) => Color::Indexed(117),
            (Level::Indexed, Tone::Ok) => Color::Indexed(114),
            (Level::Indexed, Tone::Error) => Color::Indexed(210),
            (Level::Indexed, Tone::Warn) => Color::Indexed(221),
            (Level::Indexed, Tone::Eval) => Color::Indexed(219),
            (Level::TrueColor, Tone::Accent) => Color::Rgb(0x8c, 0xd3, 0xff),
            (Level::TrueColor, Tone::Ok) => Color::Rgb(0x9a, 0xe6, 0x9a),
            (Level::TrueColor, Tone::Error) => Color::Rgb(0xff, 0x8a, 0x80),
            (Level::TrueColor, Tone::Warn) => Color::Rgb(0xff, 0xd8, 0x6b),
            (Level::TrueColor, Tone::Eval) => Color::Rgb(0xf5, 0x9c, 0xf0),
        };
        Style::new().fg(color)
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
        self.tone(Tone::Accent).add_modifier(Modifier::BOLD)
    }

    /// The selected row.
    #[must_use]
    pub fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    /// Success.
    #[must_use]
    pub fn ok(self) -> Style {
        self.tone(Tone::Ok)
    }

    /// Failure.
    #[must_use]
    pub fn error(self) -> Style {
        self.tone(Tone::Error).add_modifier(Modifier::BOLD)
    }

    /// Warnings.
    #[must_use]
    pub fn warn(self) -> Style {
        self.tone(Tone::Warn)
    }

    /// The training-loss line.
    #[must_use]
    pub fn loss(self) -> Style {
        self.tone(Tone::Accent)
    }

    /// The eval-loss line.
    #[must_use]
    pub fn eval(self) -> Style {
        self.tone(Tone::Eval)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::EnvSnapshot;

    fn theme(pairs: &[(&str, &str)]) -> (Theme, Vec<String>) {
        Theme::from_env(&EnvSnapshot::from_pairs(pairs.iter().copied()))
    }

    #[test]
    fn the_level_and_motion_follow_the_terminal_the_variables_and_no_color() {
        type Case<'a> = (&'a [(&'a str, &'a str)], Level, Motion);
        let table: [Case<'_>; 9] = [
            (&[], Level::Named, Motion::On),
            (&[("COLORTERM", "truecolor")], Level::TrueColor, Motion::On),
            (
                &[("COLORTERM", "24bit"), ("TERM", "xterm-256color")],
                Level::TrueColor,
                Motion::On,
            ),
            (&[("TERM", "xterm-256color")], Level::Indexed, Motion::On),
            (
                &[("TERM", "xterm-256color"), ("OVERBRAINER_TUI_COLOR", "16")],
                Level::Named,
                Motion::On,
            ),
            (
                &[("OVERBRAINER_TUI_COLOR", "256")],
                Level::Indexed,
                Motion::On,
            ),
            (
                &[("SSH_CONNECTION", "1.2.3.4 5 6.7.8.9 22")],
                Level::Named,
                Motion::Reduced,
            ),
            (
                &[("SSH_TTY", "/dev/pts/1"), ("OVERBRAINER_TUI_MOTION", "on")],
                Level::Named,
                Motion::On,
            ),
            (
                &[
                    ("COLORTERM", "truecolor"),
                    ("NO_COLOR", "1"),
                    ("OVERBRAINER_TUI_MOTION", "on"),
                ],
                Level::Mono,
                Motion::Off,
            ),
        ];
        for (pairs, level, motion) in table {
            let (theme, warnings) = theme(pairs);
            assert_eq!((theme.level, theme.motion), (level, motion), "{pairs:?}");
            assert!(warnings.is_empty(), "{pairs:?}");
        }
    }

    #[test]
    fn unknown_values_are_ignored_with_a_warning_naming_the_variable() {
        let (theme, warnings) = theme(&[
            ("TERM", "xterm-256color"),
            ("OVERBRAINER_TUI_COLOR", "rainbow"),
            ("OVERBRAINER_TUI_MOTION", "fast"),
        ]);
        assert_eq!((theme.level, theme.motion), (Level::Indexed, Motion::On));
        assert_eq!(warnings.len(), 2);
        assert!(
            warnings[0].contains("OVERBRAINER_TUI_COLOR=\"rainbow\""),
            "{warnings:?}"
        );
        assert!(
            warnings[1].contains("OVERBRAINER_TUI_MOTION"),
            "{warnings:?}"
        );
    }

    #[test]
    fn only_the_256_and_24_bit_themes_paint_their_background_and_no_color_has_no_colour() {
        let (mono, _) = theme(&[("NO_COLOR", "1")]);
        assert_eq!(mono.error(), Style::new().add_modifier(Modifier::BOLD));
        assert_eq!(mono.base(), Style::new());
        assert_eq!(Theme::new(false).base(), Style::new());
        let (indexed, _) = theme(&[("OVERBRAINER_TUI_COLOR", "256")]);
        assert_eq!(indexed.base().bg, Some(Color::Indexed(52)));
        let (true_color, _) = theme(&[("OVERBRAINER_TUI_COLOR", "truecolor")]);
        assert!(matches!(true_color.base().bg, Some(Color::Rgb(..))));
        assert!(matches!(true_color.ok().fg, Some(Color::Rgb(..))));
        assert_eq!(Theme::new(false).ok().fg, Some(Color::Green));
        // The spinner turns with motion, stands still without.
        assert_eq!(mono.spinner(3), '●');
        assert_ne!(true_color.spinner(0), true_color.spinner(1));
    }
}

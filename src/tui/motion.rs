//! Motion beyond the spinner (TUI-72): progress bars easing to new values, and in
//! 24-bit colour a short fade of what appears (a view, a dialog, a message) and a slow
//! pulse on the `●` of a followed run. Pure: the event loop steps it on its animation
//! tick, only while something moves, so an idle screen is not redrawn.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Color;

use super::theme::{Level, Motion, Theme};

/// The animation tick: how often the screen is redrawn while something eases or fades.
pub const ANIMATION_TICK: std::time::Duration = std::time::Duration::from_millis(40);

/// The steps of a fade (about 160 ms at [`ANIMATION_TICK`]).
pub const FADE_STEPS: u8 = 4;

/// The share of the distance left that an easing bar covers each tick.
const EASE: f64 = 0.35;

/// Closer than this, an easing bar stands at its value.
const SNAP: f64 = 0.002;

/// A fraction shown by a bar, easing toward its value with motion on; at once without.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Eased {
    shown: f64,
    target: f64,
}

impl Eased {
    /// A bar standing at `value`.
    #[must_use]
    pub fn at(value: f64) -> Self {
        Self {
            shown: value,
            target: value,
        }
    }

    /// Moves the bar's value to `value`: it eases there with `motion` on, else jumps; a
    /// bar going back (another run, a restarted stage) jumps too.
    pub fn set(&mut self, value: f64, motion: Motion) {
        #[allow(clippy::float_cmp, reason = "the same value, set again")]
        if value == self.target {
            return;
        }
        self.target = value;
        if motion != Motion::On || value < self.shown {
            self.shown = value;
        }
    }

    /// One animation tick; whether it still moves.
    pub fn step(&mut self) -> bool {
        let gap = self.target - self.shown;
        if gap.abs() < SNAP {
            self.shown = self.target;
            return false;
        }
        self.shown += gap * EASE;
        true
    }

    /// The value it moves to.
    #[must_use]
    pub fn target(&self) -> f64 {
        self.target
    }

    /// Whether it still moves.
    #[must_use]
    pub fn moving(&self) -> bool {
        (self.target - self.shown).abs() > 0.0
    }

    /// The fraction to draw.
    #[must_use]
    pub fn shown(&self) -> f64 {
        self.shown
    }
}

/// What a fade brings in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appearing {
    /// The view (`1`..`6`, Tab): the body.
    View,
    /// A dialog, a picker, the start confirmation, the menu or the help overlay: the cells
    /// it covers.
    Overlay,
    /// A status message: the footer.
    Message,
}

/// A fade in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fade {
    /// What it brings in.
    pub appearing: Appearing,
    /// Its step, 0 to [`FADE_STEPS`].
    step: u8,
}

impl Fade {
    /// A fade of `appearing` where `theme` has one (24-bit colour, motion on).
    #[must_use]
    pub fn of(appearing: Appearing, theme: Theme) -> Option<Self> {
        fades(theme).then_some(Self { appearing, step: 0 })
    }

    /// One animation tick; `None` once it is done.
    #[must_use]
    pub fn step(self) -> Option<Self> {
        (self.step + 1 < FADE_STEPS).then_some(Self {
            step: self.step + 1,
            ..self
        })
    }

    /// How much of the final colour shows now, above 0 and below 1.
    #[must_use]
    pub fn alpha(self) -> f64 {
        f64::from(self.step + 1) / f64::from(FADE_STEPS + 1)
    }
}

/// Whether `theme` fades and pulses: 24-bit colour with motion on (TUI-72).
#[must_use]
pub fn fades(theme: Theme) -> bool {
    theme.level == Level::TrueColor && theme.motion == Motion::On
}

/// The theme's background and text in 24-bit colour.
fn base_colours(theme: Theme) -> ((u8, u8, u8), (u8, u8, u8)) {
    let rgb = |colour: Option<Color>, or: (u8, u8, u8)| match colour {
        Some(Color::Rgb(r, g, b)) => (r, g, b),
        _ => or,
    };
    let base = theme.base();
    (rgb(base.bg, (0, 0, 0)), rgb(base.fg, (0xff, 0xff, 0xff)))
}

/// `to` mixed into `from`: `alpha` 0 is `from`, 1 is `to`.
#[must_use]
pub fn mix(from: (u8, u8, u8), to: (u8, u8, u8), alpha: f64) -> Color {
    let channel = |a: u8, b: u8| {
        let value = f64::from(a) + (f64::from(b) - f64::from(a)) * alpha.clamp(0.0, 1.0);
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "clamped to 0..=255"
        )]
        let value = value.round().clamp(0.0, 255.0) as u8;
        value
    };
    Color::Rgb(
        channel(from.0, to.0),
        channel(from.1, to.1),
        channel(from.2, to.2),
    )
}

/// Fades the text of the cells of `area` in `buf` (those `only` accepts) in from the
/// background: each shows `alpha` of its colour.
pub fn fade_cells(
    buf: &mut Buffer,
    area: Rect,
    alpha: f64,
    theme: Theme,
    only: impl Fn(u16, u16) -> bool,
) {
    let (background, text) = base_colours(theme);
    let area = area.intersection(buf.area);
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            if !only(x, y) {
                continue;
            }
            let cell = &mut buf[(x, y)];
            let colour = match cell.fg {
                Color::Rgb(r, g, b) => (r, g, b),
                _ => text,
            };
            cell.fg = mix(background, colour, alpha);
        }
    }
}

/// The colour of the followed run's `●` at redraw `frame` (the 250 ms tick): a slow
/// pulse over 2 s between the accent and a dimmer accent in 24-bit colour with motion
/// on; `None` elsewhere (the theme's own).
#[must_use]
pub fn pulse(theme: Theme, frame: u64) -> Option<Color> {
    if !fades(theme) {
        return None;
    }
    let Some(Color::Rgb(r, g, b)) = theme.loss().fg else {
        return None;
    };
    let (background, _) = base_colours(theme);
    #[allow(clippy::cast_precision_loss, reason = "frame % 8")]
    let phase = (frame % 8) as f64 / 8.0 * std::f64::consts::TAU;
    Some(mix(background, (r, g, b), 0.7 + 0.3 * phase.cos()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn theme(level: Level, motion: Motion) -> Theme {
        Theme { level, motion }
    }

    #[test]
    fn a_bar_eases_up_with_motion_on_and_jumps_otherwise_or_backwards() {
        let mut bar = Eased::at(0.2);
        bar.set(0.8, Motion::On);
        assert!((bar.shown() - 0.2).abs() < 1e-9, "starts where it was");
        let mut shown = vec![bar.shown()];
        while bar.step() {
            shown.push(bar.shown());
            assert!(shown.len() < 40, "it settles");
        }
        assert!(shown.windows(2).all(|w| w[1] > w[0]), "{shown:?}");
        assert!((bar.shown() - 0.8).abs() < 1e-12);
        assert!(!bar.moving());
        // Each tick covers a share of what is left: fast first, then slower.
        assert!(shown[1] - shown[0] > shown[2] - shown[1], "{shown:?}");

        for motion in [Motion::Reduced, Motion::Off] {
            let mut bar = Eased::at(0.2);
            bar.set(0.8, motion);
            assert!((bar.shown() - 0.8).abs() < 1e-12, "{motion:?}");
            assert!(!bar.step());
        }
        let mut bar = Eased::at(0.8);
        bar.set(0.1, Motion::On);
        assert!((bar.shown() - 0.1).abs() < 1e-12, "backwards jumps");
    }

    #[test]
    fn fades_and_pulses_only_in_24_bit_colour_with_motion_on() {
        let table = [
            (Level::TrueColor, Motion::On, true),
            (Level::TrueColor, Motion::Reduced, false),
            (Level::TrueColor, Motion::Off, false),
            (Level::Indexed, Motion::On, false),
            (Level::Named, Motion::On, false),
            (Level::Mono, Motion::On, false),
        ];
        for (level, motion, expected) in table {
            let theme = theme(level, motion);
            assert_eq!(Fade::of(Appearing::View, theme).is_some(), expected);
            assert_eq!(pulse(theme, 3).is_some(), expected, "{level:?} {motion:?}");
        }
    }

    #[test]
    fn a_fade_brightens_over_its_steps_then_ends() {
        let mut fade = Fade::of(Appearing::Overlay, theme(Level::TrueColor, Motion::On));
        let mut alphas = Vec::new();
        while let Some(now) = fade {
            alphas.push(now.alpha());
            fade = now.step();
        }
        assert_eq!(alphas.len(), usize::from(FADE_STEPS));
        assert!(alphas.windows(2).all(|w| w[1] > w[0]), "{alphas:?}");
        assert!(alphas.iter().all(|a| *a > 0.0 && *a < 1.0), "{alphas:?}");
    }

    #[test]
    fn faded_cells_lie_between_the_background_and_their_colour() {
        let theme = theme(Level::TrueColor, Motion::On);
        let mut buf = Buffer::empty(Rect::new(0, 0, 3, 1));
        buf[(0, 0)].fg = Color::Rgb(200, 100, 50);
        buf[(2, 0)].fg = Color::Rgb(200, 100, 50);
        fade_cells(&mut buf, Rect::new(0, 0, 3, 1), 0.5, theme, |x, _| x < 2);
        let (background, text) = base_colours(theme);
        assert_eq!(buf[(0, 0)].fg, mix(background, (200, 100, 50), 0.5));
        // A cell with the terminal's colour fades from the theme's text colour.
        assert_eq!(buf[(1, 0)].fg, mix(background, text, 0.5));
        assert_eq!(buf[(2, 0)].fg, Color::Rgb(200, 100, 50), "left alone");
        assert_eq!(
            mix((0, 0, 0), (200, 100, 50), 1.0),
            Color::Rgb(200, 100, 50)
        );
        assert_eq!(mix((0, 0, 0), (200, 100, 50), 0.0), Color::Rgb(0, 0, 0));
    }

    #[test]
    fn the_pulse_brightens_and_dims_over_eight_ticks() {
        let theme = theme(Level::TrueColor, Motion::On);
        let colours: Vec<Color> = (0..9).map(|f| pulse(theme, f).unwrap()).collect();
        assert_eq!(colours[0], colours[8], "a 2 s period");
        assert_ne!(colours[0], colours[4]);
        assert_eq!(colours[1], colours[7], "symmetric");
    }
}

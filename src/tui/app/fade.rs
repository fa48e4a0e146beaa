//! The app's motion (TUI-72): what appeared since the last key or flow event starts a
//! fade; the animation tick steps the fade and the easing bars while they move.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::App;
use crate::tui::motion::{self, Appearing, Fade};

/// What is on screen, for the fades.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Appearance {
    tab: usize,
    /// The menu, dialog, start confirmation, picker and help overlay: shown or not.
    overlays: [bool; 5],
    message: Option<String>,
}

impl App {
    /// What is on screen now.
    pub(super) fn appearance(&self) -> Appearance {
        Appearance {
            tab: self.tab,
            overlays: [
                self.menu.is_some(),
                self.dialog.is_some(),
                self.confirm.is_some(),
                self.picker.is_some(),
                self.help,
            ],
            message: self.message.as_ref().map(|m| m.text.clone()),
        }
    }

    /// Starts the fade of what appeared since `before`: an overlay, else the view, else
    /// a new message (24-bit colour with motion on only).
    pub(super) fn note_appearance(&mut self, before: &Appearance) {
        let now = self.appearance();
        let overlay = now
            .overlays
            .iter()
            .zip(before.overlays)
            .any(|(now, before)| *now && !before);
        let appearing = if overlay {
            Some(Appearing::Overlay)
        } else if now.tab != before.tab {
            Some(Appearing::View)
        } else if now.message.is_some() && now.message != before.message {
            Some(Appearing::Message)
        } else {
            None
        };
        if let Some(appearing) = appearing {
            self.fade = Fade::of(appearing, self.theme).or(self.fade);
        }
    }

    /// Whether something eases or fades, so the animation tick redraws; when nothing
    /// does and nothing changes, the screen is not redrawn.
    #[must_use]
    pub fn animating(&self) -> bool {
        self.fade.is_some() || self.training.easing() || self.pipeline.easing()
    }

    /// One animation tick: the fade's next step, the bars a step closer.
    pub fn animate(&mut self) {
        self.fade = self.fade.and_then(Fade::step);
        self.training.ease();
        self.pipeline.ease();
    }

    /// The fade drawn over `buf`: the body for a view, the footer for a message, the
    /// cells an overlay changed (compared with `under`, the screen before the overlays).
    pub(super) fn draw_fade(
        &self,
        buf: &mut Buffer,
        (body, footer): (Rect, Rect),
        under: Option<&Buffer>,
    ) {
        let Some(fade) = self.fade else {
            return;
        };
        let alpha = fade.alpha();
        match (fade.appearing, under) {
            (Appearing::View, _) => motion::fade_cells(buf, body, alpha, self.theme, |_, _| true),
            (Appearing::Message, _) => {
                motion::fade_cells(buf, footer, alpha, self.theme, |_, _| true);
            }
            (Appearing::Overlay, Some(under)) => {
                let mut changed: Vec<(u16, u16)> = body
                    .positions()
                    .filter(|p| buf[*p] != under[*p])
                    .map(|p| (p.x, p.y))
                    .collect();
                changed.sort_unstable();
                motion::fade_cells(buf, body, alpha, self.theme, |x, y| {
                    changed.binary_search(&(x, y)).is_ok()
                });
            }
            (Appearing::Overlay, None) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use ratatui::style::Color;

    use super::*;
    use crate::tui::app::Work;
    use crate::tui::event::FlowEvent;
    use crate::tui::tests::{ch, entries, follow_run, start_lines, train_line};
    use crate::tui::theme::{Level, Motion, Theme};

    fn app_with(level: Level, motion: Motion) -> App {
        crate::tui::app(Theme { level, motion }, entries(), Ok(start_lines()))
    }

    fn drawn(app: &App) -> Buffer {
        let area = Rect::new(0, 0, 120, 40);
        let mut buf = Buffer::empty(area);
        app.draw(area, &mut buf);
        buf
    }

    /// The summed red, green and blue of the first cell of `text` on screen.
    fn brightness(buf: &Buffer, text: &str) -> u32 {
        let width = usize::from(buf.area.width);
        let symbols: Vec<&str> = buf
            .content()
            .iter()
            .map(ratatui::buffer::Cell::symbol)
            .collect();
        for (row, cells) in symbols.chunks(width).enumerate() {
            let line: String = cells.concat();
            if let Some(at) = line.find(text) {
                let column = line[..at].chars().count();
                let cell = &buf.content()[row * width + column];
                let Color::Rgb(r, g, b) = cell.fg else {
                    panic!("`{text}` is not in 24-bit colour: {:?}", cell.fg);
                };
                return u32::from(r) + u32::from(g) + u32::from(b);
            }
        }
        panic!("`{text}` is not on screen");
    }

    // TUI-72: in 24-bit colour with motion on, the help overlay fades in over its steps
    // while the rest of the screen stands; then nothing animates, so nothing redraws.
    #[test]
    fn an_overlay_fades_in_over_its_steps_and_the_rest_stands() {
        let mut app = app_with(Level::TrueColor, Motion::On);
        assert!(!app.animating(), "an idle screen does not redraw");
        let tabs = brightness(&drawn(&app), "1 Project");
        app.handle_key(ch('?'));
        assert!(app.animating());
        let mut seen = Vec::new();
        while app.animating() {
            let buf = drawn(&app);
            seen.push(brightness(&buf, "switch view"));
            assert_eq!(brightness(&buf, "1 Project"), tabs, "outside the overlay");
            app.animate();
            assert!(seen.len() <= usize::from(motion::FADE_STEPS));
        }
        seen.push(brightness(&drawn(&app), "switch view"));
        assert_eq!(seen.len(), usize::from(motion::FADE_STEPS) + 1, "{seen:?}");
        assert!(seen.windows(2).all(|w| w[1] > w[0]), "{seen:?}");
    }

    // A view (Tab) and a message fade too; without 24-bit colour or with motion reduced
    // or off, nothing fades.
    #[test]
    fn views_and_messages_fade_only_in_24_bit_colour_with_motion_on() {
        let mut app = app_with(Level::TrueColor, Motion::On);
        app.handle_key(ch('2'));
        assert_eq!(app.fade.map(|f| f.appearing), Some(Appearing::View));
        while app.animating() {
            app.animate();
        }
        app.say(false, "a message".to_owned());
        app.note_appearance(&Appearance {
            message: None,
            ..app.appearance()
        });
        assert_eq!(app.fade.map(|f| f.appearing), Some(Appearing::Message));

        for (level, motion) in [
            (Level::TrueColor, Motion::Reduced),
            (Level::TrueColor, Motion::Off),
            (Level::Indexed, Motion::On),
            (Level::Named, Motion::On),
        ] {
            let mut app = app_with(level, motion);
            app.handle_key(ch('?'));
            app.handle_key(ch('?'));
            app.handle_key(ch('2'));
            assert!(app.fade.is_none(), "{level:?} {motion:?}");
        }
    }

    // The followed run's bar eases to a new step with motion on: it climbs over several
    // ticks, each closer, then stands; with motion reduced it stands at the step at once.
    #[test]
    fn the_progress_bar_eases_to_a_new_step_with_motion_on() {
        for motion in [Motion::On, Motion::Reduced] {
            let mut app = app_with(Level::Named, motion);
            let _follow = follow_run(&mut app, "20260101T010000Z-c3d4");
            app.handle_key(ch('4'));
            app.handle_key(ch('j'));
            while app.animating() {
                app.animate();
            }
            let task = app.tasks.keys().copied().next().expect("the follow's task");
            let work: Vec<Work> = app.on_flow(FlowEvent::Run {
                task,
                event: Box::new(train_line(16, 1.0)),
            });
            assert!(work.is_empty(), "{work:?}");
            if motion != Motion::On {
                assert!(!app.animating(), "{motion:?}");
                continue;
            }
            let mut shown = Vec::new();
            while app.animating() {
                app.animate();
                shown.push(app.training.bar_shown().unwrap());
                assert!(shown.len() < 40, "it settles: {shown:?}");
            }
            assert!(shown.len() > 3, "{shown:?}");
            assert!(shown.windows(2).all(|w| w[1] >= w[0]), "{shown:?}");
            assert!((shown[shown.len() - 1] - 0.8).abs() < 1e-9, "{shown:?}");
        }
    }
}

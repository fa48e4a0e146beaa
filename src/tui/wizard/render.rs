//! Drawing the init wizard from its state: the steps, the fields of the screen shown with
//! the hint of the one typed and the reason a value is refused below it, the topic form,
//! the summary, the quit question and the last screen (TUI-74, TUI-75).

use std::fmt::Write as _;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::fields::{self, Field, Kind, TOPIC_FIELDS};
use super::{START, SUMMARY, Summary, TITLES, TOPICS, Wizard};
use crate::project::wizard::PRESETS;
use crate::tui::app::MIN_SIZE;
use crate::tui::components::centered;
use crate::tui::theme::Theme;

const LABEL: usize = 24;

/// Draws `wizard` on the whole frame.
pub fn render(wizard: &Wizard, frame: &mut Frame<'_>) {
    let (theme, _) = Theme::from_env(&wizard.env);
    let area = frame.area();
    frame.buffer_mut().set_style(area, theme.base());
    if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
        frame.render_widget(
            Paragraph::new(vec![
                Line::styled("The terminal is too small.", theme.warn()),
                Line::raw(format!(
                    "The wizard needs {}x{}; this one is {}x{}.",
                    MIN_SIZE.0, MIN_SIZE.1, area.width, area.height
                )),
            ])
            .wrap(Wrap { trim: false }),
            area,
        );
        return;
    }
    let [top, body, footer] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(area);
    frame.render_widget(steps(wizard, theme), top);
    let lines = match wizard.screen {
        TOPICS => topic_lines(wizard, theme),
        SUMMARY => summary_lines(wizard, theme),
        START => start_lines(wizard, theme),
        _ => field_lines(wizard, theme),
    };
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(Block::new().borders(Borders::TOP)),
        body,
    );
    frame.render_widget(
        Paragraph::new(Line::styled(keys(wizard), theme.dim())),
        footer,
    );
    if let Some(form) = &wizard.form {
        let lines = form_lines(form, theme);
        let height = u16::try_from(lines.len() + 2).unwrap_or(u16::MAX);
        let rect = centered(body, 76, height);
        frame.render_widget(Clear, rect);
        frame.buffer_mut().set_style(rect, theme.base());
        let title = if form.editing.is_some() {
            " Edit topic "
        } else {
            " New topic "
        };
        frame.render_widget(
            Paragraph::new(lines).wrap(Wrap { trim: false }).block(
                Block::new()
                    .borders(Borders::ALL)
                    .title(Span::styled(title, theme.title())),
            ),
            rect,
        );
    }
    if wizard.quitting {
        let rect = centered(area, 52, 6);
        frame.render_widget(Clear, rect);
        frame.buffer_mut().set_style(rect, theme.base());
        frame.render_widget(
            Paragraph::new(vec![
                Line::raw("Quit the wizard? Nothing has been written."),
                Line::raw(""),
                Line::from(vec![
                    Span::styled(" y ", theme.error()),
                    Span::raw(" yes   "),
                    Span::styled(" n ", theme.selected()),
                    Span::raw(" no"),
                ]),
            ])
            .block(
                Block::new()
                    .borders(Borders::ALL)
                    .title(Span::styled(" Quit? ", theme.title())),
            ),
            rect,
        );
    }
}

/// The title and the steps, the one shown highlighted.
fn steps(wizard: &Wizard, theme: Theme) -> Paragraph<'static> {
    let mut spans = Vec::new();
    for (index, title) in TITLES.iter().enumerate() {
        if index > 0 {
            spans.push(Span::styled(" › ", theme.dim()));
        }
        let style = match index.cmp(&wizard.screen) {
            std::cmp::Ordering::Equal => theme.title(),
            std::cmp::Ordering::Less => theme.text(),
            std::cmp::Ordering::Greater => theme.dim(),
        };
        spans.push(Span::styled(format!("{} {title}", index + 1), style));
    }
    Paragraph::new(vec![
        Line::from(vec![
            Span::styled("overbrainer init", theme.title()),
            Span::styled(
                format!("  a new project in {}", wizard.dir().display()),
                theme.dim(),
            ),
        ]),
        Line::raw(""),
        Line::from(spans),
    ])
}

/// The keys of what receives them.
fn keys(wizard: &Wizard) -> String {
    if wizard.quitting {
        "y quit writing nothing · n, Esc or Enter go on".to_owned()
    } else if wizard.form.is_some() {
        "Enter save the topic · ↑/↓ or Tab field · Esc cancel".to_owned()
    } else if wizard.screen == START {
        "y start auto mode · n open the project".to_owned()
    } else if wizard.screen == TOPICS {
        "a add · e edit · d delete · ↑/↓ select · Enter next · Esc back · Ctrl-C quit".to_owned()
    } else if wizard.screen == SUMMARY {
        "Enter write the files · Shift-Tab/Esc back · Ctrl-C quit".to_owned()
    } else {
        "Enter/Tab next · Shift-Tab/Esc back · ↑/↓ field · ←/→ choice · Ctrl-C quit".to_owned()
    }
}

/// A field's value as drawn: choices between arrows, secrets as `•`.
/// A masked key shows at most this many `•`, then its length.
const MASK: usize = 32;

/// A field's value as drawn, the cursor `▏` at `cursor` when it is being typed.
fn shown(field: &Field, value: &str, cursor: Option<usize>) -> String {
    let chars: Vec<char> = match field.kind {
        Kind::Choice(_) => return format!("‹ {value} ›"),
        Kind::Secret => std::iter::repeat_n('•', value.chars().count().min(MASK)).collect(),
        Kind::Text | Kind::Number => value.chars().collect(),
    };
    let mut out = String::new();
    let at = cursor.map(|c| c.min(chars.len()));
    for (index, c) in chars.iter().enumerate() {
        if at == Some(index) {
            out.push('▏');
        }
        out.push(*c);
    }
    if at == Some(chars.len()) {
        out.push('▏');
    }
    let length = value.chars().count();
    if matches!(field.kind, Kind::Secret) && length > MASK {
        let _ = write!(out, " ({length} characters)");
    }
    out
}

/// One field's line, its hint when focused and its refusal.
fn field_line(
    lines: &mut Vec<Line<'static>>,
    theme: Theme,
    (field, value, focused): (&Field, &str, Option<usize>),
    refused: Option<&str>,
) {
    let marker = if focused.is_some() { "› " } else { "  " };
    let value = shown(field, value, focused);
    let focused = focused.is_some();
    let style = if focused {
        theme.selected()
    } else {
        theme.text()
    };
    lines.push(Line::from(vec![
        Span::styled(marker, theme.title()),
        Span::raw(format!("{:<LABEL$}", field.label)),
        Span::styled(value, style),
    ]));
    if let Some(why) = refused {
        lines.push(Line::styled(
            format!("{:pad$}✗ {why}", "", pad = LABEL + 2),
            theme.error(),
        ));
    } else if focused {
        lines.push(Line::styled(
            format!("{:pad$}{}", "", field.hint, pad = LABEL + 2),
            theme.dim(),
        ));
    }
}

fn field_lines(wizard: &Wizard, theme: Theme) -> Vec<Line<'static>> {
    let mut lines = vec![Line::styled(
        format!(
            "Step {} of {}: {}",
            wizard.screen + 1,
            TITLES.len(),
            TITLES[wizard.screen]
        ),
        theme.title(),
    )];
    lines.push(Line::raw(""));
    for (index, field) in wizard.fields().iter().enumerate() {
        let refused = wizard
            .refused
            .as_ref()
            .filter(|(id, _)| *id == field.id)
            .map(|(_, why)| why.as_str());
        field_line(
            &mut lines,
            theme,
            (
                field,
                wizard.value(field.id),
                (index == wizard.focus).then_some(wizard.cursor),
            ),
            refused,
        );
    }
    if wizard.screen == 1 {
        if let Some(preset) = PRESETS
            .iter()
            .find(|p| p.name == wizard.value(fields::Id::Preset))
        {
            lines.push(Line::raw(""));
            for (label, value) in [("protocol", preset.protocol), ("base URL", preset.base_url)] {
                lines.push(Line::styled(
                    format!("  {label:<LABEL$}{value}"),
                    theme.dim(),
                ));
            }
        }
    }
    lines
}

fn topic_lines(wizard: &Wizard, theme: Theme) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::styled(
            format!("Step {} of {}: Topics", TOPICS + 1, TITLES.len()),
            theme.title(),
        ),
        Line::raw("What the child should learn: at least one topic."),
        Line::raw(""),
    ];
    if wizard.topics.is_empty() {
        lines.push(Line::styled("  no topic yet: `a` adds one", theme.dim()));
    }
    for (index, topic) in wizard.topics.iter().enumerate() {
        let style: Style = if index == wizard.selected {
            theme.selected()
        } else {
            theme.text()
        };
        lines.push(Line::styled(
            format!(
                "  {}: {} ({} subtopics x {} questions)",
                topic.name, topic.description, topic.subtopics, topic.questions
            ),
            style,
        ));
    }
    if let Some(why) = &wizard.topics_refused {
        lines.push(Line::raw(""));
        lines.push(Line::styled(format!("  ✗ {why}"), theme.error()));
    }
    lines
}

fn form_lines(form: &super::TopicForm, theme: Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for (index, field) in TOPIC_FIELDS.iter().enumerate() {
        let refused = form
            .refused
            .as_ref()
            .filter(|(i, _)| *i == index)
            .map(|(_, why)| why.as_str());
        field_line(
            &mut lines,
            theme,
            (
                field,
                &form.values[index],
                (index == form.focus).then_some(form.cursor),
            ),
            refused,
        );
    }
    lines
}

fn summary_lines(wizard: &Wizard, theme: Theme) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::styled(
            format!("Step {} of {}: Summary", SUMMARY + 1, TITLES.len()),
            theme.title(),
        ),
        Line::raw(""),
    ];
    match &wizard.summary {
        Summary::Ready(text) => lines.extend(text.iter().map(|l| Line::raw(l.clone()))),
        Summary::Refused(why) => {
            for (index, line) in why.lines().enumerate() {
                let prefix = if index == 0 { "✗ " } else { "  " };
                lines.push(Line::styled(format!("{prefix}{line}"), theme.error()));
            }
            lines.push(Line::raw(""));
            lines.push(Line::styled(
                "Go back with Shift-Tab or Esc to change an answer.",
                theme.dim(),
            ));
        }
        Summary::None => {}
    }
    lines
}

fn start_lines(wizard: &Wizard, theme: Theme) -> Vec<Line<'static>> {
    let mut lines = vec![Line::styled("✓ The project is written:", theme.ok())];
    lines.extend(wizard.written.iter().map(|f| Line::raw(format!("  {f}"))));
    lines.push(Line::raw(""));
    let answers = wizard.answers();
    let chain = if matches!(answers.training, crate::project::wizard::Training::Skip) {
        "subtopics, questions, answers, then split"
    } else {
        "subtopics, questions, answers, split, then training"
    };
    lines.push(Line::raw(format!("Start auto mode now ({chain})?")));
    if matches!(answers.provider.key, crate::project::wizard::Key::Later) {
        lines.push(Line::styled(
            "The provider's key is still to be filled in: fill in .env first, then `A` starts auto mode.",
            theme.warn(),
        ));
    }
    lines.push(Line::raw(""));
    lines.push(Line::from(vec![
        Span::styled("y", theme.title()),
        Span::raw(" yes, ask to start it   "),
        Span::styled(" n ", theme.selected()),
        Span::raw(" no, open the project"),
    ]));
    lines
}

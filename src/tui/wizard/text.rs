//! Typing into a one-line field as readline does: a cursor moved with ←/→, Home/End
//! (Ctrl-A/Ctrl-E); Backspace/Ctrl-H and Delete; Ctrl-U and Ctrl-K cut to the start or end;
//! Ctrl-W cuts the word before the cursor. Any other control key is ignored, never typed.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// A field's text and its cursor, a char index.
#[derive(Debug)]
pub struct Editing<'a> {
    /// The text.
    pub text: &'a mut String,
    /// The cursor, clamped to the text.
    pub cursor: &'a mut usize,
}

impl Editing<'_> {
    fn byte(&self, at: usize) -> usize {
        self.text
            .char_indices()
            .nth(at)
            .map_or(self.text.len(), |(i, _)| i)
    }

    fn len(&self) -> usize {
        self.text.chars().count()
    }

    /// Inserts `text` at the cursor, control characters left out.
    pub fn insert(&mut self, text: &str) {
        *self.cursor = (*self.cursor).min(self.len());
        let text: String = text.chars().filter(|c| !c.is_control()).collect();
        let at = self.byte(*self.cursor);
        self.text.insert_str(at, &text);
        *self.cursor += text.chars().count();
    }

    fn cut(&mut self, from: usize, to: usize) {
        let (from, to) = (self.byte(from), self.byte(to));
        self.text.replace_range(from..to, "");
    }

    /// Handles `key`; false when it is not an editing key (the caller's then).
    pub fn key(&mut self, key: KeyEvent) -> bool {
        *self.cursor = (*self.cursor).min(self.len());
        let at = *self.cursor;
        let control = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char(c) if !control && !key.modifiers.contains(KeyModifiers::ALT) => {
                self.insert(&c.to_string());
            }
            KeyCode::Char('a') | KeyCode::Home if control || key.code == KeyCode::Home => {
                *self.cursor = 0;
            }
            KeyCode::Char('e') | KeyCode::End if control || key.code == KeyCode::End => {
                *self.cursor = self.len();
            }
            KeyCode::Char('u') if control => {
                self.cut(0, at);
                *self.cursor = 0;
            }
            KeyCode::Char('k') if control => self.cut(at, self.len()),
            KeyCode::Char('w') if control => {
                let chars: Vec<char> = self.text.chars().collect();
                let mut from = at;
                while from > 0 && chars[from - 1].is_whitespace() {
                    from -= 1;
                }
                while from > 0 && !chars[from - 1].is_whitespace() {
                    from -= 1;
                }
                self.cut(from, at);
                *self.cursor = from;
            }
            KeyCode::Backspace | KeyCode::Char('h')
                if at > 0 && (control || key.code == KeyCode::Backspace) =>
            {
                self.cut(at - 1, at);
                *self.cursor = at - 1;
            }
            KeyCode::Delete if at < self.len() => self.cut(at, at + 1),
            KeyCode::Left => *self.cursor = at.saturating_sub(1),
            KeyCode::Right => *self.cursor = (at + 1).min(self.len()),
            // Other control keys are swallowed: never typed into the field.
            KeyCode::Char(_)
            | KeyCode::Backspace
            | KeyCode::Delete
            | KeyCode::Home
            | KeyCode::End => {}
            _ => return false,
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(start: &str, cursor: usize, keys: &[KeyEvent]) -> (String, usize) {
        let mut text = start.to_owned();
        let mut at = cursor;
        for key in keys {
            Editing {
                text: &mut text,
                cursor: &mut at,
            }
            .key(*key);
        }
        (text, at)
    }

    fn k(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn ctrl(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    #[test]
    fn keys_edit_at_the_cursor_and_control_keys_are_never_typed() {
        let table: [(&str, usize, Vec<KeyEvent>, &str, usize); 10] = [
            (
                "sk-wrong",
                8,
                vec![ctrl('u'), k(KeyCode::Char('r'))],
                "r",
                1,
            ),
            ("ab cd", 5, vec![ctrl('w')], "ab ", 3),
            ("ab cd  ", 7, vec![ctrl('w')], "ab ", 3),
            (
                "trial",
                5,
                vec![k(KeyCode::Left), k(KeyCode::Left), k(KeyCode::Char('X'))],
                "triXal",
                4,
            ),
            (
                "abc",
                3,
                vec![k(KeyCode::Home), k(KeyCode::Delete)],
                "bc",
                0,
            ),
            ("abc", 0, vec![ctrl('e'), ctrl('h')], "ab", 2),
            ("abc", 1, vec![ctrl('k')], "a", 1),
            (
                "ünï",
                3,
                vec![k(KeyCode::Left), k(KeyCode::Backspace)],
                "üï",
                1,
            ),
            ("x", 1, vec![ctrl('a'), ctrl('x'), ctrl('v')], "x", 0),
            (
                "x",
                9,
                vec![k(KeyCode::Right), k(KeyCode::Char('y'))],
                "xy",
                2,
            ),
        ];
        for (start, cursor, keys, text, at) in table {
            assert_eq!(
                typed(start, cursor, &keys),
                (text.to_owned(), at),
                "{start:?} {keys:?}"
            );
        }
    }
}

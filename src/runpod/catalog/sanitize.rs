//! Text read from the Runpod catalog made safe to print (POD-11): escape sequences
//! removed, newlines, tabs and the other whitespace controls turned into a space, every
//! other control character (C0, DEL, C1) removed. Tables, pickers, errors and values
//! written to `overbrainer.toml` use only the sanitized text.

const ESC: char = '\u{1b}';
const BEL: char = '\u{7}';
/// The C1 control sequence introducer (a one-character `ESC [`).
const CSI: char = '\u{9b}';
/// The C1 operating system command (a one-character `ESC ]`).
const OSC: char = '\u{9d}';
/// The C1 string terminator (a one-character `ESC \`).
const ST: char = '\u{9c}';

/// `text` with escape sequences and control characters gone (POD-11).
#[must_use]
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ESC => match chars.next() {
                Some('[') => skip_csi(&mut chars),
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut chars),
                // Two-character sequences (`ESC c`, `ESC 7`, ...), and `ESC` at the end.
                _ => {}
            },
            CSI => skip_csi(&mut chars),
            OSC => skip_string(&mut chars),
            '\n' | '\r' | '\t' | '\u{b}' | '\u{c}' | '\u{85}' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// A control sequence's parameters and intermediates, up to its final byte (`@`..`~`).
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('@'..='~').contains(&c) {
            return;
        }
    }
}

/// An OSC, DCS, SOS, PM or APC string, up to `BEL`, `ESC \` or the one-character `ST`.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            BEL | ST => return,
            ESC => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sanitize;

    #[test]
    fn escape_sequences_and_controls_go_whitespace_becomes_a_space() {
        let cases = [
            ("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"),
            ("\u{1b}[31mRED\u{1b}[0m", "RED"),
            ("\u{1b}[2J\u{1b}[1;1Hclear", "clear"),
            ("a\u{1b}]0;title\u{7}b", "ab"),
            (
                "a\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\b",
                "alinkb",
            ),
            ("a\u{9b}31mb", "ab"),
            ("a\u{9d}0;t\u{9c}b", "ab"),
            ("line\nbreak\ttab\rcr", "line break tab cr"),
            ("bell\u{7}del\u{7f}c1\u{85}x\u{90}", "belldelc1 x"),
            ("nul\0", "nul"),
            ("trailing\u{1b}", "trailing"),
            ("\u{1b}cReset", "Reset"),
            ("EU-RO-1 ünïcode ✓", "EU-RO-1 ünïcode ✓"),
        ];
        for (raw, clean) in cases {
            assert_eq!(sanitize(raw), clean, "{raw:?}");
        }
    }
}

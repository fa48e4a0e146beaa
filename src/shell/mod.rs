//! Shell words: how a string reaches a POSIX shell unchanged, for every script the
//! executors run and the machine probe (`system`); and, for tests, `shellcheck` over a
//! generated script.

#[cfg(test)]
pub(crate) mod shellcheck;

/// Quotes `text` as one POSIX shell word: inside single quotes, with each `'`
/// written as `'\''`. Any byte string survives: `sh -c "printf %s $(quote x)"`
/// prints `x` back unchanged.
#[must_use]
pub fn quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('\'');
    for c in text.chars() {
        if c == '\'' {
            quoted.push_str("'\\''");
        } else {
            quoted.push(c);
        }
    }
    quoted.push('\'');
    quoted
}

//! Text from the data made safe to print to a terminal. Agent logs are full of terminal
//! output, some of it hostile: an escape sequence in a trajectory could set the window title,
//! write the clipboard (OSC 52), hide text, clear the screen or move the cursor. Whatever
//! trajkit prints for people to read (`show`, `stats`' table, diagnostics, `--report human`
//! and `github`) goes through [`escape_controls`] first, in colour and plain modes alike.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `c` is written escaped: a C0 control character other than newline and tab (ESC, CR,
/// backspace, BEL, ...), DEL, or a C1 control character (U+0080 to U+009F, the 8-bit CSI
/// U+009B among them).
pub fn is_escaped(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// `text` with every character [`is_escaped`] says written as Rust writes it in a string
/// literal, `\u{HEX}` (ESC is `\u{1b}`, CR `\u{d}`, CSI `\u{9b}`); borrowed when there is none.
/// Newlines and tabs are kept: they only lay text out.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    escape(text, is_escaped)
}

/// [`escape_controls`] for what must stay on one line (an id, a heading, a diagnostic):
/// newlines are escaped too (`\u{a}`), so the data cannot start a line that looks like
/// trajkit's own.
pub fn escape_line(text: &str) -> Cow<'_, str> {
    escape(text, |c| c == '\n' || is_escaped(c))
}

fn escape(text: &str, escaped: impl Fn(char) -> bool) -> Cow<'_, str> {
    let Some(first) = text.find(&escaped) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if escaped(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_written_visibly_and_layout_is_kept() {
        assert!(matches!(escape_controls("plain\ttext\n"), Cow::Borrowed(_)));
        assert_eq!(
            escape_controls("\x1b]0;title\x07 \u{9b}2J a\rb\x08c\x7f"),
            "\\u{1b}]0;title\\u{7} \\u{9b}2J a\\u{d}b\\u{8}c\\u{7f}"
        );
        assert_eq!(escape_controls("é\u{85}日"), "é\\u{85}日");
        assert_eq!(escape_line("a\n\tb\x1b"), "a\\u{a}\tb\\u{1b}");
    }
}

//! The terminal text of a [`View`] (`trajkit show`): a head line, then each step as a turn
//! (a blank line, its heading with class and links) and its texts indented. Every text from
//! the data has its control characters escaped ([`escape_controls`]; newlines too in the
//! one-line parts, [`escape_line`]) before it is coloured, so a trajectory never drives the
//! terminal nor fakes a line of trajkit's own: the only escape sequences written are the
//! colours'.

use std::fmt::Write as _;

use super::view::{Clipped, View};
use crate::terminal::{escape_controls, escape_line};

/// Bytes of each text `show` prints unless asked for all (`--full`).
pub const FOLD_BYTES: usize = 1000;

/// ANSI colours (SGR sequences), or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paint(pub bool);

impl Paint {
    /// `text` in the SGR style `code` (`1`, `2`, `1;34`, ...), or as it is without colours;
    /// `text` must be escaped already.
    fn wrap(self, code: &str, text: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
}

/// The terminal text of `v`, read from `place` (`FILE:LINE`).
pub fn render(v: &View, place: &str, paint: Paint) -> String {
    let mut out = String::new();
    let mut facts = vec![format!("{} steps", v.steps_total)];
    facts.extend(v.outcome.as_ref().map(|o| format!("outcome {o}")));
    facts.extend(v.reward.map(|r| format!("reward {r}")));
    facts.extend(v.format.clone());
    let _ = writeln!(
        out,
        "{}  {}",
        paint.wrap("1", &escape_line(&v.id)),
        escape_line(&facts.join(" · "))
    );
    let _ = writeln!(out, "{}", paint.wrap("2", &escape_line(place)));
    for s in &v.steps {
        let mut head = format!("{} · {} · {}", s.index, s.class, s.heading);
        if let Some(id) = &s.call_id {
            let _ = write!(head, " · {id}");
        }
        if let Some(a) = s.answered_by {
            let _ = write!(head, " → result {a}");
        }
        if let Some(a) = s.answers {
            let _ = write!(head, " ← call {a}");
        }
        if let Some(r) = s.reward {
            let _ = write!(head, " · reward {r}");
        }
        let code = if s.action { "1;34" } else { "1;32" };
        let head = escape_line(&head);
        let _ = writeln!(out, "\n{}", paint.wrap(code, &format!("── {head}")));
        for t in [&s.reasoning, &s.description].into_iter().flatten() {
            text(&mut out, t, paint, Some("2"));
        }
        text(&mut out, &s.body, paint, None);
    }
    out
}

fn text(out: &mut String, c: &Clipped, paint: Paint, code: Option<&str>) {
    for line in c.text.lines() {
        let line = escape_controls(line);
        let line = match code {
            Some(code) => paint.wrap(code, &line),
            None => line.into_owned(),
        };
        let _ = writeln!(out, "   {line}");
    }
    if c.more_bytes > 0 {
        let note = format!("… {} bytes more (--full shows them)", c.more_bytes);
        let _ = writeln!(out, "   {}", paint.wrap("33", &note));
    }
}

/// `text` without the colours [`render`] writes (`ESC [ digits and ; m`), for checks that
/// nothing else of the kind is in it.
pub fn without_colours(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("\x1b[") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let params = after
            .find(|c: char| !(c.is_ascii_digit() || c == ';'))
            .unwrap_or(after.len());
        if after[params..].starts_with('m') {
            rest = &after[params + 1..];
        } else {
            out.push('\x1b');
            rest = &rest[i + 1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Step, Trajectory};
    use crate::report::view::{view, Limits};
    use crate::terminal::is_escaped;

    /// Terminal payloads of each kind: window title (OSC 0), clipboard write (OSC 52), a
    /// hyperlink (OSC 8), clear screen and cursor home, colours, the 8-bit CSI, carriage
    /// return and backspace (text hidden by overwriting), a bell.
    pub const PAYLOADS: &[&str] = &[
        "\x1b]0;owned\x07",
        "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07",
        "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\",
        "\x1b[2J\x1b[H",
        "\x1b[31mred\x1b[0m",
        "\u{9b}2J\u{9b}31m",
        "rm -rf ~\r# harmless comment",
        "secret\x08\x08\x08\x08\x08\x08public",
        "\x07\x00\x7f",
    ];

    fn hostile(payload: &str) -> Trajectory {
        let mut details = serde_json::Map::new();
        details.insert("outcome".into(), serde_json::json!({"status": payload}));
        details.insert("source".into(), serde_json::json!({"format": payload}));
        let mut kwargs = serde_json::Map::new();
        kwargs.insert(payload.into(), serde_json::json!(payload));
        let steps = vec![
            Step::api(payload, kwargs, Some(payload.into())).with_tool_call_id(payload),
            Step::environment_text(Some(payload.into()), format!("out {payload} end\nnext")),
            Step::code(payload, payload, None),
            Step::message(payload.to_owned(), None),
        ];
        Trajectory::new(format!("id{payload}"), steps, details)
    }

    #[test]
    fn no_control_character_of_the_data_reaches_the_terminal() {
        for payload in PAYLOADS {
            let v = view(&hostile(payload), Limits::FULL);
            for paint in [Paint(false), Paint(true)] {
                let text = render(&v, &format!("f{payload}.jsonl:1"), paint);
                let bare = without_colours(&text);
                assert!(
                    !bare.chars().any(is_escaped),
                    "{payload:?} (colour {}): {bare:?}",
                    paint.0
                );
                assert_eq!(paint.0, bare != text, "colours only when asked");
                let shown = escape_controls(payload).into_owned();
                assert!(bare.contains(&format!("id{shown}")), "{bare}");
                assert!(bare.contains(&format!("out {shown} end")), "{bare}");
            }
        }
    }

    #[test]
    fn plain_text_is_unchanged() {
        let t = Trajectory::new(
            "t/1".into(),
            vec![Step::message("a\tb\nc".to_owned(), None)],
            Default::default(),
        );
        let text = render(&view(&t, Limits::FULL), "f.jsonl:1", Paint(false));
        assert_eq!(
            text,
            "t/1  1 steps\nf.jsonl:1\n\n── 0 · message_action · message\n   a\tb\n   c\n"
        );
    }
}

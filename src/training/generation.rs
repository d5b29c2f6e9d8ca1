//! The training-only `{% generation %}` … `{% endgeneration %}` block of Hugging Face chat
//! templates, whose output spans are the assistant's tokens.
//!
//! minijinja has no custom tags, so before compiling, each tag is rewritten into ordinary
//! blocks that print a private-use sentinel character: `{%- generation -%}` becomes
//! `{%- if true %}{{ "\u{F0001}" }}{% endif -%}` (the whitespace controls kept on the outer
//! tags, so `trim_blocks`, `lstrip_blocks` and `-` trim exactly as around the original tag).
//! After rendering, [`take_spans`] removes the sentinels and records where each block's output
//! starts and ends.

use std::ops::Range;

use regex::Regex;

/// Printed where a generation block starts.
pub const START: char = '\u{F0001}';
/// Printed where a generation block ends.
pub const END: char = '\u{F0002}';

/// True when `text` (UTF-8) holds a sentinel (content that would be mistaken for a block's
/// edge).
pub fn has_sentinel(text: &[u8]) -> bool {
    sentinels(text).next().is_some()
}

/// The sentinels of `text`: their byte offsets, and which each is. Both encode in UTF-8 as
/// `F3 B0 80` and a last byte of their own, so a byte search finds them.
fn sentinels(bytes: &[u8]) -> impl Iterator<Item = (usize, char)> + '_ {
    memchr::memchr_iter(0xF3, bytes).filter_map(move |i| match bytes.get(i + 1..i + 4) {
        Some([0xB0, 0x80, 0x81]) => Some((i, START)),
        Some([0xB0, 0x80, 0x82]) => Some((i, END)),
        _ => None,
    })
}

/// `source` with its generation tags rewritten, and whether it had any.
pub fn rewrite(source: &str) -> (String, bool) {
    rewrite_tags(source, true)
}

/// `source` with its generation tags rewritten into blocks that print nothing: it renders the
/// text [`rewrite`]'s rendering leaves once [`take_spans`] has taken the sentinels out.
pub fn remove(source: &str) -> String {
    rewrite_tags(source, false).0
}

fn rewrite_tags(source: &str, marked: bool) -> (String, bool) {
    // A literal pattern: it compiles.
    let Ok(tag) = Regex::new(r"\{%(-|\+)?\s*(generation|endgeneration)\s*(-|\+)?%\}") else {
        return (source.to_owned(), false);
    };
    let mut found = false;
    let out = tag.replace_all(source, |c: &regex::Captures<'_>| {
        found = true;
        let left = c.get(1).map_or("", |m| m.as_str());
        let right = c.get(3).map_or("", |m| m.as_str());
        let mark = if &c[2] == "generation" { START } else { END };
        let print = if marked {
            format!("{{{{ \"{mark}\" }}}}")
        } else {
            String::new()
        };
        format!("{{%{left} if true %}}{print}{{% endif {right}%}}")
    });
    (out.into_owned(), found)
}

/// Removes the sentinels from `rendered` and returns the byte ranges of the generation blocks'
/// output in what remains, in order of their start (a block inside another gives its own
/// span too). `None` when the sentinels do not pair up.
pub fn take_spans(rendered: &mut String) -> Option<Vec<Range<usize>>> {
    if !has_sentinel(rendered.as_bytes()) {
        return Some(Vec::new());
    }
    let mut out = String::with_capacity(rendered.len());
    let mut open: Vec<usize> = Vec::new();
    let mut spans: Vec<Range<usize>> = Vec::new();
    let mut copied = 0;
    for (at, sentinel) in sentinels(rendered.as_bytes()) {
        out.push_str(&rendered[copied..at]);
        copied = at + sentinel.len_utf8();
        if sentinel == START {
            open.push(spans.len());
            spans.push(out.len()..out.len());
        } else {
            let i = open.pop()?;
            spans[i].end = out.len();
        }
    }
    out.push_str(&rendered[copied..]);
    if !open.is_empty() {
        return None;
    }
    *rendered = out;
    Some(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_become_sentinel_blocks_with_their_whitespace_controls() {
        let (out, found) = rewrite("a{%- generation %}b{% endgeneration -%}\n");
        assert!(found);
        assert_eq!(
            out,
            format!(
                "a{{%- if true %}}{{{{ \"{START}\" }}}}{{% endif %}}b{{% if true %}}{{{{ \"{END}\" }}}}{{% endif -%}}\n"
            )
        );
        assert!(!rewrite("{% if x %}generation{% endif %}").1);
    }

    #[test]
    fn spans_are_read_and_sentinels_removed() {
        let mut s = format!("x{START}ab{END}y{START}é{END}");
        assert_eq!(take_spans(&mut s), Some(vec![1..3, 4..6]));
        assert_eq!(s, "xabyé");
        let mut bad = format!("{START}a");
        assert_eq!(take_spans(&mut bad), None);
    }
}

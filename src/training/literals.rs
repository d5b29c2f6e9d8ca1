//! String literals of a chat template, read as Jinja2 reads them.
//!
//! Jinja2 decodes a string literal with Python's `unicode-escape` codec: `\` then a newline
//! continues the line (both vanish), `\a`, `\v`, `\U0001F600`, `\N{BULLET}` are characters,
//! and an escape Python does not know (`\/`, `\q`) keeps its backslash. minijinja decodes fewer
//! escapes and drops the backslash of some unknown ones. Templates rely on the difference:
//! Mistral's write their long system prompts as literals continued over several lines.
//!
//! So before compiling, [`rewrite`] decodes each literal inside `{{ … }}` and `{% … %}` as
//! Python would, and writes it back in the escapes both engines read alike: `\\`, `\"` and
//! `\uXXXX` for control characters, everything else as it is. Text outside tags, comments and
//! `{% raw %}` blocks are left alone. `\N{NAME}` needs Unicode's name table, which trajkit
//! does not carry: it stays as written (minijinja prints it so).

use std::borrow::Cow;

/// `source` with its tags' string literals rewritten (borrowed when it has none to rewrite).
pub fn rewrite(source: &str) -> Cow<'_, str> {
    if !source.contains('\\') {
        return Cow::Borrowed(source);
    }
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(open) = rest.find('{') {
        let (text, tag) = rest.split_at(open);
        out.push_str(text);
        rest = match tag.as_bytes().get(1) {
            Some(b'{') => expression(tag, "}}", &mut out),
            Some(b'%') if is_raw(tag) => raw_block(tag, &mut out),
            Some(b'%') => expression(tag, "%}", &mut out),
            Some(b'#') => copy_through(tag, "#}", &mut out),
            _ => {
                out.push('{');
                &tag[1..]
            }
        };
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// True when `tag` starts a `{% raw %}` block.
fn is_raw(tag: &str) -> bool {
    let inner = tag[2..].trim_start_matches(['-', '+']).trim_start();
    inner.starts_with("raw")
        && inner[3..]
            .trim_start_matches(['-', '+'])
            .trim_start()
            .starts_with("%}")
}

/// Copies `tag` up to and with the first `end` (all of it when there is none); the rest.
fn copy_through<'a>(tag: &'a str, end: &str, out: &mut String) -> &'a str {
    let stop = tag[2..].find(end).map_or(tag.len(), |i| i + 2 + end.len());
    out.push_str(&tag[..stop]);
    &tag[stop..]
}

/// Copies a `{% raw %}` block through its `{% endraw %}` tag (all of it when there is none);
/// the rest.
fn raw_block<'a>(tag: &'a str, out: &mut String) -> &'a str {
    let mut at = 2;
    while let Some(i) = tag[at..].find("{%") {
        let start = at + i;
        let inner = tag[start + 2..].trim_start_matches(['-', '+']).trim_start();
        if inner.starts_with("endraw") {
            out.push_str(&tag[..start]);
            return copy_through(&tag[start..], "%}", out);
        }
        at = start + 2;
    }
    out.push_str(tag);
    ""
}

/// Copies an expression tag that ends with `end` (outside brackets and literals), rewriting
/// its string literals; the rest.
fn expression<'a>(tag: &'a str, end: &str, out: &mut String) -> &'a str {
    out.push_str(&tag[..2]);
    let mut depth = 0usize;
    let mut i = 2;
    let bytes = tag.as_bytes();
    while i < bytes.len() {
        match bytes[i] {
            q @ (b'"' | b'\'') => {
                let (value, len) = python_literal(&tag[i + 1..], q);
                push_literal(&value, out);
                i += 1 + len;
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' => depth = depth.saturating_sub(1),
            b'}' if depth > 0 => depth -= 1,
            _ if depth == 0 && tag[i..].starts_with(end) => {
                out.push_str(end);
                return &tag[i + end.len()..];
            }
            _ => {}
        }
        // Copy one character (whole, as tags may hold any text).
        let c = tag[i..].chars().next().unwrap_or('\0');
        out.push(c);
        i += c.len_utf8().max(1);
    }
    ""
}

/// The value of the literal that starts after its opening quote `q` in `rest`, decoded as
/// Python's `unicode-escape` decodes it, and the bytes it takes with its closing quote (all
/// of `rest` when it is not closed).
fn python_literal(rest: &str, q: u8) -> (String, usize) {
    let mut value = String::new();
    let mut chars = rest.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c as u32 == u32::from(q) {
            return (value, i + 1);
        }
        if c != '\\' {
            value.push(c);
            continue;
        }
        let Some((j, e)) = chars.next() else {
            value.push('\\');
            break;
        };
        let hex = |n: usize, chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>| {
            let digits = rest.get(j + 1..j + 1 + n)?;
            let code = u32::from_str_radix(digits, 16).ok()?;
            let c = char::from_u32(code)?;
            for _ in 0..n {
                chars.next();
            }
            Some(c)
        };
        let decoded = match e {
            '\n' => continue,
            '\\' | '\'' | '"' => Some(e),
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
            'x' => hex(2, &mut chars),
            'u' => hex(4, &mut chars),
            'U' => hex(8, &mut chars),
            '0'..='7' => {
                let mut code = e as u32 - '0' as u32;
                for _ in 0..2 {
                    match chars.peek() {
                        Some(&(_, d @ '0'..='7')) => {
                            code = code * 8 + (d as u32 - '0' as u32);
                            chars.next();
                        }
                        _ => break,
                    }
                }
                char::from_u32(code)
            }
            _ => None,
        };
        match decoded {
            Some(d) => value.push(d),
            None => {
                value.push('\\');
                value.push(e);
            }
        }
    }
    (value, rest.len())
}

/// `value` as a literal both engines read alike.
fn push_literal(value: &str, out: &mut String) {
    out.push('"');
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c if c.is_control() && (c as u32) < 0x80 => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What minijinja prints for `source` once rewritten.
    fn printed(source: &str) -> String {
        let rewritten = rewrite(source);
        let mut env = minijinja::Environment::new();
        env.add_template("t", &rewritten).expect("compiles");
        env.get_template("t")
            .and_then(|t| t.render(()))
            .expect("renders")
    }

    #[test]
    fn literals_decode_as_python_decodes_them() {
        // Each case: the literal as written, and what Jinja2 prints for it.
        let cases = [
            ("\"a\\\nb\"", "ab"),
            ("\"a\\qb\"", "a\\qb"),
            ("\"a\\/b\"", "a\\/b"),
            ("\"a\\x41b\"", "aAb"),
            ("\"a\\u00e9b\"", "aéb"),
            ("\"a\\U0001F600b\"", "a😀b"),
            ("\"a\\101b\"", "aAb"),
            ("\"a\\ab\\vc\"", "a\u{7}b\u{b}c"),
            ("'a\\'b\"c'", "a'b\"c"),
            ("\"a\\tb\\\\n\"", "a\tb\\n"),
        ];
        for (literal, want) in cases {
            assert_eq!(printed(&format!("{{{{ {literal} }}}}")), want, "{literal}");
        }
        // Jinja2 prints `é•`: a named character stays as written.
        assert_eq!(printed("{{ \"é\\N{BULLET}\" }}"), "é\\N{BULLET}");
    }

    #[test]
    fn only_tags_are_rewritten() {
        let source = "a\\/b {# \"\\/\" #}{% raw %}{{ \"\\/\" }}{% endraw %}{% set x = {'k': \"\\/\"} %}{{ x.k }} \"\\/\"";
        assert_eq!(printed(source), "a\\/b {{ \"\\/\" }}\\/ \"\\/\"");
        assert!(matches!(rewrite("{{ 'plain' }}"), Cow::Borrowed(_)));
    }
}

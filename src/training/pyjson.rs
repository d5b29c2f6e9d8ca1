//! Python's way of writing values, for chat templates: `json.dumps` (what the `tojson` filter
//! of transformers' template environment calls, with its `ensure_ascii`, `indent`,
//! `separators` and `sort_keys` arguments) and `repr` of floats, `True`/`False`/`None`.

use std::borrow::Cow;
use std::fmt::Write;

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, State, Value};

use super::budget;

/// How [`dumps`] writes: `json.dumps`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpOptions {
    /// Escape every non-ASCII character as `\uXXXX`.
    pub ensure_ascii: bool,
    /// Pretty-print with this indent (a newline, then the indent once per level).
    pub indent: Option<String>,
    /// Between items, and between a key and its value.
    pub separators: (Cow<'static, str>, Cow<'static, str>),
    /// Keys in sorted order.
    pub sort_keys: bool,
    /// What writing may cost: each byte 1, each item visited `ITEM_COST`; past it, writing
    /// fails (the rendering's budget).
    pub max_len: usize,
    /// Items visited so far.
    pub visited: std::cell::Cell<usize>,
}

/// What visiting an item costs, in bytes of [`DumpOptions::max_len`] (as minijinja's filters
/// charge a visited item).
const ITEM_COST: usize = 32;

impl Default for DumpOptions {
    fn default() -> Self {
        DumpOptions {
            ensure_ascii: false,
            indent: None,
            separators: (", ".into(), ": ".into()),
            sort_keys: false,
            max_len: usize::MAX,
            visited: std::cell::Cell::new(0),
        }
    }
}

/// The `tojson` filter: `json.dumps(value, ensure_ascii=False, indent=None, separators=None,
/// sort_keys=False)` with the keyword arguments given, within the rendering's budget: an
/// `indent` of at most [`budget::MAX_INDENT`], and no more text than the budget can pay for.
pub fn tojson(state: &State, value: &Value, kwargs: Kwargs) -> Result<String, Error> {
    let mut opts = DumpOptions::default();
    let (mut indent, mut separators) = (None, None);
    // Each argument given is read once (`Kwargs::get` would record, with an allocation, every
    // name asked for, given or not).
    for key in kwargs.args() {
        match key {
            "ensure_ascii" => {
                opts.ensure_ascii = kwargs.peek::<Option<bool>>(key)?.unwrap_or(false)
            }
            "sort_keys" => opts.sort_keys = kwargs.peek::<Option<bool>>(key)?.unwrap_or(false),
            "indent" => indent = kwargs.peek::<Option<Value>>(key)?,
            "separators" => separators = kwargs.peek::<Option<Value>>(key)?,
            other => {
                return Err(Error::new(
                    ErrorKind::TooManyArguments,
                    format!("unknown keyword argument '{other}'"),
                ))
            }
        }
    }
    if let Some(indent) = indent {
        opts.indent = match indent.kind() {
            ValueKind::None | ValueKind::Undefined => None,
            ValueKind::String => Some(indent.to_string()),
            ValueKind::Number => {
                let n = i64::try_from(indent.clone())
                    .map_err(|_| invalid("tojson: indent must be an integer or a string"))?;
                Some(" ".repeat(usize::try_from(n).unwrap_or(0).min(budget::MAX_INDENT + 1)))
            }
            _ => return Err(invalid("tojson: indent must be an integer or a string")),
        };
        if let Some(indent) = opts
            .indent
            .as_ref()
            .filter(|i| i.len() > budget::MAX_INDENT)
        {
            return Err(invalid(&format!(
                "tojson: an indent of {} characters or more, over the limit of {}",
                indent.chars().count(),
                budget::MAX_INDENT
            )));
        }
        if opts.indent.is_some() {
            // json.dumps' default item separator drops its space when indenting.
            opts.separators.0 = ",".into();
        }
    }
    if let Some(seps) = separators {
        if !seps.is_none() && !seps.is_undefined() {
            let pair: Vec<Cow<'static, str>> = seps
                .try_iter()?
                .take(3)
                .map(|s| s.as_str().map(separator))
                .collect::<Option<_>>()
                .ok_or_else(|| invalid("tojson: separators must be two strings"))?;
            let [item, key] = <[Cow<'static, str>; 2]>::try_from(pair)
                .map_err(|_| invalid("tojson: separators must be two strings"))?;
            opts.separators = (item, key);
        }
    }
    opts.max_len = budget::bytes_left(state);
    let mut out = String::new();
    dumps(value, &opts, 0, &mut out)?;
    Ok(out)
}

/// A separator, without a copy when it is one of the usual ones.
fn separator(s: &str) -> Cow<'static, str> {
    match [",", ", ", ":", ": "].into_iter().find(|c| *c == s) {
        Some(common) => Cow::Borrowed(common),
        None => Cow::Owned(s.to_owned()),
    }
}

fn invalid(message: &str) -> Error {
    Error::new(ErrorKind::InvalidOperation, message.to_owned())
}

/// Fails when `out` has grown past [`DumpOptions::max_len`].
fn within(out: &str, opts: &DumpOptions) -> Result<(), Error> {
    let cost = out
        .len()
        .saturating_add(opts.visited.get().saturating_mul(ITEM_COST));
    if cost > opts.max_len {
        return Err(over(opts));
    }
    Ok(())
}

fn over(opts: &DumpOptions) -> Error {
    Error::new(
        ErrorKind::OutOfFuel,
        format!(
            "tojson would write more than the {} bytes left",
            opts.max_len
        ),
    )
}

/// The deepest nesting `tojson` writes (Python's `json.dumps` stops near 1000 too, at its
/// recursion limit).
const MAX_DEPTH: usize = 512;

/// Writes `value` as Python's `json.dumps` would, at nesting `depth`.
pub fn dumps(
    value: &Value,
    opts: &DumpOptions,
    depth: usize,
    out: &mut String,
) -> Result<(), Error> {
    if depth > MAX_DEPTH {
        return Err(invalid(&format!(
            "tojson: a value nested deeper than {MAX_DEPTH} levels"
        )));
    }
    match value.kind() {
        ValueKind::None => out.push_str("null"),
        ValueKind::Undefined => {
            return Err(invalid(
                "tojson: an undefined value is not JSON serializable",
            ))
        }
        ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
        ValueKind::Number => number(value, out, true),
        ValueKind::String => {
            let s = value.as_str().unwrap_or_default();
            if out.len().saturating_add(s.len()) > opts.max_len {
                return Err(over(opts));
            }
            string(s, opts.ensure_ascii, out)
        }
        ValueKind::Map => {
            // A map object gives its entries in order without a lookup per key.
            let entries: Vec<(Value, Value)> =
                match value.as_object().and_then(|o| o.try_iter_pairs()) {
                    Some(pairs) => pairs.collect(),
                    None => value
                        .try_iter()?
                        .map(|key| value.get_item(&key).map(|item| (key, item)))
                        .collect::<Result<_, _>>()?,
                };
            let mut pairs = entries
                .iter()
                .map(|(k, v)| Ok((key_text(k)?, v)))
                .collect::<Result<Vec<_>, Error>>()?;
            if opts.sort_keys {
                pairs.sort_by(|a, b| a.0.cmp(&b.0));
            }
            container(
                out,
                opts,
                depth,
                '{',
                '}',
                pairs.into_iter(),
                |out, (k, v)| {
                    string(&k, opts.ensure_ascii, out);
                    out.push_str(&opts.separators.1);
                    dumps(v, opts, depth + 1, out)
                },
            )?;
        }
        ValueKind::Seq | ValueKind::Iterable => {
            // Item by item: a list may be a lazy repetition far larger than memory.
            container(
                out,
                opts,
                depth,
                '[',
                ']',
                value.try_iter()?,
                |out, item| dumps(&item, opts, depth + 1, out),
            )?;
        }
        _ => {
            return Err(invalid(&format!(
                "tojson: a {} is not JSON serializable",
                value.kind()
            )))
        }
    }
    within(out, opts)
}

/// `[`/`{`, the `items` (each written by `item`), `]`/`}`, indented as `opts` says; it stops
/// when the text grows past [`DumpOptions::max_len`].
fn container<T>(
    out: &mut String,
    opts: &DumpOptions,
    depth: usize,
    open: char,
    close: char,
    items: impl Iterator<Item = T>,
    mut item: impl FnMut(&mut String, T) -> Result<(), Error>,
) -> Result<(), Error> {
    out.push(open);
    let newline = |out: &mut String, level: usize| {
        if let Some(indent) = &opts.indent {
            out.push('\n');
            for _ in 0..level {
                out.push_str(indent);
            }
        }
    };
    let mut any = false;
    for (i, x) in items.enumerate() {
        opts.visited.set(opts.visited.get() + 1);
        within(out, opts)?;
        if i > 0 {
            out.push_str(&opts.separators.0);
        }
        newline(out, depth + 1);
        item(out, x)?;
        any = true;
    }
    if any {
        newline(out, depth);
    }
    out.push(close);
    Ok(())
}

/// A map key as `json.dumps` writes it: strings as they are, numbers, booleans and None as
/// their JSON text.
fn key_text(key: &Value) -> Result<Cow<'_, str>, Error> {
    Ok(match key.kind() {
        ValueKind::String => Cow::Borrowed(key.as_str().unwrap_or_default()),
        ValueKind::None => "null".into(),
        ValueKind::Bool => if key.is_true() { "true" } else { "false" }.into(),
        ValueKind::Number => {
            let mut s = String::new();
            number(key, &mut s, true);
            s.into()
        }
        _ => {
            return Err(invalid(
                "tojson: keys must be str, int, float, bool or None",
            ))
        }
    })
}

/// A number as Python writes it: integers in full, floats by `repr` (`json` spells the
/// non-finite ones `NaN`, `Infinity`, `-Infinity`).
fn number(value: &Value, out: &mut String, json: bool) {
    if value.is_integer() {
        out.push_str(&value.to_string());
        return;
    }
    match f64::try_from(value.clone()) {
        Ok(f) => float_repr(f, json, out),
        Err(_) => out.push_str(&value.to_string()),
    }
}

/// Python's `repr(float)`: the shortest digits that read back the same, in positional
/// notation when the decimal exponent is from -4 to 15, else as `d.ddde±XX`.
pub fn float_repr(f: f64, json: bool, out: &mut String) {
    if f.is_nan() {
        out.push_str(if json { "NaN" } else { "nan" });
        return;
    }
    if f.is_infinite() {
        let s = match (json, f > 0.0) {
            (true, true) => "Infinity",
            (true, false) => "-Infinity",
            (false, true) => "inf",
            (false, false) => "-inf",
        };
        out.push_str(s);
        return;
    }
    // Rust's `{:e}` is the shortest round-trip form too: `-1.2345e-7`, `1e16`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    out.push_str(sign);
    if !(-4..16).contains(&exp) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    } else if exp < 0 {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let int_len = exp as usize + 1;
        if digits.len() <= int_len {
            out.push_str(&digits);
            for _ in digits.len()..int_len {
                out.push('0');
            }
            out.push_str(".0");
        } else {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        }
    }
}

/// A JSON string as `json.dumps` writes it: `"`, `\` and control characters escaped (`\n`,
/// `\t`, ... or `\u00XX`), and with `ensure_ascii` everything past ASCII as `\uXXXX`
/// (surrogate pairs beyond the basic plane).
fn string(s: &str, ensure_ascii: bool, out: &mut String) {
    out.push('"');
    if !ensure_ascii {
        // Only `"`, `\\` and control characters are escaped: the runs between them are copied
        // whole (no byte of a multi-byte character is one of those).
        let mut run = 0;
        for (i, b) in s.bytes().enumerate() {
            if b == b'"' || b == b'\\' || b < 0x20 {
                out.push_str(&s[run..i]);
                escape(char::from(b), false, out);
                run = i + 1;
            }
        }
        out.push_str(&s[run..]);
    } else {
        for c in s.chars() {
            escape(c, true, out);
        }
    }
    out.push('"');
}

/// `c` as `json.dumps` writes it inside a string.
fn escape(c: char, ensure_ascii: bool, out: &mut String) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        c if (c as u32) < 0x20 || (ensure_ascii && (c as u32) > 0x7e) => {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{u:04x}");
            }
        }
        c => out.push(c),
    }
}

/// How Python prints a value in `{{ … }}`, where it differs from minijinja: `True`, `False`,
/// `None` and floats by `repr`. `None` for everything else.
pub fn python_str(value: &Value) -> Option<String> {
    match value.kind() {
        ValueKind::Bool => Some(if value.is_true() { "True" } else { "False" }.into()),
        ValueKind::None => Some("None".into()),
        ValueKind::Number if !value.is_integer() => {
            let mut s = String::new();
            number(value, &mut s, false);
            Some(s)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr(f: f64) -> String {
        let mut s = String::new();
        float_repr(f, false, &mut s);
        s
    }

    #[test]
    fn floats_read_as_python_writes_them() {
        for (f, want) in [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123456.789, "123456.789"),
            (1.5e-7, "1.5e-07"),
            (1.2345e100, "1.2345e+100"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
        ] {
            assert_eq!(repr(f), want, "{f}");
        }
    }

    use minijinja::value::Serde;

    fn dump(v: serde_json::Value, opts: &DumpOptions) -> String {
        let mut s = String::new();
        dumps(&Value::from(Serde(&v)), opts, 0, &mut s).expect("dumps");
        s
    }

    #[test]
    fn strings_are_escaped_as_json_dumps_escapes_them() {
        // Without ensure_ascii, json.dumps escapes what serde_json escapes, the same way.
        for text in [
            "",
            "plain",
            "a\"b\\c",
            "\n\r\t\u{8}\u{c}\u{1}\u{1f}\u{7f}",
            "é中😀 mixed \"quoted\" \u{0}end",
        ] {
            let mut ours = String::new();
            string(text, false, &mut ours);
            let serde = serde_json::to_string(text).expect("a string serializes");
            assert_eq!(ours, serde, "{text:?}");
        }
    }

    #[test]
    fn json_matches_json_dumps() {
        let v = serde_json::json!({"b": [1, 2.0, null, true], "a": "é<\u{1}\"", "c": {}});
        assert_eq!(
            dump(v.clone(), &DumpOptions::default()),
            r#"{"b": [1, 2.0, null, true], "a": "é<\u0001\"", "c": {}}"#
        );
        let opts = DumpOptions {
            ensure_ascii: true,
            indent: Some("  ".into()),
            separators: (",".into(), ": ".into()),
            sort_keys: true,
            ..DumpOptions::default()
        };
        assert_eq!(
            dump(v, &opts),
            "{\n  \"a\": \"\\u00e9<\\u0001\\\"\",\n  \"b\": [\n    1,\n    2.0,\n    null,\n    true\n  ],\n  \"c\": {}\n}"
        );
        assert_eq!(
            dump(
                serde_json::json!("😀"),
                &DumpOptions {
                    ensure_ascii: true,
                    ..DumpOptions::default()
                }
            ),
            r#""\ud83d\ude00""#
        );
    }
}

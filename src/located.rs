//! A TOML document read as a JSON value that remembers where each value was written, so a
//! problem found after parsing (by the JSON Schema, or when a regex is compiled) can name the
//! line and the key; and that problem, [`LocatedError`]. Converter specs, pipeline files and
//! redaction rule files are read with it.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;

use serde_json::{Map, Number, Value};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::model::rules::escape_pointer;

/// A problem in a TOML file (a spec, a pipeline, a rule file), located by line and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocatedError {
    /// The file as given.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// JSON pointer to the key (`/rule/2/match`); empty for the whole file.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for LocatedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = self.pointer.trim_start_matches('/').replace('/', ".");
        if key.is_empty() {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        } else {
            write!(f, "{}:{}: {key}: {}", self.file, self.line, self.message)
        }
    }
}

/// A parse error: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TomlError {
    /// 1-based line.
    pub line: usize,
    /// The key whose value the error is in, as a JSON pointer (`/rule/2/match`), when the line
    /// names one.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

/// A TOML document as JSON, with the byte span of every value by JSON pointer.
#[derive(Debug)]
pub struct LocatedDoc {
    /// The document as JSON: tables are objects, arrays arrays, datetimes strings.
    pub value: Value,
    spans: HashMap<String, Range<usize>>,
    line_starts: Vec<usize>,
}

impl LocatedDoc {
    /// Parses TOML `text`.
    pub fn parse(text: &str) -> Result<Self, TomlError> {
        let line_starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let table = DeTable::parse(text).map_err(|e| {
            let offset = e.span().map_or(0, |s| s.start);
            let line = line_of_offset(&line_starts, offset);
            let written = key_before(text, offset).map(|(key, value)| {
                let pointer = format!("{}/{}", table_above(text, offset), escape_pointer(key));
                (pointer, key, value)
            });
            let mut message = e.message().trim().to_owned();
            if let Some((_, key, value)) = &written {
                if message.contains("escape") {
                    let literal = if value.contains('\'') {
                        format!("\'\'\'{value}\'\'\'")
                    } else {
                        format!("'{value}'")
                    };
                    message.push_str(&format!(
                        " (in a basic string \"...\" a backslash starts an escape; write a \
                         regex or a template with filter arguments as a literal string, which \
                         keeps backslashes as written: {key} = {literal}; see \
                         docs/spec-escaping.md)"
                    ));
                }
            }
            TomlError {
                line,
                key: written.map(|(pointer, _, _)| pointer),
                message,
            }
        })?;
        let mut spans = HashMap::new();
        let span = table.span();
        let value =
            table_to_json(table.get_ref(), "", &mut spans).map_err(|(offset, message)| {
                TomlError {
                    line: line_of_offset(&line_starts, offset),
                    key: None,
                    message,
                }
            })?;
        spans.insert(String::new(), span);
        Ok(LocatedDoc {
            value,
            spans,
            line_starts,
        })
    }

    /// The 1-based line where the value at `pointer` (or its nearest written ancestor) is.
    pub fn line(&self, pointer: &str) -> usize {
        let mut p = pointer;
        loop {
            if let Some(span) = self.spans.get(p) {
                return line_of_offset(&self.line_starts, span.start);
            }
            match p.rfind('/') {
                Some(i) => p = &p[..i],
                None => return 1,
            }
        }
    }
}

/// The key whose value holds byte `offset` of `text` (the last `key =` on its line before it)
/// and the value's text as written, without its opening quote, up to the end of the string
/// when it is one.
fn key_before(text: &str, offset: usize) -> Option<(&str, &str)> {
    let offset = offset.min(text.len());
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    let before = text.get(start..offset)?;
    let eq = before.rfind('=')?;
    let key = before[..eq]
        .trim_end()
        .rsplit(|c: char| c.is_whitespace() || c == '{' || c == ',')
        .next()?
        .trim_matches(['"', '\'']);
    if key.is_empty() || key.starts_with('[') {
        return None;
    }
    let value = text[start + eq + 1..end].trim_start();
    let value = value.strip_prefix('"').unwrap_or(value);
    let close = value
        .char_indices()
        .scan(false, |escaped, (i, c)| {
            let here = (c == '"' && !*escaped).then_some(i);
            *escaped = c == '\\' && !*escaped;
            Some(here)
        })
        .flatten()
        .next()
        .unwrap_or(value.len());
    Some((key, &value[..close]))
}

/// The table holding byte `offset` of `text`, as a JSON pointer: the last `[table]` or
/// `[[array]]` header before it (`/record`, `/rule/2`), or the root.
fn table_above(text: &str, offset: usize) -> String {
    let headers: Vec<&str> = text[..offset.min(text.len())]
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('['))
        .collect();
    let Some(last) = headers.last() else {
        return String::new();
    };
    let name = |h: &str| {
        h.trim_start_matches('[')
            .split(']')
            .next()
            .unwrap_or_default()
            .trim()
            .replace('.', "/")
    };
    let path = name(last);
    if last.starts_with("[[") {
        let index = headers
            .iter()
            .filter(|h| h.starts_with("[[") && name(h) == path)
            .count()
            - 1;
        format!("/{path}/{index}")
    } else {
        format!("/{path}")
    }
}

fn line_of_offset(line_starts: &[usize], offset: usize) -> usize {
    line_starts.partition_point(|&start| start <= offset).max(1)
}

/// The byte offset and description of a value JSON cannot hold (an integer beyond 64 bits, a
/// NaN).
type Unrepresentable = (usize, String);

fn table_to_json(
    table: &DeTable<'_>,
    pointer: &str,
    spans: &mut HashMap<String, Range<usize>>,
) -> Result<Value, Unrepresentable> {
    let mut out = Map::new();
    for (key, value) in table {
        let child = format!("{pointer}/{}", escape_pointer(key.get_ref()));
        let json = value_to_json(value, &child, spans)?;
        out.insert(key.get_ref().to_string(), json);
    }
    Ok(Value::Object(out))
}

fn value_to_json(
    value: &Spanned<DeValue<'_>>,
    pointer: &str,
    spans: &mut HashMap<String, Range<usize>>,
) -> Result<Value, Unrepresentable> {
    spans.insert(pointer.to_owned(), value.span());
    let bad_number = |what: &str| {
        (
            value.span().start,
            format!("{what} at {pointer} cannot be represented in JSON"),
        )
    };
    Ok(match value.get_ref() {
        DeValue::String(s) => Value::String(s.to_string()),
        DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
            .map(Value::from)
            .map_err(|_| bad_number("integer"))?,
        DeValue::Float(f) => f
            .as_str()
            .replace('_', "")
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| bad_number("float"))?,
        DeValue::Boolean(b) => Value::Bool(*b),
        DeValue::Datetime(d) => Value::String(d.to_string()),
        DeValue::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| value_to_json(item, &format!("{pointer}/{i}"), spans))
                .collect::<Result<_, _>>()?,
        ),
        DeValue::Table(t) => table_to_json(t, pointer, spans)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_keep_their_lines_and_source_order() {
        let doc = LocatedDoc::parse(
            "name = \"x\"\n\n[record]\nz = 1\na = [\"p\", \"q\"]\n\n[[rule]]\nmatch = 'a+'\n",
        )
        .unwrap();
        assert_eq!(
            doc.value,
            json!({"name": "x", "record": {"z": 1, "a": ["p", "q"]}, "rule": [{"match": "a+"}]})
        );
        let keys: Vec<&String> = doc.value["record"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["z", "a"]);
        assert_eq!(doc.line("/name"), 1);
        assert_eq!(doc.line("/record/a/1"), 5);
        assert_eq!(doc.line("/rule/0/match"), 8);
        // A key that is not written falls back to its nearest written ancestor.
        assert_eq!(doc.line("/rule/0/emit"), doc.line("/rule/0"));
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let err = LocatedDoc::parse("a = 1\nb = = 2\n").unwrap_err();
        assert_eq!(err.line, 2, "{err:?}");
    }

    #[test]
    fn escape_errors_name_the_key_and_suggest_a_literal_string() {
        let text = "name = \"x\"\n[[rule]]\nemit = []\n[[rule]]\nmatch = \"^\\d+ \\\"x\\\"$\"\n";
        let err = LocatedDoc::parse(text).unwrap_err();
        assert_eq!(err.line, 5, "{err:?}");
        assert_eq!(err.key.as_deref(), Some("/rule/1/match"));
        assert!(
            err.message.ends_with(
                r#"keeps backslashes as written: match = '^\d+ \"x\"$'; see docs/spec-escaping.md)"#
            ),
            "{}",
            err.message
        );
        let inline = "[[rule]]\nemit = [{ class = \"x\", content = \"a\\qb\" }]\n";
        let err = LocatedDoc::parse(inline).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("/rule/0/content"), "{err:?}");
    }
}

//! A TOML document read as a JSON value that remembers where each value was written, so a
//! problem found after parsing (by the JSON Schema, or when a regex is compiled) can name the
//! line and the key.

use std::collections::HashMap;
use std::ops::Range;

use serde_json::{Map, Number, Value};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::model::rules::escape_pointer;

/// A parse error: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TomlError {
    /// 1-based line.
    pub line: usize,
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
        let table = DeTable::parse(text).map_err(|e| TomlError {
            line: e
                .span()
                .map_or(1, |s| line_of_offset(&line_starts, s.start)),
            message: e.message().trim().to_owned(),
        })?;
        let mut spans = HashMap::new();
        let span = table.span();
        let value =
            table_to_json(table.get_ref(), "", &mut spans).map_err(|(offset, message)| {
                TomlError {
                    line: line_of_offset(&line_starts, offset),
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
}

//! Key expressions: how a join key is built from a record's fields.
//!
//! Three forms, all declared, none guessed:
//! - a JSON pointer, `/loop_id` or `/details/source/native_ids/task_id`;
//! - a field path, `instance_id` or `details.source.native_ids.loop_id` (dots separate keys);
//! - a template mixing text and fields, `{loop_id}#{iteration}` or
//!   `{task_id}/attempt-{attempt_id:03}`. A field in braces is a field path or a pointer; `{{`
//!   and `}}` are literal braces.
//!
//! A field used in a key must be a string or an integer. Integers are written in decimal;
//! `:0N` pads an integer with zeros to N digits (`7` → `007`); `:lower` and `:upper` change the
//! case of a string. Nothing else is converted: a float, a boolean, a string with `:03` or a
//! missing field is an error naming the field.
//!
//! A path ending in `*` (`/context/event_ids/*`, `native_ids.event_ids.*`) stands for every
//! element of that array, so one record can have several keys; a template with such a field has
//! one key per element (and the product when several fields are lists).

use std::fmt;

use serde_json::{Map, Value};

use crate::model::Trajectory;

/// A parsed key expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyExpr {
    text: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Field(Field),
}

/// One field reference of a key expression.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Field {
    /// Object keys (or array indices) from the root.
    path: Vec<String>,
    /// The path ends in `*`: every element of the array there.
    each: bool,
    format: Format,
    /// The field as written, for messages.
    shown: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Plain,
    Pad(usize),
    Lower,
    Upper,
}

/// A field's value as a key expression sees it.
#[derive(Debug, Clone, Copy)]
pub enum FieldValue<'a> {
    /// A string that is not held in a JSON value (a trajectory's `id`).
    Str(&'a str),
    /// A JSON value.
    Json(&'a Value),
}

/// Something key expressions can read fields from.
pub trait Fields {
    /// The value at `path` (object keys or array indices), if any.
    fn field(&self, path: &[String]) -> Option<FieldValue<'_>>;
}

impl Fields for Value {
    fn field(&self, path: &[String]) -> Option<FieldValue<'_>> {
        walk(self, path).map(FieldValue::Json)
    }
}

impl Fields for Map<String, Value> {
    fn field(&self, path: &[String]) -> Option<FieldValue<'_>> {
        let (first, rest) = path.split_first()?;
        walk(self.get(first)?, rest).map(FieldValue::Json)
    }
}

/// A trajectory exposes `id`, `schema_version` and `details` (with everything below it).
impl Fields for Trajectory {
    fn field(&self, path: &[String]) -> Option<FieldValue<'_>> {
        let (first, rest) = path.split_first()?;
        match (first.as_str(), rest) {
            ("id", []) => Some(FieldValue::Str(&self.id)),
            ("schema_version", []) => self.schema_version.as_deref().map(FieldValue::Str),
            ("details", []) => None,
            ("details", rest) => self.details.field(rest),
            _ => None,
        }
    }
}

fn walk<'a>(mut v: &'a Value, path: &[String]) -> Option<&'a Value> {
    for seg in path {
        v = match v {
            Value::Object(o) => o.get(seg)?,
            Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(v)
}

/// Why a key could not be built from a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    /// The field, as written in the expression.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "key field {}: {}", self.field, self.message)
    }
}

impl KeyExpr {
    /// Parses an expression (see the module docs).
    pub fn parse(text: &str) -> Result<KeyExpr, String> {
        let bad = |why: &str| Err(format!("key expression {text:?}: {why}"));
        if text.is_empty() {
            return bad("empty");
        }
        let mut parts = Vec::new();
        if !text.contains(['{', '}']) {
            parts.push(Part::Field(parse_field(text, text)?));
            return Ok(KeyExpr {
                text: text.to_owned(),
                parts,
            });
        }
        let mut lit = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    lit.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    lit.push('}');
                }
                '}' => return bad("unmatched `}` (write `}}` for a literal brace)"),
                '{' => {
                    let mut inner = String::new();
                    loop {
                        match chars.next() {
                            Some('}') => break,
                            Some('{') | None => return bad("unclosed `{`"),
                            Some(c) => inner.push(c),
                        }
                    }
                    if !lit.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut lit)));
                    }
                    parts.push(Part::Field(parse_field(&inner, text)?));
                }
                c => lit.push(c),
            }
        }
        if !lit.is_empty() {
            parts.push(Part::Text(lit));
        }
        if !parts.iter().any(|p| matches!(p, Part::Field(_))) {
            return bad("a template needs at least one {field}");
        }
        Ok(KeyExpr {
            text: text.to_owned(),
            parts,
        })
    }

    /// The expression as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The keys of `record`: one, or several when a field is a list (`*`); none when such a list
    /// is empty.
    pub fn eval(&self, record: &dyn Fields) -> Result<Vec<String>, KeyError> {
        let mut keys = vec![String::new()];
        for part in &self.parts {
            match part {
                Part::Text(t) => keys.iter_mut().for_each(|k| k.push_str(t)),
                Part::Field(f) => {
                    let values = f.values(record)?;
                    keys = if values.len() == 1 {
                        keys.into_iter().map(|k| k + &values[0]).collect()
                    } else {
                        keys.iter()
                            .flat_map(|k| values.iter().map(move |v| format!("{k}{v}")))
                            .collect()
                    };
                }
            }
        }
        Ok(keys)
    }

    /// The single key of `record` (an error when the expression gives several or none).
    pub fn eval_one(&self, record: &dyn Fields) -> Result<String, KeyError> {
        let mut keys = self.eval(record)?;
        match keys.len() {
            1 => Ok(keys.pop().unwrap_or_default()),
            n => Err(KeyError {
                field: self.text.clone(),
                message: format!("gives {n} values where one is needed"),
            }),
        }
    }
}

impl fmt::Display for KeyExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for KeyExpr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        KeyExpr::parse(s)
    }
}

/// As its text, the way it was written.
impl serde::Serialize for KeyExpr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> serde::Deserialize<'de> for KeyExpr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::choice::from_name(d)
    }
}

fn parse_field(spec: &str, whole: &str) -> Result<Field, String> {
    let bad = |why: String| format!("key expression {whole:?}: {why}");
    let (path_text, format) = match spec.rsplit_once(':') {
        // A pointer may hold ':' in a key; only a known format after the last ':' is one.
        Some((p, f)) => match parse_format(f) {
            Some(format) => (p, format),
            None if spec.starts_with('/') => (spec, Format::Plain),
            None => {
                return Err(bad(format!(
                    "unknown format {f:?} in {{{spec}}} (known: 0N for zero-padded integers, lower, upper)"
                )))
            }
        },
        None => (spec, Format::Plain),
    };
    let mut path: Vec<String> = if let Some(pointer) = path_text.strip_prefix('/') {
        pointer
            .split('/')
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .collect()
    } else {
        path_text.split('.').map(str::to_owned).collect()
    };
    if path.iter().any(String::is_empty) {
        return Err(bad(format!("empty key in field {path_text:?}")));
    }
    let each = path.last().is_some_and(|s| s == "*");
    if each {
        path.pop();
    }
    if path.iter().any(|s| s == "*") {
        return Err(bad(format!(
            "`*` may only end a field path, in {path_text:?}"
        )));
    }
    if path.is_empty() {
        return Err(bad("a field needs a name".to_owned()));
    }
    Ok(Field {
        path,
        each,
        format,
        shown: path_text.to_owned(),
    })
}

fn parse_format(f: &str) -> Option<Format> {
    match f {
        "lower" => Some(Format::Lower),
        "upper" => Some(Format::Upper),
        _ => {
            let digits = f.strip_prefix('0')?;
            let width: usize = digits.parse().ok()?;
            (1..=64).contains(&width).then_some(Format::Pad(width))
        }
    }
}

impl Field {
    fn error(&self, message: impl Into<String>) -> KeyError {
        KeyError {
            field: self.shown.clone(),
            message: message.into(),
        }
    }

    fn values(&self, record: &dyn Fields) -> Result<Vec<String>, KeyError> {
        let found = record
            .field(&self.path)
            .ok_or_else(|| self.error("missing"))?;
        if !self.each {
            return Ok(vec![self.format(found)?]);
        }
        match found {
            FieldValue::Json(Value::Array(items)) => items
                .iter()
                .map(|v| self.format(FieldValue::Json(v)))
                .collect(),
            _ => Err(self.error("is not a list (the path ends in `*`)")),
        }
    }

    fn format(&self, v: FieldValue<'_>) -> Result<String, KeyError> {
        let text = match v {
            FieldValue::Str(s) => Scalar::Str(s),
            FieldValue::Json(Value::String(s)) => Scalar::Str(s),
            FieldValue::Json(Value::Number(n)) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => Scalar::Int(i.to_string()),
                (None, Some(u)) => Scalar::Int(u.to_string()),
                _ => {
                    return Err(self.error(format!(
                        "is the number {n}, not an integer; keys are strings or integers"
                    )))
                }
            },
            FieldValue::Json(other) => {
                return Err(self.error(format!("is {}; keys are strings or integers", kind(other))))
            }
        };
        match (self.format, text) {
            (Format::Plain, Scalar::Str(s)) => Ok(s.to_owned()),
            (Format::Plain, Scalar::Int(i)) => Ok(i),
            (Format::Lower, Scalar::Str(s)) => Ok(s.to_lowercase()),
            (Format::Upper, Scalar::Str(s)) => Ok(s.to_uppercase()),
            (Format::Lower | Format::Upper, Scalar::Int(i)) => Ok(i),
            (Format::Pad(w), Scalar::Int(i)) => Ok(match i.strip_prefix('-') {
                Some(abs) => format!("-{abs:0>w$}", w = w.saturating_sub(1)),
                None => format!("{i:0>w$}"),
            }),
            (Format::Pad(w), Scalar::Str(s)) => Err(self.error(format!(
                "is the string {s:?}; :0{w} pads integers (strings are not converted)"
            ))),
        }
    }
}

enum Scalar<'a> {
    Str(&'a str),
    Int(String),
}

/// "a boolean", "an object", ... for messages.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys(expr: &str, v: &Value) -> Result<Vec<String>, KeyError> {
        KeyExpr::parse(expr).expect("parses").eval(v)
    }

    #[test]
    fn pointer_path_and_template_forms() {
        let r = json!({"loop_id": "L", "iteration": 3, "a": {"b/c": "x", "d": "y"}});
        assert_eq!(keys("/loop_id", &r).unwrap(), vec!["L"]);
        assert_eq!(keys("/a/b~1c", &r).unwrap(), vec!["x"]);
        assert_eq!(keys("a.d", &r).unwrap(), vec!["y"]);
        assert_eq!(keys("{loop_id}#{iteration}", &r).unwrap(), vec!["L#3"]);
        assert_eq!(keys("{/a/d}-{{lit}}", &r).unwrap(), vec!["y-{lit}"]);
    }

    #[test]
    fn integer_padding_and_case_are_explicit() {
        let r = json!({"task_id": "Task-7", "attempt_id": 2, "neg": -5, "s": "002"});
        assert_eq!(
            keys("{task_id}/attempt-{attempt_id:03}", &r).unwrap(),
            vec!["Task-7/attempt-002"]
        );
        assert_eq!(keys("{task_id:lower}", &r).unwrap(), vec!["task-7"]);
        assert_eq!(keys("{task_id:upper}", &r).unwrap(), vec!["TASK-7"]);
        assert_eq!(keys("{neg:04}", &r).unwrap(), vec!["-005"]);
        let e = keys("{s:03}", &r).unwrap_err();
        assert!(e.message.contains("pads integers"), "{e}");
    }

    #[test]
    fn wrong_types_and_missing_fields_are_errors_not_guesses() {
        let r = json!({"f": 0.5, "b": true, "o": {}});
        assert!(keys("/f", &r)
            .unwrap_err()
            .message
            .contains("not an integer"));
        assert!(keys("/b", &r).unwrap_err().message.contains("a boolean"));
        assert!(keys("/o", &r).unwrap_err().message.contains("an object"));
        let e = keys("{missing}#1", &r).unwrap_err();
        assert_eq!(e.field, "missing");
        assert_eq!(e.message, "missing");
    }

    #[test]
    fn lists_give_several_keys() {
        let r = json!({"ids": [3, "x"], "s": "S", "empty": []});
        assert_eq!(
            keys("event:{ids.*}", &r).unwrap(),
            vec!["event:3", "event:x"]
        );
        assert_eq!(keys("/ids/*", &r).unwrap(), vec!["3", "x"]);
        assert_eq!(keys("{s}", &r).unwrap(), vec!["S"]);
        assert!(keys("/empty/*", &r).unwrap().is_empty());
        assert!(keys("/s/*", &r).unwrap_err().message.contains("not a list"));
    }

    #[test]
    fn malformed_expressions_are_refused() {
        for bad in ["", "{a", "a}", "{}", "{a:wat}", "{a.*.b}", "x{{y}}"] {
            assert!(KeyExpr::parse(bad).is_err(), "{bad:?} should not parse");
        }
    }

    #[test]
    fn trajectories_expose_id_and_details() {
        let mut details = Map::new();
        details.insert("source".into(), json!({"native_ids": {"loop_id": "L"}}));
        let t = Trajectory::new("t-1".into(), vec![], details);
        let k = |e: &str| KeyExpr::parse(e).expect("parses").eval(&t);
        assert_eq!(k("id").unwrap(), vec!["t-1"]);
        assert_eq!(k("/details/source/native_ids/loop_id").unwrap(), vec!["L"]);
        assert_eq!(k("details.source.native_ids.loop_id").unwrap(), vec!["L"]);
        assert!(k("content").is_err());
    }
}

//! Argument lists written as text, parsed into an API action's keyword arguments.

use serde_json::{Map, Number, Value};

/// How an argument list is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgSyntax {
    /// Python call arguments without the parentheses: `"q", page=2, exact=True`. Positional
    /// arguments take the names in `positional`, in order. Values are Python literals
    /// (strings in single or double quotes, numbers, True/False/None); anything else is kept
    /// as its text.
    Python {
        /// Names of positional arguments.
        positional: Vec<String>,
    },
}

impl ArgSyntax {
    /// Parses an `args_syntax` value: `python` or `python:name1,name2`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (kind, names) = text.split_once(':').unwrap_or((text, ""));
        match kind {
            "python" => Ok(ArgSyntax::Python {
                positional: names
                    .split(',')
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned)
                    .collect(),
            }),
            other => Err(format!(
                "unknown args_syntax {other:?} (supported: python, python:NAME,NAME...)"
            )),
        }
    }

    /// Parses `text` into keyword arguments.
    pub fn kwargs(&self, text: &str) -> Result<Map<String, Value>, String> {
        let ArgSyntax::Python { positional } = self;
        let mut out = Map::new();
        let mut names = positional.iter();
        for arg in split_args(text)? {
            let (name, value) = match keyword(arg) {
                Some((k, v)) => (k.to_owned(), v),
                None => match names.next() {
                    Some(n) => (n.clone(), arg),
                    None => {
                        return Err(format!(
                            "positional argument {arg:?} has no name (name it with \
                             args_syntax = \"python:NAME,...\")"
                        ))
                    }
                },
            };
            out.insert(name, literal(value));
        }
        Ok(out)
    }
}

/// The top-level, comma-separated arguments of `text`, trimmed; commas inside quotes and
/// brackets do not split.
fn split_args(text: &str) -> Result<Vec<&str>, String> {
    let mut args = Vec::new();
    let (mut depth, mut quote, mut escaped, mut start) = (0i32, None::<char>, false, 0);
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(_), _) if escaped => escaped = false,
            (Some(_), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                args.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if quote.is_some() {
        return Err(format!("unterminated string in arguments {text:?}"));
    }
    let last = text[start..].trim();
    if !last.is_empty() || !args.is_empty() {
        args.push(last);
    }
    Ok(args)
}

/// `name=value` when `arg` is a keyword argument.
fn keyword(arg: &str) -> Option<(&str, &str)> {
    let (name, value) = arg.split_once('=')?;
    let name = name.trim();
    let is_ident = name
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    (is_ident && !value.starts_with('=')).then(|| (name, value.trim()))
}

/// A Python literal as JSON; text that is not a simple literal stays text.
fn literal(text: &str) -> Value {
    let unquoted = ['"', '\'']
        .iter()
        .find_map(|&q| text.strip_prefix(q)?.strip_suffix(q).map(|s| (q, s)));
    if let Some((q, inner)) = unquoted {
        let mut s = String::with_capacity(inner.len());
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            match (c, chars.clone().next()) {
                ('\\', Some(n)) if n == q || n == '\\' => {
                    s.push(n);
                    chars.next();
                }
                ('\\', Some('n')) => {
                    s.push('\n');
                    chars.next();
                }
                _ => s.push(c),
            }
        }
        return Value::String(s);
    }
    match text {
        "True" => Value::Bool(true),
        "False" => Value::Bool(false),
        "None" => Value::Null,
        _ => text
            .parse::<i64>()
            .map(Value::from)
            .ok()
            .or_else(|| {
                text.parse::<f64>()
                    .ok()
                    .and_then(Number::from_f64)
                    .map(Value::Number)
            })
            .unwrap_or_else(|| Value::String(text.to_owned())),
    }
}

impl Default for ArgSyntax {
    fn default() -> Self {
        ArgSyntax::Python {
            positional: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_arguments_become_kwargs() {
        let syntax = ArgSyntax::parse("python:query").unwrap();
        assert_eq!(
            Value::Object(
                syntax
                    .kwargs(r#""a, b", page=2, exact=True, note='it\'s'"#)
                    .unwrap()
            ),
            json!({"query": "a, b", "page": 2, "exact": true, "note": "it's"})
        );
        assert_eq!(
            Value::Object(syntax.kwargs("").unwrap()),
            json!({}),
            "no arguments"
        );
        assert_eq!(
            Value::Object(syntax.kwargs("x=[1, 2], y=f(3)").unwrap()),
            json!({"x": "[1, 2]", "y": "f(3)"}),
            "brackets keep their commas; non-literals stay text"
        );
    }

    #[test]
    fn unnamed_or_broken_arguments_are_errors() {
        let syntax = ArgSyntax::parse("python").unwrap();
        assert!(syntax.kwargs("\"q\"").unwrap_err().contains("has no name"));
        assert!(syntax.kwargs("a=\"q").unwrap_err().contains("unterminated"));
        assert!(ArgSyntax::parse("yaml").is_err());
    }
}

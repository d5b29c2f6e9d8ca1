//! Text templates of converter specs: literal text with `{placeholder}`s, parsed once when the
//! spec is loaded.
//!
//! A placeholder names a capture group of the rule's regex (`{code}`), a built-in (`{$text}`
//! the turn's text, `{$role}` its role, `{$turn}` its 0-based index, `{$record}` the record's
//! 0-based index in its input), or a field of the record by JSON pointer (`{/id}`), and may
//! end in filters: `{code|trim}`. `{{` and `}}` are literal braces.

use std::borrow::Cow;
use std::fmt;

use memchr::memmem;
use regex::Regex;
use serde_json::Value;

/// What a placeholder refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Var {
    /// A named capture group of the rule's regex.
    Capture(String),
    /// The whole text of the turn.
    Text,
    /// The turn's role.
    Role,
    /// The turn's 0-based position in the record.
    Turn,
    /// The record's 0-based position in its input.
    Record,
    /// A value of the record, by JSON pointer.
    Field(String),
}

/// A transformation applied to a placeholder's value. Filters apply to values that are present;
/// only `default` gives a missing value one.
#[derive(Debug, Clone)]
pub enum Filter {
    /// `trim`: remove leading and trailing whitespace.
    Trim,
    /// `lower`: lower-case.
    Lower,
    /// `json`: encode as a JSON string literal, quotes included.
    Json,
    /// `prepend("s")`: put text before the value.
    Prepend(String),
    /// `append("s")`: put text after the value.
    Append(String),
    /// `replace("from", "to")`: replace every occurrence of a literal text.
    Replace(Needle, String),
    /// `sub("regex", "replacement")`: replace every match of a regular expression; the
    /// replacement may use `$1` / `${name}`.
    Sub(Regex, String),
    /// `default("s")`: the value to use when there is none.
    Default(String),
    /// `after("s")`: the text after the first `s`; missing when there is no `s`.
    After(Needle),
    /// `after_last("s")`: the text after the last `s`.
    AfterLast(Needle),
    /// `before("s")`: the text before the first `s`.
    Before(Needle),
    /// `before_last("s")`: the text before the last `s`.
    BeforeLast(Needle),
}

/// The literal text a filter looks for, with its searchers built once, when the spec is loaded.
#[derive(Clone)]
pub struct Needle {
    text: String,
    forward: memmem::Finder<'static>,
    backward: memmem::FinderRev<'static>,
}

impl Needle {
    fn new(text: String) -> Self {
        Needle {
            forward: memmem::Finder::new(text.as_bytes()).into_owned(),
            backward: memmem::FinderRev::new(text.as_bytes()).into_owned(),
            text,
        }
    }

    /// Where the first occurrence in `hay` starts (`str::find`).
    fn find(&self, hay: &str) -> Option<usize> {
        self.forward.find(hay.as_bytes())
    }

    /// Where the last occurrence in `hay` starts (`str::rfind`).
    fn rfind(&self, hay: &str) -> Option<usize> {
        self.backward.rfind(hay.as_bytes())
    }

    /// `hay` with every occurrence replaced by `to` (`str::replace`); `hay` itself when there
    /// is none.
    fn replace<'v>(&self, hay: Cow<'v, str>, to: &str) -> Cow<'v, str> {
        if self.text.is_empty() {
            // Between every character, as `str::replace` does.
            return Cow::Owned(hay.replace("", to));
        }
        let mut hits = self.forward.find_iter(hay.as_bytes()).peekable();
        if hits.peek().is_none() {
            return hay;
        }
        let mut out = String::with_capacity(hay.len());
        let mut at = 0;
        for start in hits {
            out.push_str(&hay[at..start]);
            out.push_str(to);
            at = start + self.text.len();
        }
        out.push_str(&hay[at..]);
        Cow::Owned(out)
    }
}

impl fmt::Debug for Needle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.text.fmt(f)
    }
}

impl PartialEq for Filter {
    fn eq(&self, other: &Self) -> bool {
        format!("{self:?}") == format!("{other:?}")
    }
}

impl Eq for Filter {}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Placeholder(Var, Vec<Filter>),
}

/// A parsed template (the default is the empty template).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

/// Where placeholder values come from when a template is rendered.
pub trait Scope {
    /// The value of `var`, or `None` when it has none (a capture group that did not take part in
    /// the match, a missing field).
    fn get(&self, var: &Var) -> Option<Cow<'_, str>>;
}

/// Why a template does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError(pub String);

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Template {
    /// Parses `text`.
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(i) = rest.find(['{', '}']) {
            literal.push_str(&rest[..i]);
            let brace = &rest[i..i + 1];
            if rest[i + 1..].starts_with(brace) {
                literal.push_str(brace);
                rest = &rest[i + 2..];
                continue;
            }
            let at = text.len() - rest.len() + i;
            if brace == "}" {
                return Err(TemplateError(format!(
                    "unmatched }} at byte {at} (write }}}} for a literal brace)"
                )));
            }
            let inner = &rest[i + 1..];
            let end = split_outside_strings(inner, '}')
                .first()
                .copied()
                .filter(|&e| e < inner.len());
            let Some(end) = end else {
                return Err(TemplateError(format!(
                    "unclosed placeholder at byte {at} (write {{{{ for a literal brace)"
                )));
            };
            if !literal.is_empty() {
                parts.push(Part::Literal(std::mem::take(&mut literal)));
            }
            let (var, filters) = parse_placeholder(&inner[..end])?;
            parts.push(Part::Placeholder(var, filters));
            rest = &inner[end + 1..];
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        Ok(Template { parts })
    }

    /// The JSON pointer when the template is exactly one record field without filters (such a
    /// template copies the field's JSON value where a value, not text, is wanted).
    pub fn as_field(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [Part::Placeholder(Var::Field(p), filters)] if filters.is_empty() => Some(p),
            _ => None,
        }
    }

    /// The capture groups the template uses.
    pub fn captures(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Placeholder(Var::Capture(name), _) => Some(name.as_str()),
            _ => None,
        })
    }

    /// Renders the template. A template that is a single placeholder whose value is missing
    /// renders as `None` (so an optional capture becomes `null`); elsewhere a missing value is
    /// empty text.
    pub fn render(&self, scope: &dyn Scope) -> Option<String> {
        if let [Part::Placeholder(var, filters)] = self.parts.as_slice() {
            return apply(scope.get(var), filters).map(Cow::into_owned);
        }
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Literal(s) => out.push_str(s),
                Part::Placeholder(var, filters) => {
                    if let Some(v) = apply(scope.get(var), filters) {
                        out.push_str(&v);
                    }
                }
            }
        }
        Some(out)
    }
}

/// `value` through `filters`. Cutting filters (`trim`, `after`, ...) keep borrowing a borrowed
/// value, and `replace` leaves a value without the text alone.
fn apply<'v>(mut value: Option<Cow<'v, str>>, filters: &[Filter]) -> Option<Cow<'v, str>> {
    for f in filters {
        value = match (f, value) {
            (Filter::Default(d), None) => Some(Cow::Owned(d.clone())),
            (_, None) => None,
            (Filter::Default(_), Some(v)) => Some(v),
            (Filter::Trim, Some(v)) => {
                let start = v.len() - v.trim_start().len();
                let end = v.trim_end().len().max(start);
                Some(cut(v, start, end))
            }
            (Filter::Lower, Some(v)) => Some(Cow::Owned(v.to_lowercase())),
            (Filter::Json, Some(v)) => Some(Cow::Owned(Value::from(v.as_ref()).to_string())),
            (Filter::Prepend(p), Some(v)) => Some(Cow::Owned(format!("{p}{v}"))),
            (Filter::Append(a), Some(v)) => Some(Cow::Owned(v.into_owned() + a)),
            (Filter::Replace(from, to), Some(v)) => Some(from.replace(v, to)),
            (Filter::Sub(re, to), Some(v)) => {
                Some(Cow::Owned(re.replace_all(&v, to.as_str()).into_owned()))
            }
            (Filter::After(d), Some(v)) => d.find(&v).map(|i| {
                let len = v.len();
                cut(v, i + d.text.len(), len)
            }),
            (Filter::AfterLast(d), Some(v)) => d.rfind(&v).map(|i| {
                let len = v.len();
                cut(v, i + d.text.len(), len)
            }),
            (Filter::Before(d), Some(v)) => d.find(&v).map(|i| cut(v, 0, i)),
            (Filter::BeforeLast(d), Some(v)) => d.rfind(&v).map(|i| cut(v, 0, i)),
        };
    }
    value
}

/// The bytes `start..end` of `v` (on character boundaries), borrowed when `v` is.
fn cut(v: Cow<'_, str>, start: usize, end: usize) -> Cow<'_, str> {
    match v {
        Cow::Borrowed(s) => Cow::Borrowed(&s[start..end]),
        Cow::Owned(mut s) => {
            s.truncate(end);
            s.drain(..start);
            Cow::Owned(s)
        }
    }
}

/// Byte offsets of `sep` in `text` outside double-quoted strings (with backslash escapes), then
/// `text.len()`.
fn split_outside_strings(text: &str, sep: char) -> Vec<usize> {
    let mut cuts = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            c if c == sep && !in_string => cuts.push(i),
            _ => {}
        }
    }
    cuts.push(text.len());
    cuts
}

fn parse_placeholder(inner: &str) -> Result<(Var, Vec<Filter>), TemplateError> {
    let mut pieces = Vec::new();
    let mut start = 0;
    for cut in split_outside_strings(inner, '|') {
        pieces.push(inner[start..cut].trim());
        start = cut + 1;
    }
    let name = pieces[0];
    let var = match name {
        "$text" => Var::Text,
        "$role" => Var::Role,
        "$turn" => Var::Turn,
        "$record" => Var::Record,
        p if p.starts_with('/') => Var::Field(p.to_owned()),
        n if !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
            Var::Capture(n.to_owned())
        }
        other => {
            return Err(TemplateError(format!(
                "unknown placeholder {{{other}}}: use a capture group name, $text, $role, \
                 $turn, $record, or a JSON pointer such as /id"
            )))
        }
    };
    let filters = pieces[1..]
        .iter()
        .map(|f| parse_filter(f, inner))
        .collect::<Result<_, _>>()?;
    Ok((var, filters))
}

fn parse_filter(text: &str, placeholder: &str) -> Result<Filter, TemplateError> {
    let bad = |why: String| TemplateError(format!("{why} in {{{placeholder}}}"));
    let (name, args) = match text.split_once('(') {
        Some((name, rest)) => {
            let args = rest
                .strip_suffix(')')
                .ok_or_else(|| bad(format!("filter {text:?} lacks its closing parenthesis")))?;
            let args: Vec<String> = serde_json::from_str(&format!("[{args}]")).map_err(|_| {
                bad(format!(
                    "the arguments of {name} must be double-quoted strings, as in {name}(\"x\")"
                ))
            })?;
            (name.trim(), args)
        }
        None => (text, Vec::new()),
    };
    let found = args.len();
    let arity = |n: usize| -> Result<(), TemplateError> {
        if found == n {
            Ok(())
        } else {
            Err(bad(format!("{name} takes {n} argument(s), found {found}")))
        }
    };
    let mut args = args.into_iter();
    let mut arg = || args.next().unwrap_or_default();
    Ok(match name {
        "trim" => arity(0).map(|_| Filter::Trim)?,
        "lower" => arity(0).map(|_| Filter::Lower)?,
        "json" => arity(0).map(|_| Filter::Json)?,
        "prepend" => arity(1).map(|_| Filter::Prepend(arg()))?,
        "append" => arity(1).map(|_| Filter::Append(arg()))?,
        "default" => arity(1).map(|_| Filter::Default(arg()))?,
        "after" => arity(1).map(|_| Filter::After(Needle::new(arg())))?,
        "after_last" => arity(1).map(|_| Filter::AfterLast(Needle::new(arg())))?,
        "before" => arity(1).map(|_| Filter::Before(Needle::new(arg())))?,
        "before_last" => arity(1).map(|_| Filter::BeforeLast(Needle::new(arg())))?,
        "replace" => arity(2).map(|_| Filter::Replace(Needle::new(arg()), arg()))?,
        "sub" => {
            arity(2)?;
            let pattern = arg();
            let re = Regex::new(&pattern).map_err(|e| bad(format!("sub: {e}")))?;
            Filter::Sub(re, arg())
        }
        other => {
            return Err(bad(format!(
                "unknown filter {other:?} (filters: trim, lower, json, prepend, append, default, \
                 replace, sub, after, after_last, before, before_last)"
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn needles_find_and_replace_as_str_does() {
        let hays = [
            "",
            "aaa",
            "abcabc",
            "é→é",
            "x\n\nAct: bash\n\nAct: y",
            "no match here",
        ];
        let needles = ["", "a", "aa", "abc", "é", "→", "\n\nAct: ", "zz"];
        for hay in hays {
            for text in needles {
                let n = Needle::new(text.to_owned());
                assert_eq!(n.find(hay), hay.find(text), "{hay:?} {text:?}");
                assert_eq!(n.rfind(hay), hay.rfind(text), "{hay:?} {text:?}");
                let replaced = n.replace(Cow::Borrowed(hay), "<>");
                assert_eq!(replaced, hay.replace(text, "<>"), "{hay:?} {text:?}");
                // Untouched text stays borrowed.
                if !hay.contains(text) {
                    assert!(matches!(replaced, Cow::Borrowed(_)));
                }
            }
        }
    }

    #[test]
    fn cutting_filters_give_what_owned_text_gives() {
        let filters = parse_placeholder(r#"x|trim|after("a")|before_last("c")|replace("b", "B")"#)
            .map(|(_, f)| f)
            .unwrap_or_default();
        for text in ["  xabbc  ", "abc", "   ", "a", "éaébcé c "] {
            let borrowed = apply(Some(Cow::Borrowed(text)), &filters);
            let owned = apply(Some(Cow::Owned(text.to_owned())), &filters);
            assert_eq!(borrowed, owned, "{text:?}");
            let expected = text
                .trim()
                .find('a')
                .map(|i| &text.trim()[i + 1..])
                .and_then(|t| t.rfind('c').map(|j| t[..j].replace('b', "B")));
            assert_eq!(borrowed.map(Cow::into_owned), expected, "{text:?}");
        }
    }

    struct Vars(HashMap<&'static str, &'static str>);

    impl Scope for Vars {
        fn get(&self, var: &Var) -> Option<Cow<'_, str>> {
            match var {
                Var::Capture(n) => self.0.get(n.as_str()).map(|v| Cow::Borrowed(*v)),
                Var::Text => Some(Cow::Borrowed("the text")),
                _ => None,
            }
        }
    }

    fn render(template: &str) -> Option<String> {
        let vars = Vars(HashMap::from([("a", " x "), ("q", "say \"hi\"")]));
        Template::parse(template).unwrap().render(&vars)
    }

    #[test]
    fn placeholders_filters_and_escapes() {
        assert_eq!(
            render("<solution>{a}</solution>").unwrap(),
            "<solution> x </solution>"
        );
        assert_eq!(render("{a|trim}!").unwrap(), "x!");
        assert_eq!(render("{q|json}").unwrap(), r#""say \"hi\"""#);
        assert_eq!(render("{{literal}} {$text}").unwrap(), "{literal} the text");
        assert_eq!(render("é{a}ü").unwrap(), "é x ü");
        assert_eq!(
            render(r#"{a|trim|prepend("<s> ")|append(" </s>")}"#).unwrap(),
            "<s> x </s>"
        );
        assert_eq!(render(r#"{q|replace("\"", "'")}"#).unwrap(), "say 'hi'");
        assert_eq!(
            render(r#"{q|sub("(\\w+) \"(\\w+)\"", "$2 $1")}"#).unwrap(),
            "hi say"
        );
        assert_eq!(render(r#"{q|replace("}", "|")}"#).unwrap(), "say \"hi\"");
    }

    #[test]
    fn after_and_before_cut_at_literal_text() {
        let vars = Vars(HashMap::from([("t", "Think: a\n\nAct: b\n\nAct: c")]));
        let render = |t: &str| Template::parse(t).unwrap().render(&vars);
        assert_eq!(
            render(r#"{t|after("Think: ")|before("\n\nAct: ")}"#).unwrap(),
            "a"
        );
        assert_eq!(
            render(r#"{t|before_last("\n\nAct: ")}"#).unwrap(),
            "Think: a\n\nAct: b"
        );
        assert_eq!(render(r#"{t|after_last("Act: ")}"#).unwrap(), "c");
        assert_eq!(
            render(r#"{t|after("nowhere")}"#),
            None,
            "absent delimiter: missing"
        );
        assert_eq!(render(r#"[{t|before("nowhere")}]"#).unwrap(), "[]");
    }

    #[test]
    fn filters_skip_missing_values_except_default() {
        assert_eq!(render(r#"[{missing|append(".\n")}]"#).unwrap(), "[]");
        assert_eq!(render(r#"{missing|default("")}"#).unwrap(), "");
        assert_eq!(render(r#"{a|default("z")|trim}"#).unwrap(), "x");
    }

    #[test]
    fn a_lone_missing_value_is_null_elsewhere_empty() {
        assert_eq!(render("{missing}"), None);
        assert_eq!(render("[{missing}]").unwrap(), "[]");
        assert_eq!(render("").unwrap(), "");
    }

    #[test]
    fn bad_templates_say_why() {
        for (t, needle) in [
            ("{a", "unclosed"),
            ("a}", "unmatched"),
            ("{a b}", "unknown placeholder"),
            ("{a|upper}", "unknown filter"),
            ("{a|append(x)}", "double-quoted"),
            ("{a|replace(\"x\")}", "takes 2"),
            ("{a|sub(\"(\", \"\")}", "sub:"),
        ] {
            let e = Template::parse(t).unwrap_err();
            assert!(e.0.contains(needle), "{t}: {e}");
        }
        assert_eq!(
            Template::parse("{x}{y|trim}")
                .unwrap()
                .captures()
                .collect::<Vec<_>>(),
            ["x", "y"]
        );
    }
}

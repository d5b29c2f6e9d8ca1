//! Text templates of converter specs: literal text with `{placeholder}`s, parsed once when the
//! spec is loaded.
//!
//! A placeholder names a capture group of the rule's regex (`{code}`), a built-in (`{$text}`
//! the turn's text, `{$role}` its role, `{$turn}` its 0-based index, `{$record}` the record's
//! 0-based index in its input, `{$member}` its position in its group, `{$index}`, `{$key}` and
//! `{$value/...}` the item of a split or an iteration), or a field of the record by JSON
//! pointer (`{/id}`, `{$parent/id}` in the record a split item comes from, `{$turn/action}` in
//! the current turn), and may end in filters: `{code|trim}`. `{{` and `}}` are literal braces.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use memchr::memmem;
use regex::Regex;
use serde_json::{Number, Value};

use super::arith::{self, Num, Op};
use super::url;
use super::usage::Usage;
use crate::json::Node;

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
    /// A value of the record a split item comes from, by JSON pointer (`$parent/...`).
    Parent(String),
    /// The record's 0-based position in its group (`$member`).
    Member,
    /// The 0-based position of the current item of a split or an iteration (`$index`).
    Index,
    /// The key of the current entry of an iterated object (`$key`).
    Key,
    /// The current item of an iteration, or a value inside it by JSON pointer (`$value`,
    /// `$value/0`).
    Value(String),
    /// A value inside the current turn, by JSON pointer (`$turn/action/name`), for turns that
    /// are objects.
    TurnField(String),
}

impl Var {
    /// Parses a variable name as written in a placeholder (`$text`, `/id`, `code`), or `None`.
    pub fn parse(name: &str) -> Option<Var> {
        let pointer =
            |rest: &str| (rest.is_empty() || rest.starts_with('/')).then(|| rest.to_owned());
        Some(match name {
            "$text" => Var::Text,
            "$role" => Var::Role,
            "$turn" => Var::Turn,
            "$record" => Var::Record,
            "$member" => Var::Member,
            "$index" => Var::Index,
            "$key" => Var::Key,
            p if p.starts_with('/') => Var::Field(p.to_owned()),
            p if p.starts_with("$value") => Var::Value(pointer(&p["$value".len()..])?),
            p if p.starts_with("$parent/") => Var::Parent(p["$parent".len()..].to_owned()),
            p if p.starts_with("$turn/") => Var::TurnField(p["$turn".len()..].to_owned()),
            n if !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                Var::Capture(n.to_owned())
            }
            _ => return None,
        })
    }

    /// The variable as a placeholder names it (`/id`, `$value/0`, `$text`, `code`).
    pub fn written(&self) -> String {
        match self {
            Var::Capture(name) => name.clone(),
            Var::Text => "$text".into(),
            Var::Role => "$role".into(),
            Var::Turn => "$turn".into(),
            Var::Record => "$record".into(),
            Var::Member => "$member".into(),
            Var::Index => "$index".into(),
            Var::Key => "$key".into(),
            Var::Field(p) => p.clone(),
            Var::Parent(p) => format!("$parent{p}"),
            Var::Value(p) => format!("$value{p}"),
            Var::TurnField(p) => format!("$turn{p}"),
        }
    }

    /// True for the variables whose value is a JSON value of the data (a field, an item).
    pub fn is_data(&self) -> bool {
        matches!(
            self,
            Var::Field(_) | Var::Parent(_) | Var::Value(_) | Var::TurnField(_)
        )
    }
}

/// A lookup table of a spec's `[tables]`: key text to JSON value (a list's keys are its
/// positions, `"0"`, `"1"`, ...).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Table(HashMap<String, Value>);

impl Table {
    /// The table a spec writes: a TOML table (its keys) or a list (its positions); `None` for
    /// anything else.
    pub fn from_spec(value: &Value) -> Option<Table> {
        Some(Table(match value {
            Value::Object(entries) => entries
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (i.to_string(), v.clone()))
                .collect(),
            _ => return None,
        }))
    }

    /// The value for a key given as JSON (a string's text, a number's digits), or `None`.
    fn get(&self, key: &Value) -> Option<&Value> {
        match key {
            Value::String(s) => self.0.get(s),
            Value::Null | Value::Array(_) | Value::Object(_) => None,
            other => self.0.get(&other.to_string()),
        }
    }
}

/// The tables a spec's templates may look values up in, by name.
pub type Tables = HashMap<String, Arc<Table>>;

/// An argument of a filter: text written in the spec (`"x"`), or a variable whose value it
/// takes when the template is rendered (`/title`, `$value/name`, `fn`).
#[derive(Debug, Clone)]
pub enum Arg<T> {
    /// Written in the spec (for the literal-searching filters, with its searchers built).
    Literal(T),
    /// Read from the record, the turn or the item when rendered; a missing variable leaves
    /// the placeholder missing.
    Var(Var),
}

impl<T> Arg<T> {
    /// The variable, when the argument is one.
    fn var(&self) -> Option<&Var> {
        match self {
            Arg::Var(v) => Some(v),
            Arg::Literal(_) => None,
        }
    }
}

impl Arg<String> {
    /// The argument's text in `scope`, or `None` when its variable is missing.
    fn text<'a>(&'a self, scope: &'a dyn Scope) -> Option<Cow<'a, str>> {
        match self {
            Arg::Literal(text) => Some(Cow::Borrowed(text)),
            Arg::Var(var) => Piece::of(var, scope).map(Piece::into_text),
        }
    }
}

impl Arg<Needle> {
    /// The argument as a needle in `scope` (built per use for a variable), or `None`.
    fn needle<'a>(&'a self, scope: &dyn Scope) -> Option<Cow<'a, Needle>> {
        match self {
            Arg::Literal(n) => Some(Cow::Borrowed(n)),
            Arg::Var(var) => {
                Piece::of(var, scope).map(|p| Cow::Owned(Needle::new(p.into_text().into_owned())))
            }
        }
    }
}

/// A transformation applied to a placeholder's value. Filters apply to values that are present;
/// only `default` gives a missing value one. Text arguments may be variables ([`Arg`]).
#[derive(Debug, Clone)]
pub enum Filter {
    /// `trim`: remove leading and trailing whitespace.
    Trim,
    /// `lower`: lower-case.
    Lower,
    /// `json`: encode as a JSON string literal, quotes included.
    Json,
    /// `prepend("s")`: put text before the value.
    Prepend(Arg<String>),
    /// `append("s")`: put text after the value.
    Append(Arg<String>),
    /// `replace("from", "to")`: replace every occurrence of a literal text.
    Replace(Arg<Needle>, Arg<String>),
    /// `sub("regex", "replacement")`: replace every match of a regular expression; the
    /// replacement may use `$1` / `${name}`.
    Sub(Regex, Arg<String>),
    /// `default("s")`: the value to use when there is none.
    Default(Arg<String>),
    /// `after("s")`: the text after the first `s`; missing when there is no `s`.
    After(Arg<Needle>),
    /// `after_last("s")`: the text after the last `s`.
    AfterLast(Arg<Needle>),
    /// `before("s")`: the text before the first `s`.
    Before(Arg<Needle>),
    /// `before_last("s")`: the text before the last `s`.
    BeforeLast(Arg<Needle>),
    /// `urlencode`: percent-encode every byte but ASCII letters, digits and `-._~`.
    UrlEncode,
    /// `urldecode`: decode `%XX` escapes and `+` (a space); missing when the result is not
    /// UTF-8.
    UrlDecode,
    /// `from_json`: the text parsed as JSON; a JSON string gives its text, another value its
    /// compact JSON text (and in a value position, the value itself). Missing when the text is
    /// not JSON.
    FromJson,
    /// `split("s")`: the text cut at every `s`, as a JSON list of strings.
    Split(Arg<String>),
    /// `join("s")`: the items of a JSON list joined with `s` (strings as their text, other
    /// items as JSON); missing when the value is not a list.
    Join(Arg<String>),
    /// `add(x)`, `subtract(x)`, `multiply(x)`, `divide(x)`: arithmetic with a number or the
    /// number a variable holds; missing when either side is not a number.
    Arith(Op, Operand),
    /// `required`: a missing value rejects the record instead of rendering as nothing.
    Required,
    /// `nonempty`: an empty text becomes missing (a lone placeholder then gives `null`).
    NonEmpty,
    /// `matches("regex")`: the value when the regex matches it (searched anywhere), else
    /// missing; for conditions (`keep_if`, `skip_if`, a rule's `when`).
    Matches(Regex),
    /// `one_of("a", "b", ...)`: the value when it equals one of the arguments, else missing.
    OneOf(Vec<Arg<String>>),
    /// `lookup("table")`: the value the spec's table gives the text as a key; a JSON list is
    /// looked up item by item, leaving out the items the table lacks. Missing when a single
    /// key is not in the table.
    Lookup(Arc<Table>),
}

/// The right-hand side of an arithmetic filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// A number written in the spec.
    Number(Num),
    /// A variable holding a number (`"/box/0"`, `"$value/1"`).
    Var(Var),
}

impl Filter {
    /// True when the filter's result is JSON text (a list, a number, a parsed value), so a
    /// template that is only a placeholder ending in it gives a JSON value where one is wanted.
    fn gives_json(&self) -> bool {
        matches!(
            self,
            Filter::FromJson | Filter::Split(_) | Filter::Arith(..) | Filter::Lookup(_)
        )
    }

    /// The variables the filter's arguments read.
    fn arg_vars(&self) -> Vec<&Var> {
        match self {
            Filter::Prepend(a)
            | Filter::Append(a)
            | Filter::Default(a)
            | Filter::Split(a)
            | Filter::Join(a)
            | Filter::Sub(_, a) => a.var().into_iter().collect(),
            Filter::After(n) | Filter::AfterLast(n) | Filter::Before(n) | Filter::BeforeLast(n) => {
                n.var().into_iter().collect()
            }
            Filter::Replace(from, to) => from.var().into_iter().chain(to.var()).collect(),
            Filter::OneOf(args) => args.iter().filter_map(Arg::var).collect(),
            Filter::Arith(_, Operand::Var(v)) => vec![v],
            _ => Vec::new(),
        }
    }
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
    /// A variable, its filters, and the counts of its uses when it reads the data and is
    /// tracked ([`Template::track`]).
    Placeholder(Var, Vec<Filter>, Option<Arc<Usage>>),
}

/// A `required` placeholder without a value: its record is rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// The record field it reads (`/meta/split`), or empty when it is not one.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

impl Missing {
    fn of(var: &Var) -> Self {
        Missing {
            pointer: match var {
                Var::Field(p) => p.clone(),
                _ => String::new(),
            },
            message: format!("{{{}|required}} has no value", var.written()),
        }
    }
}

impl From<Missing> for (String, String) {
    fn from(m: Missing) -> Self {
        (m.pointer, m.message)
    }
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
    /// The JSON value of a data variable ([`Var::is_data`]), or `None`. A data variable's
    /// [`Scope::get`] is the [`node_text`] of this value (placeholders read numbers here).
    fn node(&self, _var: &Var) -> Option<&Node<'_>> {
        None
    }
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
    /// Parses `text`, a template that uses no lookup table.
    #[cfg(test)]
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        Self::parse_with(text, &Tables::new())
    }

    /// Parses `text`, whose `lookup` filters name tables of `tables`.
    pub fn parse_with(text: &str, tables: &Tables) -> Result<Self, TemplateError> {
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
            let (var, filters) = parse_placeholder(&inner[..end], tables)?;
            parts.push(Part::Placeholder(var, filters, None));
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
            [Part::Placeholder(Var::Field(p), filters, _)] if filters.is_empty() => Some(p),
            _ => None,
        }
    }

    /// The capture groups the template uses, in placeholders and as operands of filters.
    pub fn captures(&self) -> impl Iterator<Item = &str> {
        self.vars().filter_map(|v| match v {
            Var::Capture(name) => Some(name.as_str()),
            _ => None,
        })
    }

    /// Every variable the template reads, in placeholders and as operands of filters.
    pub fn vars(&self) -> impl Iterator<Item = &Var> {
        self.parts.iter().flat_map(|p| match p {
            Part::Literal(_) => Vec::new(),
            Part::Placeholder(var, filters, _) => std::iter::once(var)
                .chain(filters.iter().flat_map(Filter::arg_vars))
                .collect(),
        })
    }

    /// Counts, from now on, whether each placeholder that reads the data (a field, an item, a
    /// value in the turn) finds it; returns each such placeholder's variable as written, with
    /// its counts, for the report of pointers that never resolve.
    pub fn track(&mut self) -> Vec<(String, Arc<Usage>)> {
        self.parts
            .iter_mut()
            .filter_map(|part| match part {
                Part::Placeholder(var, _, usage) if var.is_data() => {
                    let counts = Arc::new(Usage::default());
                    *usage = Some(Arc::clone(&counts));
                    Some((var.written(), counts))
                }
                _ => None,
            })
            .collect()
    }

    /// Renders the template. A template that is a single placeholder whose value is missing
    /// renders as `None` (so an optional capture becomes `null`); elsewhere a missing value is
    /// empty text. A missing value of a `required` placeholder is an error.
    pub fn render(&self, scope: &dyn Scope) -> Result<Option<String>, Missing> {
        if let [Part::Placeholder(var, filters, usage)] = self.parts.as_slice() {
            return Ok(placeholder(var, filters, usage, scope)?.map(|v| v.into_text().into_owned()));
        }
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Literal(s) => out.push_str(s),
                Part::Placeholder(var, filters, usage) => {
                    if let Some(v) = placeholder(var, filters, usage, scope)? {
                        out.push_str(&v.into_text());
                    }
                }
            }
        }
        Ok(Some(out))
    }

    /// Renders the template where a JSON value is wanted (a keyword argument, an annotation):
    /// a template that is only a field or item (`"{/n}"`, `"{$value/0}"`) copies its JSON
    /// value, one that is only a placeholder ending in a filter that gives JSON (`from_json`,
    /// `split`, arithmetic) gives that JSON, anything else gives text; `None` when it renders
    /// nothing.
    pub fn render_value(&self, scope: &dyn Scope) -> Result<Option<Value>, Missing> {
        if let [Part::Placeholder(var, filters, usage)] = self.parts.as_slice() {
            let required = filters.iter().any(|f| matches!(f, Filter::Required));
            let last = filters.iter().rfind(|f| !matches!(f, Filter::Required));
            if last.is_none() && var.is_data() {
                let node = scope.node(var);
                if let Some(counts) = usage {
                    counts.note(node.is_some());
                }
                return match node.filter(|n| **n != Node::Null) {
                    None if required => Err(Missing::of(var)),
                    found => Ok(found.map(Node::to_value)),
                };
            }
            if last.is_some_and(Filter::gives_json) {
                return Ok(match placeholder(var, filters, usage, scope)? {
                    None => None,
                    Some(Piece::Number(n)) => Some(Value::Number(n)),
                    Some(Piece::Text(text)) => Some(
                        serde_json::from_str(&text).unwrap_or(Value::String(text.into_owned())),
                    ),
                });
            }
        }
        Ok(self.render(scope)?.map(Value::String))
    }
}

/// The text of a JSON value in a template: a string as it is, `null` as missing, anything else
/// as compact JSON.
pub fn node_text<'n>(node: &'n Node<'_>) -> Option<Cow<'n, str>> {
    match node {
        Node::Null => None,
        Node::String(s) => Some(Cow::Borrowed(s.as_ref())),
        other => Some(Cow::Owned(other.to_string())),
    }
}

/// A placeholder's value on its way through the filters: text, or a JSON number (of the data,
/// or made by arithmetic) kept as a number until a filter or the output wants its text, so
/// arithmetic on numbers neither writes nor parses them.
#[derive(Debug, PartialEq)]
enum Piece<'v> {
    Text(Cow<'v, str>),
    Number(Number),
}

impl<'v> Piece<'v> {
    /// The value of `var` in `scope`, as its text ([`Scope::get`], [`node_text`]) but a data
    /// variable's JSON number kept a number.
    fn of(var: &Var, scope: &'v dyn Scope) -> Option<Piece<'v>> {
        if !var.is_data() {
            return scope.get(var).map(Piece::Text);
        }
        match scope.node(var)? {
            Node::Number(n) => Some(Piece::Number(n.clone())),
            other => node_text(other).map(Piece::Text),
        }
    }

    /// The text: a number as compact JSON.
    fn into_text(self) -> Cow<'v, str> {
        match self {
            Piece::Text(text) => text,
            Piece::Number(n) => Cow::Owned(n.to_string()),
        }
    }

    /// The number, as [`Num::parse`] reads the text.
    fn num(&self) -> Option<Num> {
        match self {
            Piece::Text(text) => Num::parse(text),
            Piece::Number(n) => Num::of(n),
        }
    }
}

/// The value of one placeholder through its filters, its use counted when it is tracked.
fn placeholder<'s>(
    var: &Var,
    filters: &[Filter],
    usage: &Option<Arc<Usage>>,
    scope: &'s dyn Scope,
) -> Result<Option<Piece<'s>>, Missing> {
    let value = Piece::of(var, scope);
    if let Some(counts) = usage {
        counts.note(value.is_some() || scope.node(var).is_some());
    }
    let mut missing_required = false;
    let value = apply(value, filters, scope, &mut missing_required);
    if missing_required {
        return Err(Missing::of(var));
    }
    Ok(value)
}

/// `value` through `filters`; `missing_required` is set when a `required` filter meets a
/// missing value.
fn apply<'v>(
    mut value: Option<Piece<'v>>,
    filters: &[Filter],
    scope: &dyn Scope,
    missing_required: &mut bool,
) -> Option<Piece<'v>> {
    for f in filters {
        value = match (f, value) {
            (Filter::Default(d), None) => d
                .text(scope)
                .map(|d| Piece::Text(Cow::Owned(d.into_owned()))),
            (Filter::Required, None) => {
                *missing_required = true;
                return None;
            }
            (_, None) => None,
            (Filter::Required | Filter::Default(_), Some(v)) => Some(v),
            (Filter::Arith(op, operand), Some(v)) => {
                // A missing variable operand leaves the placeholder missing, past any default.
                let rhs = match operand {
                    Operand::Number(n) => Some(*n),
                    Operand::Var(var) => Piece::of(var, scope)?.num(),
                };
                v.num()
                    .zip(rhs)
                    .and_then(|(a, b)| arith::apply(*op, a, b))
                    .and_then(Num::to_number)
                    .map(Piece::Number)
            }
            (f, Some(v)) => text_filter(f, v.into_text(), scope).map(Piece::Text),
        };
    }
    value
}

/// `v` through a filter on text, its variable arguments read in `scope` (a missing one makes
/// the value missing). Cutting filters (`trim`, `after`, ...) keep borrowing a borrowed value,
/// and `replace` leaves a value without the text alone.
fn text_filter<'v>(f: &Filter, v: Cow<'v, str>, scope: &dyn Scope) -> Option<Cow<'v, str>> {
    match f {
        Filter::Trim => {
            let start = v.len() - v.trim_start().len();
            let end = v.trim_end().len().max(start);
            Some(cut(v, start, end))
        }
        Filter::Lower => Some(Cow::Owned(v.to_lowercase())),
        Filter::Json => Some(Cow::Owned(Value::from(v.as_ref()).to_string())),
        Filter::Prepend(p) => Some(Cow::Owned(format!("{}{v}", p.text(scope)?))),
        Filter::Append(a) => Some(Cow::Owned(v.into_owned() + &a.text(scope)?)),
        Filter::Replace(from, to) => Some(from.needle(scope)?.replace(v, &to.text(scope)?)),
        Filter::Sub(re, to) => {
            let to = to.text(scope)?;
            Some(Cow::Owned(re.replace_all(&v, to.as_ref()).into_owned()))
        }
        Filter::After(d) => {
            let d = d.needle(scope)?;
            d.find(&v).map(|i| {
                let len = v.len();
                cut(v, i + d.text.len(), len)
            })
        }
        Filter::AfterLast(d) => {
            let d = d.needle(scope)?;
            d.rfind(&v).map(|i| {
                let len = v.len();
                cut(v, i + d.text.len(), len)
            })
        }
        Filter::Before(d) => {
            let d = d.needle(scope)?;
            d.find(&v).map(|i| cut(v, 0, i))
        }
        Filter::BeforeLast(d) => {
            let d = d.needle(scope)?;
            d.rfind(&v).map(|i| cut(v, 0, i))
        }
        Filter::NonEmpty => (!v.is_empty()).then_some(v),
        Filter::Matches(re) => re.is_match(&v).then_some(v),
        Filter::OneOf(options) => options
            .iter()
            .any(|o| o.text(scope).is_some_and(|o| o == v))
            .then_some(v),
        Filter::UrlEncode => Some(Cow::Owned(url::encode(&v))),
        Filter::UrlDecode => url::decode(&v).map(Cow::Owned),
        Filter::FromJson => match serde_json::from_str::<Value>(&v).ok()? {
            Value::String(s) => Some(Cow::Owned(s)),
            other => Some(Cow::Owned(other.to_string())),
        },
        Filter::Split(sep) => {
            let sep = sep.text(scope)?;
            let parts: Vec<&str> = if sep.is_empty() {
                vec![&v]
            } else {
                v.split(sep.as_ref()).collect()
            };
            Some(Cow::Owned(Value::from(parts).to_string()))
        }
        Filter::Join(sep) => match serde_json::from_str::<Value>(&v).ok()? {
            Value::Array(items) => Some(Cow::Owned(
                items
                    .iter()
                    .map(|i| match i {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(sep.text(scope)?.as_ref()),
            )),
            _ => None,
        },
        Filter::Lookup(table) => lookup(table, &v).map(Cow::Owned),
        // Applied by `apply`, which keeps their numbers.
        Filter::Default(_) | Filter::Required | Filter::Arith(..) => Some(v),
    }
}

/// `text` looked up in `table`: a JSON list item by item (the items the table lacks left out),
/// anything else as one key. The result is the value's text (a string) or compact JSON.
fn lookup(table: &Table, text: &str) -> Option<String> {
    let text_of = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if text.starts_with('[') {
        if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(text) {
            let found: Vec<Value> = items.iter().filter_map(|i| table.get(i)).cloned().collect();
            return Some(Value::Array(found).to_string());
        }
    }
    table.get(&Value::String(text.to_owned())).map(text_of)
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

fn parse_placeholder(inner: &str, tables: &Tables) -> Result<(Var, Vec<Filter>), TemplateError> {
    let mut pieces = Vec::new();
    let mut start = 0;
    for cut in split_outside_strings(inner, '|') {
        pieces.push(inner[start..cut].trim());
        start = cut + 1;
    }
    let name = pieces[0];
    let Some(var) = Var::parse(name) else {
        return Err(TemplateError(format!(
            "unknown placeholder {{{name}}}: use a capture group name, $text, $role, $turn, \
             $record, $member, $index, $key, $value, or a JSON pointer such as /id, $parent/id \
             or $turn/id"
        )));
    };
    let filters = pieces[1..]
        .iter()
        .map(|f| parse_filter(f, inner, tables))
        .collect::<Result<_, _>>()?;
    Ok((var, filters))
}

/// The arguments of a filter, between its parentheses: double-quoted JSON strings and bare
/// variables (`/title`, `$value/name`, `fn`), separated by commas; `None` when one is neither.
fn parse_args(text: &str) -> Option<Vec<Arg<String>>> {
    if text.trim().is_empty() {
        return Some(Vec::new());
    }
    let mut args = Vec::new();
    let mut start = 0;
    for cut in split_outside_strings(text, ',') {
        let piece = text[start..cut].trim();
        start = cut + 1;
        args.push(if piece.starts_with('"') {
            Arg::Literal(serde_json::from_str::<String>(piece).ok()?)
        } else {
            Arg::Var(Var::parse(piece)?)
        });
    }
    Some(args)
}

fn parse_filter(text: &str, placeholder: &str, tables: &Tables) -> Result<Filter, TemplateError> {
    let bad = |why: String| TemplateError(format!("{why} in {{{placeholder}}}"));
    let (name, args) = match text.split_once('(') {
        Some((name, rest)) => {
            let args = rest
                .strip_suffix(')')
                .ok_or_else(|| bad(format!("filter {text:?} lacks its closing parenthesis")))?;
            let name = name.trim();
            let args = parse_args(args).ok_or_else(|| {
                bad(format!(
                    "the arguments of {name} are double-quoted strings (\"x\") or variables \
                     (/title, $value/name, a group name), separated by commas"
                ))
            })?;
            (name, args)
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
    let mut arg = || args.next().unwrap_or(Arg::Literal(String::new()));
    let needle = |a: Arg<String>| match a {
        Arg::Literal(text) => Arg::Literal(Needle::new(text)),
        Arg::Var(v) => Arg::Var(v),
    };
    // Regexes and table names are checked when the spec loads, so they are written out.
    let literal = |a: Arg<String>, what: &str| match a {
        Arg::Literal(text) => Ok(text),
        Arg::Var(v) => Err(bad(format!(
            "{name} takes {what} written as a double-quoted string, not the variable {}",
            v.written()
        ))),
    };
    Ok(match name {
        "trim" => arity(0).map(|_| Filter::Trim)?,
        "lower" => arity(0).map(|_| Filter::Lower)?,
        "json" => arity(0).map(|_| Filter::Json)?,
        "prepend" => arity(1).map(|_| Filter::Prepend(arg()))?,
        "append" => arity(1).map(|_| Filter::Append(arg()))?,
        "default" => arity(1).map(|_| Filter::Default(arg()))?,
        "after" => arity(1).map(|_| Filter::After(needle(arg())))?,
        "after_last" => arity(1).map(|_| Filter::AfterLast(needle(arg())))?,
        "before" => arity(1).map(|_| Filter::Before(needle(arg())))?,
        "before_last" => arity(1).map(|_| Filter::BeforeLast(needle(arg())))?,
        "replace" => arity(2).map(|_| Filter::Replace(needle(arg()), arg()))?,
        "sub" => {
            arity(2)?;
            let pattern = literal(arg(), "its regex")?;
            let re = Regex::new(&pattern).map_err(|e| bad(format!("sub: {e}")))?;
            Filter::Sub(re, arg())
        }
        "matches" => {
            arity(1)?;
            let pattern = literal(arg(), "its regex")?;
            let re = Regex::new(&pattern).map_err(|e| bad(format!("matches: {e}")))?;
            Filter::Matches(re)
        }
        "one_of" => {
            if found == 0 {
                return Err(bad("one_of takes one argument or more".into()));
            }
            Filter::OneOf(args.collect())
        }
        "required" => arity(0).map(|_| Filter::Required)?,
        "nonempty" => arity(0).map(|_| Filter::NonEmpty)?,
        "urlencode" => arity(0).map(|_| Filter::UrlEncode)?,
        "urldecode" => arity(0).map(|_| Filter::UrlDecode)?,
        "from_json" => arity(0).map(|_| Filter::FromJson)?,
        "split" => arity(1).map(|_| Filter::Split(arg()))?,
        "join" => arity(1).map(|_| Filter::Join(arg()))?,
        "lookup" => {
            arity(1)?;
            let name = literal(arg(), "a table name")?;
            let Some(table) = tables.get(&name) else {
                let mut known: Vec<&String> = tables.keys().collect();
                known.sort_unstable();
                return Err(bad(format!(
                    "lookup names the table {name:?}, which [tables] does not define (tables: \
                     {known:?})"
                )));
            };
            Filter::Lookup(Arc::clone(table))
        }
        "add" | "subtract" | "multiply" | "divide" => {
            arity(1)?;
            let op = match name {
                "add" => Op::Add,
                "subtract" => Op::Subtract,
                "multiply" => Op::Multiply,
                _ => Op::Divide,
            };
            let operand = match arg() {
                Arg::Var(var) => Operand::Var(var),
                Arg::Literal(text) => {
                    let number = match serde_json::from_str::<Value>(&text) {
                        Ok(Value::Number(n)) => Num::of(&n),
                        _ => None,
                    };
                    match number {
                        Some(n) => Operand::Number(n),
                        None => Operand::Var(Var::parse(&text).ok_or_else(|| {
                            bad(format!(
                                "{name} takes a number or a variable (\"2\", \"/n\", \
                                 \"$value/0\"), found {text:?}"
                            ))
                        })?),
                    }
                }
            };
            Filter::Arith(op, operand)
        }
        other => {
            return Err(bad(format!(
                "unknown filter {other:?} (filters: trim, lower, json, prepend, append, default, required, \
                 nonempty, replace, sub, matches, one_of, after, after_last, before, before_last, \
                 urlencode, urldecode, from_json, split, join, lookup, add, subtract, multiply, \
                 divide)"
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
        let filters = parse_placeholder(
            r#"x|trim|after("a")|before_last("c")|replace("b", "B")"#,
            &Tables::new(),
        )
        .map(|(_, f)| f)
        .unwrap_or_default();
        for text in ["  xabbc  ", "abc", "   ", "a", "éaébcé c "] {
            let no = &mut false;
            let borrowed = apply(
                Some(Piece::Text(Cow::Borrowed(text))),
                &filters,
                &Vars(HashMap::new()),
                no,
            );
            let owned = apply(
                Some(Piece::Text(Cow::Owned(text.to_owned()))),
                &filters,
                &Vars(HashMap::new()),
                no,
            );
            assert_eq!(borrowed, owned, "{text:?}");
            let expected = text
                .trim()
                .find('a')
                .map(|i| &text.trim()[i + 1..])
                .and_then(|t| t.rfind('c').map(|j| t[..j].replace('b', "B")));
            let borrowed = borrowed.map(|v| v.into_text().into_owned());
            assert_eq!(borrowed, expected, "{text:?}");
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
        Template::parse(template).unwrap().render(&vars).unwrap()
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
        let render = |t: &str| Template::parse(t).unwrap().render(&vars).unwrap();
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
    fn url_json_list_and_arithmetic_filters() {
        let vars = Vars(HashMap::from([
            ("q", "a b&c"),
            ("enc", "a%20b%26c"),
            ("j", "{\"k\": [1, 2]}"),
            ("s", "\"quoted\""),
            ("csv", "x,y,z"),
            ("n", "1242.0"),
            ("m", "1213.0"),
        ]));
        let render = |t: &str| Template::parse(t).unwrap().render(&vars).unwrap();
        let value = |t: &str| Template::parse(t).unwrap().render_value(&vars).unwrap();
        assert_eq!(render("{q|urlencode}").unwrap(), "a%20b%26c");
        assert_eq!(render("{enc|urldecode}").unwrap(), "a b&c");
        assert_eq!(
            render("{s|from_json}").unwrap(),
            "quoted",
            "a JSON string gives its text"
        );
        assert_eq!(render("{j|from_json}").unwrap(), r#"{"k":[1,2]}"#);
        assert_eq!(
            value("{j|from_json}").unwrap(),
            serde_json::json!({"k": [1, 2]})
        );
        assert_eq!(
            render("[{q|from_json}]").unwrap(),
            "[]",
            "not JSON: missing"
        );
        assert_eq!(
            render(r#"{csv|split(",")|join(" / ")}"#).unwrap(),
            "x / y / z"
        );
        assert_eq!(
            value(r#"{csv|split(",")}"#).unwrap(),
            serde_json::json!(["x", "y", "z"])
        );
        assert_eq!(
            render(r#"{n|subtract("m")}"#).unwrap(),
            "29.0",
            "a variable operand"
        );
        assert_eq!(
            value(r#"{n|subtract("m")}"#).unwrap(),
            serde_json::json!(29.0)
        );
        assert_eq!(render(r#"{n|divide("2")|add("0.5")}"#).unwrap(), "621.5");
        assert_eq!(
            render(r#"[{q|add("1")}]"#).unwrap(),
            "[]",
            "not a number: missing"
        );
        assert_eq!(
            value("{q}").unwrap(),
            serde_json::json!("a b&c"),
            "text stays text"
        );
        assert_eq!(
            Template::parse(r#"{n|add("m")|multiply("k")}"#)
                .unwrap()
                .captures()
                .collect::<Vec<_>>(),
            ["n", "m", "k"],
            "operands are checked like placeholders"
        );
    }

    #[test]
    fn filter_arguments_may_be_variables() {
        let vars = Vars(HashMap::from([
            ("t", "Click on ${element} now"),
            ("el", "the OK button"),
            ("sep", ", "),
            ("empty", ""),
            ("kind", "tool_use"),
        ]));
        let render = |t: &str| Template::parse(t).unwrap().render(&vars).unwrap();
        assert_eq!(
            render(r#"{t|replace("${element}", el)}"#).unwrap(),
            "Click on the OK button now"
        );
        assert_eq!(render("{t|after(el)}"), None, "el does not occur");
        assert_eq!(
            render(r#"{nothing|default(el)|prepend(kind)}"#).unwrap(),
            "tool_usethe OK button"
        );
        assert_eq!(
            render(r#"[{t|append(nothing)}]"#).unwrap(),
            "[]",
            "a missing argument: missing"
        );
        assert_eq!(
            render(r#"{t|split(" ")|join(sep)}"#).unwrap(),
            "Click, on, ${element}, now"
        );
        assert_eq!(
            render("{empty|nonempty}"),
            None,
            "empty text becomes missing"
        );
        assert_eq!(render("{el|nonempty}").unwrap(), "the OK button");
        assert_eq!(render(r#"{kind|matches("^tool")}"#).unwrap(), "tool_use");
        assert_eq!(render(r#"{kind|matches("^text")}"#), None);
        assert_eq!(
            render(r#"{kind|one_of("text", "tool_use")}"#).unwrap(),
            "tool_use"
        );
        assert_eq!(render(r#"{kind|one_of("text", el)}"#), None);
        assert_eq!(
            Template::parse(r#"{t|replace("a", el)|default(x)}"#)
                .unwrap()
                .captures()
                .collect::<Vec<_>>(),
            ["t", "el", "x"],
            "variable arguments are checked like placeholders"
        );
    }

    #[test]
    fn bad_templates_say_why() {
        for (t, needle) in [
            ("{a", "unclosed"),
            ("a}", "unmatched"),
            ("{a b}", "unknown placeholder"),
            ("{a|upper}", "unknown filter"),
            ("{a|append(x y)}", "double-quoted"),
            ("{a|sub(x, \"\")}", "double-quoted string"),
            ("{a|replace(\"x\")}", "takes 2"),
            ("{a|sub(\"(\", \"\")}", "sub:"),
            ("{a|add(\"1 2\")}", "a number or a variable"),
            ("{$values}", "unknown placeholder"),
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

//! Converting one record with a compiled spec: find the turns, give each to the first rule that
//! applies, render the rule's steps, then apply the finish convention and the details.

use std::borrow::Cow;
use std::collections::HashMap;

use regex::{Captures, Regex};
use serde_json::{Map, Value};

use super::compile::{
    CompiledSpec, KwargValue, Kwargs, RoleDefault, Rule, StepTemplate, TurnSource,
};
use super::template::{Scope, Template, Var};
use crate::json::Node;
use crate::model::step::{TextObservation, WebObservation};
use crate::model::{JsonObject, Step};

/// One turn of a record.
struct Turn<'a> {
    role: &'a str,
    text: &'a str,
    /// Pointer to the text in the record (built only for diagnostics).
    pointer: TextPointer<'a>,
}

/// Where a turn's text is in the record.
enum TextPointer<'a> {
    /// A field of the record.
    Field(&'a str),
    /// Item `index` of the list at `list`, at `text` inside it.
    Item {
        list: &'a str,
        index: usize,
        text: &'a str,
    },
}

impl TextPointer<'_> {
    fn to_pointer(&self) -> String {
        match self {
            TextPointer::Field(p) => (*p).to_owned(),
            TextPointer::Item { list, index, text } => format!("{list}/{index}{text}"),
        }
    }
}

/// A problem converting a record: the JSON pointer into the record and what is wrong.
pub type RecordProblem = (String, String);

/// What a record converts to: the id (when it could be rendered), the steps and the details.
pub struct Converted {
    /// Trajectory id.
    pub id: String,
    /// Steps in order.
    pub steps: Vec<Step>,
    /// Details from the spec's `[details]`.
    pub details: JsonObject,
}

/// Variables every template of a record can see.
struct RecordScope<'a> {
    record: &'a Node<'a>,
    index: u64,
    vars: HashMap<&'a str, String>,
}

impl Scope for RecordScope<'_> {
    fn get(&self, var: &Var) -> Option<Cow<'_, str>> {
        match var {
            Var::Capture(name) => self
                .vars
                .get(name.as_str())
                .map(|v| Cow::Borrowed(v.as_str())),
            Var::Record => Some(Cow::Owned(self.index.to_string())),
            Var::Field(pointer) => self.record.pointer(pointer).and_then(|v| match v {
                Node::Null => None,
                Node::String(s) => Some(Cow::Borrowed(s.as_ref())),
                other => Some(Cow::Owned(other.to_string())),
            }),
            Var::Text | Var::Role | Var::Turn => None,
        }
    }
}

/// A turn's variables: its captures, text, role and position, over the record's.
struct TurnScope<'a, 'c> {
    record: &'a RecordScope<'a>,
    turn: &'a Turn<'a>,
    position: usize,
    captures: Option<&'a Captures<'c>>,
}

impl Scope for TurnScope<'_, '_> {
    fn get(&self, var: &Var) -> Option<Cow<'_, str>> {
        match var {
            Var::Capture(name) => self
                .captures
                .and_then(|c| c.name(name))
                .map(|m| Cow::Borrowed(m.as_str()))
                .or_else(|| self.record.get(var)),
            Var::Text => Some(Cow::Borrowed(self.turn.text)),
            Var::Role => Some(Cow::Borrowed(self.turn.role)),
            Var::Turn => Some(Cow::Owned(self.position.to_string())),
            Var::Record | Var::Field(_) => self.record.get(var),
        }
    }
}

/// The message text, for the finish wrap.
struct ContentScope<'a>(&'a str);

impl Scope for ContentScope<'_> {
    fn get(&self, var: &Var) -> Option<Cow<'_, str>> {
        matches!(var, Var::Capture(n) if n == "content").then_some(Cow::Borrowed(self.0))
    }
}

impl CompiledSpec {
    /// Converts one record (`index` is its 0-based position in its input).
    pub fn apply(&self, record: &Node<'_>, index: u64) -> Result<Converted, Vec<RecordProblem>> {
        let mut scope = RecordScope {
            record,
            index,
            vars: HashMap::new(),
        };
        for extract in &self.extracts {
            let text = extract.from.render(&scope).unwrap_or_default();
            // Without named groups the extract is only a test, and a match test is cheaper.
            let matched = if extract.regex.captures_len() == 1 {
                extract.regex.is_match(&text).then_some(None)
            } else {
                first_or_last(&extract.regex, &text, extract.last).map(Some)
            };
            match matched {
                Some(None) => {}
                Some(Some(caps)) => {
                    for name in extract.regex.capture_names().flatten() {
                        if let Some(m) = caps.name(name) {
                            scope.vars.insert(name, m.as_str().to_owned());
                        }
                    }
                }
                None if extract.required => {
                    return Err(vec![(
                        String::new(),
                        format!(
                            "the record does not match the spec's {} (required): {}",
                            extract.label,
                            preview(&text)
                        ),
                    )])
                }
                None => {}
            }
        }
        for (name, template) in &self.vars {
            if let Some(value) = template.render(&scope) {
                scope.vars.insert(name, value);
            }
        }
        let id = self.id.render(&scope).unwrap_or_default();
        if id.is_empty() {
            return Err(vec![(
                String::new(),
                "the spec's id template renders empty for this record".into(),
            )]);
        }
        let turns = self.turns(record).map_err(|p| vec![p])?;
        let mut steps = Vec::new();
        let mut problems = Vec::new();
        for (position, turn) in turns.iter().enumerate() {
            match self.convert_turn(&scope, turn, position, turns.len()) {
                Ok(mut s) => steps.append(&mut s),
                Err(p) => problems.push(p),
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        if let (Some((wrap, unless)), Some(Step::MessageAction(last))) =
            (&self.finish, steps.last_mut())
        {
            if !last.content.contains(unless.as_str()) {
                last.content = wrap
                    .render(&ContentScope(&last.content))
                    .unwrap_or_default();
            }
        }
        let details = self
            .details
            .iter()
            .map(|(key, template)| {
                let value = match template.as_field() {
                    Some(pointer) => record.pointer(pointer).map_or(Value::Null, Node::to_value),
                    None => template.render(&scope).map_or(Value::Null, Value::String),
                };
                (key.clone(), value)
            })
            .collect();
        Ok(Converted { id, steps, details })
    }

    fn turns<'a>(&'a self, record: &'a Node<'a>) -> Result<Vec<Turn<'a>>, RecordProblem> {
        fn text<'v>(
            value: &'v Node<'_>,
            at: impl Fn() -> String,
        ) -> Result<&'v str, RecordProblem> {
            match value {
                Node::String(s) => Ok(s),
                other => Err((at(), format!("expected text, found {}", kind_of(other)))),
            }
        }
        match &self.turns {
            TurnSource::Fields(fields) => fields
                .iter()
                .map(|(role, pointer)| {
                    let value = record
                        .pointer(pointer)
                        .ok_or_else(|| (pointer.clone(), "missing".to_owned()))?;
                    Ok(Turn {
                        role,
                        text: text(value, || pointer.clone())?,
                        pointer: TextPointer::Field(pointer),
                    })
                })
                .collect(),
            TurnSource::List {
                turns,
                role,
                text: text_at,
            } => {
                let list = match record.pointer(turns) {
                    Some(Node::Array(list)) => list,
                    Some(other) => {
                        return Err((
                            turns.clone(),
                            format!("expected the list of turns, found {}", kind_of(other)),
                        ))
                    }
                    None => return Err((turns.clone(), "the list of turns is missing".into())),
                };
                list.iter()
                    .enumerate()
                    .map(|(i, turn)| {
                        let role_at = || format!("{turns}/{i}{role}");
                        let role_value = turn
                            .pointer(role)
                            .ok_or_else(|| (role_at(), "the role is missing".to_owned()))?;
                        Ok(Turn {
                            role: text(role_value, role_at)?,
                            text: match turn.pointer(text_at) {
                                None | Some(Node::Null) => "",
                                Some(v) => text(v, || format!("{turns}/{i}{text_at}"))?,
                            },
                            pointer: TextPointer::Item {
                                list: turns,
                                index: i,
                                text: text_at,
                            },
                        })
                    })
                    .collect()
            }
        }
    }

    fn convert_turn(
        &self,
        scope: &RecordScope<'_>,
        turn: &Turn<'_>,
        position: usize,
        count: usize,
    ) -> Result<Vec<Step>, RecordProblem> {
        let Some(&default) = self.roles.get(turn.role) else {
            let known: Vec<&String> = self.roles.keys().collect();
            return Err((
                turn.pointer.to_pointer(),
                format!(
                    "role {:?} is not declared in the spec's [roles] (declared: {known:?})",
                    turn.role
                ),
            ));
        };
        for rule in &self.rules {
            if !rule.applies_to(turn.role, position, count) {
                continue;
            }
            let matches: Vec<Captures<'_>> = match &rule.regex {
                None => Vec::new(),
                Some(re) if rule.each => re.captures_iter(turn.text).collect(),
                // Capture groups cost a second, slower pass: skip it when no template uses them.
                Some(re) if !rule.uses_groups => {
                    if !re.is_match(turn.text) {
                        continue;
                    }
                    Vec::new()
                }
                Some(re) => first_or_last(re, turn.text, rule.last)
                    .into_iter()
                    .collect(),
            };
            if rule.regex.is_some() && matches.is_empty() && rule.uses_groups {
                continue;
            }
            let scopes: Vec<TurnScope<'_, '_>> = if matches.is_empty() {
                vec![TurnScope {
                    record: scope,
                    turn,
                    position,
                    captures: None,
                }]
            } else {
                matches
                    .iter()
                    .map(|c| TurnScope {
                        record: scope,
                        turn,
                        position,
                        captures: Some(c),
                    })
                    .collect()
            };
            let mut steps = Vec::new();
            for s in &scopes {
                for template in &rule.emit {
                    steps.push(
                        render_step(template, s).map_err(|e| {
                            (turn.pointer.to_pointer(), format!("{}: {e}", rule.name))
                        })?,
                    );
                }
            }
            return Ok(steps);
        }
        if self.strict && default != RoleDefault::Drop {
            return Err((
                turn.pointer.to_pointer(),
                format!(
                    "no rule matches turn {position} (role {:?}) and the spec is strict: {}",
                    turn.role,
                    preview(turn.text)
                ),
            ));
        }
        let text = turn.text.to_owned();
        Ok(match default {
            RoleDefault::User => vec![Step::user_text(text)],
            RoleDefault::Environment => vec![Step::environment_text(None, text)],
            RoleDefault::Assistant => vec![Step::message(text, None)],
            RoleDefault::Drop => Vec::new(),
        })
    }
}

/// The captures of the first match of `re` in `text`, or of the last when `last`. The last is
/// found with a match-only scan, so capture groups are resolved once, on that match.
fn first_or_last<'t>(re: &Regex, text: &'t str, last: bool) -> Option<Captures<'t>> {
    if last {
        let m = re.find_iter(text).last()?;
        re.captures_at(text, m.start())
    } else {
        re.captures(text)
    }
}

impl Rule {
    fn applies_to(&self, role: &str, position: usize, count: usize) -> bool {
        let role_ok = self
            .roles
            .as_ref()
            .is_none_or(|roles| roles.iter().any(|r| r == role));
        let turn_ok = self.turns.as_ref().is_none_or(|turns| {
            turns.iter().any(|&t| {
                let wanted = if t < 0 { count as i64 + t } else { t };
                wanted == position as i64
            })
        });
        role_ok && turn_ok
    }
}

fn render_step(template: &StepTemplate, scope: &dyn Scope) -> Result<Step, String> {
    let text = |t: &Template| t.render(scope).unwrap_or_default();
    let optional = |t: &Option<Template>| t.as_ref().and_then(|t| t.render(scope));
    Ok(match template {
        StepTemplate::Text {
            source,
            content,
            name,
        } => Step::TextObservation(TextObservation {
            content: text(content),
            name: optional(name),
            source: *source,
            tool_call_id: None,
            reward: None,
        }),
        StepTemplate::Web { html, axtree, url } => Step::WebObservation(WebObservation {
            html: optional(html),
            axtree: optional(axtree),
            url: optional(url),
            image_observation: None,
            viewport_size: None,
            tool_call_id: None,
            reward: None,
        }),
        StepTemplate::Code {
            language,
            content,
            description,
        } => Step::code(text(language), text(content), optional(description)),
        StepTemplate::Api {
            function,
            kwargs,
            description,
        } => {
            let kwargs = match kwargs {
                Kwargs::Fields(fields) => fields
                    .iter()
                    .map(|(k, v)| {
                        let value = match v {
                            KwargValue::Text(t) => {
                                t.render(scope).map_or(Value::Null, Value::String)
                            }
                            KwargValue::Constant(c) => c.clone(),
                        };
                        (k.clone(), value)
                    })
                    .collect::<Map<_, _>>(),
                Kwargs::Parsed { from, syntax } => syntax.kwargs(&text(from))?,
            };
            Step::api(text(function), kwargs, optional(description))
        }
        StepTemplate::Message {
            content,
            description,
        } => Step::message(text(content), optional(description)),
    })
}

fn kind_of(v: &Node<'_>) -> &'static str {
    match v {
        Node::Null => "null",
        Node::Bool(_) => "a boolean",
        Node::Number(_) => "a number",
        Node::String(_) => "text",
        Node::Array(_) => "a list",
        Node::Object(_) => "an object",
    }
}

/// The first characters of a turn's text, for messages.
fn preview(text: &str) -> String {
    const MAX: usize = 80;
    match text.char_indices().nth(MAX) {
        Some((i, _)) => format!("{:?}…", &text[..i]),
        None => format!("{text:?}"),
    }
}

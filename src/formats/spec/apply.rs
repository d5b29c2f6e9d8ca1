//! Converting records with a compiled spec: find each record's turns, give each to the first
//! rule that applies, render the rule's steps, then apply the finish convention and the
//! details. A record may make one trajectory per item of a list (`split`), and the records of a
//! group make one trajectory together.

use std::borrow::Cow;
use std::collections::HashMap;

use regex::{Captures, Regex};
use serde_json::{Map, Value};

use super::compile::{
    Body, CompiledSpec, Emit, Kwargs, RoleDefault, RoleSource, Rule, StepTemplate, TurnSource,
};
use super::iterate::{holds, ItemScope};
use super::template::{node_text, Scope, Template, Var};
use crate::json::Node;
use crate::model::step::{ImageObservation, TaggedImage, TextObservation, WebObservation};
use crate::model::{JsonObject, Source, Step};

/// One turn of a record.
struct Turn<'a> {
    role: Cow<'a, str>,
    /// The text: a string as it is; in a fixed turn, a field of another kind as compact JSON.
    text: Cow<'a, str>,
    /// The turn itself, root of `{$turn/...}`: an item of the list of turns, or the field a
    /// fixed turn reads.
    node: &'a Node<'a>,
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

    /// The pointer to the turn itself (the item of the list, or the fixed turn's field).
    fn to_turn_pointer(&self) -> String {
        match self {
            TextPointer::Field(p) => (*p).to_owned(),
            TextPointer::Item { list, index, .. } => format!("{list}/{index}"),
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
    /// Turns that gave no step: of a role the spec drops, or matched by a rule that emits
    /// nothing (left out on purpose, and counted).
    pub dropped_turns: u64,
}

/// One record to convert, with what its templates can see besides its fields.
pub struct Member<'a> {
    /// The record (or the split item), root of `{/...}` pointers.
    pub record: &'a Node<'a>,
    /// The record a split item comes from (`{$parent/...}`).
    pub parent: Option<&'a Node<'a>>,
    /// The record's 0-based position in its input (`{$record}`).
    pub index: u64,
    /// The split item's position (`{$index}`).
    pub item: Option<usize>,
}

/// Variables every template of a record can see.
struct RecordScope<'a> {
    member: &'a Member<'a>,
    /// The record's position in its group (`{$member}`).
    position: usize,
    vars: HashMap<&'a str, String>,
}

impl Scope for RecordScope<'_> {
    fn get(&self, var: &Var) -> Option<Cow<'_, str>> {
        match var {
            Var::Capture(name) => self
                .vars
                .get(name.as_str())
                .map(|v| Cow::Borrowed(v.as_str())),
            Var::Record => Some(Cow::Owned(self.member.index.to_string())),
            Var::Member => Some(Cow::Owned(self.position.to_string())),
            Var::Index => self.member.item.map(|i| Cow::Owned(i.to_string())),
            Var::Field(_) | Var::Parent(_) => self.node(var).and_then(node_text),
            Var::Text | Var::Role | Var::Turn | Var::Key | Var::Value(_) | Var::TurnField(_) => {
                None
            }
        }
    }

    fn node(&self, var: &Var) -> Option<&Node<'_>> {
        match var {
            Var::Field(p) => self.member.record.pointer(p),
            Var::Parent(p) => self.member.parent?.pointer(p),
            _ => None,
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
            Var::Text => Some(Cow::Borrowed(&self.turn.text)),
            Var::Role => Some(Cow::Borrowed(&self.turn.role)),
            Var::Turn => Some(Cow::Owned(self.position.to_string())),
            Var::TurnField(_) => self.node(var).and_then(node_text),
            other => self.record.get(other),
        }
    }

    fn node(&self, var: &Var) -> Option<&Node<'_>> {
        match var {
            Var::TurnField(p) => self.turn.node.pointer(p),
            other => self.record.node(other),
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

/// A problem with one member of a group: its position in the group and the problem.
pub type MemberProblem = (usize, RecordProblem);

impl CompiledSpec {
    /// Converts one record (`index` is its 0-based position in its input): one trajectory, or
    /// one per item of the spec's `split` list.
    pub fn apply(
        &self,
        record: &Node<'_>,
        index: u64,
    ) -> Result<Vec<Converted>, Vec<RecordProblem>> {
        let strip = |problems: Vec<MemberProblem>| problems.into_iter().map(|(_, p)| p).collect();
        let Some(split) = &self.split else {
            let member = Member {
                record,
                parent: None,
                index,
                item: None,
            };
            return self.trajectory(&[member]).map(|c| vec![c]).map_err(strip);
        };
        let items = match record.pointer(split) {
            Some(Node::Array(items)) if !items.is_empty() => items,
            Some(Node::Array(_)) => {
                return Err(vec![(split.clone(), "the list to split is empty".into())])
            }
            Some(other) => {
                return Err(vec![(
                    split.clone(),
                    format!("expected the list to split, found {}", kind_of(other)),
                )])
            }
            None => return Err(vec![(split.clone(), "the list to split is missing".into())]),
        };
        let mut converted = Vec::with_capacity(items.len());
        let mut problems = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let member = Member {
                record: item,
                parent: Some(record),
                index,
                item: Some(i),
            };
            match self.trajectory(&[member]) {
                Ok(c) => converted.push(c),
                Err(p) => problems.extend(
                    p.into_iter()
                        .map(|(_, (pointer, message))| (format!("{split}/{i}{pointer}"), message)),
                ),
            }
        }
        if problems.is_empty() {
            Ok(converted)
        } else {
            Err(problems)
        }
    }

    /// Converts the records of a group, in order, into one trajectory: the id and details come
    /// from the first, the steps of each follow those of the one before.
    pub fn apply_group(&self, members: &[Member<'_>]) -> Result<Converted, Vec<MemberProblem>> {
        self.trajectory(members)
    }

    /// The variables of `member` after the extractions and `[vars]`.
    fn record_scope<'a>(
        &'a self,
        member: &'a Member<'a>,
        position: usize,
    ) -> Result<RecordScope<'a>, RecordProblem> {
        let mut scope = RecordScope {
            member,
            position,
            vars: HashMap::new(),
        };
        for extract in &self.extracts {
            let text = extract.from.render(&scope)?.unwrap_or_default();
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
                    return Err((
                        String::new(),
                        format!(
                            "the record does not match the spec's {} (required): {}",
                            extract.label,
                            preview(&text)
                        ),
                    ))
                }
                None => {}
            }
        }
        for (name, template) in &self.vars {
            if let Some(value) = template.render(&scope)? {
                scope.vars.insert(name, value);
            }
        }
        Ok(scope)
    }

    /// One trajectory from `members` (one record, or a group's records in order).
    fn trajectory(&self, members: &[Member<'_>]) -> Result<Converted, Vec<MemberProblem>> {
        let mut steps = Vec::new();
        let mut problems = Vec::new();
        let mut head = None;
        let mut dropped_turns = 0;
        for (k, member) in members.iter().enumerate() {
            let scope = match self.record_scope(member, k) {
                Ok(scope) => scope,
                Err(p) => {
                    problems.push((k, p));
                    continue;
                }
            };
            let turns = match self.turns(member.record, &scope) {
                Ok(turns) => turns,
                Err(p) => {
                    problems.push((k, p));
                    continue;
                }
            };
            for (position, turn) in turns.iter().enumerate() {
                let at = Position {
                    turn: position,
                    turns: turns.len(),
                    member: k,
                    members: members.len(),
                };
                match self.convert_turn(&scope, turn, at) {
                    Ok(mut s) => {
                        dropped_turns += u64::from(s.is_empty());
                        steps.append(&mut s);
                    }
                    Err(p) => problems.push((k, p)),
                }
            }
            if k == 0 {
                head = Some(self.head(&scope).map_err(|p| vec![(0, p)])?);
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let Some((id, details)) = head else {
            return Err(vec![(
                0,
                (String::new(), "the group has no records".into()),
            )]);
        };
        if let (Some((wrap, unless)), Some(Step::MessageAction(last))) =
            (&self.finish, steps.last_mut())
        {
            if !last.content.contains(unless.as_str()) {
                last.content = wrap
                    .render(&ContentScope(&last.content))
                    .ok()
                    .flatten()
                    .unwrap_or_default();
            }
        }
        Ok(Converted {
            id,
            steps,
            details,
            dropped_turns,
        })
    }

    /// The id and details, rendered over the (first) record.
    fn head(&self, scope: &RecordScope<'_>) -> Result<(String, JsonObject), RecordProblem> {
        let id = self.id.render(scope)?.unwrap_or_default();
        if id.is_empty() {
            return Err((
                String::new(),
                "the spec's id template renders empty for this record".into(),
            ));
        }
        let mut details = JsonObject::new();
        for (key, template) in &self.details {
            let value = match template.as_field() {
                Some(_) => template.render_value(scope)?,
                None => template.render(scope)?.map(Value::String),
            };
            details.insert(key.clone(), value.unwrap_or(Value::Null));
        }
        Ok((id, details))
    }

    fn turns<'a>(
        &'a self,
        record: &'a Node<'a>,
        scope: &RecordScope<'_>,
    ) -> Result<Vec<Turn<'a>>, RecordProblem> {
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
                    // A fixed turn names one field: a missing one is a record that does not fit
                    // (unlike a list's turn, whose text may be absent); one that is not text is
                    // written as compact JSON, as templates write it.
                    let value = record.pointer(pointer).ok_or_else(|| {
                        (
                            pointer.clone(),
                            "missing (a fixed turn's field must be there)".into(),
                        )
                    })?;
                    Ok(Turn {
                        role: Cow::Borrowed(role),
                        text: node_text(value).ok_or_else(|| {
                            (
                                pointer.clone(),
                                "null (a fixed turn's field must be there)".into(),
                            )
                        })?,
                        node: value,
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
                    .map(|(i, node)| {
                        let role_of_field = match role {
                            RoleSource::Pointer(role) => {
                                let role_at = || format!("{turns}/{i}{role}");
                                let value = node
                                    .pointer(role)
                                    .ok_or_else(|| (role_at(), "the role is missing".to_owned()))?;
                                Some(text(value, role_at)?)
                            }
                            RoleSource::Template(_) => None,
                        };
                        let mut turn = Turn {
                            role: Cow::Borrowed(role_of_field.unwrap_or_default()),
                            text: match node.pointer(text_at) {
                                None | Some(Node::Null) => Cow::Borrowed(""),
                                Some(v) => {
                                    Cow::Borrowed(text(v, || format!("{turns}/{i}{text_at}"))?)
                                }
                            },
                            node,
                            pointer: TextPointer::Item {
                                list: turns,
                                index: i,
                                text: text_at,
                            },
                        };
                        if let RoleSource::Template(template) = role {
                            let turn_scope = TurnScope {
                                record: scope,
                                turn: &turn,
                                position: i,
                                captures: None,
                            };
                            let rendered = template.render(&turn_scope)?.unwrap_or_default();
                            if rendered.is_empty() {
                                return Err((
                                    format!("{turns}/{i}"),
                                    "the spec's role template renders empty for this turn"
                                        .to_owned(),
                                ));
                            }
                            turn.role = Cow::Owned(rendered);
                        }
                        Ok(turn)
                    })
                    .collect()
            }
        }
    }

    fn convert_turn(
        &self,
        scope: &RecordScope<'_>,
        turn: &Turn<'_>,
        at: Position,
    ) -> Result<Vec<Step>, RecordProblem> {
        let position = at.turn;
        let Some(&default) = self.roles.get(turn.role.as_ref()) else {
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
            if !rule.applies_to(&turn.role, at) {
                continue;
            }
            let matches: Vec<Captures<'_>> = match &rule.regex {
                None => Vec::new(),
                Some(re) if rule.each => re.captures_iter(&turn.text).collect(),
                // Capture groups cost a second, slower pass: skip it when no template uses them.
                Some(re) if !rule.uses_groups => {
                    if !re.is_match(&turn.text) {
                        continue;
                    }
                    Vec::new()
                }
                Some(re) => first_or_last(re, &turn.text, rule.last)
                    .into_iter()
                    .collect(),
            };
            if rule.regex.is_some() && matches.is_empty() && rule.uses_groups {
                continue;
            }
            let mut scopes: Vec<TurnScope<'_, '_>> = if matches.is_empty() {
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
            let in_rule = |(pointer, e): RecordProblem| {
                let pointer = if pointer.is_empty() {
                    turn.pointer.to_pointer()
                } else {
                    pointer
                };
                (pointer, format!("{}: {e}", rule.name))
            };
            if let Some(when) = &rule.when {
                let mut kept = Vec::with_capacity(scopes.len());
                for s in scopes {
                    let holds_text = when.render(&s).map_err(|m| in_rule(m.into()))?;
                    if holds(holds_text.as_deref()) {
                        kept.push(s);
                    }
                }
                if kept.is_empty() {
                    continue;
                }
                scopes = kept;
            }
            if let Some(reject) = &rule.reject {
                let why = reject.render(&scopes[0]).map_err(|m| in_rule(m.into()))?;
                return Err(in_rule((
                    turn.pointer.to_turn_pointer(),
                    format!(
                        "rejected by the spec: {}",
                        why.filter(|w| !w.is_empty())
                            .unwrap_or_else(|| "(the reason renders empty)".into())
                    ),
                )));
            }
            let mut steps = Vec::new();
            for s in &scopes {
                for emit in &rule.emit {
                    emit_steps(emit, s, &mut steps).map_err(in_rule)?;
                }
            }
            return Ok(steps);
        }
        if self.strict && default != RoleDefault::Drop {
            let names: Vec<&str> = self
                .rules
                .iter()
                .filter(|r| r.names_role(&turn.role))
                .map(|r| r.name.as_str())
                .collect();
            if !names.is_empty() {
                return Err((
                    turn.pointer.to_pointer(),
                    format!(
                        "no rule matches turn {position} (role {role:?}) and the spec is strict: \
                         every turn of a role with rules must match one of them ({names:?}); \
                         add a rule for role {role:?} without `match` to convert the others, or \
                         leave `strict` out: {}",
                        preview(&turn.text),
                        role = turn.role,
                    ),
                ));
            }
        }
        let text = turn.text.clone().into_owned();
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

/// Where a turn is: its position among its record's turns, and its record's in its group.
#[derive(Clone, Copy)]
struct Position {
    turn: usize,
    turns: usize,
    member: usize,
    members: usize,
}

/// True when `position` (0-based, of `count`) is among `wanted` (negative from the end), or
/// when there is no `wanted` list.
fn selected(wanted: &Option<Vec<i64>>, position: usize, count: usize) -> bool {
    wanted.as_ref().is_none_or(|wanted| {
        wanted.iter().any(|&t| {
            let wanted = if t < 0 { count as i64 + t } else { t };
            wanted == position as i64
        })
    })
}

impl Rule {
    fn applies_to(&self, role: &str, at: Position) -> bool {
        self.names_role(role)
            && selected(&self.turns, at.turn, at.turns)
            && selected(&self.members, at.member, at.members)
    }

    /// True when the rule is for turns of `role` (it names the role, or names none).
    fn names_role(&self, role: &str) -> bool {
        self.roles
            .as_ref()
            .is_none_or(|roles| roles.iter().any(|r| r == role))
    }
}

/// Appends the steps of `emit` rendered in `scope`: once, or once per item of its `for_each`.
fn emit_steps(emit: &Emit, scope: &dyn Scope, out: &mut Vec<Step>) -> Result<(), RecordProblem> {
    let Some(each) = &emit.each else {
        return emit_body(&emit.body, scope, out);
    };
    for item in each.items(scope)? {
        emit_body(&emit.body, &ItemScope { outer: scope, item }, out)?;
    }
    Ok(())
}

/// Appends the step, or the steps in order, of `body` rendered in `scope`.
fn emit_body(body: &Body, scope: &dyn Scope, out: &mut Vec<Step>) -> Result<(), RecordProblem> {
    match body {
        Body::Step(step) => out.push(render_step(step, scope)?),
        Body::Steps(steps) => {
            for emit in steps {
                emit_steps(emit, scope, out)?;
            }
        }
    }
    Ok(())
}

/// Why rendered image annotations are not ADP's (an object with a string `element_type` and a
/// `bounding_box` of numbers `x`, `y`, `width`, `height`), for the first one that is not: a
/// record whose coordinates are missing or not numbers is rejected, never written.
fn annotation_problem(items: &[Value]) -> Option<String> {
    // Annotations are small objects: a scan of their few keys costs less than hashing.
    fn field<'v>(object: &'v Map<String, Value>, key: &str) -> &'v Value {
        object
            .iter()
            .find_map(|(k, v)| (k == key).then_some(v))
            .unwrap_or(&Value::Null)
    }
    let problem = |a: &Value| -> Option<String> {
        let Some(a) = a.as_object() else {
            return Some(" is not an object".into());
        };
        if !field(a, "element_type").is_string() {
            return Some(" has no string element_type".into());
        }
        let Some(bbox) = field(a, "bounding_box").as_object() else {
            return Some(" has no bounding_box object".into());
        };
        ["x", "y", "width", "height"].iter().find_map(|k| {
            let v = field(bbox, k);
            (!v.is_number()).then(|| format!(": bounding_box.{k} is {v}, not a number"))
        })
    };
    items
        .iter()
        .enumerate()
        .find_map(|(i, a)| problem(a).map(|p| format!("annotation {i} of an image_observation{p}")))
}

fn render_step(template: &StepTemplate, scope: &dyn Scope) -> Result<Step, RecordProblem> {
    let text = |t: &Template| -> Result<String, RecordProblem> {
        Ok(t.render(scope)?.unwrap_or_default())
    };
    let optional = |t: &Option<Template>| -> Result<Option<String>, RecordProblem> {
        Ok(match t {
            Some(t) => t.render(scope)?,
            None => None,
        })
    };
    Ok(match template {
        StepTemplate::Text {
            source,
            content,
            name,
        } => Step::TextObservation(TextObservation {
            content: text(content)?,
            name: optional(name)?,
            source: *source,
            tool_call_id: None,
            reward: None,
        }),
        StepTemplate::Web {
            html,
            axtree,
            url,
            image,
            viewport_size,
        } => Step::WebObservation(WebObservation {
            html: optional(html)?,
            axtree: optional(axtree)?,
            url: optional(url)?,
            image_observation: optional(image)?.map(|content| {
                TaggedImage::Image(ImageObservation {
                    content,
                    annotations: Some(Vec::new()),
                    source: Source::Environment,
                    tool_call_id: None,
                    reward: None,
                })
            }),
            viewport_size: match viewport_size {
                None => None,
                Some(v) => match v.render(scope)? {
                    Value::Array(items) => Some(items),
                    Value::Null => None,
                    other => Some(vec![other]),
                },
            },
            tool_call_id: None,
            reward: None,
        }),
        StepTemplate::Code {
            language,
            content,
            description,
        } => Step::code(text(language)?, text(content)?, optional(description)?),
        StepTemplate::Image {
            content,
            source,
            annotations,
        } => Step::ImageObservation(ImageObservation {
            content: text(content)?,
            annotations: match annotations {
                None => None,
                Some(a) => {
                    let items = match a.render(scope)? {
                        Value::Array(items) => Some(items),
                        Value::Null => None,
                        other => Some(vec![other]),
                    };
                    if let Some(problem) = items.as_deref().and_then(annotation_problem) {
                        return Err((String::new(), problem));
                    }
                    items
                }
            },
            source: *source,
            tool_call_id: None,
            reward: None,
        }),
        StepTemplate::Api {
            function,
            kwargs,
            description,
        } => {
            let kwargs = match kwargs {
                Kwargs::Fields { fields, optional } => {
                    let mut map = Map::new();
                    for (k, v) in fields {
                        let value = v.render(scope)?;
                        let nothing = value.is_null() || value.as_str() == Some("");
                        if !(nothing && optional.contains(k)) {
                            map.insert(k.clone(), value);
                        }
                    }
                    map
                }
                Kwargs::Whole(whole) => match whole.render(scope)? {
                    Value::Object(map) => map,
                    other => {
                        return Err((
                            String::new(),
                            format!(
                                "the kwargs template gives {}, not an object",
                                if other.is_null() {
                                    "nothing".to_owned()
                                } else {
                                    other.to_string()
                                }
                            ),
                        ))
                    }
                },
                Kwargs::Parsed { from, syntax } => syntax
                    .kwargs(&text(from)?)
                    .map_err(|e| (String::new(), e))?,
            };
            Step::api(text(function)?, kwargs, optional(description)?)
        }
        StepTemplate::Message {
            content,
            description,
        } => Step::message(text(content)?, optional(description)?),
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

//! The steps and `details.hermes` of one Hermes session (a record in the export's shape: the
//! `sessions` row plus `messages`, ordered by id).
//!
//! Messages are OpenAI-shaped: `user`, `assistant` (text, `reasoning_content`, `tool_calls`
//! with the arguments as a JSON string), `tool` (`tool_call_id`, `tool_name`); the system
//! prompt is the session's `system_prompt`. What the flags of newer schemas say:
//! `active = 0, compacted = 1` rows are the history a compaction archived (the compaction
//! wrote a summary row, `_compressed_summary = 1`, and copies of the rows it kept, as new
//! active rows); `active = 0, compacted = 0` rows were undone (`/undo`, rewind) and are not in
//! the conversation. The trajectory keeps the archived history as steps, in order, then the
//! summary and what came after; the copies are left out (their originals are steps already).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::convert::{LeftOut, Partial};
use crate::formats::chat::{call_step, parse_arguments, system_step, CodeTool};
use crate::formats::kit::source_node;
use crate::ingest::RawRecord;
use crate::json::Node;
use crate::model::links::unlink_unanswered;
use crate::model::{JsonObject, Source, Step, Trajectory};
use crate::validate::Diagnostic;

/// Hermes' shell tool: a call whose only argument is `command` is bash code.
const CODE_TOOLS: &[CodeTool] = &[("terminal", "command", "bash")];

/// The fields of a message the steps hold (its other fields are kept in
/// `details.hermes.messages`).
const STEP_FIELDS: &[&str] = &[
    "content",
    "api_content",
    "tool_calls",
    "reasoning_content",
    "session_id",
    "tool_call_id",
];

/// What one session makes: steps, and what `details.hermes` lists.
struct Built<'a> {
    content: Vec<Step>,
    left: LeftOut,
    /// Per message: its native fields the steps do not hold, and its first step.
    messages: Vec<Node<'a>>,
    session_meta: Vec<Node<'a>>,
    compactions: Vec<Node<'a>>,
    rewound: Vec<Node<'a>>,
    copies: Vec<Node<'a>>,
    unlinked_results: Vec<Node<'a>>,
    unmapped: Vec<Node<'a>>,
    blank: Vec<Node<'a>>,
    /// The name of each call made so far, by id.
    calls: HashMap<String, String>,
    /// The (role, timestamp, call id, content, calls) of the rows kept, to tell a
    /// compaction's copies.
    seen: HashSet<String>,
    kept: u64,
    in_source: u64,
    /// True once an archived row was read and no live row yet.
    in_archive: bool,
}

/// A message's flag column as a number (0 or 1; absent in older schemas: `default`).
fn flag(m: &Node, key: &str, default: i64) -> i64 {
    match &m[key] {
        Node::Bool(b) => i64::from(*b),
        n => n.as_i64().unwrap_or(default),
    }
}

/// The text of a message's content: a string, or the text parts of a list joined by blank
/// lines; and the image URLs of its parts, and the parts that are neither (with their index).
fn content_parts<'n, 'a>(
    content: &'n Node<'a>,
) -> (String, Vec<String>, Vec<(usize, &'n Node<'a>)>) {
    match content {
        Node::String(s) => (s.as_ref().to_owned(), Vec::new(), Vec::new()),
        Node::Array(parts) => {
            let mut texts = Vec::new();
            let mut images = Vec::new();
            let mut other = Vec::new();
            for (i, p) in parts.iter().enumerate() {
                if let Some(t) = p["text"].as_str() {
                    texts.push(t);
                } else if let Some(url) = p["image_url"]["url"].as_str().or(p["image_url"].as_str())
                {
                    images.push(url.to_owned());
                } else if let Node::String(s) = p {
                    texts.push(s);
                } else {
                    other.push((i, p));
                }
            }
            (texts.join("\n\n"), images, other)
        }
        _ => (String::new(), Vec::new(), Vec::new()),
    }
}

/// A string node's text, `None` when it is absent, null or blank.
fn text_of(n: &Node) -> Option<String> {
    n.as_str()
        .filter(|s| !s.trim().is_empty())
        .map(str::to_owned)
}

impl<'a> Built<'a> {
    fn new() -> Self {
        Built {
            content: Vec::new(),
            left: LeftOut::new("details.hermes"),
            messages: Vec::new(),
            session_meta: Vec::new(),
            compactions: Vec::new(),
            rewound: Vec::new(),
            copies: Vec::new(),
            unlinked_results: Vec::new(),
            unmapped: Vec::new(),
            blank: Vec::new(),
            calls: HashMap::new(),
            seen: HashSet::new(),
            kept: 0,
            in_source: 0,
            in_archive: false,
        }
    }

    /// The message at `/messages/{i}`, whose record is on `line`.
    fn message(&mut self, i: usize, m: &Node<'a>, line: u64) {
        let role = m["role"].as_str().unwrap_or_default();
        if role == "session_meta" {
            // Kept whole in `details.hermes.session_meta`.
            self.session_meta.push(m.clone());
            return;
        }
        self.in_source += 1;
        let id = m["id"].clone();
        let active = flag(m, "active", 1);
        let compacted = flag(m, "compacted", 0);
        if active == 0 && compacted == 0 {
            self.left.lines += 1;
            self.rewound.push(id);
            return;
        }
        // A compaction's copy of a row kept already: same role, time, call id, content, calls.
        let timestamp = m["timestamp"].text();
        let key = format!(
            "{role}\u{1}{timestamp}\u{1}{}\u{1}{}\u{1}{}",
            m["tool_call_id"].text(),
            m["content"].text(),
            m["tool_calls"].text()
        );
        let copy = !m["timestamp"].is_null() && !self.seen.insert(key);
        let archived = active == 0;
        let summary = flag(m, "_compressed_summary", 0) == 1;
        if (summary || (self.in_archive && !archived)) && !copy {
            self.compactions.push(Node::object([
                ("step", Node::from(self.content.len() as u64)),
                ("message_id", id.clone()),
                ("summary", Node::Bool(summary)),
            ]));
        }
        self.in_archive = archived || (self.in_archive && copy);
        if copy {
            self.left.lines += 1;
            self.copies.push(id);
            return;
        }
        let first_step = self.content.len();
        let pointer = format!("/messages/{i}");
        // What the model was sent, when Hermes kept it apart from what it displays.
        let body = match &m["api_content"] {
            Node::Null => &m["content"],
            api => api,
        };
        let (text, images, other) = content_parts(body);
        for (j, part) in other {
            self.left.blocks += 1;
            self.unmapped.push(Node::object([
                ("message_id", id.clone()),
                ("pointer", Node::from(format!("{pointer}/content/{j}"))),
                (
                    "reason",
                    Node::from("a content part that is neither text nor an image"),
                ),
                ("value", part.clone()),
            ]));
        }
        match role {
            "user" | "system" | "developer" if summary => {
                self.content.push(Step::environment_text(
                    Some("compaction_summary".to_owned()),
                    text,
                ));
            }
            "user" => {
                if !text.is_empty() || images.is_empty() {
                    self.content.push(Step::user_text(text));
                }
                for url in images {
                    self.content.push(Step::image(url, Source::User));
                }
            }
            "system" | "developer" => self.content.push(system_step(text)),
            "assistant" => self.assistant(m, text, &pointer, line),
            "tool" => self.tool(m, text, images),
            other => {
                self.left.unmapped(
                    line,
                    &format!("{pointer}/role"),
                    format!("a message of the role {other:?}, which Hermes does not write"),
                );
                self.unmapped.push(Node::object([
                    ("message_id", id.clone()),
                    ("pointer", Node::from(pointer)),
                    ("reason", Node::from("unknown role")),
                    ("value", m.clone()),
                ]));
                return;
            }
        }
        if self.content.len() > first_step {
            self.kept += 1;
        } else {
            self.left.lines += 1;
            self.blank.push(id.clone());
        }
        let mut rest: Vec<(Cow<'a, str>, Node<'a>)> = vec![(
            Cow::Borrowed("step"),
            if self.content.len() > first_step {
                Node::from(first_step as u64)
            } else {
                Node::Null
            },
        )];
        for (k, v) in m.as_object().into_iter().flatten() {
            let duplicate_reasoning = k == "reasoning"
                && m["reasoning_content"].as_str().is_some()
                && v.equals(&m["reasoning_content"]);
            if v.is_null() || STEP_FIELDS.contains(&k.as_ref()) || duplicate_reasoning {
                continue;
            }
            rest.push((k.clone(), v.clone()));
        }
        // Display text Hermes kept beside what the model was sent.
        if !m["api_content"].is_null() && !m["content"].equals(&m["api_content"]) {
            rest.push((Cow::Borrowed("display_content"), m["content"].clone()));
        }
        self.messages.push(Node::Object(rest));
    }

    /// An assistant message: its calls (the text and reasoning before them as the first's
    /// thought), else a message.
    fn assistant(&mut self, m: &Node<'a>, text: String, pointer: &str, line: u64) {
        let reasoning = text_of(&m["reasoning_content"]).or_else(|| text_of(&m["reasoning"]));
        // Calls as a JSON string (a record not decoded by the store's reader).
        let parsed;
        let calls_node = match &m["tool_calls"] {
            Node::String(s) => {
                parsed = serde_json::from_str::<Value>(s).unwrap_or(Value::Null);
                Node::from_value(&parsed)
            }
            n => n.clone(),
        };
        let mut calls = Vec::new();
        for (j, call) in calls_node.as_array().into_iter().flatten().enumerate() {
            let f = &call["function"];
            let name = f["name"].as_str().unwrap_or_default().to_owned();
            let kwargs = match parse_arguments(&f["arguments"]) {
                Ok(k) => k,
                Err(why) => {
                    self.left.unmapped(
                        line,
                        &format!("{pointer}/tool_calls/{j}/function/arguments"),
                        format!("{why}; kept as the call's `arguments` text"),
                    );
                    JsonObject::from_iter([("arguments".to_owned(), f["arguments"].to_value())])
                }
            };
            let mut step = call_step(&name, kwargs, CODE_TOOLS);
            if let Some(id) = call["id"].as_str().or(call["call_id"].as_str()) {
                self.calls.insert(id.to_owned(), name);
                step = step.with_tool_call_id(id);
            }
            calls.push(step);
        }
        if calls.is_empty() {
            if text.trim().is_empty() && reasoning.is_none() {
                return;
            }
            let mut step = Step::message(text, None);
            step.set_thought(None, reasoning);
            self.content.push(step);
        } else {
            if let Some(first) = calls.first_mut() {
                first.set_thought((!text.trim().is_empty()).then_some(text), reasoning);
            }
            self.content.extend(calls);
        }
    }

    /// A tool result, linked to its call when an earlier message made it.
    fn tool(&mut self, m: &Node<'a>, text: String, images: Vec<String>) {
        let call_id = m["tool_call_id"].as_str().unwrap_or_default();
        let called = self.calls.get(call_id).cloned();
        let name = text_of(&m["tool_name"]).or_else(|| called.clone());
        let step = Step::environment_text(name, text);
        match called {
            Some(_) => self.content.push(step.with_tool_call_id(call_id)),
            None => {
                self.unlinked_results.push(Node::object([
                    ("step", Node::from(self.content.len() as u64)),
                    ("message_id", m["id"].clone()),
                    ("tool_call_id", m["tool_call_id"].clone()),
                ]));
                self.content.push(step);
            }
        }
        for url in images {
            self.content.push(Step::image(url, Source::Environment));
        }
    }
}

/// A list node, or nothing when empty.
fn list<'a>(items: Vec<Node<'a>>) -> Option<Node<'a>> {
    (!items.is_empty()).then_some(Node::Array(items))
}

/// The trajectory of a session.
pub(super) fn to_partial<'a>(
    session: &Node<'a>,
    record: &'a RawRecord,
) -> Result<Partial<'a>, Vec<Diagnostic>> {
    let id = session["id"].text();
    let line = record.provenance.line;
    let mut built = Built::new();
    if let Some(prompt) = text_of(&session["system_prompt"]) {
        built.content.push(system_step(prompt));
    }
    for (i, m) in session["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        built.message(i, m, line);
    }
    // A call no result answers keeps no link id.
    let before: Vec<Option<String>> = built
        .content
        .iter()
        .map(|s| s.tool_call_id().map(str::to_owned))
        .collect();
    unlink_unanswered(&mut built.content);
    let unanswered: Vec<Node<'a>> = built
        .content
        .iter()
        .zip(before)
        .enumerate()
        .filter_map(|(i, (s, was))| match (s.tool_call_id(), was) {
            (None, Some(was)) => Some(Node::object([
                ("step", Node::from(i as u64)),
                ("id", Node::from(was)),
            ])),
            _ => None,
        })
        .collect();
    if built.content.is_empty() {
        return Err(vec![Diagnostic::error(
            &record.provenance,
            Some(&id),
            "/messages",
            "empty-trajectory",
            "the session has no system prompt and no message ADP can carry",
        )]);
    }
    built.left.messages = Some((built.in_source, built.kept));

    let mut hermes: Vec<(Cow<'a, str>, Node<'a>)> = vec![(
        Cow::Borrowed("session"),
        Node::Object(
            session
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, _)| !matches!(k.as_ref(), "messages" | "system_prompt" | "state_db"))
                .cloned()
                .collect(),
        ),
    )];
    let mut put = |key: &'static str, value: Option<Node<'a>>| {
        if let Some(v) = value {
            hermes.push((Cow::Borrowed(key), v));
        }
    };
    put(
        "parent_session_id",
        Some(&session["parent_session_id"])
            .filter(|p| !p.is_null())
            .cloned(),
    );
    put(
        "parent_end_reason",
        Some(&session["state_db"]["parent_end_reason"])
            .filter(|r| !r.is_null())
            .cloned(),
    );
    put(
        "child_session_ids",
        session["state_db"]["child_session_ids"]
            .as_array()
            .filter(|c| !c.is_empty())
            .map(|c| Node::Array(c.to_vec())),
    );
    put(
        "schema_version",
        Some(&session["state_db"]["schema_version"])
            .filter(|v| !v.is_null())
            .cloned(),
    );
    put("session_meta", list(built.session_meta));
    put("messages", list(built.messages));
    put("compactions", list(built.compactions));
    put("compaction_copies_left_out", list(built.copies));
    put("rewound_left_out", list(built.rewound));
    put("blank_messages", list(built.blank));
    put("unanswered_calls", list(unanswered));
    put("unlinked_results", list(built.unlinked_results));
    put("unmapped", list(built.unmapped));
    let mut source = source_node(
        "hermes",
        record,
        Node::object([("session_id", session["id"].clone())]),
    );
    built.left.add_to_node(&mut source);
    Ok(Partial {
        trajectory: Trajectory::new(id, built.content, JsonObject::new()),
        tail: vec![("source", source), ("hermes", Node::Object(hermes))],
    })
}

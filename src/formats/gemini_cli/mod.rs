//! Gemini CLI sessions (`~/.gemini/tmp/<project hash>/chats/session-*.json[l]`): one
//! trajectory per session file. The mapping is in docs/formats/gemini-cli.md.
//!
//! Two shapes, both read whole as one record ([`FileBundle`]):
//! - the JSON document of earlier versions: `{sessionId, projectHash, startTime, lastUpdated,
//!   messages: [...], summary?, directories?, kind?}`;
//! - the JSON-lines log of later ones: a first line with the session's metadata, then one line
//!   per message record written (a record written again with the same `id` replaces it: the
//!   CLI rewrites a message when its tool calls or token counts arrive), `{"$set": {...}}`
//!   metadata updates (a `messages` list replaces them all) and `{"$rewindTo": id}`, which
//!   drops that message and every later one.
//!
//! A message is `{id, timestamp, type: user|gemini|info|error|warning, content}`, content a
//! string, a part (`{text}`, `{inlineData}`, ...) or a list of parts; `gemini` messages add
//! `thoughts` (`{subject, description}`), `tokens`, `model` and `toolCalls` (`{id, name, args,
//! result, status, ...}`, the result a list of parts holding a `functionResponse`).

use std::collections::{HashMap, HashSet};
use std::io;

use serde_json::Value;

use crate::convert::{ConvertOptions, Converter, FormatOptions, LeftOut, Partial, PartialSink};
use crate::formats::bundle::{bundle_node_lines, FileBundle};
use crate::formats::gemini_parts::{call_action, image_uri, result_text, split_text};
use crate::formats::kit::{
    file_stem, has_keys, node_fields_except, not_a_unit, parse_bundle_node, source_node,
};
use crate::formats::Format;
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::json::Node;
use crate::model::{JsonObject, Source, Step, Trajectory};
use crate::validate::Diagnostic;

/// Reads Gemini CLI session files.
pub struct GeminiCli;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &GeminiCli,
    side: None,
};

/// The key marking a record built from a session file.
const MARKER: &str = "gemini_cli_session";

impl Converter for GeminiCli {
    fn name(&self) -> &'static str {
        "gemini-cli"
    }

    fn description(&self) -> &'static str {
        "Gemini CLI sessions: session-*.json documents or session-*.jsonl logs"
    }

    fn sniff(&self, first: &Value) -> bool {
        // The metadata of a session (the document, or the first line of a log): both keys are
        // the CLI's own, and Claude Code's lines have a `type`.
        has_keys(first, &["sessionId", "projectHash"])
            && first.get("type").is_none()
            && !is_qwen_document(first)
    }

    fn decline(&self, first: &Value) -> Option<String> {
        is_qwen_document(first).then(|| {
            "a session document whose model messages are typed `qwen`, as Qwen Code writes them"
                .to_owned()
        })
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        Some(boxed(FileBundle::open(
            path,
            opts.run.max_record_bytes,
            MARKER,
        )))
    }

    fn each_partial(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
        to: &mut PartialSink<'_>,
    ) -> Option<Result<(), Vec<Diagnostic>>> {
        let mut slow = None;
        let bundle = parse_bundle_node(record, &mut slow, MARKER, NOT_A_SESSION);
        Some(bundle.and_then(|b| {
            if holds_qwen_messages(&b) {
                return Err(not_a_unit(record, QWEN_DOCUMENT));
            }
            to(document_partial(b, record, &GEMINI))
        }))
    }
}

/// Who wrote a session file: Gemini CLI, or Qwen Code, whose versions before its JSON-lines
/// log wrote the same document with its model's messages typed `qwen`.
pub(crate) struct Dialect {
    /// The format name, in `details.source.format`.
    pub format: &'static str,
    /// The `type` of the model's messages.
    pub model_type: &'static str,
    /// The key of the format's own `details` object.
    pub details_key: &'static str,
}

/// Gemini CLI's own sessions.
const GEMINI: Dialect = Dialect {
    format: "gemini-cli",
    model_type: "gemini",
    details_key: "gemini_cli",
};

/// What a Qwen Code session document given to this reader is told.
const QWEN_DOCUMENT: &str =
    "a Qwen Code session document (its model messages are typed `qwen`): use --from qwen-code";

/// True when a bundled session file holds a message typed `qwen` (a Qwen Code document).
fn holds_qwen_messages(bundle: &Node<'_>) -> bool {
    bundle_node_lines(bundle).any(|(_, e)| {
        e["messages"]
            .as_array()
            .is_some_and(|ms| ms.iter().any(|m| m["type"].as_str() == Some("qwen")))
    })
}

/// True when `first` is a session document (`sessionId`, `projectHash`, `messages`) holding a
/// message typed `qwen`: Qwen Code's, not Gemini CLI's.
pub(crate) fn is_qwen_document(first: &Value) -> bool {
    has_keys(first, &["sessionId", "projectHash"])
        && first["messages"]
            .as_array()
            .is_some_and(|ms| ms.iter().any(|m| m["type"] == "qwen"))
}

/// The trajectory of a bundled session file (`parse_bundle_node`'s bundle) written in
/// `dialect`.
pub(crate) fn document_partial<'a>(
    bundle: Node<'a>,
    record: &'a RawRecord,
    dialect: &Dialect,
) -> Partial<'a> {
    to_partial(replay(bundle), record, dialect)
}

/// What a record that is not a session bundle is told.
const NOT_A_SESSION: &str = "not a Gemini CLI session (use --from gemini-cli on the session file)";

/// A session as the CLI would load it: its metadata (an object), its messages in order, and
/// what the log held besides.
struct Session<'a> {
    meta: Node<'a>,
    messages: Vec<Node<'a>>,
    /// Where each message was written, for what [`LeftOut`] notes about it.
    written_at: Vec<At>,
    /// Ids of messages a `$rewindTo` dropped.
    rewound: Vec<Node<'a>>,
    /// Lines that are none of the record kinds: `{line, reason, value}`.
    unmapped: Vec<Node<'a>>,
    /// What the log held that no message carries: lines of the wrong type, lines of no known
    /// kind, and the messages a `$rewindTo` dropped (abandoned, as lines left out).
    left: LeftOut,
    /// The user and model messages a `$rewindTo` dropped (conversation messages of the source
    /// that no step keeps).
    rewound_turns: u64,
}

/// Where a message was written: its line, and its place in that line (`None` for the line
/// itself; else the list, `/messages` or `/$set/messages`, and its index there).
#[derive(Clone, Copy)]
struct At {
    line: u64,
    within: Option<(&'static str, usize)>,
}

impl At {
    /// The JSON pointer of `rest` (`/content/1`, or empty) in the message, within its line.
    fn pointer(&self, rest: &str) -> String {
        match self.within {
            Some((list, i)) => format!("{list}/{i}{rest}"),
            None => rest.to_owned(),
        }
    }
}

/// Messages by id, in the order their id first appeared.
#[derive(Default)]
struct Messages<'a> {
    order: Vec<String>,
    by_id: HashMap<String, (At, Node<'a>)>,
}

impl<'a> Messages<'a> {
    /// Adds (or replaces, in its place) the message `id`, written at `at`.
    fn put(&mut self, id: String, at: At, message: Node<'a>) {
        if let Some(slot) = self.by_id.get_mut(&id) {
            *slot = (at, message);
        } else {
            self.by_id.insert(id.clone(), (at, message));
            self.order.push(id);
        }
    }

    /// Replaces every message with those of `list` (when it is an array), the list at `list_at`
    /// on `line`.
    fn set(&mut self, list: Node<'a>, line: u64, list_at: &'static str) {
        self.order.clear();
        self.by_id.clear();
        let Node::Array(list) = list else { return };
        for (i, m) in list.into_iter().enumerate() {
            // A message without an id keeps its place under one of its own.
            let id = m["id"]
                .as_str()
                .map_or_else(|| format!("#{i}"), str::to_owned);
            let at = At {
                line,
                within: Some((list_at, i)),
            };
            self.put(id, at, m);
        }
    }
}

/// Replays the lines of a bundled session file (one line for the JSON document), taking the
/// messages out of it rather than copying them.
fn replay(bundle: Node<'_>) -> Session<'_> {
    let mut s = Session {
        meta: Node::Object(Vec::new()),
        messages: Vec::new(),
        written_at: Vec::new(),
        rewound: Vec::new(),
        unmapped: Vec::new(),
        left: LeftOut::new("details.gemini_cli"),
        rewound_turns: 0,
    };
    let mut messages = Messages::default();
    let lines = match bundle {
        mut b @ Node::Object(_) => b.remove("lines"),
        _ => None,
    };
    let Some(Node::Array(lines)) = lines else {
        return s;
    };
    for mut l in lines {
        if !l.is_object() {
            continue;
        }
        let line = l.get("line").and_then(Node::as_u64).unwrap_or(0);
        let mut obj = l.remove("entry").unwrap_or(Node::Null);
        if !obj.is_object() {
            s.left
                .wrong_type(line, "", "a line of a session log is a JSON object");
            continue;
        }
        if let Some(target) = obj.get("$rewindTo") {
            let at = target
                .as_str()
                .and_then(|t| messages.order.iter().position(|id| id == t))
                .unwrap_or(0);
            for id in messages.order.drain(at..) {
                let dropped = messages.by_id.remove(&id);
                if dropped
                    .is_some_and(|(_, m)| matches!(m["type"].as_str(), Some("user" | "gemini")))
                {
                    s.rewound_turns += 1;
                }
                s.left.lines += 1;
                s.rewound.push(Node::from(id));
            }
        } else if let Some(Node::Object(set)) = obj.remove("$set") {
            for (k, v) in set {
                if k == "messages" {
                    messages.set(v, line, "/$set/messages");
                } else {
                    s.meta.insert(k, v);
                }
            }
        } else if let Some(id) = obj["id"].as_str() {
            let at = At { line, within: None };
            messages.put(id.to_owned(), at, obj);
        } else if obj.get("sessionId").is_some() {
            let Node::Object(entries) = obj else { continue };
            for (k, v) in entries {
                if k == "messages" {
                    messages.set(v, line, "/messages");
                } else {
                    s.meta.insert(k, v);
                }
            }
        } else {
            let reason = "neither session metadata, a message, a $set nor a $rewindTo";
            s.left.unmapped(line, "", reason);
            s.unmapped.push(Node::object([
                ("line", Node::from(line)),
                (
                    "reason",
                    Node::from("neither session metadata, a message, a $set nor a $rewindTo"),
                ),
                ("value", obj),
            ]));
        }
    }
    let Messages { order, mut by_id } = messages;
    (s.written_at, s.messages) = order.iter().filter_map(|id| by_id.remove(id)).unzip();
    s
}

/// The thoughts of a message as one reasoning text (`subject: description` each).
fn thoughts(message: &Node<'_>) -> Option<String> {
    let list: Vec<String> = message["thoughts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            let (subject, description) = (
                t["subject"].as_str().unwrap_or_default(),
                t["description"].as_str().unwrap_or_default(),
            );
            match (subject.is_empty(), description.is_empty()) {
                (false, false) => format!("{subject}: {description}"),
                (false, true) => subject.to_owned(),
                _ => description.to_owned(),
            }
        })
        .filter(|t| !t.is_empty())
        .collect();
    (!list.is_empty()).then(|| list.join("\n\n"))
}

/// True when a user message's content is only `functionResponse` parts, each answering a call
/// in `answered`: the CLI's copy of results a model message already holds.
fn repeats_results(content: &Node<'_>, answered: &HashSet<String>) -> bool {
    let Node::Array(parts) = content else {
        return false;
    };
    !parts.is_empty()
        && parts.iter().all(|p| {
            p["functionResponse"]["id"]
                .as_str()
                .is_some_and(|id| answered.contains(id))
        })
}

/// Why a part of a user message is in `unmapped`.
const NOT_A_USER_PART: &str = "a part that is neither text nor an inline image";

/// `{pointer, reason, value}` of a content part no step holds (at `pointer` in the session's
/// messages), counted in `left`: a block when it is a part (an object), else a wrong-typed value.
fn part_left_out<'a>(
    left: &mut LeftOut,
    at: &At,
    pointer: String,
    reason: &'static str,
    part: Node<'a>,
) -> Node<'a> {
    if part.is_object() {
        left.blocks += 1;
    } else {
        left.wrong_type(
            at.line,
            &at.pointer("/content"),
            "a content part is not an object",
        );
    }
    unmapped_at(pointer, reason, part)
}

/// `{pointer, reason, value}` of a part or message not mapped.
fn unmapped_at<'a>(pointer: String, reason: &'static str, value: Node<'a>) -> Node<'a> {
    Node::object([
        ("pointer", Node::from(pointer)),
        ("reason", Node::from(reason)),
        ("value", value),
    ])
}

fn to_partial<'a>(s: Session<'a>, record: &'a RawRecord, dialect: &Dialect) -> Partial<'a> {
    let session_id = s
        .meta
        .get("sessionId")
        .and_then(Node::as_str)
        .map(str::to_owned);
    let id = session_id
        .clone()
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| file_stem(&record.provenance.file));
    let mut content: Vec<Step> = Vec::new();
    let mut notices = Vec::new();
    let mut unmapped = s.unmapped;
    let mut left = s.left;
    let (mut turns, mut kept) = (s.rewound_turns, 0);
    // The ids of the calls answered so far (by their `result`).
    let mut results_seen = HashSet::new();
    let mut messages_meta = Vec::new();
    let mut calls_meta = Vec::new();
    let mut unanswered = Vec::new();
    let mut tools = Node::Object(Vec::new());
    for ((i, m), at) in s.messages.iter().enumerate().zip(&s.written_at) {
        let kind = m["type"].as_str().unwrap_or_default();
        let pointer = format!("/messages/{i}");
        let steps_before = content.len();
        // What a message has besides its content, thoughts and calls (which become steps).
        if kind == "user" || kind == dialect.model_type {
            turns += 1;
            let mut meta =
                Node::Object(node_fields_except(m, &["content", "thoughts", "toolCalls"]));
            // A thought's fields besides the text the reasoning holds (its `timestamp`).
            let thought_fields: Vec<Node> = m["thoughts"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| Node::Object(node_fields_except(t, &["subject", "description"])))
                .collect();
            if thought_fields
                .iter()
                .any(|t| t.as_object().is_some_and(|o| !o.is_empty()))
            {
                meta.insert("thoughts", Node::Array(thought_fields));
            }
            messages_meta.push(meta);
        }
        match kind {
            "user" if repeats_results(&m["content"], &results_seen) => {
                // The results of calls the model's message already holds, written again as a
                // user message (as the CLI sends them to the model): no conversation message.
                // Kept in `unmapped` as the other parts no step holds.
                turns -= 1;
                left.lines += 1;
                for p in m["content"].as_array().into_iter().flatten() {
                    unmapped.push(unmapped_at(
                        format!("{pointer}/content"),
                        NOT_A_USER_PART,
                        p.clone(),
                    ));
                }
            }
            "user" => {
                let (text, other) = split_text(&m["content"]);
                if !text.is_empty() {
                    content.push(Step::user_text(text));
                }
                for p in other {
                    match image_uri(&p) {
                        Some(uri) => content.push(Step::image(uri, Source::User)),
                        None => unmapped.push(part_left_out(
                            &mut left,
                            at,
                            format!("{pointer}/content"),
                            NOT_A_USER_PART,
                            p,
                        )),
                    }
                }
            }
            model if model == dialect.model_type => {
                let (text, other) = split_text(&m["content"]);
                for p in other {
                    unmapped.push(part_left_out(
                        &mut left,
                        at,
                        format!("{pointer}/content"),
                        "a part of a model message that is not text",
                        p,
                    ));
                }
                let mut thought = thoughts(m);
                let mut text = (!text.is_empty()).then_some(text);
                let calls = match &m["toolCalls"] {
                    Node::Array(calls) => calls.as_slice(),
                    Node::Null => &[],
                    _ => {
                        let reason = "toolCalls is not a list of calls";
                        left.wrong_type(at.line, &at.pointer("/toolCalls"), reason);
                        &[]
                    }
                };
                if calls.is_empty() {
                    if text.is_some() || thought.is_some() {
                        let mut step = Step::message(text.take().unwrap_or_default(), None);
                        step.set_thought(None, thought.take());
                        content.push(step);
                    }
                    kept += u64::from(content.len() > steps_before);
                    continue;
                }
                let mut results = Vec::new();
                let mut open = Vec::new();
                for (k, call) in calls.iter().enumerate() {
                    if !matches!(call["args"], Node::Object(_) | Node::Null) {
                        let reason = "a tool call's args are not an object";
                        left.wrong_type(
                            at.line,
                            &at.pointer(&format!("/toolCalls/{k}/args")),
                            reason,
                        );
                    }
                    let mut step = call_action(call);
                    // The message's text describes its first call (as the CLI shows it),
                    // unless the call carries a description of its own.
                    let description = match &step {
                        Step::CodeAction(c) if c.description.is_some() => {
                            if let Some(t) = text.take() {
                                content.push(Step::message(t, None));
                            }
                            c.description.clone()
                        }
                        _ => text.take(),
                    };
                    step.set_thought(description, thought.take());
                    let call_id = call["id"].as_str().unwrap_or_default().to_owned();
                    let name = call["name"].as_str().unwrap_or("tool").to_owned();
                    let answered = !call["result"].is_null() && !call_id.is_empty();
                    if answered {
                        results_seen.insert(call_id.clone());
                        content.push(step.with_tool_call_id(&call_id));
                        results.push((call_id.clone(), name.clone(), result_text(&call["result"])));
                    } else {
                        open.push((call_id.clone(), step));
                    }
                    if let Some(d) = call["description"].as_str().filter(|d| !d.is_empty()) {
                        if tools.get(&name).is_none() {
                            tools.insert(name, Node::from(d.to_owned()));
                        }
                    }
                    let meta = node_fields_except(call, &["name", "args", "result", "description"]);
                    calls_meta.push(Node::Object(meta));
                }
                for (call_id, name, text) in results {
                    content
                        .push(Step::environment_text(Some(name), text).with_tool_call_id(call_id));
                }
                // Calls without a result come after the results of the others: placed before
                // an observation, ADP would take that observation for theirs.
                for (call_id, step) in open {
                    unanswered.push(Node::object([
                        ("step", Node::from(content.len() as u64)),
                        ("id", Node::from(call_id)),
                    ]));
                    content.push(step);
                }
            }
            "info" | "error" | "warning" => {
                // Notices the CLI shows, not conversation: kept in `notices`.
                left.lines += 1;
                notices.push(Node::object([
                    ("type", Node::from(kind.to_owned())),
                    ("id", m["id"].clone()),
                    ("timestamp", m["timestamp"].clone()),
                    ("content", m["content"].clone()),
                ]));
            }
            _ => {
                let reason = "a message of an unknown type";
                left.unmapped(at.line, &at.pointer(""), reason);
                unmapped.push(unmapped_at(pointer, reason, m.clone()));
            }
        }
        if matches!(kind, "user" | "gemini") {
            kept += u64::from(content.len() > steps_before);
        }
    }
    left.messages = Some((turns, kept));
    let mut native = Node::Object(Vec::new());
    for key in [
        "projectHash",
        "startTime",
        "lastUpdated",
        "summary",
        "directories",
        "kind",
    ] {
        if let Some(v) = s.meta.get(key) {
            native.insert(snake(key), v.clone());
        }
    }
    for (k, v) in s.meta.as_object().into_iter().flatten() {
        let known = [
            "sessionId",
            "projectHash",
            "startTime",
            "lastUpdated",
            "summary",
        ];
        if !known.contains(&k.as_ref()) && !["directories", "kind"].contains(&k.as_ref()) {
            native.insert(k.clone(), v.clone());
        }
    }
    let mut put = |key: &'static str, list: Vec<Node<'a>>| {
        if !list.is_empty() {
            native.insert(key, Node::Array(list));
        }
    };
    put("notices", notices);
    put("messages", messages_meta);
    put("tool_calls", calls_meta);
    put("unanswered_calls", unanswered);
    put("rewound_message_ids", s.rewound);
    put("unmapped", unmapped);
    if tools.as_object().is_some_and(|t| !t.is_empty()) {
        native.insert("tool_descriptions", tools);
    }
    let mut source = source_node(
        dialect.format,
        record,
        Node::object([("session_id", session_id.map_or(Node::Null, Node::from))]),
    );
    left.add_to_node(&mut source);
    Partial {
        trajectory: Trajectory::new(id, content, JsonObject::new()),
        tail: vec![("source", source), (dialect.details_key, native)],
    }
}

/// `camelCase` as `snake_case`.
fn snake(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    fn bundle(lines: &[Value]) -> Value {
        let lines: Vec<Value> = lines
            .iter()
            .enumerate()
            .map(|(i, e)| json!({"line": i + 1, "entry": e}))
            .collect();
        json!({MARKER: true, "lines": lines})
    }

    #[test]
    fn a_log_replays_rewrites_sets_and_rewinds() {
        let b = bundle(&[
            json!({"sessionId": "s", "projectHash": "p", "startTime": "t0"}),
            json!({"id": "a", "type": "user", "content": "hi"}),
            json!({"id": "b", "type": "gemini", "content": "x"}),
            json!({"id": "b", "type": "gemini", "content": "y", "tokens": {"total": 3}}),
            json!({"id": "c", "type": "user", "content": "retry"}),
            json!({"$rewindTo": "c"}),
            json!({"$set": {"lastUpdated": "t9"}}),
            json!({"what": 1}),
        ]);
        let s = replay(Node::from_value(&b));
        let ids: Vec<&str> = s.messages.iter().filter_map(|m| m["id"].as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(s.messages[1]["content"].as_str(), Some("y"));
        assert_eq!(s.rewound, [Node::from("c")]);
        assert_eq!(s.meta["lastUpdated"].as_str(), Some("t9"));
        assert_eq!(s.unmapped.len(), 1);
        // The rewound message is a line left out (a user message: a turn of the source), the
        // line of no known kind an unmapped value.
        assert_eq!((s.left.lines, s.left.values, s.rewound_turns), (1, 1, 1));
        assert_eq!(s.left.first.map(|p| p.line), Some(8));
    }

    #[test]
    fn a_set_of_messages_replaces_them_all() {
        let b = bundle(&[
            json!({"sessionId": "s", "projectHash": "p"}),
            json!({"id": "a", "type": "user", "content": "hi"}),
            json!({"$set": {"messages": [{"id": "z", "type": "user", "content": "new"}]}}),
        ]);
        let s = replay(Node::from_value(&b));
        assert_eq!(s.messages.len(), 1);
        assert_eq!(s.messages[0]["id"].as_str(), Some("z"));
    }
}

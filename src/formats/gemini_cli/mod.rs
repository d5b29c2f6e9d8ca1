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

use std::borrow::Cow;
use std::collections::HashMap;
use std::io;

use serde_json::Value;

use crate::convert::{ConvertOptions, Converter, FormatOptions, Partial, PartialSink};
use crate::formats::bundle::FileBundle;
use crate::formats::kit::{
    file_stem, has_keys, node_fields_except, parse_bundle_node, source_node,
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

/// The shell tool: a call whose arguments are only these becomes a `code_action` in bash.
const SHELL_TOOL: &str = "run_shell_command";
const SHELL_ARGS: &[&str] = &["command", "description"];

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
        has_keys(first, &["sessionId", "projectHash"]) && first.get("type").is_none()
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
        Some(bundle.and_then(|b| to(to_partial(replay(b), record))))
    }
}

/// What a record that is not a session bundle is told.
const NOT_A_SESSION: &str = "not a Gemini CLI session (use --from gemini-cli on the session file)";

/// A session as the CLI would load it: its metadata (an object), its messages in order, and
/// what the log held besides.
struct Session<'a> {
    meta: Node<'a>,
    messages: Vec<Node<'a>>,
    /// Ids of messages a `$rewindTo` dropped.
    rewound: Vec<Node<'a>>,
    /// Lines that are none of the record kinds: `{line, reason, value}`.
    unmapped: Vec<Node<'a>>,
}

/// Messages by id, in the order their id first appeared.
#[derive(Default)]
struct Messages<'a> {
    order: Vec<String>,
    by_id: HashMap<String, Node<'a>>,
}

impl<'a> Messages<'a> {
    /// Adds (or replaces, in its place) the message `id`.
    fn put(&mut self, id: String, message: Node<'a>) {
        if let Some(slot) = self.by_id.get_mut(&id) {
            *slot = message;
        } else {
            self.by_id.insert(id.clone(), message);
            self.order.push(id);
        }
    }

    /// Replaces every message with those of `list` (when it is an array).
    fn set(&mut self, list: Node<'a>) {
        self.order.clear();
        self.by_id.clear();
        let Node::Array(list) = list else { return };
        for (i, m) in list.into_iter().enumerate() {
            // A message without an id keeps its place under one of its own.
            let id = m["id"]
                .as_str()
                .map_or_else(|| format!("#{i}"), str::to_owned);
            self.put(id, m);
        }
    }
}

/// Replays the lines of a bundled session file (one line for the JSON document), taking the
/// messages out of it rather than copying them.
fn replay(bundle: Node<'_>) -> Session<'_> {
    let mut s = Session {
        meta: Node::Object(Vec::new()),
        messages: Vec::new(),
        rewound: Vec::new(),
        unmapped: Vec::new(),
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
            continue;
        }
        if let Some(target) = obj.get("$rewindTo") {
            let at = target
                .as_str()
                .and_then(|t| messages.order.iter().position(|id| id == t))
                .unwrap_or(0);
            for id in messages.order.drain(at..) {
                messages.by_id.remove(&id);
                s.rewound.push(Node::from(id));
            }
        } else if let Some(Node::Object(set)) = obj.remove("$set") {
            for (k, v) in set {
                if k == "messages" {
                    messages.set(v);
                } else {
                    s.meta.insert(k, v);
                }
            }
        } else if let Some(id) = obj["id"].as_str() {
            messages.put(id.to_owned(), obj);
        } else if obj.get("sessionId").is_some() {
            let Node::Object(entries) = obj else { continue };
            for (k, v) in entries {
                if k == "messages" {
                    messages.set(v);
                } else {
                    s.meta.insert(k, v);
                }
            }
        } else {
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
    s.messages = order.iter().filter_map(|id| by_id.remove(id)).collect();
    s
}

/// The parts of a content: a string is one text part, a part a list of one.
fn parts<'n, 'a>(content: &'n Node<'a>) -> Vec<Cow<'n, Node<'a>>> {
    fn part<'n, 'a>(p: &'n Node<'a>) -> Cow<'n, Node<'a>> {
        match p {
            Node::String(s) => Cow::Owned(Node::object([("text", Node::String(s.clone()))])),
            other => Cow::Borrowed(other),
        }
    }
    match content {
        Node::Array(items) => items.iter().map(part).collect(),
        Node::Null => Vec::new(),
        other => vec![part(other)],
    }
}

/// The text parts of a content joined by newlines, and the other parts.
fn split_text<'a>(content: &Node<'a>) -> (String, Vec<Node<'a>>) {
    let mut text = Vec::new();
    let mut other = Vec::new();
    for p in parts(content) {
        match p.get("text").and_then(Node::as_str) {
            Some(t) if p.get("thought") != Some(&Node::Bool(true)) => text.push(t.to_owned()),
            _ => other.push(p.into_owned()),
        }
    }
    (text.join("\n"), other)
}

/// The text of a tool call's result: each `functionResponse`'s `response.output` (or
/// `error`, or the whole response as JSON), and the text of the other parts.
fn result_text(result: &Node<'_>) -> String {
    let mut out = Vec::new();
    for p in parts(result) {
        if let Some(r) = p.get("functionResponse") {
            let response = &r["response"];
            match (&response["output"], &response["error"]) {
                (Node::String(s), _) => out.push(s.as_ref().to_owned()),
                (_, Node::String(e)) => out.push(e.as_ref().to_owned()),
                _ if response.is_null() => {}
                _ => out.push(response.to_string()),
            }
        } else if let Some(t) = p.get("text").and_then(Node::as_str) {
            out.push(t.to_owned());
        } else {
            out.push(p.to_string());
        }
    }
    out.join("\n")
}

/// The action of a tool call.
fn call_action(call: &Node<'_>) -> Step {
    let name = call["name"].as_str().unwrap_or("tool");
    let args = call["args"].to_map();
    if name == SHELL_TOOL && args.keys().all(|k| SHELL_ARGS.contains(&k.as_str())) {
        if let Some(command) = args.get("command").and_then(Value::as_str) {
            let description = args
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned);
            return Step::code("bash", command, description);
        }
    }
    Step::api(name, args, None)
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

/// An inline image part as a data URI.
fn image_uri(part: &Node<'_>) -> Option<String> {
    let data = &part["inlineData"];
    let mime = data["mimeType"].as_str()?;
    mime.starts_with("image/").then(|| {
        format!(
            "data:{mime};base64,{}",
            data["data"].as_str().unwrap_or_default()
        )
    })
}

/// `{pointer, reason, value}` of a part or message not mapped.
fn unmapped_at<'a>(pointer: String, reason: &'static str, value: Node<'a>) -> Node<'a> {
    Node::object([
        ("pointer", Node::from(pointer)),
        ("reason", Node::from(reason)),
        ("value", value),
    ])
}

fn to_partial<'a>(s: Session<'a>, record: &'a RawRecord) -> Partial<'a> {
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
    let mut messages_meta = Vec::new();
    let mut calls_meta = Vec::new();
    let mut unanswered = Vec::new();
    let mut tools = Node::Object(Vec::new());
    for (i, m) in s.messages.iter().enumerate() {
        let kind = m["type"].as_str().unwrap_or_default();
        let pointer = format!("/messages/{i}");
        // What a message has besides its content, thoughts and calls (which become steps).
        if matches!(kind, "user" | "gemini") {
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
            "user" => {
                let (text, other) = split_text(&m["content"]);
                if !text.is_empty() {
                    content.push(Step::user_text(text));
                }
                for p in other {
                    match image_uri(&p) {
                        Some(uri) => content.push(Step::image(uri, Source::User)),
                        None => unmapped.push(unmapped_at(
                            format!("{pointer}/content"),
                            "a part that is neither text nor an inline image",
                            p,
                        )),
                    }
                }
            }
            "gemini" => {
                let (text, other) = split_text(&m["content"]);
                for p in other {
                    unmapped.push(unmapped_at(
                        format!("{pointer}/content"),
                        "a part of a model message that is not text",
                        p,
                    ));
                }
                let mut thought = thoughts(m);
                let mut text = (!text.is_empty()).then_some(text);
                let calls = m["toolCalls"].as_array().unwrap_or(&[]);
                if calls.is_empty() {
                    if text.is_some() || thought.is_some() {
                        let mut step = Step::message(text.take().unwrap_or_default(), None);
                        step.set_thought(None, thought.take());
                        content.push(step);
                    }
                    continue;
                }
                let mut results = Vec::new();
                let mut open = Vec::new();
                for call in calls {
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
            "info" | "error" | "warning" => notices.push(Node::object([
                ("type", Node::from(kind.to_owned())),
                ("id", m["id"].clone()),
                ("timestamp", m["timestamp"].clone()),
                ("content", m["content"].clone()),
            ])),
            _ => unmapped.push(unmapped_at(
                pointer,
                "a message of an unknown type",
                m.clone(),
            )),
        }
    }
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
    let source = source_node(
        "gemini-cli",
        record,
        Node::object([("session_id", session_id.map_or(Node::Null, Node::from))]),
    );
    Partial {
        trajectory: Trajectory::new(id, content, JsonObject::new()),
        tail: vec![("source", source), ("gemini_cli", native)],
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

    #[test]
    fn results_read_output_error_or_the_response() {
        let r = json!([{"functionResponse": {"id": "1", "response": {"output": "ok"}}}]);
        assert_eq!(result_text(&Node::from_value(&r)), "ok");
        let r = json!([{"functionResponse": {"response": {"error": "denied"}}}]);
        assert_eq!(result_text(&Node::from_value(&r)), "denied");
        let r = json!({"functionResponse": {"response": {"llmContent": 3}}});
        assert_eq!(result_text(&Node::from_value(&r)), "{\"llmContent\":3}");
    }
}

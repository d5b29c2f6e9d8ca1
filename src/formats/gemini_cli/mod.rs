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

use serde_json::{json, Map, Value};

use crate::convert::{ConvertOptions, Converter, FormatOptions};
use crate::formats::bundle::FileBundle;
use crate::formats::kit::{fields_except, file_stem, has_keys, parse_bundle, source_details};
use crate::formats::Format;
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::model::{AdpVersion, JsonObject, Source, Step, Trajectory};
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

    fn convert(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        let bundle = parse_bundle(
            record,
            MARKER,
            "not a Gemini CLI session (use --from gemini-cli on the session file)",
        )?;
        let session = replay(bundle);
        Ok(vec![(to_trajectory(session, record), AdpVersion::V1_5)])
    }
}

/// A session as the CLI would load it: its metadata, its messages in order, and what the log
/// held besides.
#[derive(Default)]
struct Session {
    meta: Map<String, Value>,
    messages: Vec<Value>,
    /// Ids of messages a `$rewindTo` dropped.
    rewound: Vec<Value>,
    /// Lines that are none of the record kinds: `{line, reason, value}`.
    unmapped: Vec<Value>,
}

/// Replays the lines of a bundled session file (one line for the JSON document), taking the
/// messages out of it rather than copying them.
fn replay(bundle: Value) -> Session {
    let mut s = Session::default();
    // Messages by id, in the order their id first appeared.
    let mut order: Vec<String> = Vec::new();
    let mut by_id: HashMap<String, Value> = HashMap::new();
    let set_messages = |list: Value, order: &mut Vec<String>, by_id: &mut HashMap<_, _>| {
        order.clear();
        by_id.clear();
        let Value::Array(list) = list else { return };
        for (i, m) in list.into_iter().enumerate() {
            // A message without an id keeps its place under one of its own.
            let id = m["id"]
                .as_str()
                .map_or_else(|| format!("#{i}"), str::to_owned);
            if by_id.insert(id.clone(), m).is_none() {
                order.push(id);
            }
        }
    };
    let lines = match bundle {
        Value::Object(mut b) => b.remove("lines"),
        _ => None,
    };
    let Some(Value::Array(lines)) = lines else {
        return s;
    };
    for l in lines {
        let Value::Object(mut l) = l else { continue };
        let line = l.get("line").and_then(Value::as_u64).unwrap_or(0);
        let entry = l.remove("entry").unwrap_or(Value::Null);
        let Value::Object(mut obj) = entry else {
            continue;
        };
        if let Some(target) = obj.get("$rewindTo") {
            let at = target
                .as_str()
                .and_then(|t| order.iter().position(|id| id == t))
                .unwrap_or(0);
            for id in order.drain(at..) {
                by_id.remove(&id);
                s.rewound.push(json!(id));
            }
        } else if let Some(Value::Object(set)) = obj.remove("$set") {
            for (k, v) in set {
                if k == "messages" {
                    set_messages(v, &mut order, &mut by_id);
                } else {
                    s.meta.insert(k, v);
                }
            }
        } else if obj.get("id").is_some_and(Value::is_string) {
            let id = obj["id"].as_str().unwrap_or_default().to_owned();
            if by_id.insert(id.clone(), Value::Object(obj)).is_none() {
                order.push(id);
            }
        } else if obj.contains_key("sessionId") {
            for (k, v) in obj {
                if k == "messages" {
                    set_messages(v, &mut order, &mut by_id);
                } else {
                    s.meta.insert(k, v);
                }
            }
        } else {
            s.unmapped.push(json!({
                "line": line,
                "reason": "neither session metadata, a message, a $set nor a $rewindTo",
                "value": obj,
            }));
        }
    }
    s.messages = order.iter().filter_map(|id| by_id.remove(id)).collect();
    s
}

/// The parts of a content: a string is one text part, a part a list of one.
fn parts(content: &Value) -> Vec<Cow<'_, Value>> {
    fn part(p: &Value) -> Cow<'_, Value> {
        match p {
            Value::String(s) => Cow::Owned(json!({"text": s})),
            other => Cow::Borrowed(other),
        }
    }
    match content {
        Value::Array(items) => items.iter().map(part).collect(),
        Value::Null => Vec::new(),
        other => vec![part(other)],
    }
}

/// The text parts of a content joined by newlines, and the other parts.
fn split_text(content: &Value) -> (String, Vec<Value>) {
    let mut text = Vec::new();
    let mut other = Vec::new();
    for p in parts(content) {
        match p.get("text").and_then(Value::as_str) {
            Some(t) if p.get("thought") != Some(&Value::Bool(true)) => text.push(t.to_owned()),
            _ => other.push(p.into_owned()),
        }
    }
    (text.join("\n"), other)
}

/// The text of a tool call's result: each `functionResponse`'s `response.output` (or
/// `error`, or the whole response as JSON), and the text of the other parts.
fn result_text(result: &Value) -> String {
    let mut out = Vec::new();
    for p in parts(result) {
        if let Some(r) = p.get("functionResponse") {
            let response = &r["response"];
            match (&response["output"], &response["error"]) {
                (Value::String(s), _) => out.push(s.clone()),
                (_, Value::String(e)) => out.push(e.clone()),
                _ if response.is_null() => {}
                _ => out.push(response.to_string()),
            }
        } else if let Some(t) = p.get("text").and_then(Value::as_str) {
            out.push(t.to_owned());
        } else {
            out.push(p.to_string());
        }
    }
    out.join("\n")
}

/// The action of a tool call.
fn call_action(call: &Value) -> Step {
    let name = call["name"].as_str().unwrap_or("tool");
    let args = call["args"].as_object().cloned().unwrap_or_default();
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
fn thoughts(message: &Value) -> Option<String> {
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
fn image_uri(part: &Value) -> Option<String> {
    let data = &part["inlineData"];
    let mime = data["mimeType"].as_str()?;
    mime.starts_with("image/").then(|| {
        format!(
            "data:{mime};base64,{}",
            data["data"].as_str().unwrap_or_default()
        )
    })
}

fn to_trajectory(s: Session, record: &RawRecord) -> Trajectory {
    let session_id = s
        .meta
        .get("sessionId")
        .and_then(Value::as_str)
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
    let mut tools: Map<String, Value> = Map::new();
    for (i, m) in s.messages.iter().enumerate() {
        let kind = m["type"].as_str().unwrap_or_default();
        let pointer = format!("/messages/{i}");
        // What a message has besides its content, thoughts and calls (which become steps).
        if matches!(kind, "user" | "gemini") {
            let mut meta = fields_except(m, &["content", "thoughts", "toolCalls"]);
            // A thought's fields besides the text the reasoning holds (its `timestamp`).
            let thought_fields: Vec<Value> = m["thoughts"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| Value::Object(fields_except(t, &["subject", "description"])))
                .collect();
            if thought_fields
                .iter()
                .any(|t| t.as_object().is_some_and(|o| !o.is_empty()))
            {
                meta.insert("thoughts".into(), Value::Array(thought_fields));
            }
            messages_meta.push(Value::Object(meta));
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
                        None => unmapped.push(json!({
                            "pointer": format!("{pointer}/content"),
                            "reason": "a part that is neither text nor an inline image",
                            "value": p,
                        })),
                    }
                }
            }
            "gemini" => {
                let (text, other) = split_text(&m["content"]);
                for p in other {
                    unmapped.push(json!({
                        "pointer": format!("{pointer}/content"),
                        "reason": "a part of a model message that is not text",
                        "value": p,
                    }));
                }
                let mut thought = thoughts(m);
                let mut text = (!text.is_empty()).then_some(text);
                let calls = m["toolCalls"].as_array().map(Vec::as_slice).unwrap_or(&[]);
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
                        tools.entry(name).or_insert_with(|| json!(d));
                    }
                    let meta = fields_except(call, &["name", "args", "result", "description"]);
                    calls_meta.push(Value::Object(meta));
                }
                for (call_id, name, text) in results {
                    content
                        .push(Step::environment_text(Some(name), text).with_tool_call_id(call_id));
                }
                // Calls without a result come after the results of the others: placed before
                // an observation, ADP would take that observation for theirs.
                for (call_id, step) in open {
                    unanswered.push(json!({"step": content.len(), "id": call_id}));
                    content.push(step);
                }
            }
            "info" | "error" | "warning" => notices.push(json!({
                "type": kind, "id": m["id"], "timestamp": m["timestamp"], "content": m["content"],
            })),
            _ => unmapped.push(json!({
                "pointer": pointer,
                "reason": "a message of an unknown type",
                "value": m,
            })),
        }
    }
    let mut native = JsonObject::new();
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
    for (k, v) in &s.meta {
        let known = [
            "sessionId",
            "projectHash",
            "startTime",
            "lastUpdated",
            "summary",
        ];
        if !known.contains(&k.as_str()) && !["directories", "kind"].contains(&k.as_str()) {
            native.insert(k.clone(), v.clone());
        }
    }
    let mut put = |key: &str, list: Vec<Value>| {
        if !list.is_empty() {
            native.insert(key.to_owned(), Value::Array(list));
        }
    };
    put("notices", notices);
    put("messages", messages_meta);
    put("tool_calls", calls_meta);
    put("unanswered_calls", unanswered);
    put("rewound_message_ids", s.rewound);
    put("unmapped", unmapped);
    if !tools.is_empty() {
        native.insert("tool_descriptions".into(), Value::Object(tools));
    }
    let mut details = JsonObject::new();
    details.insert(
        "source".into(),
        source_details("gemini-cli", record, json!({"session_id": session_id})),
    );
    details.insert("gemini_cli".into(), Value::Object(native));
    Trajectory::new(id, content, details)
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
        let s = replay(bundle(&[
            json!({"sessionId": "s", "projectHash": "p", "startTime": "t0"}),
            json!({"id": "a", "type": "user", "content": "hi"}),
            json!({"id": "b", "type": "gemini", "content": "x"}),
            json!({"id": "b", "type": "gemini", "content": "y", "tokens": {"total": 3}}),
            json!({"id": "c", "type": "user", "content": "retry"}),
            json!({"$rewindTo": "c"}),
            json!({"$set": {"lastUpdated": "t9"}}),
            json!({"what": 1}),
        ]));
        let ids: Vec<&str> = s.messages.iter().filter_map(|m| m["id"].as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(s.messages[1]["content"], "y");
        assert_eq!(s.rewound, [json!("c")]);
        assert_eq!(s.meta["lastUpdated"], "t9");
        assert_eq!(s.unmapped.len(), 1);
    }

    #[test]
    fn a_set_of_messages_replaces_them_all() {
        let s = replay(bundle(&[
            json!({"sessionId": "s", "projectHash": "p"}),
            json!({"id": "a", "type": "user", "content": "hi"}),
            json!({"$set": {"messages": [{"id": "z", "type": "user", "content": "new"}]}}),
        ]));
        assert_eq!(s.messages.len(), 1);
        assert_eq!(s.messages[0]["id"], "z");
    }

    #[test]
    fn results_read_output_error_or_the_response() {
        let r = json!([{"functionResponse": {"id": "1", "response": {"output": "ok"}}}]);
        assert_eq!(result_text(&r), "ok");
        let r = json!([{"functionResponse": {"response": {"error": "denied"}}}]);
        assert_eq!(result_text(&r), "denied");
        let r = json!({"functionResponse": {"response": {"llmContent": 3}}});
        assert_eq!(result_text(&r), "{\"llmContent\":3}");
    }
}

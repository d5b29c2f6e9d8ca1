//! Cursor agent transcripts (`~/.cursor/projects/<slug>/agent-transcripts/<uuid>/<uuid>.jsonl`,
//! a subagent's under `<uuid>/subagents/`): one JSON line per message,
//! `{role, message: {content: [...]}}`, whose blocks are the Anthropic Messages API's (`text`,
//! `thinking`, `tool_use`, sometimes `tool_result`), and `{type: "turn_ended", status}` lines
//! closing a turn. The lines carry no timestamps, and calls often no id and no result: the
//! reader keeps what is there and says in `details.cursor.missing` what is not. The messages are
//! read by the `anthropic` reader's block handling; the mapping is in docs/formats/cursor.md.

use std::io;

use serde_json::Value;

use crate::convert::{ConvertOptions, Converter, FormatOptions, Partial, PartialSink};
use crate::formats::anthropic::steps;
use crate::formats::bundle::{take_bundle_node_lines, FileBundle};
use crate::formats::kit::{file_stem, node_fields_except, parse_bundle_node, source_node};
use crate::formats::Format;
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::json::Node;
use crate::model::{JsonObject, Trajectory};
use crate::validate::Diagnostic;

/// Reads Cursor agent transcripts.
pub struct Cursor;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &Cursor,
    side: None,
};

/// The key marking a record built from a transcript file.
const MARKER: &str = "cursor_transcript";

/// What a record that is not a transcript bundle is told.
const NOT_A_TRANSCRIPT: &str = "not a Cursor transcript (use --from cursor on the .jsonl file)";

/// Keys of other formats' lines: a line carrying one is not Cursor's.
const FOREIGN_KEYS: &[&str] = &[
    "type",
    "uuid",
    "parentUuid",
    "sessionId",
    "content",
    "tool_calls",
];

/// True when `line` is a message line of a transcript: a `user` or `assistant` `role` and a
/// `message` whose `content` is a list of blocks (or a string), and no key of another format's.
fn is_message_line(line: &Value) -> bool {
    matches!(line["role"].as_str(), Some("user" | "assistant"))
        && (line["message"]["content"].is_array() || line["message"]["content"].is_string())
        && FOREIGN_KEYS.iter().all(|k| line.get(*k).is_none())
}

impl Converter for Cursor {
    fn name(&self) -> &'static str {
        "cursor"
    }

    fn description(&self) -> &'static str {
        "Cursor agent transcripts (~/.cursor/projects/<slug>/agent-transcripts/<uuid>/*.jsonl): Anthropic-style blocks under message, no timestamps, often no results"
    }

    /// A message line: `role` user or assistant and `message.content`, with none of the keys
    /// of Claude Code's lines (`type`, `uuid`, `sessionId`) nor a chat message's own `content`.
    fn sniff(&self, first: &Value) -> bool {
        is_message_line(first)
    }

    fn decline(&self, first: &Value) -> Option<String> {
        let role = first["role"].as_str()?;
        if !first["message"].is_object() || self.sniff(first) {
            return None;
        }
        if !matches!(role, "user" | "assistant") {
            return Some(format!(
                "a `message` under the role {role:?}, not user or assistant"
            ));
        }
        let foreign: Vec<&str> = FOREIGN_KEYS
            .iter()
            .copied()
            .filter(|k| first.get(*k).is_some())
            .collect();
        if foreign.is_empty() {
            Some("a `message` without a `content` list".to_owned())
        } else {
            Some(format!(
                "a `role` and `message` beside keys of other formats: {}",
                foreign.join(", ")
            ))
        }
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
        let bundle = parse_bundle_node(record, &mut slow, MARKER, NOT_A_TRANSCRIPT);
        Some(bundle.and_then(|b| to(transcript(b, record)?)))
    }
}

/// A diagnostic of the whole transcript.
fn refuse(record: &RawRecord, id: &str, pointer: &str, rule: &str, why: &str) -> Vec<Diagnostic> {
    vec![Diagnostic::error(
        &record.provenance,
        Some(id),
        pointer,
        rule,
        why,
    )]
}

/// The transcript's id: its file's name (the conversation's uuid); a subagent's, under
/// `<uuid>/subagents/`, is `<uuid>/agent-<name>`. With the parent's id, for a subagent.
fn transcript_id(file: &str) -> (String, Option<String>) {
    let stem = file_stem(file);
    let mut dirs = file.rsplit('/').skip(1);
    match (dirs.next(), dirs.next()) {
        (Some("subagents"), Some(parent)) if !parent.is_empty() => {
            (format!("{parent}/agent-{stem}"), Some(parent.to_owned()))
        }
        _ => (stem, None),
    }
}

/// The trajectory of a transcript; `details.cursor` is written from nodes borrowed from it.
fn transcript<'a>(
    mut bundle: Node<'a>,
    record: &'a RawRecord,
) -> Result<Partial<'a>, Vec<Diagnostic>> {
    let (id, parent) = transcript_id(record.provenance.file.as_ref());
    let lines = take_bundle_node_lines(&mut bundle);
    // Nearly every line is a message.
    let mut messages: Vec<Node> = Vec::with_capacity(lines.len());
    let mut message_lines: Vec<Node> = Vec::with_capacity(lines.len());
    let mut line_fields: Vec<Node> = Vec::new();
    let mut models: Vec<Node> = Vec::new();
    let mut turns: Vec<Node> = Vec::new();
    let mut other_lines: Vec<Node> = Vec::new();
    for (line, mut l) in lines {
        let message = l["role"].as_str().is_some() && l["message"].is_object();
        match l["type"].as_str() {
            _ if message => {
                let role = l.take("role");
                let mut m = l.take("message");
                if let Some(model) = m["model"].as_str() {
                    if !models.iter().any(|x| x.as_str() == Some(model)) {
                        models.push(m["model"].clone());
                    }
                }
                let mut msg = vec![("role".into(), role), ("content".into(), m.take("content"))];
                if let Node::Object(extra) = m {
                    msg.extend(
                        extra
                            .into_iter()
                            .filter(|(k, _)| !matches!(k.as_ref(), "content" | "model")),
                    );
                }
                messages.push(Node::Object(msg));
                message_lines.push(Node::from(line));
                let outer = node_fields_except(&l, &["role", "message"]);
                if !outer.is_empty() {
                    line_fields.push(Node::object([
                        ("line", Node::from(line)),
                        ("fields", Node::Object(outer)),
                    ]));
                }
            }
            Some("turn_ended") => turns.push(Node::object([
                ("line", Node::from(line)),
                (
                    "after_message",
                    messages
                        .len()
                        .checked_sub(1)
                        .map_or(Node::Null, |n| Node::from(n as u64)),
                ),
                ("status", l.take("status")),
            ])),
            _ => other_lines.push(Node::object([("line", Node::from(line)), ("value", l)])),
        }
    }
    let conversation = Node::object([("messages", Node::Array(messages))]);
    let built = steps::build(&conversation, record.provenance.line, "details.cursor")
        .map_err(|(pointer, why)| refuse(record, &id, &pointer, "chat-structure", &why))?;
    if built.content.is_empty() {
        return Err(refuse(
            record,
            &id,
            "",
            "empty-trajectory",
            "its lines hold no message, call or result that ADP can carry",
        ));
    }
    let mut left = built.left;
    left.lines += (turns.len() + other_lines.len()) as u64;
    let mut cursor = Node::object(built.notes.into_entries());
    // What the transcript does not record: counted in one pass over the blocks.
    let (mut calls, mut no_id, mut results) = (0u64, 0u64, 0u64);
    let blocks = (conversation["messages"]
        .as_array()
        .unwrap_or_default()
        .iter())
    .flat_map(|m| m["content"].as_array().unwrap_or_default());
    for b in blocks {
        match b["type"].as_str() {
            Some("tool_use") => {
                calls += 1;
                no_id += u64::from(b["id"].as_str().is_none());
            }
            Some("tool_result") => results += 1,
            _ => {}
        }
    }
    let unanswered = cursor
        .get("unanswered_calls")
        .and_then(Node::as_array)
        .map_or(0, <[Node]>::len);
    let mut missing = vec![("timestamps".into(), Node::Bool(true))];
    if calls > 0 {
        missing.push(("tool_call_ids".into(), Node::from(no_id)));
        missing.push(("tool_results".into(), Node::from(unanswered as u64)));
    }
    cursor.insert("missing", Node::Object(missing));
    cursor.insert("tool_results_in_transcript", Node::from(results));
    if !models.is_empty() {
        cursor.insert("models", Node::Array(models));
    }
    cursor.insert("message_lines", Node::Array(message_lines));
    for (key, list) in [
        ("turns", turns),
        ("line_fields", line_fields),
        ("other_lines", other_lines),
    ] {
        if !list.is_empty() {
            cursor.insert(key, Node::Array(list));
        }
    }
    if let Some(parent) = parent {
        let agent = Node::object([("parent_trajectory_id", Node::from(parent))]);
        cursor.insert("agent", agent);
    }
    let native = Node::object([("conversation_id", Node::from(id.clone()))]);
    let mut source = source_node("cursor", record, native);
    left.add_to_node(&mut source);
    Ok(Partial {
        trajectory: Trajectory::new(id, built.content, JsonObject::new()),
        tail: vec![("source", source), ("cursor", cursor)],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::openai::OpenAi;
    use serde_json::json;

    #[test]
    fn sniffs_message_lines_with_their_body_under_message() {
        let line =
            json!({"role": "user", "message": {"content": [{"type": "text", "text": "hi"}]}});
        assert!(Cursor.sniff(&line) && !OpenAi.sniff(&line));
        assert!(Cursor.sniff(&json!({"id": "x", "role": "assistant",
            "message": {"model": "m", "content": [{"type": "thinking", "thinking": "t"}]}})));
        // Claude Code's lines, chat messages and other roles are not.
        let claude = json!({"type": "user", "uuid": "u", "sessionId": "s", "role": "user",
            "message": {"role": "user", "content": "hi"}});
        assert!(!Cursor.sniff(&claude));
        assert!(Cursor.decline(&claude).is_some_and(|r| r.contains("uuid")));
        assert!(!Cursor.sniff(&json!({"role": "user", "content": "hi"})));
        let tool = json!({"role": "tool", "message": {"content": []}});
        assert!(!Cursor.sniff(&tool));
        assert!(Cursor.decline(&tool).is_some());
        assert_eq!(
            transcript_id("/p/agent-transcripts/abc/subagents/s1.jsonl"),
            ("abc/agent-s1".to_owned(), Some("abc".to_owned()))
        );
        assert_eq!(
            transcript_id("/p/agent-transcripts/abc/abc.jsonl"),
            ("abc".to_owned(), None)
        );
    }
}

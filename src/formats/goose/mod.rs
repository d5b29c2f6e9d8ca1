//! Goose (block/goose) sessions: its SQLite store `sessions.db` (Goose 1.10 and later, read
//! one session at a time by [`store`]), and the JSON lines file of one session Goose wrote
//! before (`~/.local/share/goose/sessions/<id>.jsonl`: a metadata line, then one message per
//! line). Both give one trajectory per session, id = the session's id (a file's name); the
//! steps are built in `steps.rs`. The mapping is in docs/formats/goose.md.

mod steps;
pub mod store;

use std::io;
use std::path::Path;

use serde_json::Value;

use crate::convert::{ConvertOptions, Converter, FormatOptions, Partial, PartialSink};
use crate::formats::bundle::{bundle_node_lines, FileBundle};
use crate::formats::kit::{file_stem, parse_bundle_node, source_node};
use crate::formats::Format;
use crate::ingest::sqlite::{is_sqlite, open_store};
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::json::Node;
use crate::model::{JsonObject, Trajectory};
use crate::validate::Diagnostic;

use steps::{Built, Message};
use store::{has_schema, MARKER};

/// Reads Goose's session store and session files.
pub struct Goose;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &Goose,
    side: None,
};

/// What a record that is not a session is told.
const NOT_A_SESSION: &str =
    "not a Goose session (use --from goose on sessions.db or on a session's .jsonl file)";

/// The store's file name.
const STORE_NAME: &str = "sessions.db";

impl Converter for Goose {
    fn name(&self) -> &'static str {
        "goose"
    }

    fn description(&self) -> &'static str {
        "Goose sessions: its SQLite store (~/.local/share/goose/sessions/sessions.db) or an older session's .jsonl file, one trajectory per session"
    }

    /// The metadata line of a session file: a string `working_dir` and `description`, with
    /// Goose's `message_count`, token counts or `extension_data`, and no message fields.
    fn sniff(&self, first: &Value) -> bool {
        first["working_dir"].is_string()
            && first["description"].is_string()
            && ["message_count", "total_tokens", "extension_data"]
                .iter()
                .any(|k| first.get(*k).is_some())
            && ["role", "content", "messages", "type"]
                .iter()
                .all(|k| first.get(*k).is_none())
    }

    /// A SQLite file with Goose's tables: `sessions`, and `messages` with `session_id`,
    /// `role` and `content_json`.
    fn claims_path(&self, path: &Path) -> bool {
        if !path.is_file() || !is_sqlite(path) {
            return false;
        }
        let mut copy = None;
        open_store(path, &mut copy).is_ok_and(|conn| has_schema(&conn))
    }

    /// A SQLite file named `sessions.db` without Goose's tables.
    fn decline_path(&self, path: &Path) -> Option<String> {
        let named = path.file_name().and_then(|n| n.to_str()) == Some(STORE_NAME);
        (named && is_sqlite(path) && !self.claims_path(path)).then(|| {
            "a SQLite file named sessions.db without Goose's tables (sessions, and messages with content_json)".to_owned()
        })
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        let max = opts.run.max_record_bytes;
        if is_sqlite(Path::new(path)) {
            return Some(boxed(store::open(path, max)));
        }
        Some(boxed(FileBundle::open(path, max, MARKER)))
    }

    fn each_partial(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
        to: &mut PartialSink<'_>,
    ) -> Option<Result<(), Vec<Diagnostic>>> {
        let mut slow = None;
        let bundle = parse_bundle_node(record, &mut slow, MARKER, NOT_A_SESSION);
        Some(bundle.and_then(|b| to(to_partial(&b, record)?)))
    }
}

/// A diagnostic of the whole session.
fn refuse(record: &RawRecord, id: Option<&str>, rule: &str, why: &str) -> Vec<Diagnostic> {
    vec![Diagnostic::error(&record.provenance, id, "", rule, why)]
}

/// A session as read: its id, its row (or a file's metadata line) and its messages.
struct Session<'n, 'a> {
    id: String,
    row: Node<'a>,
    messages: Vec<Message<'n, 'a>>,
}

/// The session of a store's record, or of a session file's bundle.
fn session_of<'n, 'a>(
    bundle: &'n Node<'a>,
    record: &RawRecord,
) -> Result<Session<'n, 'a>, Vec<Diagnostic>> {
    if bundle.get("lines").is_some() {
        let lines: Vec<(u64, &Node)> = bundle_node_lines(bundle).collect();
        let Some((&(_, header), body)) = lines.split_first() else {
            return Err(refuse(record, None, "not-a-unit", NOT_A_SESSION));
        };
        if header.get("role").is_some() || header["working_dir"].as_str().is_none() {
            return Err(refuse(
                record,
                None,
                "not-a-unit",
                "the first line is not a Goose session's metadata (with `working_dir`): not a Goose session file",
            ));
        }
        let file = record.provenance.file.as_ref();
        let id = if file == "-" {
            "goose-session".to_owned()
        } else {
            file_stem(file)
        };
        return Ok(Session {
            id,
            row: header.clone(),
            messages: body.iter().map(|&(line, m)| Message { line, m }).collect(),
        });
    }
    let row = &bundle["session"];
    let Some(id) = row["id"].as_str().filter(|s| !s.is_empty()) else {
        return Err(refuse(
            record,
            None,
            "missing-id",
            "the session row has no id",
        ));
    };
    let messages = bundle["messages"]
        .as_array()
        .unwrap_or_default()
        .iter()
        .map(|m| Message {
            line: m["row_id"].as_u64().unwrap_or_default(),
            m,
        })
        .collect();
    Ok(Session {
        id: id.to_owned(),
        row: row.clone(),
        messages,
    })
}

/// The token counts of a session row (or a session file's metadata line): the last turn's and
/// the session's accumulated, those it has.
fn tokens<'a>(row: &Node<'a>) -> Option<Node<'a>> {
    const KEYS: &[&str] = &[
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "accumulated_input_tokens",
        "accumulated_output_tokens",
        "accumulated_total_tokens",
        "accumulated_cache_read_tokens",
        "accumulated_cache_write_tokens",
        "accumulated_cost",
    ];
    let found: Vec<(&'static str, Node<'a>)> = KEYS
        .iter()
        .filter_map(|k| row.get(k).filter(|v| !v.is_null()).map(|v| (*k, v.clone())))
        .collect();
    (!found.is_empty()).then(|| Node::object(found))
}

fn to_partial<'a>(
    bundle: &'a Node<'a>,
    record: &'a RawRecord,
) -> Result<Partial<'a>, Vec<Diagnostic>> {
    let session = session_of(bundle, record)?;
    let id = session.id;
    let mut built = Built::new();
    for m in &session.messages {
        built.message(m);
    }
    built.finish();
    if built.steps.content.is_empty() {
        return Err(refuse(
            record,
            Some(&id),
            "empty-trajectory",
            &format!(
                "the session has {} messages, none with a text, call, result or image ADP can carry",
                session.messages.len()
            ),
        ));
    }
    built.steps.left.messages = Some((session.messages.len() as u64, built.steps.kept_messages));
    // The session's rows of `thread_messages`, which are not read.
    let thread_rows = bundle["thread_messages"].as_u64().filter(|n| *n > 0);
    built.steps.left.lines += thread_rows.unwrap_or(0);

    let row = &session.row;
    let store = if bundle.get("lines").is_some() {
        Node::from("jsonl")
    } else {
        bundle["store"].clone()
    };
    let mut goose: Vec<(&'static str, Node<'a>)> = vec![("store", store)];
    let mut put = |key: &'static str, value: Option<Node<'a>>| {
        if let Some(v) = value.filter(|v| !v.is_null()) {
            goose.push((key, v));
        }
    };
    put("schema_version", bundle.get("schema_version").cloned());
    put("working_dir", row.get("working_dir").cloned());
    put("provider", row.get("provider_name").cloned());
    put("model", row["model_config_json"].get("model_name").cloned());
    put("tokens", tokens(row));
    let created = |m: Option<&Message<'_, 'a>>| m.map(|m| m.m["created"].clone());
    put("first_message_at", created(session.messages.first()));
    put("last_message_at", created(session.messages.last()));
    put("usage", bundle.get("usage").cloned());
    put("thread_messages_not_read", thread_rows.map(Node::from));
    put("session", Some(row.clone()));
    let count = |n: u64| (n > 0).then(|| Node::from(n));
    put("images", count(built.steps.images));
    for (key, list) in built.steps.take_lists() {
        put(key, list);
    }

    let mut native = vec![("session_id", Node::from(id.clone()))];
    if let Some(p) = row["parent_session_id"].as_str().filter(|p| !p.is_empty()) {
        native.push(("parent_session_id", Node::from(p.to_owned())));
    }
    let mut source = source_node("goose", record, Node::object(native));
    built.steps.left.add_to_node(&mut source);
    Ok(Partial {
        trajectory: Trajectory::new(id, built.steps.content, JsonObject::new()),
        tail: vec![("source", source), ("goose", Node::object(goose))],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sniffs_a_session_files_metadata_line_only() {
        let meta = json!({"working_dir": "/w", "description": "fix it", "message_count": 4,
            "total_tokens": 10});
        assert!(Goose.sniff(&meta));
        assert!(!Goose.sniff(&json!({"working_dir": "/w", "description": "d"})));
        let mut message = meta.clone();
        message["role"] = json!("user");
        assert!(!Goose.sniff(&message));
        assert!(!Goose.sniff(&json!({"role": "user", "created": 1, "content": []})));
    }
}

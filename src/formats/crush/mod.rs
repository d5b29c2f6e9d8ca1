//! Crush and the Go OpenCode: the SQLite store each keeps inside the project
//! (`.crush/crush.db`, `.opencode/opencode.db`; one schema, Crush's migrations add columns).
//! One trajectory per session (sub-sessions of the agent tool too, linked to their parent),
//! read one session at a time by [`store`]; the steps are built in `steps`. The mapping is in
//! docs/formats/crush.md.

mod steps;
pub mod store;

use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::convert::{ConvertOptions, Converter, FormatOptions, Partial, PartialSink};
use crate::formats::kit::{parse_bundle_node, source_node};
use crate::formats::Format;
use crate::ingest::sqlite::{is_sqlite, open_store};
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::json::Node;
use crate::model::{JsonObject, Trajectory};
use crate::validate::Diagnostic;

use steps::Built;
use store::{has_schema, Stores, MARKER};

/// Reads Crush and Go OpenCode session stores.
pub struct Crush;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &Crush,
    side: None,
};

/// What a record that is not a session of a store is told.
const NOT_A_SESSION: &str =
    "not a Crush/OpenCode session (use --from crush on the crush.db or opencode.db file)";

/// The stores' names, and where each lives in a project.
const STORES: &[(&str, &str)] = &[(".crush", "crush.db"), (".opencode", "opencode.db")];

/// The stores a project directory holds (`.crush/crush.db`, `.opencode/opencode.db`).
fn stores_in(dir: &Path) -> Vec<PathBuf> {
    STORES
        .iter()
        .map(|(folder, name)| dir.join(folder).join(name))
        .filter(|p| p.is_file() && is_sqlite(p))
        .collect()
}

impl Converter for Crush {
    fn name(&self) -> &'static str {
        "crush"
    }

    fn description(&self) -> &'static str {
        "Crush and the Go OpenCode: the SQLite store of a project (.crush/crush.db, .opencode/opencode.db), one trajectory per session"
    }

    /// Never a JSON record: the stores are claimed by path.
    fn sniff(&self, _first: &Value) -> bool {
        false
    }

    /// A SQLite file named `crush.db`, or any SQLite file with the schema's tables
    /// (`sessions`, and `messages` with `parts`: an `opencode.db` is the Go OpenCode's only so);
    /// a directory holding `.crush/crush.db` or `.opencode/opencode.db` (a project).
    fn claims_path(&self, path: &Path) -> bool {
        if path.is_dir() {
            return !stores_in(path).is_empty();
        }
        if !path.is_file() || !is_sqlite(path) {
            return false;
        }
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        // OpenCode (1.2 on) names its store `opencode.db` too: the tables tell them apart.
        if name.ends_with("crush.db") {
            return true;
        }
        let mut copy = None;
        open_store(path, &mut copy).is_ok_and(|conn| has_schema(&conn))
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        let at = Path::new(path);
        if !at.is_dir() && !is_sqlite(at) {
            // JSON given with --from crush: read as records, each refused as no session.
            return None;
        }
        let stores: Vec<String> = if at.is_dir() {
            stores_in(at)
                .into_iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect()
        } else {
            vec![path.to_owned()]
        };
        Some(boxed(Stores::open(
            path,
            &stores,
            opts.run.max_record_bytes,
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
        Some(bundle.and_then(|b| to(to_partial(&b, record)?)))
    }
}

/// A diagnostic of the whole session.
fn refuse(record: &RawRecord, id: Option<&str>, rule: &str, why: &str) -> Vec<Diagnostic> {
    vec![Diagnostic::error(&record.provenance, id, "", rule, why)]
}

/// What the parent's call of a sub-session is: Crush names an agent tool's session
/// `MESSAGE$$CALL` (older versions and OpenCode name it by the call's id alone), and a title's
/// `title-PARENT`.
fn parent_call(id: &str) -> Node<'static> {
    if id.starts_with("title-") {
        return Node::object([("purpose", Node::from("title"))]);
    }
    match id.split_once("$$") {
        Some((message, call)) => Node::object([
            ("purpose", Node::from("agent_tool")),
            ("message_id", Node::from(message.to_owned())),
            ("tool_call_id", Node::from(call.to_owned())),
        ]),
        None => Node::object([
            ("purpose", Node::from("agent_tool")),
            ("tool_call_id", Node::from(id.to_owned())),
        ]),
    }
}

/// The distinct strings of `key` among `messages`, in order of first use.
fn distinct<'a>(messages: &[Node<'a>], key: &str) -> Option<Node<'a>> {
    let mut seen: Vec<Node<'a>> = Vec::new();
    for m in messages {
        let v = &m[key];
        if v.as_str().is_some_and(|s| !s.is_empty()) && !seen.iter().any(|s| s.equals(v)) {
            seen.push(v.clone());
        }
    }
    (!seen.is_empty()).then_some(Node::Array(seen))
}

fn to_partial<'a>(
    bundle: &'a Node<'a>,
    record: &'a RawRecord,
) -> Result<Partial<'a>, Vec<Diagnostic>> {
    let session = &bundle["session"];
    let Some(id) = session["id"].as_str().filter(|s| !s.is_empty()) else {
        return Err(refuse(
            record,
            None,
            "missing-id",
            "the session row has no id",
        ));
    };
    let messages = bundle["messages"].as_array().unwrap_or_default();
    let summary_id = session["summary_message_id"].as_str();
    let mut built = Built::new();
    for m in messages {
        built.message(m, summary_id);
    }
    built.finish();
    if built.steps.content.is_empty() {
        return Err(refuse(
            record,
            Some(id),
            "empty-trajectory",
            &format!(
                "the session has {} messages, none with a text, call, result or image ADP can carry",
                messages.len()
            ),
        ));
    }
    built.steps.left.messages = Some((messages.len() as u64, built.steps.kept_messages));

    let parent = session["parent_session_id"]
        .as_str()
        .filter(|p| !p.is_empty());
    let mut crush: Vec<(&'static str, Node<'a>)> = vec![
        ("schema_version", bundle["schema_version"].clone()),
        ("session", session.clone()),
    ];
    let mut put = |key: &'static str, value: Option<Node<'a>>| {
        if let Some(v) = value {
            crush.push((key, v));
        }
    };
    put(
        "parent",
        parent.map(|p| {
            let mut n = parent_call(id);
            n.insert("session_id", Node::from(p));
            n
        }),
    );
    let subs: Vec<Node<'a>> = bundle["sub_sessions"]
        .as_array()
        .unwrap_or_default()
        .iter()
        .filter_map(|s| s.as_str())
        .map(|s| {
            let call = parent_call(s);
            let step = call["tool_call_id"]
                .as_str()
                .and_then(|c| built.call_steps.get(c))
                .map_or(Node::Null, |&i| Node::from(i as u64));
            Node::object([("session_id", Node::from(s)), ("step", step)])
        })
        .collect();
    put(
        "sub_sessions",
        (!subs.is_empty()).then_some(Node::Array(subs)),
    );
    put("files", bundle.get("files").cloned());
    put("models", distinct(&built.steps.messages, "model"));
    put("providers", distinct(&built.steps.messages, "provider"));
    let count = |n: u64| (n > 0).then(|| Node::from(n));
    put("images", count(built.steps.images));
    put("binaries_left_out", count(built.binaries_left_out));
    for (key, list) in built.steps.take_lists() {
        put(key, list);
    }

    let mut native = vec![("session_id", Node::from(id))];
    if let Some(p) = parent {
        native.push(("parent_session_id", Node::from(p)));
    }
    let mut source = source_node("crush", record, Node::object(native));
    built.steps.left.add_to_node(&mut source);
    Ok(Partial {
        trajectory: Trajectory::new(id.to_owned(), built.steps.content, JsonObject::new()),
        tail: vec![("source", source), ("crush", Node::object(crush))],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sub_session_names_the_call_that_started_it() {
        let v = |id: &str| parent_call(id).to_value();
        assert_eq!(
            v("msg-1$$call_9"),
            serde_json::json!({"purpose": "agent_tool", "message_id": "msg-1", "tool_call_id": "call_9"})
        );
        assert_eq!(
            v("toolu_01"),
            serde_json::json!({"purpose": "agent_tool", "tool_call_id": "toolu_01"})
        );
        assert_eq!(v("title-abc"), serde_json::json!({"purpose": "title"}));
    }

    #[test]
    fn the_known_schema_versions_are_in_order() {
        assert!(store::KNOWN_VERSIONS.is_sorted());
        assert!(!Crush.sniff(&serde_json::json!({"sessions": []})));
    }
}

//! LedgerMind memory events: one trajectory per session, read and cut by
//! [`store`]. The mapping is in docs/formats/ledgermind.md.

pub mod side;
pub mod store;

use std::io;
use std::path::Path;

use serde_json::Value;

use self::store::{EventCheck, SessionOptions, SessionRecords};
use crate::convert::{
    ConvertOptions, Converter, FormatOption, FormatOptions, LeftOut, OptionValue, Partial,
    PartialSink,
};
use crate::formats::kit::{has_keys, not_a_unit, source_node};
use crate::formats::Format;
use crate::ingest::sqlite::{is_sqlite, tables};
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::json::Node;
use crate::model::links::unlink_unanswered;
use crate::model::{JsonObject, Step, Trajectory};
use crate::validate::check::{parse_node, raw_schema_problems};
use crate::validate::schemas::RawSchema;
use crate::validate::Diagnostic;

/// The JSON Schema of raw `ledgermind` records (`validate --schema ledgermind`).
pub static SCHEMA: RawSchema = RawSchema::new(
    "ledgermind",
    "id",
    &[(
        "https://trajkit.invalid/schemas/raw/ledgermind.schema.json",
        include_str!("../../../schemas/raw/ledgermind.schema.json"),
    )],
    &[],
);

/// `idle_gap`: an idle gap longer than this many minutes between events without a session id
/// starts a new session.
pub const IDLE_GAP: FormatOption = FormatOption {
    key: "idle_gap",
    flag: "idle-gap",
    default: OptionValue::Int(30),
    value_name: "MINUTES",
    help: "LedgerMind: an idle gap longer than this many minutes between events without a session id starts a new session",
};

/// `ledgermind_cut_at_prompt`: a prompt event without a session id starts a new session (with
/// false, only the idle gap cuts them).
pub const CUT_AT_PROMPT: FormatOption = FormatOption {
    key: "ledgermind_cut_at_prompt",
    flag: "ledgermind-cut-at-prompt",
    default: OptionValue::Bool(true),
    value_name: "BOOL",
    help: "LedgerMind: a prompt event without a session id starts a new session; with false, only the idle gap cuts them",
};

/// How the options cut events into sessions.
pub fn sessions(opts: &FormatOptions) -> SessionOptions {
    SessionOptions {
        idle_gap_seconds: opts.int(&IDLE_GAP).saturating_mul(60),
        cut_at_prompt: opts.bool(&CUT_AT_PROMPT),
    }
}

/// Reads LedgerMind event stores.
pub struct LedgerMind;

/// The format in the registry: its converter, and its side format for `join`.
pub const FORMAT: Format = Format {
    converter: &LedgerMind,
    side: Some(&side::LedgerMindSide),
};

/// `context` keys naming the tool of a `call`, first present wins.
const TOOL_NAME: &[&str] = &["tool", "tool_name", "name", "function"];
/// `context` keys holding a call's arguments.
const TOOL_ARGS: &[&str] = &["arguments", "args", "params", "input"];

impl Converter for LedgerMind {
    fn name(&self) -> &'static str {
        "ledgermind"
    }

    fn raw_schemas(&self) -> &'static [&'static RawSchema] {
        static SCHEMAS: [&RawSchema; 1] = [&SCHEMA];
        &SCHEMAS
    }

    fn options(&self) -> &'static [&'static FormatOption] {
        &[&IDLE_GAP, &CUT_AT_PROMPT]
    }

    fn description(&self) -> &'static str {
        "LedgerMind memory events: episodic.db (SQLite) or JSON lines, cut into sessions"
    }

    fn sniff(&self, first: &Value) -> bool {
        has_keys(first, &["source", "kind", "content", "timestamp"])
            && first.get("class_").is_none()
    }

    /// A SQLite file with LedgerMind's `events` table (other tools keep SQLite stores too).
    fn claims_path(&self, path: &Path) -> bool {
        path.is_file() && is_sqlite(path) && tables(path).is_some_and(|t| has_events(&t))
    }

    fn decline_path(&self, path: &Path) -> Option<String> {
        if !path.is_file() || !is_sqlite(path) {
            return None;
        }
        match tables(path) {
            None => Some("a SQLite database that cannot be opened".to_owned()),
            Some(t) if !has_events(&t) => Some(format!(
                "a SQLite database without LedgerMind's `events` table; its tables: {}",
                if t.is_empty() {
                    "none".to_owned()
                } else {
                    t.join(", ")
                }
            )),
            Some(_) => None,
        }
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        Some(boxed(SessionRecords::open(
            path,
            sessions(&opts.mapping),
            opts.run.max_record_bytes,
            EventCheck {
                fast: SCHEMA.shapes(true),
                problems: &|event| raw_schema_problems(event, &SCHEMA, true),
            },
        )))
    }

    fn each_partial(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
        to: &mut PartialSink<'_>,
    ) -> Option<Result<(), Vec<Diagnostic>>> {
        let mut slow = None;
        Some(session(record, &mut slow).and_then(|s| to(to_partial(s, record))))
    }
}

/// True when `tables` holds LedgerMind's `events` table.
fn has_events(tables: &[String]) -> bool {
    tables.iter().any(|t| t == "events")
}

/// The session a record of [`SessionRecords`] holds, read straight from its bytes (or, when the
/// fast reader refuses them, through a `Value` kept in `slow`).
fn session<'a>(
    record: &'a RawRecord,
    slow: &'a mut Option<Value>,
) -> Result<Node<'a>, Vec<Diagnostic>> {
    let node = parse_node(record, slow).map_err(|d| vec![*d])?;
    match node["ledgermind_session"].as_bool() {
        Some(true) => Ok(node),
        _ => Err(not_a_unit(
            record,
            "not a LedgerMind session (use --from ledgermind on the events file)",
        )),
    }
}

/// The trajectory of a session; the events and reflections stay in the tail.
fn to_partial<'a>(mut s: Node<'a>, record: &'a RawRecord) -> Partial<'a> {
    let events = match s.take("events") {
        Node::Array(events) => events,
        _ => Vec::new(),
    };
    let lines = s.take("lines");
    // An event's id: its `id`, else `line-N` as the reader indexed it (an export of events
    // may leave the store's row ids out).
    let event_id = |i: usize, e: &Node<'_>| match &e["id"] {
        Node::Number(_) | Node::String(_) => e["id"].text(),
        _ => {
            let line = lines.as_array().and_then(|l| l.get(i));
            format!("line-{}", line.map_or_else(String::new, Node::text))
        }
    };
    let mut content = Vec::new();
    let mut open_call: Option<(String, String)> = None;
    let mut mapped_flags = Vec::with_capacity(events.len());
    let mut failed = false;
    let mut success: Option<bool> = None;
    let mut left = LeftOut::new("details.ledgermind");
    for (i, e) in events.iter().enumerate() {
        let ctx = &e["context"];
        // The content as text, read only by the kinds that make it a step.
        let body = || e["content"].text();
        let mut mapped = true;
        match e["kind"].as_str().unwrap_or_default() {
            "prompt" | "task" => content.push(Step::user_text(body())),
            "call" => {
                let tool = ctx
                    .first_present(TOOL_NAME)
                    .map_or_else(|| "call".to_owned(), |(_, v)| v.text());
                let kwargs = match ctx.first_present(TOOL_ARGS).map(|(_, v)| v) {
                    Some(args @ Node::Object(_)) => args.to_map(),
                    Some(other) => JsonObject::from_iter([("input".to_owned(), other.to_value())]),
                    None => JsonObject::from_iter([("input".to_owned(), Value::String(body()))]),
                };
                let call_id = format!("event-{}", event_id(i, e));
                let command = kwargs.get("command").and_then(Value::as_str);
                let step = match command {
                    Some(c) if kwargs.len() == 1 && matches!(tool.as_str(), "bash" | "shell") => {
                        Step::code("bash", c, None)
                    }
                    _ => Step::api(&tool, kwargs, None),
                };
                content.push(step.with_tool_call_id(&call_id));
                open_call = Some((call_id, tool));
            }
            "result" => {
                if let Some(ok) = ctx["success"].as_bool() {
                    success = Some(ok);
                }
                match open_call.take() {
                    Some((call_id, tool)) => content.push(
                        Step::environment_text(Some(tool), body()).with_tool_call_id(call_id),
                    ),
                    None => content.push(Step::message(body(), None)),
                }
            }
            "error" => {
                failed = true;
                let step = Step::environment_text(Some("error".to_owned()), body());
                content.push(match open_call.take() {
                    Some((call_id, _)) => step.with_tool_call_id(call_id),
                    None => step,
                });
            }
            // An event of a kind no step holds (a heartbeat, a note; the schema gives every
            // event a string kind): kept whole in `details.ledgermind.events`.
            _ => {
                mapped = false;
                left.lines += 1;
            }
        }
        mapped_flags.push(mapped);
    }
    // A call no result answered (the session ended, or another call came first) keeps no id.
    unlink_unanswered(&mut content);
    let status = if failed || success == Some(false) {
        "failure"
    } else if success == Some(true) {
        "success"
    } else {
        "unknown"
    };
    let id = s["key"].as_str().unwrap_or_default().to_owned();
    let reflections: Vec<Node<'a>> = s["semantic"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(j, e)| {
            let mut r = reflection(e);
            if r["key"].as_str() == Some("") {
                r.insert("key", Node::from(event_id(events.len() + j, e)));
            }
            r
        })
        .collect();
    // All of details is in the tail, as nodes.
    let native_ids = Node::object([
        ("session", Node::from(id.clone())),
        ("explicit_session", s["explicit"].clone()),
        (
            "event_ids",
            Node::Array(
                events
                    .iter()
                    .enumerate()
                    .map(|(i, e)| match &e["id"] {
                        Node::Number(_) | Node::String(_) => e["id"].clone(),
                        _ => Node::from(event_id(i, e)),
                    })
                    .collect(),
            ),
        ),
    ]);
    let outcome = Node::object([
        ("status", Node::from(status)),
        (
            "native",
            Node::object([
                ("error_events", Node::from(failed)),
                ("result_success", success.map_or(Node::Null, Node::from)),
            ]),
        ),
    ]);
    let mut source = source_node("ledgermind", record, native_ids);
    left.add_to_node(&mut source);
    let mut tail = vec![("source", source), ("outcome", outcome)];
    if !reflections.is_empty() {
        tail.push(("reflections", Node::Array(reflections)));
    }
    let kept = events
        .into_iter()
        .zip(mapped_flags)
        .map(|(e, mapped)| event_rest(e, mapped))
        .collect();
    tail.push(("ledgermind", Node::object([("events", Node::Array(kept))])));
    Partial {
        trajectory: Trajectory::new(id, content, JsonObject::new()),
        tail,
    }
}

/// A semantic event (a reflection, decision, proposal, ...) in trajkit's reflection shape (also
/// used by the side format, [`side`]).
pub(crate) fn reflection<'a>(e: &Node<'a>) -> Node<'a> {
    Node::object([
        ("source", Node::from("ledgermind")),
        ("key", Node::from(e["id"].text())),
        ("kind", e["kind"].clone()),
        ("text", Node::from(e["content"].text())),
        ("timestamp", e["timestamp"].clone()),
        ("context", e["context"].clone()),
    ])
}

/// An event as kept in `details.ledgermind.events`: whole when it made no step; otherwise
/// without its content, which its step holds, and marked `mapped: true`.
fn event_rest(mut out: Node<'_>, mapped: bool) -> Node<'_> {
    if mapped && out.is_object() {
        out.remove("content");
        out.insert("mapped", Node::Bool(true));
    }
    out
}

//! LedgerMind memory events: one trajectory per session, read and cut by
//! [`crate::ingest::ledgermind`]. The mapping is in the README ("LedgerMind").

use std::io;
use std::path::Path;

use serde_json::{json, Value};

use super::{
    first_present, has_keys, parse_bundle, source_details, value_text, ConvertOptions, Converter,
};
use crate::ingest::ledgermind::{is_sqlite, SessionRecords};
use crate::ingest::{RawRecord, RecordSource};
use crate::model::links::unlink_unanswered;
use crate::model::{AdpVersion, JsonObject, Step, Trajectory};
use crate::validate::check::raw_schema_problems;
use crate::validate::Diagnostic;

/// Reads LedgerMind event stores.
pub struct LedgerMind;

/// `context` keys naming the tool of a `call`, first present wins.
const TOOL_NAME: &[&str] = &["tool", "tool_name", "name", "function"];
/// `context` keys holding a call's arguments.
const TOOL_ARGS: &[&str] = &["arguments", "args", "params", "input"];

impl Converter for LedgerMind {
    fn name(&self) -> &'static str {
        "ledgermind"
    }

    fn description(&self) -> &'static str {
        "LedgerMind memory events: episodic.db (SQLite) or JSON lines, cut into sessions"
    }

    fn sniff(&self, first: &Value) -> bool {
        has_keys(first, &["source", "kind", "content", "timestamp"])
            && first.get("class_").is_none()
    }

    fn claims_path(&self, path: &Path) -> bool {
        path.is_file() && is_sqlite(path)
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        Some(
            SessionRecords::open(path, opts.sessions, opts.run.max_record_bytes, &|event| {
                raw_schema_problems(event, "ledgermind", true)
            })
            .map(|r| Box::new(r) as Box<dyn RecordSource>),
        )
    }

    fn convert(
        &self,
        record: &RawRecord,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        let session = parse_bundle(
            record,
            "ledgermind_session",
            "not a LedgerMind session (use --from ledgermind on the events file)",
        )?;
        Ok(vec![(to_trajectory(&session, record), AdpVersion::V1_5)])
    }
}

fn to_trajectory(s: &Value, record: &RawRecord) -> Trajectory {
    let events = s["events"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let mut content = Vec::new();
    let mut open_call: Option<(String, String)> = None;
    let mut kept = Vec::with_capacity(events.len());
    let mut failed = false;
    let mut success: Option<bool> = None;
    for e in events {
        let ctx = &e["context"];
        let body = value_text(&e["content"]);
        let id = value_text(&e["id"]);
        let mut mapped = true;
        match e["kind"].as_str().unwrap_or_default() {
            "prompt" | "task" => content.push(Step::user_text(body)),
            "call" => {
                let tool = first_present(ctx, TOOL_NAME)
                    .map_or_else(|| "call".to_owned(), |(_, v)| value_text(v));
                let kwargs = match first_present(ctx, TOOL_ARGS).map(|(_, v)| v) {
                    Some(Value::Object(args)) => args.clone(),
                    Some(other) => JsonObject::from_iter([("input".to_owned(), other.clone())]),
                    None => JsonObject::from_iter([("input".to_owned(), Value::String(body))]),
                };
                let call_id = format!("event-{id}");
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
                    Some((call_id, tool)) => content
                        .push(Step::environment_text(Some(tool), body).with_tool_call_id(call_id)),
                    None => content.push(Step::message(body, None)),
                }
            }
            "error" => {
                failed = true;
                let step = Step::environment_text(Some("error".to_owned()), body);
                content.push(match open_call.take() {
                    Some((call_id, _)) => step.with_tool_call_id(call_id),
                    None => step,
                });
            }
            _ => mapped = false,
        }
        kept.push(event_rest(e, mapped));
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
    let reflections: Vec<Value> = s["semantic"]
        .as_array()
        .into_iter()
        .flatten()
        .map(reflection)
        .collect();
    let mut details = JsonObject::new();
    details.insert(
        "source".into(),
        source_details(
            "ledgermind",
            record,
            json!({"session": id, "explicit_session": s["explicit"],
                   "event_ids": events.iter().map(|e| e["id"].clone()).collect::<Vec<_>>()}),
        ),
    );
    details.insert(
        "outcome".into(),
        json!({"status": status, "native": {"error_events": failed, "result_success": success}}),
    );
    if !reflections.is_empty() {
        details.insert("reflections".into(), Value::Array(reflections));
    }
    details.insert("ledgermind".into(), json!({ "events": kept }));
    Trajectory::new(id, content, details)
}

/// A semantic event (a reflection, decision, proposal, ...) in trajkit's reflection shape (also
/// used by `join`'s ledgermind preset).
pub(crate) fn reflection(e: &Value) -> Value {
    json!({
        "source": "ledgermind",
        "key": value_text(&e["id"]),
        "kind": e["kind"],
        "text": value_text(&e["content"]),
        "timestamp": e["timestamp"],
        "context": e["context"],
    })
}

/// An event as kept in `details.ledgermind.events`: whole when it made no step; otherwise
/// without its content, which its step holds, and marked `mapped: true`.
fn event_rest(e: &Value, mapped: bool) -> Value {
    let mut out = e.clone();
    if let (true, Some(o)) = (mapped, out.as_object_mut()) {
        o.remove("content");
        o.insert("mapped".into(), Value::Bool(true));
    }
    out
}

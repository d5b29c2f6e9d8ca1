//! Pi coding agent sessions (`~/.pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl`), also
//! written by OpenClaw and OMP: one JSON-lines file per session, one trajectory per file. The
//! first line is the session header (`{type: "session", version, id, timestamp, cwd}`); the
//! entries after it (`message`, `model_change`, `thinking_level_change`, `compaction`,
//! `branch_summary`, `custom`, `custom_message`, `label`, `session_info`) form a tree by
//! `id`/`parentId` from version 2 on, a linear list in version 1. The conversation is the path
//! to the last entry (`tree.rs`); its steps are built in `steps.rs`. The mapping is in
//! docs/formats/pi.md.

mod steps;
mod tree;

use std::borrow::Cow;
use std::io;

use foldhash::{HashMap, HashMapExt};
use serde_json::Value;

use crate::convert::{ConvertOptions, Converter, FormatOptions, LeftOut, Partial, PartialSink};
use crate::formats::bundle::{bundle_node_lines, FileBundle};
use crate::formats::kit::{file_stem, node_fields_except, parse_bundle_node, source_node};
use crate::formats::Format;
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::json::Node;
use crate::model::{JsonObject, Trajectory};
use crate::validate::Diagnostic;

use steps::{stop_reasons_node, usage_node, Built, Entry};

/// Reads Pi (and OpenClaw, OMP) session files.
pub struct Pi;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &Pi,
    side: None,
};

/// The key marking a record built from a session file.
const MARKER: &str = "pi_session";

/// What a record that is not a session bundle is told.
const NOT_A_SESSION: &str = "not a Pi session (use --from pi on the session file)";

/// Keys of other formats' first lines: a header carrying one is not Pi's.
const FOREIGN_KEYS: &[&str] = &["sessionId", "payload", "messages", "uuid", "parentUuid"];

impl Converter for Pi {
    fn name(&self) -> &'static str {
        "pi"
    }

    fn description(&self) -> &'static str {
        "Pi coding agent sessions (~/.pi/agent/sessions/; also OpenClaw and OMP): one JSONL file per session, the id/parentId tree followed"
    }

    /// The session header: `type: "session"` with a string `id`, `timestamp` and `cwd`, and a
    /// numeric `version` (absent only in version 1 files), and none of the keys that mark
    /// other formats' lines.
    fn sniff(&self, first: &Value) -> bool {
        first["type"] == "session"
            && first["id"].is_string()
            && first["timestamp"].is_string()
            && first["cwd"].is_string()
            && first.get("version").is_none_or(Value::is_u64)
            && FOREIGN_KEYS.iter().all(|k| first.get(*k).is_none())
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
        Some(bundle.and_then(|b| to(to_partial(&b, record)?)))
    }
}

/// A diagnostic of the whole session.
fn refuse(
    record: &RawRecord,
    id: Option<&str>,
    pointer: &str,
    rule: &str,
    why: &str,
) -> Vec<Diagnostic> {
    vec![Diagnostic::error(
        &record.provenance,
        id,
        pointer,
        rule,
        why,
    )]
}

/// A list node, or nothing when empty.
fn list<'a>(items: Vec<Node<'a>>) -> Option<Node<'a>> {
    (!items.is_empty()).then_some(Node::Array(items))
}

fn to_partial<'a>(
    bundle: &'a Node<'a>,
    record: &'a RawRecord,
) -> Result<Partial<'a>, Vec<Diagnostic>> {
    let numbered: Vec<(u64, &Node)> = bundle_node_lines(bundle).collect();
    let Some((&(_, header), body)) = numbered
        .split_first()
        .filter(|((_, h), _)| h["type"].as_str() == Some("session"))
    else {
        return Err(refuse(
            record,
            None,
            "/type",
            "not-a-unit",
            "the first line is not a Pi session header ({\"type\": \"session\", ...}): not a Pi session",
        ));
    };
    let file = record.provenance.file.as_ref();
    let id = match header["id"].as_str().filter(|s| !s.is_empty()) {
        Some(s) => s.to_owned(),
        None if file != "-" => file_stem(file),
        None => {
            return Err(refuse(
                record,
                None,
                "/id",
                "missing-id",
                "the session header has no id, and there is no file name to use instead",
            ))
        }
    };
    let entries: Vec<&Node> = body.iter().map(|(_, e)| *e).collect();
    let tree = tree::is_tree(header["version"].as_u64(), &entries);
    let selection = tree::select(&entries, tree);
    let mut left = LeftOut::new("details.pi");
    left.lines = selection.off_path.len() as u64;
    for &i in &selection.unplaced {
        left.wrong_type(
            body[i].0,
            "/id",
            "an entry without a string id cannot be placed in the session's tree",
        );
    }
    let mut built = Built::new(left);
    for &i in &selection.path {
        let (line, entry) = body[i];
        built.entry(i, &Entry { line, entry });
    }
    built.calls.finish();
    if built.calls.content.is_empty() {
        return Err(refuse(
            record,
            Some(&id),
            "",
            "empty-trajectory",
            "its conversation holds no message, call or result that ADP can carry",
        ));
    }
    let in_source = entries
        .iter()
        .filter(|e| {
            matches!(
                e["type"].as_str(),
                Some("message" | "custom_message" | "branch_summary")
            )
        })
        .count() as u64;
    built.calls.left.messages = Some((in_source, built.kept_messages));

    // Where each compaction's kept messages start: the first kept entry's first step.
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        if let Some(eid) = e["id"].as_str() {
            by_id.entry(eid).or_insert(i);
        }
    }
    for c in &mut built.lists.compactions {
        let kept = match (
            c["firstKeptEntryId"].as_str(),
            c["firstKeptEntryIndex"].as_u64(),
        ) {
            (Some(k), _) => by_id.get(k).copied(),
            // Version 1 counts the file's entries, the header being 0.
            (None, Some(n)) => (n as usize).checked_sub(1),
            (None, None) => None,
        };
        let step = kept.and_then(|k| built.first_step.get(&k)).copied();
        c.insert(
            "kept_from_step",
            step.map_or(Node::Null, |s| Node::from(s as u64)),
        );
    }

    let timestamps: Vec<&str> = selection
        .path
        .iter()
        .filter_map(|&i| entries[i]["timestamp"].as_str())
        .collect();
    let session = header["id"].clone();
    let lists = std::mem::take(&mut built.lists);
    let mut pi: Vec<(Cow<'a, str>, Node<'a>)> = vec![(
        Cow::Borrowed("session"),
        Node::Object(node_fields_except(header, &["type"])),
    )];
    let mut put = |key: &'static str, value: Option<Node<'a>>| {
        if let Some(v) = value {
            pi.push((Cow::Borrowed(key), v));
        }
    };
    put("name", lists.names.last().cloned());
    put(
        "names",
        (lists.names.len() > 1).then_some(Node::Array(lists.names)),
    );
    put("models", list(lists.models));
    put("model_changes", list(lists.model_changes));
    put("thinking_levels", list(lists.thinking_levels));
    put(
        "usage",
        Some(usage_node(&built.usage)).filter(|u| !u.is_null()),
    );
    put(
        "stop_reasons",
        (!built.usage.stop_reasons.is_empty()).then(|| stop_reasons_node(&built.usage)),
    );
    put(
        "timestamps",
        timestamps
            .first()
            .zip(timestamps.last())
            .map(|(f, l)| Node::object([("first", Node::from(*f)), ("last", Node::from(*l))])),
    );
    put("compactions", list(lists.compactions));
    put("branch_summaries", list(lists.branch_summaries));
    put("custom_messages", list(lists.custom_messages));
    put("bash_executions", list(lists.bash_executions));
    put("custom", list(lists.custom));
    put("labels", list(lists.labels));
    put("errors", list(lists.errors));
    put("error_results", list(lists.error_results));
    put("result_details", list(lists.result_details));
    put(
        "unanswered_calls",
        list(std::mem::take(&mut built.calls.unanswered_calls)),
    );
    put("unlinked_results", list(lists.unlinked_results));
    put(
        "branches_left_out",
        list(
            selection
                .off_path
                .iter()
                .map(|&i| entries[i]["id"].clone())
                .collect(),
        ),
    );
    put("other_entries", list(lists.other_entries));
    put("extra_fields", list(lists.extra_fields));
    put("unmapped", list(std::mem::take(&mut built.calls.unmapped)));
    put(
        "thinking_signatures",
        (built.usage.signatures > 0).then(|| Node::from(built.usage.signatures)),
    );
    put(
        "blank_texts",
        (built.usage.blank_texts > 0).then(|| Node::from(built.usage.blank_texts)),
    );
    let mut source = source_node("pi", record, Node::object([("session_id", session)]));
    built.calls.left.add_to_node(&mut source);
    Ok(Partial {
        trajectory: Trajectory::new(id, built.calls.content, JsonObject::new()),
        tail: vec![("source", source), ("pi", Node::Object(pi))],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sniffs_the_session_header_only() {
        let header =
            json!({"type": "session", "version": 3, "id": "u", "timestamp": "t", "cwd": "/w"});
        assert!(Pi.sniff(&header));
        // Version 1 headers carry no version.
        assert!(Pi.sniff(
            &json!({"type": "session", "id": "u", "timestamp": "t", "cwd": "/w", "provider": "p"})
        ));
        assert!(!Pi.sniff(
            &json!({"type": "session", "version": "3", "id": "u", "timestamp": "t", "cwd": "/w"})
        ));
        assert!(!Pi.sniff(&json!({"type": "session", "id": "u", "timestamp": "t"})));
        assert!(!Pi.sniff(
            &json!({"type": "session", "id": "u", "timestamp": "t", "cwd": "/w", "sessionId": "s"})
        ));
        assert!(!Pi.sniff(&json!({"type": "message", "id": "u", "timestamp": "t", "cwd": "/w"})));
    }
}

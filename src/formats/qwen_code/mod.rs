//! Qwen Code sessions, one trajectory per session file, in either of the two shapes Qwen Code
//! has written. The mapping is in docs/formats/qwen-code.md.
//!
//! - The JSON-lines log (`~/.qwen/projects/<project>/chats/<session>.jsonl`, earlier under
//!   `~/.qwen/tmp/<hash>/chats/`): one record a line, `{uuid, parentUuid, sessionId, timestamp,
//!   type: user|assistant|tool_result|system, subtype?, cwd, version, gitBranch?, message?,
//!   model?, usageMetadata?, toolCallResult?, systemPayload?}`, whose `message` is a Gemini
//!   `Content` (`{role, parts}`). The records form a tree by `uuid`/`parentUuid`: Qwen Code
//!   resumes from the path that ends at the record written last (a rewind re-roots the chain,
//!   leaving the rewound turns on a dead branch), and merges records that share a uuid; the
//!   steps are built in `steps.rs`.
//! - The JSON document of versions before the log (`~/.qwen/tmp/<hash>/chats/session-*.json`):
//!   Gemini CLI's session document with the model's messages typed `qwen`, read by the
//!   Gemini CLI reader's code in Qwen Code's dialect.

mod steps;

use std::borrow::Cow;
use std::io;

use serde_json::Value;

use crate::convert::{ConvertOptions, Converter, FormatOptions, LeftOut, Partial, PartialSink};
use crate::formats::bundle::{bundle_node_lines, FileBundle};
use crate::formats::gemini_cli::{document_partial, is_qwen_document, Dialect};
use crate::formats::kit::{file_stem, has_keys, parse_bundle_node, source_node};
use crate::formats::tree::path_to_leaf;
use crate::formats::Format;
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::json::Node;
use crate::model::{JsonObject, Trajectory};
use crate::validate::Diagnostic;

use steps::{Built, Record};

/// Reads Qwen Code session files.
pub struct QwenCode;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &QwenCode,
    side: None,
};

/// The key marking a record built from a session file.
const MARKER: &str = "qwen_code_session";

/// What a record that is not a session bundle is told.
const NOT_A_SESSION: &str = "not a Qwen Code session (use --from qwen-code on the session file)";

/// The record types of the log.
const RECORD_TYPES: &[&str] = &["user", "assistant", "tool_result", "system"];

/// The envelope keys every record repeats: kept once (`envelope`, from the first record taken),
/// and on a record only where its value differs.
const ENVELOPE: &[&str] = &["sessionId", "cwd", "version", "gitBranch"];

/// The old session documents, as Gemini CLI's reader reads them.
const DOCUMENT: Dialect = Dialect {
    format: "qwen-code",
    model_type: "qwen",
    details_key: "qwen_code",
};

impl Converter for QwenCode {
    fn name(&self) -> &'static str {
        "qwen-code"
    }

    fn description(&self) -> &'static str {
        "Qwen Code sessions: chats/<session>.jsonl logs (the uuid/parentUuid tree followed) or the older session-*.json documents"
    }

    /// A record of the log: a string `uuid`, the `sessionId`, one of its record types, and what
    /// only Qwen Code writes around that envelope (Claude Code writes the same envelope): a
    /// Gemini-style `message.parts`, or a `systemPayload` and no message. Or an old session
    /// document holding a message typed `qwen`.
    fn sniff(&self, first: &Value) -> bool {
        is_log_record(first) || is_qwen_document(first)
    }

    /// A record with Qwen Code's body (`message.parts`) and record type but no string `uuid`:
    /// it cannot be placed in a session's tree.
    fn decline(&self, first: &Value) -> Option<String> {
        let near = !first["uuid"].is_string()
            && has_keys(first, &["sessionId"])
            && first["type"]
                .as_str()
                .is_some_and(|t| RECORD_TYPES.contains(&t))
            && first["message"]["parts"].is_array();
        near.then(|| {
            "lines have Qwen Code's Gemini-style `message.parts` but no string `uuid` to place them in the session's tree".to_owned()
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
            if is_document(&b) {
                to(document_partial(b, record, &DOCUMENT))
            } else {
                to(log_partial(&b, record)?)
            }
        }))
    }
}

/// True when a bundled file is one session document (a single object with `messages`), not a
/// log.
fn is_document(bundle: &Node<'_>) -> bool {
    let mut lines = bundle_node_lines(bundle);
    match (lines.next(), lines.next()) {
        (Some((_, only)), None) => only.get("messages").is_some() && only.get("uuid").is_none(),
        _ => false,
    }
}

/// True when `v` is a record of the log (see [`QwenCode::sniff`]).
fn is_log_record(v: &Value) -> bool {
    v["uuid"].is_string()
        && has_keys(v, &["sessionId"])
        && v["type"]
            .as_str()
            .is_some_and(|t| RECORD_TYPES.contains(&t))
        && (v["message"]["parts"].is_array()
            || (v.get("message").is_none() && v.get("systemPayload").is_some()))
}

/// A diagnostic of the whole session.
fn refuse(record: &RawRecord, id: Option<&str>, rule: &str, why: &str) -> Vec<Diagnostic> {
    vec![Diagnostic::error(&record.provenance, id, "", rule, why)]
}

/// A list node, or nothing when empty.
fn list<'a>(items: Vec<Node<'a>>) -> Option<Node<'a>> {
    (!items.is_empty()).then_some(Node::Array(items))
}

/// The records of the conversation, by index into `entries`: the path to the leaf on the
/// file's own side, each uuid with the later records that share it (Qwen Code merges them);
/// and the records left out, each with why.
struct Taken {
    /// The records of each uuid on the path, in file order.
    path: Vec<Vec<usize>>,
    /// Off the path: `(index, reason)`, in file order.
    left_out: Vec<(usize, &'static str)>,
    /// Records without a string uuid.
    unplaced: Vec<usize>,
}

/// Chooses the records of the conversation. Subagent records (`isSidechain: true`) are another
/// conversation: a file of them only is a subagent's, and in any other file they are left out.
fn take(entries: &[&Node<'_>]) -> Taken {
    let side = |e: &Node<'_>| e["isSidechain"].as_bool() == Some(true);
    let subagent = !entries.is_empty() && entries.iter().all(|e| side(e));
    let own: Vec<usize> = (0..entries.len())
        .filter(|&i| subagent || !side(entries[i]))
        .collect();
    let own_entries: Vec<&Node> = own.iter().map(|&i| entries[i]).collect();
    let selection = path_to_leaf(&own_entries, "uuid", "parentUuid");
    let mut path: Vec<Vec<usize>> = selection.path.iter().map(|&k| vec![own[k]]).collect();
    let at: std::collections::HashMap<&str, usize> = selection
        .path
        .iter()
        .enumerate()
        .filter_map(|(n, &k)| Some((own_entries[k]["uuid"].as_str()?, n)))
        .collect();
    let mut left_out = Vec::new();
    for &k in &selection.off_path {
        match own_entries[k]["uuid"].as_str().and_then(|u| at.get(u)) {
            Some(&n) => path[n].push(own[k]),
            None => left_out.push((own[k], "branch")),
        }
    }
    for group in &mut path {
        group.sort_unstable();
    }
    left_out.extend(
        (0..entries.len())
            .filter(|&i| !subagent && side(entries[i]))
            .map(|i| (i, "sidechain")),
    );
    left_out.sort_unstable();
    Taken {
        path,
        left_out,
        unplaced: selection.unplaced.iter().map(|&k| own[k]).collect(),
    }
}

/// The records of one uuid as Qwen Code merges them: the first record, its message's parts
/// followed by those of the later records, the latest `usageMetadata`, and the first `model`
/// and `toolCallResult` where the first record has none.
fn merged<'a>(records: &[&Node<'a>]) -> Node<'a> {
    let Some((first, later)) = records.split_first() else {
        return Node::Null;
    };
    let mut out = (*first).clone();
    for r in later {
        if let Some(Node::Array(more)) = r["message"].get("parts") {
            match out.get_mut("message").and_then(|m| m.get_mut("parts")) {
                Some(Node::Array(parts)) => parts.extend(more.iter().cloned()),
                _ => out.insert("message", r["message"].clone()),
            }
        }
        if let Some(u) = r.get("usageMetadata") {
            out.insert("usageMetadata", u.clone());
        }
        for key in ["model", "toolCallResult"] {
            if out.get(key).is_none() {
                if let Some(v) = r.get(key) {
                    out.insert(key, v.clone());
                }
            }
        }
    }
    out
}

fn log_partial<'a>(
    bundle: &'a Node<'a>,
    record: &'a RawRecord,
) -> Result<Partial<'a>, Vec<Diagnostic>> {
    let lines: Vec<(u64, &Node)> = bundle_node_lines(bundle).collect();
    let entries: Vec<&Node> = lines.iter().map(|(_, e)| *e).collect();
    let file = record.provenance.file.as_ref();
    let session = entries
        .iter()
        .filter_map(|e| e["sessionId"].as_str())
        .find(|s| !s.is_empty());
    let id = match session {
        Some(s) => s.to_owned(),
        None if file != "-" => file_stem(file),
        None => {
            return Err(refuse(
                record,
                None,
                "missing-id",
                "no record has a non-empty sessionId, and there is no file name to use instead",
            ))
        }
    };
    let taken = take(&entries);
    let mut left = LeftOut::new("details.qwen_code");
    left.lines += taken.left_out.len() as u64;
    for &i in &taken.unplaced {
        left.wrong_type(
            lines[i].0,
            "/uuid",
            "a record without a string uuid cannot be placed in the session's tree",
        );
    }
    let first = taken
        .path
        .first()
        .and_then(|g| g.first())
        .map(|&i| entries[i])
        .unwrap_or(&Node::Null);
    let envelope = Node::Object(
        ENVELOPE
            .iter()
            .filter_map(|&k| first.get(k).map(|v| (Cow::Borrowed(k), v.clone())))
            .collect(),
    );
    let mut built = Built::new(left, &envelope);
    for group in &taken.path {
        let records: Vec<&Node> = group.iter().map(|&i| entries[i]).collect();
        let copies: Vec<(u64, &Node)> = group[1..]
            .iter()
            .map(|&i| (lines[i].0, entries[i]))
            .collect();
        let entry = match records.as_slice() {
            [one] => Cow::Borrowed(*one),
            _ => Cow::Owned(merged(&records)),
        };
        built.record(&Record {
            line: lines[group[0]].0,
            entry: &entry,
            copies: &copies,
        });
    }
    built.calls.finish();
    if built.calls.content.is_empty() {
        return Err(refuse(
            record,
            Some(&id),
            "empty-trajectory",
            "its conversation holds no message, call or result that ADP can carry",
        ));
    }
    // Messages: the records of the conversation's kinds, a uuid written twice counted once.
    let mut seen = std::collections::HashSet::new();
    let in_source = entries
        .iter()
        .filter(|e| {
            matches!(
                e["type"].as_str(),
                Some("user" | "assistant" | "tool_result")
            )
        })
        .filter(|e| e["uuid"].as_str().is_none_or(|u| seen.insert(u)))
        .count() as u64;
    built.calls.left.messages = Some((in_source, built.kept_messages));
    let timestamps: Vec<&str> = taken
        .path
        .iter()
        .flatten()
        .filter_map(|&i| entries[i]["timestamp"].as_str())
        .collect();
    let left_out: Vec<Node> = taken
        .left_out
        .iter()
        .map(|&(i, why)| {
            Node::object([
                ("line", Node::from(lines[i].0)),
                ("uuid", entries[i]["uuid"].clone()),
                ("reason", Node::from(why)),
            ])
        })
        .collect();
    let mut qc: Vec<(Cow<'a, str>, Node<'a>)> = vec![
        (
            Cow::Borrowed("session_id"),
            session.map_or(Node::Null, Node::from),
        ),
        (Cow::Borrowed("envelope"), envelope),
    ];
    let lists = std::mem::take(&mut built.lists);
    let mut put = |key: &'static str, value: Option<Node<'a>>| {
        if let Some(v) = value {
            qc.push((Cow::Borrowed(key), v));
        }
    };
    put("models", list(lists.models));
    put("usage", built.usage.node());
    put(
        "timestamps",
        timestamps
            .first()
            .zip(timestamps.last())
            .map(|(f, l)| Node::object([("first", Node::from(*f)), ("last", Node::from(*l))])),
    );
    put("compactions", list(lists.compactions));
    put("error_results", list(lists.error_results));
    put(
        "unanswered_calls",
        list(std::mem::take(&mut built.calls.unanswered_calls)),
    );
    put("unlinked_results", list(lists.unlinked_results));
    put("records", list(lists.records));
    put("left_out", list(left_out));
    put("unmapped", list(std::mem::take(&mut built.calls.unmapped)));
    let mut source = source_node(
        "qwen-code",
        record,
        Node::object([("session_id", session.map_or(Node::Null, Node::from))]),
    );
    built.calls.left.add_to_node(&mut source);
    Ok(Partial {
        trajectory: Trajectory::new(id, built.calls.content, JsonObject::new()),
        tail: vec![("source", source), ("qwen_code", Node::Object(qc))],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sniffs_the_records_qwen_code_writes_and_declines_claude_codes() {
        let base = json!({"uuid": "u", "parentUuid": null, "sessionId": "s", "timestamp": "t",
            "type": "user", "cwd": "/w", "version": "0.18.1",
            "message": {"role": "user", "parts": [{"text": "hi"}]}});
        assert!(QwenCode.sniff(&base));
        let system = json!({"uuid": "u", "sessionId": "s", "type": "system",
            "subtype": "ui_telemetry", "systemPayload": {}});
        assert!(QwenCode.sniff(&system));
        let claude = json!({"uuid": "u", "sessionId": "s", "type": "tool_result",
            "message": {"role": "user", "content": "hi"}});
        assert!(!QwenCode.sniff(&claude));
        assert!(QwenCode.decline(&claude).is_none());
        assert!(QwenCode.decline(&base).is_none());
        let mut placeless = base.clone();
        placeless["uuid"] = json!(7);
        assert!(!QwenCode.sniff(&placeless));
        assert!(QwenCode.decline(&placeless).is_some());
        let document = json!({"sessionId": "s", "projectHash": "p",
            "messages": [{"id": "1", "type": "qwen", "content": "hi"}]});
        assert!(QwenCode.sniff(&document));
        let gemini = json!({"sessionId": "s", "projectHash": "p",
            "messages": [{"id": "1", "type": "gemini", "content": "hi"}]});
        assert!(!QwenCode.sniff(&gemini));
    }

    #[test]
    fn the_path_keeps_copies_of_its_uuids_and_leaves_branches_and_sidechains_out() {
        let r = |u: &str, p: Option<&str>| json!({"uuid": u, "parentUuid": p});
        let mut side = r("s1", Some("a"));
        side["isSidechain"] = json!(true);
        let values = [
            r("a", None),
            r("x", Some("a")), // rewound
            r("b", Some("a")),
            side,
            r("b", Some("a")), // a second record of b
            r("c", Some("b")),
        ];
        let nodes: Vec<Node> = values.iter().map(Node::from_value).collect();
        let refs: Vec<&Node> = nodes.iter().collect();
        let t = take(&refs);
        assert_eq!(t.path, vec![vec![0], vec![2, 4], vec![5]]);
        assert_eq!(t.left_out, vec![(1, "branch"), (3, "sidechain")]);
    }
}

//! GitHub Copilot CLI sessions (`~/.copilot/session-state/<session id>/events.jsonl`): one JSON
//! event per line, each `{type, data, id, timestamp, parentId}` (and `ephemeral`, `agentId`).
//! The same events are what `copilot -p --output-format json` prints, with the streaming ones
//! (`ephemeral: true`) the log leaves out. One trajectory per file for the main agent, and one
//! per subagent whose events the file holds (`agentId`, or an older log's
//! `data.parentToolCallId`), linked to the call that spawned it. The steps are built in
//! `steps.rs`; the mapping is in docs/formats/copilot-cli.md.

mod legacy;
mod steps;

use std::borrow::Cow;
use std::io;

use foldhash::{HashMap, HashMapExt};
use serde_json::Value;

use crate::convert::{ConvertOptions, Converter, FormatOptions, LeftOut, Partial, PartialSink};
use crate::formats::bundle::{bundle_node_lines, FileBundle};
use crate::formats::kit::{file_stem, parse_bundle_node, source_node};
use crate::formats::Format;
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::json::Node;
use crate::model::{JsonObject, Trajectory};
use crate::validate::Diagnostic;

use steps::{usage_node, Built, Event};

/// Reads GitHub Copilot CLI session event logs.
pub struct CopilotCli;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &CopilotCli,
    side: None,
};

/// The key marking a record built from a session file.
const MARKER: &str = "copilot_cli_session";

/// What a record that is not a session bundle is told.
const NOT_A_SESSION: &str =
    "not a Copilot CLI session (use --from copilot-cli on the session's events.jsonl)";

/// The keys of an event's envelope: an event has no other.
const ENVELOPE: &[&str] = &[
    "type",
    "data",
    "id",
    "timestamp",
    "parentId",
    "ephemeral",
    "agentId",
];

/// The event types of a conversation, by which a near miss is told.
const CONVERSATION_EVENTS: &[&str] = &[
    "session.start",
    "user.message",
    "assistant.message",
    "tool.execution_start",
    "tool.execution_complete",
];

/// True when `kind` is spelled as Copilot's event types are: dotted lower-case words
/// (`session.start`, `tool.execution_complete`), or `abort`.
fn is_event_type(kind: &str) -> bool {
    kind == "abort"
        || (kind.contains('.')
            && kind
                .split('.')
                .all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')))
}

impl Converter for CopilotCli {
    fn name(&self) -> &'static str {
        "copilot-cli"
    }

    fn description(&self) -> &'static str {
        "GitHub Copilot CLI session events (~/.copilot/session-state/<id>/events.jsonl, or the JSON output of copilot -p) and legacy history-session-state/<id>.json sessions: tool requests linked to their executions, subagents as their own trajectories"
    }

    /// An event: a dotted `type` (`session.start`, ...), an object `data`, and no key but
    /// those of the event envelope; a `session.start` names its `sessionId`. Or a legacy
    /// session document: a string `sessionId`, a `chatMessages` and a `timeline` list.
    fn sniff(&self, first: &Value) -> bool {
        if legacy::is_legacy_value(first) {
            return true;
        }
        let Some(kind) = first["type"].as_str() else {
            return false;
        };
        is_event_type(kind)
            && first["data"].is_object()
            && first
                .as_object()
                .is_some_and(|o| o.keys().all(|k| ENVELOPE.contains(&k.as_str())))
            && (kind != "session.start" || first["data"]["sessionId"].is_string())
    }

    fn decline(&self, first: &Value) -> Option<String> {
        let kind = first["type"].as_str()?;
        if !CONVERSATION_EVENTS.contains(&kind) || self.sniff(first) {
            return None;
        }
        if !first["data"].is_object() {
            return Some(format!(
                "a `type` of Copilot CLI's ({kind:?}) but no object `data`"
            ));
        }
        let foreign: Vec<&str> = first
            .as_object()
            .into_iter()
            .flat_map(|o| o.keys())
            .map(String::as_str)
            .filter(|k| !ENVELOPE.contains(k))
            .collect();
        if !foreign.is_empty() {
            return Some(format!(
                "a Copilot CLI event type with keys its events do not have: {}",
                foreign.join(", ")
            ));
        }
        Some("a `session.start` without `data.sessionId`".to_owned())
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
            for partial in to_partials(&b, record)? {
                to(partial)?;
            }
            Ok(())
        }))
    }
}

/// A diagnostic of the whole session.
fn refuse(record: &RawRecord, id: Option<&str>, rule: &str, why: &str) -> Vec<Diagnostic> {
    vec![Diagnostic::error(&record.provenance, id, "", rule, why)]
}

/// A list node, or nothing when empty.
fn list<'a>(items: Vec<Node<'a>>) -> Option<Node<'a>> {
    (!items.is_empty()).then_some(Node::Array(items))
}

/// The agent an event belongs to: `None` for the main agent, else a subagent's `agentId` (or,
/// in older logs, the `parentToolCallId` of the call that spawned it).
fn agent_of<'n>(event: &'n Node<'_>) -> Option<&'n str> {
    event["agentId"]
        .as_str()
        .or_else(|| event["data"]["parentToolCallId"].as_str())
        .filter(|a| !a.is_empty())
}

/// The session's id: `session.start`'s `sessionId`; else the folder of an `events.jsonl`
/// (`session-state/<id>/events.jsonl`), else the file's name.
fn session_id(lines: &[(u64, &Node)], file: &str) -> Option<String> {
    let start = lines
        .iter()
        .find(|(_, e)| e["type"].as_str() == Some("session.start"));
    if let Some(id) = start.and_then(|(_, e)| e["data"]["sessionId"].as_str()) {
        if !id.is_empty() {
            return Some(id.to_owned());
        }
    }
    if file == "-" {
        return None;
    }
    let mut parts = file.rsplit('/');
    match (parts.next(), parts.next()) {
        (Some(name), Some(dir)) if file_stem(name) == "events" && !dir.is_empty() => {
            Some(dir.to_owned())
        }
        _ => Some(file_stem(file)),
    }
}

fn to_partials<'a>(
    bundle: &'a Node<'a>,
    record: &'a RawRecord,
) -> Result<Vec<Partial<'a>>, Vec<Diagnostic>> {
    let lines: Vec<(u64, &'a Node<'a>)> = bundle_node_lines(bundle).collect();
    if let [(line, doc)] = lines.as_slice() {
        if legacy::is_legacy(doc) {
            return legacy_partial(record, *line, doc).map(|p| vec![p]);
        }
    }
    let Some(session) = session_id(&lines, record.provenance.file.as_ref()) else {
        return Err(refuse(
            record,
            None,
            "missing-id",
            "the session has no session.start with a sessionId, and there is no file name to use instead",
        ));
    };
    // The session's binary assets, which results and attachments name by `assetId`.
    let mut assets: HashMap<&str, &Node> = HashMap::new();
    for (_, e) in &lines {
        if e["type"].as_str() == Some("session.binary_asset") {
            if let Some(id) = e["data"]["assetId"].as_str() {
                assets.insert(id, &e["data"]);
            }
        }
    }
    // The agents, in the order their first event comes.
    let mut agents: Vec<Option<&str>> = vec![None];
    for (_, e) in &lines {
        let a = agent_of(e);
        if !agents.contains(&a) {
            agents.push(a);
        }
    }
    let start = lines
        .iter()
        .find(|(_, e)| e["type"].as_str() == Some("session.start"))
        .map(|(_, e)| &e["data"]);
    let mut partials = Vec::new();
    for agent in agents {
        let id = match agent {
            None => session.clone(),
            Some(a) => format!("{session}/agent-{a}"),
        };
        // Other agents' events are theirs, not left out of this one.
        let left = LeftOut::new("details.copilot_cli");
        let mut built = Built::new(left, assets.clone(), legacy::read);
        for &(line, event) in &lines {
            if agent_of(event) != agent {
                continue;
            }
            if event["type"].as_str().is_none() {
                built
                    .left
                    .wrong_type(line, "/type", "an event without a string type");
                continue;
            }
            built.event(&Event { line, event });
        }
        built.finish();
        if built.content.is_empty() {
            if agent.is_none() && lines.iter().any(|(_, e)| agent_of(e).is_some()) {
                // Only subagents' events (a main agent that wrote nothing): theirs follow.
                continue;
            }
            return Err(refuse(
                record,
                Some(&id),
                "empty-trajectory",
                "its events hold no message, call or result that ADP can carry",
            ));
        }
        built.left.messages = Some((built.messages_in, built.messages_kept));
        partials.push(partial(
            built,
            record,
            id,
            &session,
            agent,
            start.cloned(),
            &lines,
        ));
    }
    Ok(partials)
}

/// The trajectory of a legacy session document (`history-session-state/<id>.json`), id its
/// `sessionId` (else the id in the file's name).
fn legacy_partial<'a>(
    record: &'a RawRecord,
    line: u64,
    doc: &'a Node<'a>,
) -> Result<Partial<'a>, Vec<Diagnostic>> {
    let stem = file_stem(record.provenance.file.as_ref());
    let session = match doc["sessionId"].as_str().filter(|s| !s.is_empty()) {
        Some(id) => id.to_owned(),
        None => legacy::id_from_stem(&stem).unwrap_or(&stem).to_owned(),
    };
    let mut built = Built::new(
        LeftOut::new("details.copilot_cli"),
        HashMap::new(),
        legacy::read,
    );
    let fields = legacy::read(&mut built, line, "", doc);
    built.finish();
    if built.content.is_empty() {
        return Err(refuse(
            record,
            Some(&session),
            "empty-trajectory",
            "its chatMessages hold no message, call or result that ADP can carry",
        ));
    }
    built.left.messages = Some((built.messages_in, built.messages_kept));
    let start = Node::Object(fields);
    Ok(partial(
        built,
        record,
        session.clone(),
        &session,
        None,
        Some(start),
        &[],
    ))
}

/// The subagents whose events a session's file holds, in the order of their first event:
/// `{agent_id, trajectory_id, spawned_by}`.
fn subagent_trajectories<'a>(session: &str, lines: &[(u64, &'a Node<'a>)]) -> Vec<Node<'a>> {
    let mut seen: Vec<&str> = Vec::new();
    for (_, e) in lines {
        if let Some(a) = agent_of(e).filter(|a| !seen.contains(a)) {
            seen.push(a);
        }
    }
    seen.into_iter()
        .map(|a| {
            Node::object([
                ("agent_id", Node::from(a.to_owned())),
                ("trajectory_id", Node::from(format!("{session}/agent-{a}"))),
                ("spawned_by", spawned_by(a, lines)),
            ])
        })
        .collect()
}

/// The call that spawned subagent `agent`: the `toolCallId` of its `subagent.started` (found
/// by the agent's id; in older logs the agent's key is that call's id).
fn spawned_by<'a>(agent: &str, lines: &[(u64, &'a Node<'a>)]) -> Node<'a> {
    lines
        .iter()
        .find(|(_, e)| {
            e["type"].as_str() == Some("subagent.started")
                && (e["agentId"].as_str() == Some(agent)
                    || e["data"]["toolCallId"].as_str() == Some(agent))
        })
        .map_or(Node::Null, |(_, e)| e["data"]["toolCallId"].clone())
}

/// The trajectory of one agent's steps and its `details.copilot_cli`.
fn partial<'a>(
    built: Built<'a>,
    record: &'a RawRecord,
    id: String,
    session: &str,
    agent: Option<&'a str>,
    start: Option<Node<'a>>,
    lines: &[(u64, &'a Node<'a>)],
) -> Partial<'a> {
    let mut built = built;
    let lists = std::mem::take(&mut built.lists);
    let mut d: Vec<(Cow<'a, str>, Node<'a>)> = Vec::new();
    let mut put = |key: &'static str, value: Option<Node<'a>>| {
        if let Some(v) = value {
            d.push((Cow::Borrowed(key), v));
        }
    };
    put("session", start);
    match agent {
        Some(a) => put(
            "agent",
            Some(Node::object([
                ("agent_id", Node::from(a)),
                ("parent_trajectory_id", Node::from(session.to_owned())),
                ("spawned_by", spawned_by(a, lines)),
            ])),
        ),
        None => put(
            "subagent_trajectories",
            list(subagent_trajectories(session, lines)),
        ),
    }
    put("models", list(lists.models));
    put("model_changes", list(lists.model_changes));
    put(
        "usage",
        Some(usage_node(&built.usage)).filter(|u| !u.is_null()),
    );
    put(
        "timestamps",
        built
            .first_timestamp
            .take()
            .zip(built.last_timestamp.take())
            .map(|(f, l)| Node::object([("first", f), ("last", l)])),
    );
    put("resumes", list(lists.resumes));
    put("truncations", list(lists.truncations));
    put("compactions", list(lists.compactions));
    put("context_cleared", list(lists.context_cleared));
    put("system_messages", list(lists.system_messages));
    put("user_messages", list(lists.user_messages));
    put("assistant_messages", list(lists.assistant_messages));
    put("tool_requests", list(lists.tool_requests));
    put("tool_starts", list(lists.tool_starts));
    put("tool_results", list(lists.tool_results));
    put("error_results", list(lists.error_results));
    put("unanswered_calls", list(lists.unanswered_calls));
    put("unlinked_results", list(lists.unlinked_results));
    put("hooks", list(lists.hooks));
    put("skills", list(lists.skills));
    put("subagents", list(lists.subagents));
    put("notices", list(lists.notices));
    put("errors", list(lists.errors));
    put("aborts", list(lists.aborts));
    put("shutdowns", list(lists.shutdowns));
    put("other_events", list(lists.other_events));
    put(
        "skipped_events",
        (!built.skipped.is_empty()).then(|| {
            Node::Object(
                built
                    .skipped
                    .iter()
                    .map(|(k, n)| (Cow::Owned(k.clone()), Node::from(*n)))
                    .collect(),
            )
        }),
    );
    put("unmapped", list(lists.unmapped));
    let mut native = vec![("session_id", Node::from(session.to_owned()))];
    if let Some(a) = agent {
        native.push(("agent_id", Node::from(a)));
    }
    let mut source = source_node("copilot-cli", record, Node::object(native));
    built.left.add_to_node(&mut source);
    Partial {
        trajectory: Trajectory::new(id, built.content, JsonObject::new()),
        tail: vec![("source", source), ("copilot_cli", Node::Object(d))],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sniffs_events_by_their_envelope() {
        let start = json!({"type": "session.start", "id": "e1", "timestamp": "t", "parentId": null,
            "data": {"sessionId": "s", "version": 1, "producer": "copilot-agent"}});
        assert!(CopilotCli.sniff(&start));
        assert!(CopilotCli.sniff(&json!({"type": "session.mcp_server_status_changed",
            "data": {"serverName": "g"}, "ephemeral": true, "id": "x", "timestamp": "t", "parentId": "p"})));
        assert!(CopilotCli.sniff(&json!({"type": "user.message", "data": {"content": "hi"}})));
        // A session.start without its session id, a non-object data, foreign keys: declined.
        let bare = json!({"type": "session.start", "data": {"startTime": "t"}});
        assert!(!CopilotCli.sniff(&bare));
        assert!(CopilotCli
            .decline(&bare)
            .is_some_and(|r| r.contains("sessionId")));
        let foreign = json!({"type": "user.message", "data": {}, "sessionId": "s"});
        assert!(!CopilotCli.sniff(&foreign));
        assert!(CopilotCli
            .decline(&foreign)
            .is_some_and(|r| r.contains("sessionId")));
        let text = json!({"type": "assistant.message", "data": "hi"});
        assert!(!CopilotCli.sniff(&text));
        assert!(CopilotCli.decline(&text).is_some());
        // Other formats' typed lines are not events.
        for other in [
            json!({"type": "session", "id": "u", "timestamp": "t", "cwd": "/w"}),
            json!({"type": "message", "data": {}}),
            json!({"type": "progress", "data": {}, "uuid": "u", "sessionId": "s"}),
            json!({"type": "Session.Start", "data": {}}),
        ] {
            assert!(!CopilotCli.sniff(&other), "{other}");
            assert!(CopilotCli.decline(&other).is_none(), "{other}");
        }
    }
}

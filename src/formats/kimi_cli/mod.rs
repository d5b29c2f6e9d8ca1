//! Kimi CLI context files (`~/.kimi/sessions/<work dir>/<session id>.jsonl` before 0.59,
//! `.../<session id>/context.jsonl` after; subagents' files beside or under them, see
//! `files.rs`): one JSON line per message, OpenAI-style (`role`, `content`, `tool_calls`,
//! `tool_call_id`), between pseudo-role lines of Kimi's bookkeeping (`_system_prompt`,
//! `_checkpoint`, `_usage`). One trajectory per file; its steps are built in `steps.rs`. The
//! mapping is in docs/formats/kimi-cli.md.

mod code_log;
mod files;
mod folder;
mod steps;

use std::borrow::Cow;
use std::io;
use std::path::Path;

use serde_json::Value;

use crate::convert::{ConvertOptions, Converter, FormatOptions, LeftOut, Partial, PartialSink};
use crate::formats::bundle::{bundle_node_lines, FileBundle};
use crate::formats::kit::{parse_bundle_node, source_node};
use crate::formats::Format;
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::json::Node;
use crate::model::{JsonObject, Trajectory};
use crate::validate::Diagnostic;

use code_log::{is_code_header, is_code_header_node, CodeLog};
use files::{name_of, spawn_keys, subagent_suffix, Kind, AGENT_ID, TRANSCRIPT_SAVED};
use steps::Built;

/// Reads Kimi CLI context files.
pub struct KimiCli;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &KimiCli,
    side: None,
};

/// The key marking a record built from a context file.
const MARKER: &str = "kimi_cli_context";

/// What a record that is not a context file's bundle is told.
const NOT_A_CONTEXT: &str = "not a Kimi CLI context file (use --from kimi-cli on the file)";

/// True when `line` is one of Kimi's pseudo-role lines, exactly as Kimi writes them: a
/// `_checkpoint` with its whole-number `id`, a `_usage` with its whole-number `token_count`,
/// or a `_system_prompt` with its string `content`, and nothing else.
fn is_pseudo_line(line: &Value) -> bool {
    let Some(fields) = line.as_object() else {
        return false;
    };
    let (key, ok): (&str, fn(&Value) -> bool) = match line["role"].as_str() {
        Some("_checkpoint") => ("id", Value::is_u64),
        Some("_usage") => ("token_count", Value::is_u64),
        Some("_system_prompt") => ("content", Value::is_string),
        _ => return false,
    };
    fields.len() == 2 && line.get(key).is_some_and(ok)
}

/// True when `line` is a line of Kimi Code's `wire.jsonl`, the session's event log: its header
/// `{"type": "metadata", "protocol_version"}`, or an event `{"timestamp", "message": {"type",
/// "payload"}}` (files from before the header).
fn is_wire_line(line: &Value) -> bool {
    (line["type"] == "metadata" && line["protocol_version"].is_string())
        || (line["timestamp"].is_number()
            && line["message"]["type"].is_string()
            && line["message"]["payload"].is_object())
}

/// True when `id` has the shape of Kimi's tool-call ids: the tool's name, a colon and the
/// call's number in the conversation (`Bash:4`, `ReadFile:12`).
fn is_kimi_call_id(id: &str) -> bool {
    id.rsplit_once(':').is_some_and(|(name, n)| {
        !name.is_empty()
            && !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit())
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

/// True when `messages` (a file of bare chat messages with no pseudo-role line among them)
/// are Kimi's: every call id has Kimi's shape, and a result of one of them starts with the
/// `<system>` status block Kimi writes.
fn is_kimi_chat(messages: &[Value]) -> bool {
    let ids: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .map(|c| c["id"].as_str().unwrap_or_default())
        .collect();
    if ids.is_empty() || !ids.iter().all(|id| is_kimi_call_id(id)) {
        return false;
    }
    messages.iter().any(|m| {
        let first = match &m["content"] {
            Value::String(s) => Some(s.as_str()),
            Value::Array(parts) => parts.first().and_then(|p| p["text"].as_str()),
            _ => None,
        };
        m["role"] == "tool"
            && m["tool_call_id"]
                .as_str()
                .is_some_and(|id| ids.contains(&id))
            && first.is_some_and(|t| t.starts_with("<system>"))
    })
}

impl Converter for KimiCli {
    fn name(&self) -> &'static str {
        "kimi-cli"
    }

    fn description(&self) -> &'static str {
        "Kimi CLI context files (~/.kimi/sessions/: <session>.jsonl, context.jsonl, subagents' files): OpenAI-style messages with _checkpoint / _usage / _system_prompt lines; Kimi Code agent logs (~/.kimi-code/sessions/: agents/<agent>/wire.jsonl)"
    }

    /// A file starting with one of Kimi's pseudo-role lines (`is_pseudo_line`): every
    /// context file Kimi writes does (`_checkpoint` 0 before 1.21, `_system_prompt` after).
    /// Or the header of a Kimi Code agent log (`is_code_header`, `code_log.rs`).
    fn sniff(&self, first: &Value) -> bool {
        is_pseudo_line(first) || is_code_header(first)
    }

    /// A file of chat messages that starts with a message (an OpenAI chat to `openai`) is
    /// Kimi's when a pseudo-role line follows, or when its calls have Kimi's ids and its
    /// results Kimi's status block (`is_kimi_chat`).
    fn sniff_chat(&self, messages: &[Value]) -> bool {
        messages.iter().any(is_pseudo_line) || is_kimi_chat(messages)
    }

    fn decline(&self, first: &Value) -> Option<String> {
        (is_wire_line(first) && !is_code_header(first)).then(|| {
            "a Kimi Code wire.jsonl event log (a `metadata` header or `{timestamp, message: {type, payload}}` events), not a context file: convert the session's context.jsonl".to_owned()
        })
    }

    /// A session folder of 0.59 and later (`<session id>/` holding `context.jsonl`, and only
    /// Kimi's files beside it): read whole, its subagents included (`folder.rs`).
    fn claims_path(&self, path: &Path) -> bool {
        folder::is_session_folder(path)
    }

    /// Kimi Code's index files beside its agent logs: a session's `state.json` (beside an
    /// `agents/` folder) and the sessions' `session_index.jsonl` (beside `sessions/`).
    fn beside_conversation(&self, path: &Path) -> Option<&'static str> {
        let dir = path.parent()?;
        match path.file_name()?.to_str()? {
            "state.json" if dir.join("agents").is_dir() => Some(
                "a Kimi Code session's state.json: the agent logs it names (agents/<agent>/wire.jsonl) are read",
            ),
            "session_index.jsonl" if dir.join("sessions").is_dir() => Some(
                "Kimi Code's index of sessions: the agent logs under sessions/ are read",
            ),
            _ => None,
        }
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        let max = opts.run.max_record_bytes;
        if Path::new(path).is_dir() {
            return Some(folder::records(path, max));
        }
        let inputs = opts.inputs.clone();
        Some(boxed(FileBundle::open_with(path, max, MARKER, &mut |_| {
            spawn_keys(path, &inputs, max)
        })))
    }

    fn each_partial(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
        to: &mut PartialSink<'_>,
    ) -> Option<Result<(), Vec<Diagnostic>>> {
        let mut slow = None;
        let bundle = parse_bundle_node(record, &mut slow, MARKER, NOT_A_CONTEXT);
        Some(bundle.and_then(|b| to(to_partial(&b, record)?)))
    }
}

/// A diagnostic of the whole file.
fn refuse(record: &RawRecord, id: Option<&str>, rule: &str, why: &str) -> Vec<Diagnostic> {
    vec![Diagnostic::error(&record.provenance, id, "", rule, why)]
}

/// A list node, or nothing when empty.
fn list<'a>(items: Vec<Node<'a>>) -> Option<Node<'a>> {
    (!items.is_empty()).then_some(Node::Array(items))
}

/// The subagents a session's results name: a `ReadContext` result's "Transcript saved to:
/// `<path>`", an `Agent` result's `agent_id: <id>` line; each with the call and the trajectory
/// id its file converts to (named after this session's id, as `files::name_of` names it).
fn subagents<'a>(built: &Built<'a>, own: &str, kind: &Kind, code: bool) -> Vec<Node<'a>> {
    let mut out = Vec::new();
    if *kind != Kind::Session {
        return out;
    }
    for (step, native, text) in &built.lists.results {
        let called = built.calls.content[*step]
            .tool_call_id()
            .and_then(|id| built.call_names.get(id))
            .map(String::as_str);
        let link = if let Some((_, rest)) = text.split_once(TRANSCRIPT_SAVED) {
            let path = rest
                .split(|c: char| c == '<' || c.is_whitespace())
                .next()
                .unwrap_or_default();
            let file = path.rsplit(['/', '\\']).next().unwrap_or(path);
            let stem = file.strip_suffix(".jsonl").unwrap_or(file);
            let trajectory = match subagent_suffix(stem) {
                Some((_, via, n)) => format!("{own}_{via}_{n}"),
                _ => stem.to_owned(),
            };
            Some(("file", path.to_owned(), trajectory))
        } else if called == Some("Agent") {
            text.lines()
                .find_map(|l| l.trim().strip_prefix(AGENT_ID))
                .map(|agent| {
                    let agent = agent.trim().to_owned();
                    let folder = if code { "agents" } else { "subagents" };
                    let trajectory = format!("{own}/{folder}/{agent}");
                    ("agent_id", agent, trajectory)
                })
        } else {
            None
        };
        if let Some((key, value, trajectory)) = link {
            out.push(Node::object([
                ("tool_call_id", Node::from(native.clone())),
                ("result_step", Node::from(*step as u64)),
                (key, Node::from(value)),
                ("trajectory_id", Node::from(trajectory)),
            ]));
        }
    }
    out
}

fn to_partial<'a>(
    bundle: &'a Node<'a>,
    record: &'a RawRecord,
) -> Result<Partial<'a>, Vec<Diagnostic>> {
    let file = record.provenance.file.as_ref();
    let Some(named) = name_of(file) else {
        return Err(refuse(
            record,
            None,
            "missing-id",
            "a context file holds no session id: its name gives it, and standard input has none (give the file)",
        ));
    };
    let mut built = Built::new(LeftOut::new("details.kimi_cli"));
    let mut lines = bundle_node_lines(bundle).peekable();
    let mut code = lines
        .peek()
        .filter(|(_, first)| is_code_header_node(first))
        .map(|_| CodeLog::new());
    for (line, entry) in lines {
        match &mut code {
            Some(log) => log.line(&mut built, line, entry),
            None => built.line(line, entry),
        }
    }
    if let Some(log) = &mut code {
        log.finish(&mut built);
    }
    built.finish();
    if built.calls.content.is_empty() {
        return Err(refuse(
            record,
            Some(&named.id),
            "empty-trajectory",
            "it holds no message, call or result that ADP can carry",
        ));
    }
    built.calls.left.messages = Some((built.messages_in, built.messages_kept));
    let spawned = subagents(&built, &named.id, &named.kind, code.is_some());
    let mut kimi: Vec<(Cow<'a, str>, Node<'a>)> = Vec::new();
    let mut put = |key: &'static str, value: Option<Node<'a>>| {
        if let Some(v) = value {
            kimi.push((Cow::Borrowed(key), v));
        }
    };
    let (session, file_kind) = match &named.kind {
        Kind::Session => (named.id.clone(), "session"),
        Kind::Rotated { session, .. } => (session.clone(), "rotated"),
        Kind::Subagent { parent, .. } => (parent.clone(), "subagent"),
    };
    put("session_id", Some(Node::from(session.clone())));
    put("file_kind", Some(Node::from(file_kind)));
    match &named.kind {
        Kind::Rotated { index, .. } => put("rotation", Some(Node::from(*index))),
        Kind::Subagent { parent, via, name } => put(
            "agent",
            Some(Node::object([
                (
                    "parent_trajectory_id",
                    match bundle["parent_agent"].as_str() {
                        Some(agent) if agent != "main" => {
                            Node::from(format!("{parent}/agents/{agent}"))
                        }
                        _ => Node::from(parent.clone()),
                    },
                ),
                ("via", Node::from(*via)),
                ("name", Node::from(name.clone())),
                ("spawned_by", bundle["spawned_by"].clone()),
            ])),
        ),
        Kind::Session => {}
    }
    let lists = std::mem::take(&mut built.lists);
    let last_tokens = lists.usage.last().map(|u| u["token_count"].clone());
    put("token_count", last_tokens);
    put(
        "system_prompt_line",
        built.system_prompt_line.map(Node::from),
    );
    if let Some(log) = code {
        for (key, value) in log.header {
            put(key, Some(value));
        }
        put("model", log.model);
        put("first_time", log.first_time);
        put("last_time", log.last_time);
        put("compactions", list(log.compactions));
        put("usage_records", list(log.usage_records));
    }
    put("checkpoints", list(lists.checkpoints));
    put("usage", list(lists.usage));
    put("subagents", list(spawned));
    put("error_results", list(lists.error_results));
    put(
        "unanswered_calls",
        list(std::mem::take(&mut built.calls.unanswered_calls)),
    );
    put("unlinked_results", list(lists.unlinked_results));
    put("extra_fields", list(lists.extra_fields));
    put("unmapped", list(std::mem::take(&mut built.calls.unmapped)));
    put(
        "thinking_signatures",
        (built.signatures > 0).then(|| Node::from(built.signatures)),
    );
    put(
        "blank_texts",
        (built.blank_texts > 0).then(|| Node::from(built.blank_texts)),
    );
    let mut source = source_node(
        "kimi-cli",
        record,
        Node::object([("session_id", Node::from(session))]),
    );
    built.calls.left.add_to_node(&mut source);
    Ok(Partial {
        trajectory: Trajectory::new(named.id, built.calls.content, JsonObject::new()),
        tail: vec![("source", source), ("kimi_cli", Node::Object(kimi))],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sniffs_the_pseudo_role_lines_only() {
        assert!(KimiCli.sniff(&json!({"role": "_checkpoint", "id": 0})));
        assert!(KimiCli.sniff(&json!({"role": "_usage", "token_count": 4504})));
        assert!(KimiCli.sniff(&json!({"role": "_system_prompt", "content": "You are Kimi."})));
        assert!(!KimiCli.sniff(&json!({"role": "_checkpoint", "id": "0"})));
        assert!(!KimiCli.sniff(&json!({"role": "_checkpoint", "id": 0, "x": 1})));
        assert!(!KimiCli.sniff(&json!({"role": "_usage"})));
        assert!(!KimiCli.sniff(&json!({"role": "user", "content": "hi"})));
        // Kimi Code's event log is declined with a word on what to give instead.
        for wire in [
            json!({"type": "metadata", "protocol_version": "1.9"}),
            json!({"timestamp": 1770000000.5, "message": {"type": "TurnBegin", "payload": {"user_input": "hi"}}}),
        ] {
            assert!(!KimiCli.sniff(&wire));
            assert!(KimiCli
                .decline(&wire)
                .is_some_and(|w| w.contains("wire.jsonl")));
        }
        assert!(KimiCli
            .decline(&json!({"role": "user", "content": "hi"}))
            .is_none());
        // Kimi Code's agent log (protocol 1.4 on) is read: its header has `created_at`.
        let code =
            json!({"type": "metadata", "protocol_version": "1.4", "created_at": 1785751200000u64});
        assert!(KimiCli.sniff(&code) && KimiCli.decline(&code).is_none());
    }

    #[test]
    fn a_chat_is_kimis_by_its_call_ids_and_status_blocks() {
        let call = json!({"role": "assistant", "content": [], "tool_calls": [
            {"type": "function", "id": "Shell:0", "function": {"name": "Shell", "arguments": "{}"}}]});
        let result = json!({"role": "tool", "tool_call_id": "Shell:0",
            "content": [{"type": "text", "text": "<system>Command executed successfully.</system>"}]});
        let user = json!({"role": "user", "content": "hi"});
        assert!(KimiCli.sniff_chat(&[user.clone(), call.clone(), result.clone()]));
        assert!(KimiCli.sniff_chat(&[user.clone(), json!({"role": "_usage", "token_count": 9})]));
        // OpenAI's own ids, or results without the status block, are not Kimi's.
        let mut openai_call = call.clone();
        openai_call["tool_calls"][0]["id"] = json!("call_abc123");
        let mut openai_result = result.clone();
        openai_result["tool_call_id"] = json!("call_abc123");
        assert!(!KimiCli.sniff_chat(&[user.clone(), openai_call, openai_result]));
        let plain = json!({"role": "tool", "tool_call_id": "Shell:0", "content": "ok"});
        assert!(!KimiCli.sniff_chat(&[user, call, plain]));
        assert!(
            is_kimi_call_id("StrReplaceFile:11")
                && !is_kimi_call_id("a:b")
                && !is_kimi_call_id(":1")
        );
    }
}

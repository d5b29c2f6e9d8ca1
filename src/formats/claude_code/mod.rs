//! Claude Code sessions: one JSON-lines file per session, one trajectory per file. The main
//! chain is followed through `parentUuid` (sidechains stay out), the lines of one assistant
//! response (one per content block, sharing `message.id`) are merged, and `tool_use` /
//! `tool_result` blocks are linked by id. The mapping is in docs/formats/claude-code.md.

use std::collections::{HashMap, HashSet};
use std::io;

use serde_json::{json, Value};

use crate::convert::{ConvertOptions, Converter, FormatOptions};
use crate::formats::bundle::{bundle_lines, FileBundle};
use crate::formats::kit::{file_stem, has_keys, parse_bundle, source_details};
use crate::formats::Format;
use crate::ingest::{RawRecord, RecordSource};
use crate::model::links::unlink_unanswered;
use crate::model::{AdpVersion, JsonObject, Source, Step, Trajectory};
use crate::validate::Diagnostic;

/// Reads Claude Code session files.
pub struct ClaudeCode;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &ClaudeCode,
    side: None,
};

impl Converter for ClaudeCode {
    fn name(&self) -> &'static str {
        "claude-code"
    }

    fn description(&self) -> &'static str {
        "Claude Code session JSONL (one file per session; blocks merged, main chain followed)"
    }

    fn sniff(&self, first: &Value) -> bool {
        first.get("type").is_some()
            && (has_keys(first, &["sessionId"]) || has_keys(first, &["leafUuid"]))
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        Some(
            FileBundle::open(path, opts.run.max_record_bytes, "claude_code_session")
                .map(|s| Box::new(s) as Box<dyn RecordSource>),
        )
    }

    fn convert(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        let bundle = parse_bundle(
            record,
            "claude_code_session",
            "not a Claude Code session (use --from claude-code on the session file)",
        )?;
        to_trajectory(&bundle, record).map(|t| vec![(t, AdpVersion::V1_5)])
    }
}

/// A line of the main chain.
struct Entry<'a> {
    line: u64,
    value: &'a Value,
}

/// The entries of the main chain, in order: from the last non-sidechain user or assistant
/// entry with a uuid back through `parentUuid` to the root. Also returns the uuids left out.
fn main_chain(lines: &[Value]) -> (Vec<Entry<'_>>, Vec<String>) {
    let conversational = |v: &Value| matches!(v["type"].as_str(), Some("user" | "assistant"));
    let by_uuid: HashMap<&str, (u64, &Value)> = lines
        .iter()
        .filter_map(|l| {
            let e = &l["entry"];
            e["uuid"]
                .as_str()
                .map(|u| (u, (l["line"].as_u64().unwrap_or(0), e)))
        })
        .collect();
    let leaf = lines
        .iter()
        .rev()
        .map(|l| &l["entry"])
        .find(|e| conversational(e) && e["isSidechain"] != true && e["uuid"].is_string());
    let mut chain = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut cursor = leaf.and_then(|e| e["uuid"].as_str());
    while let Some(uuid) = cursor {
        if !seen.insert(uuid) {
            break;
        }
        let Some(&(line, value)) = by_uuid.get(uuid) else {
            break;
        };
        chain.push(Entry { line, value });
        cursor = value["parentUuid"].as_str();
    }
    chain.reverse();
    let left_out = lines
        .iter()
        .map(|l| &l["entry"])
        .filter(|e| conversational(e))
        .filter_map(|e| e["uuid"].as_str())
        .filter(|u| !seen.contains(u))
        .map(str::to_owned)
        .collect();
    (
        chain
            .into_iter()
            .filter(|e| conversational(e.value))
            .collect(),
        left_out,
    )
}

/// Text of a `tool_result`'s content (a string, or text blocks joined by newlines).
fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A `tool_use` block as an action: `Bash` with only a command (and its description) is bash
/// code; anything else an api action with the input as kwargs.
fn tool_action(block: &Value) -> Step {
    let name = block["name"].as_str().unwrap_or_default();
    let input = block["input"].as_object().cloned().unwrap_or_default();
    let id = block["id"].as_str().unwrap_or_default();
    let bash_only = name == "Bash"
        && input.keys().all(|k| k == "command" || k == "description")
        && input.get("command").is_some_and(Value::is_string);
    let step = if bash_only {
        let command = input
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let description = input
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned);
        Step::code("bash", command, description)
    } else {
        Step::api(name, input, None)
    };
    step.with_tool_call_id(id)
}

/// The session id: the first non-empty `sessionId`.
fn session_id(lines: &[Value]) -> Option<String> {
    lines
        .iter()
        .filter_map(|l| l["entry"]["sessionId"].as_str())
        .find(|s| !s.is_empty())
        .map(str::to_owned)
}

/// What could not be mapped, kept in `details.claude_code.unmapped`: the entry's line, a JSON
/// pointer into the entry, why, and the value itself.
struct Unmapped(Vec<Value>);

impl Unmapped {
    fn keep(&mut self, line: u64, pointer: &str, reason: String, value: &Value) {
        self.0
            .push(json!({"line": line, "pointer": pointer, "reason": reason, "value": value}));
    }
}

/// The blocks of a message's `content` with their pointers: a list's elements (a string in it
/// is a text block), or one block given alone as an object; `None` for anything else.
fn content_blocks(content: &Value) -> Option<Vec<(String, Value)>> {
    let block = |b: &Value| match b {
        Value::String(s) => json!({"type": "text", "text": s}),
        other => other.clone(),
    };
    match content {
        Value::String(s) => Some(vec![(
            "/message/content".to_owned(),
            json!({"type": "text", "text": s}),
        )]),
        Value::Array(b) => Some(
            b.iter()
                .enumerate()
                .map(|(k, b)| (format!("/message/content/{k}"), block(b)))
                .collect(),
        ),
        Value::Object(_) => Some(vec![("/message/content".to_owned(), content.clone())]),
        _ => None,
    }
}

/// The reason a block of type `kind` is not mapped.
fn unmapped_block(kind: &Value) -> String {
    match kind.as_str() {
        Some(k) => format!("a {k:?} block is not mapped"),
        None => "a block without a string `type` is not mapped".to_owned(),
    }
}

fn to_trajectory(bundle: &Value, record: &RawRecord) -> Result<Trajectory, Vec<Diagnostic>> {
    let lines = bundle["lines"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let (chain, left_out) = main_chain(lines);
    let session = session_id(lines);
    let Some(id) = session.clone().or_else(|| {
        (record.provenance.file.as_ref() != "-").then(|| file_stem(&record.provenance.file))
    }) else {
        return Err(vec![Diagnostic::error(
            &record.provenance,
            None,
            "/sessionId",
            "missing-id",
            "no entry has a non-empty sessionId, and there is no file name to use instead",
        )]);
    };
    let mut unmapped = Unmapped(Vec::new());
    for (line, e) in bundle_lines(bundle) {
        match e["type"].as_str() {
            Some("user" | "assistant") if e["uuid"].is_string() => {}
            Some("user" | "assistant") => unmapped.keep(
                line,
                "/uuid",
                "a turn without a string uuid cannot be placed on the main chain".into(),
                e,
            ),
            Some("summary") => {}
            Some(kind) => unmapped.keep(line, "", format!("a {kind:?} entry is not a turn"), e),
            None => unmapped.keep(line, "/type", "an entry without a string type".into(), e),
        }
    }
    let fail = |line: u64, pointer: &str, message: String| {
        let mut d = Diagnostic::error(
            &record.provenance,
            Some(&id),
            pointer,
            "session-structure",
            message,
        );
        d.line = line;
        vec![d]
    };
    let mut content: Vec<Step> = Vec::new();
    let mut tools: HashMap<String, String> = HashMap::new();
    let mut error_results: Vec<Value> = Vec::new();
    let mut finished_messages: HashSet<String> = HashSet::new();
    let mut current_message: Option<String> = None;
    let mut pending_thought: Option<String> = None;
    let mut pending_text: Option<String> = None;
    let flush_text =
        |content: &mut Vec<Step>, text: &mut Option<String>, thought: &mut Option<String>| {
            if let Some(t) = text.take() {
                let mut m = Step::message(t, None);
                m.set_thought(None, thought.take());
                content.push(m);
            }
        };
    for e in &chain {
        let v = e.value;
        let message = &v["message"];
        if v["type"] == "assistant" {
            let mid = message["id"].as_str().map(str::to_owned);
            if mid != current_message {
                if let Some(prev) = current_message.take() {
                    finished_messages.insert(prev);
                }
                if let Some(m) = &mid {
                    if finished_messages.contains(m) {
                        return Err(fail(e.line, "/message/id", format!(
                            "blocks of assistant message {m:?} are interleaved with other messages; a response's lines must be consecutive"
                        )));
                    }
                }
                current_message = mid;
            }
            let Some(blocks) = content_blocks(&message["content"]) else {
                unmapped.keep(
                    e.line,
                    "/message/content",
                    "content is neither a string nor content blocks".into(),
                    &message["content"],
                );
                continue;
            };
            for (pointer, b) in blocks {
                match b["type"].as_str().unwrap_or_default() {
                    "thinking" if b["thinking"].is_string() => {
                        let t = b["thinking"].as_str().unwrap_or_default();
                        pending_thought = Some(match pending_thought.take() {
                            Some(prev) => format!("{prev}\n\n{t}"),
                            None => t.to_owned(),
                        });
                    }
                    "text" if b["text"].is_string() => {
                        flush_text(&mut content, &mut pending_text, &mut pending_thought);
                        pending_text = b["text"].as_str().map(str::to_owned);
                    }
                    "tool_use" => {
                        let mut step = tool_action(&b);
                        let mut description = pending_text.take();
                        if let Step::CodeAction(c) = &step {
                            // A Bash call carries its own description; the text before it
                            // stays a message of its own.
                            if c.description.is_some() {
                                if let Some(d) = description.take() {
                                    content.push(Step::message(d, None));
                                }
                                description = c.description.clone();
                            }
                        }
                        step.set_thought(description, pending_thought.take());
                        tools.insert(
                            b["id"].as_str().unwrap_or_default().to_owned(),
                            b["name"].as_str().unwrap_or_default().to_owned(),
                        );
                        content.push(step);
                    }
                    _ => unmapped.keep(e.line, &pointer, unmapped_block(&b["type"]), &b),
                }
            }
            continue;
        }
        flush_text(&mut content, &mut pending_text, &mut pending_thought);
        // A tool's result may be written between the lines of the response that called it
        // (the tool runs while the response streams): the response is not over yet.
        match &message["content"] {
            Value::String(s) => {
                if v["isMeta"] == true {
                    content.push(Step::environment_text(Some("meta".into()), s.clone()));
                } else {
                    content.push(Step::user_text(s.clone()));
                }
            }
            other => {
                let Some(blocks) = content_blocks(other) else {
                    unmapped.keep(
                        e.line,
                        "/message/content",
                        "content is neither a string nor content blocks".into(),
                        other,
                    );
                    continue;
                };
                for (pointer, b) in blocks {
                    match b["type"].as_str().unwrap_or_default() {
                        "tool_result" => {
                            let call = b["tool_use_id"].as_str().unwrap_or_default();
                            let Some(name) = tools.get(call) else {
                                return Err(fail(e.line, &format!("{pointer}/tool_use_id"), format!(
                                    "tool_result for {call:?}, which no earlier tool_use on the main chain made"
                                )));
                            };
                            if b["is_error"] == true {
                                error_results.push(json!(call));
                            }
                            content.push(
                                Step::environment_text(
                                    Some(name.clone()),
                                    result_text(&b["content"]),
                                )
                                .with_tool_call_id(call),
                            );
                        }
                        "text" if b["text"].is_string() => {
                            content.push(Step::user_text(b["text"].as_str().unwrap_or_default()))
                        }
                        "image" => {
                            let src = &b["source"];
                            let uri = match (src["media_type"].as_str(), src["data"].as_str()) {
                                (Some(t), Some(d)) => format!("data:{t};base64,{d}"),
                                _ => src["url"]
                                    .as_str()
                                    .or(src["path"].as_str())
                                    .unwrap_or_default()
                                    .to_owned(),
                            };
                            content.push(Step::image(uri, Source::User));
                        }
                        _ => unmapped.keep(e.line, &pointer, unmapped_block(&b["type"]), &b),
                    }
                }
            }
        }
    }
    flush_text(&mut content, &mut pending_text, &mut pending_thought);
    unlink_unanswered(&mut content);
    let first = chain.first().map(|e| e.value).unwrap_or(&Value::Null);
    let models: Vec<Value> = {
        let mut m: Vec<&str> = chain
            .iter()
            .filter_map(|e| e.value["message"]["model"].as_str())
            .collect();
        m.dedup();
        m.into_iter().map(|s| json!(s)).collect()
    };
    let summaries: Vec<Value> = lines
        .iter()
        .map(|l| &l["entry"])
        .filter(|e| e["type"] == "summary")
        .map(|e| e["summary"].clone())
        .collect();
    let mut details = JsonObject::new();
    details.insert(
        "source".into(),
        source_details("claude-code", record, json!({"session_id": session})),
    );
    details.insert(
        "claude_code".into(),
        json!({
            "cwd": first["cwd"],
            "version": first["version"],
            "git_branch": first["gitBranch"],
            "models": models,
            "summaries": summaries,
            "error_results": error_results,
            "main_chain_lines": chain.iter().map(|e| e.line).collect::<Vec<_>>(),
            "left_out_uuids": left_out,
        }),
    );
    if !unmapped.0.is_empty() {
        if let Some(Value::Object(cc)) = details.get_mut("claude_code") {
            cc.insert("unmapped".into(), Value::Array(unmapped.0));
        }
    }
    Ok(Trajectory::new(id, content, details))
}

//! Letta Code transcripts (`~/.letta/transcripts/<agent id>/<conversation id>/transcript.jsonl`):
//! one JSON row per line, `{kind, ..., captured_at, source_line_id?, source_message_id?}`, of
//! kind `user`, `assistant`, `reasoning` or `error` (`text`), or `tool_call` (`name`,
//! `argsText`, and the call's result in the same row: `resultText`, `resultOk`). One
//! trajectory per file; the mapping is in docs/formats/letta-code.md.

use std::io;

use serde_json::{json, Map, Value};

use crate::convert::{ConvertOptions, Converter, FormatOptions, LeftOut};
use crate::formats::bundle::{bundle_node_lines, FileBundle};
use crate::formats::chat::{described_call_step, extend_details, CodeTool};
use crate::formats::kit::LinkIds;
use crate::formats::kit::{file_stem, node_fields_except, parse_bundle_node, source_details};
use crate::formats::Format;
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::json::Node;
use crate::model::{AdpVersion, Step, Trajectory};
use crate::validate::Diagnostic;

/// Reads Letta Code transcripts.
pub struct LettaCode;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &LettaCode,
    side: None,
};

/// The key marking a record built from a transcript file.
const MARKER: &str = "letta_code_transcript";

/// What a record that is not a transcript bundle is told.
const NOT_A_TRANSCRIPT: &str =
    "not a Letta Code transcript (use --from letta-code on the transcript.jsonl file)";

/// The kinds of a transcript's rows.
const KINDS: &[&str] = &["user", "assistant", "reasoning", "error", "tool_call"];

/// The fields of a row that its step holds.
const MAPPED: &[&str] = &["kind", "text", "name", "argsText", "resultText", "resultOk"];

/// Letta Code's shell tools: a call whose arguments are its command alone (and a
/// `description`) is bash code.
const CODE_TOOLS: &[CodeTool] = &[
    ("Bash", "command", "bash"),
    ("bash", "command", "bash"),
    ("shell_command", "command", "bash"),
    ("run_shell_command", "command", "bash"),
];

impl Converter for LettaCode {
    fn name(&self) -> &'static str {
        "letta-code"
    }

    fn description(&self) -> &'static str {
        "Letta Code transcripts (~/.letta/transcripts/<agent>/<conversation>/transcript.jsonl): rows of kind user, reasoning, assistant, error and tool_call (call and result in one row)"
    }

    /// A row: a `kind` among Letta Code's, a string `captured_at`, and the kind's own field
    /// (`text`, or a tool call's `name`).
    fn sniff(&self, first: &Value) -> bool {
        let Some(kind) = first["kind"].as_str().filter(|k| KINDS.contains(k)) else {
            return false;
        };
        first["captured_at"].is_string()
            && match kind {
                "tool_call" => first["name"].is_string(),
                _ => first["text"].is_string(),
            }
            && first.get("type").is_none()
            && first.get("role").is_none()
    }

    fn decline(&self, first: &Value) -> Option<String> {
        let kind = first["kind"].as_str().filter(|k| KINDS.contains(k))?;
        if self.sniff(first) {
            return None;
        }
        Some(if !first["captured_at"].is_string() {
            format!("a row of kind {kind:?} without a string `captured_at`")
        } else if first.get("type").is_some() || first.get("role").is_some() {
            "a `kind` beside a `type` or `role` of another format".to_owned()
        } else {
            format!("a row of kind {kind:?} without its `text` or `name`")
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

    fn convert(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        let mut slow = None;
        let bundle = parse_bundle_node(record, &mut slow, MARKER, NOT_A_TRANSCRIPT)?;
        Ok(vec![(transcript(&bundle, record)?, AdpVersion::V1_5)])
    }
}

/// The transcript's id and its agent: a `transcript.jsonl` is named after its folders,
/// `<agent id>/<conversation id>`; any other file after its name.
fn transcript_id(file: &str) -> (String, Option<(String, String)>) {
    let mut parts = file.rsplit('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(name), Some(conv), Some(agent))
            if file_stem(name) == "transcript" && !conv.is_empty() && !agent.is_empty() =>
        {
            (
                format!("{agent}/{conv}"),
                Some((agent.to_owned(), conv.to_owned())),
            )
        }
        _ => (file_stem(file), None),
    }
}

/// The steps of a transcript's rows and what `details.letta_code` keeps of them.
#[derive(Default)]
struct Built {
    content: Vec<Step>,
    /// Reasoning waiting for the assistant text or call after it.
    reasoning: Option<String>,
    ids: LinkIds,
    rows: Vec<Value>,
    error_results: Vec<Value>,
    unanswered_calls: Vec<Value>,
    unmapped: Vec<Value>,
    kept: u64,
    /// The last step's call when it has no result: its link id, tool name and entry in
    /// `unanswered_calls`.
    open: Option<(String, String, usize)>,
}

impl Built {
    /// Appends an action.
    fn act(&mut self, step: Step) {
        self.open = None;
        self.content.push(step);
    }

    /// Appends an observation. A call with no result right before it first gets an empty
    /// result: ADP links a tool action followed by an observation (the call stays listed in
    /// `unanswered_calls`, with `empty_result`).
    fn observe(&mut self, step: Step) {
        if let Some((id, name, entry)) = self.open.take() {
            let call = self.content.len() - 1;
            *self.content[call].tool_call_id_mut() = Some(id.clone());
            if let Some(e) = self.unanswered_calls.get_mut(entry) {
                e["empty_result"] = json!(self.content.len());
            }
            self.content
                .push(Step::environment_text(Some(name), "").with_tool_call_id(id));
        }
        self.content.push(step);
    }

    /// Writes reasoning no text or call followed as a message of its own.
    fn flush_reasoning(&mut self) {
        if let Some(r) = self.reasoning.take() {
            let mut step = Step::message("", None);
            step.set_thought(None, Some(r));
            self.act(step);
        }
    }

    fn row(&mut self, line: u64, row: &Node, left: &mut LeftOut) {
        let at = self.content.len();
        let text = row["text"].as_str();
        match (row["kind"].as_str(), text) {
            (Some("user"), Some(t)) => {
                self.flush_reasoning();
                self.observe(Step::user_text(t));
            }
            (Some("assistant"), Some(t)) => {
                let mut step = Step::message(t, None);
                step.set_thought(None, self.reasoning.take());
                self.act(step);
            }
            (Some("reasoning"), Some(t)) => {
                self.reasoning = Some(match self.reasoning.take() {
                    Some(prev) => format!("{prev}\n\n{t}"),
                    None => t.to_owned(),
                });
                self.kept += 1;
                return self.note(at, line, row);
            }
            (Some("error"), Some(t)) => {
                self.flush_reasoning();
                self.observe(Step::environment_text(Some("error".into()), t));
            }
            (Some("tool_call"), _) => self.call(line, row, left),
            (kind, _) => {
                let reason = match kind {
                    Some(k) => format!("a row of kind {k:?} without a string text"),
                    None => "a row without a string kind".to_owned(),
                };
                left.unmapped(line, "/kind", reason.clone());
                self.unmapped
                    .push(json!({"line": line, "reason": reason, "value": row.to_value()}));
                return;
            }
        }
        self.kept += 1;
        self.note(at, line, row);
    }

    /// Keeps the row's fields no step holds (`captured_at`, its ids), with its step and line.
    fn note(&mut self, at: usize, line: u64, row: &Node) {
        let mut note = Map::new();
        note.insert("step".into(), json!(at));
        note.insert("line".into(), json!(line));
        note.extend(
            node_fields_except(row, MAPPED)
                .into_iter()
                .map(|(k, v)| (k.into_owned(), v.to_value())),
        );
        self.rows.push(Value::Object(note));
    }

    /// A tool call and, in the same row, its result.
    fn call(&mut self, line: u64, row: &Node, left: &mut LeftOut) {
        let name = row["name"].as_str().unwrap_or_default();
        let args = row["argsText"].as_str().unwrap_or_default();
        let kwargs = match serde_json::from_str::<Value>(args) {
            _ if args.trim().is_empty() => Map::new(),
            Ok(Value::Object(o)) => o,
            _ => {
                let reason = "argsText does not hold a JSON object".to_owned();
                left.unmapped(line, "/argsText", reason.clone());
                self.unmapped.push(
                    json!({"line": line, "pointer": "/argsText", "reason": reason, "value": args}),
                );
                Map::new()
            }
        };
        let mut step = described_call_step(name, kwargs, CODE_TOOLS);
        let description = match &step {
            Step::CodeAction(c) => c.description.clone(),
            _ => None,
        };
        step.set_thought(description, self.reasoning.take());
        let base = match row["source_line_id"].as_str() {
            Some(id) if !id.is_empty() => id.to_owned(),
            _ => format!("letta-call:{line}"),
        };
        let (id, _) = self.ids.unique(base);
        let answered = !row["resultText"].is_null() || row["resultOk"].as_bool().is_some();
        if !answered {
            self.unanswered_calls
                .push(json!({"step": self.content.len(), "id": row["source_line_id"].to_value()}));
            self.act(step);
            self.open = Some((id, name.to_owned(), self.unanswered_calls.len() - 1));
            return;
        }
        self.act(step.with_tool_call_id(id.clone()));
        let result = match &row["resultText"] {
            Node::String(s) => s.clone().into_owned(),
            Node::Null => String::new(),
            other => other.to_string(),
        };
        if row["resultOk"].as_bool() == Some(false) {
            self.error_results.push(json!(id));
        }
        self.content
            .push(Step::environment_text(Some(name.to_owned()), result).with_tool_call_id(id));
    }
}

fn transcript(bundle: &Node, record: &RawRecord) -> Result<Trajectory, Vec<Diagnostic>> {
    let (id, names) = transcript_id(record.provenance.file.as_ref());
    let mut left = LeftOut::new("details.letta_code");
    let mut b = Built::default();
    let mut stamps: Vec<&str> = Vec::new();
    let mut rows = 0;
    for (line, row) in bundle_node_lines(bundle) {
        rows += 1;
        if let Some(t) = row["captured_at"].as_str() {
            stamps.push(t);
        }
        b.row(line, row, &mut left);
    }
    // Reasoning at the very end, with nothing after it: kept as a message's reasoning.
    b.flush_reasoning();
    if b.content.is_empty() {
        return Err(vec![Diagnostic::error(
            &record.provenance,
            Some(&id),
            "",
            "empty-trajectory",
            "its rows hold no message, call or result that ADP can carry",
        )]);
    }
    let messages = rows
        - b.unmapped
            .iter()
            .filter(|u| u.get("pointer").is_none())
            .count();
    left.messages = Some((messages as u64, b.kept));
    let mut d = Map::new();
    if let Some((agent, conv)) = names {
        d.insert("agent_id".into(), json!(agent));
        d.insert("conversation_id".into(), json!(conv));
    }
    if let (Some(f), Some(l)) = (stamps.first(), stamps.last()) {
        d.insert("timestamps".into(), json!({"first": f, "last": l}));
    }
    for (key, list) in [
        ("rows", b.rows),
        ("error_results", b.error_results),
        ("unanswered_calls", b.unanswered_calls),
        ("unmapped", b.unmapped),
    ] {
        if !list.is_empty() {
            d.insert(key.into(), Value::Array(list));
        }
    }
    let mut source = source_details("letta-code", record, json!({"transcript_id": id}));
    left.add_to(&mut source);
    let mut details = Map::new();
    details.insert("source".into(), source);
    let mut traj = Trajectory::new(id, b.content, details);
    extend_details(&mut traj.details, "letta_code", d);
    Ok(traj)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_rows_by_their_kind_and_capture_time() {
        assert!(LettaCode.sniff(&json!({"kind": "user", "text": "hi", "captured_at": "t"})));
        assert!(LettaCode.sniff(&json!({"kind": "tool_call", "name": "Read", "captured_at": "t"})));
        let bare = json!({"kind": "user", "text": "hi"});
        assert!(!LettaCode.sniff(&bare));
        assert!(LettaCode
            .decline(&bare)
            .is_some_and(|r| r.contains("captured_at")));
        assert!(!LettaCode.sniff(&json!({"kind": "note", "text": "x", "captured_at": "t"})));
        assert_eq!(
            transcript_id("/h/.letta/transcripts/agent-1/conv-2/transcript.jsonl"),
            (
                "agent-1/conv-2".to_owned(),
                Some(("agent-1".to_owned(), "conv-2".to_owned()))
            )
        );
    }
}

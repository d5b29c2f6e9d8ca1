//! Letta Code transcripts (`~/.letta/transcripts/<agent id>/<conversation id>/transcript.jsonl`):
//! one JSON row per line, `{kind, ..., captured_at, source_line_id?, source_message_id?}`, of
//! kind `user`, `assistant`, `reasoning` or `error` (`text`), or `tool_call` (`name`,
//! `argsText`, and the call's result in the same row: `resultText`, `resultOk`). One
//! trajectory per file; the mapping is in docs/formats/letta-code.md.

use std::borrow::Cow;
use std::io;

use serde_json::{Map, Value};

use crate::convert::{ConvertOptions, Converter, FormatOptions, LeftOut, Partial, PartialSink};
use crate::formats::bundle::{bundle_node_lines, FileBundle};
use crate::formats::chat::{described_call_step, CodeTool};
use crate::formats::kit::LinkIds;
use crate::formats::kit::{file_stem, node_fields_except, parse_bundle_node, source_node};
use crate::formats::Format;
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::json::Node;
use crate::model::{JsonObject, Step, Trajectory};
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

    fn each_partial(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
        to: &mut PartialSink<'_>,
    ) -> Option<Result<(), Vec<Diagnostic>>> {
        let mut slow = None;
        let bundle = parse_bundle_node(record, &mut slow, MARKER, NOT_A_TRANSCRIPT);
        Some(bundle.and_then(|b| to(transcript(&b, record)?)))
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

/// The steps of a transcript's rows and what `details.letta_code` keeps of them (as nodes
/// borrowed from the transcript: they are written as they are).
#[derive(Default)]
struct Built<'a> {
    content: Vec<Step>,
    /// Reasoning waiting for the assistant text or call after it.
    reasoning: Option<String>,
    ids: LinkIds,
    rows: Vec<Node<'a>>,
    error_results: Vec<Node<'a>>,
    unanswered_calls: Vec<Node<'a>>,
    unmapped: Vec<Node<'a>>,
    kept: u64,
    /// The last step's call when it has no result: its link id, tool name and entry in
    /// `unanswered_calls`.
    open: Option<(String, String, usize)>,
}

impl<'a> Built<'a> {
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
                e.insert("empty_result", Node::from(self.content.len() as u64));
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

    fn row(&mut self, line: u64, row: &Node<'a>, left: &mut LeftOut) {
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
                self.unmapped.push(Node::object([
                    ("line", Node::from(line)),
                    ("reason", Node::from(reason)),
                    ("value", row.clone()),
                ]));
                return;
            }
        }
        self.kept += 1;
        self.note(at, line, row);
    }

    /// Keeps the row's fields no step holds (`captured_at`, its ids), with its step and line.
    fn note(&mut self, at: usize, line: u64, row: &Node<'a>) {
        let mut note = Node::object([("step", Node::from(at as u64)), ("line", Node::from(line))]);
        for (k, v) in node_fields_except(row, MAPPED) {
            note.insert(k, v);
        }
        self.rows.push(note);
    }

    /// A tool call and, in the same row, its result.
    fn call(&mut self, line: u64, row: &Node<'a>, left: &mut LeftOut) {
        let name = row["name"].as_str().unwrap_or_default();
        let args = row["argsText"].as_str().unwrap_or_default();
        let kwargs = match serde_json::from_str::<Value>(args) {
            _ if args.trim().is_empty() => Map::new(),
            Ok(Value::Object(o)) => o,
            _ => {
                let reason = "argsText does not hold a JSON object".to_owned();
                left.unmapped(line, "/argsText", reason.clone());
                self.unmapped.push(Node::object([
                    ("line", Node::from(line)),
                    ("pointer", Node::from("/argsText")),
                    ("reason", Node::from(reason)),
                    ("value", Node::from(args.to_owned())),
                ]));
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
            self.unanswered_calls.push(Node::object([
                ("step", Node::from(self.content.len() as u64)),
                ("id", row["source_line_id"].clone()),
            ]));
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
            self.error_results.push(Node::from(id.clone()));
        }
        self.content
            .push(Step::environment_text(Some(name.to_owned()), result).with_tool_call_id(id));
    }
}

fn transcript<'a>(
    bundle: &'a Node<'a>,
    record: &'a RawRecord,
) -> Result<Partial<'a>, Vec<Diagnostic>> {
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
    let mut d: Vec<(Cow<'a, str>, Node<'a>)> = Vec::new();
    if let Some((agent, conv)) = names {
        d.push((Cow::Borrowed("agent_id"), Node::from(agent)));
        d.push((Cow::Borrowed("conversation_id"), Node::from(conv)));
    }
    if let (Some(f), Some(l)) = (stamps.first(), stamps.last()) {
        let stamps = Node::object([("first", Node::from(*f)), ("last", Node::from(*l))]);
        d.push((Cow::Borrowed("timestamps"), stamps));
    }
    for (key, list) in [
        ("rows", b.rows),
        ("error_results", b.error_results),
        ("unanswered_calls", b.unanswered_calls),
        ("unmapped", b.unmapped),
    ] {
        if !list.is_empty() {
            d.push((Cow::Borrowed(key), Node::Array(list)));
        }
    }
    let native = Node::object([("transcript_id", Node::from(id.clone()))]);
    let mut source = source_node("letta-code", record, native);
    left.add_to_node(&mut source);
    let mut tail = vec![("source", source)];
    if !d.is_empty() {
        tail.push(("letta_code", Node::Object(d)));
    }
    Ok(Partial {
        trajectory: Trajectory::new(id, b.content, JsonObject::new()),
        tail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

//! Kimi Code's agent log (wire protocol 1.4 and later, `.kimi-code/sessions/wd_<project>/
//! session_<uuid>/agents/<main|agent-N>/wire.jsonl`): a `metadata` header
//! (`protocol_version`, `created_at` in ms), then flat records `{type, ..., time}` whose
//! types are dot-namespaced (`config.update`, `context.append_message`, ...).
//!
//! The conversation is rebuilt in the shape of a context file's messages and read by
//! [`Built`]: a `context.append_message` is a message (`toolCalls` as `tool_calls`); the
//! `context.append_loop_event` events of a step (`content.part` text or think, `tool.call`)
//! gather into one assistant message, ended by a `tool.result` (a tool message), a message, a
//! step's beginning or end, or a compaction. The system prompt of `config.update` is the system prompt;
//! `context.apply_compaction` is listed in `compactions` and its summary kept as a step;
//! `usage.record` is listed in `usage_records`; the other records are Kimi's bookkeeping,
//! counted as lines left out.

use crate::formats::kit::node_fields_except;
use crate::json::Node;
use crate::model::Step;

use super::steps::Built;

/// True when `first` is the header of a Kimi Code agent log: `{"type": "metadata",
/// "protocol_version", "created_at"}` (Kimi CLI's older `wire.jsonl` has no `created_at`).
pub(super) fn is_code_header(first: &serde_json::Value) -> bool {
    first["type"] == "metadata"
        && first["protocol_version"].is_string()
        && first["created_at"].is_number()
}

/// [`is_code_header`] of a line read as a [`Node`].
pub(super) fn is_code_header_node(first: &Node) -> bool {
    first["type"].as_str() == Some("metadata")
        && first["protocol_version"].as_str().is_some()
        && first["created_at"].is_number()
}

/// The assistant message of a step being gathered: its parts and calls, from `line`.
struct Pending<'a> {
    line: u64,
    content: Vec<Node<'a>>,
    calls: Vec<Node<'a>>,
}

/// Reads an agent log's lines into `built`, and keeps what `details.kimi_cli` says of them.
pub(super) struct CodeLog<'a> {
    pending: Option<Pending<'a>>,
    /// The last system prompt kept (a `config.update` repeating it adds no step).
    prompt: Option<String>,
    pub compactions: Vec<Node<'a>>,
    pub usage_records: Vec<Node<'a>>,
    /// The header's `protocol_version` and `created_at`, and the first and last `time`.
    pub header: Vec<(&'static str, Node<'a>)>,
    pub first_time: Option<Node<'a>>,
    pub last_time: Option<Node<'a>>,
    /// The model of the first `llm.request` or `config.update` that names one.
    pub model: Option<Node<'a>>,
}

/// A text part.
fn text_part<'a>(text: Node<'a>) -> Node<'a> {
    Node::object([("type", Node::from("text")), ("text", text)])
}

/// A call of a log (`{id, name, args}`, or the older `{id, function: {name, arguments}}`) in a
/// context file's shape.
fn call_node<'a>(call: &Node<'a>, id: &Node<'a>) -> Node<'a> {
    let function = if call["function"].is_object() {
        call["function"].clone()
    } else {
        Node::object([
            ("name", call["name"].clone()),
            ("arguments", call["args"].clone()),
        ])
    };
    Node::object([
        ("type", Node::from("function")),
        ("id", id.clone()),
        ("function", function),
    ])
}

impl<'a> CodeLog<'a> {
    pub(super) fn new() -> CodeLog<'a> {
        CodeLog {
            pending: None,
            prompt: None,
            compactions: Vec::new(),
            usage_records: Vec::new(),
            header: Vec::new(),
            first_time: None,
            last_time: None,
            model: None,
        }
    }

    /// The assistant message gathered so far, read as one message.
    fn flush(&mut self, built: &mut Built<'a>) {
        if let Some(p) = self.pending.take() {
            let mut message = vec![
                ("role", Node::from("assistant")),
                ("content", Node::Array(p.content)),
            ];
            if !p.calls.is_empty() {
                message.push(("tool_calls", Node::Array(p.calls)));
            }
            built.line(p.line, &Node::object(message));
        }
    }

    fn pending(&mut self, line: u64) -> &mut Pending<'a> {
        self.pending.get_or_insert_with(|| Pending {
            line,
            content: Vec::new(),
            calls: Vec::new(),
        })
    }

    /// Reads one line of the log.
    pub(super) fn line(&mut self, built: &mut Built<'a>, line: u64, entry: &Node<'a>) {
        let Some(kind) = entry["type"].as_str() else {
            built.calls.left.wrong_type(
                line,
                "/type",
                "a line of a Kimi Code log without a string type",
            );
            return;
        };
        if let Some(t) = entry.get("time").filter(|t| t.is_number()) {
            self.first_time.get_or_insert_with(|| t.clone());
            self.last_time = Some(t.clone());
        }
        match kind {
            "metadata" if self.header.is_empty() => {
                self.header = vec![
                    ("protocol_version", entry["protocol_version"].clone()),
                    ("created_at", entry["created_at"].clone()),
                ];
            }
            "config.update" | "profile.bind" => self.config(built, line, entry),
            "llm.request" => {
                if self.model.is_none() && entry["model"].as_str().is_some() {
                    self.model = Some(entry["model"].clone());
                }
                built.calls.left.lines += 1;
            }
            "context.append_message" => self.message(built, line, entry),
            "context.append_loop_event" => self.loop_event(built, line, entry),
            "context.apply_compaction" => {
                self.flush(built);
                let fields = node_fields_except(entry, &["type"]);
                self.compactions.push(Node::object([
                    ("line", Node::from(line)),
                    ("step", Node::from(built.calls.content.len() as u64)),
                    ("record", Node::Object(fields)),
                ]));
                let summary = entry
                    .get("contextSummary")
                    .or_else(|| entry.get("summary"))
                    .and_then(Node::as_str);
                if let Some(s) = summary {
                    built
                        .calls
                        .content
                        .push(Step::environment_text(Some("compaction".to_owned()), s));
                }
            }
            "usage.record" => {
                self.usage_records.push(Node::object([
                    ("line", Node::from(line)),
                    ("step", Node::from(built.calls.content.len() as u64)),
                    ("model", entry["model"].clone()),
                    ("usage", entry["usage"].clone()),
                    ("time", entry["time"].clone()),
                ]));
            }
            _ => built.calls.left.lines += 1,
        }
    }

    /// A `config.update` (or `profile.bind`): its `systemPrompt`, when it changes, is the
    /// system prompt; its model is kept; the rest is bookkeeping.
    fn config(&mut self, built: &mut Built<'a>, line: u64, entry: &Node<'a>) {
        if self.model.is_none() && entry["modelAlias"].as_str().is_some() {
            self.model = Some(entry["modelAlias"].clone());
        }
        match entry["systemPrompt"].as_str() {
            Some(p) if self.prompt.as_deref() != Some(p) => {
                self.flush(built);
                self.prompt = Some(p.to_owned());
                let prompt = Node::object([
                    ("role", Node::from("_system_prompt")),
                    ("content", entry["systemPrompt"].clone()),
                ]);
                built.line(line, &prompt);
            }
            _ => built.calls.left.lines += 1,
        }
    }

    /// A `context.append_message`: a message as a context file holds it.
    fn message(&mut self, built: &mut Built<'a>, line: u64, entry: &Node<'a>) {
        self.flush(built);
        let m = &entry["message"];
        let mut message = vec![
            ("role", m["role"].clone()),
            ("content", m["content"].clone()),
        ];
        if let Some(calls) = m["toolCalls"].as_array().filter(|c| !c.is_empty()) {
            let calls = calls.iter().map(|c| call_node(c, &c["id"])).collect();
            message.push(("tool_calls", Node::Array(calls)));
        }
        if let Some(id) = m.get("toolCallId").filter(|id| !id.is_null()) {
            message.push(("tool_call_id", id.clone()));
        }
        built.line(line, &Node::object(message));
    }

    /// A `context.append_loop_event`: a step's part, call or result.
    fn loop_event(&mut self, built: &mut Built<'a>, line: u64, entry: &Node<'a>) {
        let event = &entry["event"];
        match event["type"].as_str() {
            Some("content.part") if event["part"].is_object() => {
                let part = event["part"].clone();
                self.pending(line).content.push(part);
            }
            Some("tool.call") => {
                let call = call_node(event, &event["toolCallId"]);
                self.pending(line).calls.push(call);
            }
            Some("tool.result") => {
                self.flush(built);
                let result = &event["result"];
                let mut content = match &result["output"] {
                    Node::Array(parts) => parts.clone(),
                    Node::Null => Vec::new(),
                    output => vec![text_part(output.clone())],
                };
                if let Some(note) = result.get("note").filter(|n| n.as_str().is_some()) {
                    content.push(text_part(note.clone()));
                }
                let at = built.calls.content.len();
                let message = Node::object([
                    ("role", Node::from("tool")),
                    ("tool_call_id", event["toolCallId"].clone()),
                    ("content", Node::Array(content)),
                ]);
                built.line(line, &message);
                let extra = node_fields_except(result, &["output", "isError", "note"]);
                if !extra.is_empty() {
                    built.lists.extra_fields.push(Node::object([
                        ("line", Node::from(line)),
                        ("pointer", Node::from("/event/result")),
                        ("fields", Node::Object(extra)),
                    ]));
                }
                if result["isError"].as_bool() == Some(true) {
                    built.lists.error_results.push(Node::object([
                        ("step", Node::from(at as u64)),
                        ("tool_call_id", event["toolCallId"].clone()),
                        ("status", Node::from("isError")),
                    ]));
                }
            }
            Some("step.begin" | "step.end") => {
                self.flush(built);
                built.calls.left.lines += 1;
            }
            _ => built.calls.left.lines += 1,
        }
    }

    /// Ends the log: the message still gathering is read.
    pub(super) fn finish(&mut self, built: &mut Built<'a>) {
        self.flush(built);
    }
}

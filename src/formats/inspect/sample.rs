//! One Inspect sample (× epoch) as a trajectory: its messages as steps, its scores as reward
//! and outcome, and everything else in `details.inspect`. The mapping is in
//! docs/formats/inspect.md.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use serde_json::{json, Map, Value};

use crate::convert::LeftOut;
use crate::formats::chat::{call_step, system_step, CodeTool};
use crate::formats::kit::{file_stem, node_fields_except};
use crate::json::{Entries, Node};
use crate::model::{JsonObject, Source, Step};

/// Inspect's standard shell and Python tools (`bash(cmd)`, `python(code)`): a call whose only
/// argument is the code is a `code_action` in that language.
pub const CODE_TOOLS: &[CodeTool] = &[("bash", "cmd", "bash"), ("python", "code", "python")];

/// How attachment references look: `attachment://<key>` (and `tc://<key>` before Inspect
/// 0.3.40 or so).
const ATTACHMENT_PROTOCOLS: &[&str] = &["attachment://", "tc://"];

/// A problem with the sample, at a JSON pointer into it.
pub struct Problem {
    /// JSON pointer into the sample.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

fn problem(pointer: impl Into<String>, message: impl Into<String>) -> Problem {
    Problem {
        pointer: pointer.into(),
        message: message.into(),
    }
}

/// What a sample becomes: its steps, the tool specs its model calls listed, and what goes to
/// `details.inspect` besides the sample's own fields.
pub struct Mapped<'a> {
    /// The steps.
    pub content: Vec<Step>,
    /// Tool specs (from the model events), in order of first use.
    pub tools: Vec<Value>,
    /// Notes for `details.inspect`: `message_fields`, `part_fields`, `call_fields`,
    /// `tool_errors`, `unanswered_calls`, `empty_messages`, built as nodes (they are written,
    /// never read).
    pub notes: Entries<'a>,
    /// What no step holds, counted (problems on line 0, at pointers in the sample: the caller
    /// places them).
    pub left: LeftOut,
}

/// Resolves attachment references (`attachment://<key>`) in strings, from the sample's
/// `attachments` (the text ones, by key).
pub struct Attachments<'s>(HashMap<&'s str, &'s str>);

impl<'s> Attachments<'s> {
    /// The attachments of `sample`.
    pub fn of(sample: &'s Node<'_>) -> Self {
        Attachments(
            sample["attachments"]
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| Some((k.as_ref(), v.as_str()?)))
                .collect(),
        )
    }

    /// `text` with its reference resolved (unchanged when it is none, or unknown).
    pub fn text(&self, text: &str) -> String {
        self.lookup(text).unwrap_or(text).to_owned()
    }

    fn lookup(&self, text: &str) -> Option<&'s str> {
        if self.0.is_empty() {
            return None;
        }
        ATTACHMENT_PROTOCOLS
            .iter()
            .find_map(|p| text.strip_prefix(p))
            .and_then(|key| self.0.get(key).copied())
    }

    /// `node` with every string reference in it resolved (the other strings still borrowed).
    pub fn node<'a>(&self, node: &Node<'a>) -> Node<'a> {
        match node {
            Node::String(s) => match self.lookup(s) {
                Some(text) => Node::String(Cow::Owned(text.to_owned())),
                None => node.clone(),
            },
            Node::Array(a) => Node::Array(a.iter().map(|v| self.node(v)).collect()),
            Node::Object(o) => {
                Node::Object(o.iter().map(|(k, v)| (k.clone(), self.node(v))).collect())
            }
            other => other.clone(),
        }
    }

    /// `node` with every string reference in it resolved, as a value.
    pub fn value(&self, node: &Node) -> Value {
        match node {
            Node::String(s) => Value::String(self.text(s)),
            Node::Array(a) => Value::Array(a.iter().map(|v| self.value(v)).collect()),
            Node::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, v)| (k.as_ref().to_owned(), self.value(v)))
                    .collect(),
            ),
            other => other.to_value(),
        }
    }
}

/// The trajectory id: `<log>/<sample id>/epoch-<n>`, where `<log>` is the eval's `eval_id`
/// (unique per eval, Inspect 0.3.100 and later), else `<run_id>/<task_id>` (unique per task of
/// a run), else the log file's name without its extension.
pub fn trajectory_id(log: &Node, sample: &Node, file: &str) -> Result<String, Problem> {
    let eval = &log["eval"];
    let text = |v: &Node| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
    let prefix = text(&eval["eval_id"])
        .or_else(|| {
            let parts: Vec<String> = [&eval["run_id"], &eval["task_id"]]
                .into_iter()
                .filter_map(text)
                .collect();
            (!parts.is_empty()).then(|| parts.join("/"))
        })
        .unwrap_or_else(|| {
            // An `.eval` record's file is `<archive>/<entry>`: the archive names the log.
            let archive = file.split("/samples/").next().unwrap_or(file);
            file_stem(archive)
        });
    let id = match &sample["id"] {
        Node::String(s) if !s.is_empty() => s.as_ref().to_owned(),
        Node::Number(n) => n.to_string(),
        _ => {
            return Err(problem(
                "/id",
                "a sample needs an id (a string or an integer)",
            ))
        }
    };
    let epoch = match &sample["epoch"] {
        Node::Number(n) => n.to_string(),
        Node::Null => "1".to_owned(),
        _ => return Err(problem("/epoch", "a sample's epoch must be an integer")),
    };
    Ok(format!("{prefix}/{id}/epoch-{epoch}"))
}

/// The text parts of `content` joined by newlines (as Inspect's `ChatMessage.text`), or the
/// string itself.
fn content_text(content: &Node, att: &Attachments) -> String {
    match content {
        Node::String(s) => att.text(s),
        Node::Array(parts) => parts
            .iter()
            .filter(|p| p["type"].as_str() == Some("text"))
            .filter_map(|p| p["text"].as_str())
            .map(|t| att.text(t))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Splits a leading `<think>…</think>` block off an assistant's text (Inspect reads a string
/// content so, for providers that put reasoning there).
fn split_think(text: &str) -> Option<(String, String)> {
    let rest = text.trim_start().strip_prefix("<think>")?;
    let (reasoning, after) = rest.split_once("</think>")?;
    Some((reasoning.trim().to_owned(), after.trim_start().to_owned()))
}

/// Builds the steps of one sample.
struct Builder<'s, 'a> {
    att: Attachments<'s>,
    content: Vec<Step>,
    /// Call id → tool name, for the calls made so far.
    calls: HashMap<String, String>,
    answered: HashSet<String>,
    message_fields: Vec<Node<'a>>,
    part_fields: Vec<Node<'a>>,
    call_fields: Vec<Node<'a>>,
    tool_errors: Vec<Node<'a>>,
    unlinked_results: Vec<Node<'a>>,
    empty_messages: Vec<Node<'a>>,
    left: LeftOut,
    /// The messages read, and those that gave a step.
    messages: (u64, u64),
}

/// Maps the messages of `sample` (or, when it has none, its input and output).
pub fn map<'a>(sample: &Node<'a>) -> Result<Mapped<'a>, Problem> {
    let mut b = Builder {
        att: Attachments::of(sample),
        content: Vec::new(),
        calls: HashMap::new(),
        answered: HashSet::new(),
        message_fields: Vec::new(),
        part_fields: Vec::new(),
        call_fields: Vec::new(),
        tool_errors: Vec::new(),
        unlinked_results: Vec::new(),
        empty_messages: Vec::new(),
        left: LeftOut::new("details.inspect"),
        messages: (0, 0),
    };
    let mut from_input = false;
    match &sample["messages"] {
        Node::Array(messages) if !messages.is_empty() => {
            for (i, m) in messages.iter().enumerate() {
                b.message(m, &format!("/messages/{i}"))?;
            }
        }
        Node::Array(_) | Node::Null => {
            // No conversation was recorded: the input, then the model's output.
            from_input = true;
            match &sample["input"] {
                Node::String(s) => b.content.push(Step::user_text(b.att.text(s))),
                Node::Array(messages) => {
                    for (i, m) in messages.iter().enumerate() {
                        b.message(m, &format!("/input/{i}"))?;
                    }
                }
                Node::Null => {}
                _ => {
                    return Err(problem(
                        "/input",
                        "input must be a string or a list of messages",
                    ))
                }
            }
            let first = sample["output"]["choices"]
                .as_array()
                .and_then(<[_]>::first);
            if let Some(output) = first.map(|c| &c["message"]).filter(|m| m.is_object()) {
                b.message(output, "/output/choices/0/message")?;
            }
        }
        _ => return Err(problem("/messages", "messages must be a list")),
    }
    let tools = tool_specs(sample, &b.att);
    let mut notes = Entries::new();
    let unanswered = b.unlink_unanswered();
    let mut note = |key: &'static str, items: Vec<Node<'a>>| {
        if !items.is_empty() {
            notes.push((key.into(), Node::Array(items)));
        }
    };
    note("message_fields", b.message_fields);
    note("part_fields", b.part_fields);
    note("call_fields", b.call_fields);
    note("tool_errors", b.tool_errors);
    note("unanswered_calls", unanswered);
    note("unlinked_results", b.unlinked_results);
    note("empty_messages", b.empty_messages);
    if from_input {
        notes.push(("steps_from".into(), Node::from("input and output")));
    }
    b.left.messages = Some(b.messages);
    Ok(Mapped {
        content: b.content,
        tools,
        notes,
        left: b.left,
    })
}

/// A note of `fields` (an object's unmapped entries) after `head`, each set as a map sets it
/// (a field named as a head key replaces it in place).
fn note<'a>(head: Entries<'a>, fields: Entries<'a>) -> Node<'a> {
    let mut note = Node::Object(head);
    for (k, v) in fields {
        note.insert(k, v);
    }
    note
}

/// A string node, shared with `v` (the empty string when `v` is none).
fn string_node<'a>(v: &Node<'a>) -> Node<'a> {
    match v {
        Node::String(s) => Node::String(s.clone()),
        _ => Node::from(""),
    }
}

impl<'a> Builder<'_, 'a> {
    fn message(&mut self, m: &Node<'a>, at: &str) -> Result<(), Problem> {
        let role = m["role"].as_str().unwrap_or_default();
        let mapped: &[&str] = match role {
            "system" | "user" => &["role", "content"],
            "assistant" => &["role", "content", "tool_calls", "reasoning"],
            "tool" => &[
                "role",
                "content",
                "tool_call_id",
                "function",
                "error",
                "tool_error",
            ],
            _ => {
                return Err(problem(
                    format!("{at}/role"),
                    format!("unknown message role {:?}", m["role"].to_value()),
                ))
            }
        };
        let first_step = self.content.len();
        match role {
            "system" => {
                self.content
                    .push(system_step(content_text(&m["content"], &self.att)));
                self.unmapped_parts(m, at, &["text"]);
            }
            "user" => {
                // A user message holding a tool's payload (images a tool returned) comes from
                // the environment.
                let source = if m["tool_call_id"].as_array().is_some() {
                    Source::Environment
                } else {
                    Source::User
                };
                self.observation(m, at, source, None, None, "");
            }
            "assistant" => self.assistant(m, at)?,
            _ => self.tool_result(m, at)?,
        }
        self.messages.0 += 1;
        self.messages.1 += u64::from(self.content.len() > first_step);
        let fields = node_fields_except(m, mapped);
        if !fields.is_empty() {
            let mut head: Entries = vec![("message".into(), Node::from(at.to_owned()))];
            if self.content.len() > first_step {
                head.push(("step".into(), Node::from(first_step as u64)));
            }
            self.message_fields.push(note(head, fields));
        }
        Ok(())
    }

    /// Text and images of a user or tool message, as observations from `source`; the first
    /// one carries `link` (a tool result's call id).
    fn observation(
        &mut self,
        m: &Node<'a>,
        at: &str,
        source: Source,
        name: Option<String>,
        link: Option<&str>,
        error: &str,
    ) {
        let mut text = content_text(&m["content"], &self.att);
        if !error.is_empty() {
            text = if text.trim().is_empty() || text.trim() == error.trim() {
                format!("Error: {error}")
            } else {
                format!("{text}\n\nError: {error}")
            };
        }
        let images: Vec<String> = m["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["type"].as_str() == Some("image"))
            .filter_map(|p| p["image"].as_str())
            .map(|i| self.att.text(i))
            .collect();
        let mut steps = Vec::new();
        if !text.is_empty() || images.is_empty() {
            steps.push(match source {
                Source::User => Step::user_text(text),
                _ => {
                    let mut s = Step::environment_text(name.clone(), text);
                    if let Step::TextObservation(o) = &mut s {
                        o.source = source;
                    }
                    s
                }
            });
        }
        steps.extend(images.into_iter().map(|i| Step::image(i, source)));
        if let (Some(id), Some(first)) = (link, steps.first_mut()) {
            *first.tool_call_id_mut() = Some(id.to_owned());
        }
        self.content.extend(steps);
        self.unmapped_parts(m, at, &["text", "image"]);
    }

    /// Keeps the parts of a message's content that no step holds (audio, video, documents,
    /// provider data, ...) and the fields of mapped parts that no step holds (a reasoning
    /// block's signature, an image's detail level), each with its pointer.
    fn unmapped_parts(&mut self, m: &Node<'a>, at: &str, mapped_types: &[&str]) {
        for (k, p) in m["content"].as_array().into_iter().flatten().enumerate() {
            let kind = p["type"].as_str().unwrap_or_default();
            let pointer = format!("{at}/content/{k}");
            if mapped_types.contains(&kind) {
                if matches!(kind, "text" | "image") && p[kind].as_str().is_none() {
                    // Its text or image is read as a string only: no step holds it.
                    let reason = format!("a {kind:?} part whose {kind} is not a string");
                    self.left
                        .wrong_type(0, &format!("{pointer}/{kind}"), reason);
                }
                let own: &[&str] = match kind {
                    "text" => &["type", "text"],
                    "image" => &["type", "image"],
                    "reasoning" => &["type", "reasoning", "summary"],
                    "tool_use" => &["type", "id", "name", "arguments", "result", "error"],
                    _ => &["type"],
                };
                let fields = node_fields_except(p, own);
                if !fields.is_empty() {
                    self.part_fields.push(Node::object([
                        ("pointer", Node::from(pointer)),
                        ("fields", Node::Object(fields)),
                    ]));
                }
            } else {
                let reason = match p["type"].as_str() {
                    Some(t) => {
                        self.left.blocks += 1;
                        format!(
                            "a {t:?} part of a {:?} message is not mapped",
                            m["role"].as_str().unwrap_or_default()
                        )
                    }
                    None => {
                        let reason = "a part without a string `type` is not mapped";
                        self.left.unmapped(0, &pointer, reason);
                        reason.to_owned()
                    }
                };
                self.part_fields.push(Node::object([
                    ("pointer", Node::from(pointer)),
                    ("reason", Node::from(reason)),
                    ("value", p.clone()),
                ]));
            }
        }
    }

    fn assistant(&mut self, m: &Node<'a>, at: &str) -> Result<(), Problem> {
        let before = self.content.len();
        let mut reasoning: Vec<String> = Vec::new();
        let mut text: Vec<String> = Vec::new();
        if let Some(r) = m["reasoning"].as_str() {
            reasoning.push(self.att.text(r));
        }
        let mut mapped_types = vec!["text"];
        match &m["content"] {
            Node::String(s) => {
                let s = self.att.text(s);
                match split_think(&s) {
                    Some((r, t)) => {
                        reasoning.push(r);
                        text.push(t);
                    }
                    None => text.push(s),
                }
            }
            Node::Array(parts) => {
                mapped_types.extend(["reasoning", "tool_use"]);
                for (k, p) in parts.iter().enumerate() {
                    match p["type"].as_str().unwrap_or_default() {
                        "text" => {
                            if let Some(t) = p["text"].as_str() {
                                text.push(self.att.text(t));
                            }
                        }
                        "reasoning" => {
                            let readable = if p["redacted"].as_bool() == Some(true) {
                                p["summary"].as_str()
                            } else {
                                p["reasoning"].as_str()
                            };
                            if let Some(r) = readable {
                                reasoning.push(self.att.text(r));
                            }
                        }
                        "tool_use" => {
                            // A call the model's provider ran itself (web search, MCP): a call
                            // and its result, in place.
                            let pointer = format!("{at}/content/{k}");
                            let description = take_joined(&mut text, "\n");
                            let thought = take_joined(&mut reasoning, "\n\n");
                            self.server_tool_use(p, &pointer, description, thought)?;
                        }
                        _ => {}
                    }
                }
            }
            Node::Null => {}
            _ => {
                return Err(problem(
                    format!("{at}/content"),
                    "content must be a string or a list of content parts",
                ))
            }
        }
        let description = take_joined(&mut text, "\n");
        let thought = take_joined(&mut reasoning, "\n\n");
        let mut calls = Vec::new();
        match &m["tool_calls"] {
            Node::Array(list) => {
                for (j, call) in list.iter().enumerate() {
                    calls.push(self.tool_call(call, &format!("{at}/tool_calls/{j}"))?);
                }
            }
            Node::Null => {}
            _ => {
                return Err(problem(
                    format!("{at}/tool_calls"),
                    "tool_calls must be a list",
                ))
            }
        }
        if let Some(first) = calls.first_mut() {
            first.set_thought(description, thought);
        } else if description.is_some() || thought.is_some() {
            let mut step = Step::message(description.unwrap_or_default(), None);
            step.set_thought(None, thought);
            self.content.push(step);
        } else if self.content.len() == before {
            // Nothing to say and nothing to call (an empty generation): no step.
            self.empty_messages.push(Node::from(at.to_owned()));
        }
        self.content.extend(calls);
        self.unmapped_parts(m, at, &mapped_types);
        Ok(())
    }

    /// A `ToolCall` as a step: `bash` and `python` with only their code are code actions.
    fn tool_call(&mut self, call: &Node<'a>, at: &str) -> Result<Step, Problem> {
        let Some(name) = call["function"].as_str() else {
            return Err(problem(
                format!("{at}/function"),
                "a tool call needs a function name",
            ));
        };
        let Some(id) = call["id"].as_str().filter(|s| !s.is_empty()) else {
            return Err(problem(format!("{at}/id"), "a tool call needs an id"));
        };
        let kwargs = match self.att.value(&call["arguments"]) {
            Value::Object(o) => o,
            Value::Null => JsonObject::new(),
            other => {
                return Err(problem(
                    format!("{at}/arguments"),
                    format!("arguments must be a JSON object, found {}", kind_of(&other)),
                ))
            }
        };
        if self.calls.insert(id.to_owned(), name.to_owned()).is_some() {
            return Err(problem(
                format!("{at}/id"),
                format!("tool call id {id:?} is used twice"),
            ));
        }
        let step = call_step(name, kwargs, CODE_TOOLS).with_tool_call_id(id);
        let fields = node_fields_except(call, &["id", "function", "arguments", "type"]);
        let kind_is_function = matches!(call["type"].as_str(), None | Some("function"));
        if !fields.is_empty() || !kind_is_function {
            let mut head: Entries = vec![
                ("call".into(), Node::from(at.to_owned())),
                ("id".into(), string_node(&call["id"])),
            ];
            if !kind_is_function {
                head.push(("type".into(), call["type"].clone()));
            }
            self.call_fields.push(note(head, fields));
        }
        Ok(step)
    }

    /// A server-side tool use part (`ContentToolUse`): an api action and its result.
    fn server_tool_use(
        &mut self,
        p: &Node,
        at: &str,
        description: Option<String>,
        thought: Option<String>,
    ) -> Result<(), Problem> {
        let name = p["name"].as_str().unwrap_or("tool_use");
        let Some(id) = p["id"].as_str().filter(|s| !s.is_empty()) else {
            return Err(problem(format!("{at}/id"), "a tool_use part needs an id"));
        };
        if self.calls.insert(id.to_owned(), name.to_owned()).is_some() {
            return Err(problem(
                format!("{at}/id"),
                format!("tool call id {id:?} is used twice"),
            ));
        }
        let kwargs = match &p["arguments"] {
            Node::String(s) => match serde_json::from_str::<Value>(s) {
                Ok(Value::Object(o)) => o,
                _ => [("arguments".to_owned(), json!(s))].into_iter().collect(),
            },
            object @ Node::Object(_) => object.to_map(),
            Node::Null => JsonObject::new(),
            _ => {
                let reason = "a tool_use part's arguments are neither an object nor a text";
                self.left.wrong_type(0, &format!("{at}/arguments"), reason);
                JsonObject::new()
            }
        };
        let mut step = Step::api(name, kwargs, None).with_tool_call_id(id);
        step.set_thought(description, thought);
        self.content.push(step);
        let mut result = content_text(&p["result"], &self.att);
        if let Some(e) = p["error"].as_str().filter(|e| !e.is_empty()) {
            result = if result.is_empty() {
                format!("Error: {e}")
            } else {
                format!("{result}\n\nError: {e}")
            };
        }
        self.content
            .push(Step::environment_text(Some(name.to_owned()), result).with_tool_call_id(id));
        self.answered.insert(id.to_owned());
        Ok(())
    }

    /// A tool message: the result of an earlier call. A result whose call no earlier
    /// assistant message made (or that answers one answered already) stays an observation
    /// without a link, listed in `unlinked_results`.
    fn tool_result(&mut self, m: &Node<'a>, at: &str) -> Result<(), Problem> {
        let id = m["tool_call_id"].as_str().unwrap_or_default();
        let called = self.calls.get(id).cloned();
        let unlinked = match &called {
            _ if id.is_empty() => Some("the tool message has no tool_call_id"),
            None => Some("no earlier assistant message made this call"),
            Some(_) if self.answered.contains(id) => Some("the call was answered already"),
            Some(_) => None,
        };
        if let Some(reason) = unlinked {
            self.unlinked_results.push(Node::object([
                ("step", Node::from(self.content.len() as u64)),
                ("id", string_node(&m["tool_call_id"])),
                ("pointer", Node::from(format!("{at}/tool_call_id"))),
                ("reason", Node::from(reason)),
            ]));
        } else {
            self.answered.insert(id.to_owned());
        }
        let called = called.unwrap_or_default();
        let name = m["function"]
            .as_str()
            .map(str::to_owned)
            .or((!called.is_empty()).then_some(called));
        // `error` ({type, message}); `tool_error` (a string) before Inspect 0.3.50 or so.
        let (kind, message) = match (&m["error"], &m["tool_error"]) {
            (e @ Node::Object(_), _) => (e["type"].clone(), string_node(&e["message"])),
            (_, text @ Node::String(_)) => (Node::from("unknown"), text.clone()),
            _ => (Node::Null, Node::from("")),
        };
        let message_text = message.as_str().unwrap_or_default();
        if !kind.is_null() || !message_text.is_empty() {
            self.tool_errors.push(Node::object([
                ("step", Node::from(self.content.len() as u64)),
                ("id", string_node(&m["tool_call_id"])),
                ("type", kind),
                ("message", message.clone()),
            ]));
        }
        let link = unlinked.is_none().then_some(id);
        let message_text = message.as_str().unwrap_or_default();
        self.observation(m, at, Source::Environment, name, link, message_text);
        Ok(())
    }

    /// Removes the link id of every call no result answers, listing them as
    /// `{"step", "id"}`.
    fn unlink_unanswered(&mut self) -> Vec<Node<'a>> {
        let mut out = Vec::new();
        for (i, step) in self.content.iter_mut().enumerate() {
            if !step.is_tool_action() {
                continue;
            }
            let slot = step.tool_call_id_mut();
            if let Some(id) = slot.take_if(|id| !self.answered.contains(id.as_str())) {
                out.push(Node::object([
                    ("step", Node::from(i as u64)),
                    ("id", Node::from(id)),
                ]));
            }
        }
        out
    }
}

/// The parts joined, and emptied; `None` when they hold no text.
fn take_joined(parts: &mut Vec<String>, sep: &str) -> Option<String> {
    let joined = parts
        .drain(..)
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(sep);
    (!joined.is_empty()).then_some(joined)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The tool specs the model was given (`ToolInfo`: name, description, parameters), from the
/// sample's model events (and its `sample_init` state), each name once, in order of first use.
fn tool_specs(sample: &Node, att: &Attachments) -> Vec<Value> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for event in sample["events"].as_array().into_iter().flatten() {
        let tools = match event["event"].as_str() {
            Some("model") => &event["tools"],
            Some("sample_init") => &event["state"]["tools"],
            _ => continue,
        };
        for tool in tools.as_array().into_iter().flatten() {
            if let Some(name) = tool["name"].as_str() {
                if seen.insert(name.to_owned()) {
                    out.push(att.value(tool));
                }
            }
        }
    }
    out
}

/// What is kept of the event log (`details.inspect.events`): how many events of each type, the
/// first and last timestamps, the model calls' errors, and the limits hit. The events
/// themselves (every model call's full input, state diffs) are not kept.
pub fn events_summary<'a>(events: &Node<'a>) -> Option<Node<'a>> {
    let events = events.as_array()?;
    let mut by_type: Vec<(&str, u64)> = Vec::new();
    let mut errors = Vec::new();
    let mut limits = Vec::new();
    let mut first: Option<&Node<'a>> = None;
    let mut last: Option<&Node<'a>> = None;
    for (i, e) in events.iter().enumerate() {
        let kind = e["event"].as_str().unwrap_or("unknown");
        match by_type.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => by_type.push((kind, 1)),
        }
        let timestamp = &e["timestamp"];
        if timestamp.as_str().is_some() {
            first.get_or_insert(timestamp);
            last = Some(timestamp);
        }
        let event = ("event", Node::from(i as u64));
        match kind {
            "model" if !e["error"].is_null() => errors.push(Node::object([
                event,
                ("type", Node::from("model")),
                ("model", e["model"].clone()),
                ("error", e["error"].clone()),
            ])),
            "error" => {
                let message = &e["error"]["message"];
                let error = match message.as_str() {
                    Some(_) => message,
                    None => &e["error"],
                };
                errors.push(Node::object([
                    event,
                    ("type", Node::from("error")),
                    ("error", error.clone()),
                ]));
            }
            "sample_limit" => limits.push(Node::object([
                event,
                ("type", e["type"].clone()),
                ("message", e["message"].clone()),
                ("limit", e["limit"].clone()),
            ])),
            _ => {}
        }
    }
    let by_type = by_type
        .into_iter()
        .map(|(k, n)| (k.to_owned().into(), Node::from(n)))
        .collect();
    let mut summary: Entries<'a> = vec![
        ("count".into(), Node::from(events.len() as u64)),
        ("by_type".into(), Node::Object(by_type)),
    ];
    if let Some(t) = first {
        summary.push(("first_timestamp".into(), t.clone()));
    }
    if let Some(t) = last {
        summary.push(("last_timestamp".into(), t.clone()));
    }
    if !errors.is_empty() {
        summary.push(("errors".into(), Node::Array(errors)));
    }
    if !limits.is_empty() {
        summary.push(("limits".into(), Node::Array(limits)));
    }
    Some(Node::Object(summary))
}

/// A score value as a number, as Inspect's default `value_to_float` reads it: numbers and
/// booleans as they are; the letter grades `C` (correct) 1, `P` (partial) 0.5, `I` (incorrect)
/// and `N` (no answer) 0; `yes`/`true` 1 and `no`/`false` 0 (any case); a string of digits
/// (and dots) as its number. Anything else (a list, a dict, other text) has none: Inspect
/// would warn and count 0, trajkit sets no reward rather than invent one.
pub fn score_to_float(value: &Node) -> Option<f64> {
    match value {
        Node::Number(n) => n.as_f64(),
        Node::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Node::String(s) => match s.as_ref() {
            "C" => Some(1.0),
            "P" => Some(0.5),
            "I" | "N" => Some(0.0),
            _ => {
                let lower = s.to_lowercase();
                match lower.as_str() {
                    "yes" | "true" => Some(1.0),
                    "no" | "false" => Some(0.0),
                    _ if !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == '.') => {
                        s.parse::<f64>().ok()
                    }
                    _ => None,
                }
            }
        },
        _ => None,
    }
}

/// The sample's scores by scorer, in order (`scores`, or the single `score` of logs before
/// Inspect 0.3.30 or so, under the name `score`).
pub fn scores<'s, 'a>(sample: &'s Node<'a>) -> Vec<(String, &'s Node<'a>)> {
    match (&sample["scores"], &sample["score"]) {
        (Node::Object(s), _) => s.iter().map(|(k, v)| (k.as_ref().to_owned(), v)).collect(),
        (_, score @ Node::Object(_)) => vec![("score".to_owned(), score)],
        _ => Vec::new(),
    }
}

/// `details.reward` (the first scorer's value, when it reads as a number) and
/// `details.reward_components` (every scorer's value that does, a dict value's entries as
/// `<scorer>/<key>`).
pub fn rewards(scores: &[(String, &Node)]) -> (Option<f64>, Map<String, Value>) {
    let mut components = Map::new();
    for (name, score) in scores {
        match &score["value"] {
            Node::Object(parts) => {
                for (k, v) in parts {
                    if let Some(x) = score_to_float(v).and_then(finite) {
                        components.insert(format!("{name}/{k}"), json!(x));
                    }
                }
            }
            v => {
                if let Some(x) = score_to_float(v).and_then(finite) {
                    components.insert(name.clone(), json!(x));
                }
            }
        }
    }
    let reward = scores
        .first()
        .and_then(|(_, s)| score_to_float(&s["value"]))
        .and_then(finite);
    (reward, components)
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// `details.outcome`: a sample that stopped on an error is a failure; else the first score
/// decides (`C`, true, `yes` or 1: success; `I`, `N`, false, `no` or 0: failure; `P` or a
/// number between 0 and 1: partial success); else a time limit hit is a timeout; else unknown.
/// `native` holds the first scorer's name and value, and the sample's `error` and `limit`.
pub fn outcome(sample: &Node, scores: &[(String, &Node)]) -> Value {
    let error = &sample["error"];
    let limit = &sample["limit"];
    let first = scores.first();
    let status = if !error.is_null() {
        "failure"
    } else if let Some((_, score)) = first {
        match score_to_float(&score["value"]) {
            Some(1.0) => "success",
            Some(0.0) => "failure",
            Some(x) if x > 0.0 && x < 1.0 => "partial_success",
            _ => "unknown",
        }
    } else if matches!(limit["type"].as_str(), Some("time" | "working")) {
        "timeout"
    } else {
        "unknown"
    };
    let mut native = Map::new();
    if let Some((name, score)) = first {
        native.insert("scorer".into(), json!(name));
        native.insert("value".into(), score["value"].to_value());
    }
    if !error.is_null() {
        native.insert("error".into(), error.to_value());
    }
    if !limit.is_null() {
        native.insert("limit".into(), limit.to_value());
    }
    if native.is_empty() {
        return json!({ "status": status });
    }
    json!({"status": status, "native": native})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_read_as_inspect_reads_them() {
        for (v, x) in [
            (json!("C"), Some(1.0)),
            (json!("I"), Some(0.0)),
            (json!("P"), Some(0.5)),
            (json!("N"), Some(0.0)),
            (json!(true), Some(1.0)),
            (json!(0.25), Some(0.25)),
            (json!("Yes"), Some(1.0)),
            (json!("false"), Some(0.0)),
            (json!("0.75"), Some(0.75)),
            (json!("maybe"), None),
            (json!([1]), None),
            (json!({"a": 1}), None),
        ] {
            assert_eq!(score_to_float(&Node::from_value(&v)), x, "{v}");
        }
    }

    #[test]
    fn a_think_block_is_reasoning() {
        assert_eq!(
            split_think("<think>\nhmm\n</think>\n\nYes"),
            Some(("hmm".to_owned(), "Yes".to_owned()))
        );
        assert_eq!(split_think("Yes <think>x</think>"), None);
    }

    #[test]
    fn ids_name_the_eval_the_sample_and_the_epoch() {
        let sample = json!({"id": 7, "epoch": 2});
        let with = |eval: Value| json!({ "eval": eval });
        let sample = Node::from_value(&sample);
        let id = |log: Value| {
            trajectory_id(
                &Node::from_value(&log),
                &sample,
                "logs/x.eval/samples/7_epoch_2.json",
            )
            .ok()
        };
        assert_eq!(
            id(with(json!({"eval_id": "E", "run_id": "R", "task_id": "T"}))),
            Some("E/7/epoch-2".to_owned())
        );
        assert_eq!(
            id(with(json!({"run_id": "R", "task_id": "T"}))),
            Some("R/T/7/epoch-2".to_owned())
        );
        assert_eq!(id(json!({})), Some("x/7/epoch-2".to_owned()));
        let (log, epoch_only) = (json!({}), json!({"epoch": 1}));
        let (log, epoch_only) = (Node::from_value(&log), Node::from_value(&epoch_only));
        assert!(trajectory_id(&log, &epoch_only, "f").is_err());
    }

    #[test]
    fn outcome_follows_error_then_score_then_limit() {
        let status = |sample: &Value, scores: &[(String, &Node)]| {
            outcome(&Node::from_value(sample), scores)["status"]
                .as_str()
                .map(str::to_owned)
        };
        let sample = json!({});
        let (c, p, i) = (
            json!({"value": "C"}),
            json!({"value": 0.5}),
            json!({"value": "I"}),
        );
        let (c, p, i) = (
            Node::from_value(&c),
            Node::from_value(&p),
            Node::from_value(&i),
        );
        assert_eq!(
            status(&sample, &[("m".into(), &c)]).as_deref(),
            Some("success")
        );
        assert_eq!(
            status(&sample, &[("m".into(), &p)]).as_deref(),
            Some("partial_success")
        );
        assert_eq!(
            status(&sample, &[("m".into(), &i)]).as_deref(),
            Some("failure")
        );
        let errored = json!({"error": {"message": "boom"}});
        assert_eq!(
            status(&errored, &[("m".into(), &c)]).as_deref(),
            Some("failure")
        );
        let timed = json!({"limit": {"type": "time", "limit": 60}});
        assert_eq!(status(&timed, &[]).as_deref(), Some("timeout"));
        assert_eq!(status(&sample, &[]).as_deref(), Some("unknown"));
    }
}

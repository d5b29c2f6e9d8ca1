//! The steps of one agent's events (the session's main agent, or one subagent), and what
//! `details.copilot_cli` says about them. Events are read in file order: the messages the model
//! saw (`system.message`, `user.message`, `system.notification`, `skill.invoked`, a compaction's
//! summary) become observations, `assistant.message` its reasoning, text and tool requests, and
//! `tool.execution_complete` the result of the call it names by `toolCallId`; the session's
//! bookkeeping (model changes, truncations, compactions, hooks, subagents, shutdown metrics) is
//! listed in `details.copilot_cli`.
//!
//! A call no result answers keeps its link when a later step answers it; at the end, a call no
//! result ever answered is unlinked when no observation follows it, and otherwise answered by an
//! empty result put right after it (ADP links a tool action followed by an observation). Both
//! are listed in `unanswered_calls`.

use std::borrow::Cow;

use foldhash::HashMap;
use serde_json::Value;

use crate::convert::LeftOut;
use crate::formats::chat::{described_call_step, parse_arguments, system_step, CodeTool};
use crate::formats::kit::node_fields_except;
use crate::formats::kit::LinkIds;
use crate::json::{Entries, Node};
use crate::model::{Source, Step};

/// Copilot CLI's shell tools: a call whose input is its command alone (and a `description`) is
/// code.
const CODE_TOOLS: &[CodeTool] = &[
    ("bash", "command", "bash"),
    ("powershell", "command", "powershell"),
];

/// Event types that only mark where a model turn starts or ends: skipped, counted.
const MARKERS: &[&str] = &["assistant.turn_start", "assistant.turn_end"];

/// One event: its line in the file and the event.
pub(super) struct Event<'n, 'a> {
    pub line: u64,
    pub event: &'n Node<'a>,
}

/// A call waiting for its result.
struct Pending {
    /// The call's id in the trajectory (its own id, unless another call had it already).
    id: String,
    /// Its `toolCallId`.
    native: String,
    name: String,
    step: usize,
}

/// The lists of `details.copilot_cli`, each written only when not empty.
#[derive(Default)]
pub(super) struct Lists<'a> {
    pub models: Vec<Node<'a>>,
    pub model_changes: Vec<Node<'a>>,
    pub resumes: Vec<Node<'a>>,
    pub truncations: Vec<Node<'a>>,
    pub compactions: Vec<Node<'a>>,
    pub context_cleared: Vec<Node<'a>>,
    pub system_messages: Vec<Node<'a>>,
    pub user_messages: Vec<Node<'a>>,
    pub assistant_messages: Vec<Node<'a>>,
    pub tool_requests: Vec<Node<'a>>,
    pub tool_starts: Vec<Node<'a>>,
    pub tool_results: Vec<Node<'a>>,
    pub error_results: Vec<Node<'a>>,
    pub unanswered_calls: Vec<Node<'a>>,
    pub unlinked_results: Vec<Node<'a>>,
    pub hooks: Vec<Node<'a>>,
    pub skills: Vec<Node<'a>>,
    pub subagents: Vec<Node<'a>>,
    pub notices: Vec<Node<'a>>,
    pub errors: Vec<Node<'a>>,
    pub aborts: Vec<Node<'a>>,
    pub shutdowns: Vec<Node<'a>>,
    pub other_events: Vec<Node<'a>>,
    pub unmapped: Vec<Node<'a>>,
}

/// Token counts summed over the agent's events: `outputTokens` of its assistant messages, and
/// the per-call usage of `assistant.usage` events where the file has them.
#[derive(Default)]
pub(super) struct Usage {
    pub message_output_tokens: u64,
    pub messages_with_tokens: u64,
    /// `inputTokens`, `outputTokens`, `cacheReadTokens`, `cacheWriteTokens`, `reasoningTokens`.
    pub calls: [u64; 5],
    pub call_count: u64,
    pub cost: f64,
    /// Opaque or encrypted reasoning (`reasoningOpaque`, `encryptedContent`), not kept.
    pub opaque_reasoning: u64,
}

/// The usage keys of an `assistant.usage` event, summed.
pub(super) const CALL_USAGE_KEYS: [&str; 5] = [
    "inputTokens",
    "outputTokens",
    "cacheReadTokens",
    "cacheWriteTokens",
    "reasoningTokens",
];

/// The steps of one agent's events, and the lists `details.copilot_cli` keeps about them.
/// Reads a legacy session document embedded in an event (`session.import_legacy`) into the
/// steps being built, returning the document's fields no step holds; the reader of the legacy
/// format passes its own (the events never name it: the legacy reader builds on these steps).
pub(super) type ReadLegacy = for<'a> fn(&mut Built<'a>, u64, &str, &Node<'a>) -> Entries<'a>;

pub(super) struct Built<'a> {
    pub content: Vec<Step>,
    pub left: LeftOut,
    /// Messages (system, user, assistant) of this agent in the source, and those kept as steps.
    pub messages_in: u64,
    pub messages_kept: u64,
    pending: Vec<Pending>,
    used_ids: LinkIds,
    /// The binary assets of the session (`session.binary_asset`), by `assetId`.
    assets: HashMap<&'a str, &'a Node<'a>>,
    pub lists: Lists<'a>,
    pub usage: Usage,
    /// Event types skipped, counted, in the order first seen.
    pub skipped: Vec<(String, u64)>,
    pub first_timestamp: Option<Node<'a>>,
    pub last_timestamp: Option<Node<'a>>,
    /// The prompt of the last `userPromptSubmitted` hook (its index in `hooks`) while no user
    /// message has come after it.
    prompt: Option<(usize, String)>,
    read_legacy: ReadLegacy,
}

pub(super) fn num<'a>(n: usize) -> Node<'a> {
    Node::from(n as u64)
}

/// A note of an event's `data` for `details.copilot_cli`: the step it applies from (or holds),
/// its line, then the fields of `data` but `except`.
pub(super) fn noted<'a>(step: usize, line: u64, data: &Node<'a>, except: &[&str]) -> Node<'a> {
    let mut note = vec![
        (Cow::Borrowed("step"), num(step)),
        (Cow::Borrowed("line"), Node::from(line)),
    ];
    note.extend(node_fields_except(data, except));
    Node::Object(note)
}

/// A data URI of base64 `data` of type `mimeType`.
fn data_uri(item: &Node<'_>) -> Option<String> {
    let data = item["data"].as_str()?;
    let mime = item["mimeType"].as_str().unwrap_or("image/png");
    Some(format!("data:{mime};base64,{data}"))
}

/// True when a binary item is an image (by its `type` or its MIME type).
fn is_image(item: &Node<'_>) -> bool {
    item["type"].as_str() == Some("image")
        || item["mimeType"]
            .as_str()
            .is_some_and(|m| m.starts_with("image/"))
}

impl<'a> Built<'a> {
    pub(super) fn new(
        left: LeftOut,
        assets: HashMap<&'a str, &'a Node<'a>>,
        read_legacy: ReadLegacy,
    ) -> Built<'a> {
        Built {
            read_legacy,
            content: Vec::new(),
            left,
            messages_in: 0,
            messages_kept: 0,
            pending: Vec::new(),
            used_ids: LinkIds::default(),
            assets,
            lists: Lists::default(),
            usage: Usage::default(),
            skipped: Vec::new(),
            first_timestamp: None,
            last_timestamp: None,
            prompt: None,
        }
    }

    /// Counts an event skipped on purpose, by type.
    pub(super) fn skip(&mut self, kind: &str) {
        self.left.lines += 1;
        match self.skipped.iter_mut().find(|(k, _)| k == kind) {
            Some((_, n)) => *n += 1,
            None => self.skipped.push((kind.to_owned(), 1)),
        }
    }

    /// Keeps a value no step holds, with why, in `unmapped`, counted.
    pub(super) fn unmapped(&mut self, line: u64, pointer: &str, reason: String, value: &Node<'a>) {
        self.left.unmapped(line, pointer, reason.clone());
        self.lists.unmapped.push(Node::object([
            ("line", Node::from(line)),
            ("pointer", Node::from(pointer.to_owned())),
            ("reason", Node::from(reason)),
            ("value", value.clone()),
        ]));
    }

    /// The image of a binary item the model was given: inline data, or the session's binary
    /// asset it names; `None` when its bytes were left out of the log (`omittedReason`).
    fn binary_image(&self, item: &Node<'_>) -> Option<String> {
        if !is_image(item) {
            return None;
        }
        data_uri(item).or_else(|| {
            let asset = self.assets.get(item["assetId"].as_str()?)?;
            data_uri(asset)
        })
    }

    /// Reads one event of this agent.
    pub(super) fn event(&mut self, e: &Event<'_, 'a>) {
        let (line, event) = (e.line, e.event);
        if !event["timestamp"].is_null() {
            if self.first_timestamp.is_none() {
                self.first_timestamp = Some(event["timestamp"].clone());
            }
            self.last_timestamp = Some(event["timestamp"].clone());
        }
        let kind = event["type"].as_str().unwrap_or_default();
        let data = &event["data"];
        if kind == "assistant.usage" {
            self.call_usage(data);
            self.skip(kind);
            return;
        }
        if event["ephemeral"].as_bool() == Some(true) || MARKERS.contains(&kind) {
            // Streaming deltas and UI state the runtime does not persist: what they say is in
            // the events that follow them (`assistant.message`, `tool.execution_complete`).
            self.skip(kind);
            return;
        }
        let at = self.content.len();
        match kind {
            "session.start" => self.model(&data["selectedModel"]),
            "session.resume" => self.lists.resumes.push(noted(at, line, data, &[])),
            "session.model_change" => {
                self.model(&data["newModel"]);
                self.lists.model_changes.push(noted(at, line, data, &[]));
            }
            "session.truncation" => self.lists.truncations.push(noted(at, line, data, &[])),
            "session.compaction_start" => {
                let mut note = noted(at, line, data, &[]);
                note.insert("event", Node::from("start"));
                self.lists.compactions.push(note);
            }
            "session.compaction_complete" => self.compaction(line, data),
            "session.context_cleared" => {
                self.lists.context_cleared.push(noted(at, line, data, &[]))
            }
            "session.info" | "session.warning" => {
                let mut note = noted(at, line, data, &[]);
                note.insert("type", Node::from(kind.to_owned()));
                self.lists.notices.push(note);
            }
            "session.error" => self.lists.errors.push(noted(at, line, data, &[])),
            "session.shutdown" => self.lists.shutdowns.push(noted(at, line, data, &[])),
            "abort" => self.lists.aborts.push(noted(at, line, data, &[])),
            "hook.start" | "hook.end" => {
                let mut note = noted(at, line, data, &[]);
                note.insert("type", Node::from(kind.to_owned()));
                if data["hookType"].as_str() == Some("userPromptSubmitted") {
                    if let Some(prompt) = data["input"]["prompt"].as_str() {
                        self.prompt = Some((self.lists.hooks.len(), prompt.to_owned()));
                    }
                }
                self.lists.hooks.push(note);
            }
            "subagent.started" | "subagent.completed" | "subagent.failed" => {
                let mut note = noted(at, line, data, &[]);
                note.insert("type", Node::from(kind.to_owned()));
                self.lists.subagents.push(note);
            }
            "system.message" => {
                self.messages_in += 1;
                let text = data["content"].as_str().unwrap_or_default();
                if text.is_empty() {
                    self.unmapped(
                        line,
                        "/data/content",
                        "a system message without text".into(),
                        data,
                    );
                } else {
                    let mut step = system_step(text.to_owned());
                    if let (Step::TextObservation(o), Some(name)) =
                        (&mut step, data["name"].as_str())
                    {
                        o.name = Some(name.to_owned());
                    }
                    self.content.push(step);
                    self.messages_kept += 1;
                }
                self.lists
                    .system_messages
                    .push(noted(at, line, data, &["content"]));
            }
            "system.notification" => {
                let text = data["content"].as_str().unwrap_or_default();
                self.content.push(Step::environment_text(
                    Some("system_notification".into()),
                    text,
                ));
                let mut note = noted(at, line, data, &["content"]);
                note.insert("type", Node::from(kind.to_owned()));
                self.lists.notices.push(note);
            }
            "skill.invoked" => {
                let name = data["name"].as_str().unwrap_or("skill");
                let text = data["content"].as_str().unwrap_or_default();
                self.content
                    .push(Step::environment_text(Some(format!("skill:{name}")), text));
                self.lists.skills.push(noted(at, line, data, &["content"]));
            }
            "user.message" => {
                self.prompt = None;
                self.user(line, data)
            }
            "assistant.message" => {
                self.submitted_prompt();
                self.assistant(line, data)
            }
            "tool.user_requested" => {
                let name = data["toolName"].as_str().unwrap_or_default();
                self.call(line, "/data/arguments", data, name, None);
            }
            "session.import_legacy" => {
                let mut note = noted(at, line, data, &["legacySession"]);
                note.insert("type", event["type"].clone());
                let pointer = "/data/legacySession";
                let session = (self.read_legacy)(self, line, pointer, &data["legacySession"]);
                note.insert("legacy_session", Node::Object(session));
                self.lists.other_events.push(note);
            }
            "tool.execution_start" => self.start(line, data),
            "tool.execution_complete" => self.result(line, data),
            _ => {
                let mut note = noted(at, line, data, &[]);
                note.insert("type", event["type"].clone());
                self.lists.other_events.push(note);
            }
        }
    }

    /// The prompt a `userPromptSubmitted` hook saw, as the user's message, when no
    /// `user.message` came between the hook and the answer (a log that has the hook only).
    fn submitted_prompt(&mut self) {
        if let Some((hook, prompt)) = self.prompt.take() {
            let at = self.content.len();
            self.content.push(Step::user_text(prompt));
            if let Some(note) = self.lists.hooks.get_mut(hook) {
                note.insert("prompt_step", num(at));
            }
        }
    }

    /// Notes a model the session used, once.
    pub(super) fn model(&mut self, model: &Node<'a>) {
        if model.as_str().is_some() && !self.lists.models.iter().any(|m| m.equals(model)) {
            self.lists.models.push(model.clone());
        }
    }

    /// Adds an `assistant.usage` event's counts to the totals.
    fn call_usage(&mut self, data: &Node<'a>) {
        self.usage.call_count += 1;
        for (n, key) in self.usage.calls.iter_mut().zip(CALL_USAGE_KEYS) {
            *n += data[key].as_u64().unwrap_or(0);
        }
        self.usage.cost += data["cost"]
            .as_number()
            .and_then(serde_json::Number::as_f64)
            .unwrap_or(0.0);
        self.model(&data["model"]);
    }

    /// A finished compaction: listed, its summary (what the conversation goes on from) an
    /// observation named `compaction_summary`.
    fn compaction(&mut self, line: u64, data: &Node<'a>) {
        let at = self.content.len();
        let mut note = noted(at, line, data, &["summaryContent"]);
        note.insert("event", Node::from("complete"));
        if let Some(summary) = data["summaryContent"].as_str().filter(|s| !s.is_empty()) {
            self.content.push(Step::environment_text(
                Some("compaction_summary".into()),
                summary,
            ));
            note.insert("summary_step", num(at));
        }
        self.lists.compactions.push(note);
    }

    /// A user message: its text, then the images attached to it.
    fn user(&mut self, line: u64, data: &Node<'a>) {
        self.messages_in += 1;
        let at = self.content.len();
        let text = data["content"].as_str().unwrap_or_default();
        if !text.is_empty() {
            self.content.push(Step::user_text(text));
        }
        let mut images = 0;
        for a in data["attachments"].as_array().unwrap_or_default() {
            if let Some(uri) = self.binary_image(a) {
                self.content.push(Step::image(uri, Source::User));
                images += 1;
            }
        }
        if self.content.len() > at {
            self.messages_kept += 1;
        } else {
            self.unmapped(
                line,
                "/data/content",
                "a user message without text or images".into(),
                data,
            );
        }
        let mut note = noted(at, line, data, &["content"]);
        if images > 0 {
            note.insert("images_kept", Node::from(images));
        }
        self.lists.user_messages.push(note);
    }

    /// An assistant message: its reasoning the reasoning of its first step, its text a message
    /// (or, before tool requests, the first call's description), each tool request an action
    /// waiting for its result.
    fn assistant(&mut self, line: u64, data: &Node<'a>) {
        self.messages_in += 1;
        let at = self.content.len();
        self.model(&data["model"]);
        if let Some(n) = data["outputTokens"].as_u64() {
            self.usage.message_output_tokens += n;
            self.usage.messages_with_tokens += 1;
        }
        for key in ["reasoningOpaque", "encryptedContent"] {
            if data[key].as_str().is_some_and(|s| !s.is_empty()) {
                self.usage.opaque_reasoning += 1;
            }
        }
        let mut reasoning = data["reasoningText"]
            .as_str()
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned);
        let mut text = data["content"]
            .as_str()
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned);
        let requests = match &data["toolRequests"] {
            Node::Array(r) => r.as_slice(),
            Node::Null => &[],
            other => {
                self.unmapped(
                    line,
                    "/data/toolRequests",
                    "toolRequests is not a list".into(),
                    other,
                );
                &[]
            }
        };
        for (k, request) in requests.iter().enumerate() {
            let name = request["name"].as_str().unwrap_or_default();
            let pointer = format!("/data/toolRequests/{k}/arguments");
            let step = self.call_step(line, &pointer, request, name);
            let step = self.with_thought(step, &mut text, &mut reasoning);
            let native = request["toolCallId"].as_str().unwrap_or_default();
            let call = self.push_call(line, native, step, name, Some(k));
            let mut note = noted(call, line, request, &["arguments", "name"]);
            if let Node::Object(o) = &mut note {
                o.retain(|(k, _)| k != "line");
            }
            self.lists.tool_requests.push(note);
        }
        self.said(text, reasoning);
        if self.content.len() > at {
            self.messages_kept += 1;
        }
        self.lists.assistant_messages.push(noted(
            at,
            line,
            data,
            &[
                "content",
                "reasoningText",
                "toolRequests",
                "reasoningOpaque",
                "encryptedContent",
            ],
        ));
    }

    /// A call `step` of an assistant turn, given what is left of the turn's `text` and
    /// `reasoning`: they become its thought; but a command that carries its own description
    /// keeps it, and the text before it stays a message of its own.
    pub(super) fn with_thought(
        &mut self,
        mut step: Step,
        text: &mut Option<String>,
        reasoning: &mut Option<String>,
    ) -> Step {
        if let Step::CodeAction(c) = &mut step {
            if c.description.is_some() {
                if let Some(t) = text.take() {
                    let mut m = Step::message(t, None);
                    m.set_thought(None, reasoning.take());
                    self.content.push(m);
                }
                let description = c.description.take();
                step.set_thought(description, reasoning.take());
            }
        }
        if text.is_some() || reasoning.is_some() {
            step.set_thought(text.take(), reasoning.take());
        }
        step
    }

    /// What is left of an assistant turn's text and reasoning after its calls, as a message.
    pub(super) fn said(&mut self, text: Option<String>, reasoning: Option<String>) {
        if text.is_some() || reasoning.is_some() {
            let mut step = Step::message(text.unwrap_or_default(), None);
            step.set_thought(None, reasoning);
            self.content.push(step);
        }
    }

    /// A tool call (a tool request, or a tool the user asked for) as an action waiting for its
    /// result; returns its step.
    fn call(
        &mut self,
        line: u64,
        pointer: &str,
        request: &Node<'a>,
        name: &str,
        index: Option<usize>,
    ) -> usize {
        let step = self.call_step(line, pointer, request, name);
        let native = request["toolCallId"].as_str().unwrap_or_default();
        self.push_call(line, native, step, name, index)
    }

    /// The action of a call, from its `arguments` (an object, or a string holding one).
    fn call_step(&mut self, line: u64, pointer: &str, request: &Node<'a>, name: &str) -> Step {
        self.arguments_step(line, pointer, &request["arguments"], name)
    }

    /// The action of a call of `name` with `arguments` (an object, or a string holding one;
    /// what cannot be read is kept in `unmapped` under `pointer`).
    pub(super) fn arguments_step(
        &mut self,
        line: u64,
        pointer: &str,
        arguments: &Node<'a>,
        name: &str,
    ) -> Step {
        let kwargs = match arguments {
            Node::Null => Default::default(),
            arguments => match parse_arguments(arguments) {
                Ok(k) => k,
                Err(why) => {
                    self.unmapped(line, pointer, why, arguments);
                    Default::default()
                }
            },
        };
        described_call_step(name, kwargs, CODE_TOOLS)
    }

    /// Appends a call's action, linked by its `toolCallId` (made unique), to wait for its
    /// result; returns its step.
    pub(super) fn push_call(
        &mut self,
        line: u64,
        native: &str,
        step: Step,
        name: &str,
        index: Option<usize>,
    ) -> usize {
        let base = if native.is_empty() {
            format!("copilot-call:{line}:{}", index.unwrap_or(0))
        } else {
            native.to_owned()
        };
        let (id, _) = self.used_ids.unique(base);
        let at = self.content.len();
        self.content.push(step.with_tool_call_id(id.clone()));
        self.pending.push(Pending {
            id,
            native: native.to_owned(),
            name: name.to_owned(),
            step: at,
        });
        at
    }

    /// A tool execution starting: the call is its tool request's (its start is noted); a start
    /// no request announced (an older log, a tool the runtime ran itself) is the call.
    fn start(&mut self, line: u64, data: &Node<'a>) {
        let native = data["toolCallId"].as_str().unwrap_or_default();
        let step = match self.pending.iter().find(|p| p.native == native) {
            Some(p) => p.step,
            None => {
                let name = data["toolName"].as_str().unwrap_or_default();
                self.call(line, "/data/arguments", data, name, None)
            }
        };
        let mut note = noted(step, line, data, &["arguments"]);
        if let Node::Object(o) = &mut note {
            o.retain(|(k, _)| k != "line");
        }
        self.lists.tool_starts.push(note);
    }

    /// A tool's result: linked to the waiting call it names, else kept unlinked with why. Its
    /// text is what the model was sent (`result.content`, or the error's message), then the
    /// images the model was given.
    fn result(&mut self, line: u64, data: &Node<'a>) {
        let native = data["toolCallId"].as_str().unwrap_or_default();
        let result = &data["result"];
        let success = data["success"].as_bool();
        let text = match (
            result["content"].as_str(),
            data["error"]["message"].as_str(),
        ) {
            (Some(t), _) => t.to_owned(),
            (None, Some(m)) => m.to_owned(),
            (None, None) => match &data["error"] {
                Node::String(s) => s.to_string(),
                _ => result["detailedContent"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            },
        };
        let mut images = Vec::new();
        let binaries = result["binaryResultsForLlm"].as_array().unwrap_or_default();
        for item in binaries {
            images.extend(self.binary_image(item));
        }
        if binaries.is_empty() {
            for item in result["contents"].as_array().unwrap_or_default() {
                images.extend(self.binary_image(item));
            }
        }
        let name = data["toolName"].as_str().unwrap_or("tool_result");
        let at = self.answer(line, native, name, text);
        let kept_images = images.len();
        for uri in images {
            self.content.push(Step::image(uri, Source::Environment));
        }
        if success == Some(false) {
            self.lists.error_results.push(Node::from(native.to_owned()));
        }
        let mut note = noted(at, line, data, &["result", "toolCallId"]);
        note.insert("id", Node::from(native.to_owned()));
        let rest = node_fields_except(result, &["content", "binaryResultsForLlm", "contents"]);
        if !rest.is_empty() {
            note.insert("result", Node::Object(rest));
        }
        let contents = result["contents"].as_array().unwrap_or_default();
        if contents.iter().any(|c| !is_image(c)) {
            let kept: Vec<Node<'a>> = contents.iter().filter(|c| !is_image(c)).cloned().collect();
            note.insert("contents", Node::Array(kept));
        }
        if kept_images > 0 {
            note.insert("images_kept", num(kept_images));
        }
        let omitted: Vec<Node<'a>> = binaries
            .iter()
            .chain(contents)
            .filter(|b| is_image(b) && self.binary_image(b).is_none())
            .map(|b| Node::Object(node_fields_except(b, &["data"])))
            .collect();
        if !omitted.is_empty() {
            note.insert("images_not_in_log", Node::Array(omitted));
        }
        self.lists.tool_results.push(note);
    }

    /// The result `text` of call `native`: an observation linked to the waiting call of that
    /// id (named after its tool), else unlinked, named `name`, and listed in `unlinked_results`
    /// with why; returns its step.
    pub(super) fn answer(&mut self, line: u64, native: &str, name: &str, text: String) -> usize {
        let waiting = self.pending.iter().position(|p| p.native == native);
        let (name, id) = match waiting {
            Some(k) => {
                let p = self.pending.remove(k);
                (p.name, Some(p.id))
            }
            None => (name.to_owned(), None),
        };
        let at = self.content.len();
        let mut step = Step::environment_text(Some(name), text);
        if let Some(id) = &id {
            step = step.with_tool_call_id(id.clone());
        }
        self.content.push(step);
        if id.is_none() {
            let reason = if self.used_ids.contains(native) {
                "its call was answered already"
            } else {
                "no call before it has this toolCallId"
            };
            self.lists.unlinked_results.push(Node::object([
                ("step", num(at)),
                ("line", Node::from(line)),
                ("id", Node::from(native.to_owned())),
                ("reason", Node::from(reason)),
            ]));
        }
        at
    }

    /// Ends the agent's events: a call no result answered is unlinked when no observation
    /// follows it, else answered by an empty result right after it (every step index noted
    /// in the lists shifts past the results put in).
    pub(super) fn finish(&mut self) {
        let mut inserts: Vec<(usize, Step)> = Vec::new();
        for p in std::mem::take(&mut self.pending) {
            let followed = self.content.get(p.step + 1).is_some_and(|s| !s.is_action());
            self.lists.unanswered_calls.push(Node::object([
                ("step", num(p.step)),
                ("id", Node::from(p.native)),
                ("empty_result", Node::Bool(followed)),
            ]));
            if followed {
                let result = Step::environment_text(Some(p.name), "").with_tool_call_id(p.id);
                inserts.push((p.step, result));
            } else {
                *self.content[p.step].tool_call_id_mut() = None;
            }
        }
        if inserts.is_empty() {
            return;
        }
        inserts.sort_by_key(|(c, _)| *c);
        let calls: Vec<u64> = inserts.iter().map(|(c, _)| *c as u64).collect();
        // From the last call back, so that each lands right after its call.
        for (c, result) in inserts.into_iter().rev() {
            self.content.insert(c + 1, result);
        }
        let shift = |i: u64| i + calls.iter().filter(|&&c| c < i).count() as u64;
        for list in self.lists.all_mut() {
            for note in list.iter_mut() {
                for key in ["step", "summary_step", "prompt_step"] {
                    if let Some(s) = note.get(key).and_then(Node::as_u64) {
                        note.insert(key, Node::from(shift(s)));
                    }
                }
            }
        }
    }
}

impl<'a> Lists<'a> {
    /// Every list, to renumber the steps they name.
    fn all_mut(&mut self) -> [&mut Vec<Node<'a>>; 22] {
        [
            &mut self.model_changes,
            &mut self.resumes,
            &mut self.truncations,
            &mut self.compactions,
            &mut self.context_cleared,
            &mut self.system_messages,
            &mut self.user_messages,
            &mut self.assistant_messages,
            &mut self.tool_requests,
            &mut self.tool_starts,
            &mut self.tool_results,
            &mut self.unanswered_calls,
            &mut self.unlinked_results,
            &mut self.hooks,
            &mut self.skills,
            &mut self.subagents,
            &mut self.notices,
            &mut self.errors,
            &mut self.aborts,
            &mut self.shutdowns,
            &mut self.other_events,
            &mut self.unmapped,
        ]
    }
}

/// The usage totals as a node (`null` when the agent's events have none).
pub(super) fn usage_node<'a>(u: &Usage) -> Node<'a> {
    let mut o: Vec<(Cow<'a, str>, Node<'a>)> = Vec::new();
    if u.messages_with_tokens > 0 {
        o.push((
            Cow::Borrowed("message_output_tokens"),
            Node::from(u.message_output_tokens),
        ));
    }
    if u.call_count > 0 {
        o.push((Cow::Borrowed("model_calls"), Node::from(u.call_count)));
        for (k, n) in CALL_USAGE_KEYS.iter().zip(u.calls) {
            o.push((Cow::Borrowed(*k), Node::from(n)));
        }
        o.push((Cow::Borrowed("cost"), Node::from(Value::from(u.cost))));
    }
    if u.opaque_reasoning > 0 {
        o.push((
            Cow::Borrowed("opaque_reasoning"),
            Node::from(u.opaque_reasoning),
        ));
    }
    if o.is_empty() {
        Node::Null
    } else {
        Node::Object(o)
    }
}

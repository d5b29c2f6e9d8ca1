//! The steps of one Goose session: each message's content items in order. A user message's
//! text and images are observations from the user, its `toolResponse` items the results of the
//! calls before them; in an assistant message, `thinking` (and the older `reasoning`) is the
//! `reasoning_content` of the next action, a text the `description` of the call right after it
//! (else a message), each `toolRequest` (or `frontendToolRequest`) an action. Messages Goose
//! wrote for the model alone (`metadata.userVisible` false) are a compaction's summary and its
//! continuation note: observations named `compact_summary` and `compact_continuation`.
//! Messages neither the user nor the model sees any more (a compaction's copy of the last
//! prompt replaced them) are no step. What no step holds stays in the message's entry of
//! `details.goose.messages`, and is counted in a [`LeftOut`].

use crate::formats::chat::{call_step, parse_arguments, CodeTool};
use crate::formats::kit::{node_fields_except, LinkIds};
use crate::formats::session_steps::{Pending, SessionSteps, Taken};
use crate::json::Node;
use crate::model::{JsonObject, Source, Step};
use foldhash::{HashMap, HashMapExt};

/// Goose's shell tools: a call whose only argument is `command` is a `code_action` in bash
/// (the developer extension's `developer__shell` up to 1.26, the built-in `shell` after).
const CODE_TOOLS: &[CodeTool] = &[
    ("developer__shell", "command", "bash"),
    ("shell", "command", "bash"),
];

/// One message of a session: where it is (a row id, or a line of a session file) and the
/// message in Goose's shape (`role`, `created`, `content` items, `metadata`).
pub(super) struct Message<'n, 'a> {
    pub line: u64,
    pub m: &'n Node<'a>,
}

/// A call waiting for its result: its link id and tool name.
struct Open {
    link: String,
    name: String,
}

/// The steps of a session and what `details.goose` lists about them: per message its fields,
/// `content` holding only what no step holds, and its first step; `{step, line, kind}` of each
/// compaction summary (and older `conversationCompacted`); the results that answer no call
/// with their `line`.
pub(super) struct Built<'a> {
    pub steps: SessionSteps<'a>,
    open: HashMap<String, Open>,
    links: LinkIds,
}

/// Whether a message's `metadata` shows it to the user and to the model (both by default).
fn visibility(m: &Node<'_>) -> (bool, bool) {
    let meta = &m["metadata"];
    let flag = |k: &str| meta[k].as_bool().unwrap_or(true);
    (flag("userVisible"), flag("agentVisible"))
}

impl<'a> Built<'a> {
    pub fn new() -> Built<'a> {
        Built {
            steps: SessionSteps::new("details.goose"),
            open: HashMap::new(),
            links: LinkIds::default(),
        }
    }

    /// Adds the steps of message `msg`.
    pub fn message(&mut self, msg: &Message<'_, 'a>) {
        let (line, m) = (msg.line, msg.m);
        let first_step = self.steps.content.len();
        let items: Vec<Node<'a>> = match &m["content"] {
            Node::Array(items) => items.clone(),
            _ => {
                self.steps.left.wrong_type(
                    line,
                    "/content",
                    "the message's content is not a JSON list of content items",
                );
                self.keep(m, None, Vec::new(), &Vec::new());
                return;
            }
        };
        let mut taken: Taken = vec![&[]; items.len()];
        let (user_visible, agent_visible) = visibility(m);
        let role = m["role"].as_str().unwrap_or_default();
        if !user_visible && !agent_visible {
            // Replaced by a compaction's copy: kept whole in details.
            self.steps.left.lines += 1;
            self.keep(m, None, items, &taken);
            return;
        }
        if !user_visible {
            self.agent_only(line, role, &items, &mut taken);
        } else if role == "assistant" {
            self.assistant(line, &items, &mut taken);
        } else {
            self.incoming(line, role, &items, &mut taken);
        }
        let made = self.steps.content.len() > first_step;
        self.steps.kept_messages += u64::from(made);
        self.keep(m, made.then_some(first_step), items, &taken);
    }

    /// The message's entry in details: its fields, the content items (without what steps
    /// hold; items wholly held left out, their indexes kept), its first step.
    fn keep(&mut self, m: &Node<'a>, step: Option<usize>, items: Vec<Node<'a>>, taken: &Taken) {
        let mut kept = Node::Object(node_fields_except(m, &["content"]));
        let rest: Vec<Node<'a>> = items
            .iter()
            .enumerate()
            .filter_map(|(k, item)| {
                let keys = taken.get(k).copied().unwrap_or(&[]);
                if keys.is_empty() {
                    let mut whole = item.clone();
                    whole.insert("index", Node::from(k as u64));
                    return Some(whole);
                }
                let left = node_fields_except(item, keys);
                let extra = left.iter().any(|(key, _)| key.as_ref() != "type");
                extra.then(|| {
                    let mut n = Node::Object(left);
                    n.insert("index", Node::from(k as u64));
                    n
                })
            })
            .collect();
        if !rest.is_empty() || m["content"].as_array().is_none() {
            kept.insert(
                "content",
                if m["content"].as_array().is_some() {
                    Node::Array(rest)
                } else {
                    m["content"].clone()
                },
            );
        }
        kept.insert("step", step.map_or(Node::Null, |s| Node::from(s as u64)));
        self.steps.messages.push(kept);
    }

    /// A message Goose wrote for the model alone: a compaction's summary (a user message)
    /// or its note to the model to go on (an assistant message), as observations.
    fn agent_only(&mut self, line: u64, role: &str, items: &[Node<'a>], taken: &mut Taken) {
        let name = if role == "assistant" {
            "compact_continuation"
        } else {
            "compact_summary"
        };
        let first = self.steps.content.len();
        for (k, item) in items.iter().enumerate() {
            match item["type"].as_str() {
                Some("text") => {
                    if let Some(t) = self.text_of(line, k, item, "text") {
                        taken[k] = &["type", "text"];
                        self.observe(Step::environment_text(Some(name.to_owned()), t));
                    }
                }
                _ => self.other(line, k, item, taken),
            }
        }
        if role != "assistant" && self.steps.content.len() > first {
            self.compaction(first, line, "summary");
        }
    }

    /// Lists a compaction whose step is `step`.
    fn compaction(&mut self, step: usize, line: u64, kind: &'static str) {
        self.steps.compactions.push(Node::object([
            ("step", Node::from(step as u64)),
            ("line", Node::from(line)),
            ("kind", Node::from(kind)),
        ]));
    }

    /// A user message's items: observations, and the results of calls.
    fn incoming(&mut self, line: u64, role: &str, items: &[Node<'a>], taken: &mut Taken) {
        for (k, item) in items.iter().enumerate() {
            match item["type"].as_str() {
                Some("text") => {
                    if let Some(t) = self.text_of(line, k, item, "text") {
                        taken[k] = &["type", "text"];
                        self.observe(if role == "user" {
                            Step::user_text(t)
                        } else {
                            Step::environment_text(Some(role.to_owned()), t)
                        });
                    }
                }
                Some("image") => self.image(line, k, item, Source::User, taken),
                Some("toolResponse") => self.result(line, k, item, taken),
                _ => self.other(line, k, item, taken),
            }
        }
    }

    /// An assistant message's items: reasoning, texts and calls are actions.
    fn assistant(&mut self, line: u64, items: &[Node<'a>], taken: &mut Taken) {
        let mut pending = Pending::new(&["type", "text"], THOUGHT_KEYS);
        for (k, item) in items.iter().enumerate() {
            match item["type"].as_str() {
                Some(kind @ ("thinking" | "reasoning")) => {
                    let key = if kind == "thinking" {
                        "thinking"
                    } else {
                        "text"
                    };
                    if let Some(t) = item[key].as_str().filter(|t| !t.trim().is_empty()) {
                        pending.think(k, t);
                    }
                }
                Some("text") => {
                    if let Some(t) = self.text_of(line, k, item, "text") {
                        if let Some(m) = pending.text(k, t, taken) {
                            self.act(m);
                        }
                    }
                }
                Some("toolRequest" | "frontendToolRequest") => {
                    let (description, reasoning) = pending.for_call(taken);
                    self.call(line, k, item, description, reasoning, taken);
                }
                Some("toolResponse") => {
                    self.flush(&mut pending, taken);
                    self.result(line, k, item, taken);
                }
                Some("image") => {
                    self.flush(&mut pending, taken);
                    self.image(line, k, item, Source::Agent, taken);
                }
                _ => self.other(line, k, item, taken),
            }
        }
        self.flush(&mut pending, taken);
        if pending.thought_left() {
            // Reasoning with no text or call after it: kept whole in the message's content.
            self.steps.left.blocks += 1;
        }
    }

    /// Writes the pending text as a message, with the pending reasoning.
    fn flush(&mut self, pending: &mut Pending, taken: &mut Taken) {
        if let Some(m) = pending.flush(taken) {
            self.act(m);
        }
    }

    /// A `toolRequest` as an action, linked by its id (made unique when an earlier call had
    /// it). A request Goose could not parse (`toolCall.status` "error") is no step.
    fn call(
        &mut self,
        line: u64,
        k: usize,
        item: &Node<'a>,
        description: Option<String>,
        reasoning: Option<String>,
        taken: &mut Taken,
    ) {
        let call = &item["toolCall"];
        let value = &call["value"];
        let Some(name) = value["name"].as_str().filter(|n| !n.is_empty()) else {
            let why = match call["error"].as_str() {
                Some(e) => format!("a tool request Goose could not read: {e}"),
                None => "a tool request without a tool name".to_owned(),
            };
            self.steps
                .left
                .unmapped(line, &format!("/content/{k}/toolCall"), why);
            if let Some(d) = description {
                self.act(Step::message(d, None));
            }
            return;
        };
        let kwargs = match &value["arguments"] {
            Node::Null => JsonObject::new(),
            args => parse_arguments(args).unwrap_or_else(|why| {
                self.steps.left.unmapped(
                    line,
                    &format!("/content/{k}/toolCall/value/arguments"),
                    why,
                );
                JsonObject::from_iter([("arguments".to_owned(), args.to_value())])
            }),
        };
        taken[k] = &["type", "id", "toolCall"];
        let mut step = call_step(name, kwargs, CODE_TOOLS);
        step.set_thought(description, reasoning);
        let native = item["id"].as_str().unwrap_or_default().to_owned();
        let base = if native.is_empty() {
            format!("call-{line}-{k}")
        } else {
            native.clone()
        };
        let (link, renamed) = self.links.unique(base);
        if renamed {
            self.steps.renamed_call(&native, &link);
        }
        self.open.insert(
            native,
            Open {
                link: link.clone(),
                name: name.to_owned(),
            },
        );
        self.act(step.with_tool_call_id(link));
    }

    /// A `toolResponse` as an observation linked to its call (unlinked when no open call has
    /// its id): its text items (and the text of embedded resources) joined by newlines, or
    /// the error; each image it holds an image observation after it.
    fn result(&mut self, line: u64, k: usize, item: &Node<'a>, taken: &mut Taken) {
        let result = &item["toolResult"];
        let native = item["id"].as_str().unwrap_or_default();
        // A bare list of items (before Goose 1.10), or a CallToolResult's `content`.
        let (items, is_error) = match (&result["value"], result["status"].as_str()) {
            (_, Some("error")) => (None, true),
            (Node::Array(items), _) => (Some(items.as_slice()), false),
            (v @ Node::Object(_), _) => (
                v["content"].as_array(),
                v["isError"].as_bool() == Some(true),
            ),
            _ => (None, false),
        };
        let mut texts = Vec::new();
        let mut images = Vec::new();
        let mut whole = true;
        match items {
            Some(items) => {
                for it in items {
                    match (it["type"].as_str(), it["resource"]["text"].as_str()) {
                        (Some("text"), _) => texts.push(it["text"].as_str().unwrap_or_default()),
                        (Some("resource"), Some(t)) => texts.push(t),
                        (Some("image"), _) => match image_uri(it) {
                            Some(uri) => images.push(uri),
                            None => whole = false,
                        },
                        _ => whole = false,
                    }
                }
            }
            None if is_error => texts.push(result["error"].as_str().unwrap_or_default()),
            None => {
                self.steps.left.unmapped(
                    line,
                    &format!("/content/{k}/toolResult"),
                    "a tool response with neither a result nor an error",
                );
                return;
            }
        }
        if whole {
            taken[k] = &["type", "id", "toolResult"];
        } else {
            // An item of a kind no step holds (audio, a binary resource): the response is kept
            // whole in details.
            self.steps.left.blocks += 1;
        }
        let open = self.open.remove(native);
        let name = open.as_ref().map(|o| o.name.clone());
        let step = Step::environment_text(name.clone(), texts.join("\n"));
        if is_error {
            self.steps.error_result(native);
        }
        match open {
            Some(o) => self.steps.content.push(step.with_tool_call_id(o.link)),
            None => {
                self.steps.unlinked_result(native, "line", line);
                self.observe(step);
            }
        }
        for uri in images {
            self.steps.images += 1;
            self.steps
                .content
                .push(Step::image(uri, Source::Environment));
        }
    }

    /// An `image` item (base64 `data`, `mimeType`) as an image observation.
    fn image(&mut self, line: u64, k: usize, item: &Node<'a>, source: Source, taken: &mut Taken) {
        match image_uri(item) {
            Some(uri) => {
                taken[k] = &["type", "data", "mimeType"];
                self.steps.images += 1;
                self.observe(Step::image(uri, source));
            }
            None => self.steps.left.unmapped(
                line,
                &format!("/content/{k}/data"),
                "an image item without image data",
            ),
        }
    }

    /// An item no step of its message's kind holds. An older compaction marker
    /// (`conversationCompacted`) and an error Goose showed (`error`) are observations; the
    /// notices and requests of Goose's interface (`systemNotification`,
    /// `toolConfirmationRequest`, `actionRequired`, `contextLengthExceeded`,
    /// `summarizationRequested`), `redactedThinking` and `document` stay in details, counted as
    /// blocks; any other type is counted as unmapped.
    fn other(&mut self, line: u64, k: usize, item: &Node<'a>, taken: &mut Taken) {
        match item["type"].as_str() {
            Some("conversationCompacted") => {
                let at = self.steps.content.len();
                if let Some(t) = self.text_of(line, k, item, "msg") {
                    taken[k] = &["type", "msg"];
                    self.observe(Step::environment_text(Some("compaction".to_owned()), t));
                    self.compaction(at, line, "conversationCompacted");
                }
            }
            Some("error") => {
                if let Some(t) = self.text_of(line, k, item, "message") {
                    taken[k] = &["type", "message"];
                    self.observe(Step::environment_text(Some("error".to_owned()), t));
                }
            }
            Some(
                "systemNotification"
                | "toolConfirmationRequest"
                | "actionRequired"
                | "contextLengthExceeded"
                | "summarizationRequested"
                | "redactedThinking"
                | "document"
                | "thinking"
                | "reasoning",
            ) => self.steps.left.blocks += 1,
            kind => self.steps.left.unmapped(
                line,
                &format!("/content/{k}/type"),
                format!(
                    "a content item of type {:?} has no step here",
                    kind.unwrap_or("(none)")
                ),
            ),
        }
    }

    /// The text of `item[key]`: `None` when it is blank (no step), or not text (counted).
    fn text_of(&mut self, line: u64, k: usize, item: &Node<'a>, key: &str) -> Option<String> {
        match &item[key] {
            Node::String(s) if s.trim().is_empty() => None,
            Node::String(s) => Some(s.to_string()),
            _ => {
                self.steps.left.unmapped(
                    line,
                    &format!("/content/{k}/{key}"),
                    format!("an item whose {key} is not text"),
                );
                None
            }
        }
    }

    /// Adds an action.
    fn act(&mut self, step: Step) {
        self.steps.content.push(step);
    }

    /// Adds an observation that answers no call. When the step before it is a call no result
    /// answered yet (a call Goose canceled, then the next prompt), an empty result linked to
    /// the call goes first: a call followed by an observation must be answered.
    fn observe(&mut self, step: Step) {
        if let Some(prev) = self.steps.content.last().filter(|s| s.is_tool_action()) {
            if let Some(link) = prev.tool_call_id().map(str::to_owned) {
                let native = self
                    .open
                    .iter()
                    .find(|(_, o)| o.link == link)
                    .map(|(n, _)| n.clone());
                if let Some(o) = native.and_then(|n| self.open.remove(&n)) {
                    self.steps.unanswered_calls.push(Node::object([
                        ("step", Node::from((self.steps.content.len() - 1) as u64)),
                        ("id", Node::from(link.clone())),
                        ("empty_result", Node::Bool(true)),
                    ]));
                    self.steps
                        .content
                        .push(Step::environment_text(Some(o.name), "").with_tool_call_id(link));
                }
            }
        }
        self.steps.content.push(step);
    }

    /// Settles the calls no result answered: each loses its id and is listed in
    /// `unanswered_calls`.
    pub fn finish(&mut self) {
        self.steps.unlink_unanswered();
    }
}

/// The keys of a reasoning item a step holds (`thinking`'s text, or `reasoning`'s).
const THOUGHT_KEYS: &[&str] = &["type", "thinking", "text"];

/// A `data:` URI of an image item (`data` base64, `mimeType`).
fn image_uri(item: &Node<'_>) -> Option<String> {
    let data = item["data"].as_str().filter(|d| !d.is_empty())?;
    let mime = item["mimeType"].as_str().unwrap_or("image/png");
    Some(format!("data:{mime};base64,{data}"))
}

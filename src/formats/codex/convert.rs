//! A rollout's lines as steps and `details.codex` (the mapping is in docs/formats/codex.md).
//!
//! Steps come from response items only. Event messages that repeat a response item (the
//! user's message, the agent's message, reasoning) are counted, not kept; those that repeat
//! nothing (an agent message or reasoning of a rollout whose response items lack it) are read
//! as the items would be; all other events are kept in `details.codex.events`.

use foldhash::{HashMap, HashMapExt, HashSet};
use std::borrow::Cow;

use serde_json::{json, Value};

use super::order::outputs_first;
use super::text::{self, argv_command, injected_context};
use crate::convert::{LeftOut, Partial};
use crate::formats::chat::{parse_arguments, system_step};
use crate::formats::kit::{file_stem, source_details};
use crate::ingest::RawRecord;
use crate::json::Node;
use crate::model::{JsonObject, Source, Step, Trajectory};
use crate::validate::Diagnostic;

/// The entries of an object node.
type Obj<'a> = Vec<(Cow<'a, str>, Node<'a>)>;

/// What one line of the rollout is.
enum Kind<'n, 'a> {
    /// `session_meta` (its payload), or the bare header of a legacy rollout (the line).
    SessionMeta(&'n Node<'a>),
    TurnContext(&'n Node<'a>),
    /// A response item: an envelope's payload, or a bare item of a legacy rollout; with the
    /// JSON pointer to it in its line.
    Item(&'n Node<'a>, Cow<'static, str>),
    Event(&'n Node<'a>),
    Compacted(&'n Node<'a>),
    /// `{"record_type": "state"}` of a legacy rollout.
    LegacyState,
    /// A line Codex writes for its own bookkeeping (`world_state`, ...): kept, no step.
    Bookkeeping(&'static str),
    /// A line of a type this reader does not know (`Lost::Value`), or without a string `type`
    /// (`Lost::WrongType`), with the reason.
    Unknown(Lost, String),
}

/// What a value no step holds is, for [`LeftOut`]: a value of a kind the reader does not map, a
/// content part (block) of a type no step holds, or a value of the wrong type.
#[derive(Clone, Copy)]
enum Lost {
    Value,
    Block,
    WrongType,
}

/// Line types Codex writes that hold no step: the model-visible world state it diffs against
/// (`world_state`) and the bookkeeping of messages between agents (whose content the
/// `agent_message` items hold).
const BOOKKEEPING_LINES: &[&str] = &[
    "world_state",
    "inter_agent_communication",
    "inter_agent_communication_metadata",
];

/// Response items that hold no step: a snapshot of the work tree for undo (`ghost_snapshot`),
/// the tools offered to the model (`additional_tools`, never written by current CLIs) and the
/// marker of a compaction request (`compaction_trigger`).
const BOOKKEEPING_ITEMS: &[&str] = &["ghost_snapshot", "additional_tools", "compaction_trigger"];

impl Kind<'_, '_> {
    fn label(&self) -> &'static str {
        match self {
            Kind::SessionMeta(_) => "session_meta",
            Kind::TurnContext(_) => "turn_context",
            Kind::Item(..) => "response_item",
            Kind::Event(_) => "event_msg",
            Kind::Compacted(_) => "compacted",
            Kind::LegacyState => "state",
            Kind::Bookkeeping(t) => t,
            Kind::Unknown(..) => "other",
        }
    }
}

fn kind<'n, 'a>(entry: &'n Node<'a>, first: bool) -> Kind<'n, 'a> {
    match (entry["type"].as_str(), entry.get("payload")) {
        (Some(t), Some(p)) => match t {
            "session_meta" => Kind::SessionMeta(p),
            "turn_context" => Kind::TurnContext(p),
            "response_item" => Kind::Item(p, Cow::Borrowed("/payload")),
            "event_msg" => Kind::Event(p),
            "compacted" => Kind::Compacted(p),
            other => match BOOKKEEPING_LINES.iter().find(|b| **b == other) {
                Some(b) => Kind::Bookkeeping(b),
                None => Kind::Unknown(Lost::Value, format!("a {other:?} line is not mapped")),
            },
        },
        (Some(_), None) => Kind::Item(entry, Cow::Borrowed("")),
        (None, _) if entry.get("record_type").is_some() => Kind::LegacyState,
        (None, _) if first && entry["id"].as_str().is_some() => Kind::SessionMeta(entry),
        (None, _) => Kind::Unknown(
            Lost::WrongType,
            "a line without a string `type` is not mapped".into(),
        ),
    }
}

/// The texts response items hold, to tell the event messages that repeat them.
#[derive(Default)]
struct Said<'n> {
    user: HashSet<Cow<'n, str>>,
    assistant: HashSet<Cow<'n, str>>,
    summary: HashSet<Cow<'n, str>>,
    raw: HashSet<Cow<'n, str>>,
    /// Call ids some output answers.
    answered: HashSet<&'n str>,
}

/// Adds each of `texts`, and all of them joined, trimmed.
fn remember<'n>(set: &mut HashSet<Cow<'n, str>>, texts: &[&'n str]) {
    for t in texts {
        set.insert(Cow::Borrowed(t.trim()));
    }
    if texts.len() > 1 {
        for sep in ["\n", "\n\n"] {
            set.insert(Cow::Owned(texts.join(sep).trim().to_owned()));
        }
    }
}

/// The string `text` of each part of a list of content parts (a string content is one part).
fn part_texts<'n>(content: &'n Node<'_>) -> Vec<&'n str> {
    match content {
        Node::String(s) => vec![s.as_ref()],
        Node::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => Vec::new(),
    }
}

impl<'n> Said<'n> {
    fn read(&mut self, item: &'n Node<'_>) {
        match item["type"].as_str() {
            Some("message") => match item["role"].as_str() {
                Some("user") => remember(&mut self.user, &part_texts(&item["content"])),
                Some("assistant") => remember(&mut self.assistant, &part_texts(&item["content"])),
                _ => {}
            },
            Some("reasoning") => {
                remember(&mut self.summary, &part_texts(&item["summary"]));
                remember(&mut self.raw, &part_texts(&item["content"]));
            }
            Some(
                "function_call_output"
                | "custom_tool_call_output"
                | "local_shell_call_output"
                | "tool_search_output",
            ) => {
                if let Some(id) = item["call_id"].as_str() {
                    self.answered.insert(id);
                }
            }
            _ => {}
        }
    }

    fn has(set: &HashSet<Cow<'n, str>>, text: &str) -> bool {
        set.contains(text.trim())
    }
}

/// An assistant text waiting to become the next call's description or a message.
struct Pending<'a> {
    text: String,
    line: u64,
    timestamp: Node<'a>,
    item: &'static str,
    fields: Obj<'a>,
}

/// Reasoning waiting for the next action.
struct Thought<'a> {
    text: String,
    line: u64,
    item: &'static str,
    fields: Obj<'a>,
}

/// A call made, by its id.
struct Call<'n> {
    step: usize,
    name: &'n str,
    answered: bool,
}

/// `details.codex` as it is gathered.
#[derive(Default)]
struct Details<'a> {
    session_meta: Option<Node<'a>>,
    more_session_meta: Vec<Node<'a>>,
    legacy_state: Vec<Node<'a>>,
    turn_contexts: Vec<Node<'a>>,
    steps: Vec<Node<'a>>,
    reasoning: Vec<Node<'a>>,
    extras: Vec<Node<'a>>,
    events: Vec<Node<'a>>,
    repeated_events: Vec<(&'static str, u64)>,
    compactions: Vec<Node<'a>>,
    bookkeeping: Vec<Node<'a>>,
    synthetic_outputs: Vec<Node<'a>>,
    unanswered_calls: Vec<(usize, Node<'a>)>,
    orphan_outputs: Vec<Node<'a>>,
    unmapped: Vec<Node<'a>>,
}

struct Builder<'n, 'a> {
    content: Vec<Step>,
    step_lines: Vec<u64>,
    text: Option<Pending<'a>>,
    thoughts: Vec<Thought<'a>>,
    calls: HashMap<&'n str, Call<'n>>,
    /// Calls that can be linked to nothing (no id, or an id an earlier call has): step, id.
    unlinkable: Vec<(usize, Option<&'n str>)>,
    d: Details<'a>,
    /// Call ids some output of the rollout answers.
    answered_later: HashSet<&'n str>,
    /// What the steps leave out, for `details.source.left_out`.
    left: LeftOut,
    /// Conversation messages (user and assistant messages, tool outputs) read, and kept as steps.
    messages: (u64, u64),
}

fn num<'a>(n: u64) -> Node<'a> {
    Node::from(n)
}

fn index<'a>(i: usize) -> Node<'a> {
    Node::from(i as u64)
}

fn string<'a>(s: impl Into<String>) -> Node<'a> {
    Node::String(Cow::Owned(s.into()))
}

/// A `Value` (parsed arguments) as a node that owns its strings.
fn owned(v: Value) -> Node<'static> {
    match v {
        Value::Null => Node::Null,
        Value::Bool(b) => Node::Bool(b),
        Value::Number(n) => Node::Number(n),
        Value::String(s) => Node::String(Cow::Owned(s)),
        Value::Array(items) => Node::Array(items.into_iter().map(owned).collect()),
        Value::Object(map) => Node::Object(
            map.into_iter()
                .map(|(k, v)| (Cow::Owned(k), owned(v)))
                .collect(),
        ),
    }
}

/// The entries of `payload` other than `type`, `used` and nulls.
fn rest<'a>(payload: &Node<'a>, used: &[&str]) -> Obj<'a> {
    payload
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, v)| k != "type" && !used.contains(&k.as_ref()) && !v.is_null())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// `node` without the keys `drop`, entries in order.
fn without<'a>(node: &Node<'a>, drop: &[&str]) -> Node<'a> {
    match node {
        Node::Object(entries) => Node::Object(
            entries
                .iter()
                .filter(|(k, _)| !drop.contains(&k.as_ref()))
                .cloned()
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Call arguments as kwargs: a JSON object, a string holding one (empty: none), or null (none).
fn arguments_of(arguments: &Node<'_>) -> Result<JsonObject, String> {
    match arguments {
        Node::Null => Ok(JsonObject::new()),
        other => parse_arguments(other),
    }
}

/// A shell call's command line: the tool's command argument as one string, the argument's
/// key, and the argv's first two words when they only wrapped a script (see
/// [`argv_command`]).
fn shell_command(name: &str, kwargs: &JsonObject) -> Option<(String, &'static str, Option<Value>)> {
    let string = |key: &'static str| {
        kwargs
            .get(key)
            .and_then(Value::as_str)
            .map(|s| (s.to_owned(), key, None))
    };
    match name {
        "shell" | "container.exec" | "local_shell" => match kwargs.get("command") {
            Some(Value::Array(words)) => {
                let argv: Option<Vec<&str>> = words.iter().map(Value::as_str).collect();
                let argv = argv.filter(|a| !a.is_empty())?;
                let (command, prefix) = argv_command(&argv);
                Some((command, "command", prefix.map(|p| json!(p))))
            }
            _ => string("command"),
        },
        "shell_command" => string("command"),
        "exec_command" => string("cmd").or_else(|| string("command")),
        _ => None,
    }
}

impl<'n, 'a> Builder<'n, 'a> {
    fn new(answered_later: HashSet<&'n str>) -> Self {
        Builder {
            answered_later,
            content: Vec::new(),
            step_lines: Vec::new(),
            text: None,
            thoughts: Vec::new(),
            calls: HashMap::new(),
            unlinkable: Vec::new(),
            d: Details::default(),
            left: LeftOut::new("details.codex"),
            messages: (0, 0),
        }
    }

    fn step_at(&mut self, step: Step, line: u64, timestamp: &Node<'a>) -> usize {
        self.content.push(step);
        self.step_lines.push(line);
        self.d.steps.push(Node::object([
            ("line", num(line)),
            ("timestamp", timestamp.clone()),
        ]));
        self.content.len() - 1
    }

    /// Keeps an item's fields no step holds, with the step made of it.
    fn extra(&mut self, line: u64, step: Option<usize>, item: &'static str, fields: Obj<'a>) {
        if fields.is_empty() {
            return;
        }
        self.d.extras.push(Node::object([
            ("line", num(line)),
            ("step", step.map_or(Node::Null, index)),
            ("item", Node::from(item)),
            ("fields", Node::Object(fields)),
        ]));
    }

    /// Keeps a value no step holds in `unmapped`, counted in `left` as what it is.
    fn unmapped(
        &mut self,
        lost: Lost,
        line: u64,
        pointer: String,
        reason: String,
        value: &Node<'a>,
    ) {
        match lost {
            Lost::Value => self.left.unmapped(line, &pointer, reason.as_str()),
            Lost::Block => self.left.blocks += 1,
            Lost::WrongType => self.left.wrong_type(line, &pointer, reason.as_str()),
        }
        self.d.unmapped.push(Node::object([
            ("line", num(line)),
            ("pointer", string(pointer)),
            ("reason", string(reason)),
            ("value", value.clone()),
        ]));
    }

    /// Puts the steps in link order ([`outputs_first`]), with their lines and `details.codex`
    /// entries; a step moved after an output is marked `moved` in `steps`. Returns the new
    /// index of each old one.
    fn place_outputs_first(&mut self) -> Vec<usize> {
        let (order, moved) = outputs_first(&self.content);
        let mut new_at = vec![0; order.len()];
        for (k, &old) in order.iter().enumerate() {
            new_at[old] = k;
        }
        if moved.is_empty() {
            return new_at;
        }
        for &old in &moved {
            self.d.steps[old].insert("moved", Node::Bool(true));
        }
        let mut content: Vec<Option<Step>> = self.content.drain(..).map(Some).collect();
        let mut steps: Vec<Option<Node<'a>>> = self.d.steps.drain(..).map(Some).collect();
        for &old in &order {
            if let (Some(step), Some(entry)) = (content[old].take(), steps[old].take()) {
                self.content.push(step);
                self.d.steps.push(entry);
            }
        }
        self.step_lines = order.iter().map(|&old| self.step_lines[old]).collect();
        let d = &mut self.d;
        for list in [
            &mut d.reasoning,
            &mut d.extras,
            &mut d.compactions,
            &mut d.orphan_outputs,
            &mut d.synthetic_outputs,
        ] {
            for entry in list.iter_mut() {
                let old = entry["step"].as_u64().map(|s| s as usize);
                if let Some(&new) = old.and_then(|old| new_at.get(old)) {
                    entry.insert("step", index(new));
                }
            }
        }
        new_at
    }

    /// Keeps a bookkeeping line or item (`kind`, at `pointer` in its line) that no step holds,
    /// counted as a line left out.
    fn bookkeeping(&mut self, line: u64, pointer: &str, kind: &'static str, value: &Node<'a>) {
        self.left.lines += 1;
        self.d.bookkeeping.push(Node::object([
            ("line", num(line)),
            ("pointer", string(pointer)),
            ("type", Node::from(kind)),
            ("value", value.clone()),
        ]));
    }

    /// The waiting reasoning, joined, for the step about to be made at `step`.
    fn take_thoughts(&mut self, step: usize) -> Option<String> {
        let mut texts: Vec<String> = Vec::new();
        for t in std::mem::take(&mut self.thoughts) {
            if !t.fields.is_empty() {
                self.d.reasoning.push(Node::object([
                    ("line", num(t.line)),
                    ("step", index(step)),
                    ("item", Node::from(t.item)),
                    ("fields", Node::Object(t.fields)),
                ]));
            }
            if !t.text.is_empty() {
                texts.push(t.text);
            }
        }
        (!texts.is_empty()).then(|| texts.join("\n\n"))
    }

    /// An action: the waiting text is its description, the waiting reasoning its thought.
    fn action(&mut self, mut step: Step, line: u64, timestamp: &Node<'a>) -> usize {
        let at = self.content.len();
        let description = self.text.take().map(|t| {
            self.extra(t.line, Some(at), t.item, t.fields);
            t.text
        });
        let reasoning = self.take_thoughts(at);
        step.set_thought(description, reasoning);
        self.step_at(step, line, timestamp)
    }

    /// The waiting text as a message (with the waiting reasoning); reasoning no action took is
    /// kept in details with its text.
    fn flush(&mut self) {
        if let Some(t) = self.text.take() {
            let at = self.content.len();
            self.extra(t.line, Some(at), t.item, t.fields);
            let reasoning = self.take_thoughts(at);
            let mut m = Step::message(t.text, None);
            m.set_thought(None, reasoning);
            self.step_at(m, t.line, &t.timestamp);
        }
        for t in std::mem::take(&mut self.thoughts) {
            let mut entry = vec![
                ("line", num(t.line)),
                ("step", Node::Null),
                ("item", Node::from(t.item)),
                ("text", string(t.text)),
            ];
            if !t.fields.is_empty() {
                entry.push(("fields", Node::Object(t.fields)));
            }
            self.d.reasoning.push(Node::object(entry));
        }
    }

    fn observe(&mut self, step: Step, line: u64, timestamp: &Node<'a>) -> usize {
        self.flush();
        if !step
            .tool_call_id()
            .is_some_and(|id| self.calls.contains_key(id))
        {
            self.answer_unanswered_call();
        }
        self.step_at(step, line, timestamp)
    }

    /// When the last step is a call no output of the rollout answers, and an observation
    /// (not its output) is about to follow it, the output Codex itself gives the model for
    /// such a call when it sends the history again (`aborted`; nothing for a hosted web search
    /// or image generation), marked in `details.codex.steps` and listed in
    /// `synthetic_outputs`: ADP would otherwise take that observation for the call's result.
    fn answer_unanswered_call(&mut self) {
        let Some(last) = self.content.len().checked_sub(1) else {
            return;
        };
        let Some(id) = self.content[last].tool_call_id().map(str::to_owned) else {
            return;
        };
        let Some((&key, call)) = self.calls.get_key_value(id.as_str()) else {
            return;
        };
        if call.answered || call.step != last || self.answered_later.contains(key) {
            return;
        }
        let name = call.name.to_owned();
        if let Some(c) = self.calls.get_mut(key) {
            c.answered = true;
        }
        let text = match name.as_str() {
            "web_search" | "image_generation" => "",
            _ => "aborted",
        };
        let line = self.step_lines[last];
        let step = Step::environment_text(Some(name), text).with_tool_call_id(id.as_str());
        let at = self.step_at(step, line, &Node::Null);
        self.d.steps[at].insert("synthetic", Node::Bool(true));
        self.d
            .synthetic_outputs
            .push(Node::object([("step", index(at)), ("id", string(id))]));
    }

    fn say(&mut self, said: Pending<'a>) {
        if self.text.is_some() {
            self.flush();
        }
        self.text = Some(said);
    }

    fn think(&mut self, text: String, line: u64, item: &'static str, fields: Obj<'a>) {
        if !text.is_empty() || !fields.is_empty() {
            self.thoughts.push(Thought {
                text,
                line,
                item,
                fields,
            });
        }
    }

    /// A tool call: an action linked by `id` when it is the first call with that id.
    #[allow(clippy::too_many_arguments)]
    fn call(
        &mut self,
        step: Step,
        id: Option<&'n str>,
        name: &'n str,
        line: u64,
        timestamp: &Node<'a>,
        item: &'static str,
        mut fields: Obj<'a>,
    ) {
        let at = self.action(step, line, timestamp);
        match id {
            Some(id) if !self.calls.contains_key(id) => {
                *self.content[at].tool_call_id_mut() = Some(id.to_owned());
                self.calls.insert(
                    id,
                    Call {
                        step: at,
                        name,
                        answered: false,
                    },
                );
            }
            other => {
                if other.is_some() {
                    fields.push(("duplicate_call_id".into(), Node::Bool(true)));
                }
                self.unlinkable.push((at, other));
            }
        }
        self.extra(line, Some(at), item, fields);
    }

    fn line(&mut self, k: Kind<'n, 'a>, line: u64, timestamp: &Node<'a>, said: &Said<'n>) {
        match k {
            Kind::SessionMeta(p) => self.session_meta(p, line, timestamp),
            Kind::TurnContext(p) => {
                // A context the same as the one before it adds only its line.
                if let Some(Node::Object(prev)) = self
                    .d
                    .turn_contexts
                    .last_mut()
                    .filter(|prev| prev["payload"] == *p)
                {
                    match prev.iter_mut().find(|(k, _)| k == "same_at_lines") {
                        Some((_, Node::Array(lines))) => lines.push(num(line)),
                        _ => prev.push(("same_at_lines".into(), Node::Array(vec![num(line)]))),
                    }
                    return;
                }
                self.d.turn_contexts.push(Node::object([
                    ("line", num(line)),
                    ("timestamp", timestamp.clone()),
                    ("payload", p.clone()),
                ]));
            }
            Kind::Item(p, base) => self.item(p, &base, line, timestamp),
            Kind::Event(p) => self.event(p, line, timestamp, said),
            Kind::Compacted(p) => {
                // The text waiting for a call came before the compaction: its step too.
                self.flush();
                self.d.compactions.push(Node::object([
                    ("line", num(line)),
                    ("timestamp", timestamp.clone()),
                    ("step", index(self.content.len())),
                    ("payload", p.clone()),
                ]))
            }
            Kind::LegacyState | Kind::Bookkeeping(_) | Kind::Unknown(..) => {}
        }
    }

    fn session_meta(&mut self, p: &'n Node<'a>, line: u64, timestamp: &Node<'a>) {
        let entry = |payload: Node<'a>| {
            Node::object([
                ("line", num(line)),
                ("timestamp", timestamp.clone()),
                ("payload", payload),
            ])
        };
        if self.d.session_meta.is_some() {
            self.d.more_session_meta.push(entry(p.clone()));
            return;
        }
        let mut kept = p.clone();
        if let Some(text) = p["base_instructions"]["text"].as_str() {
            if !text.is_empty() {
                self.observe(system_step(text.to_owned()), line, timestamp);
                let base = without(&p["base_instructions"], &["text"]);
                let base_empty = base.as_object().is_some_and(Vec::is_empty);
                kept = if base_empty {
                    without(&kept, &["base_instructions"])
                } else {
                    let mut k = kept;
                    k.insert("base_instructions", base);
                    k
                };
            }
        }
        if let Some(text) = p["instructions"].as_str() {
            if !text.is_empty() {
                self.observe(system_step(text.to_owned()), line, timestamp);
                kept = without(&kept, &["instructions"]);
            }
        }
        self.d.session_meta = Some(entry(kept));
    }

    fn item(&mut self, p: &'n Node<'a>, base: &str, line: u64, timestamp: &Node<'a>) {
        match p["type"].as_str() {
            Some("message") => self.message(p, base, line, timestamp),
            Some("reasoning") => {
                let raw = part_texts(&p["content"]);
                let (text, used) = if raw.is_empty() {
                    (part_texts(&p["summary"]).join("\n\n"), "summary")
                } else {
                    (raw.join("\n\n"), "content")
                };
                self.think(text, line, "reasoning", rest(p, &[used]));
            }
            Some("function_call") => self.function_call(p, base, line, timestamp),
            Some("custom_tool_call") => {
                let Some(name) = p["name"].as_str() else {
                    return self.unmapped(
                        Lost::WrongType,
                        line,
                        base.to_owned(),
                        "a custom_tool_call without a string `name` is not mapped".into(),
                        p,
                    );
                };
                let mut kwargs = JsonObject::new();
                kwargs.insert("input".into(), p["input"].to_value());
                let id = p["call_id"].as_str();
                let fields = rest(p, &["name", "input", "call_id"]);
                let step = Step::api(name, kwargs, None);
                self.call(step, id, name, line, timestamp, "custom_tool_call", fields);
            }
            Some("local_shell_call") => self.local_shell(p, line, timestamp),
            Some("web_search_call") => {
                let (id, id_key) = match p["call_id"].as_str() {
                    Some(id) => (Some(id), "call_id"),
                    None => (p["id"].as_str(), "id"),
                };
                let kwargs = p["action"].to_map();
                let fields = rest(p, &[id_key, "action"]);
                let step = Step::api("web_search", kwargs, None);
                self.call(
                    step,
                    id,
                    "web_search",
                    line,
                    timestamp,
                    "web_search_call",
                    fields,
                );
            }
            Some("tool_search_call") => {
                let id = p["call_id"].as_str();
                let mut fields = rest(p, &["call_id", "arguments"]);
                let kwargs = match arguments_of(&p["arguments"]) {
                    Ok(k) => k,
                    Err(e) => {
                        fields.push(("arguments_error".into(), string(e)));
                        let mut k = JsonObject::new();
                        k.insert("arguments".into(), p["arguments"].to_value());
                        k
                    }
                };
                let step = Step::api("tool_search", kwargs, None);
                self.call(
                    step,
                    id,
                    "tool_search",
                    line,
                    timestamp,
                    "tool_search_call",
                    fields,
                );
            }
            Some(
                "function_call_output" | "custom_tool_call_output" | "local_shell_call_output",
            ) => self.output(
                p,
                base,
                &p["output"],
                &["call_id", "output"],
                line,
                timestamp,
            ),
            Some("tool_search_output") => {
                self.output(p, base, &p["tools"], &["call_id", "tools"], line, timestamp)
            }
            Some("compaction" | "compaction_summary" | "context_compaction") => {
                self.flush();
                self.d.compactions.push(Node::object([
                    ("line", num(line)),
                    ("timestamp", timestamp.clone()),
                    ("step", index(self.content.len())),
                    ("item", p.clone()),
                ]))
            }
            Some("agent_message") => self.message(p, base, line, timestamp),
            Some("image_generation_call") => self.image_generation(p, line, timestamp),
            Some(other) => match BOOKKEEPING_ITEMS.iter().find(|b| **b == other) {
                Some(kind) => self.bookkeeping(line, base, kind, p),
                None => self.unmapped(
                    Lost::Value,
                    line,
                    base.to_owned(),
                    format!("a {other:?} response item is not mapped"),
                    p,
                ),
            },
            None => self.unmapped(
                Lost::WrongType,
                line,
                base.to_owned(),
                "a response item without a string `type` is not mapped".into(),
                p,
            ),
        }
    }

    /// A `message` item, or an `agent_message` item (a message another agent sent this one,
    /// read as an observation named `agent_message`).
    fn message(&mut self, p: &'n Node<'a>, base: &str, line: u64, timestamp: &Node<'a>) {
        let role = match p["type"].as_str() {
            Some("agent_message") => "agent_message",
            _ => p["role"].as_str().unwrap_or_default(),
        };
        let parts: Vec<(usize, &Node<'a>)> = match &p["content"] {
            Node::Array(parts) => parts.iter().enumerate().collect(),
            s @ Node::String(_) => vec![(0, s)],
            _ => Vec::new(),
        };
        if !matches!(p["content"], Node::Array(_) | Node::String(_)) {
            self.unmapped(
                Lost::WrongType,
                line,
                format!("{base}/content"),
                "a message content that is neither a list of parts nor a string".into(),
                &p["content"],
            );
        }
        let fields = rest(p, &["role", "content"]);
        let part_text = |part: &'n Node<'a>| part.as_str().or(part["text"].as_str());
        match role {
            "assistant" => {
                let mut texts: Vec<&str> = Vec::new();
                for &(k, part) in &parts {
                    match part_text(part) {
                        Some(t) => texts.push(t),
                        None => self.unmapped(
                            Lost::Block,
                            line,
                            format!("{base}/content/{k}"),
                            format!(
                                "a {:?} part of an assistant message is not mapped",
                                part["type"].text()
                            ),
                            part,
                        ),
                    }
                }
                let text = texts.join("\n\n");
                self.count_message(!parts.is_empty(), !text.is_empty());
                if text.is_empty() {
                    self.extra(line, None, "message", fields);
                } else {
                    self.say(Pending {
                        text,
                        line,
                        timestamp: timestamp.clone(),
                        item: "message",
                        fields,
                    });
                }
            }
            "user" | "developer" | "system" | "agent_message" => {
                let first = self.content.len();
                // Consecutive text parts of one kind (typed by the user, or one context Codex
                // injected) make one observation.
                let mut group: Option<(Option<&'static str>, Vec<&str>)> = None;
                for &(k, part) in &parts {
                    if let Some(t) = part_text(part) {
                        let class = match role {
                            "user" => injected_context(t),
                            "developer" => injected_context(t).or(Some("developer")),
                            "agent_message" => Some("agent_message"),
                            _ => Some("system"),
                        };
                        match &mut group {
                            Some((c, texts)) if *c == class => texts.push(t),
                            _ => {
                                self.emit(group.take(), line, timestamp);
                                group = Some((class, vec![t]));
                            }
                        }
                    } else if let Some(url) = part["image_url"]
                        .as_str()
                        .or(part["image_url"]["url"].as_str())
                    {
                        self.emit(group.take(), line, timestamp);
                        let source = if role == "user" {
                            Source::User
                        } else {
                            Source::Environment
                        };
                        self.observe(Step::image(url, source), line, timestamp);
                    } else {
                        self.unmapped(
                            Lost::Block,
                            line,
                            format!("{base}/content/{k}"),
                            format!(
                                "a {:?} part of a {role} message is not mapped",
                                part["type"].text()
                            ),
                            part,
                        );
                    }
                }
                self.emit(group, line, timestamp);
                let step = (self.content.len() > first).then_some(first);
                if role == "user" {
                    self.count_message(!parts.is_empty(), step.is_some());
                }
                let item = match role {
                    "agent_message" => "agent_message",
                    _ => "message",
                };
                self.extra(line, step, item, fields);
            }
            _ => self.unmapped(
                Lost::Value,
                line,
                base.to_owned(),
                format!("a message of role {:?} is not mapped", p["role"].text()),
                p,
            ),
        }
    }

    /// Counts a conversation message of the source (`any`: it has content) and whether a step
    /// holds it.
    fn count_message(&mut self, any: bool, kept: bool) {
        if any {
            self.messages.0 += 1;
            self.messages.1 += u64::from(kept);
        }
    }

    /// A hosted image generation: an `api_action` `image_generation` (kwargs: the
    /// `revised_prompt`), answered by the image it made (`result`, base64 PNG) when there is one.
    fn image_generation(&mut self, p: &'n Node<'a>, line: u64, timestamp: &Node<'a>) {
        let id = p["id"].as_str();
        let mut kwargs = JsonObject::new();
        if let Some(prompt) = p["revised_prompt"].as_str() {
            kwargs.insert("revised_prompt".into(), prompt.into());
        }
        let fields = rest(p, &["id", "revised_prompt", "result"]);
        let step = Step::api("image_generation", kwargs, None);
        let at = self.content.len();
        let item = "image_generation_call";
        self.call(step, id, "image_generation", line, timestamp, item, fields);
        let Some(result) = p["result"].as_str().filter(|r| !r.is_empty()) else {
            return;
        };
        let url = match result.starts_with("data:") {
            true => result.to_owned(),
            false => format!("data:image/png;base64,{result}"),
        };
        let mut image = Step::image(url, Source::Environment);
        let call = id.and_then(|id| self.calls.get_mut(id).map(|c| (id, c)));
        if let Some((id, c)) = call.filter(|(_, c)| c.step == at && !c.answered) {
            c.answered = true;
            image = image.with_tool_call_id(id);
        }
        self.observe(image, line, timestamp);
    }

    /// One observation of a user, developer or system message's text parts.
    fn emit(
        &mut self,
        group: Option<(Option<&'static str>, Vec<&str>)>,
        line: u64,
        timestamp: &Node<'a>,
    ) {
        let Some((class, texts)) = group else {
            return;
        };
        let text = texts.join("\n\n");
        if text.trim().is_empty() {
            return;
        }
        let step = match class {
            None => Step::user_text(text),
            Some("system") => system_step(text),
            Some(name) => Step::environment_text(Some(name.to_owned()), text),
        };
        self.observe(step, line, timestamp);
    }

    fn function_call(&mut self, p: &'n Node<'a>, base: &str, line: u64, timestamp: &Node<'a>) {
        let Some(name) = p["name"].as_str() else {
            return self.unmapped(
                Lost::WrongType,
                line,
                base.to_owned(),
                "a function_call without a string `name` is not mapped".into(),
                p,
            );
        };
        let (id, id_key) = match p["call_id"].as_str() {
            Some(id) => (Some(id), "call_id"),
            None => (p["id"].as_str(), "id"),
        };
        let mut fields = rest(p, &["name", "arguments", id_key]);
        let step = match arguments_of(&p["arguments"]) {
            Ok(kwargs) => match shell_command(name, &kwargs) {
                Some((command, key, prefix)) => {
                    let mut others = kwargs;
                    others.shift_remove(key);
                    fields.push(("tool".into(), string(name)));
                    if !others.is_empty() {
                        fields.push(("arguments".into(), owned(Value::Object(others))));
                    }
                    if let Some(prefix) = prefix {
                        fields.push(("argv_prefix".into(), owned(prefix)));
                    }
                    Step::code("bash", command, None)
                }
                None => Step::api(name, kwargs, None),
            },
            Err(e) => {
                fields.push(("arguments_error".into(), string(e)));
                let mut kwargs = JsonObject::new();
                kwargs.insert("arguments".into(), p["arguments"].to_value());
                Step::api(name, kwargs, None)
            }
        };
        self.call(step, id, name, line, timestamp, "function_call", fields);
    }

    fn local_shell(&mut self, p: &'n Node<'a>, line: u64, timestamp: &Node<'a>) {
        let (id, id_key) = match p["call_id"].as_str() {
            Some(id) => (Some(id), "call_id"),
            None => (p["id"].as_str(), "id"),
        };
        let action = &p["action"];
        let argv: Option<Vec<&str>> = action["command"]
            .as_array()
            .and_then(|w| w.iter().map(Node::as_str).collect());
        let mut fields = rest(p, &[id_key, "action"]);
        let step = match argv.filter(|a| action["type"].as_str() == Some("exec") && !a.is_empty()) {
            Some(argv) => {
                let (command, prefix) = argv_command(&argv);
                fields.push(("tool".into(), Node::from("local_shell")));
                let others = without(action, &["type", "command"]);
                if others.as_object().is_some_and(|o| !o.is_empty()) {
                    fields.push(("action".into(), others));
                }
                if let Some(prefix) = prefix {
                    fields.push(("argv_prefix".into(), owned(json!(prefix))));
                }
                Step::code("bash", command, None)
            }
            None => Step::api("local_shell", action.to_map(), None),
        };
        self.call(
            step,
            id,
            "local_shell",
            line,
            timestamp,
            "local_shell_call",
            fields,
        );
    }

    /// A tool's output: an observation linked to its call (named after the tool), or, when no
    /// call waits for it, an observation of its own listed in `orphan_outputs`.
    #[allow(clippy::too_many_arguments)]
    fn output(
        &mut self,
        p: &'n Node<'a>,
        base: &str,
        value: &'n Node<'a>,
        used: &[&str],
        line: u64,
        timestamp: &Node<'a>,
    ) {
        let item = match p["type"].as_str() {
            Some("custom_tool_call_output") => "custom_tool_call_output",
            Some("tool_search_output") => "tool_search_output",
            _ => "function_call_output",
        };
        // A tool search's result is the tool specs found, given to the model as they are.
        let out = match item {
            "tool_search_output" => text::Output {
                text: value.text(),
                images: Vec::new(),
                other_parts: Vec::new(),
                rest: Vec::new(),
                within: None,
            },
            _ => text::output(value),
        };
        let mut fields = rest(p, used);
        fields.extend(
            out.rest
                .iter()
                .map(|(k, v)| (Cow::Owned((*k).to_owned()), (*v).clone())),
        );
        let key = match out.within {
            Some(within) => format!("{}/{within}", used[1]),
            None => used[1].to_owned(),
        };
        self.count_message(true, true);
        for (k, part) in &out.other_parts {
            self.unmapped(
                Lost::Block,
                line,
                format!("{base}/{key}/{k}"),
                "a part of a tool output that is neither text nor an image".into(),
                part,
            );
        }
        let id = p["call_id"].as_str();
        let call = id.and_then(|id| self.calls.get_mut(id));
        let (name, linked, reason) = match call {
            Some(c) if !c.answered => {
                c.answered = true;
                (Some(c.name.to_owned()), true, "")
            }
            Some(c) => (
                Some(c.name.to_owned()),
                false,
                "its call was answered already",
            ),
            None => (None, false, "no earlier call has its call_id"),
        };
        let (mut step, extra_images) = match out.images.split_first() {
            Some((first, others)) if out.text.is_empty() => {
                (Step::image(*first, Source::Environment), others)
            }
            _ => (
                Step::environment_text(name, out.text),
                out.images.as_slice(),
            ),
        };
        for url in extra_images {
            self.unmapped(
                Lost::Block,
                line,
                format!("{base}/{key}"),
                "an image of a tool output whose observation holds its text or first image".into(),
                &string(*url),
            );
        }
        if linked {
            step = step.with_tool_call_id(id.unwrap_or_default());
        }
        let at = self.observe(step, line, timestamp);
        if !linked {
            self.d.orphan_outputs.push(Node::object([
                ("line", num(line)),
                ("step", index(at)),
                ("id", id.map_or(Node::Null, string)),
                ("reason", Node::from(reason)),
            ]));
        }
        self.extra(line, Some(at), item, fields);
    }

    fn event(&mut self, p: &'n Node<'a>, line: u64, timestamp: &Node<'a>, said: &Said<'n>) {
        let ty = p["type"].as_str().unwrap_or_default();
        let repeated = |set: &HashSet<Cow<'n, str>>, key: &str| {
            p[key].as_str().is_some_and(|t| Said::has(set, t))
        };
        let label = match ty {
            "user_message" if repeated(&said.user, "message") => Some("user_message"),
            "agent_message" if repeated(&said.assistant, "message") => Some("agent_message"),
            "agent_reasoning" if repeated(&said.summary, "text") => Some("agent_reasoning"),
            "agent_reasoning_raw_content" if repeated(&said.raw, "text") => {
                Some("agent_reasoning_raw_content")
            }
            _ => None,
        };
        if let Some(label) = label {
            match self.d.repeated_events.iter_mut().find(|(l, _)| *l == label) {
                Some((_, n)) => *n += 1,
                None => self.d.repeated_events.push((label, 1)),
            }
            self.left.lines += 1;
            return;
        }
        match (ty, p["message"].as_str(), p["text"].as_str()) {
            ("user_message", Some(m), _) => {
                let first = self.content.len();
                if !m.trim().is_empty() {
                    let step = match injected_context(m) {
                        Some(name) => Step::environment_text(Some(name.to_owned()), m),
                        None => Step::user_text(m),
                    };
                    self.observe(step, line, timestamp);
                }
                for key in ["images", "local_images"] {
                    for url in p[key].as_array().into_iter().flatten() {
                        match url.as_str().or(url["path"].as_str()) {
                            Some(u) => {
                                self.observe(Step::image(u, Source::User), line, timestamp);
                            }
                            None => self.unmapped(
                                Lost::WrongType,
                                line,
                                format!("/payload/{key}"),
                                "an image that is not a string".into(),
                                url,
                            ),
                        }
                    }
                }
                let step = (self.content.len() > first).then_some(first);
                self.count_message(step.is_some(), true);
                let fields = rest(p, &["message", "images", "local_images"]);
                self.extra(line, step, "user_message", fields);
            }
            ("agent_message", Some(m), _) => {
                self.count_message(true, true);
                self.say(Pending {
                    text: m.to_owned(),
                    line,
                    timestamp: timestamp.clone(),
                    item: "agent_message",
                    fields: rest(p, &["message"]),
                })
            }
            ("agent_reasoning", _, Some(t)) => {
                self.think(t.to_owned(), line, "agent_reasoning", rest(p, &["text"]))
            }
            ("agent_reasoning_raw_content", _, Some(t)) => self.think(
                t.to_owned(),
                line,
                "agent_reasoning_raw_content",
                rest(p, &["text"]),
            ),
            _ => {
                let answered = p["call_id"]
                    .as_str()
                    .is_some_and(|c| said.answered.contains(c));
                let payload = if ty == "exec_command_end" && answered {
                    without(p, &["aggregated_output", "formatted_output"])
                } else {
                    p.clone()
                };
                self.d.events.push(Node::object([
                    ("line", num(line)),
                    ("timestamp", timestamp.clone()),
                    ("payload", payload),
                ]));
            }
        }
    }
}

/// A session's trajectory, or why the rollout cannot be one.
pub fn rollout<'a>(bundle: &Node<'a>, record: &RawRecord) -> Result<Partial<'a>, Vec<Diagnostic>> {
    let lines: Vec<(u64, &Node<'a>)> = bundle["lines"]
        .as_array()
        .unwrap_or(&[])
        .iter()
        .filter_map(|l| match l.as_array() {
            Some([n, entry]) => Some((n.as_u64().unwrap_or(0), entry)),
            _ => None,
        })
        .collect();
    // The earliest rollouts (`rollout-*.json`) are one document `{session, items}`: its session
    // is the header, its items the bare lines.
    let mut kinds: Vec<(u64, &Node<'a>, Kind<'_, 'a>)> = Vec::with_capacity(lines.len());
    for (i, &(n, entry)) in lines.iter().enumerate() {
        let document = entry.get("type").is_none()
            && entry["session"]["id"].as_str().is_some()
            && entry["items"].as_array().is_some();
        if document {
            kinds.push((n, &entry["session"], Kind::SessionMeta(&entry["session"])));
            for (k, item) in entry["items"].as_array().unwrap_or(&[]).iter().enumerate() {
                kinds.push((n, item, Kind::Item(item, Cow::Owned(format!("/items/{k}")))));
            }
            continue;
        }
        kinds.push((n, entry, kind(entry, i == 0)));
    }
    let mut said = Said::default();
    for (_, _, k) in &kinds {
        if let Kind::Item(p, _) = k {
            said.read(p);
        }
    }
    let session = kinds.iter().find_map(|(_, _, k)| match k {
        Kind::SessionMeta(p) => p["id"]
            .as_str()
            .or(p["session_id"].as_str())
            .filter(|s| !s.is_empty()),
        _ => None,
    });
    let Some(id) = session.map(str::to_owned).or_else(|| {
        (record.provenance.file.as_ref() != "-").then(|| file_stem(&record.provenance.file))
    }) else {
        return Err(vec![Diagnostic::error(
            &record.provenance,
            None,
            "/payload/id",
            "missing-id",
            "no session_meta has a non-empty id, and there is no file name to use instead",
        )]);
    };
    let mut b = Builder::new(said.answered.clone());
    let mut counts: Vec<(&'static str, u64)> = Vec::new();
    for (line, entry, k) in kinds {
        match counts.iter_mut().find(|(l, _)| *l == k.label()) {
            Some((_, n)) => *n += 1,
            None => counts.push((k.label(), 1)),
        }
        let timestamp = entry["timestamp"].clone();
        match &k {
            Kind::LegacyState => b.d.legacy_state.push(Node::object([
                ("line", num(line)),
                ("payload", entry.clone()),
            ])),
            Kind::Bookkeeping(t) => {
                b.bookkeeping(line, "/payload", t, &entry["payload"]);
            }
            Kind::Unknown(lost, reason) => {
                b.unmapped(*lost, line, String::new(), reason.clone(), entry)
            }
            _ => {}
        }
        b.line(k, line, &timestamp, &said);
    }
    b.flush();
    finish(b, id, session, record, &counts)
}

fn finish<'a>(
    mut b: Builder<'_, 'a>,
    id: String,
    session: Option<&str>,
    record: &RawRecord,
    counts: &[(&'static str, u64)],
) -> Result<Partial<'a>, Vec<Diagnostic>> {
    let fail = |line: u64, rule: &str, message: String| {
        let mut d = Diagnostic::error(&record.provenance, Some(&id), "", rule, message);
        d.line = line;
        vec![d]
    };
    if b.content.is_empty() {
        let seen: Vec<String> = counts.iter().map(|(l, n)| format!("{n} {l}")).collect();
        return Err(fail(
            1,
            "empty-trajectory",
            format!(
                "the rollout has no message, reasoning, tool call or output to make a step of (its lines: {})",
                if seen.is_empty() { "none".to_owned() } else { seen.join(", ") }
            ),
        ));
    }
    // Calls no output answered keep no link id (ADP links a call only to its answer).
    let unanswered: Vec<(usize, Option<String>)> = b
        .calls
        .iter()
        .filter(|(_, c)| !c.answered)
        .map(|(id, c)| (c.step, Some((*id).to_owned())))
        .chain(
            b.unlinkable
                .iter()
                .map(|(step, id)| (*step, id.map(str::to_owned))),
        )
        .collect();
    for (step, _) in &unanswered {
        *b.content[*step].tool_call_id_mut() = None;
    }
    // A step written between a call and its output goes after the output.
    let new_at = b.place_outputs_first();
    let mut unanswered: Vec<(usize, Option<String>)> = unanswered
        .into_iter()
        .map(|(step, id)| (new_at[step], id))
        .collect();
    unanswered.sort();
    for (step, native) in &unanswered {
        b.d.unanswered_calls.push((
            *step,
            Node::object([
                ("step", index(*step)),
                ("id", native.clone().map_or(Node::Null, string)),
            ]),
        ));
    }
    // ADP reads an observation right after a tool call as the call's result: after an
    // unanswered call one would be taken for it (and relabelled), so the rollout is refused.
    for i in 1..b.content.len() {
        let (call, next) = (&b.content[i - 1], &b.content[i]);
        if !call.is_tool_action() || call.tool_call_id().is_some() || next.is_action() {
            continue;
        }
        let what = match next {
            Step::TextObservation(o) => format!(
                "{} text ({})",
                o.source.as_str(),
                o.name.as_deref().unwrap_or("no name")
            ),
            other => other.class_name().to_owned(),
        };
        let (call_line, line) = (b.step_lines[i - 1], b.step_lines[i]);
        return Err(fail(
            line,
            "session-structure",
            format!(
                "the tool call on line {call_line} has no output, and an observation ({what}) follows it: ADP would take that observation for the call's result (a call without one can only be followed by another action, or end the session)"
            ),
        ));
    }
    let mut left = b.left;
    left.messages = Some(b.messages);
    let d = b.d;
    let mut codex: Obj<'a> = Vec::new();
    if let Some(meta) = d.session_meta {
        codex.push(("session_meta".into(), meta));
    }
    let mut repeated = (!d.repeated_events.is_empty())
        .then(|| Node::object(d.repeated_events.into_iter().map(|(k, n)| (k, num(n)))));
    let lists = [
        ("more_session_meta", d.more_session_meta),
        ("legacy_state", d.legacy_state),
        ("turn_contexts", d.turn_contexts),
        ("steps", d.steps),
        ("reasoning", d.reasoning),
        ("extras", d.extras),
        ("events", d.events),
        ("repeated_events", Vec::new()), // a count by type, put in its place below
        ("compactions", d.compactions),
        ("bookkeeping", d.bookkeeping),
        ("synthetic_outputs", d.synthetic_outputs),
        (
            "unanswered_calls",
            d.unanswered_calls.into_iter().map(|(_, n)| n).collect(),
        ),
        ("orphan_outputs", d.orphan_outputs),
        ("unmapped", d.unmapped),
    ];
    for (key, list) in lists {
        if key == "repeated_events" {
            if let Some(r) = repeated.take() {
                codex.push((key.into(), r));
            }
        } else if !list.is_empty() {
            codex.push((key.into(), Node::Array(list)));
        }
    }
    let mut source = source_details("codex", record, json!({ "session_id": session }));
    left.add_to(&mut source);
    let mut details = JsonObject::new();
    details.insert("source".into(), source);
    Ok(Partial {
        trajectory: Trajectory::new(id, b.content, details),
        tail: vec![("codex", Node::Object(codex))],
    })
}

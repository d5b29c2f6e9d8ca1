//! The steps of a Messages API conversation: each message's blocks in order, a call's result
//! right after the message that made the call (in call order), and what no step holds kept in
//! [`Notes`] and counted in a [`LeftOut`]. The messages are a record's `messages` list
//! ([`build`]) or, for agents that write one message a line (Factory Droid), messages gathered
//! from their lines ([`build_lines`]).

use std::collections::VecDeque;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use serde_json::Value;

use crate::convert::LeftOut;
use crate::formats::chat::{described_call_step, parse_arguments, system_step, CodeTool};
use crate::formats::kit::{decimal, LinkIds};
use crate::json::{Entries, Node};
use crate::model::step::TextObservation;
use crate::model::{Source, Step};

/// A block's place: its message's index and its index in that message's content.
type At = (usize, usize);

/// Block types that call a tool: the model's own tools, the tools the API runs, MCP tools.
const CALLS: &[&str] = &["tool_use", "server_tool_use", "mcp_tool_use"];

/// Tools whose call is code to run: the tool's name, the argument holding the code, and its
/// language. A call of one of them whose input is that argument alone (and a `description`)
/// is a `code_action`: Claude Code's and the API's bash tools, Cline's and Roo Code's
/// `execute_command`, the API's code execution tools.
const CODE_TOOLS: &[CodeTool] = &[
    ("Bash", "command", "bash"),
    ("bash", "command", "bash"),
    ("execute_command", "command", "bash"),
    ("bash_code_execution", "command", "bash"),
    ("code_execution", "code", "python"),
];

/// True for a block that holds a call's result: `tool_result`, and the results of the tools
/// the API runs (`web_search_tool_result`, `mcp_tool_result`, ...).
fn is_result(kind: &str) -> bool {
    kind.ends_with("tool_result")
}

/// What `details.anthropic` lists about the steps, so that nothing is dropped. Read from lines
/// ([`build_lines`]), each entry with a `pointer` also has the `line` it points into. The
/// entries are nodes borrowing from the conversation's text.
#[derive(Default)]
pub(crate) struct Notes<'a> {
    /// `{pointer, fields}`: a message's keys besides `role` and `content` (Cline's `ts`,
    /// `modelInfo`, `metrics`; a dataset's ids).
    pub message_fields: Vec<Node<'a>>,
    /// `{pointer, fields}`: a mapped block's keys no step holds (a thinking block's
    /// `signature`, `cache_control`, `citations`, ...).
    pub block_fields: Vec<Node<'a>>,
    /// `{pointer, reason, value}`: blocks of a type no step holds and values that could not be
    /// mapped (counted in `details.source.left_out`).
    pub unmapped: Vec<Node<'a>>,
    /// The `tool_use_id` of each result marked `is_error`.
    pub error_results: Vec<Node<'a>>,
    /// `{step, id}` of each call no result answers (`empty_result`: the empty result given to
    /// it because an observation follows it).
    pub unanswered_calls: Vec<Node<'a>>,
    /// `{step, id, pointer, reason}` of each result that answers no call before it.
    pub unlinked_results: Vec<Node<'a>>,
    /// `{step, id, as}` of each call whose id an earlier call had: its link id.
    pub renamed_call_ids: Vec<Node<'a>>,
    /// `{step, id, pointer}` of each call answered by a text rather than a `tool_result`:
    /// Cline's `[read_file for 'x'] Result:` (see [`text_result`]), linked by the tool's name.
    pub text_results: Vec<Node<'a>>,
}

impl<'a> Notes<'a> {
    /// The non-empty lists, by their `details.anthropic` key, in a fixed order.
    pub(crate) fn into_entries(self) -> Vec<(&'static str, Node<'a>)> {
        [
            ("message_fields", self.message_fields),
            ("block_fields", self.block_fields),
            ("unmapped", self.unmapped),
            ("error_results", self.error_results),
            ("unanswered_calls", self.unanswered_calls),
            ("unlinked_results", self.unlinked_results),
            ("renamed_call_ids", self.renamed_call_ids),
            ("text_results", self.text_results),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k, Node::Array(v)))
        .collect()
    }

    /// [`Notes::into_entries`] as a `Value` map, for readers that build `details` as values.
    pub(crate) fn into_map(self) -> serde_json::Map<String, Value> {
        (self.into_entries().into_iter())
            .map(|(k, v)| (k.to_owned(), v.to_value()))
            .collect()
    }
}

/// The steps of a conversation, with what `details` keeps of it and what was left out.
pub(crate) struct Built<'a> {
    pub content: Vec<Step>,
    /// The tool specs: `tools` as a list, or a JSON text holding one.
    pub tools: Vec<Value>,
    pub notes: Notes<'a>,
    pub left: LeftOut,
    /// The index of each message's first step (`None` for a message that gave none).
    pub first_step: Vec<Option<usize>>,
}

/// Why the conversation cannot be read: a JSON pointer and a message.
pub(crate) type Problem = (String, String);

/// Which result answers which call: each result names its call by `tool_use_id`, and answers
/// the earliest call before it with that id that no result answered yet.
struct Pairs {
    answer_of: HashMap<At, At>,
    answering: HashSet<At>,
    /// Why a result answers no call.
    unmatched: HashMap<At, &'static str>,
}

fn pair(messages: &[&Node<'_>]) -> Pairs {
    let mut pending: HashMap<&str, VecDeque<At>> = HashMap::new();
    let mut called: HashSet<&str> = HashSet::new();
    let mut pairs = Pairs {
        answer_of: HashMap::new(),
        answering: HashSet::new(),
        unmatched: HashMap::new(),
    };
    for (i, m) in messages.iter().enumerate() {
        let assistant = m["role"].as_str() == Some("assistant");
        for (k, b) in m["content"].as_array().unwrap_or(&[]).iter().enumerate() {
            let kind = b["type"].as_str().unwrap_or_default();
            if assistant && CALLS.contains(&kind) {
                if let Some(id) = b["id"].as_str() {
                    pending.entry(id).or_default().push_back((i, k));
                    called.insert(id);
                }
            } else if is_result(kind) {
                let id = b["tool_use_id"].as_str().unwrap_or_default();
                match pending.get_mut(id).and_then(VecDeque::pop_front) {
                    Some(call) => {
                        pairs.answer_of.insert(call, (i, k));
                        pairs.answering.insert((i, k));
                    }
                    None if called.contains(id) => {
                        pairs
                            .unmatched
                            .insert((i, k), "a second result for a call already answered");
                    }
                    None => {
                        pairs.unmatched.insert(
                            (i, k),
                            "no call before it in the conversation has this tool_use_id",
                        );
                    }
                }
            }
        }
    }
    pairs
}

/// Whether `text` is a tool's result as Cline, Roo Code and Kilo Code write it back when the
/// call's result is not a `tool_result` (older versions, and models called without native
/// tools): a first line `[{name}] Result:` or `[{name} for '…'] Result:`, naming the tool of
/// the call it answers (Cline writes no id). `Some(true)` when the text is that line alone
/// (the result then follows in the next text block), `Some(false)` when the result follows in
/// the text itself, `None` when it is not a result of `name`.
fn text_result(text: &str, name: &str) -> Option<bool> {
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    let head = first.trim_end().strip_suffix("] Result:")?;
    let after = head.strip_prefix('[')?.strip_prefix(name)?;
    if !(after.is_empty() || after.starts_with(" for ")) {
        return None;
    }
    Some(rest.trim().is_empty())
}

/// Whether a text block after a `[name] Result:` line alone is that result's body: not
/// another result's header, and not the `<environment_details>` Cline appends to the message.
fn text_result_body(text: &str) -> bool {
    let header = text.starts_with('[')
        && text
            .lines()
            .next()
            .is_some_and(|l| l.ends_with("] Result:"));
    !header && !text.trim_start().starts_with("<environment_details>")
}

/// Keys an OpenAI chat message has and a Messages API one never does: a record holding one
/// (not null, not an empty list) is refused (read it with `--from openai`) rather than read
/// without its calls.
const OPENAI_KEYS: &[&str] = &["tool_calls", "function_call", "tool_call_id"];

/// Where the messages stand in their source.
#[derive(Clone, Copy)]
enum Places<'p> {
    /// The `messages` list of one record read from `line`: message `i` is at `/messages/{i}`.
    Record { line: u64 },
    /// One message a line: message `i` is the `message` of line `lines[i]`. Its keys besides
    /// `role` and `content` are the caller's to keep.
    Lines(&'p [u64]),
}

impl Places<'_> {
    /// The pointer of message `i` in its record.
    fn at(self, i: usize) -> String {
        match self {
            Places::Record { .. } => {
                let mut buf = [0u8; 20];
                ["/messages/", decimal(i as u64, &mut buf)].concat()
            }
            Places::Lines(_) => "/message".to_owned(),
        }
    }

    /// The line of message `i`.
    fn line(self, i: usize) -> u64 {
        match self {
            Places::Record { line } => line,
            Places::Lines(lines) => lines.get(i).copied().unwrap_or_default(),
        }
    }
}

/// Builds the steps of `record` (a conversation read from line `line`): the system prompt,
/// then each message's blocks; what is left out is counted for `place` (`details.anthropic`,
/// or the details of a format whose messages are the Messages API's, as Cursor's).
pub(crate) fn build<'a>(
    record: &Node<'a>,
    line: u64,
    place: &'static str,
) -> Result<Built<'a>, Problem> {
    let messages: Vec<&Node> = record["messages"]
        .as_array()
        .unwrap_or(&[])
        .iter()
        .collect();
    build_from(&messages, Some(record), Places::Record { line }, place)
}

/// Builds the steps of `messages`, one message a line (message `i` is the `message` of line
/// `lines[i]`), their left-out counts under `details_key`. The messages' own keys besides
/// `role` and `content` are not listed: the caller keeps them with the rest of each line.
pub(crate) fn build_lines<'a>(
    messages: &[&Node<'a>],
    lines: &[u64],
    details_key: &'static str,
) -> Result<Built<'a>, Problem> {
    build_from(messages, None, Places::Lines(lines), details_key)
}

/// Builds the steps of `messages`, after the `system` prompt and with the `tools` of `record`
/// when there is one.
fn build_from<'a>(
    messages: &[&Node<'a>],
    record: Option<&Node<'a>>,
    places: Places<'_>,
    details_key: &'static str,
) -> Result<Built<'a>, Problem> {
    for (i, m) in messages.iter().enumerate() {
        let present = |k: &&&str| match &m[**k] {
            Node::Null => false,
            Node::Array(a) => !a.is_empty(),
            _ => true,
        };
        if let Some(key) = OPENAI_KEYS.iter().find(present) {
            return Err((
                format!("{}/{key}", places.at(i)),
                format!("{key:?} is an OpenAI chat's key, not the Messages API's: read this file with --from openai"),
            ));
        }
    }
    let mut b = Builder {
        messages,
        places,
        current: 0,
        pairs: pair(messages),
        // At least a step a message, most often.
        content: Vec::with_capacity(messages.len()),
        notes: Notes::default(),
        left: LeftOut::new(details_key),
        ids: LinkIds::default(),
        links: HashMap::new(),
        open: None,
        first_step: vec![None; messages.len()],
    };
    let tools = match record {
        Some(record) => {
            let tools = b.tools(&record["tools"]);
            b.system(&record["system"]);
            tools
        }
        None => Vec::new(),
    };
    for (i, m) in messages.iter().enumerate() {
        b.current = i;
        b.message(i, m);
    }
    let kept = b.first_step.iter().filter(|k| k.is_some()).count() as u64;
    let roles = messages.iter().filter(|m| m["role"].as_str().is_some());
    b.left.messages = Some((roles.count() as u64, kept));
    Ok(Built {
        content: b.content,
        tools,
        notes: b.notes,
        left: b.left,
        first_step: b.first_step,
    })
}

/// `{pointer, fields}`: the keys of the object `node` that `mapped` does not name; `None` when
/// there are none.
fn fields_note<'a>(
    node: &Node<'a>,
    pointer: String,
    mapped: impl Fn(&str) -> bool,
) -> Option<Node<'a>> {
    let fields: Entries<'a> = (node.as_object().into_iter().flatten())
        .filter(|(k, _)| !mapped(k))
        .cloned()
        .collect();
    (!fields.is_empty()).then(|| {
        Node::object([
            ("pointer", Node::from(pointer)),
            ("fields", Node::Object(fields)),
        ])
    })
}

/// A string node as it is; anything else as null (an id that is not a string).
fn string_or_null<'a>(node: &Node<'a>) -> Node<'a> {
    match node {
        Node::String(_) => node.clone(),
        _ => Node::Null,
    }
}

/// `{parent}/content/{k}`, written without the formatting machinery: every block has one.
fn content_pointer(parent: &str, k: usize) -> String {
    let mut buf = [0u8; 20];
    let k = decimal(k as u64, &mut buf);
    let mut p = String::with_capacity(parent.len() + 9 + k.len());
    p.push_str(parent);
    p.push_str("/content/");
    p.push_str(k);
    p
}

/// A call waiting for its result: its link id and tool name.
struct Link {
    id: String,
    name: String,
}

struct Builder<'n, 'a, 'p> {
    messages: &'n [&'n Node<'a>],
    places: Places<'p>,
    /// The message whose blocks are being read.
    current: usize,
    pairs: Pairs,
    content: Vec<Step>,
    notes: Notes<'a>,
    left: LeftOut,
    /// Link ids given so far.
    ids: LinkIds,
    /// Results in the message of their call, waiting there: their call's link.
    links: HashMap<At, Link>,
    /// The last step, when it is a call no result answers: its entry in
    /// `notes.unanswered_calls`, its native id and its tool name.
    open: Option<(usize, Option<String>, String)>,
    /// The index of each message's first step, once it gave one.
    first_step: Vec<Option<usize>>,
}

impl<'n, 'a> Builder<'n, 'a, '_> {
    /// The tool specs: a list, or a JSON text holding one (kept as unmapped when it does not).
    fn tools(&mut self, tools: &Node<'a>) -> Vec<Value> {
        match tools {
            Node::Array(t) => t.iter().map(Node::to_value).collect(),
            Node::String(s) if !s.trim().is_empty() => match serde_json::from_str(s) {
                Ok(Value::Array(t)) => t,
                _ => {
                    let reason = "tools is a text that does not hold a JSON list of tool specs";
                    self.unmapped("/tools", reason.into(), tools);
                    Vec::new()
                }
            },
            _ => Vec::new(),
        }
    }

    /// The top-level system prompt: a string, or text blocks joined by blank lines.
    fn system(&mut self, system: &Node<'a>) {
        let text = match system {
            Node::String(s) => s.as_ref().to_owned(),
            Node::Array(blocks) => {
                let mut texts = Vec::new();
                for (k, block) in blocks.iter().enumerate() {
                    let p = format!("/system/{k}");
                    match self.text_of(&p, block) {
                        Some(t) => texts.push(t),
                        None => self.other_block(&p, block, "in the system prompt"),
                    }
                }
                texts.join("\n\n")
            }
            _ => return,
        };
        if !text.is_empty() {
            self.content.push(system_step(text));
        }
    }

    /// One message.
    fn message(&mut self, i: usize, m: &'n Node<'a>) {
        let at = self.places.at(i);
        let Some(role) = m["role"].as_str() else {
            // Not a message: a reasoning item Roo Code keeps between messages, or bookkeeping.
            self.left.lines += 1;
            let note = self.located(Node::object([
                ("pointer", Node::from(at)),
                ("reason", "an entry without a role is not a message".into()),
                ("value", (*m).clone()),
            ]));
            self.notes.unmapped.push(note);
            return;
        };
        if let Places::Record { .. } = self.places {
            let mapped = |k: &str| matches!(k, "role" | "content");
            if (m.as_object()).is_some_and(|o| o.iter().any(|(k, _)| !mapped(k))) {
                let fields = fields_note(m, at.clone(), mapped);
                self.notes.message_fields.extend(fields);
            }
        }
        match &m["content"] {
            Node::String(s) => {
                let s = s.as_ref().to_owned();
                match role {
                    "assistant" => self.act(Step::message(s, None), i),
                    "system" => self.observe(system_step(s), i),
                    _ => self.observe(Step::user_text(s), i),
                }
            }
            Node::Array(blocks) => match role {
                "assistant" => self.assistant(i, blocks),
                "system" => {
                    let mut texts = Vec::new();
                    for (k, block) in blocks.iter().enumerate() {
                        let p = content_pointer(&at, k);
                        match self.text_of(&p, block) {
                            Some(t) => texts.push(t),
                            None => self.other_block(&p, block, "in a system message"),
                        }
                    }
                    if !texts.is_empty() {
                        self.observe(system_step(texts.join("\n\n")), i);
                    }
                }
                _ => self.user(i, blocks),
            },
            _ => {}
        }
    }

    /// A user message's blocks: text, images and documents as observations; results not
    /// written after their call's message yet (they answer no call) as unlinked observations.
    fn user(&mut self, i: usize, blocks: &'n [Node<'a>]) {
        let at = self.places.at(i);
        let mut blocks = blocks.iter().enumerate().peekable();
        while let Some((k, block)) = blocks.next() {
            let p = content_pointer(&at, k);
            let kind = block["type"].as_str().unwrap_or_default();
            if is_result(kind) {
                if !self.pairs.answering.contains(&(i, k)) {
                    self.unlinked(i, k, block);
                }
                continue;
            }
            if let Some(mut t) = self.text_of(&p, block) {
                let called = self.open.as_ref().map(|(_, _, name)| name.as_str());
                match called.and_then(|name| text_result(&t, name)) {
                    Some(header_only) => {
                        // Older Cline writes the header as a block of its own, the result in
                        // the next text block.
                        if header_only {
                            let next = blocks.peek().and_then(|(_, b)| b["text"].as_str());
                            if let Some(body) = next.filter(|b| text_result_body(b)) {
                                t = format!("{t}\n{body}");
                                blocks.next();
                            }
                        }
                        self.answer_with_text(t, &p, i);
                    }
                    None => self.observe(Step::user_text(t), i),
                }
            } else if kind == "image" {
                self.image(&p, block, Source::User, i);
            } else if kind == "document" {
                self.document(&p, block, i);
            } else {
                self.other_block(&p, block, "in a user message");
            }
        }
    }

    /// An assistant message's blocks: thinking (and Roo Code's `reasoning` blocks) is the
    /// reasoning of the next action, a text the
    /// description of the call after it (else a message), calls are actions; results of the
    /// calls follow the message, in call order (those the API wrote in the message itself
    /// stand where they are).
    fn assistant(&mut self, i: usize, blocks: &'n [Node<'a>]) {
        let mut text: Option<String> = None;
        let mut thought: Option<(String, String)> = None;
        let mut later: Vec<(At, Link)> = Vec::new();
        let at = self.places.at(i);
        for (k, block) in blocks.iter().enumerate() {
            let p = content_pointer(&at, k);
            let kind = block["type"].as_str().unwrap_or_default();
            // Roo Code writes the reasoning of other providers as a `reasoning` block.
            let key = match kind {
                "thinking" => "thinking",
                "reasoning" => "text",
                _ => "",
            };
            if let Some(t) = block[key].as_str().filter(|_| !key.is_empty()) {
                self.fields(&p, block, &["type", key]);
                // An empty thinking (its text omitted, the signature kept) adds nothing.
                thought = match thought.take() {
                    prev if t.is_empty() => prev,
                    Some((prev, _)) => Some((format!("{prev}\n\n{t}"), p)),
                    None => Some((t.to_owned(), p)),
                };
            } else if let Some(t) = self.text_of(&p, block) {
                self.flush(&mut text, &mut thought, i);
                text = Some(t);
            } else if CALLS.contains(&kind) {
                self.fields(&p, block, &["type", "id", "name", "input"]);
                let name = block["name"].as_str().unwrap_or_default().to_owned();
                let mut step = self.call_step(&p, block, &name);
                let mut description = text.take();
                if let Step::CodeAction(c) = &step {
                    // A call that carries its own description: the text before it stays a
                    // message of its own.
                    if c.description.is_some() {
                        if let Some(d) = description.take() {
                            self.act(Step::message(d, None), i);
                        }
                        description = c.description.clone();
                    }
                }
                step.set_thought(description, thought.take().map(|t| t.0));
                let native = block["id"].as_str();
                match self.pairs.answer_of.get(&(i, k)).copied() {
                    Some(result) => {
                        let id = self.link_id(native, self.content.len());
                        self.act(step.with_tool_call_id(id.clone()), i);
                        let link = Link { id, name };
                        if result.0 == i {
                            self.links.insert(result, link);
                        } else {
                            later.push((result, link));
                        }
                    }
                    None => {
                        let entry = self.notes.unanswered_calls.len();
                        let note = Node::object([
                            ("step", Node::from(self.content.len() as u64)),
                            ("id", string_or_null(&block["id"])),
                        ]);
                        self.notes.unanswered_calls.push(note);
                        self.act(step, i);
                        self.open = Some((entry, native.map(str::to_owned), name));
                    }
                }
            } else if is_result(kind) {
                match self.links.remove(&(i, k)) {
                    Some(link) => self.result(&p, block, Some(link), i),
                    // Written after its call's message already.
                    None if self.pairs.answering.contains(&(i, k)) => {}
                    None => self.unlinked(i, k, block),
                }
            } else {
                self.other_block(&p, block, "in an assistant message");
            }
        }
        self.flush(&mut text, &mut thought, i);
        if let Some((t, p)) = thought {
            self.left.blocks += 1;
            let value = Node::object([("type", "thinking".into()), ("thinking", Node::from(t))]);
            let note = self.located(Node::object([
                ("pointer", Node::from(p)),
                (
                    "reason",
                    "a thinking block with no text or call after it in its message".into(),
                ),
                ("value", value),
            ]));
            self.notes.unmapped.push(note);
        }
        for ((mi, k), link) in later {
            // ok: the pairs hold only places of blocks of these messages.
            let blocks = self.messages.get(mi).and_then(|m| m["content"].as_array());
            if let Some(block) = blocks.and_then(|b| b.get(k)) {
                let p = content_pointer(&self.places.at(mi), k);
                self.current = mi;
                self.result(&p, block, Some(link), mi);
            }
        }
        self.current = i;
    }

    /// Writes a pending text as a message, with the pending reasoning.
    fn flush(
        &mut self,
        text: &mut Option<String>,
        thought: &mut Option<(String, String)>,
        i: usize,
    ) {
        if let Some(t) = text.take() {
            let mut m = Step::message(t, None);
            m.set_thought(None, thought.take().map(|t| t.0));
            self.act(m, i);
        }
    }

    /// A call as an action: a code tool's call whose input is its code alone (and a
    /// `description`) is code; any other an api action with the input as kwargs.
    fn call_step(&mut self, p: &str, block: &Node<'a>, name: &str) -> Step {
        let input = match &block["input"] {
            Node::Null => serde_json::Map::new(),
            input => match parse_arguments(input) {
                Ok(kwargs) => kwargs,
                Err(reason) => {
                    self.unmapped(
                        &format!("{p}/input"),
                        format!("a tool input: {reason}"),
                        input,
                    );
                    serde_json::Map::new()
                }
            },
        };
        described_call_step(name, input, CODE_TOOLS)
    }

    /// A link id for a call at content index `at`: its own id, unless an earlier call had it
    /// (then `{id}#2`, `#3`, ..., listed in `renamed_call_ids`) or it has none (`call_{at}`).
    fn link_id(&mut self, native: Option<&str>, at: usize) -> String {
        let base = match native {
            Some(id) if !id.is_empty() => id.to_owned(),
            _ => format!("call_{at}"),
        };
        let (id, renamed) = self.ids.unique(base);
        if renamed {
            let note = Node::object([
                ("step", Node::from(at as u64)),
                (
                    "id",
                    native.map_or(Node::Null, |n| Node::from(n.to_owned())),
                ),
                ("as", Node::from(id.clone())),
            ]);
            self.notes.renamed_call_ids.push(note);
        }
        id
    }

    /// A result block as an observation named after its call's tool (linked to it when
    /// `link`), then the images it holds.
    fn result(&mut self, p: &str, block: &Node<'a>, link: Option<Link>, i: usize) {
        self.fields(p, block, &["type", "tool_use_id", "content", "is_error"]);
        if block["is_error"].as_bool() == Some(true) {
            self.notes.error_results.push(block["tool_use_id"].clone());
        }
        let client = block["type"].as_str() == Some("tool_result");
        let (text, images) = self.result_content(p, &block["content"], client);
        let (id, name) = match link {
            Some(l) => (Some(l.id), l.name),
            None => (None, "tool_result".to_owned()),
        };
        let mut step = Step::environment_text(Some(name), text);
        if let Some(id) = id {
            step = step.with_tool_call_id(id);
        }
        self.observe(step, i);
        for image in images {
            self.observe(image, i);
        }
    }

    /// The call no result answers right before (`open`) answered by a user text (Cline's
    /// `[name …] Result:`): the text is its result, linked to it, listed in `text_results`
    /// rather than `unanswered_calls`.
    fn answer_with_text(&mut self, text: String, p: &str, i: usize) {
        let Some((entry, native, name)) = self.open.take() else {
            return self.observe(Step::user_text(text), i);
        };
        let call = self.content.len().saturating_sub(1);
        let id = self.link_id(native.as_deref(), call);
        *self.content[call].tool_call_id_mut() = Some(id.clone());
        if entry + 1 == self.notes.unanswered_calls.len() {
            self.notes.unanswered_calls.pop();
        }
        let note = self.located(Node::object([
            ("step", Node::from(call as u64)),
            ("id", native.map_or(Node::Null, Node::from)),
            ("pointer", Node::from(p.to_owned())),
        ]));
        self.notes.text_results.push(note);
        let step = Step::environment_text(Some(name), text).with_tool_call_id(id);
        self.observe(step, i);
    }

    /// A result that answers no call: an observation without a link, listed.
    fn unlinked(&mut self, i: usize, k: usize, block: &Node<'a>) {
        let p = content_pointer(&self.places.at(i), k);
        let reason = self
            .pairs
            .unmatched
            .get(&(i, k))
            .copied()
            .unwrap_or("a result of a tool the API runs, outside its call's message");
        let step = self.content.len();
        self.result(&p, block, None, i);
        let note = self.located(Node::object([
            ("step", Node::from(step as u64)),
            ("id", block["tool_use_id"].clone()),
            ("pointer", Node::from(p)),
            ("reason", Node::from(reason)),
        ]));
        self.notes.unlinked_results.push(note);
    }

    /// The text of a result's `content` (a string, or its text blocks joined by newlines) and
    /// the image observations of its images. A result of a tool the API runs (`client` false)
    /// holds structured items (search results, outputs): written as compact JSON.
    fn result_content(&mut self, p: &str, content: &Node<'a>, client: bool) -> (String, Vec<Step>) {
        let items = match content {
            Node::Null => return (String::new(), Vec::new()),
            Node::String(s) => return (s.as_ref().to_owned(), Vec::new()),
            Node::Array(items) => items,
            other if !client => return (other.to_string(), Vec::new()),
            other => {
                self.unmapped(
                    &format!("{p}/content"),
                    "a tool result's content is neither a string nor a list of blocks".into(),
                    other,
                );
                return (String::new(), Vec::new());
            }
        };
        let all_text = items
            .iter()
            .all(|b| b.as_str().is_some() || b["type"].as_str() == Some("text"));
        if !client && !all_text {
            return (content.to_string(), Vec::new());
        }
        let mut texts = Vec::new();
        let mut images = Vec::new();
        for (k, b) in items.iter().enumerate() {
            let at = content_pointer(p, k);
            if let Some(t) = self.text_of(&at, b) {
                texts.push(t);
            } else if b["type"].as_str() == Some("image") {
                if let Some(uri) = self.image_uri(&at, b) {
                    images.push(Step::image(uri, Source::Environment));
                }
            } else {
                self.other_block(&at, b, "in a tool result");
            }
        }
        (texts.join("\n"), images)
    }

    /// The text of a `text` block (its other keys kept) or of a string, or `None` for any
    /// other block.
    fn text_of(&mut self, p: &str, block: &Node<'a>) -> Option<String> {
        if let Node::String(s) = block {
            // A string in a list of blocks, as some datasets write a text block.
            return Some(s.as_ref().to_owned());
        }
        if block["type"].as_str() != Some("text") {
            return None;
        }
        let t = block["text"].as_str()?;
        self.fields(p, block, &["type", "text"]);
        Some(t.to_owned())
    }

    /// An image block as an image observation from `source`.
    fn image(&mut self, p: &str, block: &Node<'a>, source: Source, i: usize) {
        if let Some(uri) = self.image_uri(p, block) {
            self.observe(Step::image(uri, source), i);
        }
    }

    /// An image's URI: a data URI of base64 data, or its URL; `None` (the block kept as left
    /// out) for an image the record does not hold (a `file_id` of the Files API).
    fn image_uri(&mut self, p: &str, block: &Node<'a>) -> Option<String> {
        let src = &block["source"];
        let uri = match (
            src["type"].as_str(),
            src["media_type"].as_str(),
            src["data"].as_str(),
        ) {
            (_, Some(media), Some(data)) => Some(format!("data:{media};base64,{data}")),
            _ => src["url"].as_str().map(str::to_owned),
        };
        match uri {
            Some(uri) => {
                self.fields(p, block, &["type", "source"]);
                Some(uri)
            }
            None => {
                self.left_block(
                    p,
                    "an image whose source is neither base64 data nor a URL",
                    block,
                );
                None
            }
        }
    }

    /// A document block: a text document (plain text, or content blocks of text) as a text
    /// observation from the user named after its title; any other (a PDF, a URL, a file) is
    /// left out and kept.
    fn document(&mut self, p: &str, block: &Node<'a>, i: usize) {
        let src = &block["source"];
        let text = match (src["type"].as_str(), &src["data"], &src["content"]) {
            (Some("text"), Node::String(s), _) => Some(s.as_ref().to_owned()),
            (Some("content"), _, Node::String(s)) => Some(s.as_ref().to_owned()),
            (Some("content"), _, Node::Array(items))
                if items.iter().all(|b| b["text"].as_str().is_some()) =>
            {
                let texts: Vec<&str> = items.iter().filter_map(|b| b["text"].as_str()).collect();
                Some(texts.join("\n\n"))
            }
            _ => None,
        };
        let Some(text) = text else {
            self.left_block(
                p,
                "a document that is not text (a PDF, a URL or a file)",
                block,
            );
            return;
        };
        self.fields(p, block, &["type", "source", "title"]);
        let name = block["title"].as_str().unwrap_or("document").to_owned();
        let step = Step::TextObservation(TextObservation {
            content: text,
            name: Some(name),
            source: Source::User,
            tool_call_id: None,
            reward: None,
        });
        self.observe(step, i);
    }

    /// A block no step holds, `place` saying where it stands: a block of another type is left
    /// out; a block without a string `type`, or a text block whose `text` is not a string,
    /// could not be mapped.
    fn other_block(&mut self, p: &str, block: &Node<'a>, place: &str) {
        match block["type"].as_str() {
            Some("text") => self.unmapped(
                p,
                format!("a text block whose text is not a string, {place}"),
                block,
            ),
            Some(kind) => {
                self.left_block(p, &format!("a {kind:?} block {place} is not mapped"), block)
            }
            None => self.unmapped(p, format!("a block without a string type, {place}"), block),
        }
    }

    fn left_block(&mut self, p: &str, reason: &str, block: &Node<'a>) {
        self.left.blocks += 1;
        let note = self.located(Node::object([
            ("pointer", Node::from(p.to_owned())),
            ("reason", Node::from(reason.to_owned())),
            ("value", block.clone()),
        ]));
        self.notes.unmapped.push(note);
    }

    fn unmapped(&mut self, p: &str, reason: String, value: &Node<'a>) {
        self.left
            .unmapped(self.places.line(self.current), p, reason.clone());
        let note = self.located(Node::object([
            ("pointer", Node::from(p.to_owned())),
            ("reason", Node::from(reason)),
            ("value", value.clone()),
        ]));
        self.notes.unmapped.push(note);
    }

    /// Keeps the keys of a mapped block other than `mapped`.
    fn fields(&mut self, p: &str, block: &Node<'a>, mapped: &[&str]) {
        let extra = (block.as_object())
            .is_some_and(|o| o.iter().any(|(k, _)| !mapped.contains(&k.as_ref())));
        if !extra {
            return;
        }
        let fields = fields_note(block, p.to_owned(), |k| mapped.contains(&k));
        if let Some(note) = fields {
            let note = self.located(note);
            self.notes.block_fields.push(note);
        }
    }

    /// A note about the message being read, with its line when the messages are lines.
    fn located(&self, mut note: Node<'a>) -> Node<'a> {
        if let (Places::Lines(_), Node::Object(fields)) = (self.places, &mut note) {
            let line = Node::from(self.places.line(self.current));
            fields.insert(0, ("line".into(), line));
        }
        note
    }

    /// Appends an action of message `i`.
    fn act(&mut self, step: Step, i: usize) {
        self.open = None;
        self.keep(step, i);
    }

    /// Appends an observation of message `i`. A call no result answers right before it first
    /// gets an empty result: ADP links a tool action followed by an observation (the call
    /// stays listed in `unanswered_calls`, with `empty_result`).
    fn observe(&mut self, step: Step, i: usize) {
        if let Some((entry, native, name)) = self.open.take() {
            let call = self.content.len().saturating_sub(1);
            let id = self.link_id(native.as_deref(), call);
            *self.content[call].tool_call_id_mut() = Some(id.clone());
            if let Some(e) = self.notes.unanswered_calls.get_mut(entry) {
                e.insert("empty_result", Node::from(self.content.len() as u64));
            }
            self.content
                .push(Step::environment_text(Some(name), "").with_tool_call_id(id));
        }
        self.keep(step, i);
    }

    /// Appends a step of message `i`.
    fn keep(&mut self, step: Step, i: usize) {
        if let Some(first @ None) = self.first_step.get_mut(i) {
            *first = Some(self.content.len());
        }
        self.content.push(step);
    }
}

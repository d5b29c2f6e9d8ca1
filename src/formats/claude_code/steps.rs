//! The steps of a session's selected lines. Claude Code writes a response as several lines
//! (one per content block, sharing `message.id`) and may write a call's result before the
//! response's next block: each response becomes one group of actions, wherever its lines
//! fall, followed by the results of its calls in call order; what the user says (prompts,
//! interruptions, hook feedback) follows in file order.

use foldhash::{HashMap, HashMapExt};
use std::borrow::Cow;

use serde_json::Value;

use crate::convert::LeftOut;
use crate::formats::kit::node_fields_except;
use crate::json::Node;
use crate::model::{Source, Step};

/// A selected line: its number in the file and its entry.
pub(super) struct Line<'a> {
    pub line: u64,
    pub entry: &'a Node<'a>,
}

/// What the steps do not hold, kept in `details.claude_code.unmapped` (the entry's line, a
/// JSON pointer into the entry, why, and the value itself) and counted in `left`.
pub(super) struct Unmapped<'a> {
    pub list: Vec<Node<'a>>,
    pub left: LeftOut,
}

/// Block types of the Messages API and of Claude Code that a step may not hold where they
/// stand (a document, redacted thinking, a server tool's call or result, an image inside a
/// tool result): counted as blocks left out. A block of any other type is a value that could
/// not be mapped.
const KNOWN_BLOCKS: &[&str] = &[
    "text",
    "image",
    "document",
    "search_result",
    "thinking",
    "redacted_thinking",
    "tool_use",
    "tool_result",
    "tool_reference",
    "server_tool_use",
    "web_search_tool_result",
    "web_fetch_tool_result",
    "code_execution_tool_result",
    "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result",
    "mcp_tool_use",
    "mcp_tool_result",
    "container_upload",
];

impl<'a> Unmapped<'a> {
    pub(super) fn new() -> Unmapped<'a> {
        Unmapped {
            list: Vec::new(),
            left: LeftOut::new("details.claude_code"),
        }
    }

    /// Lists `value` (not counted: the fields of a mapped block, kept beside its step).
    pub(super) fn keep(&mut self, line: u64, pointer: &str, reason: String, value: &Node<'a>) {
        self.list.push(Node::object([
            ("line", Node::from(line)),
            ("pointer", Node::from(pointer.to_owned())),
            ("reason", Node::from(reason)),
            ("value", value.clone()),
        ]));
    }

    /// Lists and counts a value that could not be mapped.
    pub(super) fn unmapped(&mut self, line: u64, pointer: &str, reason: String, value: &Node<'a>) {
        self.left.unmapped(line, pointer, reason.as_str());
        self.keep(line, pointer, reason, value);
    }

    /// Lists and counts a value of the wrong type for its field, skipped.
    pub(super) fn wrong_type(
        &mut self,
        line: u64,
        pointer: &str,
        reason: String,
        value: &Node<'a>,
    ) {
        self.left.wrong_type(line, pointer, reason.as_str());
        self.keep(line, pointer, reason, value);
    }

    /// Lists and counts block `b` at `pointer`, which no step holds (`place` says where it
    /// stood when that is not a message's content): a known block type is a block left out,
    /// a text or thinking block whose text is not a string a wrong-typed value, any other
    /// block a value that could not be mapped.
    fn block(&mut self, line: u64, pointer: &str, b: &Node<'a>, place: &str) {
        let kind = b["type"].as_str();
        match kind {
            Some(k @ ("text" | "thinking")) if b[k].as_str().is_none() => {
                let reason = format!("a {k} block whose {k} is not a string{place}");
                self.wrong_type(line, &format!("{pointer}/{k}"), reason, b);
            }
            Some(k) if KNOWN_BLOCKS.contains(&k) => {
                self.left.blocks += 1;
                self.keep(
                    line,
                    pointer,
                    format!("a {k:?} block no step holds{place}"),
                    b,
                );
            }
            Some(k) => self.unmapped(
                line,
                pointer,
                format!("a {k:?} block is not mapped{place}"),
                b,
            ),
            None => self.unmapped(
                line,
                pointer,
                format!("a block without a string `type` is not mapped{place}"),
                b,
            ),
        }
    }

    /// Keeps the fields of a mapped block other than `mapped` (a thinking block's
    /// `signature`, a text block's `citations`, ...), as one object at the block's pointer.
    fn keep_block_fields(&mut self, line: u64, pointer: &str, block: &Node<'a>, mapped: &[&str]) {
        let rest = node_fields_except(block, mapped);
        if !rest.is_empty() {
            let kind = block["type"].as_str().unwrap_or_default();
            self.keep(
                line,
                pointer,
                format!("fields of a {kind} block that no step holds"),
                &Node::Object(rest),
            );
        }
    }
}

/// The steps, with what `details` lists about them.
#[derive(Default)]
pub(super) struct Built<'a> {
    pub content: Vec<Step>,
    /// The line each step comes from.
    pub origins: Vec<u64>,
    /// Ids of the calls whose result has `is_error: true`.
    pub error_results: Vec<Node<'a>>,
    /// `{step, id}` of each call no result answers.
    pub unanswered_calls: Vec<Node<'a>>,
    /// `{step, id, line, reason}` of each result that answers no call it can be linked to.
    pub unlinked_results: Vec<Node<'a>>,
    /// How many of the lines had a message whose content could be read.
    pub readable: u64,
}

/// Why the lines cannot be one trajectory.
pub(super) struct Problem {
    pub line: u64,
    pub pointer: String,
    pub message: String,
}

/// The blocks of a message's `content` with their pointers: a list's elements (a string in it
/// is a text block), or one block given alone as an object; `None` for anything else.
fn content_blocks<'a>(content: &'a Node<'a>) -> Option<Vec<(String, Cow<'a, Node<'a>>)>> {
    let text = |s: &Cow<'a, str>| {
        Cow::Owned(Node::object([
            ("type", Node::from("text")),
            ("text", Node::String(s.clone())),
        ]))
    };
    let block = |b: &'a Node<'a>| match b {
        Node::String(s) => text(s),
        other => Cow::Borrowed(other),
    };
    match content {
        Node::String(s) => Some(vec![("/message/content".to_owned(), text(s))]),
        Node::Array(b) => Some(
            b.iter()
                .enumerate()
                .map(|(k, b)| (format!("/message/content/{k}"), block(b)))
                .collect(),
        ),
        Node::Object(_) => Some(vec![(
            "/message/content".to_owned(),
            Cow::Borrowed(content),
        )]),
        _ => None,
    }
}

/// A `tool_use` block as an action: `Bash` with only a command (and its description) is bash
/// code; anything else an api action with the input as kwargs.
fn tool_action(block: &Node<'_>) -> Step {
    let name = block["name"].as_str().unwrap_or_default();
    let input = block["input"].to_map();
    let bash_only = name == "Bash"
        && input.keys().all(|k| k == "command" || k == "description")
        && input.get("command").is_some_and(Value::is_string);
    if bash_only {
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
    }
}

/// A block of a response, where it is in the file.
struct Block<'a> {
    line: u64,
    pointer: String,
    value: Cow<'a, Node<'a>>,
}

/// A tool result waiting for its response to be written.
struct Answer {
    line: u64,
    step: Step,
}

/// The steps in file order: a step as it is, or a response (written with its results).
enum Unit<'a> {
    Steps(Vec<(Step, u64, Option<Node<'a>>)>),
    Response(Vec<Block<'a>>),
}

/// How a user line's text is observed: `isMeta` lines (hook feedback, reminders) and the
/// summary that continues a compacted conversation come from the environment.
fn user_text(entry: &Node<'_>, text: &str) -> Step {
    if entry["isCompactSummary"].as_bool() == Some(true) {
        Step::environment_text(Some("compact_summary".into()), text)
    } else if entry["isMeta"].as_bool() == Some(true) {
        Step::environment_text(Some("meta".into()), text)
    } else {
        Step::user_text(text)
    }
}

/// The text of a `tool_result`'s content (a string, or its text blocks joined by newlines);
/// its other blocks (images, tool references) are kept and counted.
fn result_text<'a>(
    line: u64,
    pointer: &str,
    content: &Node<'a>,
    unmapped: &mut Unmapped<'a>,
) -> String {
    match content {
        Node::String(s) => s.as_ref().to_owned(),
        Node::Array(blocks) => {
            let mut texts = Vec::new();
            for (k, b) in blocks.iter().enumerate() {
                match b {
                    Node::String(s) => texts.push(s.as_ref()),
                    b if b["type"].as_str() == Some("text") && b["text"].as_str().is_some() => {
                        texts.push(b["text"].as_str().unwrap_or_default())
                    }
                    b => unmapped.block(
                        line,
                        &format!("{pointer}/content/{k}"),
                        b,
                        " in a tool result",
                    ),
                }
            }
            texts.join("\n")
        }
        Node::Null => String::new(),
        other => {
            unmapped.wrong_type(
                line,
                &format!("{pointer}/content"),
                "a tool result's content is neither a string nor blocks".into(),
                other,
            );
            String::new()
        }
    }
}

/// Builds the steps of `lines` (the selected turns, in file order).
pub(super) fn build<'a>(
    lines: &[Line<'a>],
    unmapped: &mut Unmapped<'a>,
) -> Result<Built<'a>, Problem> {
    let mut built = Built::default();
    let mut units: Vec<Unit> = Vec::new();
    // Response key (message id, else the line) → its unit.
    let mut responses: HashMap<String, usize> = HashMap::new();
    // Call id → tool name, for every call of the responses taken: a result may be written
    // before the lines of its response.
    let mut calls: HashMap<&str, &str> = HashMap::new();
    for l in lines {
        let e = l.entry;
        if e["type"].as_str() != Some("assistant") || e["isApiErrorMessage"].as_bool() == Some(true)
        {
            continue;
        }
        let content = &e["message"]["content"];
        let blocks = content
            .as_array()
            .unwrap_or_else(|| std::slice::from_ref(content));
        for b in blocks {
            if let (Some("tool_use"), Some(id)) = (b["type"].as_str(), b["id"].as_str()) {
                calls
                    .entry(id)
                    .or_insert(b["name"].as_str().unwrap_or_default());
            }
        }
    }
    let mut answers: HashMap<String, Answer> = HashMap::new();
    for l in lines {
        let (line, e) = (l.line, l.entry);
        let message = &e["message"];
        if !message.is_object() {
            let kind = e["type"].as_str().unwrap_or_default();
            unmapped.wrong_type(
                line,
                "/message",
                format!("a {kind} line whose message is not an object"),
                message,
            );
            continue;
        }
        let Some(blocks) = content_blocks(&message["content"]) else {
            unmapped.wrong_type(
                line,
                "/message/content",
                "content is neither a string nor content blocks".into(),
                &message["content"],
            );
            continue;
        };
        built.readable += 1;
        let assistant = e["type"].as_str() == Some("assistant");
        if assistant && e["isApiErrorMessage"].as_bool() == Some(true) {
            // Claude Code writes an API failure in the model's place: the environment speaks.
            let mut texts = Vec::new();
            for (pointer, b) in &blocks {
                match b["text"].as_str() {
                    Some(t) if b["type"].as_str() == Some("text") => texts.push(t),
                    _ => unmapped.block(line, pointer, b, ""),
                }
            }
            let step = Step::environment_text(Some("api_error".into()), texts.join("\n"));
            units.push(Unit::Steps(vec![(step, line, None)]));
            continue;
        }
        if assistant {
            let key = message["id"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| format!("\u{0}line {line}"));
            let unit = *responses.entry(key).or_insert_with(|| {
                units.push(Unit::Response(Vec::new()));
                units.len() - 1
            });
            for (pointer, b) in blocks {
                if let Unit::Response(r) = &mut units[unit] {
                    r.push(Block {
                        line,
                        pointer,
                        value: b,
                    });
                }
            }
            continue;
        }
        let mut steps = Vec::new();
        for (pointer, b) in blocks {
            match b["type"].as_str().unwrap_or_default() {
                "tool_result" => {
                    unmapped.keep_block_fields(
                        line,
                        &pointer,
                        &b,
                        &["type", "tool_use_id", "content", "is_error"],
                    );
                    let id = b["tool_use_id"].as_str().unwrap_or_default();
                    let text = result_text(line, &pointer, &b["content"], unmapped);
                    let known = calls.get(id).map(|n| (*n).to_owned());
                    match known {
                        Some(name) if !answers.contains_key(id) => {
                            if b["is_error"].as_bool() == Some(true) {
                                built.error_results.push(Node::from(id.to_owned()));
                            }
                            let step =
                                Step::environment_text(Some(name), text).with_tool_call_id(id);
                            answers.insert(id.to_owned(), Answer { line, step });
                        }
                        known => {
                            let reason = if known.is_some() {
                                "a second result for a call already answered"
                            } else {
                                "no tool_use in the conversation has this id"
                            };
                            let note = Node::object([
                                ("id", Node::from(id.to_owned())),
                                ("line", Node::from(line)),
                                ("pointer", Node::from(pointer.clone())),
                                ("reason", Node::from(reason)),
                            ]);
                            let step = Step::environment_text(
                                Some(known.unwrap_or_else(|| "tool_result".into())),
                                text,
                            );
                            steps.push((step, line, Some(note)));
                        }
                    }
                }
                "text" if b["text"].as_str().is_some() => {
                    unmapped.keep_block_fields(line, &pointer, &b, &["type", "text"]);
                    steps.push((
                        user_text(e, b["text"].as_str().unwrap_or_default()),
                        line,
                        None,
                    ));
                }
                "image" => {
                    unmapped.keep_block_fields(line, &pointer, &b, &["type", "source"]);
                    let src = &b["source"];
                    let uri = match (src["media_type"].as_str(), src["data"].as_str()) {
                        (Some(t), Some(d)) => format!("data:{t};base64,{d}"),
                        _ => src["url"]
                            .as_str()
                            .or(src["path"].as_str())
                            .unwrap_or_default()
                            .to_owned(),
                    };
                    steps.push((Step::image(uri, Source::User), line, None));
                }
                _ => unmapped.block(line, &pointer, &b, ""),
            }
        }
        if !steps.is_empty() {
            units.push(Unit::Steps(steps));
        }
    }
    for unit in units {
        match unit {
            Unit::Steps(steps) => {
                for (step, line, note) in steps {
                    if let Some(mut note) = note {
                        note.insert("step", Node::from(built.content.len() as u64));
                        built.unlinked_results.push(note);
                    }
                    built.content.push(step);
                    built.origins.push(line);
                }
            }
            Unit::Response(blocks) => response(blocks, &mut answers, &mut built, unmapped),
        }
    }
    // ADP links a call only when an observation answers it: an unanswered call may not stand
    // right before an observation (the upgrade would link the two).
    for (i, step) in built.content.iter().enumerate() {
        let next_observes = built.content.get(i + 1).is_some_and(|n| !n.is_action());
        if step.is_tool_action() && step.tool_call_id().is_none() && next_observes {
            let call = built
                .unanswered_calls
                .iter()
                .find(|c| c["step"].as_u64() == Some(i as u64))
                .map(|c| c["id"].clone())
                .unwrap_or(Node::Null);
            return Err(Problem {
                line: built.origins[i],
                pointer: "/message/content".into(),
                message: format!(
                    "the call {call} has no result, and the session goes on with something else observed after it; ADP cannot place an unanswered call before an observation"
                ),
            });
        }
    }
    Ok(built)
}

/// Writes one response: its actions (calls no result answers first, so that none of them
/// stands before an observation), then its calls' results in call order.
fn response<'a>(
    blocks: Vec<Block<'a>>,
    answers: &mut HashMap<String, Answer>,
    built: &mut Built<'a>,
    unmapped: &mut Unmapped<'a>,
) {
    // (step, line, call id when a tool call)
    let mut actions: Vec<(Step, u64, Option<Option<String>>)> = Vec::new();
    let mut thought: Option<(String, u64, String)> = None;
    let mut text: Option<(String, u64)> = None;
    let flush = |actions: &mut Vec<(Step, u64, Option<Option<String>>)>,
                 text: &mut Option<(String, u64)>,
                 thought: &mut Option<(String, u64, String)>| {
        if let Some((t, line)) = text.take() {
            let mut m = Step::message(t, None);
            m.set_thought(None, thought.take().map(|t| t.0));
            actions.push((m, line, None));
        }
    };
    for Block {
        line,
        pointer,
        value: b,
    } in blocks
    {
        match b["type"].as_str().unwrap_or_default() {
            "thinking" if b["thinking"].as_str().is_some() => {
                unmapped.keep_block_fields(line, &pointer, &b, &["type", "thinking"]);
                let t = b["thinking"].as_str().unwrap_or_default();
                thought = Some(match thought.take() {
                    Some((prev, _, _)) => (format!("{prev}\n\n{t}"), line, pointer),
                    None => (t.to_owned(), line, pointer),
                });
            }
            "text" if b["text"].as_str().is_some() => {
                unmapped.keep_block_fields(line, &pointer, &b, &["type", "text"]);
                flush(&mut actions, &mut text, &mut thought);
                text = Some((b["text"].as_str().unwrap_or_default().to_owned(), line));
            }
            "tool_use" => {
                unmapped.keep_block_fields(line, &pointer, &b, &["type", "id", "name", "input"]);
                if !b["input"].is_object() && !b["input"].is_null() {
                    unmapped.wrong_type(
                        line,
                        &format!("{pointer}/input"),
                        "a tool input that is not an object has no place in kwargs".into(),
                        &b["input"],
                    );
                }
                let mut step = tool_action(&b);
                let mut description = text.take().map(|t| t.0);
                if let Step::CodeAction(c) = &step {
                    // A Bash call carries its own description; the text before it stays a
                    // message of its own.
                    if c.description.is_some() {
                        if let Some(d) = description.take() {
                            actions.push((Step::message(d, None), line, None));
                        }
                        description = c.description.clone();
                    }
                }
                step.set_thought(description, thought.take().map(|t| t.0));
                actions.push((step, line, Some(b["id"].as_str().map(str::to_owned))));
            }
            _ => unmapped.block(line, &pointer, &b, ""),
        }
    }
    flush(&mut actions, &mut text, &mut thought);
    if let Some((t, line, pointer)) = thought {
        unmapped.left.blocks += 1;
        unmapped.keep(
            line,
            &pointer,
            "a thinking block with no text or call after it in its response".into(),
            &Node::object([
                ("type", Node::from("thinking")),
                ("thinking", Node::from(t)),
            ]),
        );
    }
    let answered =
        |call: &Option<Option<String>>| matches!(call, Some(Some(id)) if answers.contains_key(id));
    let (mut order, rest): (Vec<_>, Vec<_>) = actions
        .into_iter()
        .partition(|(_, _, call)| call.is_some() && !answered(call));
    order.extend(rest);
    let mut results = Vec::new();
    for (mut step, line, call) in order {
        match call {
            Some(Some(id)) if answers.contains_key(&id) => {
                step = step.with_tool_call_id(id.clone());
                results.push(id);
            }
            Some(id) => built.unanswered_calls.push(Node::object([
                ("step", Node::from(built.content.len() as u64)),
                ("id", id.map_or(Node::Null, Node::from)),
            ])),
            None => {}
        }
        built.content.push(step);
        built.origins.push(line);
    }
    // Results in call order: the order of the calls' blocks, which `results` keeps except
    // for the unanswered calls moved before them.
    for id in results {
        if let Some(a) = answers.remove(&id) {
            built.content.push(a.step);
            built.origins.push(a.line);
        }
    }
}

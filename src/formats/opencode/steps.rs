//! The steps and `details.opencode` of one OpenCode session, from any of its three shapes: a
//! bundle of the store's rows (messages `{id, info: data, parts: [{id, data}]}`), the
//! `opencode export` document and a bundle of `storage/` files (both `{info, messages: [{info,
//! parts}]}`, ids inside).
//!
//! A user message's text parts are observations from the user (`ignored` ones, which OpenCode
//! never sends, are left out), its images image observations, a `subtask` part an observation
//! named `subtask`, a `compaction` part the mark of a compaction. In an assistant message,
//! reasoning is the `reasoning_content` of the next action, a text the description of the call
//! after it (else a message), each `tool` part an action followed by its result (`completed`:
//! the output; `error`: the error, listed; `pending`/`running`: interrupted, an empty result,
//! listed). A summary message (`summary: true`, written after a compaction) is an observation
//! named `compact_summary`. Step boundaries, snapshots, patches and retries hold no step: they
//! stay in the message's entry of `details.opencode.messages` with every part's fields no step
//! holds; what is left out is counted in a [`LeftOut`].

use foldhash::{HashMap, HashMapExt};

use crate::convert::{LeftOut, Partial};
use crate::formats::chat::{described_call_step, parse_arguments, system_step, CodeTool};
use crate::formats::kit::{source_node, LinkIds};
use crate::formats::session_steps::{Pending, Taken};
use crate::ingest::RawRecord;
use crate::json::Node;
use crate::model::step::TextObservation;
use crate::model::{JsonObject, Source, Step, Trajectory};
use crate::validate::Diagnostic;

/// OpenCode's shell tool: a call of `command` (and a `description`) alone is bash code.
const CODE_TOOLS: &[CodeTool] = &[("bash", "command", "bash")];

/// The result OpenCode's model is sent for a call that never finished.
const INTERRUPTED: &str = "";

/// A message as the three shapes hold it: its id, its `info` and its parts as `(id, body)`.
struct Message<'n, 'a> {
    id: &'n Node<'a>,
    info: &'n Node<'a>,
    parts: Vec<(&'n Node<'a>, &'n Node<'a>)>,
}

impl<'n, 'a> Message<'n, 'a> {
    /// Message `m` of a store bundle (`store`) or of an export document.
    fn of(m: &'n Node<'a>, store: bool) -> Self {
        let parts = m["parts"].as_array().unwrap_or_default();
        if store {
            Message {
                id: &m["id"],
                info: &m["info"],
                parts: parts.iter().map(|p| (&p["id"], &p["data"])).collect(),
            }
        } else {
            Message {
                id: &m["info"]["id"],
                info: &m["info"],
                parts: parts.iter().map(|p| (&p["id"], p)).collect(),
            }
        }
    }
}

/// What one session makes.
struct Built<'a> {
    content: Vec<Step>,
    left: LeftOut,
    /// Per message: its info, its first step and its parts without what the steps hold.
    messages: Vec<Node<'a>>,
    compactions: Vec<Node<'a>>,
    error_results: Vec<Node<'a>>,
    interrupted_calls: Vec<Node<'a>>,
    renamed_call_ids: Vec<Node<'a>>,
    message_errors: Vec<Node<'a>>,
    /// The step of the call that started each sub-session.
    sub_session_calls: HashMap<String, usize>,
    links: LinkIds,
    models: Vec<String>,
    tokens: [u64; 5],
    cost: f64,
    system: Option<String>,
    kept: u64,
}

impl<'a> Built<'a> {
    fn new() -> Self {
        Built {
            content: Vec::new(),
            left: LeftOut::new("details.opencode"),
            messages: Vec::new(),
            compactions: Vec::new(),
            error_results: Vec::new(),
            interrupted_calls: Vec::new(),
            renamed_call_ids: Vec::new(),
            message_errors: Vec::new(),
            sub_session_calls: HashMap::new(),
            links: LinkIds::default(),
            models: Vec::new(),
            tokens: [0; 5],
            cost: 0.0,
            system: None,
            kept: 0,
        }
    }

    /// Adds the steps of message `m`, at `/messages/{i}` of the record on `line`.
    fn message(&mut self, i: usize, m: &Message<'_, 'a>, line: u64) {
        let info = m.info;
        if let Some(file) = unreadable(info) {
            self.left
                .wrong_type(line, &format!("/messages/{i}/info"), file);
            self.messages.push(info.clone());
            return;
        }
        let role = info["role"].as_str().unwrap_or_default();
        let first = self.content.len();
        let mut taken: Taken = vec![&[]; m.parts.len()];
        let pointer = format!("/messages/{i}/parts");
        self.usage(info);
        match role {
            "user" => self.user(m, &pointer, line, &mut taken),
            "assistant" => self.assistant(m, &pointer, line, &mut taken),
            other => self.left.unmapped(
                line,
                &format!("/messages/{i}/info/role"),
                format!("a message of the role {other:?}, which OpenCode does not write"),
            ),
        }
        if !info["error"].is_null() {
            self.message_errors.push(Node::object([
                ("message_id", m.id.clone()),
                ("step", self.step_or_null(first)),
                ("error", info["error"].clone()),
            ]));
        }
        let made = self.content.len() > first;
        self.kept += u64::from(made);
        let parts = m
            .parts
            .iter()
            .zip(&taken)
            .map(|((id, body), keys)| part_rest(id, body, keys))
            .collect();
        self.messages.push(Node::object([
            ("id", m.id.clone()),
            ("step", self.step_or_null(first)),
            ("info", info.clone()),
            ("parts", Node::Array(parts)),
        ]));
    }

    /// `first` when steps were made from it on, else null.
    fn step_or_null(&self, first: usize) -> Node<'static> {
        if self.content.len() > first {
            Node::from(first as u64)
        } else {
            Node::Null
        }
    }

    /// Sums an assistant message's tokens and cost, and notes its model.
    fn usage(&mut self, info: &Node<'a>) {
        let model = match (&info["providerID"], &info["modelID"]) {
            (Node::String(p), Node::String(m)) => Some(format!("{p}/{m}")),
            _ => match (&info["model"]["providerID"], &info["model"]["modelID"]) {
                (Node::String(p), Node::String(m)) => Some(format!("{p}/{m}")),
                _ => None,
            },
        };
        if let Some(m) = model.filter(|m| !self.models.contains(m)) {
            self.models.push(m);
        }
        let t = &info["tokens"];
        for (k, v) in [
            &t["input"],
            &t["output"],
            &t["reasoning"],
            &t["cache"]["read"],
            &t["cache"]["write"],
        ]
        .into_iter()
        .enumerate()
        {
            self.tokens[k] += v.as_u64().unwrap_or_default();
        }
        if let Some(c) = info["cost"].as_number().and_then(|n| n.as_f64()) {
            self.cost += c;
        }
    }

    /// A user message: its texts, images and subtasks are observations; a compaction part
    /// marks where the summary after it stands.
    fn user(&mut self, m: &Message<'_, 'a>, pointer: &str, line: u64, taken: &mut Taken) {
        self.system_prompt(m.info);
        for (k, (_, p)) in m.parts.iter().enumerate() {
            match p["type"].as_str() {
                Some("text") => {
                    if p["ignored"].as_bool() == Some(true) {
                        // Shown to the user, never sent to the model.
                        self.left.blocks += 1;
                    } else if let Some(t) = self.text_of(line, pointer, k, p, "text") {
                        taken[k] = &["text"];
                        self.content.push(Step::user_text(t));
                    }
                }
                Some("file") => {
                    if self.file(p, Source::User) {
                        taken[k] = &["url"];
                    }
                }
                Some("subtask") => {
                    if let Some(t) = self.text_of(line, pointer, k, p, "prompt") {
                        taken[k] = &["prompt"];
                        self.content.push(Step::TextObservation(TextObservation {
                            content: t,
                            name: Some("subtask".to_owned()),
                            source: Source::User,
                            tool_call_id: None,
                            reward: None,
                        }));
                    }
                }
                Some("compaction") => self.compactions.push(Node::object([
                    ("message_id", m.id.clone()),
                    ("auto", p["auto"].clone()),
                    ("overflow", p["overflow"].clone()),
                    ("step", Node::Null),
                ])),
                Some("tool") => {
                    taken[k] = self.tool(m, k, p, None, None);
                }
                Some("agent" | "step-start" | "step-finish" | "snapshot" | "patch" | "retry") => {}
                _ => self.other_part(line, pointer, k, p),
            }
        }
    }

    /// A system prompt a message names, as a step when it is not the one before: a user
    /// message's `system` (a custom prompt), or the `system` list older releases wrote on each
    /// assistant message (the prompt the model was sent, joined by blank lines).
    fn system_prompt(&mut self, info: &Node<'a>) {
        let system = match &info["system"] {
            Node::String(s) => s.to_string(),
            Node::Array(items) => items
                .iter()
                .filter_map(Node::as_str)
                .collect::<Vec<_>>()
                .join("\n\n"),
            _ => return,
        };
        if !system.trim().is_empty() && self.system.as_deref() != Some(system.as_str()) {
            self.system = Some(system.clone());
            self.content.push(system_step(system));
        }
    }

    /// An assistant message: reasoning, texts and calls are actions, each call followed by its
    /// result; a summary message's text an observation.
    fn assistant(&mut self, m: &Message<'_, 'a>, pointer: &str, line: u64, taken: &mut Taken) {
        self.system_prompt(m.info);
        let summary = m.info["summary"].as_bool() == Some(true);
        let mut pending = Pending::new(&["text"], &["text"]);
        for (k, (_, p)) in m.parts.iter().enumerate() {
            match p["type"].as_str() {
                Some("reasoning") => {
                    if let Some(t) = p["text"].as_str().filter(|t| !t.trim().is_empty()) {
                        pending.think(k, t);
                    }
                }
                Some("text") if summary => {
                    if let Some(t) = self.text_of(line, pointer, k, p, "text") {
                        taken[k] = &["text"];
                        let at = self.content.len();
                        self.content.push(Step::environment_text(
                            Some("compact_summary".to_owned()),
                            t,
                        ));
                        self.place_compaction(m.id, at);
                    }
                }
                Some("text") => {
                    if let Some(t) = self.text_of(line, pointer, k, p, "text") {
                        if let Some(step) = pending.text(k, t, taken) {
                            self.content.push(step);
                        }
                    }
                }
                Some("tool") => {
                    let (description, reasoning) = pending.for_call(taken);
                    taken[k] = self.tool(m, k, p, description, reasoning);
                }
                Some("file") => {
                    self.flush(&mut pending, taken);
                    if self.file(p, Source::Agent) {
                        taken[k] = &["url"];
                    }
                }
                Some("step-start" | "step-finish" | "snapshot" | "patch" | "retry" | "agent") => {}
                _ => self.other_part(line, pointer, k, p),
            }
        }
        self.flush(&mut pending, taken);
        if pending.thought_left() {
            // Reasoning with no text or call after it: kept whole in the message's parts.
            self.left.blocks += 1;
        }
    }

    /// Gives the compaction waiting for its summary (the last without a step) step `at`.
    fn place_compaction(&mut self, summary_id: &Node<'a>, at: usize) {
        match self
            .compactions
            .iter_mut()
            .rev()
            .find(|c| c["step"].is_null())
        {
            Some(c) => {
                c.insert("step", Node::from(at as u64));
                c.insert("summary_message_id", summary_id.clone());
            }
            None => self.compactions.push(Node::object([
                ("message_id", Node::Null),
                ("step", Node::from(at as u64)),
                ("summary_message_id", summary_id.clone()),
            ])),
        }
    }

    /// Writes the pending text as a message, with the pending reasoning.
    fn flush(&mut self, pending: &mut Pending, taken: &mut Taken) {
        if let Some(step) = pending.flush(taken) {
            self.content.push(step);
        }
    }

    /// A `tool` part: the call, and its result right after it. The keys the steps hold.
    fn tool(
        &mut self,
        m: &Message<'_, 'a>,
        k: usize,
        p: &Node<'a>,
        description: Option<String>,
        reasoning: Option<String>,
    ) -> &'static [&'static str] {
        let state = &p["state"];
        let name = p["tool"].as_str().unwrap_or_default().to_owned();
        let kwargs = match &state["input"] {
            Node::Null => JsonObject::new(),
            input => parse_arguments(input).unwrap_or_else(|_| {
                JsonObject::from_iter([("input".to_owned(), input.to_value())])
            }),
        };
        let mut step = described_call_step(&name, kwargs, CODE_TOOLS);
        let own = match &step {
            Step::CodeAction(c) => c.description.clone(),
            _ => None,
        };
        step.set_thought(description.or(own), reasoning);
        let native = p["callID"].as_str().filter(|c| !c.is_empty());
        let base = native.map_or_else(|| format!("call-{}", m.id.text()), str::to_owned);
        let base = if native.is_none() {
            format!("{base}-{k}")
        } else {
            base
        };
        let (link, renamed) = self.links.unique(base);
        let at = self.content.len();
        if renamed {
            self.renamed_call_ids.push(Node::object([
                ("step", Node::from(at as u64)),
                ("id", Node::from(native.unwrap_or_default().to_owned())),
                ("as", Node::from(link.clone())),
            ]));
        }
        if let Some(child) = state["metadata"]["sessionId"].as_str() {
            self.sub_session_calls.insert(child.to_owned(), at);
        }
        self.content.push(step.with_tool_call_id(link.clone()));
        let result_at = self.content.len() as u64;
        let status = state["status"].as_str().unwrap_or_default();
        let (text, keys): (String, &'static [&'static str]) = match status {
            "completed" => (state["output"].text(), &["input", "output"]),
            "error" => {
                self.error_results.push(Node::object([
                    ("step", Node::from(result_at)),
                    ("tool_call_id", Node::from(link.clone())),
                ]));
                (state["error"].text(), &["input", "error"])
            }
            _ => {
                self.interrupted_calls.push(Node::object([
                    ("step", Node::from(at as u64)),
                    ("id", Node::from(link.clone())),
                    ("status", state["status"].clone()),
                ]));
                (INTERRUPTED.to_owned(), &["input"])
            }
        };
        self.content
            .push(Step::environment_text(Some(name), text).with_tool_call_id(link));
        for a in state["attachments"].as_array().unwrap_or_default() {
            if !self.file(a, Source::Environment) {
                // A non-image attachment stays in the part's state.
            }
        }
        keys
    }

    /// A `file` part (or a tool's attachment) holding an image as an image observation; false
    /// for other files. A text file or directory a user attached is read into a synthetic text
    /// part beside it, so no content is lost; any other file is counted as left out.
    fn file(&mut self, p: &Node<'a>, source: Source) -> bool {
        let mime = p["mime"].as_str().unwrap_or_default();
        let url = p["url"].as_str().unwrap_or_default();
        if mime.starts_with("image/") && !url.is_empty() {
            self.content.push(Step::image(url.to_owned(), source));
            return true;
        }
        if !matches!(mime, "text/plain" | "application/x-directory") || source != Source::User {
            self.left.blocks += 1;
        }
        false
    }

    /// The text of `p[key]`: `None` when it is blank (no step), or not text (counted).
    fn text_of(
        &mut self,
        line: u64,
        pointer: &str,
        k: usize,
        p: &Node<'a>,
        key: &str,
    ) -> Option<String> {
        match &p[key] {
            Node::String(s) if s.trim().is_empty() => None,
            Node::String(s) => Some(s.to_string()),
            _ => {
                self.left.unmapped(
                    line,
                    &format!("{pointer}/{k}/{key}"),
                    format!("a part whose {key} is not text"),
                );
                None
            }
        }
    }

    /// A part of a type no step holds: kept whole in the message's parts, counted.
    fn other_part(&mut self, line: u64, pointer: &str, k: usize, p: &Node<'a>) {
        if let Some(file) = unreadable(p) {
            self.left.wrong_type(line, &format!("{pointer}/{k}"), file);
            return;
        }
        let kind = p["type"].as_str().unwrap_or("(none)");
        self.left.unmapped(
            line,
            &format!("{pointer}/{k}/type"),
            format!("a part of type {kind:?} has no step here"),
        );
    }
}

/// What stands for a file of a storage folder that could not be read: the file and why.
fn unreadable(n: &Node) -> Option<String> {
    let file = n["trajkit_unreadable"].as_str()?;
    Some(format!("{file}: {}", n["reason"].text()))
}

/// A part as kept in details: its id, then its fields without the keys a step holds (for a
/// tool part, keys of its `state`) and without the ids of its message and session.
fn part_rest<'a>(id: &Node<'a>, body: &Node<'a>, keys: &[&str]) -> Node<'a> {
    let mut out = Node::object([("id", id.clone())]);
    let tool = body["type"].as_str() == Some("tool");
    for (k, v) in body.as_object().into_iter().flatten() {
        if matches!(k.as_ref(), "id" | "messageID" | "sessionID")
            || (!tool && keys.contains(&k.as_ref()))
        {
            continue;
        }
        let mut v = v.clone();
        if tool && k == "state" {
            for key in keys {
                v.remove(key);
            }
        }
        out.insert(k.clone(), v);
    }
    out
}

/// A list node, or nothing when empty.
fn list<'a>(items: Vec<Node<'a>>) -> Option<Node<'a>> {
    (!items.is_empty()).then_some(Node::Array(items))
}

/// The trajectory of one session (`doc`: a store bundle when `store`, else an export
/// document or a `storage/` bundle).
pub(super) fn to_partial<'a>(
    doc: &'a Node<'a>,
    record: &'a RawRecord,
    store: bool,
) -> Result<Partial<'a>, Vec<Diagnostic>> {
    let session = if store { &doc["session"] } else { &doc["info"] };
    let refuse = |id: Option<&str>, rule: &str, why: String| {
        vec![Diagnostic::error(&record.provenance, id, "", rule, &why)]
    };
    let Some(id) = session["id"].as_str().filter(|s| !s.is_empty()) else {
        return Err(refuse(
            None,
            "missing-id",
            "the session has no id".to_owned(),
        ));
    };
    let parent = session[if store { "parent_id" } else { "parentID" }]
        .as_str()
        .filter(|p| !p.is_empty());
    let line = record.provenance.line;
    let messages = doc["messages"].as_array().unwrap_or_default();
    let mut built = Built::new();
    for (i, m) in messages.iter().enumerate() {
        built.message(i, &Message::of(m, store), line);
    }
    if built.content.is_empty() {
        return Err(refuse(
            Some(id),
            "empty-trajectory",
            format!(
                "the session has {} messages, none with a text, call or image ADP can carry",
                messages.len()
            ),
        ));
    }
    built.left.messages = Some((messages.len() as u64, built.kept));
    let unanswered: Vec<Node<'a>> =
        crate::formats::chat::unlink_unanswered_calls(&mut built.content, |_| false)
            .into_iter()
            .map(Node::from)
            .collect();
    for key in ["project", "todos"] {
        if let Some(file) = unreadable(&doc[key]) {
            built.left.wrong_type(line, &format!("/{key}"), file);
        }
    }
    if let Some(rows) = doc["session_messages"].as_array() {
        // Rows of the newer `session_message` table (events), kept in details: no step.
        built.left.lines += rows.len() as u64;
    }

    let mut opencode: Vec<(&'static str, Node<'a>)> = vec![("session", session.clone())];
    let mut put = |key: &'static str, value: Option<Node<'a>>| {
        if let Some(v) = value {
            opencode.push((key, v));
        }
    };
    put("schema", doc.get("schema").cloned());
    put("project", doc.get("project").cloned());
    put("todos", doc.get("todos").cloned());
    put(
        "parent",
        parent.map(|p| {
            let mut n = Node::object([("session_id", Node::from(p))]);
            for (k, v) in doc["parent_call"].as_object().into_iter().flatten() {
                n.insert(k.clone(), v.clone());
            }
            n
        }),
    );
    let subs: Vec<Node<'a>> = doc["sub_sessions"]
        .as_array()
        .unwrap_or_default()
        .iter()
        .filter_map(|s| s.as_str())
        .map(|s| {
            let step = built
                .sub_session_calls
                .get(s)
                .map_or(Node::Null, |&i| Node::from(i as u64));
            Node::object([("session_id", Node::from(s.to_owned())), ("step", step)])
        })
        .collect();
    put("sub_sessions", list(subs));
    put(
        "models",
        list(built.models.iter().map(|m| Node::from(m.clone())).collect()),
    );
    let [input, output, reasoning, cache_read, cache_write] = built.tokens;
    put(
        "tokens",
        Some(Node::object([
            ("input", Node::from(input)),
            ("output", Node::from(output)),
            ("reasoning", Node::from(reasoning)),
            ("cache_read", Node::from(cache_read)),
            ("cache_write", Node::from(cache_write)),
        ])),
    );
    put(
        "cost",
        serde_json::Number::from_f64(built.cost).map(Node::Number),
    );
    put("session_messages", doc.get("session_messages").cloned());
    put("compactions", list(built.compactions));
    put("error_results", list(built.error_results));
    put("interrupted_calls", list(built.interrupted_calls));
    put("unanswered_calls", list(unanswered));
    put("renamed_call_ids", list(built.renamed_call_ids));
    put("message_errors", list(built.message_errors));
    put("messages", Some(Node::Array(built.messages)));

    let mut native = vec![("session_id", Node::from(id))];
    if let Some(p) = parent {
        native.push(("parent_session_id", Node::from(p)));
    }
    let mut source = source_node("opencode", record, Node::object(native));
    built.left.add_to_node(&mut source);
    Ok(Partial {
        trajectory: Trajectory::new(id.to_owned(), built.content, JsonObject::new()),
        tail: vec![("source", source), ("opencode", Node::object(opencode))],
    })
}

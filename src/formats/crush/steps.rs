//! The steps of one Crush/OpenCode session: each message's parts in order. A user message's
//! text, images and shell commands are observations from the user; in an assistant message,
//! reasoning is the `reasoning_content` of the next action, a text the description of the call
//! after it (else a message), each `tool_call` an action; a `tool_result` (in the `tool` message
//! after the call) an observation linked to its call. A summary message (a compaction) is an
//! observation named `compact_summary`. What no step holds stays in the message's entry of
//! `details.crush.messages`, and is counted in a [`LeftOut`].

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use crate::formats::chat::{call_step, parse_arguments, system_step};
use crate::formats::kit::node_fields_except;
use crate::formats::session_steps::{Pending, SessionSteps, Taken};
use crate::json::Node;
use crate::model::step::TextObservation;
use crate::model::{Source, Step};

/// Crush's shell tool: a call whose only argument is `command` is a `code_action` in bash.
const CODE_TOOLS: &[(&str, &str, &str)] = &[("bash", "command", "bash")];

/// A call waiting for its result: its link id and tool name.
struct Open {
    link: String,
    name: String,
}

/// The steps of a session and what `details.crush` lists about them: per message its columns
/// (`parts` as what no step holds) and its first step; `{step, message_id, rowid, current}` of
/// each summary message; the results that answer no call with their `rowid`.
pub(super) struct Built<'a> {
    pub steps: SessionSteps<'a>,
    /// The native call id of each call, and its step (to place sub-sessions).
    pub call_steps: HashMap<String, usize>,
    /// Binary attachments no step holds.
    pub binaries_left_out: u64,
    open: HashMap<String, Open>,
    /// The link ids used so far.
    links: HashSet<String>,
}

impl<'a> Built<'a> {
    pub fn new() -> Built<'a> {
        Built {
            steps: SessionSteps::new("details.crush"),
            call_steps: HashMap::new(),
            binaries_left_out: 0,
            open: HashMap::new(),
            links: HashSet::new(),
        }
    }

    /// Adds the steps of message `m` (a row of `messages`); `summary_id` is the session's
    /// `summary_message_id`.
    pub fn message(&mut self, m: &Node<'a>, summary_id: Option<&str>) {
        let rowid = m["rowid"].as_u64().unwrap_or_default();
        let role = m["role"].as_str().unwrap_or_default();
        let id = m["id"].as_str();
        let first_step = self.steps.content.len();
        let summary = m["is_summary_message"].as_i64().is_some_and(|f| f != 0)
            || (id.is_some() && id == summary_id);
        // Per part: the keys a step holds (removed from the part kept in details).
        let mut taken: Vec<&'static [&'static str]> = Vec::new();
        let parts: Vec<Node<'a>> = match &m["parts"] {
            Node::Array(parts) => parts.clone(),
            _ => {
                self.steps.left.wrong_type(
                    rowid,
                    "/parts",
                    "the message's parts are not a JSON list of parts",
                );
                let mut kept = Node::Object(node_fields_except(m, &[]));
                kept.insert("step", Node::Null);
                self.steps.messages.push(kept);
                return;
            }
        };
        taken.resize(parts.len(), &[]);
        if summary {
            self.summary(rowid, &parts, &mut taken);
        } else if role == "assistant" {
            self.assistant(rowid, &parts, &mut taken);
        } else {
            self.incoming(rowid, role, &parts, &mut taken);
        }
        if summary {
            self.steps.compactions.push(Node::object([
                (
                    "step",
                    if self.steps.content.len() > first_step {
                        Node::from(first_step as u64)
                    } else {
                        Node::Null
                    },
                ),
                ("message_id", m["id"].clone()),
                ("rowid", Node::from(rowid)),
                ("current", Node::from(id.is_some() && id == summary_id)),
            ]));
        }
        let made = self.steps.content.len() > first_step;
        self.steps.kept_messages += u64::from(made);
        let mut kept = Node::Object(node_fields_except(m, &["parts"]));
        kept.insert(
            "parts",
            Node::Array(
                parts
                    .iter()
                    .zip(&taken)
                    .map(|(p, keys)| part_rest(p, keys))
                    .collect(),
            ),
        );
        kept.insert(
            "step",
            if made {
                Node::from(first_step as u64)
            } else {
                Node::Null
            },
        );
        self.steps.messages.push(kept);
    }

    /// A summary message: its text an observation named `compact_summary`.
    fn summary(&mut self, rowid: u64, parts: &[Node<'a>], taken: &mut Taken) {
        for (k, p) in parts.iter().enumerate() {
            match p["type"].as_str() {
                Some("text") => {
                    if let Some(t) = self.text_of(rowid, k, p, "text") {
                        taken[k] = &["text"];
                        self.observe(Step::environment_text(
                            Some("compact_summary".to_owned()),
                            t,
                        ));
                    }
                }
                Some("reasoning" | "finish") => {}
                _ => self.other_part(rowid, k, p),
            }
        }
    }

    /// A user (or system) message's parts: observations.
    fn incoming(&mut self, rowid: u64, role: &str, parts: &[Node<'a>], taken: &mut Taken) {
        let source = if role == "user" {
            Source::User
        } else {
            Source::Environment
        };
        for (k, p) in parts.iter().enumerate() {
            let data = &p["data"];
            match p["type"].as_str() {
                Some("text") => {
                    if let Some(t) = self.text_of(rowid, k, p, "text") {
                        taken[k] = &["text"];
                        let step = match role {
                            "user" => Step::user_text(t),
                            "system" => system_step(t),
                            _ => Step::environment_text(Some(role.to_owned()), t),
                        };
                        self.observe(step);
                    }
                }
                Some("image_url") | Some("binary") => {
                    if self.image(rowid, k, p, source) {
                        taken[k] = image_keys(p);
                    }
                }
                Some("shell_command") => {
                    let command = data["command"].as_str().unwrap_or_default();
                    let output = data["output"].as_str().unwrap_or_default();
                    taken[k] = &["command", "output"];
                    self.observe(Step::TextObservation(TextObservation {
                        content: format!("$ {command}\n{output}"),
                        name: Some("shell_command".to_owned()),
                        source,
                        tool_call_id: None,
                        reward: None,
                    }));
                }
                Some("tool_result") => {
                    if let Some(keys) = self.result(rowid, k, p) {
                        taken[k] = keys;
                    }
                }
                Some("finish") => {}
                _ => self.other_part(rowid, k, p),
            }
        }
    }

    /// An assistant message's parts: reasoning, texts and calls are actions; results (of the
    /// calls a provider ran) observations.
    fn assistant(&mut self, rowid: u64, parts: &[Node<'a>], taken: &mut Taken) {
        let mut pending = Pending::new(&["text"], &["thinking"]);
        for (k, p) in parts.iter().enumerate() {
            let data = &p["data"];
            match p["type"].as_str() {
                Some("reasoning") => {
                    if let Some(t) = data["thinking"].as_str().filter(|t| !t.is_empty()) {
                        pending.think(k, t);
                    }
                }
                Some("text") => {
                    if let Some(t) = self.text_of(rowid, k, p, "text") {
                        if let Some(m) = pending.text(k, t, taken) {
                            self.act(m);
                        }
                    }
                }
                Some("tool_call") => {
                    taken[k] = &["name", "input"];
                    let (description, reasoning) = pending.for_call(taken);
                    self.call(rowid, k, p, description, reasoning);
                }
                Some("tool_result") => {
                    self.flush(&mut pending, taken);
                    if let Some(keys) = self.result(rowid, k, p) {
                        taken[k] = keys;
                    }
                }
                Some("image_url") | Some("binary") => {
                    self.flush(&mut pending, taken);
                    if self.image(rowid, k, p, Source::Agent) {
                        taken[k] = image_keys(p);
                    }
                }
                Some("finish") => {}
                _ => self.other_part(rowid, k, p),
            }
        }
        self.flush(&mut pending, taken);
        if pending.thought_left() {
            // Reasoning with no text or call after it: kept whole in the message's parts.
            self.steps.left.blocks += 1;
        }
    }

    /// Writes the pending text as a message, with the pending reasoning.
    fn flush(&mut self, pending: &mut Pending, taken: &mut Taken) {
        if let Some(m) = pending.flush(taken) {
            self.act(m);
        }
    }

    /// A `tool_call` part as an action, linked by its id (made unique when an earlier call
    /// had it).
    fn call(
        &mut self,
        rowid: u64,
        k: usize,
        p: &Node<'a>,
        description: Option<String>,
        reasoning: Option<String>,
    ) {
        let data = &p["data"];
        let name = data["name"].as_str().unwrap_or_default().to_owned();
        if name.is_empty() {
            self.steps.left.unmapped(
                rowid,
                &format!("/parts/{k}/data/name"),
                "a tool call without a tool name",
            );
        }
        let kwargs = match parse_arguments(&data["input"]) {
            Ok(kwargs) => kwargs,
            Err(why) => {
                self.steps
                    .left
                    .unmapped(rowid, &format!("/parts/{k}/data/input"), why);
                crate::model::JsonObject::from_iter([(
                    "input".to_owned(),
                    data["input"].to_value(),
                )])
            }
        };
        let mut step = call_step(&name, kwargs, CODE_TOOLS);
        step.set_thought(description, reasoning);
        let native = data["id"].as_str().unwrap_or_default().to_owned();
        let at = self.steps.content.len();
        let link = if native.is_empty() {
            format!("call-{rowid}-{k}")
        } else {
            native.clone()
        };
        let link = if self.links.contains(&link) {
            let mut n = 2;
            let renamed = loop {
                let candidate = format!("{link}_{n}");
                if !self.links.contains(&candidate) {
                    break candidate;
                }
                n += 1;
            };
            self.steps.renamed_call(&native, &renamed);
            renamed
        } else {
            link
        };
        self.links.insert(link.clone());
        self.call_steps.entry(native.clone()).or_insert(at);
        self.open.insert(
            native.clone(),
            Open {
                link: link.clone(),
                name,
            },
        );
        self.act(step.with_tool_call_id(link));
    }

    /// A `tool_result` part as an observation linked to its call (unlinked when no open call
    /// has its id); its image, if any, an image observation after it. The keys its steps hold,
    /// or `None` when it has no content to hold.
    fn result(&mut self, rowid: u64, k: usize, p: &Node<'a>) -> Option<&'static [&'static str]> {
        let data = &p["data"];
        let native = data["tool_call_id"].as_str().unwrap_or_default();
        let Some(content) = data["content"].as_str() else {
            self.steps.left.unmapped(
                rowid,
                &format!("/parts/{k}/data/content"),
                "a tool result whose content is not text",
            );
            return None;
        };
        let open = self.open.remove(native);
        let name = open.as_ref().map(|o| o.name.clone()).or_else(|| {
            data["name"]
                .as_str()
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
        });
        let step = Step::environment_text(name, content);
        if data["is_error"].as_bool() == Some(true) {
            self.steps.error_result(native);
        }
        match open {
            Some(o) => self.observe(step.with_tool_call_id(o.link)),
            None => {
                self.steps.unlinked_result(native, "rowid", rowid);
                self.observe(step);
            }
        }
        // An image a tool returned (`data`, base64, with its `mime_type`).
        let mime = data["mime_type"].as_str().unwrap_or_default();
        if let Some(b64) = data["data"].as_str().filter(|d| !d.is_empty()) {
            if mime.starts_with("image/") {
                self.steps.images += 1;
                self.observe(Step::image(
                    format!("data:{mime};base64,{b64}"),
                    Source::Environment,
                ));
                return Some(&["content", "data"]);
            }
            self.binaries_left_out += 1;
            self.steps.left.blocks += 1;
        }
        Some(&["content"])
    }

    /// An `image_url` part, or a `binary` part holding an image, as an image observation;
    /// false (the part kept whole, counted) for a binary that is not an image.
    fn image(&mut self, rowid: u64, k: usize, p: &Node<'a>, source: Source) -> bool {
        let data = &p["data"];
        let uri = match p["type"].as_str() {
            Some("image_url") => data["url"].as_str().map(str::to_owned),
            _ => {
                let mime = data["MIMEType"].as_str().unwrap_or_default();
                match data["Data"].as_str() {
                    Some(b64) if mime.starts_with("image/") => {
                        Some(format!("data:{mime};base64,{b64}"))
                    }
                    _ => {
                        self.binaries_left_out += 1;
                        self.steps.left.blocks += 1;
                        return false;
                    }
                }
            }
        };
        match uri.filter(|u| !u.is_empty()) {
            Some(uri) => {
                self.steps.images += 1;
                self.observe(Step::image(uri, source));
                true
            }
            None => {
                self.steps.left.unmapped(
                    rowid,
                    &format!("/parts/{k}/data"),
                    "an image part without an image",
                );
                false
            }
        }
    }

    /// The text of a part's `data[key]`: `None` when it is empty (no step), or not text
    /// (counted).
    fn text_of(&mut self, rowid: u64, k: usize, p: &Node<'a>, key: &str) -> Option<String> {
        match &p["data"][key] {
            Node::String(s) if s.trim().is_empty() => None,
            Node::String(s) => Some(s.to_string()),
            _ => {
                self.steps.left.unmapped(
                    rowid,
                    &format!("/parts/{k}/data/{key}"),
                    format!("a {key} part whose {key} is not text"),
                );
                None
            }
        }
    }

    /// A part of a type no step holds here: kept whole in the message's parts, counted.
    fn other_part(&mut self, rowid: u64, k: usize, p: &Node<'a>) {
        let kind = p["type"].as_str().unwrap_or("(none)");
        self.steps.left.unmapped(
            rowid,
            &format!("/parts/{k}/type"),
            format!("a part of type {kind:?} has no step here"),
        );
    }

    /// Adds an action.
    fn act(&mut self, step: Step) {
        self.steps.content.push(step);
    }

    /// Adds an observation.
    fn observe(&mut self, step: Step) {
        self.steps.content.push(step);
    }

    /// Settles the calls no result answered: one followed by an observation gets an empty
    /// result right after it (the link rules want a call followed by an observation to be
    /// answered), the others lose their id; each is listed in `unanswered_calls`.
    pub fn finish(&mut self) {
        let answered: HashSet<&str> = self
            .steps
            .content
            .iter()
            .filter(|s| !s.is_action())
            .filter_map(Step::tool_call_id)
            .collect();
        // The steps after which an empty result goes.
        let before: Vec<usize> = (0..self.steps.content.len())
            .filter(|&i| {
                let s = &self.steps.content[i];
                s.is_tool_action()
                    && s.tool_call_id().is_some_and(|id| !answered.contains(id))
                    && self
                        .steps
                        .content
                        .get(i + 1)
                        .is_some_and(|n| !n.is_action())
            })
            .collect();
        if !before.is_empty() {
            let old = std::mem::take(&mut self.steps.content);
            let mut at = before.iter().peekable();
            for (i, step) in old.into_iter().enumerate() {
                let empty = (at.peek() == Some(&&i)).then(|| {
                    at.next();
                    let name = match &step {
                        Step::ApiAction(a) => Some(a.function.clone()),
                        _ => Some("bash".to_owned()),
                    };
                    let id = step.tool_call_id().unwrap_or_default().to_owned();
                    (name, id)
                });
                self.steps.content.push(step);
                if let Some((name, id)) = empty {
                    self.steps.unanswered_calls.push(Node::object([
                        ("step", Node::from((self.steps.content.len() - 1) as u64)),
                        ("id", Node::from(id.clone())),
                        ("empty_result", Node::Bool(true)),
                    ]));
                    self.steps
                        .content
                        .push(Step::environment_text(name, "").with_tool_call_id(id));
                }
            }
            // Steps after an inserted result moved on by one each.
            let moved = |s: u64| s + before.iter().filter(|&&b| (b as u64) < s).count() as u64;
            for list in [
                &mut self.steps.messages,
                &mut self.steps.compactions,
                &mut self.steps.error_results,
                &mut self.steps.unlinked_results,
                &mut self.steps.renamed_call_ids,
            ] {
                for n in list.iter_mut() {
                    if let Some(s) = n["step"].as_u64() {
                        n.insert("step", Node::from(moved(s)));
                    }
                }
            }
            for s in self.call_steps.values_mut() {
                *s = moved(*s as u64) as usize;
            }
        }
        self.steps.unlink_unanswered();
    }
}

/// The keys of an image part a step holds.
fn image_keys(p: &Node<'_>) -> &'static [&'static str] {
    match p["type"].as_str() {
        Some("image_url") => &["url"],
        _ => &["Data"],
    }
}

/// A part as kept in details: its `data` without the keys a step holds.
fn part_rest<'a>(p: &Node<'a>, keys: &[&str]) -> Node<'a> {
    if keys.is_empty() || !p["data"].is_object() {
        return p.clone();
    }
    let mut out = p.clone();
    if let Some(data) = out.get_mut("data") {
        for k in keys {
            data.remove(k);
        }
    }
    out
}

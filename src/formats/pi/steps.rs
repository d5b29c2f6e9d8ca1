//! The steps of a session's path, and what `details.pi` says about them. Each entry on the
//! path is read in order: `message` entries by their role, the context entries the model saw
//! (`custom_message`, `branch_summary`) as observations, and the bookkeeping entries (model and
//! thinking-level changes, compactions, names, labels, extension state) into `details.pi`.
//!
//! Tool results follow their assistant message. A call no result answers gets, when the
//! conversation goes on, the error result Pi itself puts in the model's context for it ("No
//! result provided"), so that every call stays linked; a call at the very end stays unlinked.
//! Both are listed in `unanswered_calls`.

use std::borrow::Cow;

use foldhash::{HashMap, HashMapExt};
use serde_json::Value;

use crate::convert::LeftOut;
use crate::formats::call_steps::CallSteps;
use crate::formats::chat::{call_step, parse_arguments, CodeTool};
use crate::formats::kit::node_fields_except;
use crate::json::Node;
use crate::model::{Source, Step};

/// Pi's shell tool: a `bash` call with only its `command` is bash code.
const CODE_TOOLS: &[CodeTool] = &[("bash", "command", "bash")];

/// The text Pi gives the model for a call no result answered (pi-ai's `transformMessages`).
pub(super) const NO_RESULT: &str = "No result provided";

/// One entry of the path: its line in the file and the entry.
pub(super) struct Entry<'n, 'a> {
    pub line: u64,
    pub entry: &'n Node<'a>,
}

/// The steps of a path, and the lists `details.pi` keeps about them.
pub(super) struct Built<'a> {
    /// The steps, the calls waiting, `unanswered_calls` and `unmapped`.
    pub calls: CallSteps<'a>,
    /// Message entries (and context entries) on the path that became steps.
    pub kept_messages: u64,
    /// The step each path entry's steps start at, by its index in the file's entries.
    pub first_step: HashMap<usize, usize>,
    pub lists: Lists<'a>,
    pub usage: Usage,
}

/// The lists of `details.pi`, each written only when not empty.
#[derive(Default)]
pub(super) struct Lists<'a> {
    pub models: Vec<Node<'a>>,
    pub model_changes: Vec<Node<'a>>,
    pub thinking_levels: Vec<Node<'a>>,
    pub names: Vec<Node<'a>>,
    pub labels: Vec<Node<'a>>,
    pub custom: Vec<Node<'a>>,
    pub compactions: Vec<Node<'a>>,
    pub branch_summaries: Vec<Node<'a>>,
    pub custom_messages: Vec<Node<'a>>,
    pub bash_executions: Vec<Node<'a>>,
    pub errors: Vec<Node<'a>>,
    pub error_results: Vec<Node<'a>>,
    pub result_details: Vec<Node<'a>>,
    pub unlinked_results: Vec<Node<'a>>,
    pub extra_fields: Vec<Node<'a>>,
    pub other_entries: Vec<Node<'a>>,
}

/// Token usage and cost summed over the assistant messages on the path, and their stop
/// reasons counted.
#[derive(Default)]
pub(super) struct Usage {
    pub tokens: [u64; 5],
    pub cost: f64,
    pub any: bool,
    pub stop_reasons: Vec<(String, u64)>,
    /// Thinking signatures (opaque replay tokens) not kept.
    pub signatures: u64,
    /// Text blocks holding only white space, not kept.
    pub blank_texts: u64,
}

impl Usage {
    fn add(&mut self, usage: &Node<'_>) {
        if !usage.is_object() {
            return;
        }
        self.any = true;
        for (n, key) in self.tokens.iter_mut().zip(USAGE_KEYS) {
            *n += usage[key].as_u64().unwrap_or(0);
        }
        self.cost += usage["cost"]["total"]
            .as_number()
            .and_then(serde_json::Number::as_f64)
            .unwrap_or(0.0);
    }

    fn stop(&mut self, reason: &str) {
        match self.stop_reasons.iter_mut().find(|(r, _)| r == reason) {
            Some((_, n)) => *n += 1,
            None => self.stop_reasons.push((reason.to_owned(), 1)),
        }
    }
}

/// The token counts of a Pi `usage` object.
const USAGE_KEYS: [&str; 5] = ["input", "output", "cacheRead", "cacheWrite", "totalTokens"];

fn num<'a>(n: usize) -> Node<'a> {
    Node::from(n as u64)
}

fn owned<'a>(s: &str) -> Node<'a> {
    Node::from(s.to_owned())
}

/// An object node of the pairs whose value is not null.
fn compact<'a>(pairs: impl IntoIterator<Item = (&'static str, Node<'a>)>) -> Node<'a> {
    Node::Object(
        pairs
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (Cow::Borrowed(k), v))
            .collect(),
    )
}

/// The keys every entry has: not repeated in the notes `details.pi` keeps of entries.
const BASE_KEYS: [&str; 3] = ["type", "parentId", "timestamp"];

/// A note of an entry for `details.pi`: the step it applies from (or holds), then its fields
/// but the base keys and `except`.
fn noted<'a>(step: usize, entry: &Node<'a>, except: &[&str]) -> Node<'a> {
    let mut note = vec![(Cow::Borrowed("step"), num(step))];
    note.extend(
        node_fields_except(entry, &BASE_KEYS)
            .into_iter()
            .filter(|(k, _)| !except.contains(&k.as_ref())),
    );
    Node::Object(note)
}

/// An image block (`{type: "image", data, mimeType}`) as a data URI; an image OMP moved to its
/// blob store (`blob:sha256:<hash>`) as that reference.
fn image_uri(block: &Node<'_>) -> Option<String> {
    let data = block["data"].as_str()?;
    if data.starts_with("blob:") {
        return Some(data.to_owned());
    }
    let mime = block["mimeType"].as_str().unwrap_or("image/png");
    Some(format!("data:{mime};base64,{data}"))
}

impl<'a> Built<'a> {
    pub(super) fn new(left: LeftOut) -> Built<'a> {
        Built {
            calls: CallSteps::new(left, NO_RESULT),
            kept_messages: 0,
            first_step: HashMap::new(),
            lists: Lists::default(),
            usage: Usage::default(),
        }
    }

    /// The steps of a text-and-images content (a string, or text and image blocks), seen from
    /// `source`, a text named `name` (when from the environment); other blocks are unmapped.
    fn observe_content(
        &mut self,
        line: u64,
        pointer: &str,
        content: &Node<'a>,
        source: Source,
        name: Option<&str>,
    ) -> usize {
        let text = |t: &str| match source {
            Source::User => Step::user_text(t),
            _ => Step::environment_text(name.map(str::to_owned), t),
        };
        let mut n = 0;
        match content {
            Node::String(s) => {
                self.calls.push(text(s));
                n += 1;
            }
            Node::Array(blocks) => {
                for (k, b) in blocks.iter().enumerate() {
                    match (b["type"].as_str(), b["text"].as_str(), image_uri(b)) {
                        (Some("text"), Some(t), _) => {
                            self.calls.push(text(t));
                            n += 1;
                        }
                        (Some("image"), _, Some(uri)) => {
                            self.calls.push(Step::image(uri, source));
                            n += 1;
                        }
                        (kind, _, _) => self.calls.unmapped(
                            line,
                            format!("{pointer}/{k}"),
                            format!("a {} block is not mapped", kind.unwrap_or("typeless")),
                            b,
                            true,
                        ),
                    }
                }
            }
            other => self.calls.unmapped(
                line,
                pointer.to_owned(),
                "content is neither a string nor blocks".into(),
                other,
                false,
            ),
        }
        n
    }

    /// Reads one entry of the path (`index` into the file's entries).
    pub(super) fn entry(&mut self, index: usize, e: &Entry<'_, 'a>) {
        self.first_step.insert(index, self.calls.content.len());
        let (line, entry) = (e.line, e.entry);
        match entry["type"].as_str().unwrap_or_default() {
            "message" => self.message(line, entry),
            "custom_message" => {
                self.calls.close_calls();
                let at = self.calls.content.len();
                let name = entry["customType"].as_str().unwrap_or("custom");
                let content = &entry["content"];
                if self.observe_content(line, "/content", content, Source::Environment, Some(name))
                    > 0
                {
                    self.kept_messages += 1;
                }
                let note = noted(at, entry, &["content"]);
                self.lists.custom_messages.push(note);
            }
            "branch_summary" => {
                let at = self.calls.push(Step::environment_text(
                    Some("branch_summary".into()),
                    entry["summary"].as_str().unwrap_or_default(),
                ));
                self.kept_messages += 1;
                let note = noted(at, entry, &["summary"]);
                self.lists.branch_summaries.push(note);
            }
            "compaction" => {
                let mut note = noted(self.calls.content.len(), entry, &[]);
                note.insert("line", Node::from(line));
                self.lists.compactions.push(note);
            }
            "model_change" => {
                let note = noted(self.calls.content.len(), entry, &["id"]);
                self.lists.model_changes.push(note);
            }
            "thinking_level_change" => {
                let note = noted(self.calls.content.len(), entry, &["id"]);
                self.lists.thinking_levels.push(note);
            }
            "session_info" => self.lists.names.push(entry["name"].clone()),
            "label" => {
                let note = Node::Object(node_fields_except(entry, &BASE_KEYS));
                self.lists.labels.push(note);
            }
            "custom" => {
                let note = noted(self.calls.content.len(), entry, &["id"]);
                self.lists.custom.push(note);
            }
            // OMP's bookkeeping: rules injected, a subagent's set-up, a mode switch.
            "ttsr_injection" | "session_init" | "mode_change" => {
                let note = noted(self.calls.content.len(), entry, &["id"]);
                let mut note = note;
                note.insert("type", entry["type"].clone());
                self.lists.other_entries.push(note);
            }
            kind => {
                let reason = match entry["type"].as_str() {
                    Some(_) => format!("an entry of type {kind:?} is not mapped"),
                    None => "an entry without a string type".to_owned(),
                };
                self.calls
                    .unmapped(line, "/type".into(), reason, entry, false);
            }
        }
    }

    /// A `message` entry, by its role.
    fn message(&mut self, line: u64, entry: &Node<'a>) {
        let m = &entry["message"];
        let before = self.calls.content.len();
        self.extra_fields(line, entry, m);
        match m["role"].as_str().unwrap_or_default() {
            "user" => {
                self.observe_content(line, "/message/content", &m["content"], Source::User, None);
            }
            "assistant" => self.assistant(line, m),
            "toolResult" => self.tool_result(line, m),
            "bashExecution" => self.bash(line, entry, m),
            role @ ("custom" | "hookMessage") => {
                self.calls.close_calls();
                let at = self.calls.content.len();
                let name = m["customType"].as_str().unwrap_or(role);
                self.observe_content(
                    line,
                    "/message/content",
                    &m["content"],
                    Source::Environment,
                    Some(name),
                );
                let mut note = noted(at, m, &["content"]);
                note.insert("id", entry["id"].clone());
                self.lists.custom_messages.push(note);
            }
            role @ ("branchSummary" | "compactionSummary") => {
                let name = if role == "branchSummary" {
                    "branch_summary"
                } else {
                    "compaction_summary"
                };
                self.calls.push(Step::environment_text(
                    Some(name.into()),
                    m["summary"].as_str().unwrap_or_default(),
                ));
            }
            _ => {
                let reason = match m["role"].as_str() {
                    Some(r) => format!("a message of role {r:?} is not mapped"),
                    None => "a message without a string role".to_owned(),
                };
                self.calls
                    .unmapped(line, "/message/role".into(), reason, entry, false);
            }
        }
        if self.calls.content.len() > before {
            self.kept_messages += 1;
        }
    }

    /// Keeps the fields of a message entry and of its message that Pi does not define (an
    /// OpenClaw `responseId`, ...), in `extra_fields`.
    fn extra_fields(&mut self, line: u64, entry: &Node<'a>, m: &Node<'a>) {
        let known: &[&str] = match m["role"].as_str().unwrap_or_default() {
            "user" => &["role", "content", "timestamp"],
            "assistant" => &[
                "role",
                "content",
                "api",
                "provider",
                "model",
                "usage",
                "stopReason",
                "errorMessage",
                "timestamp",
            ],
            "toolResult" => &[
                "role",
                "toolCallId",
                "toolName",
                "content",
                "details",
                "isError",
                "timestamp",
            ],
            // bashExecution fields are all kept; custom ones are listed with the message.
            _ => return,
        };
        let outer = node_fields_except(entry, &["type", "id", "parentId", "timestamp", "message"]);
        let inner = node_fields_except(m, known);
        if outer.is_empty() && inner.is_empty() {
            return;
        }
        let mut note = vec![(Cow::Borrowed("line"), Node::from(line))];
        if !outer.is_empty() {
            note.push((Cow::Borrowed("entry"), Node::Object(outer)));
        }
        if !inner.is_empty() {
            note.push((Cow::Borrowed("message"), Node::Object(inner)));
        }
        self.lists.extra_fields.push(Node::Object(note));
    }

    /// An assistant message: thinking becomes the reasoning of the text or call after it, a
    /// text right before a call its description; its calls wait for their results; an error
    /// it ended on is observed after them.
    fn assistant(&mut self, line: u64, m: &Node<'a>) {
        self.calls.close_calls();
        let model = compact([
            ("api", m["api"].clone()),
            ("provider", m["provider"].clone()),
            ("model", m["model"].clone()),
        ]);
        if !model.as_object().is_some_and(Vec::is_empty) && !self.lists.models.contains(&model) {
            self.lists.models.push(model);
        }
        self.usage.add(&m["usage"]);
        if let Some(r) = m["stopReason"].as_str() {
            self.usage.stop(r);
        }
        let blocks: Vec<(String, Cow<'_, Node<'a>>)> = match &m["content"] {
            Node::String(s) => vec![(
                "/message/content".into(),
                Cow::Owned(Node::object([
                    ("type", Node::from("text")),
                    ("text", Node::String(s.clone())),
                ])),
            )],
            Node::Array(b) => b
                .iter()
                .enumerate()
                .map(|(k, b)| (format!("/message/content/{k}"), Cow::Borrowed(b)))
                .collect(),
            Node::Null => Vec::new(),
            other => {
                self.calls.unmapped(
                    line,
                    "/message/content".into(),
                    "content is neither a string nor blocks".into(),
                    other,
                    false,
                );
                Vec::new()
            }
        };
        let mut thought: Option<(String, String)> = None;
        let mut text: Option<String> = None;
        for (pointer, b) in blocks {
            match b["type"].as_str().unwrap_or_default() {
                "thinking" if b["thinking"].as_str().is_some() => {
                    if b["thinkingSignature"].as_str().is_some() {
                        self.usage.signatures += 1;
                    }
                    let t = b["thinking"].as_str().unwrap_or_default();
                    if t.trim().is_empty() {
                        continue;
                    }
                    thought = Some(match thought.take() {
                        Some((prev, _)) => (format!("{prev}\n\n{t}"), pointer),
                        None => (t.to_owned(), pointer),
                    });
                }
                "text" if b["text"].as_str().is_some() => {
                    let t = b["text"].as_str().unwrap_or_default();
                    if t.trim().is_empty() {
                        self.usage.blank_texts += 1;
                        continue;
                    }
                    if let Some(prev) = text.replace(t.to_owned()) {
                        let mut step = Step::message(prev, None);
                        step.set_thought(None, thought.take().map(|t| t.0));
                        self.calls.content.push(step);
                    }
                }
                "toolCall" => {
                    let name = b["name"].as_str().unwrap_or_default();
                    let kwargs = match parse_arguments(&b["arguments"]) {
                        Ok(k) => k,
                        Err(_) if b["arguments"].is_null() => Default::default(),
                        Err(why) => {
                            self.calls.unmapped(
                                line,
                                format!("{pointer}/arguments"),
                                why,
                                &b["arguments"],
                                false,
                            );
                            Default::default()
                        }
                    };
                    let mut step = call_step(name, kwargs, CODE_TOOLS);
                    step.set_thought(text.take(), thought.take().map(|t| t.0));
                    let native = b["id"].as_str();
                    let id = self.calls.link_id(native, || {
                        format!(
                            "pi-call:{line}:{}",
                            pointer.rsplit('/').next().unwrap_or("")
                        )
                    });
                    let native = native.map(str::to_owned);
                    self.calls.call(step, id, native, name.to_owned());
                }
                kind => {
                    let reason = format!("a {kind:?} block is not mapped");
                    self.calls.unmapped(line, pointer, reason, &b, true);
                }
            }
        }
        if let Some(t) = text {
            let mut step = Step::message(t, None);
            step.set_thought(None, thought.take().map(|t| t.0));
            self.calls.content.push(step);
        }
        if let Some((t, pointer)) = thought {
            let reason = "thinking with no text or call after it in its message".to_owned();
            let value = Node::object([
                ("type", Node::from("thinking")),
                ("thinking", Node::from(t)),
            ]);
            self.calls.unmapped(line, pointer, reason, &value, true);
        }
        let reason = m["stopReason"].as_str();
        if let Some(error) = m["errorMessage"].as_str() {
            let name = reason.unwrap_or("error");
            let at = self
                .calls
                .push(Step::environment_text(Some(name.to_owned()), error));
            self.lists.errors.push(compact([
                ("step", num(at)),
                ("line", Node::from(line)),
                ("stop_reason", m["stopReason"].clone()),
            ]));
        }
    }

    /// A tool result: linked to the waiting call it answers, else kept unlinked with why.
    fn tool_result(&mut self, line: u64, m: &Node<'a>) {
        let native = m["toolCallId"].as_str().unwrap_or_default();
        let mut texts = Vec::new();
        let mut images = Vec::new();
        match &m["content"] {
            Node::String(s) => texts.push(s.as_ref()),
            Node::Array(blocks) => {
                for (k, b) in blocks.iter().enumerate() {
                    match (b["type"].as_str(), b["text"].as_str(), image_uri(b)) {
                        (Some("text"), Some(t), _) => texts.push(t),
                        (Some("image"), _, Some(uri)) => images.push(uri),
                        (kind, _, _) => self.calls.unmapped(
                            line,
                            format!("/message/content/{k}"),
                            format!("a {} block is not mapped", kind.unwrap_or("typeless")),
                            b,
                            true,
                        ),
                    }
                }
            }
            Node::Null => {}
            other => self.calls.unmapped(
                line,
                "/message/content".into(),
                "content is neither a string nor blocks".into(),
                other,
                false,
            ),
        }
        let text = texts.join("\n");
        let name = m["toolName"].as_str().map(str::to_owned);
        let mut images = images.into_iter();
        let first = match images.next() {
            Some(uri) if text.is_empty() => Step::image(uri, Source::Environment),
            other => {
                images = other
                    .into_iter()
                    .chain(images)
                    .collect::<Vec<_>>()
                    .into_iter();
                Step::environment_text(name.clone(), text)
            }
        };
        let waiting = self.calls.answer(|p| p.native.as_deref() == Some(native));
        let at = match waiting {
            Some(p) => {
                self.calls.content.push(first.with_tool_call_id(p.id));
                self.calls.content.len() - 1
            }
            None => {
                let reason = if self.calls.used(native) {
                    "its call was answered already, or is not of the message before it"
                } else {
                    "no call before it in the conversation has this id"
                };
                let at = self.calls.push(first);
                self.lists.unlinked_results.push(Node::object([
                    ("step", num(at)),
                    ("line", Node::from(line)),
                    ("id", owned(native)),
                    ("reason", Node::from(reason)),
                ]));
                at
            }
        };
        for uri in images {
            self.calls
                .content
                .push(Step::image(uri, Source::Environment));
        }
        if m["isError"].as_bool() == Some(true) {
            self.lists.error_results.push(owned(native));
        }
        if !m["details"].is_null() {
            self.lists.result_details.push(Node::object([
                ("step", num(at)),
                ("details", m["details"].clone()),
            ]));
        }
    }

    /// A shell command the user ran (`!cmd`): bash code and its output, linked by an id made
    /// from the entry's.
    fn bash(&mut self, line: u64, entry: &Node<'a>, m: &Node<'a>) {
        let id = match entry["id"].as_str() {
            Some(e) => format!("pi-bash:{e}"),
            None => format!("pi-bash:{line}"),
        };
        let command = m["command"].as_str().unwrap_or_default();
        let at = self
            .calls
            .push(Step::code("bash", command, None).with_tool_call_id(id.clone()));
        let output = m["output"].as_str().unwrap_or_default();
        self.calls
            .content
            .push(Step::environment_text(Some("bash".into()), output).with_tool_call_id(id));
        let mut note = vec![(Cow::Borrowed("step"), num(at))];
        note.extend(node_fields_except(
            m,
            &["role", "command", "output", "timestamp"],
        ));
        self.lists.bash_executions.push(Node::Object(note));
    }
}

/// The usage totals as a node (`null` when no message had usage).
pub(super) fn usage_node<'a>(u: &Usage) -> Node<'a> {
    if !u.any {
        return Node::Null;
    }
    let mut o: Vec<(Cow<'a, str>, Node<'a>)> = USAGE_KEYS
        .iter()
        .zip(u.tokens)
        .map(|(k, n)| (Cow::Borrowed(*k), Node::from(n)))
        .collect();
    o.push((Cow::Borrowed("cost"), Node::from(Value::from(u.cost))));
    Node::Object(o)
}

/// Stop reasons counted, in the order first seen.
pub(super) fn stop_reasons_node<'a>(u: &Usage) -> Node<'a> {
    Node::Object(
        u.stop_reasons
            .iter()
            .map(|(r, n)| (Cow::Owned(r.clone()), Node::from(*n)))
            .collect(),
    )
}

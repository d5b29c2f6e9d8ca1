//! The steps of a session's path, and what `details.qwen_code` says about them. Each record is
//! read in order by its `message` (a Gemini `Content`): the user's parts become observations,
//! the model's a message or actions (a text before a call its description, thought parts
//! the reasoning of what follows them), and each `functionResponse` of a `tool_result` record
//! the result of the call with its id. `system` records are bookkeeping, kept in `records`,
//! except a chat compression, whose summary becomes a step and which is listed in
//! `compactions`.
//!
//! A call that no result answers gets one, when the conversation goes on, saying that none
//! was recorded, so that every call stays linked; a call at the very end stays unlinked. Both
//! are listed in `unanswered_calls`.

use std::borrow::Cow;

use crate::convert::LeftOut;
use crate::formats::call_steps::CallSteps;
use crate::formats::gemini_parts::{call_action, image_uri, result_text};
use crate::json::Node;
use crate::model::{Source, Step};

/// The result given to a call whose result the log does not hold, when the conversation
/// goes on after it.
pub(super) const NO_RESULT: &str = "No result was recorded for this call.";

/// The keys of a record that its steps and its note in `records` hold.
const MAPPED: &[&str] = &[
    "uuid",
    "parentUuid",
    "type",
    "subtype",
    "timestamp",
    "message",
    "systemPayload",
];

/// The token counts of a `usageMetadata` object, summed over the path.
const USAGE_KEYS: [&str; 5] = [
    "promptTokenCount",
    "candidatesTokenCount",
    "thoughtsTokenCount",
    "cachedContentTokenCount",
    "totalTokenCount",
];

/// One record of the path: its line in the file and the record (the records of its uuid
/// merged), and the later records of its uuid with their lines.
pub(super) struct Record<'n, 'a> {
    pub line: u64,
    pub entry: &'n Node<'a>,
    pub copies: &'n [(u64, &'n Node<'a>)],
}

/// The lists of `details.qwen_code`, each written only when not empty.
#[derive(Default)]
pub(super) struct Lists<'a> {
    pub models: Vec<Node<'a>>,
    pub compactions: Vec<Node<'a>>,
    pub error_results: Vec<Node<'a>>,
    pub unlinked_results: Vec<Node<'a>>,
    pub records: Vec<Node<'a>>,
}

/// Token counts summed over the model's records on the path.
#[derive(Default)]
pub(super) struct Usage {
    tokens: [u64; 5],
    any: bool,
    /// Thought signatures (opaque replay tokens on parts), not kept.
    signatures: u64,
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
    }

    /// The totals as a node, with the thought signatures not kept; nothing when no record
    /// had usage or signatures.
    pub(super) fn node<'a>(&self) -> Option<Node<'a>> {
        if !self.any && self.signatures == 0 {
            return None;
        }
        let mut o: Vec<(Cow<'a, str>, Node<'a>)> = Vec::new();
        if self.any {
            o.extend(
                USAGE_KEYS
                    .iter()
                    .zip(self.tokens)
                    .map(|(k, n)| (Cow::Borrowed(*k), Node::from(n))),
            );
        }
        if self.signatures > 0 {
            o.push((
                Cow::Borrowed("thought_signatures"),
                Node::from(self.signatures),
            ));
        }
        Some(Node::Object(o))
    }
}

fn num<'a>(n: usize) -> Node<'a> {
    Node::from(n as u64)
}

/// The steps of a path, and the lists `details.qwen_code` keeps about them.
pub(super) struct Built<'a> {
    /// The steps, the calls waiting, `unanswered_calls` and `unmapped`.
    pub calls: CallSteps<'a>,
    /// User, model and result records on the path that became steps.
    pub kept_messages: u64,
    envelope: Node<'a>,
    pub lists: Lists<'a>,
    pub usage: Usage,
}

impl<'a> Built<'a> {
    pub(super) fn new(left: LeftOut, envelope: &Node<'a>) -> Built<'a> {
        Built {
            calls: CallSteps::new(left, NO_RESULT),
            kept_messages: 0,
            envelope: envelope.clone(),
            lists: Lists::default(),
            usage: Usage::default(),
        }
    }

    /// Reads one record of the path.
    pub(super) fn record(&mut self, r: &Record<'_, 'a>) {
        let (line, e) = (r.line, r.entry);
        let start = self.calls.content.len();
        let kind = e["type"].as_str();
        match kind {
            Some("user" | "assistant" | "tool_result") => {
                if kind == Some("assistant") {
                    self.usage.add(&e["usageMetadata"]);
                    let model = &e["model"];
                    if !model.is_null() && !self.lists.models.contains(model) {
                        self.lists.models.push(model.clone());
                    }
                }
                self.message(line, &e["message"], kind == Some("tool_result"), e);
                if self.calls.content.len() > start {
                    self.kept_messages += 1;
                }
            }
            Some("system") => {
                if e["subtype"].as_str() == Some("chat_compression") {
                    self.compaction(line, e);
                } else if e["message"].is_object() {
                    // A record the model saw (a notification turn): its message is read.
                    self.message(line, &e["message"], false, e);
                } else {
                    self.calls.left.lines += 1;
                }
            }
            _ => {
                let reason = match kind {
                    Some(k) => format!("a record of type {k:?} is not mapped"),
                    None => "a record without a string type".to_owned(),
                };
                self.calls.unmapped(line, "/type".into(), reason, e, false);
                return;
            }
        }
        self.note(line, e, start, r.copies);
    }

    /// The note of a record in `records`: where it is, the steps made from it, and the fields
    /// the steps do not hold (an envelope field only where it differs from `envelope`).
    fn note(&mut self, line: u64, e: &Node<'a>, start: usize, copies: &[(u64, &Node<'a>)]) {
        let mut v = vec![
            (Cow::Borrowed("line"), Node::from(line)),
            (Cow::Borrowed("uuid"), e["uuid"].clone()),
            (Cow::Borrowed("parent"), e["parentUuid"].clone()),
            (Cow::Borrowed("type"), e["type"].clone()),
        ];
        for key in ["subtype", "timestamp"] {
            if let Some(value) = e.get(key) {
                v.push((Cow::Borrowed(key), value.clone()));
            }
        }
        v.push((
            Cow::Borrowed("steps"),
            Node::Array((start..self.calls.content.len()).map(num).collect()),
        ));
        let fields: Vec<(Cow<'a, str>, Node<'a>)> = e
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, v)| !MAPPED.contains(&k.as_ref()) && self.envelope.get(k) != Some(v))
            .cloned()
            .collect();
        if !fields.is_empty() {
            v.push((Cow::Borrowed("fields"), Node::Object(fields)));
        }
        let message = &e["message"];
        let extra: Vec<(Cow<'a, str>, Node<'a>)> = message
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !matches!(k.as_ref(), "role" | "parts"))
            .cloned()
            .collect();
        if !extra.is_empty() {
            v.push((Cow::Borrowed("message"), Node::Object(extra)));
        }
        if e["subtype"].as_str() != Some("chat_compression") {
            if let Some(payload) = e.get("systemPayload") {
                v.push((Cow::Borrowed("payload"), payload.clone()));
            }
        }
        if !copies.is_empty() {
            // The later records of the uuid, merged into this one: their own fields.
            let notes = copies.iter().map(|(l, c)| {
                let mut n = vec![(Cow::Borrowed("line"), Node::from(*l))];
                n.extend(
                    c.as_object()
                        .into_iter()
                        .flatten()
                        .filter(|(k, v)| {
                            !matches!(k.as_ref(), "uuid" | "message")
                                && self.envelope.get(k) != Some(v)
                        })
                        .cloned(),
                );
                Node::Object(n)
            });
            v.push((Cow::Borrowed("merged"), Node::Array(notes.collect())));
        }
        self.lists.records.push(Node::Object(v));
    }

    /// The parts of a message, by its role: the model's are its text and calls, anyone
    /// else's observations (results, when `results` or when they are `functionResponse`s).
    fn message(&mut self, line: u64, m: &Node<'a>, results: bool, record: &Node<'a>) {
        let parts = match &m["parts"] {
            Node::Array(parts) => parts.as_slice(),
            Node::Null if m.is_null() => return,
            other => {
                self.calls.unmapped(
                    line,
                    "/message/parts".into(),
                    "parts is not a list".into(),
                    other,
                    false,
                );
                return;
            }
        };
        if m["role"].as_str() == Some("model") {
            self.model(line, parts);
        } else if results {
            self.results(line, parts, record);
        } else {
            self.user(line, parts, record);
        }
    }

    /// A user message: its texts (joined by newlines) and images, seen from the user; a
    /// `functionResponse` among them answers its call.
    fn user(&mut self, line: u64, parts: &[Node<'a>], record: &Node<'a>) {
        let mut texts: Vec<String> = Vec::new();
        let flush = |b: &mut Built<'a>, t: &mut Vec<String>| {
            if !t.is_empty() {
                b.calls.push(Step::user_text(t.join("\n")));
                t.clear();
            }
        };
        for (k, p) in parts.iter().enumerate() {
            if p.get("thoughtSignature").is_some() {
                self.usage.signatures += 1;
            }
            if let Some(t) = p["text"].as_str() {
                texts.push(t.to_owned());
            } else if let Some(uri) = image_uri(p) {
                flush(self, &mut texts);
                self.calls.push(Step::image(uri, Source::User));
            } else if p.get("functionResponse").is_some() {
                flush(self, &mut texts);
                self.results(line, std::slice::from_ref(p), record);
            } else {
                self.calls.unmapped(
                    line,
                    format!("/message/parts/{k}"),
                    "a part of a user message that is neither text, an image nor a function response".into(),
                    p,
                    true,
                );
            }
        }
        flush(self, &mut texts);
    }

    /// A model message: thought parts become the reasoning of the text or call after them,
    /// a text right before a call its description; its calls wait for their results.
    fn model(&mut self, line: u64, parts: &[Node<'a>]) {
        self.calls.close_calls();
        let mut thought: Option<(String, usize)> = None;
        let mut text: Option<String> = None;
        for (k, p) in parts.iter().enumerate() {
            if p.get("thoughtSignature").is_some() {
                self.usage.signatures += 1;
            }
            if let Some(t) = p["text"].as_str() {
                // Parts of one message are read as the model wrote them: stream chunks
                // following each other.
                let slot = if p["thought"].as_bool() == Some(true) {
                    &mut thought
                } else {
                    text.get_or_insert_with(String::new).push_str(t);
                    continue;
                };
                match slot {
                    Some((s, _)) => s.push_str(t),
                    None => *slot = Some((t.to_owned(), k)),
                }
            } else if let Some(call) = p.get("functionCall") {
                let mut step = call_action(call);
                // The text before a call describes it, unless the call carries a description
                // of its own (a shell command's): then the text is a message of its own.
                let description = match &step {
                    Step::CodeAction(c) if c.description.is_some() => {
                        if let Some(t) = text.take().filter(|t| !t.trim().is_empty()) {
                            self.calls.content.push(Step::message(t, None));
                        }
                        c.description.clone()
                    }
                    _ => text.take().filter(|t| !t.trim().is_empty()),
                };
                step.set_thought(description, thought.take().map(|t| t.0));
                let native = call["id"].as_str().filter(|s| !s.is_empty());
                let id = self
                    .calls
                    .link_id(native, || format!("qwen-call:{line}:{k}"));
                let name = call["name"].as_str().unwrap_or("tool").to_owned();
                self.calls.call(step, id, native.map(str::to_owned), name);
            } else {
                self.calls.unmapped(
                    line,
                    format!("/message/parts/{k}"),
                    "a part of a model message that is neither text nor a function call".into(),
                    p,
                    true,
                );
            }
        }
        match (text.filter(|t| !t.trim().is_empty()), thought) {
            (Some(t), thought) => {
                let mut step = Step::message(t, None);
                step.set_thought(None, thought.map(|t| t.0));
                self.calls.content.push(step);
            }
            (None, Some((t, k))) => {
                let value = Node::object([("text", Node::from(t)), ("thought", Node::Bool(true))]);
                let reason = "a thought with no text or call after it in its message".to_owned();
                self.calls
                    .unmapped(line, format!("/message/parts/{k}"), reason, &value, true);
            }
            (None, None) => {}
        }
    }

    /// The parts of a `tool_result` record: each `functionResponse` is the result of the call
    /// with its id (the record's `toolCallResult.callId` when it has none), with the texts
    /// after it; images after it follow as image observations.
    fn results(&mut self, line: u64, parts: &[Node<'a>], record: &Node<'a>) {
        let outcome = &record["toolCallResult"];
        let mut groups: Vec<(Option<&Node<'a>>, Vec<&Node<'a>>, Vec<String>)> = Vec::new();
        for (k, p) in parts.iter().enumerate() {
            if p.get("functionResponse").is_some() {
                groups.push((Some(p), vec![p], Vec::new()));
                continue;
            }
            if groups.is_empty() {
                groups.push((None, Vec::new(), Vec::new()));
            }
            let Some(group) = groups.last_mut() else {
                continue;
            };
            if p["text"].as_str().is_some() {
                group.1.push(p);
            } else if let Some(uri) = image_uri(p) {
                group.2.push(uri);
            } else {
                self.calls.unmapped(
                    line,
                    format!("/message/parts/{k}"),
                    "a part of a tool result that is neither a function response, text nor an image".into(),
                    p,
                    true,
                );
            }
        }
        for (response, texts, images) in groups {
            let text_parts = Node::Array(texts.into_iter().cloned().collect());
            let text = result_text(&text_parts);
            let Some(response) = response else {
                // Texts before any response: the user's.
                if !text.is_empty() {
                    self.calls.push(Step::user_text(text));
                }
                for uri in images {
                    self.calls.push(Step::image(uri, Source::User));
                }
                continue;
            };
            let fr = &response["functionResponse"];
            let native = fr["id"]
                .as_str()
                .filter(|s| !s.is_empty())
                .or_else(|| outcome["callId"].as_str());
            let name = fr["name"].as_str().map(str::to_owned);
            let waiting = match native {
                Some(n) => self.calls.answer(|p| p.native.as_deref() == Some(n)),
                None => self.calls.answer(|p| Some(&p.name) == name.as_ref()),
            };
            let step = Step::environment_text(name, text);
            let at = self.calls.content.len();
            match waiting {
                Some(p) => {
                    self.calls.content.push(step.with_tool_call_id(p.id));
                }
                None => {
                    let reason = if native.is_some_and(|n| self.calls.used(n)) {
                        "its call was answered already"
                    } else {
                        "no call before it in the conversation has this id"
                    };
                    self.calls.push(step);
                    self.lists.unlinked_results.push(Node::object([
                        ("step", num(self.calls.content.len() - 1)),
                        ("line", Node::from(line)),
                        (
                            "id",
                            native.map_or(Node::Null, |n| Node::from(n.to_owned())),
                        ),
                        ("reason", Node::from(reason)),
                    ]));
                }
            }
            for uri in images {
                self.calls
                    .content
                    .push(Step::image(uri, Source::Environment));
            }
            let failed = outcome["status"].as_str() == Some("error")
                || (fr["response"].get("error").is_some()
                    && fr["response"].get("output").is_none());
            if failed {
                let mut note = vec![
                    (Cow::Borrowed("step"), num(at)),
                    (
                        Cow::Borrowed("id"),
                        native.map_or(Node::Null, |n| Node::from(n.to_owned())),
                    ),
                ];
                for (key, from) in [
                    ("status", "status"),
                    ("error_type", "errorType"),
                    ("error", "error"),
                ] {
                    if let Some(v) = outcome.get(from) {
                        note.push((Cow::Borrowed(key), v.clone()));
                    }
                }
                self.lists.error_results.push(Node::Object(note));
            }
        }
    }

    /// A chat compression: the summary the conversation goes on from (the first content of
    /// the compressed history, a user text) becomes a step named `compaction_summary`; the
    /// rest of that history (the model's acknowledgement and the messages kept, copies of
    /// earlier ones) is counted as blocks no step holds.
    fn compaction(&mut self, line: u64, e: &Node<'a>) {
        let payload = &e["systemPayload"];
        let history = payload["compressedHistory"].as_array().unwrap_or(&[]);
        let summary = history
            .first()
            .filter(|c| c["role"].as_str() == Some("user"))
            .map(|c| {
                let texts: Vec<&str> = c["parts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p["text"].as_str())
                    .collect();
                texts.join("\n")
            });
        let summary = summary.filter(|s| !s.trim().is_empty());
        let kept = history.len() - usize::from(summary.is_some());
        self.calls.left.blocks += kept as u64;
        let step = match summary {
            Some(s) => {
                self.calls
                    .push(Step::environment_text(Some("compaction_summary".into()), s));
                self.calls.content.len() - 1
            }
            None => self.calls.content.len(),
        };
        self.lists.compactions.push(Node::object([
            ("step", num(step)),
            ("line", Node::from(line)),
            ("uuid", e["uuid"].clone()),
            ("info", payload["info"].clone()),
            ("history_contents", num(history.len())),
        ]));
    }
}

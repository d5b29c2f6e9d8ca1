//! The steps of a context file, line by line, and what `details.kimi_cli` says about them.
//! Message lines are kosong `Message`s (`role`, `content` as a string or a list of parts
//! `text` / `think` / `image_url` / `audio_url` / `video_url`, `tool_calls`, `tool_call_id`,
//! `name`, `partial`); the pseudo-roles are Kimi's bookkeeping: `_system_prompt {content}`
//! (from 1.21), `_checkpoint {id}` and `_usage {token_count}`.
//!
//! A tool result (`role: "tool"`) is linked to the call of the same id. Its text keeps the
//! status block Kimi writes first (`<system>Command executed successfully.</system>`,
//! `<system>ERROR: …</system>` for a failure, listed in `error_results`); a result that only
//! has output has none.

use std::borrow::Cow;

use foldhash::{HashMap, HashMapExt};

use crate::convert::LeftOut;
use crate::formats::call_steps::CallSteps;
use crate::formats::chat::{call_step, parse_arguments, system_step, CodeTool};
use crate::formats::kit::node_fields_except;
use crate::json::Node;
use crate::model::{Source, Step};

use super::files::{AGENT_ID, TRANSCRIPT_SAVED};

/// Kimi's shell tools: a call with only its `command` is bash code (`Bash` up to 0.56,
/// `Shell` from 0.57; Windows' `CMD` is not bash and stays a call).
const CODE_TOOLS: &[CodeTool] = &[("Bash", "command", "bash"), ("Shell", "command", "bash")];

/// The keys of a message line that steps hold.
const MESSAGE_KEYS: &[&str] = &["role", "content", "tool_calls", "tool_call_id"];

/// The words of a result that names a subagent's transcript: a `ReadContext` result's, and an
/// `Agent` result's first line.
const SUBAGENT_MARKS: &[&str] = &[TRANSCRIPT_SAVED, AGENT_ID];

/// The steps of a file, and the lists `details.kimi_cli` keeps about them.
pub(super) struct Built<'a> {
    /// The steps, the calls waiting (by their id in the file, or their link id when they
    /// have none), `unanswered_calls` and `unmapped`.
    pub calls: CallSteps<'a>,
    /// Message lines (not pseudo-roles), and those that became steps.
    pub messages_in: u64,
    pub messages_kept: u64,
    /// The name of each call, by its id in the trajectory.
    pub call_names: HashMap<String, String>,
    pub lists: Lists<'a>,
    /// Thinking signatures (`encrypted`) not kept.
    pub signatures: u64,
    /// Text parts holding only white space, not kept.
    pub blank_texts: u64,
    /// The first system prompt's line.
    pub system_prompt_line: Option<u64>,
}

/// The lists of `details.kimi_cli`, each written only when not empty.
#[derive(Default)]
pub(super) struct Lists<'a> {
    pub checkpoints: Vec<Node<'a>>,
    pub usage: Vec<Node<'a>>,
    pub error_results: Vec<Node<'a>>,
    /// `(step, tool call id in the file, text)` of each result that may name a subagent
    /// ([`SUBAGENT_MARKS`]), for the subagent links.
    pub results: Vec<(usize, String, String)>,
    pub unlinked_results: Vec<Node<'a>>,
    pub extra_fields: Vec<Node<'a>>,
}

fn num<'a>(n: usize) -> Node<'a> {
    Node::from(n as u64)
}

/// The text of a part list's or string content's text parts, and the images (data URIs or
/// URLs) of its `image_url` parts; other parts are returned with their index.
struct Parts<'n, 'a> {
    texts: Vec<&'n str>,
    images: Vec<String>,
    other: Vec<(usize, &'n Node<'a>)>,
    blank: u64,
}

fn parts<'n, 'a>(content: &'n Node<'a>) -> Option<Parts<'n, 'a>> {
    let mut p = Parts {
        texts: Vec::new(),
        images: Vec::new(),
        other: Vec::new(),
        blank: 0,
    };
    match content {
        Node::String(s) => p.texts.push(s),
        Node::Array(items) => {
            for (k, b) in items.iter().enumerate() {
                match (b["type"].as_str(), b["text"].as_str()) {
                    (Some("text"), Some(t)) if t.trim().is_empty() => p.blank += 1,
                    (Some("text"), Some(t)) => p.texts.push(t),
                    (Some("image_url"), _) if b["image_url"]["url"].as_str().is_some() => {
                        p.images
                            .push(b["image_url"]["url"].as_str().unwrap_or_default().into());
                    }
                    _ => p.other.push((k, b)),
                }
            }
        }
        Node::Null => {}
        _ => return None,
    }
    Some(p)
}

/// True when `text` is one of the notes Kimi itself puts in a user message: a
/// `<system>…</system>` block (`CHECKPOINT <n>`, a tool's non-text output announced) or a
/// `<system-reminder>`.
fn is_kimi_note(text: &str) -> bool {
    let t = text.trim();
    (t.starts_with("<system>") && t.ends_with("</system>"))
        || (t.starts_with("<system-reminder>") && t.ends_with("</system-reminder>"))
}

impl<'a> Built<'a> {
    pub(super) fn new(left: LeftOut) -> Built<'a> {
        Built {
            // Kimi answers no call for the model: a call no result answers keeps no link.
            calls: CallSteps::new(left, ""),
            messages_in: 0,
            messages_kept: 0,
            call_names: HashMap::new(),
            lists: Lists::default(),
            signatures: 0,
            blank_texts: 0,
            system_prompt_line: None,
        }
    }

    /// Keeps the parts no step holds of a content at `pointer`.
    fn other_parts(&mut self, line: u64, pointer: &str, other: &[(usize, &Node<'a>)]) {
        for &(k, b) in other {
            let reason = match b["type"].as_str() {
                Some(t) => format!("a {t:?} part is not mapped"),
                None => "a part without a string type is not mapped".to_owned(),
            };
            self.calls
                .unmapped(line, format!("{pointer}/{k}"), reason, b, true);
        }
    }

    /// Reads one line of the file.
    pub(super) fn line(&mut self, line: u64, entry: &Node<'a>) {
        let Some(role) = entry["role"].as_str() else {
            self.calls.left.wrong_type(
                line,
                "/role",
                "a line without a string role is neither a message nor Kimi's bookkeeping",
            );
            return;
        };
        let at = self.calls.content.len();
        match role {
            "_system_prompt" => match entry["content"].as_str() {
                Some(prompt) => {
                    self.system_prompt_line.get_or_insert(line);
                    self.calls.content.push(system_step(prompt.to_owned()));
                }
                None => self.calls.left.wrong_type(
                    line,
                    "/content",
                    "a system prompt that is not a string",
                ),
            },
            "_checkpoint" => match entry["id"].as_u64() {
                Some(id) => self.lists.checkpoints.push(Node::object([
                    ("id", Node::from(id)),
                    ("line", Node::from(line)),
                    ("step", num(at)),
                ])),
                None => self.calls.left.wrong_type(
                    line,
                    "/id",
                    "a checkpoint whose id is not a whole number",
                ),
            },
            "_usage" => match entry["token_count"].as_u64() {
                Some(n) => self.lists.usage.push(Node::object([
                    ("token_count", Node::from(n)),
                    ("line", Node::from(line)),
                    ("step", num(at)),
                ])),
                None => self.calls.left.wrong_type(
                    line,
                    "/token_count",
                    "a usage line whose token_count is not a whole number",
                ),
            },
            "system" | "user" | "assistant" | "tool" => {
                self.messages_in += 1;
                self.extra_fields(line, entry);
                match role {
                    "system" => self.observe(line, entry, Source::Environment, Some("system")),
                    "user" => self.observe(line, entry, Source::User, None),
                    "assistant" => self.assistant(line, entry),
                    _ => self.tool_result(line, entry),
                }
                if self.calls.content.len() > at {
                    self.messages_kept += 1;
                }
            }
            other => {
                let reason = format!("a line of role {other:?} is not mapped");
                self.calls
                    .unmapped(line, "/role".into(), reason, entry, false);
            }
        }
    }

    /// Keeps the fields of a message that no step holds (`name`, `partial`, ...).
    fn extra_fields(&mut self, line: u64, entry: &Node<'a>) {
        let extra = node_fields_except(entry, MESSAGE_KEYS);
        if !extra.is_empty() {
            self.lists.extra_fields.push(Node::object([
                ("line", Node::from(line)),
                ("fields", Node::Object(extra)),
            ]));
        }
    }

    /// A user or system message: its texts and images, seen from `source`. A user message
    /// whose every text is a note of Kimi's own (`<system>CHECKPOINT 3</system>`, a
    /// `<system-reminder>`) is from the environment, named `system`.
    fn observe(&mut self, line: u64, entry: &Node<'a>, source: Source, name: Option<&str>) {
        let Some(p) = parts(&entry["content"]) else {
            let reason = "content is neither a string nor a list of parts".to_owned();
            self.calls
                .unmapped(line, "/content".into(), reason, &entry["content"], false);
            return;
        };
        self.blank_texts += p.blank;
        let kimi = source == Source::User
            && !p.texts.is_empty()
            && p.texts.iter().all(|t| is_kimi_note(t));
        let (source, name) = if kimi {
            (Source::Environment, Some("system"))
        } else {
            (source, name)
        };
        for t in &p.texts {
            self.calls.content.push(match source {
                Source::User => Step::user_text(*t),
                _ => Step::environment_text(name.map(str::to_owned), *t),
            });
        }
        for uri in p.images {
            self.calls.content.push(Step::image(uri, source));
        }
        self.other_parts(line, "/content", &p.other);
    }

    /// An assistant message: a `think` part is the reasoning of the text or call after it, a
    /// text right before a call its description; its calls wait for their results.
    fn assistant(&mut self, line: u64, entry: &Node<'a>) {
        let mut thought: Option<(String, String)> = None;
        let mut text: Option<String> = None;
        let blocks: Vec<(String, Cow<'_, Node<'a>>)> = match &entry["content"] {
            Node::String(s) if s.trim().is_empty() => {
                self.blank_texts += 1;
                Vec::new()
            }
            Node::String(s) => vec![(
                "/content".into(),
                Cow::Owned(Node::object([
                    ("type", Node::from("text")),
                    ("text", Node::String(s.clone())),
                ])),
            )],
            Node::Array(b) => b
                .iter()
                .enumerate()
                .map(|(k, b)| (format!("/content/{k}"), Cow::Borrowed(b)))
                .collect(),
            Node::Null => Vec::new(),
            other => {
                let reason = "content is neither a string nor a list of parts".to_owned();
                self.calls
                    .unmapped(line, "/content".into(), reason, other, false);
                Vec::new()
            }
        };
        for (pointer, b) in blocks {
            match (b["type"].as_str(), b["think"].as_str(), b["text"].as_str()) {
                (Some("think"), Some(t), _) => {
                    if b["encrypted"].as_str().is_some() {
                        self.signatures += 1;
                    }
                    if t.trim().is_empty() {
                        continue;
                    }
                    thought = Some(match thought.take() {
                        Some((prev, _)) => (format!("{prev}\n\n{t}"), pointer),
                        None => (t.to_owned(), pointer),
                    });
                }
                (Some("text"), _, Some(t)) => {
                    if t.trim().is_empty() {
                        self.blank_texts += 1;
                        continue;
                    }
                    if let Some(prev) = text.replace(t.to_owned()) {
                        let mut step = Step::message(prev, None);
                        step.set_thought(None, thought.take().map(|t| t.0));
                        self.calls.content.push(step);
                    }
                }
                (kind, _, _) => {
                    let reason = match kind {
                        Some(k) => format!("a {k:?} part of an assistant message is not mapped"),
                        None => "a part without a string type is not mapped".to_owned(),
                    };
                    self.calls.unmapped(line, pointer, reason, &b, true);
                }
            }
        }
        let calls = match &entry["tool_calls"] {
            Node::Array(calls) => calls.as_slice(),
            Node::Null => &[],
            other => {
                let reason = "tool_calls is not a list".to_owned();
                self.calls
                    .unmapped(line, "/tool_calls".into(), reason, other, false);
                &[]
            }
        };
        for (k, call) in calls.iter().enumerate() {
            let pointer = format!("/tool_calls/{k}");
            let Some(name) = call["function"]["name"].as_str() else {
                let reason = "a tool call without a function name".to_owned();
                self.calls.unmapped(line, pointer, reason, call, false);
                continue;
            };
            let arguments = &call["function"]["arguments"];
            let kwargs = match parse_arguments(arguments) {
                Ok(k) => k,
                Err(_) if arguments.is_null() => Default::default(),
                Err(why) => {
                    self.calls.unmapped(
                        line,
                        format!("{pointer}/function/arguments"),
                        why,
                        arguments,
                        false,
                    );
                    Default::default()
                }
            };
            let mut step = call_step(name, kwargs, CODE_TOOLS);
            step.set_thought(text.take(), thought.take().map(|t| t.0));
            let native = call["id"].as_str().unwrap_or_default();
            let id = (self.calls).link_id(Some(native).filter(|n| !n.is_empty()), || {
                format!("kimi-call:{line}:{k}")
            });
            self.call_names.insert(id.clone(), name.to_owned());
            let extras = node_fields_except(call, &["type", "id", "function"]);
            if !extras.is_empty() {
                self.lists.extra_fields.push(Node::object([
                    ("line", Node::from(line)),
                    ("pointer", Node::from(pointer)),
                    ("fields", Node::Object(extras)),
                ]));
            }
            let key = if native.is_empty() {
                id.clone()
            } else {
                native.to_owned()
            };
            // A later call of the same id is the one a result of that id answers.
            self.calls.answer(|p| p.native.as_deref() == Some(&key));
            self.calls.call(step, id, Some(key), name.to_owned());
        }
        if let Some(t) = text {
            let mut step = Step::message(t, None);
            step.set_thought(None, thought.take().map(|t| t.0));
            self.calls.content.push(step);
        }
        if let Some((t, pointer)) = thought {
            let reason = "thinking with no text or call after it in its message".to_owned();
            let value = Node::object([("type", Node::from("think")), ("think", Node::from(t))]);
            self.calls.unmapped(line, pointer, reason, &value, true);
        }
    }

    /// A tool result: its texts (the status block first) as one observation linked to the
    /// call it answers, then its images; unlinked, with why, when no call waits for it.
    fn tool_result(&mut self, line: u64, entry: &Node<'a>) {
        let native = entry["tool_call_id"].as_str().unwrap_or_default();
        let Some(p) = parts(&entry["content"]) else {
            let reason = "content is neither a string nor a list of parts".to_owned();
            self.calls
                .unmapped(line, "/content".into(), reason, &entry["content"], false);
            return;
        };
        self.blank_texts += p.blank;
        let text = p.texts.join("\n");
        let naming = SUBAGENT_MARKS
            .iter()
            .any(|m| text.contains(m))
            .then(|| text.clone());
        let waiting = self.calls.answer(|p| p.native.as_deref() == Some(native));
        let name = waiting.as_ref().map(|w| w.name.clone());
        let mut step = Step::environment_text(name, text);
        let at = self.calls.content.len();
        match &waiting {
            Some(w) => step = step.with_tool_call_id(w.id.clone()),
            None => {
                let reason = if self.calls.used(native) {
                    "its call was answered already"
                } else {
                    "no call before it in the file has this id"
                };
                self.lists.unlinked_results.push(Node::object([
                    ("step", num(at)),
                    ("line", Node::from(line)),
                    ("tool_call_id", Node::from(native.to_owned())),
                    ("reason", Node::from(reason)),
                ]));
            }
        }
        self.calls.content.push(step);
        for uri in p.images {
            self.calls
                .content
                .push(Step::image(uri, Source::Environment));
        }
        self.other_parts(line, "/content", &p.other);
        let first = p.texts.first().copied().unwrap_or_default();
        if first.starts_with("<system>ERROR") {
            let status = first.split("</system>").next().unwrap_or(first);
            self.lists.error_results.push(Node::object([
                ("step", num(at)),
                ("tool_call_id", Node::from(native.to_owned())),
                (
                    "status",
                    Node::from(status.trim_start_matches("<system>").to_owned()),
                ),
            ]));
        }
        if let Some(text) = naming {
            self.lists.results.push((at, native.to_owned(), text));
        }
    }

    /// Ends the file: calls no result answered keep no link id, and are listed.
    pub(super) fn finish(&mut self) {
        for p in std::mem::take(&mut self.calls.pending) {
            *self.calls.content[p.step].tool_call_id_mut() = None;
            self.calls.unanswered_calls.push(Node::object([
                ("step", num(p.step)),
                ("tool_call_id", Node::from(p.id)),
            ]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kimi_notes_are_told_from_user_text() {
        assert!(is_kimi_note("<system>CHECKPOINT 3</system>"));
        assert!(is_kimi_note(
            "<system-reminder>\nplan mode\n</system-reminder>"
        ));
        assert!(!is_kimi_note("<system>x</system> and more"));
        assert!(!is_kimi_note("fix the bug"));
    }
}

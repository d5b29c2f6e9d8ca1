//! mini-swe-agent runs: one `.traj.json` file per run, one trajectory each. Three shapes:
//!
//! - trajectory format `mini-swe-agent-1` (mini-swe-agent 1.x, `run/utils/save.py`):
//!   `{info, messages, trajectory_format}`, every message `{role, content}`; the model's bash
//!   command is the one fenced block of its text (```` ```bash ````, or the config's
//!   `action_regex`), its output the next `user` message;
//! - trajectory format `mini-swe-agent-1.1` (mini-swe-agent 2.x, `DefaultAgent.serialize`): the
//!   model's own messages plus an `extra` object: OpenAI-style `tool_calls` answered by `tool`
//!   messages, text actions (`extra.actions`) answered by `user` messages, or OpenAI Responses
//!   API items (`{object: response, output}` and `function_call_output`); the run ends with an
//!   `exit` message whose `extra` holds `exit_status` and `submission`;
//! - a bare list of messages (older files and tests), read as `{"messages": [...]}`
//!   ([`open_chat`]).
//!
//! The mapping is in docs/formats/mini-swe-agent.md.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::{json, Value};

use crate::convert::{ConvertOptions, Converter, FormatOptions, LeftOut, Partial, PartialSink};
use crate::formats::bundle::open_chat;
use crate::formats::chat::{
    call_step, parse_arguments, record_id, system_step, unlink_unanswered_calls, CodeTool,
};
use crate::formats::kit::{node_fields_except, source_details};
use crate::formats::Format;
use crate::ingest::{without_compression, RawRecord, RecordSource};
use crate::json::Node;
use crate::model::{JsonObject, Source, Step, Trajectory};
use crate::validate::check::check_raw_node;
use crate::validate::schemas::RawSchema;
use crate::validate::Diagnostic;

/// The JSON Schema of raw `mini-swe-agent` records (`validate --schema mini-swe-agent`).
pub static SCHEMA: RawSchema = RawSchema::new(
    "mini-swe-agent",
    "instance_id",
    &[(
        "https://trajkit.invalid/schemas/raw/mini-swe-agent.schema.json",
        include_str!("../../../schemas/raw/mini-swe-agent.schema.json"),
    )],
    &[],
);

/// Reads mini-swe-agent runs.
pub struct MiniSweAgent;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &MiniSweAgent,
    side: None,
};

/// mini-swe-agent's one tool: `bash` with a `command` is shell code.
const BASH: &[CodeTool] = &[("bash", "command", "bash")];

/// The fenced blocks mini-swe-agent runs when the run's config names no `action_regex`:
/// ```` ```bash ```` (1.x) and ```` ```mswea_bash_command ```` (2.x text-based models).
const DEFAULT_ACTION_REGEX: &str = r"(?s)```(?:bash|mswea_bash_command)\s*\n(.*?)\n```";

/// The prefix of the ids given to actions written as text, which carry none: `mswea-<message
/// index>-<action index>`.
const TEXT_ACTION_ID: &str = "mswea-";

impl Converter for MiniSweAgent {
    fn name(&self) -> &'static str {
        "mini-swe-agent"
    }

    fn raw_schemas(&self) -> &'static [&'static RawSchema] {
        static SCHEMAS: [&RawSchema; 1] = [&SCHEMA];
        &SCHEMAS
    }

    fn description(&self) -> &'static str {
        "mini-swe-agent runs (.traj.json): trajectory formats 1 (bash blocks in text) and 1.1 (tool calls, exit), or a bare list of messages"
    }

    /// Its own keys: a `trajectory_format` naming mini-swe-agent, or `info.mini_version`
    /// beside `messages`. A bare list of messages has none: [`Converter::sniff_chat`] looks
    /// for mini-swe-agent's marks in it.
    fn sniff(&self, first: &Value) -> bool {
        first["trajectory_format"]
            .as_str()
            .is_some_and(|f| f.starts_with("mini-swe-agent"))
            || (first["info"]["mini_version"].is_string() && first["messages"].is_array())
    }

    /// A chat with mini-swe-agent's own marks: an assistant message fencing its command as
    /// ```` ```mswea_bash_command ```` (2.x), or a user message that is an observation of its
    /// default template (`<returncode>N</returncode>` first) right after an assistant message.
    fn sniff_chat(&self, messages: &[Value]) -> bool {
        let text = |m: &Value| content_of(&Node::from_value(&m["content"])).0;
        messages
            .iter()
            .enumerate()
            .any(|(i, m)| match m["role"].as_str() {
                Some("assistant") => text(m).contains("```mswea_bash_command"),
                Some("user") => {
                    i > 0
                        && messages[i - 1]["role"] == "assistant"
                        && text(m).trim_start().starts_with("<returncode>")
                }
                _ => false,
            })
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        Some(open_chat(path, opts.run.max_record_bytes))
    }

    fn each_partial(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
        to: &mut PartialSink<'_>,
    ) -> Option<Result<(), Vec<Diagnostic>>> {
        let mut slow = None;
        let run = check_raw_node(record, &SCHEMA, true, &mut slow);
        Some(run.and_then(|r| to(to_partial(&r, record)?)))
    }
}

/// The trajectory of a run the raw schema accepted.
fn to_partial<'a>(
    value: &'a Node<'a>,
    record: &'a RawRecord,
) -> Result<Partial<'a>, Vec<Diagnostic>> {
    {
        let id = trajectory_id(value, record);
        let fail = |pointer: String, rule: &str, message: String| {
            vec![Diagnostic::error(
                &record.provenance,
                Some(&id),
                pointer,
                rule,
                message,
            )]
        };
        let messages = value["messages"].as_array().unwrap_or(&[]);
        let mut run = Run::new(
            action_regex(&value["info"]["config"]),
            record.provenance.line,
        );
        run.exit_status_known = exit_status(value).is_some();
        for (i, m) in messages.iter().enumerate() {
            run.message(i, m, i + 1 == messages.len())
                .map_err(|(pointer, message)| fail(pointer, "mini-swe-agent-structure", message))?;
        }
        if run.content.is_empty() {
            let why = if messages.is_empty() {
                "the run has no messages".to_owned()
            } else {
                format!(
                    "none of the run's {} messages maps to a step (see docs/formats/mini-swe-agent.md)",
                    messages.len()
                )
            };
            return Err(fail("/messages".into(), "empty-trajectory", why));
        }
        Ok(run.into_partial(value, record, id))
    }
}

/// The trajectory id: `instance_id`, else the file's name without `.traj.json` (mini-swe-agent
/// names a run's file after its instance), else `{file name}#{index}`.
fn trajectory_id(v: &Node<'_>, record: &RawRecord) -> String {
    if let Some(id) = v["instance_id"].as_str().filter(|s| !s.is_empty()) {
        return id.to_owned();
    }
    let file = record.provenance.file.as_ref();
    let name = without_compression(file.rsplit('/').next().unwrap_or(file));
    let stem = name
        .strip_suffix(".traj.json")
        .or_else(|| name.strip_suffix(".json"));
    match stem {
        Some(stem) if file != "-" && record.provenance.index == 0 && !stem.is_empty() => {
            stem.to_owned()
        }
        _ => record_id(&v["id"], record),
    }
}

/// The run's exit status: `info.exit_status`, else the `exit` message's.
fn exit_status<'n>(v: &'n Node<'_>) -> Option<&'n str> {
    let from_exit = || {
        v["messages"]
            .as_array()
            .and_then(|m| m.last())
            .filter(|m| m["role"].as_str() == Some("exit"))
            .and_then(|m| m["extra"]["exit_status"].as_str())
    };
    v["info"]["exit_status"]
        .as_str()
        .filter(|s| !s.is_empty())
        .or_else(from_exit)
        .filter(|s| !s.is_empty())
}

/// `details.outcome` of an exit status. A submission is not a verdict (only an evaluation
/// says whether it resolves the task), so `Submitted` is `unknown`; the step, cost and
/// wall-time limits (`LimitsExceeded`, `TimeExceeded`) are `timeout`; anything else (an
/// exception's class name, `RepeatedFormatError`, `UserInterruption`) is `unknown`.
fn outcome(status: &str) -> Value {
    let kind = match status {
        "LimitsExceeded" | "TimeExceeded" => "timeout",
        _ => "unknown",
    };
    json!({"status": kind, "native": {"exit_status": status}})
}

/// The regex of text actions: the config's `action_regex` (`model` in 2.x, `agent` in 1.x),
/// matched with `.` across lines as mini-swe-agent does, else [`DEFAULT_ACTION_REGEX`]; a
/// pattern this regex engine cannot compile, or without a group, falls back to the default.
fn action_regex(config: &Node<'_>) -> Regex {
    let configured = [
        &config["model"]["action_regex"],
        &config["agent"]["action_regex"],
    ]
    .into_iter()
    .find_map(Node::as_str)
    .and_then(|p| Regex::new(&format!("(?s){p}")).ok())
    .filter(|r| r.captures_len() > 1);
    configured.unwrap_or_else(|| {
        static DEFAULT: OnceLock<Regex> = OnceLock::new();
        DEFAULT
            .get_or_init(|| {
                Regex::new(DEFAULT_ACTION_REGEX).unwrap_or_else(|_| unreachable!("a valid pattern"))
            })
            .clone()
    })
}

/// The text of a message's content (a string, or the `text` of its parts joined by blank
/// lines) and the URLs of its image parts.
fn content_of(content: &Node<'_>) -> (String, Vec<String>) {
    match content {
        Node::String(s) => (s.as_ref().to_owned(), Vec::new()),
        Node::Array(parts) => {
            let text = parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n\n");
            let images = parts
                .iter()
                .filter_map(|p| p["image_url"]["url"].as_str().or(p["image_url"].as_str()))
                .map(str::to_owned)
                .collect();
            (text, images)
        }
        _ => (String::new(), Vec::new()),
    }
}

fn non_empty(text: &str) -> Option<String> {
    let t = text.trim();
    (!t.is_empty()).then(|| t.to_owned())
}

/// One tool call of a model output: name, arguments, the call's id, and the pointer of its
/// arguments.
struct Call<'a> {
    name: &'a str,
    arguments: &'a Node<'a>,
    id: Option<&'a str>,
    pointer: String,
}

/// What converting one run collects.
struct Run<'a> {
    regex: Regex,
    /// The run's line in its file.
    line: u64,
    content: Vec<Step>,
    /// Native call ids made so far, with the tool's name.
    calls: HashMap<String, String>,
    /// Ids of the text actions still waiting for their output, oldest first.
    pending: VecDeque<String>,
    /// The ids given to text actions.
    synthetic: HashSet<String>,
    /// A model output has been read (user messages before it are the task).
    assistant_seen: bool,
    /// The last message was a model output with no action (1.x: mini-swe-agent answers it
    /// with a format error).
    after_no_action: bool,
    /// The run has an exit status (a 1.x run's last user message that answers no action is
    /// its end, not a turn).
    exit_status_known: bool,
    /// Each message's keys no step holds: `{message, steps, fields}`.
    meta: Vec<Node<'a>>,
    /// Messages no step holds, whole: `{message, reason, value}`.
    unmapped: Vec<Node<'a>>,
    /// The message that ends the run (`exit`, or a 1.x run's last user message), with its
    /// index.
    exit: Option<(usize, Node<'a>)>,
    /// What no step holds, counted (on the run's line, at pointers in the run).
    left: LeftOut,
}

/// `{message, reason, value}` of a message no step holds.
fn unmapped_message<'a>(i: usize, reason: String, value: Node<'a>) -> Node<'a> {
    Node::object([
        ("message", Node::from(i as u64)),
        ("reason", Node::from(reason)),
        ("value", value),
    ])
}

impl<'a> Run<'a> {
    fn new(regex: Regex, line: u64) -> Run<'a> {
        Run {
            regex,
            line,
            content: Vec::new(),
            calls: HashMap::new(),
            pending: VecDeque::new(),
            synthetic: HashSet::new(),
            assistant_seen: false,
            after_no_action: false,
            exit_status_known: false,
            meta: Vec::new(),
            unmapped: Vec::new(),
            exit: None,
            left: LeftOut::new("details.mini_swe_agent"),
        }
    }

    /// Message `i`; `last` when it ends the list.
    fn message(&mut self, i: usize, m: &'a Node<'a>, last: bool) -> Result<(), (String, String)> {
        let at = format!("/messages/{i}");
        let chat_role = matches!(
            m["role"].as_str(),
            Some("system" | "developer" | "user" | "assistant" | "tool")
        );
        if chat_role && m.get("content").is_none() && m.get("tool_calls").is_none() {
            return Err((
                at,
                "the message has no `content` nor `tool_calls`: nothing to read".to_owned(),
            ));
        }
        let start = self.content.len();
        let no_action_before = std::mem::take(&mut self.after_no_action);
        if let Some(content) = m.get("content") {
            self.count_parts(content, m["role"].as_str() != Some("assistant"));
        }
        let mapped: &[&str] = match (m["role"].as_str(), m["object"].as_str(), m["type"].as_str()) {
            (Some("system" | "developer"), _, _) => {
                let (text, _) = content_of(&m["content"]);
                self.content.push(system_step(text));
                &["role", "content"]
            }
            (Some("user"), _, _) => {
                if !self.user(i, m, no_action_before, last) {
                    return Ok(());
                }
                &["role", "content"]
            }
            (Some("assistant"), _, _) => {
                let (text, _) = content_of(&m["content"]);
                if !matches!(m["tool_calls"], Node::Array(_) | Node::Null) {
                    let reason = "tool_calls is not a list of calls";
                    self.left
                        .wrong_type(self.line, &format!("{at}/tool_calls"), reason);
                }
                let reasoning = m["reasoning_content"]
                    .as_str()
                    .map(str::to_owned)
                    .or_else(|| thinking(&m["thinking_blocks"]));
                let calls: Vec<Call> = m["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .enumerate()
                    .map(|(k, c)| Call {
                        name: c["function"]["name"].as_str().unwrap_or_default(),
                        arguments: &c["function"]["arguments"],
                        id: c["id"].as_str(),
                        pointer: format!("{at}/tool_calls/{k}/function/arguments"),
                    })
                    .collect();
                self.act(i, m, text, reasoning, calls)?;
                &["role", "content", "tool_calls", "reasoning_content"]
            }
            (Some("tool"), _, _) => {
                let id = m["tool_call_id"].as_str().unwrap_or_default();
                let (text, images) = content_of(&m["content"]);
                self.result(id, text, images, &format!("{at}/tool_call_id"))?;
                &["role", "content", "tool_call_id"]
            }
            (Some("exit"), _, _) => {
                self.end(i, m);
                return Ok(());
            }
            (None, Some("response"), _) => {
                self.response(i, m, &at)?;
                &["object"]
            }
            (None, _, Some("function_call_output")) => {
                let id = m["call_id"].as_str().unwrap_or_default();
                let (text, images) = match &m["output"] {
                    Node::String(s) => (s.as_ref().to_owned(), Vec::new()),
                    other => content_of(other),
                };
                self.result(id, text, images, &format!("{at}/call_id"))?;
                &["type", "call_id", "output"]
            }
            (role, _, _) => {
                let reason = match role {
                    Some(r) => format!("a message of role {r:?} is not mapped"),
                    None => "a message without a role that is no Responses API item".to_owned(),
                };
                self.left.unmapped(self.line, &at, reason.as_str());
                self.unmapped.push(unmapped_message(i, reason, m.clone()));
                return Ok(());
            }
        };
        let fields = node_fields_except(m, mapped);
        if !fields.is_empty() {
            let steps = (start..self.content.len()).map(|k| Node::from(k as u64));
            self.meta.push(Node::object([
                ("message", Node::from(i as u64)),
                ("steps", Node::Array(steps.collect())),
                ("fields", Node::Object(fields)),
            ]));
        }
        Ok(())
    }

    /// A `user` message: the task (before the first model output), the output of the text
    /// action waiting for one, mini-swe-agent's reply to an output it could not run (named by
    /// its `extra.interrupt_type`, or `FormatError` after an output with no action), the end
    /// of a 1.x run (returns false: kept as `exit`), a command's output (a human's command in
    /// interactive mode: `extra.returncode`), else the user's text.
    fn user(&mut self, i: usize, m: &'a Node<'a>, no_action_before: bool, last: bool) -> bool {
        let (text, images) = content_of(&m["content"]);
        let extra = &m["extra"];
        let (step, source) = if !self.assistant_seen {
            (Step::user_text(text), Source::User)
        } else if let Some(id) = self.pending.pop_front() {
            (
                Step::environment_text(Some("bash".into()), text).with_tool_call_id(id),
                Source::Environment,
            )
        } else if let Some(kind) = extra["interrupt_type"].as_str() {
            (
                Step::environment_text(Some(kind.to_owned()), text),
                Source::Environment,
            )
        } else if no_action_before {
            (
                Step::environment_text(Some("FormatError".into()), text),
                Source::Environment,
            )
        } else if last && self.exit_status_known {
            self.end(i, m);
            return false;
        } else if extra.get("returncode").is_some() || extra.get("raw_output").is_some() {
            (Step::environment_text(None, text), Source::Environment)
        } else {
            (Step::user_text(text), Source::User)
        };
        self.content.push(step);
        for url in images {
            self.content.push(Step::image(url, source));
        }
        true
    }

    /// Message `i` ends the run (kept as `exit`); an earlier exit (a run resumed after it) is
    /// kept as unmapped.
    fn end(&mut self, i: usize, m: &'a Node<'a>) {
        // Bookkeeping: its exit status is the outcome, the message kept as `exit`.
        self.left.lines += 1;
        if let Some((k, earlier)) = self.exit.replace((i, m.clone())) {
            let reason = "an exit before the end of the run".to_owned();
            self.unmapped.push(unmapped_message(k, reason, earlier));
        }
    }

    /// A tool's result for call `id` (`pointer` names the id in the message).
    fn result(
        &mut self,
        id: &str,
        text: String,
        images: Vec<String>,
        pointer: &str,
    ) -> Result<(), (String, String)> {
        let Some(name) = self.calls.get(id) else {
            return Err((
                pointer.to_owned(),
                format!("tool result for call {id:?}, which no earlier model output made"),
            ));
        };
        self.content
            .push(Step::environment_text(Some(name.clone()), text).with_tool_call_id(id));
        for url in images {
            self.content.push(Step::image(url, Source::Environment));
        }
        Ok(())
    }

    /// A model output (message `i`): its tool calls, else the text actions it holds
    /// (`extra.actions`, else the fenced blocks of its text, run only when there is exactly
    /// one), else a message. The text is the first action's `description` (without the
    /// blocks), the reasoning its `reasoning_content`.
    fn act(
        &mut self,
        i: usize,
        m: &'a Node<'a>,
        text: String,
        reasoning: Option<String>,
        calls: Vec<Call>,
    ) -> Result<(), (String, String)> {
        self.assistant_seen = true;
        let mut steps = Vec::new();
        let mut description = non_empty(&text);
        for call in &calls {
            let kwargs = parse_arguments(call.arguments).map_err(|e| (call.pointer.clone(), e))?;
            let mut step = call_step(call.name, kwargs, BASH);
            if let Some(id) = call.id {
                self.calls.insert(id.to_owned(), call.name.to_owned());
                step = step.with_tool_call_id(id);
            }
            steps.push(step);
        }
        if calls.is_empty() {
            let recorded: Vec<String> = m["extra"]["actions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|a| a["command"].as_str().map(str::to_owned))
                .collect();
            let found: Vec<String> = self
                .regex
                .captures_iter(&text)
                .filter_map(|c| c.get(1).map(|g| g.as_str().trim().to_owned()))
                .collect();
            let commands = if !recorded.is_empty() {
                recorded
            } else if found.len() == 1 {
                found
            } else {
                Vec::new()
            };
            if !commands.is_empty() {
                description = non_empty(&self.regex.replace_all(&text, ""));
            }
            for (k, command) in commands.into_iter().enumerate() {
                let id = format!("{TEXT_ACTION_ID}{i}-{k}");
                self.pending.push_back(id.clone());
                self.synthetic.insert(id.clone());
                steps.push(Step::code("bash", command, None).with_tool_call_id(id));
            }
        }
        match steps.first_mut() {
            Some(first) => first.set_thought(description, reasoning),
            None => {
                let mut step = Step::message(text, None);
                step.set_thought(None, reasoning);
                steps.push(step);
                self.after_no_action = true;
            }
        }
        self.content.extend(steps);
        Ok(())
    }

    /// A Responses API response: its `message` texts, `reasoning` summaries and
    /// `function_call`s, as a model output.
    fn response(&mut self, i: usize, m: &'a Node<'a>, at: &str) -> Result<(), (String, String)> {
        let mut texts = Vec::new();
        let mut thoughts = Vec::new();
        let mut calls = Vec::new();
        for (k, item) in m["output"].as_array().into_iter().flatten().enumerate() {
            match item["type"].as_str() {
                Some("message") => texts.push(content_of(&item["content"]).0),
                Some("reasoning") => {
                    for part in ["summary", "content"] {
                        let (t, _) = content_of(&item[part]);
                        if !t.is_empty() {
                            thoughts.push(t);
                        }
                    }
                }
                Some("function_call") => calls.push(Call {
                    name: item["name"].as_str().unwrap_or_default(),
                    arguments: &item["arguments"],
                    id: item["call_id"].as_str().or(item["id"].as_str()),
                    pointer: format!("{at}/output/{k}/arguments"),
                }),
                // Kept with the response's other fields.
                _ => self.left.blocks += 1,
            }
        }
        let reasoning = (!thoughts.is_empty()).then(|| thoughts.join("\n\n"));
        self.act(i, m, texts.join("\n\n"), reasoning, calls)
    }

    /// Counts the parts of a message's `content` no step holds: those without a text (or an
    /// image, when `images` are read).
    fn count_parts(&mut self, content: &Node<'a>, images: bool) {
        for p in content.as_array().into_iter().flatten() {
            let image = p["image_url"]["url"].as_str().or(p["image_url"].as_str());
            let held = p["text"].as_str().is_some() || (images && image.is_some());
            self.left.blocks += u64::from(!held);
        }
    }

    fn into_partial(mut self, v: &'a Node<'a>, record: &'a RawRecord, id: String) -> Partial<'a> {
        let synthetic = &self.synthetic;
        let unanswered = unlink_unanswered_calls(&mut self.content, |id| synthetic.contains(id));
        let mut details = JsonObject::new();
        let mut source = source_details(
            "mini-swe-agent",
            record,
            json!({"instance_id": v["instance_id"].as_str()}),
        );
        self.left.add_to(&mut source);
        details.insert("source".into(), source);
        if let Some(status) = exit_status(v) {
            details.insert("outcome".into(), outcome(status));
        }
        let mut own = Node::Object(node_fields_except(v, &["messages"]));
        if let Some((_, exit)) = self.exit {
            own.insert("exit", exit);
        }
        let unanswered = unanswered.into_iter().map(Node::from).collect();
        for (key, list) in [
            ("messages", self.meta),
            ("unmapped", self.unmapped),
            ("unanswered_calls", unanswered),
        ] {
            if !list.is_empty() {
                own.insert(key, Node::Array(list));
            }
        }
        let tail = match own.as_object().is_some_and(|o| !o.is_empty()) {
            true => vec![("mini_swe_agent", own)],
            false => Vec::new(),
        };
        Partial {
            trajectory: Trajectory::new(id, self.content, details),
            tail,
        }
    }
}

/// The text of Anthropic thinking blocks (`thinking_blocks[].thinking`), joined.
fn thinking(blocks: &Node<'_>) -> Option<String> {
    let parts: Vec<&str> = blocks
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["thinking"].as_str())
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::Provenance;

    fn record(v: &Value, file: &str) -> RawRecord {
        RawRecord {
            provenance: Provenance {
                input: file.into(),
                file: file.into(),
                line: 1,
                index: 0,
            },
            bytes: serde_json::to_vec(v).unwrap_or_default(),
            error: None,
        }
    }

    fn convert(v: &Value) -> Result<Trajectory, Vec<Diagnostic>> {
        MiniSweAgent
            .convert(
                &record(v, "runs/demo-1.traj.json"),
                &FormatOptions::default(),
            )
            .map(|mut t| t.remove(0).0)
    }

    fn classes(t: &Trajectory) -> Vec<&'static str> {
        t.content.iter().map(Step::class_name).collect()
    }

    #[test]
    fn sniffs_its_own_keys_only() {
        let run = json!({"trajectory_format": "mini-swe-agent-1.1", "info": {}, "messages": []});
        assert!(MiniSweAgent.sniff(&run));
        assert!(MiniSweAgent.sniff(&json!({"info": {"mini_version": "1.9.0"}, "messages": []})));
        assert!(!MiniSweAgent.sniff(&json!({"messages": [{"role": "user", "content": "x"}]})));
        assert!(!MiniSweAgent.sniff(&json!({"role": "system", "content": "x"})));
        assert!(!MiniSweAgent.sniff(&json!({"trajectory_format": "other", "messages": []})));
    }

    #[test]
    fn claims_chats_by_its_fence_or_observation_template_only() {
        let chat = |v: Value| v.as_array().cloned().unwrap_or_default();
        let fenced = chat(json!([
            {"role": "user", "content": "fix it"},
            {"role": "assistant", "content": "Run:\n```mswea_bash_command\nls\n```"}
        ]));
        assert!(MiniSweAgent.sniff_chat(&fenced));
        let observed = chat(json!([
            {"role": "assistant", "content": "```bash\nls\n```"},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\na\n</output>"}
        ]));
        assert!(MiniSweAgent.sniff_chat(&observed));
        let plain = chat(json!([
            {"role": "user", "content": "<returncode>0</returncode> is what I got"},
            {"role": "assistant", "content": "```bash\nls\n```"}
        ]));
        assert!(!MiniSweAgent.sniff_chat(&plain));
    }

    /// 1.x: one fenced block is a bash action answered by the next user message; an output
    /// with two blocks is a message answered by a format error; the last user message after
    /// an observation ends the run.
    #[test]
    fn text_actions_of_format_1() {
        let v = json!({
            "trajectory_format": "mini-swe-agent-1",
            "info": {"exit_status": "LimitsExceeded", "submission": ""},
            "messages": [
                {"role": "system", "content": "You can run bash."},
                {"role": "user", "content": "Fix the bug."},
                {"role": "assistant", "content": "THOUGHT: look.\n\n```bash\nls -a\n```"},
                {"role": "user", "content": "<returncode>0</returncode>\n<output>\na\n</output>"},
                {"role": "assistant", "content": "```bash\nls\n```\n```bash\npwd\n```"},
                {"role": "user", "content": "Please always provide EXACTLY ONE action."},
                {"role": "user", "content": ""}
            ]
        });
        let t = convert(&v).expect("converts");
        assert_eq!(t.id, "demo-1");
        assert_eq!(
            classes(&t),
            [
                "text_observation",
                "text_observation",
                "code_action",
                "text_observation",
                "message_action",
                "text_observation"
            ]
        );
        let Step::CodeAction(c) = &t.content[2] else {
            panic!("code action")
        };
        assert_eq!(
            (c.content.as_str(), c.description.as_deref()),
            ("ls -a", Some("THOUGHT: look."))
        );
        assert_eq!(c.tool_call_id.as_deref(), Some("mswea-2-0"));
        assert_eq!(t.content[3].tool_call_id(), Some("mswea-2-0"));
        let Step::TextObservation(o) = &t.content[5] else {
            panic!("observation")
        };
        assert_eq!(o.name.as_deref(), Some("FormatError"));
        let d = &t.details["mini_swe_agent"];
        assert_eq!(d["exit"], json!({"role": "user", "content": ""}));
        assert_eq!(t.details["outcome"]["status"], "timeout");
    }

    /// 1.1: tool calls linked to their results; the submit call, which no result answers,
    /// keeps no id and is listed; the exit message is kept in details.
    #[test]
    fn tool_calls_of_format_1_1() {
        let call = |id: &str, cmd: &str| json!([{"id": id, "type": "function", "function": {"name": "bash", "arguments": json!({"command": cmd}).to_string()}}]);
        let v = json!({
            "trajectory_format": "mini-swe-agent-1.1",
            "instance_id": "repo__x-1",
            "info": {"exit_status": "Submitted", "submission": "diff", "mini_version": "2.0.0"},
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "task"},
                {"role": "assistant", "content": "Look first.", "reasoning_content": "hm", "tool_calls": call("c1", "ls"), "extra": {"cost": 0.1}},
                {"role": "tool", "tool_call_id": "c1", "content": "a.py", "extra": {"returncode": 0}},
                {"role": "assistant", "content": "", "tool_calls": call("c2", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")},
                {"role": "exit", "content": "diff", "extra": {"exit_status": "Submitted", "submission": "diff"}}
            ]
        });
        let t = convert(&v).expect("converts");
        assert_eq!(t.id, "repo__x-1");
        assert_eq!(
            classes(&t),
            [
                "text_observation",
                "text_observation",
                "code_action",
                "text_observation",
                "code_action"
            ]
        );
        assert_eq!(t.content[2].tool_call_id(), Some("c1"));
        assert_eq!(t.content[2].reasoning_content(), Some("hm"));
        assert_eq!(t.content[3].tool_call_id(), Some("c1"));
        assert_eq!(t.content[4].tool_call_id(), None);
        let d = &t.details["mini_swe_agent"];
        assert_eq!(d["unanswered_calls"], json!([{"step": 4, "id": "c2"}]));
        assert_eq!(d["exit"]["extra"]["exit_status"], "Submitted");
        assert_eq!(d["info"]["submission"], "diff");
        assert_eq!(
            d["messages"][0],
            json!({"message": 2, "steps": [2], "fields": {"extra": {"cost": 0.1}}})
        );
        assert_eq!(
            t.details["outcome"],
            json!({"status": "unknown", "native": {"exit_status": "Submitted"}})
        );
    }

    #[test]
    fn responses_api_items_are_read() {
        let v = json!({
            "trajectory_format": "mini-swe-agent-1.1",
            "info": {},
            "messages": [
                {"role": "user", "content": "task"},
                {"object": "response", "output": [
                    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]},
                    {"type": "message", "content": [{"type": "output_text", "text": "Listing."}]},
                    {"type": "function_call", "call_id": "fc1", "name": "bash", "arguments": "{\"command\": \"ls\"}"}
                ]},
                {"type": "function_call_output", "call_id": "fc1", "output": "a.py"}
            ]
        });
        let t = convert(&v).expect("converts");
        assert_eq!(
            classes(&t),
            ["text_observation", "code_action", "text_observation"]
        );
        assert_eq!(t.content[1].reasoning_content(), Some("think"));
        assert_eq!(t.content[2].tool_call_id(), Some("fc1"));
    }

    #[test]
    fn bad_runs_are_diagnosed() {
        let orphan = json!({"messages": [
            {"role": "user", "content": "task"},
            {"role": "tool", "tool_call_id": "ghost", "content": "x"}
        ]});
        let e = convert(&orphan).expect_err("rejected");
        assert_eq!(
            (e[0].pointer.as_str(), e[0].rule.as_str()),
            ("/messages/1/tool_call_id", "mini-swe-agent-structure")
        );
        let empty = json!({"trajectory_format": "mini-swe-agent-1.1", "messages": []});
        let e = convert(&empty).expect_err("rejected");
        assert_eq!(e[0].rule, "empty-trajectory");
        let odd = json!({"messages": [{"role": "critic", "content": "x"}]});
        let e = convert(&odd).expect_err("rejected");
        assert!(
            e[0].message.contains("none of the run's 1 messages"),
            "{e:?}"
        );
    }

    #[test]
    fn the_config_action_regex_is_used() {
        let v = json!({
            "info": {"config": {"model": {"action_regex": "<bash>(.*?)</bash>"}}},
            "messages": [
                {"role": "user", "content": "task"},
                {"role": "assistant", "content": "Run it.\n<bash>\nls\n</bash>"},
                {"role": "user", "content": "a.py"}
            ]
        });
        let t = convert(&v).expect("converts");
        let Step::CodeAction(c) = &t.content[1] else {
            panic!("code action")
        };
        assert_eq!(
            (c.content.as_str(), c.description.as_deref()),
            ("ls", Some("Run it."))
        );
    }
}

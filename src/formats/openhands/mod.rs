//! OpenHands runs, in two shapes:
//!
//! - **event streams**, as OpenHands serializes events (`event_to_dict` in
//!   `openhands/events/serialization/event.py`): `id`, `timestamp`, `source`, `message`,
//!   `cause`, `action` + `args` or `observation` + `content` + `extras`, `tool_call_metadata`
//!   (`function_name`, `tool_call_id`, `model_response`, `total_calls_in_response`, from
//!   `openhands/events/tool.py`). A file of events (a JSON array, or JSON lines) is one
//!   trajectory; so is a record holding them under `history` (evaluation outputs) or `events`.
//!   The oldest streams are read too (`legacy`): the resolver's `dataclasses.asdict(event)`,
//!   an event's fields flat on it (no `id`, `source`, `args` or `extras`), and OpenDevin's
//!   histories of `[action, observation]` pairs.
//! - **chats** OpenHands wrote for training (`messages` with `tool_calls`, SWE-Gym's
//!   OpenHands-Sampled-Trajectories): the conversation its CodeAct agent sends to the model,
//!   tool results prefixed `OBSERVATION:` (`get_observation_message` in the agent). Chats look
//!   like any OpenAI chat, so they are read with `--from openhands` only, never detected.
//!
//! The mapping is in docs/formats/openhands.md.

mod legacy;

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::io;

use serde_json::{json, Value};

use crate::convert::{ConvertOptions, Converter, FormatOptions, LeftOut};
use crate::formats::bundle::{bundle_lines, FileBundle};
use crate::formats::chat::{
    call_step, chat_trajectory, extend_details, message_text, parse_arguments, parts_without_text,
    record_id_with, verdict_outcome, OPENHANDS_CODE_TOOLS,
};
use crate::formats::kit::{fields_except, file_stem, source_details};
use crate::formats::Format;
use crate::ingest::{FramedRecords, RawRecord, RecordSource};
use crate::json::Node;
use crate::model::links::unlink_unanswered;
use crate::model::{AdpVersion, JsonObject, Source, Step, Trajectory, WebObservation};
use crate::validate::check::{check_raw_value, parse_json};
use crate::validate::schemas::RawSchema;
use crate::validate::Diagnostic;

/// The JSON Schema of raw `openhands` records (`validate --schema openhands`).
pub static SCHEMA: RawSchema = RawSchema::new(
    "openhands",
    "instance_id",
    &[
        (
            "https://trajkit.invalid/schemas/raw/openhands.schema.json",
            include_str!("../../../schemas/raw/openhands.schema.json"),
        ),
        (
            "https://trajkit.invalid/schemas/raw/openai.schema.json",
            include_str!("../../../schemas/raw/openai.schema.json"),
        ),
    ],
    &[],
);

/// Reads OpenHands event streams and chats.
pub struct OpenHands;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &OpenHands,
    side: None,
};

/// The key marking a record built from a file of events.
const MARKER: &str = "openhands_events";

/// Action types that are tool calls even without `tool_call_metadata` (OpenHands'
/// `ActionType`, `openhands/core/schema/action.py`).
const TOOL_ACTIONS: &[&str] = &[
    "run",
    "run_ipython",
    "read",
    "write",
    "edit",
    "browse",
    "browse_interactive",
    "think",
    "delegate",
    "call_tool_mcp",
];

/// Observation types that report the controller's own state, not a result shown to the agent
/// as one (`openhands/core/schema/observation.py`); kept in `details.openhands.skipped_events`.
const STATE_OBSERVATIONS: &[&str] = &[
    "agent_state_changed",
    "null",
    "recall",
    "microagent",
    "workspace_context",
    "condense",
];

/// Keys of an action's `args` that are OpenHands' bookkeeping, not arguments of the call.
const BOOKKEEPING: &[&str] = &[
    "thought",
    "security_risk",
    "confirmation_state",
    "impl_source",
    "hidden",
    "blocking",
    "is_static",
    "cwd",
    "include_extra",
    "kernel_init_code",
    "return_axtree",
];

/// True for an OpenHands event: an object with an `action` or `observation` type.
fn is_event(v: &Value) -> bool {
    v["action"].is_string() || v["observation"].is_string()
}

/// True for an event, or an `[action, observation]` pair of OpenDevin's histories.
fn is_event_or_pair(v: &Value) -> bool {
    is_event(v) || v.as_array().and_then(|p| p.first()).is_some_and(is_event)
}

impl Converter for OpenHands {
    fn name(&self) -> &'static str {
        "openhands"
    }

    fn raw_schemas(&self) -> &'static [&'static RawSchema] {
        static SCHEMAS: [&RawSchema; 1] = [&SCHEMA];
        &SCHEMAS
    }

    fn description(&self) -> &'static str {
        "OpenHands event streams (a file of events, or records with a history of them), or its chats (messages; --from only)"
    }

    fn sniff(&self, first: &Value) -> bool {
        let lists = |key: &str| {
            first[key]
                .as_array()
                .and_then(|h| h.first())
                .is_some_and(is_event_or_pair)
        };
        is_event(first) || lists("history") || lists("events")
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        Some(open_events(path, opts.run.max_record_bytes))
    }

    fn convert(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        let value = parse_json(record).map_err(|d| vec![*d])?;
        let prov = &record.provenance;
        let fail = |id: &str, f: Failure| {
            let mut d =
                Diagnostic::error(prov, Some(id), f.pointer, "openhands-structure", f.message);
            d.line = f.line.unwrap_or(prov.line);
            vec![d]
        };
        if value[MARKER] == true {
            let id = file_stem(&prov.file);
            let mut problems = Vec::new();
            let events: Vec<Event> = bundle_lines(&value)
                .map(|(line, v)| Event {
                    v: legacy::normalized(v),
                    line: Some(line),
                    at: String::new(),
                })
                .collect();
            for e in &events {
                if let Err(ds) = check_raw_value(prov, Some(&id), &e.v, &SCHEMA, true) {
                    problems.extend(ds.into_iter().map(|mut d| {
                        d.line = e.line.unwrap_or(prov.line);
                        d
                    }));
                }
            }
            if !problems.is_empty() {
                return Err(problems);
            }
            let mut run = Run::default();
            run.events(&events).map_err(|f| fail(&id, f))?;
            return Ok(vec![(
                run.into_trajectory(&json!({}), record, id),
                AdpVersion::V1_5,
            )]);
        }
        let id = record_id_with(&value, record, &["instance_id", "sid", "session_id"]);
        check_raw_value(prov, Some(&id), &value, &SCHEMA, true)?;
        let mut run = Run::default();
        let built = if let Some(messages) = value["messages"].as_array() {
            run.tools = value["tools"].as_array().cloned().unwrap_or_default();
            run.chat(messages)
        } else {
            let (key, list) = match value["history"].as_array() {
                Some(h) => ("history", h.as_slice()),
                None => (
                    "events",
                    value["events"].as_array().map_or(&[][..], Vec::as_slice),
                ),
            };
            let events: Vec<Event> = if is_event(&value) {
                vec![Event {
                    v: legacy::normalized(&value),
                    line: None,
                    at: String::new(),
                }]
            } else {
                legacy::flatten_pairs(list)
                    .map(|(at, v)| Event {
                        v: legacy::normalized(v),
                        line: None,
                        at: format!("/{key}/{at}"),
                    })
                    .collect()
            };
            run.events(&events)
        };
        built.map_err(|f| fail(&id, f))?;
        Ok(vec![(
            run.into_trajectory(&value, record, id),
            AdpVersion::V1_5,
        )])
    }
}

/// The records of an OpenHands input: a file whose first readable record is an event is one
/// stream (bundled); any other file is read record by record.
fn open_events(path: &str, max_record_bytes: usize) -> io::Result<Box<dyn RecordSource>> {
    let mut framed = FramedRecords::open(path, max_record_bytes)?;
    let mut head = Vec::new();
    let mut stream = false;
    for r in framed.by_ref() {
        let parsed = match r.error {
            Some(_) => None,
            None => serde_json::from_slice::<Value>(&r.bytes).ok(),
        };
        head.push(r);
        if let Some(v) = parsed {
            stream = is_event(&v);
            break;
        }
    }
    Ok(if stream {
        Box::new(FileBundle::from_framed(head, framed, MARKER))
    } else {
        Box::new(Peeked {
            head: head.into_iter(),
            rest: framed,
        })
    })
}

/// Records already read from `rest`, then the others.
struct Peeked {
    head: std::vec::IntoIter<RawRecord>,
    rest: FramedRecords,
}

impl Iterator for Peeked {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        self.head.next().or_else(|| self.rest.next())
    }
}

impl RecordSource for Peeked {
    fn bytes_read(&self) -> u64 {
        self.rest.bytes_read()
    }
}

/// One event and where it is: its line (events read from a file of events) and its JSON
/// pointer in the record (events under `history`).
struct Event<'a> {
    /// The event, its flat fields moved under `args` / `extras` when it is of the oldest shape.
    v: Cow<'a, Value>,
    line: Option<u64>,
    at: String,
}

/// Why a stream cannot be converted.
struct Failure {
    line: Option<u64>,
    pointer: String,
    message: String,
}

/// What an earlier event of the stream became.
enum Seen {
    /// A tool call: its link id and its function's name.
    Call { link: String, name: String },
    /// Anything else (a message, a skipped event).
    Other,
}

/// What converting one run collects.
#[derive(Default)]
struct Run {
    content: Vec<Step>,
    seen: HashMap<i64, Seen>,
    /// Tool call id → function name (chats) or event id (streams, as `by_call`).
    calls: HashMap<String, String>,
    by_call: HashMap<String, i64>,
    answered: HashSet<String>,
    system_prompt: Option<String>,
    tools: Vec<Value>,
    skipped: Vec<Value>,
    /// What each event has that its steps do not hold: `{line or pointer, steps, fields}`.
    event_fields: Vec<Value>,
    task_seen: bool,
    /// The tool call the latest event made (its link and function name): an observation that
    /// names no action it answers (the oldest streams have no ids) answers it.
    open_call: Option<(String, String)>,
    /// Events of the oldest shape, read through [`legacy::normalized`].
    legacy_events: u64,
    /// What no step holds besides the skipped events: system prompts after the first (one is
    /// kept), content parts without text.
    left: LeftOut,
    /// The condensations seen so far ([`Condensations`]).
    condensed: Condensations,
}

/// What OpenHands' condensations did to the history the model is given (its `View`,
/// `openhands/memory/view.py`): each event with an id that is not a condensation, with the
/// steps it made; the events forgotten so far; the latest summary and where it stands; and
/// one entry per condensation for `details.openhands.compactions`.
#[derive(Default)]
struct Condensations {
    events: Vec<(i64, std::ops::Range<usize>)>,
    forgotten: HashSet<i64>,
    forgotten_ranges: Vec<(i64, i64)>,
    summary: Option<(String, usize)>,
    entries: Vec<Value>,
}

impl Condensations {
    fn is_forgotten(&self, id: i64) -> bool {
        self.forgotten.contains(&id)
            || self
                .forgotten_ranges
                .iter()
                .any(|&(a, b)| (a..=b).contains(&id))
    }

    /// A `condensation` action at content index `step`: the events it forgets
    /// (`forgotten_event_ids`, else `forgotten_events_start_id` to `forgotten_events_end_id`)
    /// leave the history, its `summary` stands at `summary_offset` among the events kept; the
    /// entry lists the steps of the events kept (`context_steps`) and the summary with its
    /// place among them (`summary_at`, a step index in `context_steps`).
    fn condensation(&mut self, v: &Value, step: usize) {
        let args = &v["args"];
        match args["forgotten_event_ids"].as_array() {
            Some(ids) => self.forgotten.extend(ids.iter().filter_map(Value::as_i64)),
            None => {
                if let (Some(a), Some(b)) = (
                    args["forgotten_events_start_id"].as_i64(),
                    args["forgotten_events_end_id"].as_i64(),
                ) {
                    self.forgotten_ranges.push((a, b));
                }
            }
        }
        if let (Some(text), Some(offset)) =
            (args["summary"].as_str(), args["summary_offset"].as_u64())
        {
            self.summary = Some((text.to_owned(), offset as usize));
        }
        let kept: Vec<std::ops::Range<usize>> = self
            .events
            .iter()
            .filter(|(id, _)| !self.is_forgotten(*id))
            .map(|(_, r)| r.clone())
            .collect();
        let context: Vec<usize> = kept.iter().cloned().flatten().collect();
        let mut entry = json!({"step": step, "event": v["id"], "context_steps": context});
        if let Some((text, offset)) = &self.summary {
            let at: usize = kept.iter().take(*offset).map(|r| r.len()).sum();
            entry["summary"] = json!(text);
            entry["summary_at"] = json!(at);
        }
        self.entries.push(entry);
    }
}

/// An event's keys its steps hold (`source` says who speaks; `cause` and the call metadata's
/// ids give the links).
const EVENT_MAPPED: &[&str] = &[
    "action",
    "observation",
    "args",
    "content",
    "cause",
    "source",
];

/// What an event has that its steps do not hold: its `id`, `timestamp`, display `message`,
/// `extras` (a browse observation's `url` aside), the `args` no step holds (a message's or the
/// system's others, a tool action's bookkeeping), and the call metadata but the ids and the
/// model response's `choices` (the calls the steps hold). Of an event of the oldest shape
/// (`legacy`), a tool action keeps every argument its step does not hold: its fields were
/// the dataclass's, not OpenHands' serialization.
fn event_fields(v: &Value, legacy: bool) -> JsonObject {
    let mut fields = fields_except(v, EVENT_MAPPED);
    if let Some(kind) = v["action"].as_str() {
        // A message's or the system's arguments beside what its step (or the system prompt)
        // holds; a tool action's bookkeeping (its kwargs hold the call's arguments).
        let args: JsonObject = match kind {
            "message" => fields_except(
                &v["args"],
                &["content", "image_urls", "images_urls", "thought"],
            ),
            "system" => fields_except(&v["args"], &["content", "tools"]),
            "run" if legacy => fields_except(&v["args"], &["command", "thought"]),
            "run_ipython" if legacy => fields_except(&v["args"], &["code", "thought"]),
            _ if legacy => {
                let held = native_kwargs(kind, &v["args"]);
                fields_except(&v["args"], &["thought"])
                    .into_iter()
                    .filter(|(k, _)| !held.contains_key(k))
                    .collect()
            }
            _ => fields_except(&v["args"], &["thought"])
                .into_iter()
                .filter(|(k, _)| BOOKKEEPING.contains(&k.as_str()))
                .collect(),
        };
        if !args.is_empty() {
            fields.insert("args".into(), Value::Object(args));
        }
    }
    if let Some(Value::Object(extras)) = fields.get_mut("extras") {
        if v["observation"] == "browse" {
            extras.remove("url");
        }
    }
    if let Some(meta) = fields.remove("tool_call_metadata") {
        let mut meta = fields_except(&meta, &["function_name", "tool_call_id"]);
        if let Some(response) = meta.remove("model_response") {
            meta.insert(
                "model_response".into(),
                Value::Object(fields_except(&response, &["choices"])),
            );
        }
        fields.insert("tool_call_metadata".into(), Value::Object(meta));
    }
    fields.retain(|_, v| !v.as_object().is_some_and(|o| o.is_empty()));
    fields
}

/// An action's `thought`: a string, or OpenHands' `Thought` object (`text`,
/// `reasoning_content`). Returns the description and the reasoning.
fn thought_of(thought: &Value) -> (Option<String>, Option<String>) {
    let text = |v: &Value| {
        v.as_str()
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned)
    };
    match thought {
        Value::Object(_) => (text(&thought["text"]), text(&thought["reasoning_content"])),
        other => (text(other), None),
    }
}

/// The arguments of call `id` as the model wrote them, from the model response kept in
/// `tool_call_metadata`.
fn model_call_arguments(response: &Value, id: &str) -> Option<JsonObject> {
    response["choices"][0]["message"]["tool_calls"]
        .as_array()?
        .iter()
        .find(|c| c["id"] == id)
        .and_then(|c| parse_arguments(&Node::from_value(&c["function"]["arguments"])).ok())
}

/// The tool an action without `tool_call_metadata` stands for.
fn default_function(kind: &str, args: &Value) -> String {
    let aci = args["impl_source"] == "oh_aci";
    match kind {
        "run" => "execute_bash",
        "run_ipython" => "execute_ipython_cell",
        "edit" if args["command"].as_str().is_some_and(|c| !c.is_empty()) => "str_replace_editor",
        "edit" => "edit_file",
        "read" if aci => "str_replace_editor",
        "browse_interactive" => "browser",
        "call_tool_mcp" => args["name"].as_str().unwrap_or("call_tool_mcp"),
        other => other,
    }
    .to_owned()
}

/// An action's arguments as call kwargs, when the model's own call is not recorded.
fn native_kwargs(kind: &str, args: &Value) -> JsonObject {
    let pick = |keys: &[&str]| -> JsonObject {
        keys.iter()
            .filter_map(|k| {
                args.get(*k)
                    .filter(|v| !v.is_null())
                    .map(|v| ((*k).to_owned(), v.clone()))
            })
            .collect()
    };
    let mut kwargs = match kind {
        "edit" if args["command"].as_str().is_some_and(|c| !c.is_empty()) => pick(&[
            "command",
            "path",
            "file_text",
            "old_str",
            "new_str",
            "insert_line",
        ]),
        "edit" | "write" => pick(&["path", "content", "start", "end"]),
        "read" if args["impl_source"] == "oh_aci" => {
            let mut k = JsonObject::new();
            k.insert("command".into(), "view".into());
            k.extend(pick(&["path", "view_range"]));
            k
        }
        "read" => pick(&["path", "start", "end"]),
        "browse" => pick(&["url"]),
        "browse_interactive" => {
            let mut k = JsonObject::new();
            k.insert("code".into(), args["browser_actions"].clone());
            k
        }
        "think" => {
            let mut k = JsonObject::new();
            k.insert("thought".into(), thought_of(&args["thought"]).0.into());
            k
        }
        "delegate" => pick(&["agent", "inputs"]),
        "call_tool_mcp" => args["arguments"].as_object().cloned().unwrap_or_default(),
        _ => args
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, v)| !v.is_null() && !BOOKKEEPING.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    };
    kwargs.retain(|_, v| !v.is_null());
    kwargs
}

/// ADP's final-answer convention: the answer wrapped in `<finish> … </finish>`
/// (`<finish> </finish>` when the agent finished without a message).
fn finish(text: &str) -> Step {
    let text = text.trim();
    if text.is_empty() {
        Step::message("<finish> </finish>", None)
    } else {
        Step::message(format!("<finish> {text} </finish>"), None)
    }
}

/// Text of a tool result without the `OBSERVATION:` line OpenHands' agent puts before it.
fn observation_text(text: &str) -> String {
    text.strip_prefix("OBSERVATION:\n")
        .unwrap_or(text)
        .to_owned()
}

impl Run {
    fn task_or_user(&mut self, text: String, images: &Value) {
        self.task_seen = true;
        if !text.is_empty() || images.as_array().is_none_or(Vec::is_empty) {
            self.content.push(Step::user_text(text));
        }
        for url in images
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            self.content.push(Step::image(url, Source::User));
        }
    }

    /// Keeps the first system prompt; a later one is counted as left out.
    fn system_prompt(&mut self, prompt: String) {
        match self.system_prompt {
            Some(_) => self.left.lines += 1,
            None => self.system_prompt = Some(prompt),
        }
    }

    /// An event stream, in order.
    fn events(&mut self, events: &[Event]) -> Result<(), Failure> {
        for e in events {
            let (first, skipped) = (self.content.len(), self.skipped.len());
            self.legacy_events += u64::from(matches!(e.v, Cow::Owned(_)));
            let open = self.open_call.take();
            let seen = if e.v["action"].is_string() {
                self.action(&e.v)
            } else {
                self.observation(e, open.clone())?;
                Seen::Other
            };
            if self.content.len() == first {
                // An event that made no step (a controller's) leaves the call waiting.
                self.open_call = self.open_call.take().or(open);
            }
            let fields = event_fields(&e.v, matches!(e.v, Cow::Owned(_)));
            if self.skipped.len() == skipped && !fields.is_empty() {
                let steps: Vec<usize> = (first..self.content.len()).collect();
                let mut note = json!({"steps": steps, "fields": fields});
                match e.line {
                    Some(line) => note["line"] = json!(line),
                    None => note["pointer"] = json!(e.at),
                }
                self.event_fields.push(note);
            }
            if let Some(id) = e.v["id"].as_i64() {
                self.seen.insert(id, seen);
                match e.v["action"].as_str() {
                    Some("condensation") => {
                        self.condensed.condensation(&e.v, self.content.len());
                    }
                    Some("condensation_request") => {}
                    _ => self.condensed.events.push((id, first..self.content.len())),
                }
            }
            if e.v["observation"].as_str() == Some("condense") {
                // A summary recorded as an observation: the history it stood in is not.
                if let Some(text) = e.v["content"].as_str().filter(|t| !t.trim().is_empty()) {
                    let step = self.content.len();
                    self.condensed
                        .entries
                        .push(json!({"step": step, "summary": text}));
                }
            }
        }
        Ok(())
    }

    fn action(&mut self, v: &Value) -> Seen {
        let kind = v["action"].as_str().unwrap_or_default();
        let args = &v["args"];
        let (thought, reasoning) = thought_of(&args["thought"]);
        let meta = &v["tool_call_metadata"];
        match kind {
            "system" => {
                if let Some(prompt) = args["content"].as_str() {
                    self.system_prompt(prompt.to_owned());
                }
                if let Some(tools) = args["tools"].as_array() {
                    self.tools = tools.clone();
                }
                return Seen::Other;
            }
            "message" if self.said_by_user(v) => {
                self.left.blocks += parts_without_text(&Node::from_value(&args["content"]));
                let images = args.get("image_urls").unwrap_or(&args["images_urls"]);
                self.task_or_user(message_text(&Node::from_value(&args["content"])), images);
                return Seen::Other;
            }
            "message" => {
                self.left.blocks += parts_without_text(&Node::from_value(&args["content"]));
                let mut step =
                    Step::message(message_text(&Node::from_value(&args["content"])), None);
                step.set_thought(None, reasoning);
                self.content.push(step);
                return Seen::Other;
            }
            "finish" => {
                let text = args["final_thought"]
                    .as_str()
                    .filter(|t| !t.trim().is_empty())
                    .or(args["outputs"]["content"].as_str())
                    .unwrap_or_default();
                let mut step = finish(text);
                step.set_thought(thought, reasoning);
                self.content.push(step);
                return Seen::Other;
            }
            "reject" => {
                let text = args["outputs"]["reason"]
                    .as_str()
                    .or(v["message"].as_str())
                    .unwrap_or_default();
                let mut step = Step::message(text, None);
                step.set_thought(thought, reasoning);
                self.content.push(step);
                return Seen::Other;
            }
            _ if TOOL_ACTIONS.contains(&kind) || meta.is_object() => {}
            _ => {
                self.skipped.push(v.clone());
                return Seen::Other;
            }
        }
        let call_id = meta["tool_call_id"].as_str();
        let function = meta["function_name"]
            .as_str()
            .map_or_else(|| default_function(kind, args), str::to_owned);
        let call_args = call_id.and_then(|id| model_call_arguments(&meta["model_response"], id));
        let text = |key: &str| args[key].as_str().unwrap_or_default().to_owned();
        let mut step = match (kind, call_args) {
            ("run", _) => Step::code("bash", text("command"), None),
            ("run_ipython", Some(kwargs)) if function == "str_replace_editor" => {
                Step::api(&function, kwargs, None)
            }
            ("run_ipython", _) => Step::code("python", text("code"), None),
            (_, Some(kwargs)) => Step::api(&function, kwargs, None),
            (_, None) => Step::api(&function, native_kwargs(kind, args), None),
        };
        if kind != "think" {
            step.set_thought(thought, reasoning);
        }
        let link = match (call_id, v["id"].as_i64()) {
            (Some(id), _) => id.to_owned(),
            (None, Some(n)) => format!("event-{n}"),
            (None, None) => format!("event-at-{}", self.content.len()),
        };
        if let Some(n) = v["id"].as_i64() {
            self.by_call.insert(link.clone(), n);
        }
        self.content.push(step.with_tool_call_id(link.clone()));
        self.open_call = Some((link.clone(), function.clone()));
        Seen::Call {
            link,
            name: function,
        }
    }

    /// Whether a message event is the user's: its `source`; in the oldest streams, which have
    /// none, the first message (the task) and a message right after an agent's message (the
    /// reply it waited for) are the user's, any other the agent's.
    fn said_by_user(&self, v: &Value) -> bool {
        match v["source"].as_str() {
            Some(source) => source == "user",
            None => !self.task_seen || matches!(self.content.last(), Some(Step::MessageAction(_))),
        }
    }

    /// An observation; `open` is the call the event before it made, which it answers when it
    /// names no action (no `cause`, no `tool_call_id`).
    fn observation(&mut self, e: &Event, open: Option<(String, String)>) -> Result<(), Failure> {
        let v = &*e.v;
        let kind = v["observation"].as_str().unwrap_or_default();
        if STATE_OBSERVATIONS.contains(&kind) {
            self.skipped.push(v.clone());
            return Ok(());
        }
        let fail = |pointer: &str, message: String| Failure {
            line: e.line,
            pointer: format!("{}{pointer}", e.at),
            message,
        };
        let call_id = v["tool_call_metadata"]["tool_call_id"].as_str();
        let cause = match (v["cause"].as_i64(), call_id) {
            (Some(c), _) if self.seen.contains_key(&c) => Some(c),
            (Some(c), _) => {
                return Err(fail(
                    "/cause",
                    format!(
                    "observation caused by event {c}, which is not an earlier event of this stream"
                ),
                ))
            }
            (None, Some(id)) => match self.by_call.get(id) {
                Some(&n) => Some(n),
                None => {
                    return Err(fail(
                        "/tool_call_metadata/tool_call_id",
                        format!("observation of tool call {id:?}, which no earlier action made"),
                    ))
                }
            },
            (None, None) => None,
        };
        let link = match cause.and_then(|c| self.seen.get(&c)) {
            Some(Seen::Call { link, name }) if !self.answered.contains(link) => {
                Some((link.clone(), name.clone()))
            }
            _ if v["cause"].is_i64() || call_id.is_some() => None,
            _ => open.filter(|(link, _)| !self.answered.contains(link)),
        };
        let content = v["content"].as_str().unwrap_or_default().to_owned();
        let mut step = if kind == "browse" {
            Step::WebObservation(WebObservation {
                html: Some(content),
                axtree: None,
                url: v["extras"]["url"].as_str().map(str::to_owned),
                image_observation: None,
                viewport_size: None,
                tool_call_id: None,
                reward: None,
            })
        } else {
            let name = link.as_ref().map_or(kind, |(_, n)| n.as_str());
            Step::environment_text(Some(name.to_owned()), content)
        };
        if let Some((id, _)) = link {
            self.answered.insert(id.clone());
            step = step.with_tool_call_id(id);
        }
        self.content.push(step);
        Ok(())
    }

    /// A chat OpenHands wrote: calls of one assistant message are each followed by their
    /// result (the order OpenHands runs them in), results found by `tool_call_id`.
    fn chat(&mut self, messages: &[Value]) -> Result<(), Failure> {
        // The calls of the latest assistant message, each with its result when it came.
        let mut group: Vec<(Step, Option<Step>)> = Vec::new();
        let flush = |content: &mut Vec<Step>, group: &mut Vec<(Step, Option<Step>)>| {
            for (call, result) in group.drain(..) {
                content.push(call);
                content.extend(result);
            }
        };
        for (i, m) in messages.iter().enumerate() {
            let content = Node::from_value(&m["content"]);
            self.left.blocks += parts_without_text(&content);
            let text = message_text(&content);
            let role = m["role"].as_str().unwrap_or_default();
            if role != "tool" {
                flush(&mut self.content, &mut group);
            }
            match role {
                "system" | "developer" => self.system_prompt(text),
                "user" if !self.task_seen => self.task_or_user(text, &Value::Null),
                "user" => match text.strip_prefix("OBSERVATION:\n") {
                    Some(result) => self
                        .content
                        .push(Step::environment_text(None, result.to_owned())),
                    None => self.content.push(Step::user_text(text)),
                },
                "assistant" => {
                    let calls = m["tool_calls"].as_array().map_or(&[][..], Vec::as_slice);
                    let reasoning = m["reasoning_content"].as_str().map(str::to_owned);
                    if calls.is_empty() {
                        let mut step = Step::message(text, None);
                        step.set_thought(None, reasoning);
                        self.content.push(step);
                        continue;
                    }
                    let mut thought = (!text.trim().is_empty()).then_some(text);
                    let mut reasoning = reasoning;
                    for (k, call) in calls.iter().enumerate() {
                        let f = &call["function"];
                        let name = f["name"].as_str().unwrap_or_default();
                        let kwargs = parse_arguments(&Node::from_value(&f["arguments"])).map_err(
                            |message| Failure {
                                line: None,
                                pointer: format!("/messages/{i}/tool_calls/{k}/function/arguments"),
                                message,
                            },
                        )?;
                        let mut step = if name == "finish" {
                            finish(
                                kwargs
                                    .get("message")
                                    .and_then(Value::as_str)
                                    .unwrap_or_default(),
                            )
                        } else {
                            let id = call["id"].as_str().unwrap_or_default();
                            self.calls.insert(id.to_owned(), name.to_owned());
                            call_step(name, kwargs, OPENHANDS_CODE_TOOLS).with_tool_call_id(id)
                        };
                        step.set_thought(thought.take(), reasoning.take());
                        group.push((step, None));
                    }
                }
                "tool" => {
                    let id = m["tool_call_id"].as_str().unwrap_or_default();
                    let Some(name) = self.calls.get(id).cloned() else {
                        return Err(Failure {
                            line: None,
                            pointer: format!("/messages/{i}/tool_call_id"),
                            message: format!(
                                "tool result for call {id:?}, which no earlier assistant message made"
                            ),
                        });
                    };
                    let mut step = Step::environment_text(Some(name), observation_text(&text));
                    if self.answered.insert(id.to_owned()) {
                        step = step.with_tool_call_id(id);
                    }
                    let slot = group
                        .iter_mut()
                        .find(|(call, result)| result.is_none() && call.tool_call_id() == Some(id));
                    match slot {
                        Some((_, result)) => *result = Some(step),
                        None => {
                            flush(&mut self.content, &mut group);
                            self.content.push(step);
                        }
                    }
                }
                other => {
                    return Err(Failure {
                        line: None,
                        pointer: format!("/messages/{i}/role"),
                        message: format!("unknown role {other:?}"),
                    })
                }
            }
        }
        flush(&mut self.content, &mut group);
        Ok(())
    }

    fn into_trajectory(mut self, v: &Value, record: &RawRecord, id: String) -> Trajectory {
        unlink_unanswered(&mut self.content);
        let mut traj = chat_trajectory(
            "openhands",
            record,
            &Node::from_value(v),
            id,
            self.content,
            self.tools,
            &["messages", "tools", "history", "events"],
        );
        let d = &mut traj.details;
        d.insert(
            "source".into(),
            source_details(
                "openhands",
                record,
                json!({"instance_id": v["instance_id"].as_str()}),
            ),
        );
        if let Some(resolved) = v["resolved"].as_bool() {
            d.insert(
                "outcome".into(),
                verdict_outcome("resolved", resolved, JsonObject::new()),
            );
        }
        let mut extra = JsonObject::new();
        if let Some(p) = self.system_prompt {
            extra.insert("system_prompt".into(), p.into());
        }
        let mut left = self.left;
        left.place = "details.openhands".to_owned();
        left.lines += self.skipped.len() as u64;
        if let Some(source) = d.get_mut("source") {
            left.add_to(source);
        }
        if !self.skipped.is_empty() {
            extra.insert("skipped_events".into(), Value::Array(self.skipped));
        }
        if self.legacy_events > 0 {
            extra.insert("legacy_events".into(), self.legacy_events.into());
        }
        if !self.event_fields.is_empty() {
            extra.insert("event_fields".into(), Value::Array(self.event_fields));
        }
        if !self.condensed.entries.is_empty() {
            extra.insert("compactions".into(), Value::Array(self.condensed.entries));
        }
        extend_details(d, "openhands", extra);
        traj
    }
}

//! SWE-agent runs. Three shapes of record, all one trajectory each:
//!
//! - a `.traj` file (SWE-agent's `DefaultAgent.get_trajectory_data`, `sweagent/agent/agents.py`;
//!   types in `sweagent/types.py`): `trajectory` (steps with `thought`, `action`,
//!   `observation`, `response`, `state`, `execution_time`, `query`), `history` (the chat shown
//!   to the model; `is_demo` entries are demonstrations), `info` (`exit_status`, `submission`,
//!   `model_stats`, versions), `replay_config`, `environment`; a `.traj` with a `history` and
//!   no `trajectory` is read from its history, as a chat;
//! - a dataset row whose `trajectory` is the chat as turns `{role: system|user|ai, text,
//!   system_prompt, mask}` (nebius/SWE-agent-trajectories);
//! - a dataset row whose `messages` are the history as chat messages (SWE-bench/
//!   SWE-smith-trajectories: `<function=…>` calls in the text, `OBSERVATION:` results), or
//!   with OpenAI-style `tool_calls`.
//!
//! The mapping is in docs/formats/swe-agent.md; how command lines and model outputs are read is
//! in [`command`].

pub mod command;

use std::collections::HashMap;

use serde_json::{json, Value};

use self::command::{command_step, thought_action, tool_call_step, xml_function};
use crate::convert::{Converter, FormatOptions, LeftOut};
use crate::formats::chat::{
    chat_trajectory, extend_details, message_text, parse_arguments, parts_without_text,
    record_id_with, unlink_unanswered_calls, verdict_outcome,
};
use crate::formats::Format;
use crate::ingest::RawRecord;
use crate::json::Node;
use crate::model::{AdpVersion, JsonObject, Step, Trajectory};
use crate::validate::check::check_raw;
use crate::validate::schemas::RawSchema;
use crate::validate::Diagnostic;

/// The JSON Schema of raw `swe-agent` records (`validate --schema swe-agent`).
pub static SCHEMA: RawSchema = RawSchema::new(
    "swe-agent",
    "instance_id",
    &[
        (
            "https://trajkit.invalid/schemas/raw/swe-agent.schema.json",
            include_str!("../../../schemas/raw/swe-agent.schema.json"),
        ),
        (
            "https://trajkit.invalid/schemas/raw/openai.schema.json",
            include_str!("../../../schemas/raw/openai.schema.json"),
        ),
    ],
    &[],
);

/// Reads SWE-agent runs.
pub struct SweAgent;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &SweAgent,
    side: None,
};

impl Converter for SweAgent {
    fn name(&self) -> &'static str {
        "swe-agent"
    }

    fn raw_schemas(&self) -> &'static [&'static RawSchema] {
        static SCHEMAS: [&RawSchema; 1] = [&SCHEMA];
        &SCHEMAS
    }

    fn description(&self) -> &'static str {
        "SWE-agent runs: .traj files (trajectory/history/info), or dataset rows of its chat (turns or messages)"
    }

    fn sniff(&self, first: &Value) -> bool {
        let Some(steps) = first["trajectory"].as_array() else {
            return history_only(first);
        };
        first.get("history").is_some()
            || first.get("info").is_some()
            || steps
                .first()
                .is_some_and(|t| t.get("role").is_some() && t.get("text").is_some())
    }

    fn convert(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        let value = check_raw(record, &SCHEMA, true)?;
        let id = trajectory_id(&value, record);
        let mut run = Run::default();
        let built = match (value["trajectory"].as_array(), value["messages"].as_array()) {
            (Some(steps), _) if steps.first().is_some_and(|t| t.get("role").is_some()) => {
                run.chat(steps, "/trajectory")
            }
            (Some(steps), _) => {
                run.traj(&value, steps);
                Ok(())
            }
            (None, Some(messages)) => run.chat(messages, "/messages"),
            (None, None) => match value["history"].as_array() {
                Some(history) => run.chat(history, "/history"),
                None => Ok(()),
            },
        };
        built.map_err(|(pointer, message)| {
            vec![Diagnostic::error(
                &record.provenance,
                Some(&id),
                pointer,
                "swe-agent-structure",
                message,
            )]
        })?;
        Ok(vec![(
            run.into_trajectory(&value, record, id),
            AdpVersion::V1_5,
        )])
    }
}

/// A `.traj` file with a `history` and no `trajectory` (nor `messages`): the history's first
/// item is one of SWE-agent's chat messages (a `role`, with its `agent` or `message_type`).
fn history_only(v: &Value) -> bool {
    v.get("messages").is_none()
        && v["history"]
            .as_array()
            .and_then(|h| h.first())
            .is_some_and(|m| {
                m["role"].is_string()
                    && (m.get("message_type").is_some() || m.get("agent").is_some())
            })
}

/// The trajectory id: the record's `id`, else its `instance_id`, else the name of the `.traj`
/// file holding it (SWE-agent names it after the instance), else `{file name}#{index}`.
fn trajectory_id(v: &Value, record: &RawRecord) -> String {
    let file = record
        .provenance
        .file
        .rsplit('/')
        .next()
        .unwrap_or_default();
    let named = v["id"].is_string() || v["id"].is_number() || v["instance_id"].is_string();
    match file.strip_suffix(".traj") {
        Some(stem) if !named && record.provenance.index == 0 && !stem.is_empty() => stem.to_owned(),
        _ => record_id_with(v, record, &["instance_id"]),
    }
}

/// What converting one run collects.
#[derive(Default)]
struct Run {
    content: Vec<Step>,
    /// Function-calling call ids made so far, with the tool's name.
    calls: HashMap<String, String>,
    system_prompt: Option<String>,
    task_seen: bool,
    demonstrations: usize,
    /// Content indices of steps from turns the dataset masks out of training.
    excluded: Vec<usize>,
    /// `execution_time` and `state` of each `.traj` step.
    step_details: Vec<Value>,
    /// What no step holds: demonstrations, system messages after the first, the attempts not
    /// chosen, content parts without text.
    left: LeftOut,
}

/// The name an observation answering `action` gets: the function, or `bash` for shell code.
fn result_name(action: Option<&Step>) -> Option<String> {
    match action? {
        Step::ApiAction(a) => Some(a.function.clone()),
        Step::CodeAction(c) => Some(c.language.clone()),
        _ => None,
    }
}

/// An observation as the model saw it, without the `OBSERVATION:` line SWE-agent's
/// next-step template puts before the output.
fn observation_text(text: &str) -> String {
    match text.strip_prefix("OBSERVATION:") {
        Some(rest) => rest.trim().to_owned(),
        None => text.to_owned(),
    }
}

/// The text of a chat message (`content`) or of a dataset turn (`text`).
fn turn_text(m: &Value, left: &mut LeftOut) -> String {
    match m.get("content") {
        Some(c) => {
            let c = Node::from_value(c);
            left.blocks += parts_without_text(&c);
            message_text(&c)
        }
        None => m["text"].as_str().unwrap_or_default().to_owned(),
    }
}

fn non_empty(text: &str) -> Option<String> {
    let t = text.trim();
    (!t.is_empty()).then(|| t.to_owned())
}

impl Run {
    /// Takes the run's preamble out of a chat: demonstrations (counted, not steps), the first
    /// system prompt, and the first user message, which is the task. True when `m` was one.
    fn prompt(&mut self, m: &Value) -> bool {
        if m["is_demo"] == true {
            // In-context examples, not the run: counted in `details.swe_agent`.
            self.demonstrations += 1;
            self.left.lines += 1;
            return true;
        }
        match m["role"].as_str() {
            Some("system") if self.system_prompt.is_some() => {
                // A later system message: not part of the run.
                self.left.lines += 1;
                true
            }
            Some("system") => {
                let prompt = m["system_prompt"]
                    .as_str()
                    .map_or_else(|| turn_text(m, &mut self.left), str::to_owned);
                self.system_prompt = Some(prompt);
                true
            }
            Some("user") if !self.task_seen => {
                self.task_seen = true;
                let text = turn_text(m, &mut self.left);
                self.content.push(Step::user_text(text));
                true
            }
            _ => false,
        }
    }

    /// A `.traj` file: the task from `history` (else from the first step's `query`), then one
    /// action and its observation per step.
    fn traj(&mut self, v: &Value, steps: &[Value]) {
        let prompt = v["history"]
            .as_array()
            .or(steps.first().and_then(|s| s["query"].as_array()));
        for m in prompt.into_iter().flatten() {
            self.prompt(m);
            if self.task_seen {
                break;
            }
        }
        for s in steps {
            let thought = s["thought"].as_str().and_then(non_empty);
            let action = s["action"].as_str().unwrap_or_default();
            let observation = s["observation"].as_str().unwrap_or_default();
            if action.trim().is_empty() {
                // A step whose output held no action (SWE-agent records it, then asks again).
                let said = s["response"].as_str().and_then(non_empty).or(thought);
                if let Some(text) = said {
                    self.content.push(Step::message(text, None));
                }
                if !observation.trim().is_empty() {
                    self.content
                        .push(Step::environment_text(None, observation.to_owned()));
                }
            } else {
                let mut step = command_step(action);
                step.set_thought(thought, None);
                let name = result_name(Some(&step));
                self.content.push(step);
                self.content
                    .push(Step::environment_text(name, observation.to_owned()));
            }
            self.step_details.push(json!({
                "execution_time": s.get("execution_time"),
                "state": s.get("state"),
            }));
        }
    }

    /// A chat (`messages`, or `trajectory` turns), `base` being its JSON pointer.
    fn chat(&mut self, messages: &[Value], base: &str) -> Result<(), (String, String)> {
        for (i, m) in messages.iter().enumerate() {
            if self.prompt(m) {
                continue;
            }
            match m["role"].as_str().unwrap_or_default() {
                "user" | "tool" => self.result(m, &format!("{base}/{i}"))?,
                "assistant" | "ai" => {
                    let start = self.content.len();
                    self.assistant(m, &format!("{base}/{i}"))?;
                    if m["mask"] == false {
                        self.excluded.extend(start..self.content.len());
                    }
                }
                "system" => self.left.lines += 1, // a later system message: not part of the run
                other => {
                    return Err((
                        format!("{base}/{i}/role"),
                        format!("unknown role {other:?}"),
                    ))
                }
            }
        }
        Ok(())
    }

    /// A user or tool message after the task: the environment's answer to the action before
    /// it (by call id when the log has ids).
    fn result(&mut self, m: &Value, at: &str) -> Result<(), (String, String)> {
        let text = turn_text(m, &mut self.left);
        let (id, pointer) = match (m["tool_call_id"].as_str(), m["tool_call_ids"][0].as_str()) {
            (Some(id), _) => (Some(id), format!("{at}/tool_call_id")),
            (None, Some(id)) => (Some(id), format!("{at}/tool_call_ids/0")),
            (None, None) => (None, String::new()),
        };
        let step = Step::environment_text(None, observation_text(&text));
        let step = match id {
            Some(id) => {
                let Some(name) = self.calls.get(id) else {
                    return Err((
                        pointer,
                        format!(
                            "tool result for call {id:?}, which no earlier assistant message made"
                        ),
                    ));
                };
                with_name(step, Some(name.clone())).with_tool_call_id(id)
            }
            None => {
                let before = self.content.last().filter(|s| s.is_tool_action());
                with_name(step, result_name(before))
            }
        };
        self.content.push(step);
        Ok(())
    }

    /// A model output: its tool calls, else its recorded `action`, else the first
    /// `<function=…>` call in its text, else its last ``` block, else a message.
    fn assistant(&mut self, m: &Value, at: &str) -> Result<(), (String, String)> {
        let text = turn_text(m, &mut self.left);
        if let Some(calls) = m["tool_calls"].as_array().filter(|c| !c.is_empty()) {
            let mut thought = non_empty(&text);
            for (k, call) in calls.iter().enumerate() {
                let f = &call["function"];
                let name = f["name"].as_str().unwrap_or_default();
                let kwargs = parse_arguments(&Node::from_value(&f["arguments"]))
                    .map_err(|e| (format!("{at}/tool_calls/{k}/function/arguments"), e))?;
                let mut step = tool_call_step(name, kwargs);
                step.set_thought(thought.take(), None);
                if let Some(id) = call["id"].as_str() {
                    self.calls.insert(id.to_owned(), name.to_owned());
                    step = step.with_tool_call_id(id);
                }
                self.content.push(step);
            }
            return Ok(());
        }
        let parsed = if let Some(action) = m["action"].as_str().filter(|a| !a.trim().is_empty()) {
            let thought = m["thought"].as_str().and_then(non_empty);
            Some((command_step(action), thought))
        } else if let Some((thought, name, params)) = xml_function(&text) {
            Some((tool_call_step(&name, params), non_empty(&thought)))
        } else {
            thought_action(&text)
                .filter(|(_, action)| !action.trim().is_empty())
                .map(|(thought, action)| (command_step(&action), non_empty(&thought)))
        };
        match parsed {
            Some((mut step, thought)) => {
                step.set_thought(thought, None);
                self.content.push(step);
            }
            None => self.content.push(Step::message(text, None)),
        }
        Ok(())
    }

    fn into_trajectory(mut self, v: &Value, record: &RawRecord, id: String) -> Trajectory {
        let unanswered = unlink_unanswered_calls(&mut self.content, |_| false);
        let tools = v["tools"].as_array().cloned().unwrap_or_default();
        let mut traj = chat_trajectory(
            "swe-agent",
            record,
            &Node::from_value(v),
            id,
            self.content,
            tools,
            &["trajectory", "messages", "history", "tools", "attempts"],
        );
        let d = &mut traj.details;
        let mut source = crate::formats::kit::source_details(
            "swe-agent",
            record,
            json!({"id": v["id"].as_str(), "instance_id": v["instance_id"].as_str()}),
        );
        // A retry run's `.traj` is its chosen attempt, with every attempt in `attempts`: the
        // others are runs not taken.
        let attempts = v["attempts"].as_array().map_or(0, Vec::len) as u64;
        self.left.lines += attempts.saturating_sub(1);
        self.left.place = "details.swe_agent".to_owned();
        self.left.add_to(&mut source);
        d.insert("source".into(), source);
        let exit_status = v["info"]["exit_status"]
            .as_str()
            .or(v["exit_status"].as_str());
        let verdict = [("target", &v["target"]), ("resolved", &v["resolved"])]
            .into_iter()
            .find_map(|(k, b)| b.as_bool().map(|b| (k, b)));
        if let Some((key, passed)) = verdict {
            let mut more = JsonObject::new();
            if let Some(status) = exit_status {
                more.insert("exit_status".into(), status.into());
            }
            d.insert("outcome".into(), verdict_outcome(key, passed, more));
        } else if let Some(status) = exit_status {
            d.insert(
                "outcome".into(),
                json!({"status": "unknown", "native": {"exit_status": status}}),
            );
        }
        let mut extra = JsonObject::new();
        if let Some(p) = self.system_prompt {
            extra.insert("system_prompt".into(), p.into());
        }
        if self.demonstrations > 0 {
            extra.insert("demonstration_messages".into(), self.demonstrations.into());
        }
        if !self.excluded.is_empty() {
            extra.insert("excluded_from_training".into(), json!(self.excluded));
        }
        if !self.step_details.is_empty() {
            extra.insert("steps".into(), Value::Array(self.step_details));
        }
        if let Some(attempts) = v["attempts"].as_array() {
            extra.insert("attempts".into(), attempts.len().into());
        }
        if !unanswered.is_empty() {
            extra.insert("unanswered_calls".into(), Value::Array(unanswered));
        }
        extend_details(d, "swe_agent", extra);
        traj
    }
}

fn with_name(mut step: Step, name: Option<String>) -> Step {
    if let Step::TextObservation(o) = &mut step {
        o.name = name;
    }
    step
}

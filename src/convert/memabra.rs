//! memabra task-level traces: one trajectory per record. Events, in timestamp order, drive the
//! steps; when no event records execution, the routing decisions do. The mapping, including the
//! payload keys read (memabra does not publish payload shapes), is in the README ("memabra").

use std::collections::{HashMap, HashSet};

use serde_json::{json, Map, Value};

use super::{first_present, has_keys, source_details, value_text, Converter};
use crate::ingest::RawRecord;
use crate::model::links::unlink_unanswered;
use crate::model::{AdpVersion, JsonObject, Step, Trajectory};
use crate::validate::check::check_raw;
use crate::validate::Diagnostic;

/// Reads memabra trajectories.
pub struct Memabra;

/// Payload keys read for each purpose, first present wins.
const TOOL_NAME: &[&str] = &["tool_name", "tool", "name", "tool_id"];
const TOOL_ARGS: &[&str] = &["arguments", "args", "input", "params"];
const RESULT_TEXT: &[&str] = &["output", "result", "content", "text"];
const SKILL_ID: &[&str] = &["skill_id", "id", "name"];
const SKILL_TEXT: &[&str] = &["content", "instructions", "summary", "text"];
const MEMORY_IDS: &[&str] = &["memory_ids", "ids", "memory_id"];
const MEMORY_TEXT: &[&str] = &["content", "memories", "text", "summary"];
const USER_TEXT: &[&str] = &["text", "message", "content", "clarification", "correction"];
const ANSWER_TEXT: &[&str] = &["response", "answer", "final_answer", "output"];

impl Converter for Memabra {
    fn name(&self) -> &'static str {
        "memabra"
    }

    fn description(&self) -> &'static str {
        "memabra task traces: task, decisions, events, outcome, reward components"
    }

    fn sniff(&self, first: &Value) -> bool {
        has_keys(first, &["trajectory_id", "task", "decisions", "events"])
    }

    fn convert(
        &self,
        record: &RawRecord,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        let value = check_raw(record, "memabra", true)?;
        Ok(vec![(to_trajectory(&value, record), AdpVersion::V1_5)])
    }
}

/// Builds the steps from events, remembering which payload keys each mapped event consumed.
struct EventMapper<'a> {
    content: Vec<Step>,
    /// event index → consumed payload keys (events not in the map are unmapped).
    consumed: HashMap<usize, Vec<&'static str>>,
    /// tool_called event id → function name, for naming and linking results.
    calls: HashMap<&'a str, String>,
    answered: HashSet<&'a str>,
    open_calls: Vec<&'a str>,
    decisions: &'a [Value],
    used_decisions: HashSet<usize>,
}

impl<'a> EventMapper<'a> {
    /// The rationale of the first unused decision of `types` that selects one of `ids`, or
    /// else the first unused decision of those types.
    fn rationale(&mut self, types: &[&str], ids: &[&str]) -> Option<String> {
        let candidates: Vec<usize> = (0..self.decisions.len())
            .filter(|i| !self.used_decisions.contains(i))
            .filter(|&i| types.contains(&self.decisions[i]["decision_type"].as_str().unwrap_or("")))
            .collect();
        let selects = |i: &usize| {
            self.decisions[*i]["selected_ids"]
                .as_array()
                .is_some_and(|sel| sel.iter().any(|s| ids.iter().any(|id| s == id)))
        };
        let chosen = candidates
            .iter()
            .copied()
            .find(selects)
            .or_else(|| candidates.first().copied())?;
        self.used_decisions.insert(chosen);
        self.decisions[chosen]["rationale"]
            .as_str()
            .map(str::to_owned)
    }

    fn map(&mut self, index: usize, e: &'a Value) {
        let payload = &e["payload"];
        let event_id = e["event_id"].as_str().unwrap_or_default();
        match e["event_type"].as_str().unwrap_or_default() {
            "tool_called" => {
                let name = first_present(payload, TOOL_NAME);
                let function = name.map_or_else(|| "tool".to_owned(), |(_, v)| value_text(v));
                let mut used = vec![];
                if let Some((k, _)) = name {
                    used.push(k);
                }
                let kwargs = match first_present(payload, TOOL_ARGS) {
                    Some((k, Value::Object(args))) => {
                        used.push(k);
                        args.clone()
                    }
                    Some((k, other)) => {
                        used.push(k);
                        JsonObject::from_iter([(k.to_owned(), other.clone())])
                    }
                    None => JsonObject::new(),
                };
                let description = self.rationale(&["call_tool", "composite_action"], &[&function]);
                self.content
                    .push(Step::api(&function, kwargs, description).with_tool_call_id(event_id));
                self.calls.insert(event_id, function);
                self.open_calls.push(event_id);
                self.consumed.insert(index, used);
            }
            "tool_result" => {
                let parent = e["parent_event_id"]
                    .as_str()
                    .filter(|p| self.calls.contains_key(p));
                let call = parent.or_else(|| {
                    self.open_calls
                        .iter()
                        .rev()
                        .find(|c| !self.answered.contains(*c))
                        .copied()
                });
                let (text, used) = match first_present(payload, RESULT_TEXT) {
                    Some((k, v)) => (value_text(v), vec![k]),
                    None => (payload.to_string(), vec!["*"]),
                };
                let name = call.and_then(|c| self.calls.get(c).cloned());
                let mut step = Step::environment_text(name, text);
                if let Some(c) = call.filter(|c| !self.answered.contains(*c)) {
                    self.answered.insert(c);
                    step = step.with_tool_call_id(c);
                }
                self.content.push(step);
                self.consumed.insert(index, used);
            }
            "skill_loaded" | "memory_injected" => {
                let skill = e["event_type"] == "skill_loaded";
                let (function, id_keys, text_keys, decision) = if skill {
                    ("load_skill", SKILL_ID, SKILL_TEXT, "load_skill")
                } else {
                    ("inject_memory", MEMORY_IDS, MEMORY_TEXT, "inject_memory")
                };
                let mut used = vec![];
                let mut kwargs = JsonObject::new();
                let mut ids: Vec<String> = vec![];
                if let Some((k, v)) = first_present(payload, id_keys) {
                    used.push(k);
                    kwargs.insert(k.to_owned(), v.clone());
                    ids = match v {
                        Value::Array(items) => items.iter().map(value_text).collect(),
                        other => vec![value_text(other)],
                    };
                }
                let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                let description = self.rationale(&[decision, "composite_action"], &id_refs);
                self.content
                    .push(Step::api(function, kwargs, description).with_tool_call_id(event_id));
                let text = match first_present(payload, text_keys) {
                    Some((k, v)) => {
                        used.push(k);
                        value_text(v)
                    }
                    None => String::new(),
                };
                self.content.push(
                    Step::environment_text(Some(function.to_owned()), text)
                        .with_tool_call_id(event_id),
                );
                self.consumed.insert(index, used);
            }
            "user_clarified" | "user_corrected" => {
                if let Some((k, v)) = first_present(payload, USER_TEXT) {
                    self.content.push(Step::user_text(value_text(v)));
                    self.consumed.insert(index, vec![k]);
                }
            }
            "task_completed" => {
                if let Some((k, v)) = first_present(payload, ANSWER_TEXT) {
                    let description = self.rationale(&["direct_answer"], &[]);
                    self.content.push(Step::message(value_text(v), description));
                    self.consumed.insert(index, vec![k]);
                }
            }
            _ => {}
        }
    }
}

/// Steps from the decisions alone, for traces whose events record no execution.
fn decision_steps(decisions: &[Value]) -> Vec<Step> {
    decisions
        .iter()
        .map(|d| {
            let rationale = d["rationale"].as_str().unwrap_or_default().to_owned();
            let kind = d["decision_type"].as_str().unwrap_or_default();
            match kind {
                // The trace records no other text for an answer or a question.
                "direct_answer" | "clarify" => Step::message(rationale, None),
                _ => {
                    let kwargs: JsonObject = d
                        .as_object()
                        .into_iter()
                        .flatten()
                        .filter(|(k, _)| {
                            !matches!(k.as_str(), "decision_type" | "rationale" | "step")
                        })
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    Step::api(kind, kwargs, Some(rationale))
                }
            }
        })
        .collect()
}

fn to_trajectory(v: &Value, record: &RawRecord) -> Trajectory {
    let id = v["trajectory_id"].as_str().unwrap_or_default().to_owned();
    let task = &v["task"];
    let decisions = v["decisions"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let mut events: Vec<(usize, &Value)> = v["events"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .collect();
    // Timestamps are ISO 8601 in one trace; equal ones keep their recorded order.
    events.sort_by(|a, b| {
        a.1["timestamp"]
            .as_str()
            .cmp(&b.1["timestamp"].as_str())
            .then(a.0.cmp(&b.0))
    });
    let mut mapper = EventMapper {
        content: vec![Step::user_text(task["input"].as_str().unwrap_or_default())],
        consumed: HashMap::new(),
        calls: HashMap::new(),
        answered: HashSet::new(),
        open_calls: Vec::new(),
        decisions,
        used_decisions: HashSet::new(),
    };
    for &(index, e) in &events {
        mapper.map(index, e);
    }
    let executed = mapper.consumed.len();
    let mut content = mapper.content;
    unlink_unanswered(&mut content);
    if executed == 0 {
        content.extend(decision_steps(decisions));
    }

    let mut native = Map::new();
    for key in ["task", "context_snapshot", "candidate_sets", "decisions"] {
        native.insert(key.into(), v[key].clone());
    }
    native.insert(
        "events".into(),
        Value::Array(
            events
                .iter()
                .map(|&(index, e)| event_rest(e, mapper.consumed.get(&index)))
                .collect(),
        ),
    );
    for (k, value) in v.as_object().into_iter().flatten() {
        if !matches!(
            k.as_str(),
            "trajectory_id"
                | "task"
                | "context_snapshot"
                | "candidate_sets"
                | "decisions"
                | "events"
                | "outcome"
                | "reward"
        ) {
            native.insert(k.clone(), value.clone());
        }
    }
    let mut details = JsonObject::new();
    details.insert(
        "source".into(),
        source_details(
            "memabra",
            record,
            json!({"trajectory_id": id, "task_id": task["task_id"]}),
        ),
    );
    details.insert("outcome".into(), outcome(v));
    details.insert("reward".into(), v["reward"]["total"].clone());
    details.insert(
        "reward_components".into(),
        v["reward"]["components"].clone(),
    );
    details.insert("memabra".into(), Value::Object(native));
    Trajectory::new(id, content, details)
}

/// `details.outcome` of a trace: its `outcome.status`, and the outcome as `native` (also used by
/// `join`'s memabra preset).
pub(crate) fn outcome(trace: &Value) -> Value {
    json!({"status": trace["outcome"]["status"], "native": trace["outcome"]})
}

/// An event as kept in `details.memabra.events`: whole when it made no step; otherwise without
/// the payload keys its step holds (`mapped: true` marks it).
fn event_rest(e: &Value, consumed: Option<&Vec<&'static str>>) -> Value {
    let Some(consumed) = consumed else {
        return e.clone();
    };
    let mut out = e.clone();
    out["mapped"] = Value::Bool(true);
    if consumed.contains(&"*") {
        out["payload"] = json!({});
    } else if let Some(payload) = out["payload"].as_object_mut() {
        for k in consumed {
            payload.remove(*k);
        }
    }
    out
}

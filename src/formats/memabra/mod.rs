//! memabra task-level traces: one trajectory per record. Events, in timestamp order, drive the
//! steps; when no event records execution, the routing decisions do. The mapping, including the
//! payload keys read (memabra does not publish payload shapes), is in docs/formats/memabra.md.

pub mod side;

use serde_json::{json, Value};

use crate::convert::{
    Converter, FormatOption, FormatOptions, LeftOut, OptionValue, Partial, PartialSink,
};
use crate::formats::kit::{has_keys, source_details};
use crate::formats::Format;
use crate::ingest::RawRecord;
use crate::json::Node;
use crate::model::links::unlink_unanswered;
use crate::model::{JsonObject, Step, Trajectory};
use crate::validate::check::check_raw_node;
use crate::validate::schemas::{Leniency, RawSchema};
use crate::validate::Diagnostic;

/// The JSON Schema of raw `memabra` records (`validate --schema memabra`).
pub static SCHEMA: RawSchema = RawSchema::new(
    "memabra",
    "trajectory_id",
    &[
        (
            "https://trajkit.invalid/schemas/raw/memabra/trajectory.schema.json",
            include_str!("../../../schemas/raw/memabra/trajectory.schema.json"),
        ),
        (
            "https://trajkit.invalid/schemas/raw/memabra/event.schema.json",
            include_str!("../../../schemas/raw/memabra/event.schema.json"),
        ),
        (
            "https://trajkit.invalid/schemas/raw/memabra/candidate_object.schema.json",
            include_str!("../../../schemas/raw/memabra/candidate_object.schema.json"),
        ),
    ],
    &[Leniency {
    pointer: "/properties/decisions/items/properties",
    key: "selected_payloads",
    schema: "{}",
    why: "memabra's own demo trajectories carry selected_payloads in decisions, which its schema forbids",
}],
);

/// `memabra_decisions`: when no event of a trace records execution, build its steps from the
/// routing decisions (else such a trace keeps only its task observation).
pub const DECISIONS: FormatOption = FormatOption {
    key: "memabra_decisions",
    flag: "memabra-decisions",
    default: OptionValue::Bool(true),
    value_name: "BOOL",
    help: "memabra: when no event of a trace records execution, build its steps from the routing decisions",
};

/// Reads memabra trajectories.
pub struct Memabra;

/// The format in the registry: its converter, and its side format for `join`.
pub const FORMAT: Format = Format {
    converter: &Memabra,
    side: Some(&side::MemabraSide),
};

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

    fn raw_schemas(&self) -> &'static [&'static RawSchema] {
        static SCHEMAS: [&RawSchema; 1] = [&SCHEMA];
        &SCHEMAS
    }

    fn options(&self) -> &'static [&'static FormatOption] {
        &[&DECISIONS]
    }

    fn description(&self) -> &'static str {
        "memabra task traces: task, decisions, events, outcome, reward components"
    }

    fn sniff(&self, first: &Value) -> bool {
        has_keys(first, &["trajectory_id", "task", "decisions", "events"])
    }

    fn each_partial(
        &self,
        record: &RawRecord,
        map: &FormatOptions,
        to: &mut PartialSink<'_>,
    ) -> Option<Result<(), Vec<Diagnostic>>> {
        let mut slow = None;
        let node = check_raw_node(record, &SCHEMA, true, &mut slow);
        Some(node.and_then(|n| to(to_partial(n, record, map))))
    }
}

/// Builds the steps from events, remembering which payload keys each mapped event consumed.
/// A trace has a few dozen events at most: lists are searched rather than hashed.
struct EventMapper<'n, 'a> {
    content: Vec<Step>,
    /// By event index: the consumed payload keys (`None`: the event is unmapped).
    consumed: Vec<Option<Vec<&'static str>>>,
    /// tool_called event id → function name, for naming and linking results (the last call of
    /// an id wins).
    calls: Vec<(&'n str, String)>,
    answered: Vec<&'n str>,
    open_calls: Vec<&'n str>,
    decisions: &'n [Node<'a>],
    /// By decision index: already used for a step's description.
    used_decisions: Vec<bool>,
}

impl<'n, 'a> EventMapper<'n, 'a> {
    /// The rationale of the first unused decision of `types` that selects one of `ids`, or
    /// else the first unused decision of those types.
    fn rationale(&mut self, types: &[&str], ids: &[&str]) -> Option<String> {
        let candidates: Vec<usize> = (0..self.decisions.len())
            .filter(|&i| !self.used_decisions[i])
            .filter(|&i| types.contains(&self.decisions[i]["decision_type"].as_str().unwrap_or("")))
            .collect();
        let selects = |i: &usize| {
            self.decisions[*i]["selected_ids"]
                .as_array()
                .is_some_and(|sel| {
                    sel.iter()
                        .any(|s| ids.iter().any(|id| s.as_str() == Some(id)))
                })
        };
        let chosen = candidates
            .iter()
            .copied()
            .find(selects)
            .or_else(|| candidates.first().copied())?;
        self.used_decisions[chosen] = true;
        self.decisions[chosen]["rationale"]
            .as_str()
            .map(str::to_owned)
    }

    /// The function of tool call `id`.
    fn function(&self, id: &str) -> Option<&str> {
        self.calls
            .iter()
            .rev()
            .find(|(call, _)| *call == id)
            .map(|(_, f)| f.as_str())
    }

    fn map(&mut self, index: usize, e: &'n Node<'a>) {
        let payload = &e["payload"];
        let event_id = e["event_id"].as_str().unwrap_or_default();
        let event_type = e["event_type"].as_str().unwrap_or_default();
        match event_type {
            "tool_called" => {
                let name = payload.first_present(TOOL_NAME);
                let function = name.map_or_else(|| "tool".to_owned(), |(_, v)| v.text());
                let mut used = vec![];
                if let Some((k, _)) = name {
                    used.push(k);
                }
                let kwargs = match payload.first_present(TOOL_ARGS) {
                    Some((k, args @ Node::Object(_))) => {
                        used.push(k);
                        args.to_map()
                    }
                    Some((k, other)) => {
                        used.push(k);
                        JsonObject::from_iter([(k.to_owned(), other.to_value())])
                    }
                    None => JsonObject::new(),
                };
                let description = self.rationale(&["call_tool", "composite_action"], &[&function]);
                self.content
                    .push(Step::api(&function, kwargs, description).with_tool_call_id(event_id));
                self.calls.push((event_id, function));
                self.open_calls.push(event_id);
                self.consumed[index] = Some(used);
            }
            "tool_result" => {
                let parent = e["parent_event_id"]
                    .as_str()
                    .filter(|p| self.function(p).is_some());
                let call = parent.or_else(|| {
                    self.open_calls
                        .iter()
                        .rev()
                        .find(|c| !self.answered.contains(*c))
                        .copied()
                });
                let (text, used) = match payload.first_present(RESULT_TEXT) {
                    Some((k, v)) => (v.text(), vec![k]),
                    None => (payload.to_string(), vec!["*"]),
                };
                let name = call.and_then(|c| self.function(c)).map(str::to_owned);
                let mut step = Step::environment_text(name, text);
                if let Some(c) = call.filter(|c| !self.answered.contains(c)) {
                    self.answered.push(c);
                    step = step.with_tool_call_id(c);
                }
                self.content.push(step);
                self.consumed[index] = Some(used);
            }
            "skill_loaded" | "memory_injected" => {
                let (function, id_keys, text_keys, decision) = if event_type == "skill_loaded" {
                    ("load_skill", SKILL_ID, SKILL_TEXT, "load_skill")
                } else {
                    ("inject_memory", MEMORY_IDS, MEMORY_TEXT, "inject_memory")
                };
                let mut used = vec![];
                let mut kwargs = JsonObject::new();
                let mut ids: Vec<String> = vec![];
                if let Some((k, v)) = payload.first_present(id_keys) {
                    used.push(k);
                    kwargs.insert(k.to_owned(), v.to_value());
                    ids = match v {
                        Node::Array(items) => items.iter().map(Node::text).collect(),
                        other => vec![other.text()],
                    };
                }
                let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                let description = self.rationale(&[decision, "composite_action"], &id_refs);
                self.content
                    .push(Step::api(function, kwargs, description).with_tool_call_id(event_id));
                let text = match payload.first_present(text_keys) {
                    Some((k, v)) => {
                        used.push(k);
                        v.text()
                    }
                    None => String::new(),
                };
                self.content.push(
                    Step::environment_text(Some(function.to_owned()), text)
                        .with_tool_call_id(event_id),
                );
                self.consumed[index] = Some(used);
            }
            "user_clarified" | "user_corrected" => {
                if let Some((k, v)) = payload.first_present(USER_TEXT) {
                    self.content.push(Step::user_text(v.text()));
                    self.consumed[index] = Some(vec![k]);
                }
            }
            "task_completed" => {
                if let Some((k, v)) = payload.first_present(ANSWER_TEXT) {
                    let description = self.rationale(&["direct_answer"], &[]);
                    self.content.push(Step::message(v.text(), description));
                    self.consumed[index] = Some(vec![k]);
                }
            }
            _ => {}
        }
    }
}

/// Steps from the decisions alone, for traces whose events record no execution.
fn decision_steps(decisions: &[Node<'_>]) -> Vec<Step> {
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
                            !matches!(k.as_ref(), "decision_type" | "rationale" | "step")
                        })
                        .map(|(k, v)| (k.as_ref().to_owned(), v.to_value()))
                        .collect();
                    Step::api(kind, kwargs, Some(rationale))
                }
            }
        })
        .collect()
}

/// The trajectory of a trace; the trace's native data (task, context, candidates, decisions,
/// events, outcome, reward) stays in the tail.
fn to_partial<'a>(mut v: Node<'a>, record: &RawRecord, map: &FormatOptions) -> Partial<'a> {
    let id = v["trajectory_id"].as_str().unwrap_or_default().to_owned();
    let task_id = v["task"]["task_id"].to_value();
    // Steps first, reading the trace; then its parts move into the details.
    let (content, consumed, order) = {
        let decisions = v["decisions"].as_array().unwrap_or(&[]);
        let mut events: Vec<(usize, &Node<'a>)> = v["events"]
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
            content: vec![Step::user_text(
                v["task"]["input"].as_str().unwrap_or_default(),
            )],
            consumed: vec![None; events.len()],
            calls: Vec::new(),
            answered: Vec::new(),
            open_calls: Vec::new(),
            decisions,
            used_decisions: vec![false; decisions.len()],
        };
        for &(index, e) in &events {
            mapper.map(index, e);
        }
        let executed = mapper.consumed.iter().flatten().count();
        let mut content = mapper.content;
        unlink_unanswered(&mut content);
        if executed == 0 && map.bool(&DECISIONS) {
            content.extend(decision_steps(decisions));
        }
        let order: Vec<usize> = events.iter().map(|&(index, _)| index).collect();
        (content, mapper.consumed, order)
    };

    let left = left_out(&v, &consumed, record.provenance.line);
    let outcome = outcome(&v["outcome"]);
    let reward = v["reward"]["total"].clone();
    let components = v["reward"]["components"].clone();
    let mut native = Node::Object(Vec::new());
    for key in ["task", "context_snapshot", "candidate_sets", "decisions"] {
        native.insert(key, v.take(key));
    }
    let mut events = match v.take("events") {
        Node::Array(events) => events,
        _ => Vec::new(),
    };
    native.insert(
        "events",
        Node::Array(
            order
                .iter()
                .map(|&index| {
                    let event = events.get_mut(index).map(std::mem::take);
                    event_rest(
                        event.unwrap_or_default(),
                        consumed.get(index).and_then(Option::as_ref),
                    )
                })
                .collect(),
        ),
    );
    if let Node::Object(entries) = v {
        for (k, value) in entries {
            if !matches!(
                k.as_ref(),
                "trajectory_id"
                    | "task"
                    | "context_snapshot"
                    | "candidate_sets"
                    | "decisions"
                    | "events"
                    | "outcome"
                    | "reward"
            ) {
                native.insert(k, value);
            }
        }
    }
    let mut details = JsonObject::new();
    let mut source = source_details(
        "memabra",
        record,
        json!({"trajectory_id": id, "task_id": task_id}),
    );
    left.add_to(&mut source);
    details.insert("source".into(), source);
    Partial {
        trajectory: Trajectory::new(id, content, details),
        tail: vec![
            ("outcome", outcome),
            ("reward", reward),
            ("reward_components", components),
            ("memabra", native),
        ],
    }
}

/// What the steps leave out of trace `v` (on `line`), by what each event became (`consumed`,
/// by event index): an event of a type that holds text (a user's reply, the answer) whose
/// payload has a text under none of the keys read is a value unmapped; any other event that
/// made no step (`candidates_recalled`, `reward_computed`, a completion without an answer, ...)
/// a line left out. Both are kept whole in `details.memabra.events`.
fn left_out(v: &Node<'_>, consumed: &[Option<Vec<&'static str>>], line: u64) -> LeftOut {
    let mut left = LeftOut::new("details.memabra");
    let events = v["events"].as_array().unwrap_or(&[]);
    for (index, e) in events.iter().enumerate() {
        if consumed.get(index).is_some_and(Option::is_some) {
            continue;
        }
        let has_text = e["payload"]
            .as_object()
            .is_some_and(|p| p.iter().any(|(_, v)| v.as_str().is_some()));
        match e["event_type"].as_str() {
            Some(kind @ ("user_clarified" | "user_corrected" | "task_completed")) if has_text => {
                let reason = format!("a {kind} event whose payload has no text this reader reads");
                left.unmapped(line, &format!("/events/{index}/payload"), reason);
            }
            _ => left.lines += 1,
        }
    }
    left
}

/// `details.outcome` of a trace from its `outcome`: the `status`, and the outcome as `native`
/// (also used by the side format, [`side`]).
pub(crate) fn outcome<'a>(native: &Node<'a>) -> Node<'a> {
    Node::object([
        ("status", native["status"].clone()),
        ("native", native.clone()),
    ])
}

/// An event as kept in `details.memabra.events`: whole when it made no step; otherwise without
/// the payload keys its step holds (`mapped: true` marks it).
fn event_rest<'a>(mut e: Node<'a>, consumed: Option<&Vec<&'static str>>) -> Node<'a> {
    let Some(consumed) = consumed else {
        return e;
    };
    e.insert("mapped", Node::Bool(true));
    if consumed.contains(&"*") {
        e.insert("payload", Node::Object(Vec::new()));
    } else if let Some(payload) = e.get_mut("payload") {
        for k in consumed {
            payload.remove(k);
        }
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memabra_refs_resolve_and_leniency_admits_selected_payloads() {
        let decision = serde_json::json!({
            "step": 1, "decision_type": "call_tool", "selected_ids": ["t"], "rationale": "r",
            "selected_payloads": [{"id": "t"}]
        });
        let mut traj = serde_json::json!({
            "trajectory_id": "x",
            "task": {"task_id": "t", "input": "i", "channel": "cli", "created_at": "2026-01-01T00:00:00Z"},
            "context_snapshot": {"conversation_summary": "", "environment_summary": ""},
            "candidate_sets": {"memory": [], "skill": [], "tool": [{"id": 5}]},
            "decisions": [decision],
            "events": [],
            "outcome": {"status": "success", "steps": 1, "latency_ms": 3, "user_corrections": 0},
            "reward": {"total": 1.0, "components": {"task_success": 1, "retrieval_hit": 0, "tool_error": 0, "user_correction": 0, "latency": 0, "context_cost": 0, "useful_reuse": 0}}
        });
        let strict = SCHEMA.validator(false);
        let lenient = SCHEMA.validator(true);
        let pointers = |v: &jsonschema::Validator, t: &Value| -> Vec<String> {
            v.iter_errors(t)
                .map(|e| e.instance_path().as_str().to_owned())
                .collect()
        };
        // The candidate is checked through the relative $ref: its id must be a string.
        assert!(pointers(strict, &traj).contains(&"/candidate_sets/tool/0".to_owned()));
        traj["candidate_sets"]["tool"] = serde_json::json!([]);
        assert_eq!(pointers(strict, &traj), vec!["/decisions/0".to_owned()]);
        assert!(pointers(lenient, &traj).is_empty());
    }
}

//! Reflexion iteration records (aiwg Ralph reflection memory): one record per `(loop_id,
//! iteration)`, one trajectory per record. The mapping is in docs/formats/reflexion.md.

pub mod side;

use serde_json::{json, Value};

use crate::convert::{Converter, FormatOption, FormatOptions, OptionValue, Partial, PartialSink};
use crate::formats::kit::{has_keys, source_details};
use crate::formats::Format;
use crate::ingest::RawRecord;
use crate::json::Node;
use crate::model::{JsonObject, Step, Trajectory};
use crate::validate::check::check_raw_node;
use crate::validate::schemas::RawSchema;
use crate::validate::Diagnostic;

/// The JSON Schema of raw `reflexion` records (`validate --schema reflexion`).
pub static SCHEMA: RawSchema = RawSchema::new(
    "reflexion",
    "loop_id",
    &[(
        "https://trajkit.invalid/schemas/raw/reflexion.schema.json",
        include_str!("../../../schemas/raw/reflexion.schema.json"),
    )],
    &[],
);

/// `reflexion_closing_message`: close each attempt with a `message_action` holding the actor's
/// `rationale` and `strategy` (else both stay in `details.reflexion`).
pub const CLOSING_MESSAGE: FormatOption = FormatOption {
    key: "reflexion_closing_message",
    flag: "reflexion-closing-message",
    default: OptionValue::Bool(true),
    value_name: "BOOL",
    help: "Reflexion: close each attempt with a message action holding the actor's rationale and strategy",
};

/// Reads Reflexion records.
pub struct Reflexion;

/// The format in the registry: its converter, and its side format for `join`.
pub const FORMAT: Format = Format {
    converter: &Reflexion,
    side: Some(&side::ReflexionSide),
};

impl Converter for Reflexion {
    fn name(&self) -> &'static str {
        "reflexion"
    }

    fn raw_schemas(&self) -> &'static [&'static RawSchema] {
        static SCHEMAS: [&RawSchema; 1] = [&SCHEMA];
        &SCHEMAS
    }

    fn options(&self) -> &'static [&'static FormatOption] {
        &[&CLOSING_MESSAGE]
    }

    fn description(&self) -> &'static str {
        "Reflexion iteration records: actor actions, evaluator output, self-reflection (aiwg Ralph)"
    }

    fn sniff(&self, first: &Value) -> bool {
        has_keys(
            first,
            &["loop_id", "iteration", "actor_output", "evaluator_output"],
        )
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

/// The trajectory id of iteration `iteration` of loop `loop_id` (the key `join` uses too).
pub fn trajectory_id(loop_id: &str, iteration: u64) -> String {
    format!("{loop_id}#{iteration}")
}

/// Builds the trajectory, moving the record's parts into steps and details (no copies of the
/// large ones: diffs, outputs, the evaluator's results, which stay in the tail).
fn to_partial<'a>(mut v: Node<'a>, record: &RawRecord, map: &FormatOptions) -> Partial<'a> {
    if !v.is_object() {
        return Partial {
            trajectory: Trajectory::new(String::new(), Vec::new(), JsonObject::new()),
            tail: Vec::new(),
        };
    }
    let loop_id = v["loop_id"].as_str().unwrap_or_default().to_owned();
    let iteration = v["iteration"].as_u64().unwrap_or_default();
    v.remove("loop_id");
    v.remove("iteration");
    let id = trajectory_id(&loop_id, iteration);
    let mut actor = take_object(v.remove("actor_output"));
    let evaluator = v.remove("evaluator_output").unwrap_or_default();
    let actions = actor["actions"].as_array().map_or(0, <[_]>::len);
    let mut content = Vec::with_capacity(actions + 3);
    if let Some(task) = take_string(v.remove("task_description")) {
        content.push(Step::user_text(task));
    }
    let mut stamps = Vec::new();
    if let Some(Node::Array(actions)) = actor.remove("actions") {
        for action in actions {
            let (step, stamp) = action_step(action);
            content.push(step);
            stamps.push(stamp);
        }
    }
    if map.bool(&CLOSING_MESSAGE) {
        content.push(Step::message(
            take_string(actor.remove("rationale")).unwrap_or_default(),
            take_string(actor.remove("strategy")),
        ));
    }
    content.push(Step::environment_text(
        Some("evaluator".to_owned()),
        render_evaluation(&evaluator),
    ));

    // Nothing is left out, so no `left_out` is written: the raw schema checks the type of every
    // key read, and what no step holds is kept in the tail below.
    let mut details = JsonObject::new();
    details.insert(
        "source".into(),
        source_details(
            "reflexion",
            record,
            json!({"loop_id": loop_id, "iteration": iteration}),
        ),
    );
    let mut tail = vec![("outcome", outcome(&evaluator))];
    if let Some(reward) = reward(&evaluator) {
        tail.push(("reward", reward.clone()));
    }
    let self_reflection = v.remove("self_reflection").unwrap_or_default();
    tail.push((
        "reflections",
        Node::Array(vec![reflection(self_reflection, &id, iteration)]),
    ));
    tail.push((
        "memory_metadata",
        v.remove("memory_metadata").unwrap_or_default(),
    ));
    // Everything else, so nothing is lost: timestamp, the structured evaluator output, actor
    // totals, action timestamps, performance delta, notes, unknown keys.
    let mut rest = v;
    rest.insert("evaluator_output", evaluator);
    if let Node::Object(entries) = actor {
        for (k, value) in entries {
            rest.insert(format!("actor_{k}"), value);
        }
    }
    if stamps.iter().any(|s| !s.is_null()) {
        rest.insert("action_timestamps", Node::Array(stamps));
    }
    tail.push(("reflexion", rest));
    Partial {
        trajectory: Trajectory::new(id, content, details),
        tail,
    }
}

/// The object `v` holds, or an empty one.
fn take_object(v: Option<Node<'_>>) -> Node<'_> {
    match v {
        Some(o @ Node::Object(_)) => o,
        _ => Node::Object(Vec::new()),
    }
}

fn take_string(v: Option<Node<'_>>) -> Option<String> {
    match v {
        Some(Node::String(s)) => Some(s.into_owned()),
        _ => None,
    }
}

/// A command or test run that is only a command becomes bash; anything else an api action named
/// by its type, with every other field (file path, changes, command, unknown keys) as arguments.
/// Returns the step and the action's timestamp (kept in details).
fn action_step(action: Node<'_>) -> (Step, Node<'_>) {
    let mut a = take_object(Some(action));
    let kind = take_string(a.remove("type")).unwrap_or_else(|| "other".to_owned());
    let description = take_string(a.remove("description"));
    let stamp = a.remove("timestamp").unwrap_or_default();
    let is_run = matches!(kind.as_str(), "command_execution" | "test_execution");
    let only_command = a.as_object().is_some_and(|entries| entries.len() == 1);
    let step = match a["command"].as_str() {
        Some(command) if is_run && only_command => Step::code("bash", command, description),
        _ => Step::api(kind, a.to_map(), description),
    };
    (step, stamp)
}

/// The evaluator's verdict, tool results, errors and metrics as text (built piece by piece:
/// the tool outputs are the long part).
fn render_evaluation(e: &Node<'_>) -> String {
    let passed = if e["passed"].as_bool() == Some(true) {
        "passed"
    } else {
        "failed"
    };
    let mut out = String::new();
    out.extend([
        "Evaluation (",
        e["verification_type"].as_str().unwrap_or("unknown"),
        "): ",
        passed,
    ]);
    for r in e["results"].as_array().into_iter().flatten() {
        out.extend([
            "\n\n[",
            r["tool"].as_str().unwrap_or("?"),
            "] ",
            r["status"].as_str().unwrap_or("?"),
        ]);
        if let Some(code) = r["exit_code"].as_i64() {
            out.extend([", exit code ", &code.to_string()]);
        }
        for stream in ["stdout", "stderr"] {
            if let Some(text) = r[stream].as_str().filter(|t| !t.is_empty()) {
                out.extend(["\n", stream, ":\n", text]);
            }
        }
    }
    let errors = e["errors"].as_array().unwrap_or(&[]);
    if !errors.is_empty() {
        out.push_str("\n\nErrors:");
        for err in errors {
            let file = err["file"].as_str().unwrap_or_default();
            let line = err["line"].as_i64().map(|l| format!(":{l}"));
            out.extend(["\n- ", err["type"].as_str().unwrap_or("error")]);
            if !file.is_empty() || line.is_some() {
                out.extend([" at ", file, line.as_deref().unwrap_or_default()]);
            }
            out.extend([": ", err["message"].as_str().unwrap_or_default()]);
        }
    }
    if let Some(metrics) = e["metrics"].as_object().filter(|m| !m.is_empty()) {
        out.push_str("\n\nMetrics: ");
        for (i, (k, v)) in metrics.iter().enumerate() {
            let separator = if i > 0 { ", " } else { "" };
            out.extend([separator, k, "=", &v.to_string()]);
        }
    }
    out
}

/// `details.outcome` from an evaluator output: `success` when `passed` is true, else `failure`
/// (also used by the side format, [`side`]).
pub(crate) fn outcome<'a>(evaluator: &Node<'a>) -> Node<'a> {
    let status = if evaluator["passed"].as_bool() == Some(true) {
        "success"
    } else {
        "failure"
    };
    Node::object([
        ("status", Node::from(status)),
        (
            "native",
            Node::object([
                ("passed", evaluator["passed"].clone()),
                ("verification_type", evaluator["verification_type"].clone()),
            ]),
        ),
    ])
}

/// The evaluator's `reward_signal`, when it is a number.
pub(crate) fn reward<'n, 'a>(evaluator: &'n Node<'a>) -> Option<&'n Node<'a>> {
    evaluator.get("reward_signal").filter(|r| r.is_number())
}

/// The self-reflection in trajkit's reflection shape (see `schemas/details.schema.json`); keys
/// it does not normalize are moved over as they are (also used by the side format, [`side`]).
pub(crate) fn reflection<'a>(r: Node<'a>, key: &str, iteration: u64) -> Node<'a> {
    let mut r = take_object(Some(r));
    let mut credit = take_object(r.remove("credit_assignment"));
    let mut out = Node::object([
        ("source", Node::from("reflexion")),
        ("key", Node::from(key.to_owned())),
        ("iteration", Node::from(iteration)),
        ("text", r.remove("reflection_text").unwrap_or_default()),
        (
            "lessons",
            r.remove("lessons_learned")
                .unwrap_or(Node::Array(Vec::new())),
        ),
        (
            "insights",
            r.remove("actionable_insights")
                .unwrap_or(Node::Array(Vec::new())),
        ),
        (
            "root_cause",
            credit.remove("root_cause").unwrap_or_default(),
        ),
        (
            "failure_category",
            credit.remove("failure_category").unwrap_or_default(),
        ),
        ("confidence", r.remove("confidence").unwrap_or_default()),
    ]);
    for part in [r, credit] {
        if let Node::Object(entries) = part {
            for (k, v) in entries {
                out.insert(k, v);
            }
        }
    }
    out
}

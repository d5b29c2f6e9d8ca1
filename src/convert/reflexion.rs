//! Reflexion iteration records (aiwg Ralph reflection memory): one record per `(loop_id,
//! iteration)`, one trajectory per record. The mapping is in the README ("Reflexion").

use serde_json::{json, Map, Value};

use super::{has_keys, source_details, Converter};
use crate::ingest::RawRecord;
use crate::model::{AdpVersion, JsonObject, Step, Trajectory};
use crate::validate::check::check_raw;
use crate::validate::Diagnostic;

/// Reads Reflexion records.
pub struct Reflexion;

impl Converter for Reflexion {
    fn name(&self) -> &'static str {
        "reflexion"
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

    fn convert(
        &self,
        record: &RawRecord,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        let value = check_raw(record, "reflexion", true)?;
        Ok(vec![(to_trajectory(value, record), AdpVersion::V1_5)])
    }
}

/// The trajectory id of iteration `iteration` of loop `loop_id` (the key `join` uses too).
pub fn trajectory_id(loop_id: &str, iteration: u64) -> String {
    format!("{loop_id}#{iteration}")
}

/// Builds the trajectory, moving the record's parts into steps and details (no copies of the
/// large ones: diffs, outputs, the evaluator's results).
fn to_trajectory(value: Value, record: &RawRecord) -> Trajectory {
    let Value::Object(mut v) = value else {
        return Trajectory::new(String::new(), Vec::new(), JsonObject::new());
    };
    let loop_id = v["loop_id"].as_str().unwrap_or_default().to_owned();
    let iteration = v["iteration"].as_u64().unwrap_or_default();
    v.remove("loop_id");
    v.remove("iteration");
    let id = trajectory_id(&loop_id, iteration);
    let mut actor = take_object(v.remove("actor_output"));
    let evaluator = v.remove("evaluator_output").unwrap_or_default();
    let mut content = Vec::new();
    if let Some(Value::String(task)) = v.remove("task_description") {
        content.push(Step::user_text(task));
    }
    let mut stamps = Vec::new();
    if let Some(Value::Array(actions)) = actor.remove("actions") {
        for action in actions {
            let (step, stamp) = action_step(action);
            content.push(step);
            stamps.push(stamp);
        }
    }
    content.push(Step::message(
        take_string(actor.remove("rationale")).unwrap_or_default(),
        take_string(actor.remove("strategy")),
    ));
    content.push(Step::environment_text(
        Some("evaluator".to_owned()),
        render_evaluation(&evaluator),
    ));

    let mut details = JsonObject::new();
    details.insert(
        "source".into(),
        source_details(
            "reflexion",
            record,
            json!({"loop_id": loop_id, "iteration": iteration}),
        ),
    );
    details.insert("outcome".into(), outcome(&evaluator));
    if let Some(reward) = reward(&evaluator) {
        details.insert("reward".into(), reward.clone());
    }
    let self_reflection = v.remove("self_reflection").unwrap_or_default();
    details.insert(
        "reflections".into(),
        json!([reflection(self_reflection, &id, iteration)]),
    );
    details.insert(
        "memory_metadata".into(),
        v.remove("memory_metadata").unwrap_or_default(),
    );
    // Everything else, so nothing is lost: timestamp, the structured evaluator output, actor
    // totals, action timestamps, performance delta, notes, unknown keys.
    let mut rest = v;
    rest.insert("evaluator_output".into(), evaluator);
    for (k, value) in actor {
        rest.insert(format!("actor_{k}"), value);
    }
    if stamps.iter().any(|s| !s.is_null()) {
        rest.insert("action_timestamps".into(), Value::Array(stamps));
    }
    details.insert("reflexion".into(), Value::Object(rest));
    Trajectory::new(id, content, details)
}

fn take_object(v: Option<Value>) -> Map<String, Value> {
    match v {
        Some(Value::Object(o)) => o,
        _ => Map::new(),
    }
}

fn take_string(v: Option<Value>) -> Option<String> {
    match v {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

/// A command or test run that is only a command becomes bash; anything else an api action named
/// by its type, with every other field (file path, changes, command, unknown keys) as arguments.
/// Returns the step and the action's timestamp (kept in details).
fn action_step(action: Value) -> (Step, Value) {
    let mut a = take_object(Some(action));
    let kind = take_string(a.remove("type")).unwrap_or_else(|| "other".to_owned());
    let description = take_string(a.remove("description"));
    let stamp = a.remove("timestamp").unwrap_or_default();
    let is_run = matches!(kind.as_str(), "command_execution" | "test_execution");
    let step = match a.get("command").and_then(Value::as_str) {
        Some(command) if is_run && a.len() == 1 => Step::code("bash", command, description),
        _ => Step::api(kind, a, description),
    };
    (step, stamp)
}

/// The evaluator's verdict, tool results, errors and metrics as text.
fn render_evaluation(e: &Value) -> String {
    let mut out = format!(
        "Evaluation ({}): {}",
        e["verification_type"].as_str().unwrap_or("unknown"),
        if e["passed"].as_bool() == Some(true) {
            "passed"
        } else {
            "failed"
        }
    );
    for r in e["results"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "\n\n[{}] {}",
            r["tool"].as_str().unwrap_or("?"),
            r["status"].as_str().unwrap_or("?")
        ));
        if let Some(code) = r["exit_code"].as_i64() {
            out.push_str(&format!(", exit code {code}"));
        }
        for stream in ["stdout", "stderr"] {
            if let Some(text) = r[stream].as_str().filter(|t| !t.is_empty()) {
                out.push_str(&format!("\n{stream}:\n{text}"));
            }
        }
    }
    let errors = e["errors"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if !errors.is_empty() {
        out.push_str("\n\nErrors:");
        for err in errors {
            let mut place = err["file"].as_str().unwrap_or_default().to_owned();
            if let Some(line) = err["line"].as_i64() {
                place.push_str(&format!(":{line}"));
            }
            out.push_str(&format!(
                "\n- {}{}: {}",
                err["type"].as_str().unwrap_or("error"),
                if place.is_empty() {
                    String::new()
                } else {
                    format!(" at {place}")
                },
                err["message"].as_str().unwrap_or_default()
            ));
        }
    }
    if let Some(metrics) = e["metrics"].as_object().filter(|m| !m.is_empty()) {
        let parts: Vec<String> = metrics.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out.push_str(&format!("\n\nMetrics: {}", parts.join(", ")));
    }
    out
}

/// `details.outcome` from an evaluator output: `success` when `passed` is true, else `failure`
/// (also used by `join`'s reflexion preset).
pub(crate) fn outcome(evaluator: &Value) -> Value {
    let status = if evaluator["passed"].as_bool() == Some(true) {
        "success"
    } else {
        "failure"
    };
    json!({"status": status, "native": {
        "passed": evaluator["passed"],
        "verification_type": evaluator["verification_type"],
    }})
}

/// The evaluator's `reward_signal`, when it is a number.
pub(crate) fn reward(evaluator: &Value) -> Option<&Value> {
    evaluator.get("reward_signal").filter(|r| r.is_number())
}

/// The self-reflection in trajkit's reflection shape (see `schemas/details.schema.json`); keys
/// it does not normalize are moved over as they are (also used by `join`'s reflexion preset).
pub(crate) fn reflection(r: Value, key: &str, iteration: u64) -> Value {
    let mut r = take_object(Some(r));
    let mut credit = take_object(r.remove("credit_assignment"));
    let mut out = Map::new();
    out.insert("source".into(), json!("reflexion"));
    out.insert("key".into(), json!(key));
    out.insert("iteration".into(), json!(iteration));
    out.insert(
        "text".into(),
        r.remove("reflection_text").unwrap_or_default(),
    );
    out.insert(
        "lessons".into(),
        r.remove("lessons_learned").unwrap_or(json!([])),
    );
    out.insert(
        "insights".into(),
        r.remove("actionable_insights").unwrap_or(json!([])),
    );
    out.insert(
        "root_cause".into(),
        credit.remove("root_cause").unwrap_or_default(),
    );
    out.insert(
        "failure_category".into(),
        credit.remove("failure_category").unwrap_or_default(),
    );
    out.insert(
        "confidence".into(),
        r.remove("confidence").unwrap_or_default(),
    );
    out.extend(r);
    out.extend(credit);
    Value::Object(out)
}

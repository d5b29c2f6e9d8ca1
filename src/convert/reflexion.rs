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

/// Action fields that are the step's own (everything else becomes an argument).
const ACTION_OWN: &[&str] = &["type", "description", "timestamp"];

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
        Ok(vec![(to_trajectory(&value, record), AdpVersion::V1_5)])
    }
}

/// The trajectory id of iteration `iteration` of loop `loop_id` (the key `join` uses too).
pub fn trajectory_id(loop_id: &str, iteration: u64) -> String {
    format!("{loop_id}#{iteration}")
}

fn to_trajectory(v: &Value, record: &RawRecord) -> Trajectory {
    let loop_id = v["loop_id"].as_str().unwrap_or_default();
    let iteration = v["iteration"].as_u64().unwrap_or_default();
    let id = trajectory_id(loop_id, iteration);
    let actor = &v["actor_output"];
    let evaluator = &v["evaluator_output"];
    let mut content = Vec::new();
    if let Some(task) = v["task_description"].as_str() {
        content.push(Step::user_text(task));
    }
    let actions = actor["actions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    content.extend(actions.iter().map(action_step));
    content.push(Step::message(
        actor["rationale"].as_str().unwrap_or_default(),
        actor["strategy"].as_str().map(str::to_owned),
    ));
    content.push(Step::environment_text(
        Some("evaluator".to_owned()),
        render_evaluation(evaluator),
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
    let status = if evaluator["passed"].as_bool() == Some(true) {
        "success"
    } else {
        "failure"
    };
    details.insert(
        "outcome".into(),
        json!({"status": status, "native": {
            "passed": evaluator["passed"],
            "verification_type": evaluator["verification_type"],
        }}),
    );
    if let Some(reward) = evaluator.get("reward_signal").filter(|r| r.is_number()) {
        details.insert("reward".into(), reward.clone());
    }
    details.insert(
        "reflections".into(),
        json!([reflection(&v["self_reflection"], &id, iteration)]),
    );
    details.insert("memory_metadata".into(), v["memory_metadata"].clone());
    details.insert("reflexion".into(), Value::Object(native_rest(v, actions)));
    Trajectory::new(id, content, details)
}

/// A command or test run that is only a command becomes bash; anything else an api action named
/// by its type, with every other field (file path, changes, command, unknown keys) as arguments.
fn action_step(a: &Value) -> Step {
    let description = a["description"].as_str().map(str::to_owned);
    let kwargs: JsonObject = a
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !ACTION_OWN.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let is_run = matches!(
        a["type"].as_str(),
        Some("command_execution" | "test_execution")
    );
    match a["command"].as_str() {
        Some(command) if is_run && kwargs.len() == 1 => Step::code("bash", command, description),
        _ => Step::api(a["type"].as_str().unwrap_or("other"), kwargs, description),
    }
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

/// The self-reflection in trajkit's reflection shape (see `schemas/details.schema.json`); keys
/// it does not normalize are copied as they are.
fn reflection(r: &Value, key: &str, iteration: u64) -> Value {
    const NORMALIZED: &[&str] = &[
        "reflection_text",
        "lessons_learned",
        "actionable_insights",
        "confidence",
        "credit_assignment",
    ];
    let credit = &r["credit_assignment"];
    let mut out = json!({
        "source": "reflexion",
        "key": key,
        "iteration": iteration,
        "text": r["reflection_text"],
        "lessons": r.get("lessons_learned").cloned().unwrap_or(json!([])),
        "insights": r.get("actionable_insights").cloned().unwrap_or(json!([])),
        "root_cause": credit["root_cause"],
        "failure_category": credit["failure_category"],
        "confidence": r["confidence"],
    });
    for (k, v) in r.as_object().into_iter().flatten() {
        if !NORMALIZED.contains(&k.as_str()) {
            out[k] = v.clone();
        }
    }
    for (k, v) in credit.as_object().into_iter().flatten() {
        if !matches!(k.as_str(), "root_cause" | "failure_category") {
            out[k] = v.clone();
        }
    }
    out
}

/// Everything of the record not already in a step or in the keys above, so nothing is lost:
/// timestamps, the structured evaluator output, totals, performance delta, notes, unknown keys.
fn native_rest(v: &Value, actions: &[Value]) -> Map<String, Value> {
    let mapped = [
        "loop_id",
        "iteration",
        "task_description",
        "actor_output",
        "self_reflection",
        "memory_metadata",
    ];
    let mut rest: Map<String, Value> = v
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !mapped.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(actor) = v["actor_output"].as_object() {
        for (k, value) in actor {
            if !matches!(k.as_str(), "actions" | "rationale" | "strategy") {
                rest.insert(format!("actor_{k}"), value.clone());
            }
        }
    }
    let stamps: Vec<Value> = actions.iter().map(|a| a["timestamp"].clone()).collect();
    if stamps.iter().any(|s| !s.is_null()) {
        rest.insert("action_timestamps".into(), Value::Array(stamps));
    }
    rest
}

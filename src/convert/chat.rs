//! What chat-shaped formats (OpenAI chat, ShareGPT) share: ids, system turns, tool specs.

use serde_json::{json, Value};

use super::source_details;
use crate::ingest::RawRecord;
use crate::model::{JsonObject, Step, Trajectory};

/// The record's `id` (a string or number), else `{file name}#{index}` (stable across runs).
pub fn record_id(v: &Value, record: &RawRecord) -> String {
    match &v["id"] {
        Value::String(s) if !s.is_empty() => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => {
            let file = record
                .provenance
                .file
                .rsplit('/')
                .next()
                .unwrap_or_default();
            format!("{file}#{}", record.provenance.index)
        }
    }
}

/// A system prompt as a step: a text observation named `system` from the environment (the
/// form ADP's own chat datasets use).
pub fn system_step(text: String) -> Step {
    Step::environment_text(Some("system".to_owned()), text)
}

/// The names of tool specs, OpenAI style (`{type, function: {name}}`) or flat (`{name}`).
pub fn tool_names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().or(t["name"].as_str()))
        .map(str::to_owned)
        .collect()
}

/// Tool-call arguments as kwargs: a JSON object, or a string holding one.
pub fn parse_arguments(arguments: &Value) -> Result<JsonObject, String> {
    match arguments {
        Value::Object(o) => Ok(o.clone()),
        Value::String(s) if s.trim().is_empty() => Ok(JsonObject::new()),
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(o)) => Ok(o),
            Ok(_) => Err("arguments must encode a JSON object".to_owned()),
            Err(e) => Err(format!("arguments are not valid JSON: {e}")),
        },
        _ => Err("arguments must be a JSON object or a string holding one".to_owned()),
    }
}

/// The trajectory of a chat record of `format`: `details.source`, the tool specs in
/// `details.tools` and their names in `available_custom_tools`, and the record's keys not in
/// `mapped` under `details.<format>`.
pub fn chat_trajectory(
    format: &str,
    record: &RawRecord,
    value: &Value,
    id: String,
    content: Vec<Step>,
    tools: Vec<Value>,
    mapped: &[&str],
) -> Trajectory {
    let mut details = JsonObject::new();
    details.insert(
        "source".into(),
        source_details(format, record, json!({ "id": value.get("id") })),
    );
    if !tools.is_empty() {
        details.insert("tools".into(), Value::Array(tools.clone()));
    }
    let rest: JsonObject = value
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.as_str() != "id" && !mapped.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !rest.is_empty() {
        details.insert(format.into(), Value::Object(rest));
    }
    let mut traj = Trajectory::new(id, content, details);
    if !tools.is_empty() {
        traj.available_custom_tools = Some(tool_names(&tools));
    }
    traj
}

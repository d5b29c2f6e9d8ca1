//! What chat-shaped formats (OpenAI chat, ShareGPT) share: ids, system turns, tool specs.

use serde_json::Value;

use crate::ingest::RawRecord;
use crate::model::{JsonObject, Step};

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

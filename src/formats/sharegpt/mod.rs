//! ShareGPT conversations (`conversations` of `{from, value}`), including LLaMA-Factory's
//! `function_call` and `observation` turns and top-level `system` and `tools`. The mapping is in
//! docs/formats/sharegpt.md.

use serde_json::Value;

use crate::convert::{Converter, FormatOptions};
use crate::formats::chat::{
    chat_trajectory, extend_details, parse_arguments, record_id, system_step, unmapped_fields,
};
use crate::formats::kit::has_keys;
use crate::formats::Format;
use crate::ingest::RawRecord;
use crate::json::Node;
use crate::model::{AdpVersion, JsonObject, Step, Trajectory};
use crate::validate::check::check_raw_node;
use crate::validate::schemas::RawSchema;
use crate::validate::Diagnostic;

/// The JSON Schema of raw `sharegpt` records (`validate --schema sharegpt`).
pub static SCHEMA: RawSchema = RawSchema::new(
    "sharegpt",
    "id",
    &[(
        "https://trajkit.invalid/schemas/raw/sharegpt.schema.json",
        include_str!("../../../schemas/raw/sharegpt.schema.json"),
    )],
    &[],
);

/// Reads ShareGPT conversations.
pub struct ShareGpt;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &ShareGpt,
    side: None,
};

impl Converter for ShareGpt {
    fn name(&self) -> &'static str {
        "sharegpt"
    }

    fn raw_schemas(&self) -> &'static [&'static RawSchema] {
        static SCHEMAS: [&RawSchema; 1] = [&SCHEMA];
        &SCHEMAS
    }

    fn description(&self) -> &'static str {
        "ShareGPT conversations of {from, value}, with LLaMA-Factory function_call/observation turns"
    }

    fn sniff(&self, first: &Value) -> bool {
        first["conversations"]
            .as_array()
            .and_then(|c| c.first())
            .is_some_and(|t| has_keys(t, &["from", "value"]))
    }

    fn convert(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        let mut slow = None;
        let value = check_raw_node(record, &SCHEMA, true, &mut slow)?;
        let id = record_id(&value["id"], record);
        let diagnostic = |pointer: String, message: String| {
            vec![Diagnostic::error(
                &record.provenance,
                Some(&id),
                pointer,
                "chat-structure",
                message,
            )]
        };
        let tools: Vec<Value> = match &value["tools"] {
            Node::Array(t) => t.iter().map(Node::to_value).collect(),
            Node::String(s) if !s.trim().is_empty() => match serde_json::from_str(s) {
                Ok(Value::Array(t)) => t,
                _ => {
                    return Err(diagnostic(
                        "/tools".into(),
                        "tools must be a JSON list of tool specs (or a string holding one)".into(),
                    ))
                }
            },
            _ => Vec::new(),
        };
        // Nothing is left out: the raw schema admits only the roles mapped here and string
        // values, and the turns' other keys are kept in `details.sharegpt.turn_fields`.
        let mut content = Vec::new();
        if let Some(system) = value["system"].as_str().filter(|s| !s.is_empty()) {
            content.push(system_step(system.to_owned()));
        }
        let mut last_call: Option<String> = None;
        let turns = value["conversations"].as_array().unwrap_or(&[]);
        let mut turn_fields = Vec::new();
        for (i, t) in turns.iter().enumerate() {
            turn_fields.extend(unmapped_fields(t, format!("/conversations/{i}"), |k, _| {
                matches!(k, "from" | "value")
            }));
            let text = t["value"].as_str().unwrap_or_default().to_owned();
            match t["from"].as_str().unwrap_or_default() {
                "human" | "user" => content.push(Step::user_text(text)),
                "gpt" | "assistant" => content.push(Step::message(text, None)),
                "system" => content.push(system_step(text)),
                "function_call" => {
                    let calls = function_calls(&text)
                        .map_err(|e| diagnostic(format!("/conversations/{i}/value"), e))?;
                    for (name, kwargs) in calls {
                        last_call = Some(name.clone());
                        content.push(Step::api(name, kwargs, None));
                    }
                }
                _ => content.push(Step::environment_text(last_call.take(), text)),
            }
        }
        let mapped = ["conversations", "tools", "system"];
        let mut traj = chat_trajectory("sharegpt", record, &value, id, content, tools, &mapped);
        if !turn_fields.is_empty() {
            let extra = [("turn_fields".to_owned(), Value::Array(turn_fields))];
            extend_details(&mut traj.details, "sharegpt", extra.into_iter().collect());
        }
        Ok(vec![(traj, AdpVersion::V1_5)])
    }
}

/// The calls of a `function_call` turn: a JSON object `{name, arguments}` or a list of them.
fn function_calls(text: &str) -> Result<Vec<(String, JsonObject)>, String> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| format!("a function_call turn must hold JSON {{name, arguments}}: {e}"))?;
    let calls = match value {
        Value::Array(items) => items,
        one => vec![one],
    };
    calls
        .iter()
        .map(|c| {
            let name = c["name"]
                .as_str()
                .ok_or("a function call needs a \"name\"")?
                .to_owned();
            let kwargs = parse_arguments(&Node::from_value(&c["arguments"]))?;
            Ok((name, kwargs))
        })
        .collect()
}

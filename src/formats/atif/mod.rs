//! ATIF v1.7 (Harbor's Agent Trajectory Interchange Format), read and written.
//!
//! Writing ([`to_atif`]): consecutive tool actions become one agent step (parallel calls) whose
//! following observations are its results, in order; a message action is an agent step without
//! calls; user observations are user steps; other observations with no agent step before them
//! are system steps. What ATIF has no field for (a step's class, names, sources, rewards, the
//! trajectory's details, ...) goes into `extra.adp`, so reading trajkit's ATIF back gives the
//! same trajectory. Reading native ATIF (no `extra.adp`) follows ATIF's own conventions; see
//! docs/formats/atif.md.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Map, Value};

use crate::convert::{Converter, FormatOptions};
use crate::formats::chat::{call_step, record_id, OPENHANDS_CODE_TOOLS};
use crate::formats::kit::{has_keys, source_details};
use crate::formats::Format;
use crate::ingest::RawRecord;
use crate::json::Node;
use crate::model::{AdpVersion, JsonObject, Source, Step, Trajectory};
use crate::validate::check::check_raw;
use crate::validate::schemas::RawSchema;
use crate::validate::Diagnostic;

/// The ATIF version read and written.
pub const ATIF_VERSION: &str = "ATIF-v1.7";

/// The JSON Schema of raw `atif` records (`validate --schema atif`).
pub static SCHEMA: RawSchema = RawSchema::new(
    "atif",
    "trajectory_id",
    &[(
        "https://trajkit.invalid/schemas/raw/atif.schema.json",
        include_str!("../../../schemas/raw/atif.schema.json"),
    )],
    &[],
);

/// Reads ATIF trajectories.
pub struct Atif;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &Atif,
    side: None,
};

impl Converter for Atif {
    fn name(&self) -> &'static str {
        "atif"
    }

    fn raw_schemas(&self) -> &'static [&'static RawSchema] {
        static SCHEMAS: [&RawSchema; 1] = [&SCHEMA];
        &SCHEMAS
    }

    fn writer(&self) -> Option<fn(&Trajectory) -> Value> {
        Some(to_atif)
    }

    fn description(&self) -> &'static str {
        "ATIF v1.7 trajectories (Harbor): steps with tool_calls and observation results"
    }

    fn sniff(&self, first: &Value) -> bool {
        has_keys(first, &["schema_version", "steps"])
            && first["schema_version"]
                .as_str()
                .is_some_and(|v| v.starts_with("ATIF"))
    }

    fn convert(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        let value = check_raw(record, &SCHEMA, false)?;
        let id = value["trajectory_id"]
            .as_str()
            .filter(|s| !s.is_empty())
            .or(value["session_id"].as_str().filter(|s| !s.is_empty()))
            .map_or_else(
                || record_id(&Node::from_value(&value["id"]), record),
                str::to_owned,
            );
        for (i, s) in value["steps"].as_array().into_iter().flatten().enumerate() {
            if s["step_id"].as_u64() != Some(i as u64 + 1) {
                return Err(vec![Diagnostic::error(
                    &record.provenance,
                    Some(&id),
                    format!("/steps/{i}/step_id"),
                    "atif-step-id",
                    format!(
                        "step_id must be {} (1, 2, ... in order), found {}",
                        i + 1,
                        s["step_id"]
                    ),
                )]);
            }
        }
        Ok(vec![(from_atif(&value, id, record), AdpVersion::V1_5)])
    }
}

// ----- writing -----

/// A step as JSON without the keys ATIF carries natively.
fn step_extra(step: &Step, native: &[&str]) -> Value {
    let mut v = serde_json::to_value(step).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        for k in native {
            o.remove(*k);
        }
    }
    json!({ "adp": v })
}

/// An observation as ATIF content: its text, or an image part.
fn observation_content(step: &Step) -> Value {
    match step {
        Step::TextObservation(o) => json!(o.content),
        Step::ImageObservation(o) => {
            json!([{ "type": "image", "source": { "path": o.content } }])
        }
        Step::WebObservation(o) => json!(o
            .html
            .clone()
            .or_else(|| o.axtree.clone())
            .unwrap_or_default()),
        Step::JsonObservation(o) => json!(Value::Object(o.content.clone()).to_string()),
        _ => json!(""),
    }
}

/// A tool action as an ATIF tool call.
fn tool_call(step: &Step, index: usize) -> Value {
    let (function, arguments) = match step {
        Step::ApiAction(a) => (a.function.clone(), Value::Object(a.kwargs.clone())),
        Step::CodeAction(c) => match c.language.as_str() {
            "bash" => ("execute_bash".into(), json!({"command": c.content})),
            "python" => ("execute_ipython_cell".into(), json!({"code": c.content})),
            lang => (
                "execute_code".into(),
                json!({"language": lang, "code": c.content}),
            ),
        },
        _ => (String::new(), json!({})),
    };
    let mut extra = step_extra(step, carried(step.class_name()));
    let id = match step.tool_call_id() {
        Some(id) => id.to_owned(),
        None => {
            // ATIF requires an id; mark that ADP had none.
            extra["adp"]["tool_call_id"] = Value::Null;
            format!("trajkit-unlinked-{index}")
        }
    };
    json!({"tool_call_id": id, "function_name": function, "arguments": arguments, "extra": extra})
}

/// Writes `t` (ADP 1.5.0) as an ATIF v1.7 trajectory.
pub fn to_atif(t: &Trajectory) -> Value {
    let content = &t.content;
    let mut steps: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < content.len() {
        let step = &content[i];
        let mut atif = Map::new();
        atif.insert("step_id".into(), json!(steps.len() + 1));
        let takes_results = step.is_action();
        if step.is_tool_action() {
            let start = i;
            while i < content.len() && content[i].is_tool_action() {
                i += 1;
            }
            let calls: Vec<Value> = (start..i).map(|k| tool_call(&content[k], k)).collect();
            atif.insert("source".into(), json!("agent"));
            let (description, reasoning) = match step {
                Step::ApiAction(a) => (a.description.clone(), a.reasoning_content.clone()),
                Step::CodeAction(c) => (c.description.clone(), c.reasoning_content.clone()),
                _ => (None, None),
            };
            atif.insert("message".into(), json!(description.unwrap_or_default()));
            if reasoning.is_some() {
                atif.insert("reasoning_content".into(), json!(reasoning));
            }
            atif.insert("tool_calls".into(), Value::Array(calls));
        } else if let Step::MessageAction(m) = step {
            atif.insert("source".into(), json!("agent"));
            atif.insert("message".into(), json!(m.content));
            if m.reasoning_content.is_some() {
                atif.insert("reasoning_content".into(), json!(m.reasoning_content));
            }
            atif.insert("extra".into(), step_extra(step, carried("message_action")));
            i += 1;
        } else {
            let source = if step.source() == Some(Source::User) {
                "user"
            } else {
                "system"
            };
            atif.insert("source".into(), json!(source));
            atif.insert("message".into(), observation_content(step));
            atif.insert("extra".into(), step_extra(step, carried(step.class_name())));
            i += 1;
        }
        if takes_results {
            let mut results = Vec::new();
            while i < content.len()
                && !content[i].is_action()
                && content[i].source() != Some(Source::User)
            {
                let o = &content[i];
                results.push(json!({
                    "source_call_id": o.tool_call_id(),
                    "content": observation_content(o),
                    "extra": step_extra(o, carried(o.class_name())),
                }));
                i += 1;
            }
            if !results.is_empty() {
                atif.insert("observation".into(), json!({ "results": results }));
            }
        }
        steps.push(Value::Object(atif));
    }
    let adp = json!({
        "schema_version": t.schema_version,
        "available_apis": t.available_apis,
        "available_custom_tools": t.available_custom_tools,
        "available_code_languages": t.available_code_languages,
        "details": t.details,
    });
    json!({
        "schema_version": ATIF_VERSION,
        "trajectory_id": t.id,
        "agent": {"name": "trajkit", "version": env!("CARGO_PKG_VERSION")},
        "steps": steps,
        "extra": {"adp": adp},
    })
}

// ----- reading -----

/// Text of ATIF content (parts' texts joined by newlines) and its image paths.
fn text_and_images(content: &Value) -> (String, Vec<String>) {
    match content {
        Value::String(s) => (s.clone(), Vec::new()),
        Value::Array(parts) => {
            let text = parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n");
            let images = parts
                .iter()
                .filter_map(|p| p["source"]["path"].as_str().map(str::to_owned))
                .collect();
            (text, images)
        }
        _ => (String::new(), Vec::new()),
    }
}

/// The keys of a step class that ATIF carries natively (and [`to_atif`] leaves out of
/// `extra.adp`).
fn carried(class: &str) -> &'static [&'static str] {
    match class {
        "api_action" => &["function", "kwargs", "tool_call_id"],
        "code_action" => &["content", "tool_call_id"],
        "message_action" => &["content", "reasoning_content"],
        "text_observation" => &["content", "tool_call_id"],
        _ => &["tool_call_id"],
    }
}

/// Rebuilds a step trajkit wrote from its `extra.adp`, putting back what ATIF carried (`native`
/// offers values; only the class's carried keys not already present are taken).
fn restore(extra: &Value, native: &[(&str, Value)]) -> Option<Step> {
    let mut v = extra.get("adp")?.clone();
    let class = v["class_"].as_str()?.to_owned();
    let o = v.as_object_mut()?;
    for (k, value) in native {
        if carried(&class).contains(k) && !o.contains_key(*k) {
            o.insert((*k).to_owned(), value.clone());
        }
    }
    serde_json::from_value(v).ok()
}

/// One ATIF tool call as an ADP action (code for ATIF's shell and Python tools).
fn action(call: &Value) -> Step {
    let id = call["tool_call_id"].as_str().unwrap_or_default();
    let name = call["function_name"].as_str().unwrap_or_default();
    let args = call["arguments"].as_object().cloned().unwrap_or_default();
    let code = args
        .get("code")
        .or(args.get("command"))
        .and_then(Value::as_str);
    let native = [
        ("tool_call_id", json!(id)),
        ("function", json!(name)),
        ("kwargs", Value::Object(args.clone())),
        ("content", json!(code.unwrap_or_default())),
    ];
    if let Some(step) = restore(&call["extra"], &native) {
        return step;
    }
    call_step(name, args, OPENHANDS_CODE_TOOLS).with_tool_call_id(id)
}

/// Reads an ATIF trajectory as ADP 1.5.0.
fn from_atif(v: &Value, id: String, record: &RawRecord) -> Trajectory {
    let mut reader = Reader::default();
    for s in v["steps"].as_array().into_iter().flatten() {
        reader.step(s);
    }
    reader.into_trajectory(v, id, record)
}

/// The state of reading one ATIF trajectory: the steps so far, and what `details.atif`
/// collects on the way.
#[derive(Default)]
struct Reader {
    content: Vec<Step>,
    /// Call id → function name, for naming and linking results.
    call_names: HashMap<String, String>,
    answered: HashSet<String>,
    step_rest: Vec<Value>,
    excluded: Vec<usize>,
    unmatched: Vec<Value>,
}

impl Reader {
    fn step(&mut self, s: &Value) {
        let first = self.content.len();
        let (text, images) = text_and_images(&s["message"]);
        match s["source"].as_str().unwrap_or_default() {
            "agent" => {
                self.agent(s, text);
                self.results(&s["observation"]["results"]);
            }
            source => self.non_agent(s, source, text, images),
        }
        if s["is_copied_context"] == true || s["llm_call_count"] == 0 {
            self.excluded.extend(first..self.content.len());
        }
        self.step_rest.extend(native_step_details(s));
    }

    /// An agent step: a message, or one action per tool call, the first taking the step's
    /// message and reasoning as its thought.
    fn agent(&mut self, s: &Value, text: String) {
        let reasoning = s["reasoning_content"].as_str().map(str::to_owned);
        let calls = s["tool_calls"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        if calls.is_empty() {
            let native = [
                ("content", json!(text)),
                ("reasoning_content", s["reasoning_content"].clone()),
            ];
            let step = restore(&s["extra"], &native).unwrap_or_else(|| {
                let mut m = Step::message(text, None);
                m.set_thought(None, reasoning);
                m
            });
            self.content.push(step);
            return;
        }
        let mut thought = Some(((!text.is_empty()).then_some(text), reasoning));
        for (k, call) in calls.iter().enumerate() {
            let mut step = action(call);
            if k == 0 && call["extra"].get("adp").is_none() {
                if let Some((description, reasoning)) = thought.take() {
                    step.set_thought(description, reasoning);
                }
            }
            if let Some(id) = step.tool_call_id() {
                let name = call["function_name"].as_str().unwrap_or_default();
                self.call_names.insert(id.to_owned(), name.to_owned());
            }
            self.content.push(step);
        }
    }

    /// A system or user step: trajkit's own from `extra.adp`, else a user message (text, then
    /// its images) or a system text.
    fn non_agent(&mut self, s: &Value, source: &str, text: String, images: Vec<String>) {
        let native = [("content", json!(text))];
        if let Some(step) = restore(&s["extra"], &native) {
            self.content.push(step);
        } else if source == "user" {
            if !text.is_empty() || images.is_empty() {
                self.content.push(Step::user_text(text));
            }
            self.content
                .extend(images.into_iter().map(|p| Step::image(p, Source::User)));
        } else {
            self.content
                .push(Step::environment_text(Some("system".into()), text));
        }
    }

    /// An agent step's observation results, linked to the calls they answer.
    fn results(&mut self, results: &Value) {
        for r in results.as_array().into_iter().flatten() {
            let (text, images) = text_and_images(&r["content"]);
            let link = r["source_call_id"]
                .as_str()
                .filter(|c| self.call_names.contains_key(*c) && !self.answered.contains(*c))
                .map(str::to_owned);
            let native = [("content", json!(text)), ("tool_call_id", json!(link))];
            if let Some(step) = restore(&r["extra"], &native) {
                if let Some(c) = step.tool_call_id() {
                    self.answered.insert(c.to_owned());
                }
                self.content.push(step);
                continue;
            }
            if link.is_none() && !r["source_call_id"].is_null() {
                self.unmatched.push(json!({
                    "content_index": self.content.len(),
                    "source_call_id": r["source_call_id"],
                }));
            }
            let name = link.as_ref().and_then(|c| self.call_names.get(c).cloned());
            let mut step = Step::environment_text(name, text);
            if let Some(c) = link {
                self.answered.insert(c.clone());
                step = step.with_tool_call_id(c);
            }
            self.content.push(step);
            self.content.extend(
                images
                    .into_iter()
                    .map(|p| Step::image(p, Source::Environment)),
            );
        }
    }

    fn into_trajectory(self, v: &Value, id: String, record: &RawRecord) -> Trajectory {
        let adp = &v["extra"]["adp"];
        let mut details: JsonObject = adp["details"].as_object().cloned().unwrap_or_default();
        if adp.is_null() {
            details.insert(
                "source".into(),
                source_details(
                    "atif",
                    record,
                    json!({"trajectory_id": v["trajectory_id"], "session_id": v["session_id"]}),
                ),
            );
            let mut native: Map<String, Value> = v
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, val)| {
                    !val.is_null()
                        && !matches!(k.as_str(), "steps" | "schema_version" | "trajectory_id")
                })
                .map(|(k, val)| (k.clone(), val.clone()))
                .collect();
            if !self.step_rest.is_empty() {
                native.insert("steps".into(), Value::Array(self.step_rest));
            }
            if !self.excluded.is_empty() {
                native.insert("excluded_from_training".into(), json!(self.excluded));
            }
            if !self.unmatched.is_empty() {
                native.insert("unmatched_results".into(), Value::Array(self.unmatched));
            }
            details.insert("atif".into(), Value::Object(native));
        }
        let list =
            |key: &str| -> Option<Vec<String>> { serde_json::from_value(adp[key].clone()).ok() };
        let mut t = Trajectory::new(id, self.content, details);
        t.available_apis = list("available_apis");
        t.available_custom_tools = list("available_custom_tools");
        t.available_code_languages = list("available_code_languages");
        t
    }
}

/// What `details.atif.steps` keeps of a step: its native keys the steps do not hold, and the
/// `extra` / `subagent_trajectory_ref` of its calls and results by position; `None` when that
/// is only its `step_id`.
fn native_step_details(s: &Value) -> Option<Value> {
    let mut rest: Map<String, Value> = s
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, val)| kept_in_details(k, val))
        .map(|(k, val)| (k.clone(), val.clone()))
        .collect();
    let calls = positional_natives(&s["tool_calls"], &["extra"]);
    if !calls.is_empty() {
        rest.insert("tool_calls".into(), Value::Array(calls));
    }
    let results = positional_natives(
        &s["observation"]["results"],
        &["extra", "subagent_trajectory_ref"],
    );
    if !results.is_empty() {
        rest.insert("results".into(), Value::Array(results));
    }
    if let Some(extra) = s["observation"].get("extra").filter(|v| !v.is_null()) {
        rest.insert("observation_extra".into(), extra.clone());
    }
    (rest.len() > 1).then_some(Value::Object(rest))
}

/// `{index, native}` for each item of `items` that has any of `keys`.
fn positional_natives(items: &Value, keys: &[&str]) -> Vec<Value> {
    items
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(n, item)| {
            let kept: Map<String, Value> = keys
                .iter()
                .filter_map(|k| {
                    item.get(*k)
                        .filter(|v| kept_in_details(k, v))
                        .map(|v| ((*k).to_owned(), v.clone()))
                })
                .collect();
            (!kept.is_empty()).then(|| json!({"index": n, "native": kept}))
        })
        .collect()
}

/// Whether a native ATIF key is kept in `details.atif` (what the steps do not already hold,
/// and not trajkit's own `extra.adp`).
fn kept_in_details(key: &str, value: &Value) -> bool {
    match key {
        "source" | "message" | "reasoning_content" | "tool_calls" | "observation" => false,
        "extra" => !value.is_null() && value.get("adp").is_none(),
        _ => !value.is_null(),
    }
}

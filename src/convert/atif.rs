//! ATIF v1.7 (Harbor's Agent Trajectory Interchange Format), read and written.
//!
//! Writing ([`to_atif`]): consecutive tool actions become one agent step (parallel calls) whose
//! following observations are its results, in order; a message action is an agent step without
//! calls; user observations are user steps; other observations with no agent step before them
//! are system steps. What ATIF has no field for (a step's class, names, sources, rewards, the
//! trajectory's details, ...) goes into `extra.adp`, so reading trajkit's ATIF back gives the
//! same trajectory. Reading native ATIF (no `extra.adp`) follows ATIF's own conventions; see
//! the README ("ATIF").

use std::collections::{HashMap, HashSet};

use serde_json::{json, Map, Value};

use super::chat::record_id;
use super::{has_keys, source_details, Converter};
use crate::ingest::RawRecord;
use crate::model::{AdpVersion, JsonObject, Source, Step, Trajectory};
use crate::validate::check::check_raw;
use crate::validate::Diagnostic;

/// The ATIF version read and written.
pub const ATIF_VERSION: &str = "ATIF-v1.7";

/// Reads ATIF trajectories.
pub struct Atif;

impl Converter for Atif {
    fn name(&self) -> &'static str {
        "atif"
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
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        let value = check_raw(record, "atif", false)?;
        let id = value["trajectory_id"]
            .as_str()
            .or(value["session_id"].as_str())
            .map_or_else(|| record_id(&value, record), str::to_owned);
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
        from_atif(&value, id, record).map(|t| vec![(t, AdpVersion::V1_5)])
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
    let step = match (name, code) {
        ("execute_bash", Some(c)) if args.len() == 1 => Step::code("bash", c, None),
        ("execute_ipython_cell", Some(c)) if args.len() == 1 => Step::code("python", c, None),
        _ => Step::api(name, args, None),
    };
    step.with_tool_call_id(id)
}

/// Reads an ATIF trajectory as ADP 1.5.0.
fn from_atif(v: &Value, id: String, record: &RawRecord) -> Result<Trajectory, Vec<Diagnostic>> {
    let mut content: Vec<Step> = Vec::new();
    let mut call_names: HashMap<String, String> = HashMap::new();
    let mut answered: HashSet<String> = HashSet::new();
    let mut step_rest: Vec<Value> = Vec::new();
    let mut excluded: Vec<usize> = Vec::new();
    let mut unmatched: Vec<Value> = Vec::new();
    for s in v["steps"].as_array().into_iter().flatten() {
        let first = content.len();
        let (text, images) = text_and_images(&s["message"]);
        match s["source"].as_str().unwrap_or_default() {
            "agent" => {
                let calls = s["tool_calls"].as_array().map(Vec::as_slice).unwrap_or(&[]);
                if calls.is_empty() {
                    let native = [
                        ("content", json!(text)),
                        ("reasoning_content", s["reasoning_content"].clone()),
                    ];
                    let step = restore(&s["extra"], &native).unwrap_or_else(|| {
                        let mut m = Step::message(text.clone(), None);
                        if let Step::MessageAction(a) = &mut m {
                            a.reasoning_content =
                                s["reasoning_content"].as_str().map(str::to_owned);
                        }
                        m
                    });
                    content.push(step);
                } else {
                    for (k, call) in calls.iter().enumerate() {
                        let mut step = action(call);
                        let native_call = call["extra"].get("adp").is_none();
                        if k == 0 && native_call {
                            match &mut step {
                                Step::ApiAction(a) => {
                                    a.description = (!text.is_empty()).then(|| text.clone());
                                    a.reasoning_content =
                                        s["reasoning_content"].as_str().map(str::to_owned);
                                }
                                Step::CodeAction(c) => {
                                    c.description = (!text.is_empty()).then(|| text.clone());
                                    c.reasoning_content =
                                        s["reasoning_content"].as_str().map(str::to_owned);
                                }
                                _ => {}
                            }
                        }
                        if let Some(id) = step.tool_call_id() {
                            call_names.insert(
                                id.to_owned(),
                                call["function_name"]
                                    .as_str()
                                    .unwrap_or_default()
                                    .to_owned(),
                            );
                        }
                        content.push(step);
                    }
                }
                for r in s["observation"]["results"].as_array().into_iter().flatten() {
                    let (rtext, rimages) = text_and_images(&r["content"]);
                    let link = r["source_call_id"]
                        .as_str()
                        .filter(|c| call_names.contains_key(*c) && !answered.contains(*c))
                        .map(str::to_owned);
                    let native = [("content", json!(rtext)), ("tool_call_id", json!(link))];
                    if let Some(step) = restore(&r["extra"], &native) {
                        if let Some(c) = step.tool_call_id() {
                            answered.insert(c.to_owned());
                        }
                        content.push(step);
                        continue;
                    }
                    if link.is_none() && !r["source_call_id"].is_null() {
                        unmatched.push(json!({"content_index": content.len(), "source_call_id": r["source_call_id"]}));
                    }
                    let name = link.as_ref().and_then(|c| call_names.get(c).cloned());
                    let mut step = Step::environment_text(name, rtext);
                    if let Some(c) = link {
                        answered.insert(c.clone());
                        step = step.with_tool_call_id(c);
                    }
                    content.push(step);
                    content.extend(
                        rimages
                            .into_iter()
                            .map(|p| Step::image(p, Source::Environment)),
                    );
                }
            }
            source => {
                let native = [("content", json!(text))];
                if let Some(step) = restore(&s["extra"], &native) {
                    content.push(step);
                } else if source == "user" {
                    if !text.is_empty() || images.is_empty() {
                        content.push(Step::user_text(text));
                    }
                    content.extend(images.into_iter().map(|p| Step::image(p, Source::User)));
                } else {
                    content.push(Step::environment_text(Some("system".into()), text));
                }
            }
        }
        if s["is_copied_context"] == true || s["llm_call_count"] == 0 {
            excluded.extend(first..content.len());
        }
        let mut rest: Map<String, Value> = s
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, val)| kept_in_details(k, val))
            .map(|(k, val)| (k.clone(), val.clone()))
            .collect();
        let natives = |items: &Value, keys: &[&str]| -> Vec<Value> {
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
        };
        let calls = natives(&s["tool_calls"], &["extra"]);
        if !calls.is_empty() {
            rest.insert("tool_calls".into(), Value::Array(calls));
        }
        let results = natives(
            &s["observation"]["results"],
            &["extra", "subagent_trajectory_ref"],
        );
        if !results.is_empty() {
            rest.insert("results".into(), Value::Array(results));
        }
        if let Some(extra) = s["observation"].get("extra").filter(|v| !v.is_null()) {
            rest.insert("observation_extra".into(), extra.clone());
        }
        if rest.len() > 1 {
            step_rest.push(Value::Object(rest));
        }
    }
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
        if !step_rest.is_empty() {
            native.insert("steps".into(), Value::Array(step_rest));
        }
        if !excluded.is_empty() {
            native.insert("excluded_from_training".into(), json!(excluded));
        }
        if !unmatched.is_empty() {
            native.insert("unmatched_results".into(), Value::Array(unmatched));
        }
        details.insert("atif".into(), Value::Object(native));
    }
    let list = |key: &str| -> Option<Vec<String>> { serde_json::from_value(adp[key].clone()).ok() };
    let mut t = Trajectory::new(id, content, details);
    t.available_apis = list("available_apis");
    t.available_custom_tools = list("available_custom_tools");
    t.available_code_languages = list("available_code_languages");
    Ok(t)
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

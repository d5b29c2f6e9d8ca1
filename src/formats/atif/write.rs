//! Writing ADP 1.5.0 as ATIF v1.7 or v1.8 (`convert --to atif [--atif-version 1.8]`).
//!
//! Consecutive tool actions become one agent step (parallel calls) whose following
//! observations are its results, in order; a message action is an agent step without calls;
//! user observations are user steps; other observations with no agent step before them are
//! system steps. What ATIF has no field for (a step's class, names, sources, rewards, the
//! trajectory's details, ...) goes into `extra.adp`, so reading trajkit's ATIF back gives the
//! same trajectory. v1.8 differs from v1.7 by its audio content parts, which ADP has no step
//! for: the two outputs differ only in `schema_version`.

use serde_json::{json, Map, Value};

use super::{carried, VERSION};
use crate::convert::FormatOptions;
use crate::model::{Source, Step, Trajectory};

/// The `schema_version` written for the `--atif-version` chosen.
pub fn schema_version(opts: &FormatOptions) -> &'static str {
    match opts.choice(&VERSION) {
        "1.8" => "ATIF-v1.8",
        _ => "ATIF-v1.7",
    }
}

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

/// The media type ATIF requires of an image part, from the path's extension (`None` for a
/// path whose extension names none of the four image types ATIF allows).
fn image_media_type(path: &str) -> Option<&'static str> {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
    match ext.as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        _ => None,
    }
}

/// An observation as ATIF content: its text, or an image part (a text part naming the image
/// when its type cannot be told from its path; `extra.adp` keeps the step either way).
fn observation_content(step: &Step) -> Value {
    match step {
        Step::TextObservation(o) => json!(o.content),
        Step::ImageObservation(o) => match image_media_type(&o.content) {
            Some(media_type) => {
                json!([{ "type": "image", "source": { "media_type": media_type, "path": o.content } }])
            }
            None => json!([{ "type": "text", "text": format!("[image: {}]", o.content) }]),
        },
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

/// Writes `t` (ADP 1.5.0) as an ATIF trajectory of the version `opts` chooses.
pub fn to_atif(t: &Trajectory, opts: &FormatOptions) -> Value {
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
        "schema_version": schema_version(opts),
        "trajectory_id": t.id,
        "agent": {"name": "trajkit", "version": env!("CARGO_PKG_VERSION")},
        "steps": steps,
        "extra": {"adp": adp},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_parts_name_their_media_type_or_become_text() {
        assert_eq!(image_media_type("shots/a.PNG"), Some("image/png"));
        assert_eq!(
            image_media_type("https://x.test/b.jpeg"),
            Some("image/jpeg")
        );
        assert_eq!(image_media_type("c.bmp"), None);
        assert_eq!(image_media_type("noext"), None);
        let step = Step::image("c.bmp", Source::User);
        assert_eq!(
            observation_content(&step),
            json!([{"type": "text", "text": "[image: c.bmp]"}])
        );
    }
}

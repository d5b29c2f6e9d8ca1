//! JSON-Schema errors in a spec, said in trajkit's words: which key, and what it must be,
//! rather than the validator's "not valid under any of the schemas listed in the 'anyOf'
//! keyword". What a key must be comes from the schema itself (`x-must`, else `description`).

use jsonschema::error::ValidationErrorKind;
use jsonschema::ValidationError;
use serde_json::Value;

use crate::validate::check::preview;

/// The problems of one schema error, each `(pointer into the spec, message)`. An `anyOf` or
/// `oneOf` whose alternatives all failed deeper inside the value reports those deeper errors
/// (the key that is wrong), else what the key must be.
pub fn explain(error: &ValidationError<'_>, schema: &Value) -> Vec<(String, String)> {
    let at = error.instance_path().as_str().to_owned();
    let path = error.schema_path().as_str();
    let found = preview(error.instance());
    let parent = parent_schema(schema, path);
    let message = match error.kind() {
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            let deepest = context
                .iter()
                .flatten()
                .map(|e| e.instance_path().as_str().len())
                .max()
                .unwrap_or(0);
            if deepest > at.len() {
                let mut deeper: Vec<(String, String)> = context
                    .iter()
                    .flatten()
                    .filter(|e| e.instance_path().as_str().len() == deepest)
                    .flat_map(|e| explain(e, schema))
                    .collect();
                deeper.dedup();
                return deeper;
            }
            format!("must be {}; found {found}", must(parent))
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let keys = parent
                .and_then(|p| p.get("properties"))
                .and_then(Value::as_object)
                .map(|p| p.keys().map(String::as_str).collect::<Vec<_>>().join(", "))
                .unwrap_or_default();
            let instance = error.instance();
            let hint = if unexpected.iter().any(|k| k == "class") && instance.get("steps").is_some()
            {
                "; a step has `class` (one step) or `steps` (several, usually with a `for_each`), \
                 not both"
            } else if unexpected.iter().any(|k| k == "emit" || k == "steps") {
                "; to emit several steps (per item), write `{ for_each = \"...\", steps = [{ class \
                 = ... }, { class = ... }] }` in `emit`, without a `class` of its own"
            } else {
                ""
            };
            let names: Vec<String> = unexpected.iter().map(|k| format!("`{k}`")).collect();
            format!("unknown key {} (keys here: {keys}){hint}", names.join(", "))
        }
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            if name == "class" {
                "a step needs `class` (text_observation, image_observation, web_observation, \
                 code_action, api_action or message_action), or `steps` to emit several"
                    .to_owned()
            } else {
                let what = parent
                    .and_then(|p| p.pointer(&format!("/properties/{name}/description")))
                    .and_then(Value::as_str)
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default();
                match error.instance().get("class").and_then(Value::as_str) {
                    Some(class) => format!("a {class} step needs `{name}`{what}"),
                    None => format!("`{name}` is required here{what}"),
                }
            }
        }
        ValidationErrorKind::Enum { options } => {
            let options: Vec<String> = options
                .as_array()
                .map(|o| o.iter().map(Value::to_string).collect())
                .unwrap_or_default();
            format!("must be one of {}; found {found}", options.join(", "))
        }
        ValidationErrorKind::Type { .. } | ValidationErrorKind::Pattern { .. } => {
            format!("must be {}; found {found}", must(parent))
        }
        ValidationErrorKind::Not { .. } => {
            "give `kwargs` or `args` (an argument list to parse), not both".to_owned()
        }
        ValidationErrorKind::PropertyNames { error } => format!(
            "{} is not a name of letters, digits and _ (a variable's name)",
            preview(error.instance())
        ),
        ValidationErrorKind::MinItems { .. } | ValidationErrorKind::MinProperties { .. } => {
            "must not be empty".to_owned()
        }
        _ => error.masked_with(found).to_string(),
    };
    vec![(at, message)]
}

/// The schema holding the keyword at `path` (`/$defs/rule/properties/role/anyOf` → the
/// schema of `role`).
fn parent_schema<'s>(schema: &'s Value, path: &str) -> Option<&'s Value> {
    let end = path.rfind('/')?;
    schema.pointer(&path[..end])
}

/// What a value must be, from its schema: `x-must`, else its type.
fn must(schema: Option<&Value>) -> String {
    let Some(schema) = schema else {
        return "something else".to_owned();
    };
    if let Some(text) = schema.get("x-must").and_then(Value::as_str) {
        return text.to_owned();
    }
    let kind = |t: &str| match t {
        "string" => "text",
        "boolean" => "true or false",
        "integer" => "an integer",
        "number" => "a number",
        "array" => "a list",
        "object" => "a table",
        _ => "null",
    };
    match schema.get("type") {
        Some(Value::String(t)) => kind(t).to_owned(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(kind)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "something else".to_owned(),
    }
}

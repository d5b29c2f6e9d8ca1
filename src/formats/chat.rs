//! What chat-shaped formats (OpenAI chat, ShareGPT, and the chats SWE-agent and OpenHands
//! write) share: ids, system turns, message texts, tool calls, tool specs.

use serde_json::{json, Value};

use super::kit::source_details;
use crate::ingest::RawRecord;
use crate::json::Node;
use crate::model::links::unlink_unanswered;
use crate::model::{JsonObject, Step, Trajectory};

/// True when `v` is one chat message rather than a chat: an object with a string `role` and no
/// `messages` (a file of them, such as a bare JSON array of messages, is one chat: see
/// [`super::bundle::open_chat`]).
pub fn is_message(v: &Value) -> bool {
    v["role"].is_string() && v.get("messages").is_none()
}

/// Content-block types only the Anthropic Messages API writes (an OpenAI chat's content parts
/// are `text`, `image_url`, `input_audio`, `file` and `refusal`).
const MESSAGES_API_BLOCKS: &[&str] = &[
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "server_tool_use",
    "mcp_tool_use",
    "mcp_tool_result",
    "web_search_tool_result",
    "web_fetch_tool_result",
    "code_execution_tool_result",
    "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result",
    "tool_search_tool_result",
    "document",
    "search_result",
    "container_upload",
];

/// True when the content of `message` holds a block only the Anthropic Messages API writes: a
/// type of `MESSAGES_API_BLOCKS`, or an `image` with a `source`.
pub fn has_messages_api_blocks(message: &Value) -> bool {
    message["content"].as_array().is_some_and(|blocks| {
        blocks.iter().any(|b| match b["type"].as_str() {
            Some("image") => b["source"].is_object(),
            Some(t) => MESSAGES_API_BLOCKS.contains(&t),
            None => false,
        })
    })
}

/// True when `first` (a record, or the first message of a file that is one chat) is an
/// Anthropic Messages API conversation rather than an OpenAI chat: a chat record (`messages`
/// whose first item has a `role`, no `trajectory_format`) with a top-level `system` (a string
/// or a list of blocks) or a message holding Messages API blocks ([`has_messages_api_blocks`]); or a bare message
/// holding them. The `anthropic` format claims exactly these, and `openai` declines them.
pub fn is_messages_api_chat(first: &Value) -> bool {
    if is_message(first) {
        return has_messages_api_blocks(first);
    }
    let Some(messages) = first["messages"].as_array() else {
        return false;
    };
    let chat = messages.first().is_some_and(|m| m.get("role").is_some())
        && first.get("trajectory_format").is_none();
    let system = first["system"].is_string() || first["system"].is_array();
    chat && (system || messages.iter().any(has_messages_api_blocks))
}

/// Clears the link id of every tool action no observation answers (as [`unlink_unanswered`])
/// and returns those calls as `{"step": content index, "id": the call's id}`, for
/// `details.<format>.unanswered_calls`. `synthetic` tells the ids a converter made up (calls
/// written as text carry none): those are listed with `"id": null`.
pub fn unlink_unanswered_calls(
    content: &mut [Step],
    synthetic: impl Fn(&str) -> bool,
) -> Vec<Value> {
    let before: Vec<Option<String>> = content
        .iter()
        .map(|s| s.tool_call_id().map(str::to_owned))
        .collect();
    unlink_unanswered(content);
    before
        .into_iter()
        .zip(content.iter())
        .enumerate()
        .filter_map(|(i, (id, step))| {
            let id = id.filter(|_| step.is_tool_action() && step.tool_call_id().is_none())?;
            let native = (!synthetic(&id)).then_some(id);
            Some(json!({"step": i, "id": native}))
        })
        .collect()
}

/// The fields of object `node` that `mapped` does not claim, as JSON, each with `pointer`:
/// `{pointer, fields}`, or `None` when there are none. Chat readers keep these in `details`
/// (a message's `weight`, a turn's extra keys) so that nothing is dropped.
pub fn unmapped_fields(
    node: &Node,
    pointer: String,
    mapped: impl Fn(&str, &Node) -> bool,
) -> Option<Value> {
    let fields: serde_json::Map<String, Value> = node
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, v)| !mapped(k, v))
        .map(|(k, v)| (k.to_string(), v.to_value()))
        .collect();
    (!fields.is_empty()).then(|| json!({"pointer": pointer, "fields": fields}))
}

/// The record's id: `id` (the record's `id` field) when a non-empty string or a number, else
/// `{file name}#{index}` (stable across runs).
pub fn record_id(id: &Node, record: &RawRecord) -> String {
    match id {
        Node::String(s) if !s.is_empty() => s.as_ref().to_owned(),
        Node::Number(n) => n.to_string(),
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

/// The record's `id` (as [`record_id`]), else the first non-empty string among `keys` (runs
/// are often named by `instance_id`), else `{file name}#{index}`.
pub fn record_id_with(v: &Value, record: &RawRecord, keys: &[&str]) -> String {
    let id = Node::from_value(&v["id"]);
    if v["id"].is_string() || v["id"].is_number() {
        return record_id(&id, record);
    }
    keys.iter()
        .find_map(|k| v[*k].as_str().filter(|s| !s.is_empty()))
        .map_or_else(|| record_id(&id, record), str::to_owned)
}

/// A system prompt as a step: a text observation named `system` from the environment (the
/// form ADP's own chat datasets use).
pub fn system_step(text: String) -> Step {
    Step::environment_text(Some("system".to_owned()), text)
}

/// Text of a chat message's content: a string, or the text parts of a list joined by blank
/// lines.
pub fn message_text(content: &Node) -> String {
    match content {
        Node::String(s) => s.as_ref().to_owned(),
        Node::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => String::new(),
    }
}

/// How many parts of a chat message's content [`message_text`] leaves out: those without a
/// `text` string (images, audio, files, ...); 0 for a string content.
pub fn parts_without_text(content: &Node) -> u64 {
    match content {
        Node::Array(parts) => parts
            .iter()
            .filter(|p| p["text"].as_str().is_none())
            .count() as u64,
        _ => 0,
    }
}

/// A tool whose calls are code: its name, the argument holding the code, and the language.
pub type CodeTool = (&'static str, &'static str, &'static str);

/// OpenHands' shell and IPython tools (also ATIF's, which took them from OpenHands).
pub const OPENHANDS_CODE_TOOLS: &[CodeTool] = &[
    ("execute_bash", "command", "bash"),
    ("execute_ipython_cell", "code", "python"),
];

/// A tool call as an action: a call of one of `code_tools` whose only argument is its code
/// becomes a `code_action` in that tool's language; any other call an `api_action`.
pub fn call_step(name: &str, kwargs: JsonObject, code_tools: &[CodeTool]) -> Step {
    for &(tool, arg, language) in code_tools {
        if name == tool && kwargs.len() == 1 {
            if let Some(Value::String(code)) = kwargs.get(arg) {
                return Step::code(language, code.clone(), None);
            }
        }
    }
    Step::api(name, kwargs, None)
}

/// A tool call as an action, for tools whose input may carry a `description` beside their
/// code: a call of one of `code_tools` whose input is its code alone (and a string
/// `description`, which becomes the action's) is a `code_action` in that tool's language; any
/// other call an `api_action` with the input as kwargs.
pub fn described_call_step(name: &str, input: JsonObject, code_tools: &[CodeTool]) -> Step {
    for &(tool, arg, language) in code_tools {
        let only_code = input.keys().all(|k| k == arg || k == "description");
        if name == tool && only_code {
            if let Some(Value::String(code)) = input.get(arg) {
                let description = input
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                return Step::code(language, code.clone(), description);
            }
        }
    }
    Step::api(name, input, None)
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
pub fn parse_arguments(arguments: &Node) -> Result<JsonObject, String> {
    match arguments {
        Node::Object(_) => Ok(arguments.to_map()),
        Node::String(s) if s.trim().is_empty() => Ok(JsonObject::new()),
        Node::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(o)) => Ok(o),
            Ok(_) => Err("arguments must encode a JSON object".to_owned()),
            Err(e) => Err(format!("arguments are not valid JSON: {e}")),
        },
        _ => Err("arguments must be a JSON object or a string holding one".to_owned()),
    }
}

/// Adds `extra` to the object `details.<key>` (created when missing); nothing when empty.
pub fn extend_details(details: &mut JsonObject, key: &str, extra: JsonObject) {
    if extra.is_empty() {
        return;
    }
    let slot = details
        .entry(key)
        .or_insert_with(|| Value::Object(JsonObject::new()));
    if let Some(o) = slot.as_object_mut() {
        o.extend(extra);
    }
}

/// `details.outcome` from an evaluation's verdict (`resolved`, `target`): `success` or
/// `failure`, with the verdict and `more` native fields.
pub fn verdict_outcome(key: &str, passed: bool, more: JsonObject) -> Value {
    let mut native = JsonObject::new();
    native.insert(key.to_owned(), passed.into());
    native.extend(more);
    json!({"status": if passed { "success" } else { "failure" }, "native": native})
}

/// The trajectory of a chat record of `format`: `details.source`, the tool specs in
/// `details.tools` and their names in `available_custom_tools`, and the record's keys not in
/// `mapped` under `details.<format>` (dashes in the name become underscores: `swe_agent`).
pub fn chat_trajectory(
    format: &str,
    record: &RawRecord,
    value: &Node,
    id: String,
    content: Vec<Step>,
    tools: Vec<Value>,
    mapped: &[&str],
) -> Trajectory {
    let mut details = JsonObject::new();
    details.insert(
        "source".into(),
        source_details(
            format,
            record,
            json!({ "id": value.get("id").map(Node::to_value) }),
        ),
    );
    let names = (!tools.is_empty()).then(|| tool_names(&tools));
    if !tools.is_empty() {
        details.insert("tools".into(), Value::Array(tools));
    }
    let rest: JsonObject = value
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k != "id" && !mapped.contains(&k.as_ref()))
        .map(|(k, v)| (k.as_ref().to_owned(), v.to_value()))
        .collect();
    if !rest.is_empty() {
        details.insert(format.replace('-', "_"), Value::Object(rest));
    }
    let mut traj = Trajectory::new(id, content, details);
    traj.available_custom_tools = names;
    traj
}

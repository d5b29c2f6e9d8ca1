//! OpenAI-style chat records (`messages` with roles, `tool_calls`, `tool_call_id`, `tools`), the
//! lingua franca of fine-tuning data; a file of bare messages (a JSON array of them) is one
//! chat. The mapping is in docs/formats/openai.md.

use std::collections::HashMap;
use std::io;

use serde_json::{json, Value};

use crate::convert::{ConvertOptions, Converter, FormatOptions, LeftOut};
use crate::formats::bundle::open_chat;
use crate::formats::chat::{
    chat_trajectory, extend_details, is_message, is_messages_api_chat, message_text,
    parse_arguments, record_id, system_step, unmapped_fields,
};
use crate::formats::Format;
use crate::ingest::{RawRecord, RecordSource};
use crate::json::Node;
use crate::model::links::unlink_unanswered;
use crate::model::{AdpVersion, Source, Step, Trajectory};
use crate::validate::check::check_raw_node;
use crate::validate::schemas::RawSchema;
use crate::validate::Diagnostic;

/// The JSON Schema of raw `openai` records (`validate --schema openai`).
pub static SCHEMA: RawSchema = RawSchema::new(
    "openai",
    "id",
    &[(
        "https://trajkit.invalid/schemas/raw/openai.schema.json",
        include_str!("../../../schemas/raw/openai.schema.json"),
    )],
    &[],
);

/// Reads OpenAI-style chat records.
pub struct OpenAi;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &OpenAi,
    side: None,
};

impl Converter for OpenAi {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn raw_schemas(&self) -> &'static [&'static RawSchema] {
        static SCHEMAS: [&RawSchema; 1] = [&SCHEMA];
        &SCHEMAS
    }

    fn description(&self) -> &'static str {
        "OpenAI-style chats: messages with tool_calls / tool_call_id, optional tools"
    }

    /// A chat record (`messages` whose first item has a `role`), unless it names a
    /// `trajectory_format` of its own (an agent's run that holds a chat, such as
    /// mini-swe-agent's); or one bare message, the first of a file that is one chat
    /// ([`open_chat`]). Not an Anthropic Messages API conversation ([`is_messages_api_chat`]:
    /// a top-level `system`, or `tool_use`, `thinking`, ... blocks).
    fn sniff(&self, first: &Value) -> bool {
        let chat = first["messages"]
            .as_array()
            .and_then(|m| m.first())
            .is_some_and(|m| m.get("role").is_some());
        ((chat && first.get("trajectory_format").is_none()) || is_message(first))
            && !is_messages_api_chat(first)
            && not_a_chat(first).is_none()
    }

    fn decline(&self, first: &Value) -> Option<String> {
        not_a_chat(first)
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        Some(open_chat(path, opts.run.max_record_bytes))
    }

    fn convert(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        let mut slow = None;
        let value = check_raw_node(record, &SCHEMA, true, &mut slow)?;
        let id = record_id(&value["id"], record);
        let content = steps(&value).map_err(|(pointer, message)| {
            vec![Diagnostic::error(
                &record.provenance,
                Some(&id),
                pointer,
                "chat-structure",
                message,
            )]
        })?;
        let tools = value["tools"]
            .as_array()
            .map(|t| t.iter().map(Node::to_value).collect())
            .unwrap_or_default();
        let mut left = LeftOut::new("details.openai");
        let unmapped = unmapped_parts(&value, record.provenance.line, &mut left);
        let fields = message_fields(&value);
        let mut traj = chat_trajectory(
            "openai",
            record,
            &value,
            id,
            content,
            tools,
            &["messages", "tools"],
        );
        let extra: serde_json::Map<String, Value> =
            [("unmapped_parts", unmapped), ("message_fields", fields)]
                .into_iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| (k.to_owned(), Value::Array(v)))
                .collect();
        if !extra.is_empty() {
            extend_details(&mut traj.details, "openai", extra);
        }
        if let Some(source) = traj.details.get_mut("source") {
            left.add_to(source);
        }
        Ok(vec![(traj, AdpVersion::V1_5)])
    }
}

/// The roles of OpenAI chat messages.
const ROLES: &[&str] = &[
    "system",
    "developer",
    "user",
    "assistant",
    "tool",
    "function",
];

/// The keys of an OpenAI message of which it has at least one: what it says.
const BODY: &[&str] = &["content", "tool_calls", "function_call"];

/// Why `first`, a chat record or the first message of a file of them, is not an OpenAI chat
/// though it looks like one: its messages have no `role`, or a role that is not OpenAI's
/// (Kimi CLI's `_checkpoint`, `_usage`, `_system_prompt`), or no body (Cursor's transcripts
/// put it under `message`); or the record is a Hermes session export (a `system_prompt`
/// beside messages that are rows of the session, naming its `id` as their `session_id`).
/// `None` for an OpenAI chat, or a record that is no chat at all.
fn not_a_chat(first: &Value) -> Option<String> {
    let (m, whose) = match first["messages"].as_array().and_then(|m| m.first()) {
        Some(m) if first.get("role").is_none() => (m, "its first message"),
        _ if is_message(first) => (first, "the first message"),
        _ => return None,
    };
    let Some(role) = m["role"].as_str() else {
        return Some("its `messages` have no `role`".to_owned());
    };
    if !ROLES.contains(&role) {
        return Some(format!(
            "{whose} has the role {role:?}, which is not one of OpenAI's: {}",
            ROLES.join(", ")
        ));
    }
    if BODY.iter().all(|k| m.get(*k).is_none()) {
        let under = if m["message"].is_object() {
            ": its body is under `message`"
        } else {
            ""
        };
        return Some(format!("{whose} has no `content` nor `tool_calls`{under}"));
    }
    let session = &first["id"];
    if first.get("system_prompt").is_some() && session.is_string() && m["session_id"] == *session {
        return Some(
            "a Hermes session export: a `system_prompt` beside messages that name the session as their `session_id`"
                .to_owned(),
        );
    }
    None
}

/// The content parts no step holds (audio, files, an image outside a user message, ...), each
/// with its JSON pointer and the reason, kept in `details.openai.unmapped_parts`: a part is
/// held when it has a string `text`, or is an image of a user message.
fn unmapped_parts(v: &Node, line: u64, left: &mut LeftOut) -> Vec<Value> {
    let messages = v["messages"].as_array().unwrap_or(&[]);
    let mut out = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let user = m["role"].as_str() == Some("user");
        for (k, p) in m["content"].as_array().unwrap_or(&[]).iter().enumerate() {
            if p["text"].as_str().is_some() || (user && image_url(p).is_some()) {
                continue;
            }
            let pointer = format!("/messages/{i}/content/{k}");
            let reason = match p["type"].as_str() {
                Some(t) => {
                    left.blocks += 1;
                    format!(
                        "a {t:?} part of a {:?} message is not mapped",
                        m["role"].text()
                    )
                }
                None => {
                    let reason = "a part without a string `text` is not mapped";
                    left.unmapped(line, &pointer, reason);
                    reason.to_owned()
                }
            };
            out.push(json!({
                "pointer": pointer,
                "reason": reason,
                "value": p.to_value(),
            }));
        }
    }
    out
}

/// The keys of a message the steps hold (a tool or function message's `name` names its
/// observation; an assistant's `name` is the speaker's, kept below).
fn mapped_key(role: &str, key: &str) -> bool {
    match key {
        "role" | "content" => true,
        "tool_calls" | "function_call" | "reasoning_content" => role == "assistant",
        "tool_call_id" => role == "tool",
        "name" => matches!(role, "tool" | "function"),
        _ => false,
    }
}

/// The fields of each message that no step holds (`weight`, `refusal`, a speaker's `name`,
/// provider extras, ...), and of each tool call besides its id and function (a `type` other
/// than `"function"`), each with the message's pointer, kept in
/// `details.openai.message_fields` so that nothing is dropped.
fn message_fields(v: &Node) -> Vec<Value> {
    let messages = v["messages"].as_array().unwrap_or(&[]);
    let mut out = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        out.extend(unmapped_fields(m, format!("/messages/{i}"), |k, _| {
            mapped_key(role, k)
        }));
        for (j, call) in m["tool_calls"].as_array().into_iter().flatten().enumerate() {
            let at = format!("/messages/{i}/tool_calls/{j}");
            out.extend(unmapped_fields(call, at, |k, v| match k {
                "id" | "function" => true,
                "type" => v.as_str() == Some("function"),
                _ => false,
            }));
        }
    }
    out
}

/// Image URLs among a message's content parts.
fn images_of(content: &Node) -> Vec<String> {
    content
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(image_url)
        .map(str::to_owned)
        .collect()
}

/// The URL of an image part (borrowed: [`unmapped_parts`] only asks whether there is one).
fn image_url<'n>(part: &'n Node<'_>) -> Option<&'n str> {
    part["image_url"]["url"]
        .as_str()
        .or(part["image_url"].as_str())
}

/// The steps of a chat, or the pointer and reason of the first message that cannot be mapped.
fn steps(v: &Node) -> Result<Vec<Step>, (String, String)> {
    let messages = v["messages"].as_array().unwrap_or(&[]);
    let mut out = Vec::new();
    let mut call_names: HashMap<String, String> = HashMap::new();
    let mut last_function: Option<String> = None;
    for (i, m) in messages.iter().enumerate() {
        if BODY.iter().all(|k| m.get(k).is_none()) {
            return Err((
                format!("/messages/{i}"),
                "the message has no `content` nor `tool_calls`: nothing to read".to_owned(),
            ));
        }
        let content = &m["content"];
        match m["role"].as_str().unwrap_or_default() {
            "system" | "developer" => out.push(system_step(message_text(content))),
            "user" => {
                let text = message_text(content);
                if !text.is_empty() || images_of(content).is_empty() {
                    out.push(Step::user_text(text));
                }
                for url in images_of(content) {
                    out.push(Step::image(url, Source::User));
                }
            }
            "assistant" => {
                let text = message_text(content);
                let reasoning = m["reasoning_content"].as_str().map(str::to_owned);
                let mut calls: Vec<Step> = Vec::new();
                for (j, call) in m["tool_calls"].as_array().into_iter().flatten().enumerate() {
                    let f = &call["function"];
                    let name = f["name"].as_str().unwrap_or_default().to_owned();
                    let kwargs = parse_arguments(&f["arguments"]).map_err(|e| {
                        (
                            format!("/messages/{i}/tool_calls/{j}/function/arguments"),
                            e,
                        )
                    })?;
                    let mut step = Step::api(&name, kwargs, None);
                    if let Some(id) = call["id"].as_str() {
                        call_names.insert(id.to_owned(), name.clone());
                        step = step.with_tool_call_id(id);
                    }
                    calls.push(step);
                }
                if let f @ Node::Object(_) = &m["function_call"] {
                    let name = f["name"].as_str().unwrap_or_default();
                    let kwargs = parse_arguments(&f["arguments"])
                        .map_err(|e| (format!("/messages/{i}/function_call/arguments"), e))?;
                    last_function = Some(name.to_owned());
                    calls.push(Step::api(name, kwargs, None));
                }
                if calls.is_empty() {
                    let mut step = Step::message(text, None);
                    step.set_thought(None, reasoning);
                    out.push(step);
                } else {
                    if let Some(first) = calls.first_mut() {
                        first.set_thought((!text.is_empty()).then_some(text), reasoning);
                    }
                    out.extend(calls);
                }
            }
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap_or_default();
                let Some(name) = call_names.get(id) else {
                    return Err((
                        format!("/messages/{i}/tool_call_id"),
                        format!(
                            "tool result for call {id:?}, which no earlier assistant message made"
                        ),
                    ));
                };
                let name = m["name"]
                    .as_str()
                    .map_or_else(|| name.clone(), str::to_owned);
                out.push(
                    Step::environment_text(Some(name), message_text(content)).with_tool_call_id(id),
                );
            }
            "function" => {
                let name = m["name"]
                    .as_str()
                    .map(str::to_owned)
                    .or(last_function.take());
                out.push(Step::environment_text(name, message_text(content)));
            }
            other => {
                return Err((
                    format!("/messages/{i}/role"),
                    format!("unknown role {other:?}"),
                ))
            }
        }
    }
    unlink_unanswered(&mut out);
    Ok(out)
}

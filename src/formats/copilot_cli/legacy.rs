//! Copilot CLI's legacy sessions, written before the event log: one JSON document per session,
//! `~/.copilot/history-session-state/<session id>.json` (older files
//! `session_<session id>_<epoch ms>.json`), `{sessionId, startTime, chatMessages, timeline,
//! selectedModel?}`. `chatMessages` is the conversation the model saw, as OpenAI chat messages
//! (`system`, `developer`, `user`, `assistant` with `tool_calls`, `tool` with `tool_call_id`,
//! `function`); `timeline` is what the terminal showed (`user`, `copilot`, `info`, `error`,
//! `tool_call_requested`, `tool_call_completed`, each with `id` and `timestamp`). The steps come
//! from `chatMessages`; the timeline adds each call's outcome (`result.type` success, failure,
//! rejected or denied), title and intention, the notices, and the timestamps. The current CLI
//! imports such a session as a `session.import_legacy` event, whose `legacySession` is read
//! the same way where the event comes.

use foldhash::{HashMap, HashMapExt};

use super::steps::{noted, num, Built};
use crate::formats::chat::{message_text, system_step};
use crate::formats::kit::node_fields_except;
use crate::json::{Entries, Node};
use crate::model::{Source, Step};

/// The keys of a legacy session's conversation and timeline; its other keys describe it.
const BODY: &[&str] = &["chatMessages", "timeline"];

/// True when `session` is a legacy session document: a string `sessionId`, and a
/// `chatMessages` and a `timeline` list.
pub(super) fn is_legacy(session: &Node<'_>) -> bool {
    session["sessionId"].as_str().is_some()
        && session["chatMessages"].as_array().is_some()
        && session["timeline"].as_array().is_some()
}

/// [`is_legacy`] of a parsed value (for `sniff`).
pub(super) fn is_legacy_value(first: &serde_json::Value) -> bool {
    first["sessionId"].is_string()
        && first["chatMessages"].is_array()
        && first["timeline"].is_array()
}

/// The session id of a legacy file named `session_<id>_<epoch ms>` (its stem).
pub(super) fn id_from_stem(stem: &str) -> Option<&str> {
    let rest = stem.strip_prefix("session_")?;
    let (id, ms) = rest.rsplit_once('_')?;
    (!id.is_empty() && !ms.is_empty() && ms.bytes().all(|b| b.is_ascii_digit())).then_some(id)
}

/// The keys of a chat message the steps hold: its body; its role unless it is `developer` (a
/// developer message is a system observation, its role noted).
fn mapped(role: &str, key: &str) -> bool {
    match key {
        "content" | "tool_calls" | "tool_call_id" => true,
        "role" => role != "developer",
        "name" => matches!(role, "tool" | "function"),
        _ => false,
    }
}

/// Reads legacy session `session` (at JSON pointer `base` of the record, on `line`) into
/// `built`; returns its keys other than the conversation and the timeline (`sessionId`,
/// `startTime`, `selectedModel`, ...).
pub(super) fn read<'a>(
    built: &mut Built<'a>,
    line: u64,
    base: &str,
    session: &Node<'a>,
) -> Entries<'a> {
    built.model(&session["selectedModel"]);
    let timeline = session["timeline"].as_array().unwrap_or_default();
    let mut completed: HashMap<&str, &Node<'a>> = HashMap::new();
    for (k, entry) in timeline.iter().enumerate() {
        if !entry["timestamp"].is_null() {
            if built.first_timestamp.is_none() {
                built.first_timestamp = Some(entry["timestamp"].clone());
            }
            built.last_timestamp = Some(entry["timestamp"].clone());
        }
        let kind = entry["type"].as_str().unwrap_or_default();
        match kind {
            "tool_call_completed" => {
                if let Some(id) = entry["callId"].as_str() {
                    completed.insert(id, entry);
                }
            }
            "info" | "error" => {
                let mut note = vec![
                    ("timeline".into(), num(k)),
                    ("line".into(), Node::from(line)),
                ];
                note.extend(node_fields_except(entry, &[]));
                built.lists.notices.push(Node::Object(note));
            }
            // The user's and the model's words and the calls, as the chat has them.
            _ => built.skip(&format!("timeline:{kind}")),
        }
    }
    let messages = session["chatMessages"].as_array().unwrap_or_default();
    let mut answered: Vec<&str> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let at = format!("{base}/chatMessages/{i}");
        let role = m["role"].as_str().unwrap_or_default();
        let step = built.content.len();
        match role {
            "system" | "developer" => system(built, line, &at, m),
            "user" => user(built, line, &at, m),
            "assistant" => assistant(built, line, &at, m),
            "tool" | "function" => {
                let native = m["tool_call_id"].as_str().unwrap_or_default();
                let entry = completed.get(native).copied();
                let name = m["name"]
                    .as_str()
                    .or_else(|| entry.and_then(|e| e["name"].as_str()))
                    .unwrap_or("tool_result");
                let text = message_text(&m["content"]);
                let step = built.answer(line, native, name, text.clone());
                if let Some(e) = entry {
                    answered.push(native);
                    outcome(built, step, line, native, e, Some(&text));
                }
            }
            _ => {
                built.unmapped(
                    line,
                    &at,
                    format!("a chat message with the role {role:?}, which is not OpenAI's"),
                    m,
                );
                continue;
            }
        }
        let rest = node_fields_except(m, &[]);
        let rest: Entries<'a> = rest.into_iter().filter(|(k, _)| !mapped(role, k)).collect();
        if !rest.is_empty() {
            let mut note = noted(step, line, &Node::Object(rest), &[]);
            note.insert("pointer", Node::from(at));
            match role {
                "system" | "developer" => built.lists.system_messages.push(note),
                "user" => built.lists.user_messages.push(note),
                "assistant" => built.lists.assistant_messages.push(note),
                _ => built.lists.tool_results.push(note),
            }
        }
    }
    // Calls the timeline saw finish whose result the chat does not hold.
    for entry in timeline {
        if entry["type"].as_str() != Some("tool_call_completed") {
            continue;
        }
        let native = entry["callId"].as_str().unwrap_or_default();
        if !answered.contains(&native) {
            let step = built.content.len();
            outcome(built, step, line, native, entry, None);
            if let Some(Node::Object(o)) = built.lists.tool_results.last_mut() {
                o.retain(|(k, _)| k != "step");
                o.push(("not_in_chat".into(), Node::Bool(true)));
            }
        }
    }
    node_fields_except(session, BODY)
}

/// Notes what the timeline says of call `native`'s completion (`entry`) in `tool_results`:
/// its title, intention and `result` (its `log` left out when it is the observation's
/// `text`); a call whose result is not `success` is listed in `error_results`.
fn outcome<'a>(
    built: &mut Built<'a>,
    step: usize,
    line: u64,
    native: &str,
    entry: &Node<'a>,
    text: Option<&str>,
) {
    let mut note = noted(
        step,
        line,
        entry,
        &["type", "callId", "arguments", "result"],
    );
    note.insert("id", Node::from(native.to_owned()));
    let result = &entry["result"];
    let same = text.is_some() && result["log"].as_str() == text;
    let rest = node_fields_except(result, if same { &["log"] } else { &[] });
    if !rest.is_empty() {
        note.insert("result", Node::Object(rest));
    }
    if result["type"].as_str().is_some_and(|t| t != "success") {
        built
            .lists
            .error_results
            .push(Node::from(native.to_owned()));
    }
    built.lists.tool_results.push(note);
}

/// A system (or developer) message: an observation named `system`.
fn system<'a>(built: &mut Built<'a>, line: u64, at: &str, m: &Node<'a>) {
    built.messages_in += 1;
    let text = message_text(&m["content"]);
    if text.is_empty() {
        built.unmapped(line, at, "a system message without text".into(), m);
    } else {
        built.content.push(system_step(text));
        built.messages_kept += 1;
    }
}

/// A user message: its text, then its images; other parts (audio, files) are unmapped.
fn user<'a>(built: &mut Built<'a>, line: u64, at: &str, m: &Node<'a>) {
    built.messages_in += 1;
    let first = built.content.len();
    let text = message_text(&m["content"]);
    if !text.is_empty() {
        built.content.push(Step::user_text(text));
    }
    for (k, part) in m["content"]
        .as_array()
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        if part["text"].as_str().is_some() {
            continue;
        }
        match part["image_url"]["url"].as_str() {
            Some(url) => built.content.push(Step::image(url, Source::User)),
            None => {
                let kind = part["type"].as_str().unwrap_or("untyped");
                built.unmapped(
                    line,
                    &format!("{at}/content/{k}"),
                    format!("a {kind:?} part of a user message is not mapped"),
                    part,
                );
            }
        }
    }
    if built.content.len() > first {
        built.messages_kept += 1;
    } else if m["content"].as_array().is_none_or(|p| p.is_empty()) {
        built.unmapped(line, at, "a user message without text or images".into(), m);
    }
}

/// An assistant message: its text the thought of its first call (or a message), each tool
/// call (`function` with JSON `arguments`, or `custom` with free-form `input`) an action
/// waiting for its result.
fn assistant<'a>(built: &mut Built<'a>, line: u64, at: &str, m: &Node<'a>) {
    built.messages_in += 1;
    let first = built.content.len();
    let content = &m["content"];
    let mut text = Some(message_text(content)).filter(|t| !t.trim().is_empty());
    let mut reasoning = None;
    for (k, part) in content.as_array().unwrap_or_default().iter().enumerate() {
        if part["text"].as_str().is_none() {
            built.unmapped(
                line,
                &format!("{at}/content/{k}"),
                "a part of an assistant message without text (a refusal) is not mapped".into(),
                part,
            );
        }
    }
    let calls = m["tool_calls"].as_array().unwrap_or_default();
    for (k, call) in calls.iter().enumerate() {
        let native = call["id"].as_str().unwrap_or_default();
        let pointer = format!("{at}/tool_calls/{k}");
        let step = match call["type"].as_str() {
            Some("custom") => {
                let name = call["custom"]["name"].as_str().unwrap_or_default();
                let input = Node::object([("input", call["custom"]["input"].clone())]);
                let step = built.arguments_step(line, &format!("{pointer}/custom"), &input, name);
                (step, name)
            }
            _ => {
                let f = &call["function"];
                let name = f["name"].as_str().unwrap_or_default();
                let pointer = format!("{pointer}/function/arguments");
                (
                    built.arguments_step(line, &pointer, &f["arguments"], name),
                    name,
                )
            }
        };
        let (step, name) = step;
        let step = built.with_thought(step, &mut text, &mut reasoning);
        built.push_call(line, native, step, name, Some(k));
    }
    if let f @ Node::Object(_) = &m["function_call"] {
        let name = f["name"].as_str().unwrap_or_default();
        let pointer = format!("{at}/function_call/arguments");
        let step = built.arguments_step(line, &pointer, &f["arguments"], name);
        let step = built.with_thought(step, &mut text, &mut reasoning);
        built.push_call(line, "", step, name, Some(calls.len()));
    }
    built.said(text, reasoning);
    if built.content.len() > first {
        built.messages_kept += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn older_file_names_hold_the_session_id() {
        assert_eq!(id_from_stem("session_abc-1_1759226400000"), Some("abc-1"));
        assert_eq!(id_from_stem("session_a_b_17"), Some("a_b"));
        assert_eq!(id_from_stem("session__17"), None);
        assert_eq!(id_from_stem("abc-1"), None);
        assert_eq!(id_from_stem("session_abc_x1"), None);
    }

    #[test]
    fn a_legacy_document_has_its_session_id_chat_and_timeline() {
        let doc = json!({"sessionId": "s", "startTime": "t", "chatMessages": [], "timeline": []});
        assert!(is_legacy_value(&doc));
        assert!(is_legacy(&Node::from_value(&doc)));
        for key in ["sessionId", "chatMessages", "timeline"] {
            let mut near = doc.clone();
            near[key] = json!(1);
            assert!(!is_legacy_value(&near), "{key}");
        }
    }
}

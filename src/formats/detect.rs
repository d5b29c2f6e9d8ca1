//! `--from auto`: choosing each input's converter from its first record.

use std::path::Path;

use serde_json::Value;

use super::converters;
use crate::convert::Converter;
use crate::ingest::{layout_hint, open, Frame, Framer};

/// Why an input's format could not be chosen.
#[derive(Debug, thiserror::Error)]
pub enum DetectError {
    /// The input could not be read.
    #[error("cannot read {path}: {reason}")]
    Read {
        /// The input.
        path: String,
        /// Why.
        reason: String,
    },
    /// Standard input is read once, so it cannot be sniffed.
    #[error("standard input cannot be sniffed; name its format with --from")]
    Stdin,
    /// No converter claims the input (nor its first record that is JSON).
    #[error(
        "cannot detect the format of {path}: no format claims it{}{}; name it with --from (see `trajkit formats`)",
        .what.as_ref().map(|w| format!(": {w}")).unwrap_or_default(),
        closest_text(.closest)
    )]
    Unknown {
        /// The input.
        path: String,
        /// What its first record looks like ("its first record (line 3) has keys [...]"), when
        /// the input was read as JSON records.
        what: Option<String>,
        /// The formats that come closest and why each declined ([`Converter::decline`],
        /// [`Converter::decline_path`]): `name (reason)`, at most [`CLOSEST`].
        closest: Vec<String>,
    },
    /// Several converters recognize it.
    #[error("the format of {path} is ambiguous: it looks like {candidates}; name it with --from")]
    Ambiguous {
        /// The input.
        path: String,
        /// The formats that matched.
        candidates: String,
    },
}

/// How many of the formats that decline an input ([`declined`]) an error names.
pub const CLOSEST: usize = 3;

/// `; closest: a (why), b (why)`, or nothing when no format came close.
fn closest_text(closest: &[String]) -> String {
    if closest.is_empty() {
        String::new()
    } else {
        format!("; closest: {}", closest.join(", "))
    }
}

/// The formats that come close to the input at `path` and why each declined it, as `name
/// (reason)`, in registry order, at most [`CLOSEST`]: the path ([`Converter::decline_path`]),
/// then its first record that is JSON, if any ([`Converter::decline`]).
pub fn declined(path: &Path, first: Option<&Value>) -> Vec<String> {
    let converters = converters();
    let by_path = converters
        .iter()
        .filter_map(|c| Some((c.name(), c.decline_path(path)?)));
    let by_record = converters
        .iter()
        .filter_map(|c| Some((c.name(), c.decline(first?)?)));
    by_path
        .chain(by_record)
        .take(CLOSEST)
        .map(|(name, why)| format!("{name} ({why})"))
        .collect()
}

/// The converters whose `sniff` accepts `first`.
pub fn candidates(first: &Value) -> Vec<&'static dyn Converter> {
    converters()
        .into_iter()
        .filter(|c| c.sniff(first))
        .collect()
}

/// Detects the format of the file at `path` (`-` cannot be sniffed: stdin is read once) from
/// its first record that is JSON: records before it that cannot be read or parsed are skipped
/// here (converting rejects them as usual, with file, line and reason). An empty input has
/// nothing to convert, so any converter will do; ADP is chosen. An input none of whose records
/// is JSON cannot be detected.
pub fn detect_input(path: &str) -> Result<&'static dyn Converter, DetectError> {
    let read_err = |reason: String| DetectError::Read {
        path: path.to_owned(),
        reason,
    };
    if path == "-" {
        return Err(DetectError::Stdin);
    }
    let unknown = |what: Option<String>, first: Option<&Value>| DetectError::Unknown {
        path: path.to_owned(),
        what,
        closest: declined(Path::new(path), first),
    };
    // A file a format comes close to reading whole (a database of another tool) is not read
    // as JSON records.
    let by_path = unknown(None, None);
    if matches!(&by_path, DetectError::Unknown { closest, .. } if !closest.is_empty()) {
        return Err(by_path);
    }
    let reader = open::open(path).map_err(|e| read_err(e.to_string()))?;
    let mut framer = Framer::new(reader, layout_hint(path), 64 << 20);
    // The first record that is JSON, and the first problem of those before it.
    let mut skipped: Option<(u64, String)> = None;
    let mut parsed = None;
    for frame in framer.by_ref() {
        let problem = match &frame.error {
            Some(e) => format!("cannot be read ({e})"),
            None => match serde_json::from_slice::<Value>(&frame.bytes) {
                Ok(value) => {
                    parsed = Some((frame.line, value));
                    break;
                }
                Err(e) => format!("is not JSON ({e})"),
            },
        };
        skipped.get_or_insert((frame.line, problem));
    }
    let (line, first) = match (parsed, skipped) {
        (Some(found), _) => found,
        (None, None) => return Ok(&super::adp::Adp),
        (None, Some((line, what))) => {
            return Err(unknown(
                Some(format!(
                    "its first record (line {line}) {what}, nor is any record after it"
                )),
                None,
            ))
        }
    };
    let mut found = candidates(&first);
    if let [only] = found.as_slice() {
        if only.name() == "openai" {
            if let Some(agent) = chat_owner(&first, framer) {
                found = vec![agent];
            }
        }
    }
    match found.as_slice() {
        [one] => Ok(*one),
        [] => {
            let what = match first.as_object() {
                None => "is not a JSON object".to_owned(),
                Some(o) if o.is_empty() => "is an empty object".to_owned(),
                Some(o) => {
                    let keys: Vec<&str> = o.keys().map(String::as_str).take(12).collect();
                    format!("has keys {keys:?}")
                }
            };
            Err(unknown(
                Some(format!("its first record (line {line}) {what}")),
                Some(&first),
            ))
        }
        many => Err(DetectError::Ambiguous {
            path: path.to_owned(),
            candidates: many
                .iter()
                .map(|c| c.name())
                .collect::<Vec<_>>()
                .join(" and "),
        }),
    }
}

/// How many messages of a file that is one bare chat [`chat_owner`] reads: an agent's marks
/// show in its first turns.
const CHAT_SNIFF_MESSAGES: usize = 256;

/// The converter that claims, by marks of its own ([`Converter::sniff_chat`]), the chat whose
/// first record is `first`: a record holding `messages`, or the first message of a file that
/// is one bare chat, whose next messages are the rest of `frames` (up to
/// [`CHAT_SNIFF_MESSAGES`]; records that are not JSON are skipped, as conversion will report
/// them).
fn chat_owner(
    first: &Value,
    frames: impl Iterator<Item = Frame>,
) -> Option<&'static dyn Converter> {
    let read;
    let messages: &[Value] = match first.get("messages").and_then(Value::as_array) {
        Some(messages) => messages,
        None => {
            read = std::iter::once(first.clone())
                .chain(frames.filter_map(|f| match f.error {
                    None => serde_json::from_slice::<Value>(&f.bytes).ok(),
                    Some(_) => None,
                }))
                .take(CHAT_SNIFF_MESSAGES)
                .collect::<Vec<_>>();
            &read
        }
    };
    let owners: Vec<_> = converters()
        .into_iter()
        .filter(|c| c.sniff_chat(messages))
        .collect();
    match owners.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(v: Value) -> Vec<&'static str> {
        candidates(&v).iter().map(|c| c.name()).collect()
    }

    #[test]
    fn each_format_is_claimed_by_exactly_its_converter() {
        assert_eq!(
            names(json!({"id": "a", "content": [{"class_": "message_action", "content": "x"}]})),
            vec!["adp"]
        );
        assert_eq!(
            names(json!({"trajectory_id": "t", "task": {}, "decisions": [], "events": []})),
            vec!["memabra"]
        );
        assert_eq!(
            names(
                json!({"loop_id": "ralph-x", "iteration": 0, "actor_output": {}, "evaluator_output": {}})
            ),
            vec!["reflexion"]
        );
        assert_eq!(
            names(
                json!({"trajectory": [{"action": "ls", "observation": ""}], "history": [], "info": {}})
            ),
            vec!["swe-agent"]
        );
        assert_eq!(
            names(json!({"instance_id": "i", "trajectory": [{"role": "system", "text": null}]})),
            vec!["swe-agent"]
        );
        assert_eq!(
            names(json!({"id": 0, "source": "user", "action": "message", "args": {}})),
            vec!["openhands"]
        );
        assert_eq!(
            names(
                json!({"instance_id": "i", "history": [{"id": 1, "observation": "run", "content": ""}]})
            ),
            vec!["openhands"]
        );
        // Chats SWE-agent and OpenHands wrote are OpenAI chats to detection; `--from` picks
        // the agent's conventions.
        assert_eq!(
            names(
                json!({"instance_id": "i", "resolved": true, "messages": [{"role": "system", "content": ""}]})
            ),
            vec!["openai"]
        );
        // mini-swe-agent runs hold a chat, but name their own trajectory format (format 1
        // used to pass for an OpenAI chat, format 1.1 to be refused for its `exit` role).
        for format in ["mini-swe-agent-1", "mini-swe-agent-1.1"] {
            assert_eq!(
                names(json!({
                    "info": {"exit_status": "Submitted", "mini_version": "2.1.0"},
                    "messages": [{"role": "system", "content": ""}, {"role": "exit", "content": ""}],
                    "trajectory_format": format
                })),
                vec!["mini-swe-agent"]
            );
        }
        // A bare message is the first of a file that is one chat.
        assert_eq!(
            names(json!({"role": "system", "content": "You are terse."})),
            vec!["openai"]
        );
        // A SWE-agent .traj with a history and no trajectory.
        assert_eq!(
            names(json!({
                "history": [{"role": "system", "content": "", "agent": "main", "message_type": "system_prompt"}],
                "info": {"exit_status": "submitted"}
            })),
            vec!["swe-agent"]
        );
        // Claude Code sessions, whatever bookkeeping line comes first.
        for first in [
            json!({"type": "user", "sessionId": "s", "uuid": "u", "message": {}}),
            json!({"type": "queue-operation", "operation": "enqueue", "sessionId": "s"}),
            json!({"type": "summary", "summary": "x", "leafUuid": "u"}),
            json!({"type": "file-history-snapshot", "messageId": "m", "snapshot": {},
                "isSnapshotUpdate": false}),
        ] {
            assert_eq!(names(first), vec!["claude-code"]);
        }
        // Kimi CLI context files start with a pseudo-role line of Kimi's bookkeeping.
        for first in [
            json!({"role": "_checkpoint", "id": 0}),
            json!({"role": "_system_prompt", "content": "You are Kimi."}),
        ] {
            assert_eq!(names(first), vec!["kimi-cli"]);
        }
        // Qwen Code: Claude Code's envelope, Gemini's bodies; and its older documents.
        for first in [
            json!({"uuid": "u", "parentUuid": null, "sessionId": "s", "type": "user",
                "message": {"role": "user", "parts": [{"text": "hi"}]}}),
            json!({"uuid": "u", "sessionId": "s", "type": "system", "subtype": "custom_title",
                "systemPayload": {"customTitle": "t"}}),
            json!({"sessionId": "s", "projectHash": "p",
                "messages": [{"id": "1", "type": "qwen", "content": "hi"}]}),
        ] {
            assert_eq!(names(first), vec!["qwen-code"]);
        }
        assert!(names(json!({"messages": []})).is_empty());
        assert!(names(json!([1, 2])).is_empty());
    }

    /// Records that have some of a format's fields but not those that make it the format: no
    /// format claims them, and the one that comes close says why it declined.
    #[test]
    fn a_near_miss_is_claimed_by_none_and_declined_with_a_reason() {
        let cases = [
            (
                json!({"uuid": "u", "sessionId": "s", "type": "tool_result",
                    "message": {"role": "user", "content": "x"}}),
                "claude-code (lines have `sessionId` but the type `tool_result`",
            ),
            // Gemini CLI's and Qwen Code's prompt log (`logs.json`).
            (
                json!({"sessionId": "s", "messageId": 0, "type": "user", "message": "hi"}),
                "claude-code (lines have `sessionId` but a string `message`",
            ),
            // A pseudo-role line that is not Kimi CLI's as written (an extra key).
            (
                json!({"role": "_system_prompt", "content": "You are Kimi.", "id": 1}),
                "openai (the first message has the role \"_system_prompt\", which is not one of OpenAI's",
            ),
            (
                json!({"messages": [{"info": {}, "parts": []}]}),
                "openai (its `messages` have no `role`)",
            ),
        ];
        // A Hermes session export, which `openai` declines, is `hermes`'s.
        let hermes = json!({"id": "s1", "system_prompt": "p",
            "messages": [{"id": 9, "session_id": "s1", "role": "user", "content": "hi"}]});
        assert_eq!(names(hermes), vec!["hermes"]);
        // Qwen Code's body without its uuid: both agents whose envelope it has say why.
        let placeless = json!({"sessionId": "s", "type": "user",
            "message": {"role": "user", "parts": [{"text": "hi"}]}});
        assert!(names(placeless.clone()).is_empty());
        let closest = declined(Path::new("in.jsonl"), Some(&placeless));
        assert!(
            closest
                .iter()
                .any(|c| c.starts_with("qwen-code (lines have")),
            "{closest:?}"
        );
        for (first, why) in cases {
            assert!(names(first.clone()).is_empty(), "{first}");
            let closest = declined(Path::new("in.jsonl"), Some(&first));
            assert!(
                matches!(closest.as_slice(), [one] if one.starts_with(why)),
                "{first}: {closest:?}"
            );
        }
        // A Cursor-like line whose `message` has no `content` list: Cursor's reader and
        // OpenAI's both come close.
        let first = json!({"role": "user", "message": {"text": "hi"}});
        assert!(names(first.clone()).is_empty());
        let closest = declined(Path::new("in.jsonl"), Some(&first));
        assert!(
            closest
                .iter()
                .any(|c| c.starts_with("cursor (a `message` without a `content` list)")),
            "{closest:?}"
        );
        // What a format claims, or what is nothing like any format, none declines.
        for first in [
            json!({"role": "user", "content": "hi"}),
            json!({"messages": [{"role": "tool", "tool_call_id": "c", "content": "ok"}]}),
            json!({"type": "user", "sessionId": "s", "message": {"role": "user", "content": "hi"}}),
            json!({"type": "session", "version": 3, "id": "s"}),
        ] {
            assert!(
                declined(Path::new("in.jsonl"), Some(&first)).is_empty(),
                "{first}"
            );
        }
    }
}

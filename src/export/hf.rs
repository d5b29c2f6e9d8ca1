//! `--to hf`: records for TRL / transformers chat templates (and axolotl's `chat_template`).
//!
//! `{"id", "messages": [...], "tools": [...]}`: assistant messages carry `content` (a string,
//! `""` when they only call tools), `reasoning_content` when they have a thought (with
//! `--thoughts reasoning`, the default here) and `tool_calls: [{id, type: "function",
//! function: {name, arguments}}]` with `arguments` a JSON object; tool messages carry
//! `tool_call_id` and `name`; an assistant turn marked not for training carries `training: false`
//! (axolotl's `message_field_training: training`).

use std::borrow::Cow;

use serde::Serialize;

use super::conversation::{Conversation, Turn};
use super::openai::{Tool, ToolCall};
use super::options::{visible, SftOptions, Thoughts};
use super::tools::ToolSpec;
use crate::model::JsonObject;

#[derive(Serialize)]
struct Record<'a> {
    messages: Vec<Message<'a>>,
    tools: Vec<Tool<'a>>,
}

/// One message, as the record and chat templates see it.
#[derive(Serialize)]
pub struct Message<'a> {
    role: &'static str,
    content: Cow<'a, str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<ToolCall<'a, &'a JsonObject>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    /// `false` on an assistant turn marked not for training (axolotl's
    /// `message_field_training`).
    #[serde(skip_serializing_if = "Option::is_none")]
    training: Option<bool>,
}

impl<'a> Message<'a> {
    /// The message's role.
    pub fn role(&self) -> &'static str {
        self.role
    }

    /// The message as transformers hands it to a chat template: with a `reasoning_content`,
    /// the same text first under `thinking` too, which some templates read (gpt-oss's,
    /// LFM2's).
    pub fn for_template(&self) -> ForTemplate<'_, 'a> {
        ForTemplate {
            thinking: self.reasoning_content,
            message: self,
        }
    }
}

/// [`Message::for_template`].
#[derive(Serialize)]
pub struct ForTemplate<'m, 'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<&'a str>,
    #[serde(flatten)]
    message: &'m Message<'a>,
}

/// Writes `conv` as one record (no trailing newline, no id).
pub fn render(
    conv: &Conversation,
    tools: &[ToolSpec<'_>],
    opts: &SftOptions,
    out: &mut Vec<u8>,
) -> serde_json::Result<()> {
    let record = Record {
        messages: messages(conv, opts),
        tools: tools.iter().map(Tool::new).collect(),
    };
    serde_json::to_writer(out, &record)
}

/// The messages of `conv`: the system prompt, then one per turn.
pub fn messages<'a>(conv: &'a Conversation, opts: &SftOptions) -> Vec<Message<'a>> {
    let mut messages = Vec::with_capacity(conv.turns.len() + 1);
    if let Some(s) = &conv.system {
        messages.push(plain("system", s));
    }
    for turn in &conv.turns {
        messages.push(match turn {
            Turn::User(text) => plain("user", text),
            Turn::Tool(r) => Message {
                tool_call_id: Some(&r.id),
                name: Some(&r.name),
                ..plain("tool", &r.content)
            },
            Turn::Assistant(a) => Message {
                role: "assistant",
                content: visible(&a.text, &a.thought, opts.thoughts),
                reasoning_content: (opts.thoughts == Thoughts::Reasoning && !a.thought.is_empty())
                    .then_some(a.thought.as_str()),
                tool_calls: (!a.calls.is_empty()).then(|| {
                    a.calls
                        .iter()
                        .map(|c| ToolCall::new(&c.id, &c.name, &c.arguments))
                        .collect()
                }),
                tool_call_id: None,
                name: None,
                training: a.untrained.then_some(false),
            },
        });
    }
    messages
}

fn plain<'a>(role: &'static str, content: &'a str) -> Message<'a> {
    Message {
        role,
        content: Cow::Borrowed(content),
        reasoning_content: None,
        tool_calls: None,
        tool_call_id: None,
        name: None,
        training: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_see_reasoning_also_as_thinking_first() {
        let mut m = Message {
            reasoning_content: Some("t"),
            ..plain("assistant", "a")
        };
        let json = |m: &Message<'_>| serde_json::to_string(&m.for_template()).expect("serializes");
        // transformers' order: `thinking`, the message's own keys, `reasoning_content` in place.
        assert_eq!(
            json(&m),
            r#"{"thinking":"t","role":"assistant","content":"a","reasoning_content":"t"}"#
        );
        m.reasoning_content = None;
        assert_eq!(json(&m), r#"{"role":"assistant","content":"a"}"#);
    }
}

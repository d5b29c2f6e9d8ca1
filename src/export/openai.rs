//! `--to openai`: OpenAI chat fine-tuning records.
//!
//! `{"messages": [...], "tools": [...], "parallel_tool_calls": bool}`: assistant messages carry
//! `tool_calls: [{id, type: "function", function: {name, arguments}}]` with `arguments` a JSON
//! string, and `content: null` when they say nothing else; tool messages carry
//! `tool_call_id`; with `--train-on last-assistant` assistant messages carry `weight` (1 on the
//! last, 0 on the others), and when a turn is marked not for training (ATIF copied context, ...)
//! every assistant message carries one (0 on those turns). `parallel_tool_calls` is true when some assistant message makes more than
//! one call.

use std::borrow::Cow;

use serde::Serialize;

use super::conversation::{Conversation, Turn};
use super::options::{visible, SftOptions, TrainOn};
use super::tools::ToolSpec;

#[derive(Serialize)]
struct Record<'a> {
    messages: Vec<Message<'a>>,
    tools: Vec<Tool<'a>>,
    parallel_tool_calls: bool,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<ToolCall<'a, String>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    weight: Option<u8>,
}

/// A tool spec as OpenAI and chat templates list it: `{type: "function", function: SPEC}`.
#[derive(Serialize)]
pub struct Tool<'a> {
    r#type: &'static str,
    function: &'a ToolSpec<'a>,
}

impl<'a> Tool<'a> {
    /// Wraps a function spec.
    pub fn new(function: &'a ToolSpec<'a>) -> Self {
        Tool {
            r#type: "function",
            function,
        }
    }
}

/// A tool call as OpenAI and chat templates write it; `A` is the arguments' form (a JSON
/// string here, an object for hf).
#[derive(Serialize)]
pub struct ToolCall<'a, A> {
    id: &'a str,
    r#type: &'static str,
    function: Function<'a, A>,
}

#[derive(Serialize)]
struct Function<'a, A> {
    name: &'a str,
    arguments: A,
}

impl<'a, A> ToolCall<'a, A> {
    /// The call `id` of `name` with `arguments`.
    pub fn new(id: &'a str, name: &'a str, arguments: A) -> Self {
        ToolCall {
            id,
            r#type: "function",
            function: Function { name, arguments },
        }
    }
}

/// Writes `conv` as one OpenAI record (no trailing newline).
pub fn render(
    conv: &Conversation,
    tools: &[ToolSpec<'_>],
    opts: &SftOptions,
    out: &mut Vec<u8>,
) -> serde_json::Result<()> {
    let mut messages = Vec::with_capacity(conv.turns.len() + 1);
    if let Some(s) = &conv.system {
        messages.push(plain("system", Cow::Borrowed(s)));
    }
    let last_assistant = conv
        .turns
        .iter()
        .rposition(|t| matches!(t, Turn::Assistant(_)));
    // Turns marked not for training get weight 0, so every assistant message then has one.
    let marked = conv
        .turns
        .iter()
        .any(|t| matches!(t, Turn::Assistant(a) if a.untrained));
    for (k, turn) in conv.turns.iter().enumerate() {
        messages.push(match turn {
            Turn::User(text) => plain("user", Cow::Borrowed(text)),
            Turn::Tool(r) => Message {
                tool_call_id: Some(&r.id),
                ..plain("tool", Cow::Borrowed(&r.content))
            },
            Turn::Assistant(a) => {
                let content = visible(&a.text, &a.thought, opts.thoughts);
                let tool_calls = if a.calls.is_empty() {
                    None
                } else {
                    let calls = a.calls.iter().map(|c| {
                        Ok(ToolCall::new(
                            &c.id,
                            &c.name,
                            serde_json::to_string(&c.arguments)?,
                        ))
                    });
                    Some(calls.collect::<serde_json::Result<Vec<_>>>()?)
                };
                Message {
                    role: "assistant",
                    content: (!(content.is_empty() && tool_calls.is_some())).then_some(content),
                    tool_calls,
                    tool_call_id: None,
                    weight: match opts.train_on {
                        TrainOn::LastAssistant => {
                            Some(u8::from(Some(k) == last_assistant && !a.untrained))
                        }
                        _ => marked.then_some(u8::from(!a.untrained)),
                    },
                }
            }
        });
    }
    let record = Record {
        messages,
        tools: tools.iter().map(Tool::new).collect(),
        parallel_tool_calls: conv.has_parallel_calls(),
    };
    serde_json::to_writer(out, &record)
}

fn plain<'a>(role: &'static str, content: Cow<'a, str>) -> Message<'a> {
    Message {
        role,
        content: Some(content),
        tool_calls: None,
        tool_call_id: None,
        weight: None,
    }
}

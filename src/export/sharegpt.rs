//! `--to sharegpt`: LLaMA-Factory's ShareGPT format with tools.
//!
//! `{"id", "conversations": [{"from", "value"}], "system": str, "tools": str}`. `from` is
//! `human` or `observation` at odd positions (1st, 3rd, ...) and `gpt` or `function_call` at
//! even ones, and the list has an even length: LLaMA-Factory's converter skips a row that
//! breaks this, so consecutive user inputs and tool results merge into one message (an
//! `observation` when it starts with a tool result, parts joined by a blank line). An
//! assistant turn that calls tools is one `function_call` whose value is the call
//! `{"name", "arguments"}` (a list of them for parallel calls) as JSON, preceded with
//! `--thoughts think` (the default here) by `<think>\n…\n</think>\n\n` holding its thought and
//! text, which recent LLaMA-Factory versions split off. `tools` is the JSON text of a list of
//! `{name, description, parameters}` (`""` when none); `system` is `""` when there is none.

use serde::Serialize;

use super::conversation::{Conversation, Turn, Untrainable};
use super::options::{visible, SftOptions, Thoughts};
use super::tools::ToolSpec;
use crate::model::JsonObject;

#[derive(Serialize)]
struct Record<'a> {
    conversations: Vec<Message>,
    system: &'a str,
    tools: String,
}

#[derive(Serialize)]
struct Message {
    from: &'static str,
    value: String,
}

#[derive(Serialize)]
struct Call<'a> {
    name: &'a str,
    arguments: &'a JsonObject,
}

/// Why a conversation cannot be written in this format.
#[derive(Debug)]
pub enum Error {
    /// The conversation does not fit.
    Untrainable(Untrainable),
    /// Serializing failed.
    Json(serde_json::Error),
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Json(e)
    }
}

/// Writes `conv` as one record (no trailing newline, no id).
pub fn render(
    conv: &Conversation,
    tools: &[ToolSpec<'_>],
    opts: &SftOptions,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    if matches!(conv.turns.first(), Some(Turn::Assistant(_))) {
        return Err(Error::Untrainable(Untrainable::new(
            "sharegpt-starts-with-assistant",
            "/content/0",
            "the conversation starts with an assistant turn, which LLaMA-Factory's ShareGPT format cannot hold (its first message is human or observation)",
        )));
    }
    let mut conversations: Vec<Message> = Vec::with_capacity(conv.turns.len());
    for turn in &conv.turns {
        let (from, value) = match turn {
            Turn::User(text) => ("human", text.clone()),
            Turn::Tool(r) => ("observation", r.content.clone()),
            Turn::Assistant(a) if a.calls.is_empty() => (
                "gpt",
                visible(&a.text, &a.thought, opts.thoughts).into_owned(),
            ),
            Turn::Assistant(a) => {
                let calls: Vec<Call> = a
                    .calls
                    .iter()
                    .map(|c| Call {
                        name: &c.name,
                        arguments: &c.arguments,
                    })
                    .collect();
                let json = match calls.as_slice() {
                    [one] => serde_json::to_string(one)?,
                    _ => serde_json::to_string(&calls)?,
                };
                let mut said = a.thought.clone();
                if !a.text.is_empty() {
                    if !said.is_empty() {
                        said.push_str("\n\n");
                    }
                    said.push_str(&a.text);
                }
                let value = if opts.thoughts == Thoughts::Think && !said.is_empty() {
                    format!("<think>\n{said}\n</think>\n\n{json}")
                } else {
                    json
                };
                ("function_call", value)
            }
        };
        let odd_side = matches!(from, "human" | "observation");
        match conversations.last_mut() {
            Some(prev) if odd_side && matches!(prev.from, "human" | "observation") => {
                if !value.is_empty() {
                    if !prev.value.is_empty() {
                        prev.value.push_str("\n\n");
                    }
                    prev.value.push_str(&value);
                }
            }
            _ => conversations.push(Message { from, value }),
        }
    }
    let tools = if tools.is_empty() {
        String::new()
    } else {
        serde_json::to_string(tools)?
    };
    let record = Record {
        conversations,
        system: conv.system.as_deref().unwrap_or(""),
        tools,
    };
    serde_json::to_writer(out, &record)?;
    Ok(())
}

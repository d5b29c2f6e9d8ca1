//! A session's lines sorted by what they are: the conversation's messages (their steps are the
//! `anthropic` reader's), the hook runs Droid records as empty message rows, and Droid's
//! bookkeeping lines, kept in `details.droid` at the step they come before.

use std::borrow::Cow;

use foldhash::{HashMap, HashMapExt};

use crate::convert::LeftOut;
use crate::formats::anthropic::steps::Notes;
use crate::formats::kit::node_fields_except;
use crate::json::Node;

/// A line kept in `details.droid`: its line number, the number of conversation messages before
/// it, and the line.
type Placed<'n, 'a> = (u64, usize, &'n Node<'a>);

/// The lines of a session after its header.
pub(super) struct Sorted<'n, 'a> {
    /// The `message` of each conversation row, in file order.
    pub messages: Vec<&'n Node<'a>>,
    /// The line of each of `messages`.
    pub message_lines: Vec<u64>,
    /// The conversation rows themselves.
    rows: Vec<&'n Node<'a>>,
    /// Message rows that record a hook's run (`hookEventName`, no content): no step.
    hooks: Vec<Placed<'n, 'a>>,
    todos: Vec<Placed<'n, 'a>>,
    compactions: Vec<Placed<'n, 'a>>,
    outcomes: Vec<Placed<'n, 'a>>,
    ends: Vec<Placed<'n, 'a>>,
    /// Lines of a type Droid's reader does not know.
    others: Vec<Placed<'n, 'a>>,
    /// Lines without a string `type`, or message rows whose `message` is no object.
    wrong: Vec<(u64, &'static str, &'static str)>,
    /// Every line's `timestamp`, in file order.
    timestamps: Vec<&'n str>,
}

/// Sorts `body`, the numbered lines after the header.
pub(super) fn sort<'n, 'a>(body: &'n [(u64, &'n Node<'a>)]) -> Sorted<'n, 'a> {
    let mut s = Sorted {
        messages: Vec::new(),
        message_lines: Vec::new(),
        rows: Vec::new(),
        hooks: Vec::new(),
        todos: Vec::new(),
        compactions: Vec::new(),
        outcomes: Vec::new(),
        ends: Vec::new(),
        others: Vec::new(),
        wrong: Vec::new(),
        timestamps: Vec::new(),
    };
    for &(line, row) in body {
        if let Some(t) = row["timestamp"].as_str() {
            s.timestamps.push(t);
        }
        let at = s.messages.len();
        let list = match row["type"].as_str() {
            Some("message") => {
                let message = &row["message"];
                if !message.is_object() {
                    s.wrong.push((
                        line,
                        "/message",
                        "a message row whose message is not an object",
                    ));
                } else if message.get("hookEventName").is_some() {
                    s.hooks.push((line, at, row));
                } else {
                    s.messages.push(message);
                    s.message_lines.push(line);
                    s.rows.push(row);
                }
                continue;
            }
            Some("todo_state") => &mut s.todos,
            Some("compaction_state") => &mut s.compactions,
            Some("agent_turn_outcome") => &mut s.outcomes,
            Some("session_end") => &mut s.ends,
            Some(_) => &mut s.others,
            None => {
                s.wrong.push((
                    line,
                    "/type",
                    "a line without a string type is not a Droid line",
                ));
                continue;
            }
        };
        list.push((line, at, row));
    }
    s
}

/// The first step at or after conversation message `at`: the first step of the first message
/// from `at` on that gave one, else the end of the trajectory.
fn step_at(first_step: &[Option<usize>], at: usize, steps: usize) -> u64 {
    first_step
        .get(at..)
        .and_then(|rest| rest.iter().flatten().next().copied())
        .unwrap_or(steps) as u64
}

/// A non-empty list node, or nothing.
fn list(items: Vec<Node<'_>>) -> Option<Node<'_>> {
    (!items.is_empty()).then_some(Node::Array(items))
}

impl<'n, 'a> Sorted<'n, 'a> {
    /// `details.droid`: the header, the sidecar settings, the rows' envelopes, the bookkeeping
    /// lines and `notes` (the steps' own lists), counting in `left` the lines no step or list
    /// holds whole.
    pub fn details(
        &self,
        header: &'n Node<'a>,
        bundle: &'n Node<'a>,
        first_step: &[Option<usize>],
        steps: usize,
        notes: Notes<'a>,
        left: &mut LeftOut,
    ) -> Node<'a> {
        let step = |at: usize| Node::from(step_at(first_step, at, steps));
        let placed = |items: &[Placed<'n, 'a>]| -> Vec<Node<'a>> {
            items
                .iter()
                .map(|&(line, at, row)| {
                    let mut fields: Vec<(Cow<'a, str>, Node<'a>)> = vec![
                        (Cow::Borrowed("line"), Node::from(line)),
                        (Cow::Borrowed("step"), step(at)),
                    ];
                    fields.extend(node_fields_except(row, &["type"]));
                    Node::Object(fields)
                })
                .collect()
        };

        // Envelopes: each row's keys but `type` and `message`, and its message's but `role`,
        // `content` and a copy of its thinking.
        let mut copies = 0u64;
        let mut seen: HashMap<&str, u64> = HashMap::new();
        let mut reused = Vec::new();
        let mut models: Vec<&str> = Vec::new();
        let mut envelopes = Vec::with_capacity(self.rows.len());
        for (i, row) in self.rows.iter().enumerate() {
            let line = self.message_lines.get(i).copied().unwrap_or_default();
            let message = &row["message"];
            if let Some(id) = row["id"].as_str() {
                match seen.get(id) {
                    Some(&first) => reused.push(Node::object([
                        ("line", Node::from(line)),
                        ("id", Node::from(id.to_owned())),
                        ("first_line", Node::from(first)),
                    ])),
                    None => {
                        seen.insert(id, line);
                    }
                }
            }
            if let Some(model) = message["modelId"].as_str() {
                if !models.contains(&model) {
                    models.push(model);
                }
            }
            let copy = is_thinking_copy(message);
            copies += u64::from(copy);
            let mut keep: Vec<&str> = vec!["role", "content"];
            if copy {
                keep.push("chatCompletionReasoningContent");
            }
            let own = node_fields_except(message, &keep);
            let mut fields: Vec<(Cow<'a, str>, Node<'a>)> = vec![
                (Cow::Borrowed("line"), Node::from(line)),
                (
                    Cow::Borrowed("step"),
                    first_step
                        .get(i)
                        .copied()
                        .flatten()
                        .map_or(Node::Null, |s| Node::from(s as u64)),
                ),
            ];
            fields.extend(node_fields_except(row, &["type", "message"]));
            if !own.is_empty() {
                fields.push((Cow::Borrowed("message"), Node::Object(own)));
            }
            envelopes.push(Node::Object(fields));
        }

        // Compactions: where the kept messages start, after the anchor message when there is
        // one, else right after the compaction.
        let by_id: HashMap<&str, usize> = self
            .rows
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r["id"].as_str().map(|id| (id, i)))
            .collect();
        let mut compactions = placed(&self.compactions);
        for (c, &(_, at, row)) in compactions.iter_mut().zip(&self.compactions) {
            let kept = match row["anchorMessage"]["id"].as_str() {
                Some(anchor) => by_id.get(anchor).map_or(Node::Null, |&i| step(i + 1)),
                None => step(at),
            };
            c.insert("kept_from_step", kept);
        }

        left.lines += (self.hooks.len() + self.others.len()) as u64;
        for &(line, pointer, why) in &self.wrong {
            left.wrong_type(line, pointer, why);
        }

        let mut droid: Vec<(Cow<'a, str>, Node<'a>)> = vec![(
            Cow::Borrowed("session"),
            Node::Object(node_fields_except(header, &["type"])),
        )];
        let mut put = |key: &'static str, value: Option<Node<'a>>| {
            if let Some(v) = value {
                droid.push((Cow::Borrowed(key), v));
            }
        };
        // A subagent's session names the session and the call that spawned it.
        put(
            "agent",
            match (
                header["callingSessionId"].as_str(),
                header["callingToolUseId"].as_str(),
            ) {
                (Some(session), Some(call)) => Some(Node::object([
                    ("parent_trajectory_id", Node::from(session.to_owned())),
                    ("spawned_by", Node::from(call.to_owned())),
                ])),
                _ => None,
            },
        );
        put("settings", bundle.get("settings").cloned());
        put("settings_error", bundle.get("settings_error").cloned());
        put(
            "models",
            list(
                models
                    .into_iter()
                    .map(|m| Node::from(m.to_owned()))
                    .collect(),
            ),
        );
        put(
            "timestamps",
            self.timestamps
                .first()
                .zip(self.timestamps.last())
                .map(|(f, l)| {
                    Node::object([
                        ("first", Node::from((*f).to_owned())),
                        ("last", Node::from((*l).to_owned())),
                    ])
                }),
        );
        put("messages", list(envelopes));
        put("todos", list(placed(&self.todos)));
        put("compactions", list(compactions));
        put("turn_outcomes", list(placed(&self.outcomes)));
        put("session_ends", list(placed(&self.ends)));
        put("hooks", list(placed(&self.hooks)));
        put("other_lines", list(placed(&self.others)));
        put("reused_ids", list(reused));
        put("thinking_copies", (copies > 0).then(|| Node::from(copies)));
        for (key, value) in notes.into_entries() {
            droid.push((Cow::Borrowed(key), value));
        }
        Node::Object(droid)
    }
}

/// True when `message` carries its thinking twice: Droid writes a chat-completions model's
/// reasoning both as `thinking` blocks and as `chatCompletionReasoningContent`.
fn is_thinking_copy(message: &Node<'_>) -> bool {
    let Some(copy) = message["chatCompletionReasoningContent"].as_str() else {
        return false;
    };
    let blocks = message["content"].as_array().unwrap_or(&[]);
    let mut thinking = blocks
        .iter()
        .filter(|b| b["type"].as_str() == Some("thinking"))
        .filter_map(|b| b["thinking"].as_str());
    match (thinking.next(), thinking.next()) {
        (Some(only), None) => only == copy,
        (Some(first), Some(second)) => {
            let joined: String = [first, second].into_iter().chain(thinking).collect();
            joined == copy
        }
        (None, _) => copy.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn a_reasoning_copy_is_the_thinking_joined() {
        let copy = |m: Value| is_thinking_copy(&Node::from(m));
        assert!(copy(
            json!({"content": [{"type": "thinking", "thinking": "ab"}],
            "chatCompletionReasoningContent": "ab"})
        ));
        assert!(copy(
            json!({"content": [{"type": "thinking", "thinking": "a"},
            {"type": "thinking", "thinking": "b"}], "chatCompletionReasoningContent": "ab"})
        ));
        assert!(!copy(
            json!({"content": [{"type": "thinking", "thinking": "a"}],
            "chatCompletionReasoningContent": "other"})
        ));
        assert!(!copy(json!({"content": [{"type": "text", "text": "a"}]})));
    }
}

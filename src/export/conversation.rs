//! The target-independent conversation an ADP trajectory becomes before a target renders it.
//!
//! Mapping (docs/export.md, "Mapping rules"):
//! - a maximal run of consecutive actions is one assistant turn: message texts and (by default)
//!   `description`s form its text, `reasoning_content` its thought, api and code actions its
//!   tool calls (code actions through [`CodeTools`]);
//! - an observation carrying the `tool_call_id` of a call still waiting is that call's result;
//!   any other observation is user input, and consecutive user inputs merge into one turn;
//! - a message wrapped in `<finish> … </finish>` contributes the answer inside;
//! - turns after the last assistant turn are dropped (they train nothing), with the results of
//!   that turn's calls: the final assistant turn is the only one whose calls may go unanswered
//!   (the call itself is the training target, as in OpenAI's function-calling examples);
//! - a call whose action has no `tool_call_id` (ADP's way of saying no result was recorded)
//!   that is still waiting when the conversation goes on (a later action, or user input) is
//!   answered by a tool message with empty content; a call with an id stays an error
//!   (`tool-call-unanswered`).
//!
//! A trajectory that cannot become a trainable conversation is [`Untrainable`], with a rule
//! and a message for the rejects file.

use serde_json::Value;

use super::code_tools::CodeTools;
use crate::choice::choice;
use crate::model::{JsonObject, Step, Trajectory, WebObservation};

/// One tool call of an assistant turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The call id (the action's `tool_call_id`, else `call_{content index}`).
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments.
    pub arguments: JsonObject,
}

/// An assistant turn: text, thought and tool calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AssistantTurn {
    /// Visible text (message contents, descriptions), parts joined by a blank line.
    pub text: String,
    /// Reasoning, placed by the target's thought option.
    pub thought: String,
    /// Tool calls, in step order.
    pub calls: Vec<Call>,
    /// A step of the turn is marked not for training (ATIF copied context or a step with
    /// `llm_call_count: 0`, SWE-agent `mask: false`: `excluded_from_training` in the
    /// trajectory's details): loss masks leave the turn out.
    pub untrained: bool,
}

/// A tool call's result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The id of the call answered.
    pub id: String,
    /// The name of the tool called.
    pub name: String,
    /// The observation rendered as text.
    pub content: String,
}

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Turn {
    /// User input: a task, feedback, an observation not answering a call.
    User(String),
    /// The agent.
    Assistant(AssistantTurn),
    /// The result of a call of the previous assistant turn.
    Tool(ToolResult),
}

/// A trajectory as a conversation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    /// The system prompt (`--system-prompt`, injected reflections), if any.
    pub system: Option<String>,
    /// The turns; the last one is an assistant turn.
    pub turns: Vec<Turn>,
}

impl Conversation {
    /// True when some assistant turn has a thought: only then does it matter where thoughts
    /// go (`--thoughts`).
    pub fn has_thoughts(&self) -> bool {
        self.turns
            .iter()
            .any(|t| matches!(t, Turn::Assistant(a) if !a.thought.is_empty()))
    }

    /// True when some assistant turn makes more than one call.
    pub fn has_parallel_calls(&self) -> bool {
        self.turns
            .iter()
            .any(|t| matches!(t, Turn::Assistant(a) if a.calls.len() > 1))
    }

    /// Every call, in order.
    pub fn calls(&self) -> impl Iterator<Item = &Call> {
        self.turns.iter().flat_map(|t| match t {
            Turn::Assistant(a) => a.calls.as_slice(),
            _ => &[],
        })
    }
}

/// The rule of a trajectory with no assistant turn: export filters it (nothing to learn)
/// rather than rejecting it.
pub const NO_ASSISTANT_TURN: &str = "no-assistant-turn";

/// Why a trajectory cannot train.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untrainable {
    /// The rule (`no-assistant-turn`, `tool-call-unanswered`, `empty-turn`, ...).
    pub rule: &'static str,
    /// JSON pointer into the trajectory.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

impl Untrainable {
    /// A problem at `pointer`.
    pub fn new(rule: &'static str, pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Untrainable {
            rule,
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}

choice!(
    /// Where an action's `description` goes.
    DescriptionAs, "--description-as value", default = Text {
        /// Into the assistant's visible text (ADP descriptions are mostly what the agent said).
        Text = "text",
        /// Into the thought, with `reasoning_content`.
        Thought = "thought",
        /// Nowhere.
        Drop = "drop",
    }
);

/// Options of [`build`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MapOptions {
    /// How code actions become tool calls.
    pub code_tools: CodeTools,
    /// Where descriptions go.
    pub description: DescriptionAs,
    /// False when the target drops thoughts: a turn with only a thought is then empty.
    pub keep_thoughts: bool,
    /// The system prompt.
    pub system_prompt: Option<String>,
    /// Append `details.prior_reflections` to the system prompt.
    pub inject_reflections: bool,
}

/// Builds the conversation of `traj`, consuming it.
pub fn build(traj: Trajectory, opts: &MapOptions) -> Result<Conversation, Untrainable> {
    build_from(traj.content, &traj.details, opts)
}

/// Builds the conversation of a trajectory's `content` (consumed) and `details`.
pub fn build_from(
    content: Vec<Step>,
    details: &JsonObject,
    opts: &MapOptions,
) -> Result<Conversation, Untrainable> {
    let system = system_prompt(details, opts);
    let untrained = untrained_steps(details);
    let mut turns: Vec<Turn> = Vec::new();
    // Calls of the last assistant turn not answered yet.
    let mut pending: Vec<Pending> = Vec::new();
    let mut current: Option<(AssistantTurn, usize, bool)> = None;
    // User input arrived while calls were waiting: their results can no longer follow them.
    let mut interrupted = false;
    for (i, step) in content.into_iter().enumerate() {
        if step.is_action() {
            let (turn, _, finish) = match &mut current {
                Some(c) => c,
                None => {
                    answer_unlinked(&mut turns, &mut pending);
                    if let Some(p) = pending.first() {
                        return Err(unanswered(p));
                    }
                    interrupted = false;
                    current.insert((AssistantTurn::default(), i, false))
                }
            };
            turn.untrained |= untrained.contains(&i);
            add_action(turn, finish, step, i, opts, &mut pending);
            continue;
        }
        if let Some((turn, at, finish)) = current.take() {
            push_assistant(&mut turns, turn, at, finish, opts)?;
        }
        let id = step.tool_call_id().map(str::to_owned);
        match id {
            Some(id) => match pending.iter().position(|p| p.id == id) {
                Some(k) if interrupted => return Err(unanswered(&pending[k])),
                Some(k) => {
                    let Pending { id, name, .. } = pending.remove(k);
                    turns.push(Turn::Tool(ToolResult {
                        id,
                        name,
                        content: render_observation(step),
                    }));
                }
                None => {
                    return Err(Untrainable::new(
                        "tool-result-orphan",
                        format!("/content/{i}"),
                        format!(
                            "observation at content index {i} answers tool_call_id {id:?}, which no call of the turn before it has"
                        ),
                    ))
                }
            },
            None => {
                answer_unlinked(&mut turns, &mut pending);
                interrupted |= !pending.is_empty();
                let text = render_observation(step);
                match turns.last_mut() {
                    Some(Turn::User(prev)) => {
                        if !text.is_empty() {
                            if !prev.is_empty() {
                                prev.push_str("\n\n");
                            }
                            prev.push_str(&text);
                        }
                    }
                    _ => turns.push(Turn::User(text)),
                }
            }
        }
    }
    if let Some((turn, at, finish)) = current.take() {
        push_assistant(&mut turns, turn, at, finish, opts)?;
    }
    while turns
        .last()
        .is_some_and(|t| !matches!(t, Turn::Assistant(_)))
    {
        turns.pop();
    }
    if turns.is_empty() {
        return Err(Untrainable::new(
            NO_ASSISTANT_TURN,
            "/content",
            "the trajectory has no assistant turn to train on",
        ));
    }
    if let Some(k) = turns
        .iter()
        .position(|t| matches!(t, Turn::User(s) if s.trim().is_empty()))
    {
        return Err(Untrainable::new(
            "empty-turn",
            "/content",
            format!("user turn {k} of the conversation is empty"),
        ));
    }
    Ok(Conversation { system, turns })
}

/// The content indices a converter marked not for training: `excluded_from_training` in any
/// object of `details` (`details.atif`, `details.swe_agent`); in a compaction segment, those
/// the cut mapped to the segment's own indices (`details.segment`).
fn untrained_steps(details: &JsonObject) -> Vec<usize> {
    let marking: Vec<&serde_json::Value> = match details.get("segment") {
        Some(s) if s.is_object() => vec![s],
        _ => details.values().collect(),
    };
    marking
        .into_iter()
        .filter_map(|v| v.get("excluded_from_training")?.as_array())
        .flatten()
        .filter_map(|i| usize::try_from(i.as_u64()?).ok())
        .collect()
}

/// A call of the last assistant turn not answered yet.
struct Pending {
    /// The call id (the action's `tool_call_id`, else `call_{content index}`).
    id: String,
    name: String,
    /// Content index of the action.
    at: usize,
    /// The action has a `tool_call_id`: an observation was recorded for it.
    linked: bool,
}

/// Answers the waiting calls whose actions have no `tool_call_id` (no result was recorded)
/// with empty tool messages, as the conversation goes on.
fn answer_unlinked(turns: &mut Vec<Turn>, pending: &mut Vec<Pending>) {
    pending.retain(|p| {
        if p.linked {
            return true;
        }
        turns.push(Turn::Tool(ToolResult {
            id: p.id.clone(),
            name: p.name.clone(),
            content: String::new(),
        }));
        false
    });
}

fn unanswered(p: &Pending) -> Untrainable {
    Untrainable::new(
        "tool-call-unanswered",
        format!("/content/{}", p.at),
        format!(
            "the {} call at content index {} (tool_call_id {:?}) has no result before the conversation goes on",
            p.name, p.at, p.id
        ),
    )
}

/// Closes an assistant turn: an empty one is an error, except a final `<finish>` with an
/// empty answer, which is left out.
fn push_assistant(
    turns: &mut Vec<Turn>,
    turn: AssistantTurn,
    at: usize,
    finish: bool,
    opts: &MapOptions,
) -> Result<(), Untrainable> {
    let empty = turn.calls.is_empty()
        && turn.text.trim().is_empty()
        && (!opts.keep_thoughts || turn.thought.trim().is_empty());
    if !empty {
        turns.push(Turn::Assistant(turn));
        return Ok(());
    }
    if finish {
        return Ok(());
    }
    Err(Untrainable::new(
        "empty-turn",
        format!("/content/{at}"),
        format!(
            "the assistant turn starting at content index {at} has no text, thought or tool call"
        ),
    ))
}

fn push_part(out: &mut String, part: &str) {
    let part = part.trim();
    if part.is_empty() {
        return;
    }
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(part);
}

fn add_thoughts(
    turn: &mut AssistantTurn,
    description: Option<String>,
    reasoning: Option<String>,
    opts: &MapOptions,
) {
    if let Some(r) = reasoning {
        push_part(&mut turn.thought, &r);
    }
    if let Some(d) = description {
        match opts.description {
            DescriptionAs::Text => push_part(&mut turn.text, &d),
            DescriptionAs::Thought => push_part(&mut turn.thought, &d),
            DescriptionAs::Drop => {}
        }
    }
}

/// The answer inside `<finish> … </finish>`, if `content` is wrapped so.
pub fn finish_answer(content: &str) -> Option<&str> {
    content
        .trim()
        .strip_prefix("<finish>")
        .and_then(|s| s.strip_suffix("</finish>"))
        .map(str::trim)
}

fn add_action(
    turn: &mut AssistantTurn,
    finish: &mut bool,
    step: Step,
    i: usize,
    opts: &MapOptions,
    pending: &mut Vec<Pending>,
) {
    let linked;
    let call = match step {
        Step::MessageAction(m) => {
            add_thoughts(turn, m.description, m.reasoning_content, opts);
            match finish_answer(&m.content) {
                Some(answer) => {
                    *finish = true;
                    push_part(&mut turn.text, answer);
                }
                None => push_part(&mut turn.text, &m.content),
            }
            return;
        }
        Step::ApiAction(a) => {
            add_thoughts(turn, a.description, a.reasoning_content, opts);
            linked = a.tool_call_id.is_some();
            Call {
                id: a.tool_call_id.unwrap_or_else(|| format!("call_{i}")),
                name: a.function,
                arguments: a.kwargs,
            }
        }
        Step::CodeAction(c) => {
            add_thoughts(turn, c.description, c.reasoning_content, opts);
            linked = c.tool_call_id.is_some();
            let (name, arguments) = opts.code_tools.call(&c.language, c.content);
            Call {
                id: c.tool_call_id.unwrap_or_else(|| format!("call_{i}")),
                name,
                arguments,
            }
        }
        _ => return,
    };
    pending.push(Pending {
        id: call.id.clone(),
        name: call.name.clone(),
        at: i,
        linked,
    });
    turn.calls.push(call);
}

/// An observation as text: text as it is, JSON compact, an image as `[image: PATH]`, a web
/// page as its URL, accessibility tree (else HTML) and screenshot path.
pub fn render_observation(step: Step) -> String {
    match step {
        Step::TextObservation(t) => t.content,
        Step::JsonObservation(j) => Value::Object(j.content).to_string(),
        Step::ImageObservation(img) => format!("[image: {}]", img.content),
        Step::WebObservation(w) => render_web(w),
        _ => String::new(),
    }
}

fn render_web(w: WebObservation) -> String {
    let mut out = String::new();
    if let Some(url) = w.url.filter(|u| !u.is_empty()) {
        out.push_str("URL: ");
        out.push_str(&url);
    }
    if let Some(page) = w.axtree.or(w.html) {
        push_part(&mut out, &page);
    }
    if let Some(crate::model::TaggedImage::Image(img)) = w.image_observation {
        push_part(&mut out, &format!("[screenshot: {}]", img.content));
    }
    out
}

/// `--system-prompt`, then with `--inject-reflections` the trajectory's prior reflections.
fn system_prompt(details: &JsonObject, opts: &MapOptions) -> Option<String> {
    let mut out = opts.system_prompt.clone().unwrap_or_default();
    if opts.inject_reflections {
        let priors = details
            .get("prior_reflections")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let lines: Vec<String> = priors.iter().filter_map(reflection_line).collect();
        if !lines.is_empty() {
            push_part(
                &mut out,
                &format!("Reflections from previous attempts:\n{}", lines.join("\n")),
            );
        }
    }
    (!out.trim().is_empty()).then_some(out)
}

fn reflection_line(r: &Value) -> Option<String> {
    let text = r.get("text").and_then(Value::as_str)?.trim();
    if text.is_empty() {
        return None;
    }
    Some(match r.get("iteration").and_then(Value::as_i64) {
        Some(n) => format!("- attempt {n}: {text}"),
        None => format!("- {text}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn traj(content: Value) -> Trajectory {
        let mut t: Trajectory = serde_json::from_value(json!({
            "id": "t", "content": content, "details": {}
        }))
        .expect("trajectory");
        crate::model::links::backfill_links(&mut t.content);
        t
    }

    fn opts() -> MapOptions {
        MapOptions {
            keep_thoughts: true,
            ..MapOptions::default()
        }
    }

    #[test]
    fn code_action_and_result_become_a_call_and_a_tool_turn() {
        let t = traj(json!([
            {"class_": "text_observation", "content": "list", "source": "user"},
            {"class_": "code_action", "language": "bash", "content": "ls", "description": "Look."},
            {"class_": "text_observation", "content": "a.txt", "source": "user"},
            {"class_": "message_action", "content": "<finish> a.txt </finish>", "description": null}
        ]));
        let c = build(t, &opts()).expect("trainable");
        assert_eq!(c.turns.len(), 4);
        let Turn::Assistant(a) = &c.turns[1] else {
            panic!("assistant")
        };
        assert_eq!(a.text, "Look.");
        assert_eq!(a.calls[0].name, "bash");
        assert_eq!(a.calls[0].arguments["command"], "ls");
        let Turn::Tool(r) = &c.turns[2] else {
            panic!("tool")
        };
        assert_eq!(
            (r.id.as_str(), r.content.as_str()),
            (a.calls[0].id.as_str(), "a.txt")
        );
        assert_eq!(
            c.turns[3],
            Turn::Assistant(AssistantTurn {
                text: "a.txt".into(),
                ..Default::default()
            })
        );
    }

    #[test]
    fn trailing_observations_are_dropped_and_the_final_call_may_stay_unanswered() {
        let t = traj(json!([
            {"class_": "text_observation", "content": "go", "source": "user"},
            {"class_": "api_action", "function": "stop", "kwargs": {"answer": "x"}, "description": null},
            {"class_": "text_observation", "content": "ok", "source": "user"}
        ]));
        let c = build(t, &opts()).expect("trainable");
        assert_eq!(c.turns.len(), 2);
    }

    #[test]
    fn calls_of_the_final_turn_may_be_followed_by_feedback() {
        let t = traj(json!([
            {"class_": "text_observation", "content": "fix it", "source": "user"},
            {"class_": "api_action", "function": "edit", "kwargs": {}, "description": null},
            {"class_": "code_action", "language": "bash", "content": "pytest", "description": null},
            {"class_": "message_action", "content": "Done.", "description": null},
            {"class_": "text_observation", "content": "tests fail", "source": "environment"}
        ]));
        let c = build(t, &opts()).expect("trainable");
        assert_eq!(c.turns.len(), 2);
    }

    #[test]
    fn untrainable_records_say_why() {
        let only_user =
            traj(json!([{"class_": "text_observation", "content": "hi", "source": "user"}]));
        assert_eq!(
            build(only_user, &opts()).map_err(|e| e.rule),
            Err("no-assistant-turn")
        );
        let empty = traj(json!([
            {"class_": "text_observation", "content": "hi", "source": "user"},
            {"class_": "message_action", "content": " ", "description": null},
            {"class_": "text_observation", "content": "more", "source": "user"},
            {"class_": "message_action", "content": "ok", "description": null}
        ]));
        assert_eq!(build(empty, &opts()).map_err(|e| e.rule), Err("empty-turn"));
        // A call with an id was answered in the source: its lost result is an error.
        let unanswered = traj(json!([
            {"class_": "text_observation", "content": "hi", "source": "user"},
            {"class_": "api_action", "function": "f", "kwargs": {}, "description": null, "tool_call_id": "c1"},
            {"class_": "message_action", "content": "meanwhile", "description": null},
            {"class_": "text_observation", "content": "more", "source": "user"},
            {"class_": "message_action", "content": "ok", "description": null}
        ]));
        assert_eq!(
            build(unanswered, &opts()).map_err(|e| e.rule),
            Err("tool-call-unanswered")
        );
    }

    #[test]
    fn a_call_without_a_recorded_result_is_answered_empty_when_the_conversation_goes_on() {
        let t = traj(json!([
            {"class_": "text_observation", "content": "hi", "source": "user"},
            {"class_": "api_action", "function": "finish", "kwargs": {}, "description": null},
            {"class_": "api_action", "function": "f", "kwargs": {"a": 1}, "description": null, "tool_call_id": "c1"},
            {"class_": "text_observation", "content": "done", "source": "environment", "tool_call_id": "c1"},
            {"class_": "api_action", "function": "g", "kwargs": {}, "description": null},
            {"class_": "message_action", "content": "thinking", "description": null},
            {"class_": "text_observation", "content": "go on", "source": "user"},
            {"class_": "message_action", "content": "ok", "description": null}
        ]));
        let c = build(t, &opts()).expect("trainable");
        let tool = |id: &str, name: &str, content: &str| {
            Turn::Tool(ToolResult {
                id: id.into(),
                name: name.into(),
                content: content.into(),
            })
        };
        // The linked call's result where it was; the unlinked call is answered empty when the
        // next assistant turn starts, and the next one before the user's turn.
        assert_eq!(c.turns[2], tool("c1", "f", "done"));
        assert_eq!(c.turns[3], tool("call_1", "finish", ""));
        assert!(matches!(&c.turns[4], Turn::Assistant(a) if a.text == "thinking"));
        assert_eq!(c.turns[5], tool("call_4", "g", ""));
        assert_eq!(c.turns[6], Turn::User("go on".into()));
        assert_eq!(c.turns.len(), 8);
    }

    #[test]
    fn web_and_image_observations_render_as_text() {
        let t = traj(json!([
            {"class_": "web_observation", "html": "<p>", "axtree": "[1] link", "url": "http://x",
             "image_observation": {"class_": "image_observation", "content": "s.png", "annotations": null, "source": "environment"},
             "viewport_size": null},
            {"class_": "image_observation", "content": "b.png", "annotations": null, "source": "user"},
            {"class_": "message_action", "content": "done", "description": null}
        ]));
        let c = build(t, &opts()).expect("trainable");
        assert_eq!(
            c.turns[0],
            Turn::User("URL: http://x\n\n[1] link\n\n[screenshot: s.png]\n\n[image: b.png]".into())
        );
    }

    #[test]
    fn reflections_are_injected_into_the_system_prompt() {
        let mut t = traj(json!([
            {"class_": "text_observation", "content": "go", "source": "user"},
            {"class_": "message_action", "content": "ok", "description": null}
        ]));
        t.details.insert(
            "prior_reflections".into(),
            json!([{"iteration": 1, "text": "check the tests"}, {"text": "read first"}]),
        );
        let o = MapOptions {
            system_prompt: Some("You are an agent.".into()),
            inject_reflections: true,
            ..opts()
        };
        let c = build(t, &o).expect("trainable");
        assert_eq!(
            c.system.as_deref(),
            Some("You are an agent.\n\nReflections from previous attempts:\n- attempt 1: check the tests\n- read first")
        );
    }
}

//! The steps of one session and what `details.aider` says about it.
//!
//! - A user turn is a user observation; a command (`/model`, `/add`, `/commit`, `!ls`, ...)
//!   sends nothing to the model by itself and is listed in `commands` (`/ask`, `/code` and
//!   `/architect` with a message are followed by that message as a turn of its own); a
//!   confirmation Aider answered from an earlier "(A)ll" and logged as a user line is a
//!   status line.
//! - A reply is cut into prose and edits ([`super::edits`]): each edit is an api action (the
//!   prose before it its `description`), prose after the last edit a message action, and a
//!   leading `<think>` (or Aider's `<thinking-content-…>`) block the first step's reasoning.
//! - The status lines after a reply answer its edits: "Applied edit to F" (or "Did not apply
//!   edit to F (--dry-run)", "Skipping edits to F") answers every edit of F; an edit-format
//!   error ("The LLM did not conform to the edit format." and the message after it, which
//!   Aider sends back to the model) answers the first edit left. An edit nothing answers gets,
//!   when the conversation goes on, an observation saying so ([`NO_RESULT`]); at the end of the
//!   session it stays unlinked. Every other status line (banner, confirmations, token counts,
//!   errors, retries, command output) is kept in `status`, with the step it comes before.

use serde_json::{json, Map, Value};

use super::blocks::{Block, Session};
use super::edits::{split, Fenced, Piece};
use super::reader::is_confirmation;
use crate::convert::LeftOut;
use crate::model::Step;

/// What an edit no status line answered is answered with when the conversation goes on.
pub const NO_RESULT: &str = "Aider reported no result for this edit.";

/// The observations' `name`.
const NAME: &str = "aider";

/// The model settings a banner announces.
#[derive(Default, Clone)]
struct Model {
    line: u64,
    step: usize,
    model: Option<String>,
    edit_format: Option<String>,
    weak_model: Option<String>,
    editor_model: Option<String>,
    editor_edit_format: Option<String>,
}

impl Model {
    fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("line".into(), self.line.into());
        m.insert("step".into(), self.step.into());
        for (k, v) in [
            ("model", &self.model),
            ("edit_format", &self.edit_format),
            ("weak_model", &self.weak_model),
            ("editor_model", &self.editor_model),
            ("editor_edit_format", &self.editor_edit_format),
        ] {
            if let Some(v) = v {
                m.insert(k.into(), v.clone().into());
            }
        }
        Value::Object(m)
    }
}

/// An edit waiting for its result.
struct Pending {
    step: usize,
    id: String,
    path: Option<String>,
}

/// A session's steps, and what `details.aider` lists.
pub struct Built {
    /// User turns (not commands): a session without any makes no trajectory.
    pub turns: u64,
    pub content: Vec<Step>,
    pub left: LeftOut,
    pub details: Map<String, Value>,
}

/// A model name and what follows `with`/`using` in a banner line (`m with diff edit format,
/// infinite output`): the model, and the edit format.
fn model_and_format(rest: &str) -> (String, Option<String>) {
    let cut = [" with ", " using "]
        .iter()
        .filter_map(|w| rest.find(w).map(|at| (at, w.len())))
        .min();
    match cut {
        Some((at, n)) => {
            let tail = &rest[at + n..];
            // Versions 0.4x mark models that accept a prefill with `♾️` before the format.
            let format = tail.find(" edit format").map(|end| {
                tail[..end]
                    .trim_start_matches('♾')
                    .trim_start_matches('\u{fe0f}')
                    .trim()
                    .to_owned()
            });
            (rest[..at].trim().to_owned(), format)
        }
        None => (rest.trim().to_owned(), None),
    }
}

/// The session's running cost in a token line (`… Cost: $0.01 message, $0.02 session.`).
fn session_cost(entry: &str) -> Option<f64> {
    // Every status line is asked: most have no `$`, found faster than the word.
    if !entry.contains('$') {
        return None;
    }
    let at = entry.find(" session")?;
    let head = &entry[..at];
    let dollar = head.rfind('$')?;
    head[dollar + 1..].trim().replace(',', "").parse().ok()
}

/// The file a status line says an edit was applied to or skipped ("Applied edit to F", "Did
/// not apply edit to F (--dry-run)", "Skipping edits to F").
fn per_file(e: &str) -> Option<&str> {
    e.strip_prefix("Applied edit to ")
        .or_else(|| e.strip_prefix("Skipping edits to "))
        .or_else(|| {
            e.strip_prefix("Did not apply edit to ")
                .map(|r| r.trim_end_matches(" (--dry-run)"))
        })
}

/// A leading reasoning block (`<think>…</think>`, `<thinking>`, `<reasoning>`, Aider's
/// `<thinking-content-…>`): the reasoning, and how many lines it and the blank lines after it
/// take.
pub(super) fn reasoning(lines: &[&str]) -> Option<(String, usize)> {
    let first = lines.first()?.trim_start();
    let tag = first.strip_prefix('<')?.split('>').next()?;
    let known =
        matches!(tag, "think" | "thinking" | "reasoning") || tag.starts_with("thinking-content-");
    if !known {
        return None;
    }
    let close = format!("</{tag}>");
    let end = lines.iter().position(|l| l.contains(&close))?;
    // Text after the closing tag on its line stays with the reply: not a block of its own.
    if !lines[end].trim_end().ends_with(&close) {
        return None;
    }
    let text = lines[..=end].join("\n");
    let inner = text
        .trim()
        .strip_prefix(&format!("<{tag}>"))?
        .strip_suffix(&close)?;
    let mut used = end + 1;
    while lines.get(used).is_some_and(|l| l.trim().is_empty()) {
        used += 1;
    }
    Some((inner.trim().to_owned(), used))
}

/// The walk over one session's blocks.
struct Builder {
    content: Vec<Step>,
    left: LeftOut,
    models: Vec<Model>,
    version: Option<String>,
    commands: Vec<Value>,
    status: Vec<Value>,
    unpaired: Vec<Value>,
    unanswered: Vec<Value>,
    blank_turns: Vec<Value>,
    cost: Option<f64>,
    pending: Vec<Pending>,
    /// Edits of the latest reply, still to be answered by the status lines after it.
    fresh: bool,
    /// The mode a one-shot command (`/ask q`) set, and whether its message was seen.
    one_shot: Option<(Option<String>, bool)>,
    turns: u64,
    replies: u64,
    /// Replies since the latest user turn.
    turn_replies: u64,
}

impl Builder {
    /// The edit format of the next reply: a one-shot command's mode, else the banner's; in
    /// architect mode the replies after the first of a turn are the editor model's.
    fn format(&self) -> Option<&str> {
        let main = match &self.one_shot {
            Some((mode, true)) => mode.as_deref(),
            _ => self.models.last().and_then(|m| m.edit_format.as_deref()),
        };
        match main {
            Some("architect") if self.turn_replies > 0 => self
                .models
                .last()
                .and_then(|m| m.editor_edit_format.as_deref()),
            other => other,
        }
    }

    /// Answers the edits still waiting (the conversation goes on past them).
    fn close_edits(&mut self) {
        for p in std::mem::take(&mut self.pending) {
            let at = self.content.len();
            self.content
                .push(Step::environment_text(Some(NAME.into()), NO_RESULT).with_tool_call_id(p.id));
            self.unanswered
                .push(json!({"step": p.step, "path": p.path, "result_step": at}));
        }
        self.fresh = false;
    }

    fn push(&mut self, step: Step) {
        self.close_edits();
        self.content.push(step);
    }

    fn user(&mut self, line: u64, text: &str) {
        if text.starts_with('/') || text.starts_with('!') {
            let (name, args) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
            let args = args.trim();
            let mut c = json!({"line": line, "step": self.content.len(), "command": name});
            if !args.is_empty() {
                c["args"] = args.into();
            }
            self.commands.push(c);
            let mode = match name {
                "/ask" => Some(Some("ask".to_owned())),
                "/architect" => Some(Some("architect".to_owned())),
                "/code" => Some(None),
                _ => None,
            };
            self.one_shot = mode.filter(|_| !args.is_empty()).map(|m| {
                let main = self.models.last().and_then(|m| m.edit_format.clone());
                (m.or(main), false)
            });
            self.fresh = false;
            return;
        }
        match &mut self.one_shot {
            Some((_, seen @ false)) => *seen = true,
            _ => self.one_shot = None,
        }
        if is_confirmation(text) {
            self.status
                .push(json!({"line": line, "step": self.content.len(), "text": text}));
            return;
        }
        if text == "<blank>" {
            self.left.lines += 1;
            self.blank_turns.push(line.into());
            self.fresh = false;
            return;
        }
        self.turns += 1;
        self.turn_replies = 0;
        self.push(Step::user_text(text));
    }

    /// A reply, and the status lines right after it (if any).
    fn reply(&mut self, line: u64, lines: &[&str], after: Option<&[(u64, &str)]>) {
        self.replies += 1;
        let (thought, skip) = reasoning(lines).map_or((None, 0), |(t, n)| (Some(t), n));
        let named: Vec<&str> = after
            .into_iter()
            .flatten()
            .filter_map(|(_, e)| per_file(e))
            .collect();
        let fenced = Fenced::of(self.format());
        self.turn_replies += 1;
        let (pieces, unpaired) = split(&lines[skip..], line + skip as u64, fenced, &named);
        for (at, marker) in unpaired {
            self.left.unmapped(
                at,
                "",
                format!("an unpaired {marker} marker: no complete SEARCH/REPLACE block (its text stays in the reply)"),
            );
            self.unpaired.push(json!({"line": at, "marker": marker}));
        }
        self.close_edits();
        let mut description: Option<String> = None;
        let start = self.content.len();
        let mut thought = thought;
        let mut add = |b: &mut Builder, mut step: Step, description: Option<String>| {
            step.set_thought(description, thought.take());
            b.content.push(step);
        };
        for piece in pieces {
            match piece {
                Piece::Text(t) => {
                    if let Some(d) = description.take() {
                        add(self, Step::message(d, None), None);
                    }
                    description = Some(t);
                }
                Piece::Edit(e) => {
                    let id = format!("edit-{}", e.line);
                    let step = self.content.len();
                    add(
                        self,
                        Step::api(e.function, e.kwargs, None).with_tool_call_id(&id),
                        description.take(),
                    );
                    self.pending.push(Pending {
                        step,
                        id,
                        path: e.path,
                    });
                }
            }
        }
        match description {
            Some(d) => add(self, Step::message(d, None), None),
            None if self.content.len() == start => add(self, Step::message("", None), None),
            None => {}
        }
        self.fresh = !self.pending.is_empty();
    }

    fn status(&mut self, line: u64, entries: &[(u64, &str)], continued: &[u64]) {
        let mut used = vec![false; entries.len()];
        for (_, e) in entries {
            self.banner(line, e);
            if let Some(c) = session_cost(e) {
                self.cost = Some(c);
            }
        }
        if self.fresh {
            self.answer(entries, continued, &mut used);
        }
        let kept: Vec<&str> = entries
            .iter()
            .zip(&used)
            .filter(|(_, u)| !**u)
            .map(|((_, e), _)| *e)
            .collect();
        if !kept.is_empty() {
            self.status.push(json!({
                "line": line,
                "step": self.content.len(),
                "text": kept.join("\n"),
            }));
        }
    }

    /// A banner line: the version, the models and edit formats.
    fn banner(&mut self, line: u64, entry: &str) {
        if let Some(v) = entry.strip_prefix("Aider v") {
            self.version.get_or_insert_with(|| format!("v{}", v.trim()));
        } else if let Some(rest) = ["Main model: ", "Models: ", "Model: "]
            .iter()
            .find_map(|p| entry.strip_prefix(p))
        {
            // `Models: m with diff edit format, weak model w` (versions 0.4x and 0.5x).
            let (rest, weak) = match rest.split_once(", weak model ") {
                Some((r, w)) => (r, Some(w.trim().to_owned())),
                None => (rest, None),
            };
            let (model, format) = model_and_format(rest);
            self.models.push(Model {
                line,
                step: self.content.len(),
                model: Some(model),
                edit_format: format,
                weak_model: weak,
                ..Model::default()
            });
        } else if let Some(rest) = entry.strip_prefix("Weak model: ") {
            if let Some(m) = self.models.last_mut() {
                m.weak_model = Some(rest.trim().to_owned());
            }
        } else if let Some(rest) = entry.strip_prefix("Editor model: ") {
            if let Some(m) = self.models.last_mut() {
                let (model, format) = model_and_format(rest);
                m.editor_model = Some(model);
                m.editor_edit_format = format;
            }
        }
    }

    /// Answers the latest reply's edits from the status lines after it.
    fn answer(&mut self, entries: &[(u64, &str)], continued: &[u64], used: &mut [bool]) {
        // The edit-format error and the messages Aider prints with it: the link to its
        // troubleshooting page and the error itself (several lines); an exception and its text.
        let failure = entries.iter().position(|(_, e)| {
            e.starts_with("The LLM did not conform to the edit format.")
                || e.starts_with("Exception while updating files:")
        });
        let failure_end = failure.map(|f| {
            let messages = if entries[f].1.starts_with("Exception") {
                2
            } else {
                3
            };
            let mut started = 0;
            (f..entries.len())
                .find(|&j| {
                    let starts = !continued.contains(&entries[j].0);
                    started += usize::from(starts);
                    starts && started > messages
                })
                .unwrap_or(entries.len())
        });
        let mut failure_text = failure.zip(failure_end).map(|(f, end)| {
            used[f..end].iter_mut().for_each(|u| *u = true);
            entries[f..end]
                .iter()
                .map(|(_, e)| *e)
                .collect::<Vec<_>>()
                .join("\n")
        });
        let mut answers = Vec::new();
        for p in std::mem::take(&mut self.pending) {
            let hit = entries
                .iter()
                .position(|(_, e)| p.path.is_some() && per_file(e) == p.path.as_deref());
            let text = match hit {
                Some(i) => {
                    used[i] = true;
                    Some(entries[i].1.to_owned())
                }
                None => failure_text.take(),
            };
            match text {
                Some(t) => answers.push((p.id, t)),
                None => self.pending.push(p),
            }
        }
        for (id, text) in answers {
            self.content
                .push(Step::environment_text(Some(NAME.into()), text).with_tool_call_id(id));
        }
        self.fresh = false;
    }

    /// Ends the session: edits still waiting are answered when anything but actions follows
    /// them, else unlinked.
    fn finish(&mut self) {
        let observed = |p: &Pending| self.content[p.step + 1..].iter().any(|s| !s.is_action());
        if self.pending.iter().any(observed) {
            self.close_edits();
        }
        for p in std::mem::take(&mut self.pending) {
            *self.content[p.step].tool_call_id_mut() = None;
            self.unanswered
                .push(json!({"step": p.step, "path": p.path, "result_step": null}));
        }
    }
}

/// The steps of `session`, what it leaves out and its `details.aider`.
pub fn build(session: &Session<'_>) -> Built {
    let mut b = Builder {
        content: Vec::new(),
        left: LeftOut::new("details.aider"),
        models: Vec::new(),
        version: None,
        commands: Vec::new(),
        status: Vec::new(),
        unpaired: Vec::new(),
        unanswered: Vec::new(),
        blank_turns: Vec::new(),
        cost: None,
        pending: Vec::new(),
        fresh: false,
        one_shot: None,
        turns: 0,
        replies: 0,
        turn_replies: 0,
    };
    for (i, block) in session.blocks.iter().enumerate() {
        match block {
            Block::User { line, text } => b.user(*line, text),
            Block::Status {
                line,
                entries,
                continued,
            } => b.status(*line, entries, continued),
            Block::Prose { line, lines } => {
                let after = match session.blocks.get(i + 1) {
                    Some(Block::Status { entries, .. }) => Some(&entries[..]),
                    _ => None,
                };
                b.reply(*line, lines, after)
            }
        }
    }
    b.finish();
    let messages = b.turns + b.replies;
    b.left.messages = Some((messages, messages));
    let mut d = Map::new();
    if let Some(t) = session.started_at {
        d.insert("started_at".into(), t.into());
    }
    if let Some(v) = b.version {
        d.insert("version".into(), v.into());
    }
    let last = b.models.last().cloned();
    if let Some(m) = &last {
        if let Some(model) = &m.model {
            d.insert("model".into(), model.clone().into());
        }
        if let Some(f) = &m.edit_format {
            d.insert("edit_format".into(), f.clone().into());
        }
    }
    let mut list = |key: &str, items: Vec<Value>| {
        if !items.is_empty() {
            d.insert(key.into(), Value::Array(items));
        }
    };
    list("models", b.models.iter().map(Model::to_value).collect());
    list("commands", b.commands);
    list("status", b.status);
    list("unanswered_edits", b.unanswered);
    list("unpaired_markers", b.unpaired);
    list("blank_turns", b.blank_turns);
    if let Some(c) = b.cost {
        d.insert("cost_usd".into(), json!(c));
    }
    Built {
        turns: b.turns,
        content: b.content,
        left: b.left,
        details: d,
    }
}

/// `kwargs` of a step, for tests.
#[cfg(test)]
fn kwargs(step: &Step) -> Option<&crate::model::JsonObject> {
    match step {
        Step::ApiAction(a) => Some(&a.kwargs),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::blocks::sessions;
    use super::*;

    fn built(text: &str) -> Built {
        let s = sessions(text, 1);
        build(&s[0])
    }

    #[test]
    fn banner_lines_give_model_and_edit_format() {
        assert_eq!(
            model_and_format("anthropic/claude-3-7 with diff edit format, infinite output"),
            ("anthropic/claude-3-7".into(), Some("diff".into()))
        );
        assert_eq!(
            model_and_format("gpt-4-1106-preview using udiff edit format")
                .1
                .as_deref(),
            Some("udiff")
        );
        assert_eq!(model_and_format("gpt-4"), ("gpt-4".into(), None));
        assert_eq!(
            model_and_format("claude-3-5-sonnet with ♾️ diff edit format")
                .1
                .as_deref(),
            Some("diff")
        );
        assert_eq!(
            session_cost(
                "Tokens: 7.8k sent, 971 received. Cost: $0.0014 message, $0.0028 session."
            ),
            Some(0.0028)
        );
    }

    #[test]
    fn edits_are_answered_by_their_files_lines() {
        let b = built(
            "# aider chat started at 2026-01-02 03:04:05\n\n\
             > Aider v0.86.1  \n> Main model: m1 with diff edit format  \n> Weak model: w  \n\n\
             #### /add a.py  \n> Added a.py to the chat  \n\n\
             #### fix it  \n\n<think>\nhmm\n</think>\n\nFirst:\n\na.py\n```\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n```\n\n\
             b.py\n```\n<<<<<<< SEARCH\n=======\nz\n>>>>>>> REPLACE\n```\n\nDone.\n\n\
             > Tokens: 1k sent, 10 received. Cost: $0.01 message, $0.01 session.  \n> Applied edit to a.py  \n\n\
             #### thanks  \n",
        );
        let classes: Vec<&str> = b.content.iter().map(Step::class_name).collect();
        assert_eq!(
            classes,
            [
                "text_observation",
                "api_action",
                "api_action",
                "message_action",
                "text_observation",
                "text_observation",
                "text_observation"
            ]
        );
        assert_eq!(b.content[1].reasoning_content(), Some("hmm"));
        assert_eq!(
            kwargs(&b.content[1]).map(|k| k["path"].clone()),
            Some("a.py".into())
        );
        assert_eq!(b.content[4].tool_call_id(), b.content[1].tool_call_id());
        assert_eq!(b.content[5].tool_call_id(), b.content[2].tool_call_id());
        assert!(matches!(&b.content[5], Step::TextObservation(o) if o.content == NO_RESULT));
        assert_eq!(b.details["model"], "m1");
        assert_eq!(b.details["edit_format"], "diff");
        assert_eq!(b.details["version"], "v0.86.1");
        assert_eq!(b.details["cost_usd"], 0.01);
        assert_eq!(b.details["commands"][0]["command"], "/add");
        assert_eq!(b.details["status"].as_array().map(Vec::len), Some(3));
        assert_eq!(b.details["unanswered_edits"][0]["step"], 2);
        assert_eq!(b.left.messages, Some((3, 3)));
    }

    #[test]
    fn a_format_error_answers_the_first_edit_and_an_edit_at_the_end_stays_unlinked() {
        let b = built(
            "# aider chat started at t\n\n#### go  \n\na.py\n```\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n```\n\n\
             > The LLM did not conform to the edit format.  \n> https://aider.chat/docs/troubleshooting/edit-errors.html  \n\
             > # 1 SEARCH/REPLACE block failed to match!\n\nFix it.  \n\n\
             a.py\n```\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n```\n",
        );
        let classes: Vec<&str> = b.content.iter().map(Step::class_name).collect();
        assert_eq!(
            classes,
            [
                "text_observation",
                "api_action",
                "text_observation",
                "api_action"
            ]
        );
        assert!(
            matches!(&b.content[2], Step::TextObservation(o) if o.content.ends_with("Fix it.") && o.tool_call_id.is_some())
        );
        assert_eq!(b.content[3].tool_call_id(), None);
        assert!(b.details.get("status").is_none());
    }

    #[test]
    fn architect_mode_reads_the_editor_replies_in_the_editor_format() {
        let b = built(
            "# aider chat started at t\n\n> Main model: m with architect edit format  \n\
             > Editor model: e with editor-whole edit format  \n\n\
             #### plan it  \n\nChange a.py:\n\n```\nx = 2\n```\n\n> Tokens: 1k sent.  \n\n\
             a.py\n```\nx = 2\n```\n\n> Applied edit to a.py  \n",
        );
        let classes: Vec<&str> = b.content.iter().map(Step::class_name).collect();
        assert_eq!(
            classes,
            [
                "text_observation",
                "message_action",
                "api_action",
                "text_observation"
            ]
        );
        assert_eq!(b.details["models"][0]["editor_edit_format"], "editor-whole");
    }

    #[test]
    fn one_shot_ask_reads_fences_as_code_shown() {
        let b = built(
            "# aider chat started at t\n\n> Main model: m with whole edit format  \n\n\
             #### /ask how?  \n\n#### how?  \n\nLike this:\n\na.py\n```\nx\n```\n\n\
             #### do it  \n\na.py\n```\nx\n```\n",
        );
        let classes: Vec<&str> = b.content.iter().map(Step::class_name).collect();
        assert_eq!(
            classes,
            [
                "text_observation",
                "message_action",
                "text_observation",
                "api_action"
            ]
        );
    }
}

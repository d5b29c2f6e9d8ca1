//! What the step builders of the session stores (Crush, Goose, OpenCode) share: the steps of a
//! session with the lists `details.<fmt>` keeps about them ([`SessionSteps`]), and an
//! assistant message's text and reasoning waiting for what follows them ([`Pending`]).

use crate::convert::LeftOut;
use crate::formats::chat::unlink_unanswered_calls;
use crate::json::Node;
use crate::model::Step;

/// Per part (or content item) of a message, the keys its steps hold (what details keep is the
/// rest).
pub(crate) type Taken = Vec<&'static [&'static str]>;

/// The steps of one session and the lists its details keep about them.
pub(crate) struct SessionSteps<'a> {
    pub content: Vec<Step>,
    pub left: LeftOut,
    /// Per message: its fields without what steps hold, and its first step.
    pub messages: Vec<Node<'a>>,
    /// Each compaction, with its step.
    pub compactions: Vec<Node<'a>>,
    /// `{step, tool_call_id}` of each result that is an error.
    pub error_results: Vec<Node<'a>>,
    /// `{step, id, empty_result?}` of each call no result answers.
    pub unanswered_calls: Vec<Node<'a>>,
    /// `{step, tool_call_id, <where>}` of each result that answers no call before it.
    pub unlinked_results: Vec<Node<'a>>,
    /// `{step, id, as}` of each call whose id an earlier call had.
    pub renamed_call_ids: Vec<Node<'a>>,
    /// Messages that made a step, and images kept as steps.
    pub kept_messages: u64,
    pub images: u64,
}

impl<'a> SessionSteps<'a> {
    /// No steps yet; what is left out is counted under `details` (`details.crush`).
    pub fn new(details: &str) -> Self {
        SessionSteps {
            content: Vec::new(),
            left: LeftOut::new(details),
            messages: Vec::new(),
            compactions: Vec::new(),
            error_results: Vec::new(),
            unanswered_calls: Vec::new(),
            unlinked_results: Vec::new(),
            renamed_call_ids: Vec::new(),
            kept_messages: 0,
            images: 0,
        }
    }

    /// Lists the next step as a result that is an error, of call `native`.
    pub fn error_result(&mut self, native: &str) {
        self.error_results.push(Node::object([
            ("step", Node::from(self.content.len() as u64)),
            ("tool_call_id", Node::from(native.to_owned())),
        ]));
    }

    /// Lists the next step as a result of call `native` that answers no call before it, found
    /// at `key` (`rowid`, `line`) `at`.
    pub fn unlinked_result(&mut self, native: &str, key: &'static str, at: u64) {
        self.unlinked_results.push(Node::object([
            ("step", Node::from(self.content.len() as u64)),
            ("tool_call_id", Node::from(native.to_owned())),
            (key, Node::from(at)),
        ]));
    }

    /// Lists the next step as a call whose id `native` an earlier call had, linked `as`.
    pub fn renamed_call(&mut self, native: &str, linked: &str) {
        self.renamed_call_ids.push(Node::object([
            ("step", Node::from(self.content.len() as u64)),
            ("id", Node::from(native.to_owned())),
            ("as", Node::from(linked.to_owned())),
        ]));
    }

    /// Takes the id of each call no result answers, and lists it in `unanswered_calls`.
    pub fn unlink_unanswered(&mut self) {
        for v in unlink_unanswered_calls(&mut self.content, |_| false) {
            self.unanswered_calls.push(Node::from(v));
        }
    }

    /// The lists of details, in their order (`compactions` ... `messages`), each `None` when
    /// empty but `messages`; taken out of the builder.
    pub fn take_lists(&mut self) -> [(&'static str, Option<Node<'a>>); 6] {
        let list = |items: &mut Vec<Node<'a>>| {
            let items = std::mem::take(items);
            (!items.is_empty()).then_some(Node::Array(items))
        };
        [
            ("compactions", list(&mut self.compactions)),
            ("error_results", list(&mut self.error_results)),
            ("unanswered_calls", list(&mut self.unanswered_calls)),
            ("unlinked_results", list(&mut self.unlinked_results)),
            ("renamed_call_ids", list(&mut self.renamed_call_ids)),
            (
                "messages",
                Some(Node::Array(std::mem::take(&mut self.messages))),
            ),
        ]
    }
}

/// An assistant message's text and reasoning waiting for what follows them: a call takes the
/// text as its description and the reasoning as its `reasoning_content`; else the text is a
/// message with the reasoning. Each remembers the part it came from, to mark the keys its step
/// holds.
pub(crate) struct Pending {
    text: Option<(String, usize)>,
    thought: Option<(String, Vec<usize>)>,
    /// The keys of a text part, and of a reasoning part, a step holds.
    text_keys: &'static [&'static str],
    thought_keys: &'static [&'static str],
}

impl Pending {
    /// Nothing pending; `text_keys` and `thought_keys` are what a step holds of a text part
    /// and of a reasoning part.
    pub fn new(text_keys: &'static [&'static str], thought_keys: &'static [&'static str]) -> Self {
        Pending {
            text: None,
            thought: None,
            text_keys,
            thought_keys,
        }
    }

    /// Adds the reasoning `t` of part `k` (after the pending reasoning, a blank line between).
    pub fn think(&mut self, k: usize, t: &str) {
        self.thought = match self.thought.take() {
            Some((prev, mut at)) => {
                at.push(k);
                Some((format!("{prev}\n\n{t}"), at))
            }
            None => Some((t.to_owned(), vec![k])),
        };
    }

    /// Makes the text `t` of part `k` the pending text; the text pending before, as a message
    /// step (see [`Pending::flush`]).
    pub fn text(&mut self, k: usize, t: String, taken: &mut Taken) -> Option<Step> {
        let before = self.flush(taken);
        self.text = Some((t, k));
        before
    }

    /// The pending text as a message step with the pending reasoning, if there is a text.
    pub fn flush(&mut self, taken: &mut Taken) -> Option<Step> {
        let (t, at) = self.text.take()?;
        taken[at] = self.text_keys;
        let mut m = Step::message(t, None);
        m.set_thought(None, self.thought(taken));
        Some(m)
    }

    /// The description and the reasoning of a call: the pending text and reasoning, taken.
    pub fn for_call(&mut self, taken: &mut Taken) -> (Option<String>, Option<String>) {
        let description = self.text.take().map(|(t, at)| {
            taken[at] = self.text_keys;
            t
        });
        (description, self.thought(taken))
    }

    /// The pending reasoning, taken.
    fn thought(&mut self, taken: &mut Taken) -> Option<String> {
        self.thought.take().map(|(t, at)| {
            for k in at {
                taken[k] = self.thought_keys;
            }
            t
        })
    }

    /// True when reasoning is left with no text or call after it (it stays in the message's
    /// parts: a block no step holds).
    pub fn thought_left(&self) -> bool {
        self.thought.is_some()
    }
}

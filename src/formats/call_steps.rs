//! The steps of a conversation whose calls wait for their results, for the readers that build
//! steps message by message (Pi, Qwen Code, Kimi CLI): each call gets a link id unique in the
//! trajectory (its own id when no call had it yet), waits until a result names it, and, when
//! the conversation goes on without one, is answered by the text the agent itself gives the
//! model for it (`CallSteps::close_calls`), or keeps no link (`CallSteps::finish`). Both
//! are listed in `unanswered_calls`; what no step holds is kept in `unmapped`.

use foldhash::{HashSet, HashSetExt};

use crate::convert::LeftOut;
use crate::json::Node;
use crate::model::Step;

/// A call waiting for its result.
pub(crate) struct Pending {
    /// The call's id in the trajectory (its own id, unless another call had it already).
    pub id: String,
    /// The id a result names it by, if it has one.
    pub native: Option<String>,
    /// The tool's name.
    pub name: String,
    /// Its step.
    pub step: usize,
}

/// The steps so far, the calls waiting, and the two lists every such reader keeps.
pub(crate) struct CallSteps<'a> {
    pub content: Vec<Step>,
    pub left: LeftOut,
    /// The calls waiting for their results, in step order.
    pub pending: Vec<Pending>,
    /// Link ids used so far in the trajectory.
    used_ids: HashSet<String>,
    /// `{step, id, result_step}` of each call no result answered ([`CallSteps::close_calls`],
    /// [`CallSteps::finish`]; a reader may list its own shape).
    pub unanswered_calls: Vec<Node<'a>>,
    /// `{line, pointer, reason, value}` of each value no step holds.
    pub unmapped: Vec<Node<'a>>,
    /// The result a call gets when the conversation goes on without one.
    no_result: &'static str,
}

fn num<'a>(n: usize) -> Node<'a> {
    Node::from(n as u64)
}

impl<'a> CallSteps<'a> {
    /// No steps yet; a call the conversation goes on without is answered with `no_result`.
    pub(crate) fn new(left: LeftOut, no_result: &'static str) -> CallSteps<'a> {
        CallSteps {
            content: Vec::new(),
            left,
            pending: Vec::new(),
            used_ids: HashSet::new(),
            unanswered_calls: Vec::new(),
            unmapped: Vec::new(),
            no_result,
        }
    }

    /// Keeps a value no step holds, with why, in `unmapped`; counted as a block (or part) of a
    /// type no step holds (`block`), or as a value not mapped.
    pub(crate) fn unmapped(
        &mut self,
        line: u64,
        pointer: String,
        reason: String,
        value: &Node<'a>,
        block: bool,
    ) {
        if block {
            self.left.blocks += 1;
        } else {
            self.left.unmapped(line, &pointer, reason.clone());
        }
        self.unmapped.push(Node::object([
            ("line", Node::from(line)),
            ("pointer", Node::from(pointer)),
            ("reason", Node::from(reason)),
            ("value", value.clone()),
        ]));
    }

    /// The link id of a call: `native`, unless it is `None` or an earlier call had it; then
    /// `made()`.
    pub(crate) fn link_id(
        &mut self,
        native: Option<&str>,
        made: impl FnOnce() -> String,
    ) -> String {
        let id = match native {
            Some(n) if !self.used_ids.contains(n) => n.to_owned(),
            _ => made(),
        };
        self.used_ids.insert(id.clone());
        id
    }

    /// Whether a call had the link id `id`.
    pub(crate) fn used(&self, id: &str) -> bool {
        self.used_ids.contains(id)
    }

    /// Adds the call `step` with its link id `id`, waiting for its result.
    pub(crate) fn call(&mut self, step: Step, id: String, native: Option<String>, name: String) {
        let at = self.content.len();
        self.content.push(step.with_tool_call_id(id.clone()));
        self.pending.push(Pending {
            id,
            native,
            name,
            step: at,
        });
    }

    /// The first waiting call that `found` picks, no longer waiting.
    pub(crate) fn answer(&mut self, found: impl Fn(&Pending) -> bool) -> Option<Pending> {
        let k = self.pending.iter().position(found)?;
        Some(self.pending.remove(k))
    }

    /// Answers the calls still waiting, as the agent does when the conversation goes on
    /// without their results: with its `no_result` text.
    pub(crate) fn close_calls(&mut self) {
        for p in std::mem::take(&mut self.pending) {
            let at = self.content.len();
            self.content
                .push(Step::environment_text(Some(p.name), self.no_result).with_tool_call_id(p.id));
            self.unanswered_calls.push(Node::object([
                ("step", num(p.step)),
                ("id", p.native.map_or(Node::Null, Node::from)),
                ("result_step", num(at)),
            ]));
        }
    }

    /// Adds a step that is not the result of a waiting call; returns its index.
    pub(crate) fn push(&mut self, step: Step) -> usize {
        self.close_calls();
        self.content.push(step);
        self.content.len() - 1
    }

    /// Ends the conversation: calls still waiting keep no link when nothing but actions
    /// follows them; when an observation does, they are answered ([`CallSteps::close_calls`]).
    pub(crate) fn finish(&mut self) {
        let observed = |p: &Pending| self.content[p.step + 1..].iter().any(|s| !s.is_action());
        if self.pending.iter().any(observed) {
            self.close_calls();
        }
        for p in std::mem::take(&mut self.pending) {
            *self.content[p.step].tool_call_id_mut() = None;
            self.unanswered_calls.push(Node::object([
                ("step", num(p.step)),
                ("id", p.native.map_or(Node::Null, Node::from)),
                ("result_step", Node::Null),
            ]));
        }
    }
}

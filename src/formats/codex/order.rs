//! Steps in the order ADP links them: a step that a rollout wrote between a tool call and its
//! output (an `<environment_context>`, a developer notice, a turn-aborted message, an agent
//! message) is placed after the output, so that the call is directly followed by its answer.

use std::collections::VecDeque;

use foldhash::{HashSet, HashSetExt};

use crate::model::Step;

/// The order of `content` with every step that falls between a linked call and its output
/// moved after the output: `(order, moved)`, `order[k]` being the index in `content` of the
/// step that goes at `k`, and `moved` the indices in `content` of the steps placed later.
///
/// Calls must already be linked only when an output answers them (a call's output comes after
/// it). Calls of one response that follow each other stay together, each output closing its
/// own call (a call no output answers, such as a hosted web search, waits like any other
/// step); a step waiting for outputs holds back everything after it (a later call is a
/// reaction to it) until the last open call is answered, then all of it follows, in file order.
pub fn outputs_first(content: &[Step]) -> (Vec<usize>, Vec<usize>) {
    let mut order = Vec::with_capacity(content.len());
    let mut moved = vec![false; content.len()];
    let mut open: HashSet<&str> = HashSet::new();
    let mut held: Vec<usize> = Vec::new();
    let mut queue: VecDeque<usize> = (0..content.len()).collect();
    while let Some(i) = queue.pop_front() {
        let step = &content[i];
        let id = step.tool_call_id();
        let answers_open = !step.is_action() && id.is_some_and(|id| open.contains(id));
        if answers_open {
            if let Some(id) = id {
                open.remove(id);
            }
            order.push(i);
            if open.is_empty() {
                for h in held.drain(..).rev() {
                    queue.push_front(h);
                }
            }
        } else if !open.is_empty() && (id.is_none() || !step.is_tool_action() || !held.is_empty()) {
            moved[i] = true;
            held.push(i);
        } else {
            if let Some(id) = id.filter(|_| step.is_tool_action()) {
                open.insert(id);
            }
            order.push(i);
        }
    }
    // Unreachable when every linked output follows its call; kept so no step is ever lost.
    order.extend(held);
    let moved = (0..content.len()).filter(|&i| moved[i]).collect();
    (order, moved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{JsonObject, Source};

    fn call(id: &str) -> Step {
        Step::api("f", JsonObject::new(), None).with_tool_call_id(id)
    }

    fn out(id: &str) -> Step {
        Step::environment_text(None, "o").with_tool_call_id(id)
    }

    fn note() -> Step {
        Step::environment_text(Some("environment_context".into()), "n")
    }

    #[test]
    fn a_note_between_a_call_and_its_output_follows_the_output() {
        let content = [call("a"), note(), out("a"), Step::message("m", None)];
        assert_eq!(outputs_first(&content), (vec![0, 2, 1, 3], vec![1]));
    }

    #[test]
    fn parallel_calls_stay_together_and_a_later_call_waits_for_what_came_before_it() {
        let content = [call("a"), call("b"), out("a"), out("b")];
        assert_eq!(outputs_first(&content).0, vec![0, 1, 2, 3]);
        // The note and the user's reply came before call c: they stay before it, after a's
        // output.
        let content = [
            call("a"),
            note(),
            Step::user_text("u"),
            call("c"),
            out("c"),
            out("a"),
            Step::image("i", Source::User),
        ];
        let (order, moved) = outputs_first(&content);
        assert_eq!(order, vec![0, 5, 1, 2, 3, 4, 6]);
        assert_eq!(moved, vec![1, 2, 3, 4]);
    }

    #[test]
    fn content_in_link_order_is_left_as_it_is() {
        let content = [
            Step::user_text("u"),
            call("a"),
            out("a"),
            call("b"),
            out("b"),
        ];
        assert_eq!(outputs_first(&content), ((0..5).collect(), vec![]));
        let unlinked = [call("a"), note()];
        let mut content = unlinked.to_vec();
        *content[0].tool_call_id_mut() = None;
        assert_eq!(outputs_first(&content), (vec![0, 1], vec![]));
    }

    #[test]
    fn an_unanswered_call_between_a_call_and_its_output_waits_for_the_output() {
        let mut content = vec![call("a"), call("w"), out("a"), Step::message("m", None)];
        *content[1].tool_call_id_mut() = None;
        assert_eq!(outputs_first(&content), (vec![0, 2, 1, 3], vec![1]));
    }
}

//! Which lines of a session make its trajectory. Claude Code links its lines into a tree by
//! `parentUuid`: the main chain runs from the leaf (the last turn) back to the root, and a
//! response's tool results hang off the line of their own call, so parallel calls put results
//! (and the lines of the same response written after them) on side branches. The trajectory is
//! the main chain plus what hangs off it and belongs to the same conversation: a result
//! answering a call already taken, a line of a response already taken, and bookkeeping lines
//! (progress, system, attachments) passed through to what hangs off them. Anything else off the
//! chain is a real branch (a prompt edited or retried, a sidechain) and is left out.

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use crate::json::Node;

/// Why a turn is left out of the trajectory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LeftOut {
    /// Off the conversation: another prompt or response hanging off a line of it (an edit, a
    /// retry, a rewind), or what follows one.
    Branch,
    /// A sidechain line in a main session file (older versions wrote subagents inline).
    Sidechain,
    /// Its parent is not in the file (or it is a second root).
    Detached,
}

impl LeftOut {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            LeftOut::Branch => "branch",
            LeftOut::Sidechain => "sidechain",
            LeftOut::Detached => "detached",
        }
    }
}

/// The lines taken, by index into the session's entries.
pub(super) struct Selection {
    /// The lines of the trajectory (turns and the bookkeeping lines among them).
    pub included: Vec<bool>,
    /// The indices of the main chain, root first.
    pub chain: Vec<usize>,
    /// Turns not taken, with why, in file order.
    pub left_out: Vec<(usize, LeftOut)>,
    /// True when every turn is a sidechain: the file is a subagent's.
    pub subagent: bool,
}

/// A user or assistant line with a uuid: a turn that can be placed in the tree.
pub(super) fn is_turn(e: &Node<'_>) -> bool {
    matches!(e["type"].as_str(), Some("user" | "assistant")) && e["uuid"].as_str().is_some()
}

/// The line's parent: `parentUuid`, or for a root that continues a compacted conversation
/// (`compact_boundary`), its `logicalParentUuid`.
fn parent_of<'n>(e: &'n Node<'_>) -> Option<&'n str> {
    match e.get("parentUuid") {
        Some(Node::String(p)) => Some(p.as_ref()),
        None | Some(Node::Null) => e["logicalParentUuid"].as_str(),
        Some(_) => None,
    }
}

/// The `tool_use` ids of an assistant line.
pub(super) fn call_ids<'n>(e: &'n Node<'_>) -> impl Iterator<Item = &'n str> {
    e["message"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"].as_str() == Some("tool_use"))
        .filter_map(|b| b["id"].as_str())
}

/// The `tool_use_id`s a user line answers (none when it holds no `tool_result`).
pub(super) fn result_ids<'n>(e: &'n Node<'_>) -> Vec<&'n str> {
    e["message"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"].as_str() == Some("tool_result"))
        .map(|b| b["tool_use_id"].as_str().unwrap_or_default())
        .collect()
}

/// Chooses the lines of the trajectory among `entries` (the session's objects, in file order).
pub(super) fn select(entries: &[&Node<'_>]) -> Selection {
    let n = entries.len();
    let mut by_uuid: HashMap<&str, usize> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        if let Some(u) = e["uuid"].as_str() {
            by_uuid.entry(u).or_insert(i);
        }
    }
    let turns: Vec<usize> = (0..n).filter(|&i| is_turn(entries[i])).collect();
    let subagent = !turns.is_empty()
        && turns
            .iter()
            .all(|&i| entries[i]["isSidechain"].as_bool() == Some(true));
    let own_side = |e: &Node<'_>| subagent || e["isSidechain"].as_bool() != Some(true);
    let leaf = turns.iter().rev().copied().find(|&i| own_side(entries[i]));
    let mut included = vec![false; n];
    let mut chain = Vec::new();
    let mut cursor = leaf;
    while let Some(i) = cursor {
        if included[i] {
            break;
        }
        included[i] = true;
        chain.push(i);
        cursor = parent_of(entries[i]).and_then(|p| by_uuid.get(p).copied());
    }
    chain.reverse();
    // What the chain's responses are and which calls they made: a line off the chain joins
    // the trajectory when it continues one of them or answers one of their calls.
    let mut messages: HashSet<&str> = HashSet::new();
    let mut calls: HashSet<&str> = HashSet::new();
    for &i in &chain {
        if entries[i]["type"].as_str() == Some("assistant") {
            messages.extend(entries[i]["message"]["id"].as_str());
            calls.extend(call_ids(entries[i]));
        }
    }
    let mut left_out = Vec::new();
    for (i, &e) in entries.iter().enumerate() {
        if included[i] || e["uuid"].as_str().is_none() {
            continue;
        }
        let parent = parent_of(e).and_then(|p| by_uuid.get(p).copied());
        let turn = is_turn(e);
        let why = if turn && !own_side(e) {
            Some(LeftOut::Sidechain)
        } else if parent.is_none() {
            Some(LeftOut::Detached)
        } else if !parent.is_some_and(|p| included[p]) {
            Some(LeftOut::Branch)
        } else if !turn {
            None
        } else if e["type"].as_str() == Some("assistant") {
            let continues = e["message"]["id"]
                .as_str()
                .is_some_and(|m| messages.contains(m));
            (!continues).then_some(LeftOut::Branch)
        } else {
            let answers = result_ids(e);
            let ok = !answers.is_empty() && answers.iter().all(|id| calls.contains(id));
            (!ok).then_some(LeftOut::Branch)
        };
        match why {
            None => {
                included[i] = true;
                if e["type"].as_str() == Some("assistant") {
                    messages.extend(e["message"]["id"].as_str());
                    calls.extend(call_ids(e));
                }
            }
            Some(w) if turn => left_out.push((i, w)),
            Some(_) => {}
        }
    }
    Selection {
        included,
        chain,
        left_out,
        subagent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn line(uuid: &str, parent: Option<&str>, kind: &str, content: Value, mid: &str) -> Value {
        let mut v = json!({"uuid": uuid, "parentUuid": parent, "type": kind,
            "message": {"content": content}});
        if kind == "assistant" {
            v["message"]["id"] = json!(mid);
        }
        v
    }

    fn call(id: &str) -> Value {
        json!([{"type": "tool_use", "id": id, "name": "Read", "input": {}}])
    }

    fn result(id: &str) -> Value {
        json!([{"type": "tool_result", "tool_use_id": id, "content": "ok"}])
    }

    /// Parallel calls: each result hangs off its own call, the next line of the response and
    /// the edit of the prompt are siblings on the tree; only the edit is a branch.
    #[test]
    fn results_off_the_chain_are_kept_and_edits_left_out() {
        let lines = [
            line("p", None, "user", json!("task"), ""),
            line("a1", Some("p"), "assistant", call("c1"), "m1"),
            json!({"uuid": "g", "parentUuid": "a1", "type": "progress"}),
            line("a2", Some("g"), "assistant", call("c2"), "m1"),
            line("r1", Some("a1"), "user", result("c1"), ""),
            line("r2", Some("a2"), "user", result("c2"), ""),
            line(
                "x",
                Some("p"),
                "assistant",
                json!("an abandoned retry"),
                "m9",
            ),
            line("e", Some("r2"), "user", json!("edited prompt"), ""),
            line(
                "f",
                Some("r1"),
                "user",
                json!("the prompt before the edit"),
                "",
            ),
            line("d", Some("nowhere"), "user", json!("detached"), ""),
            line("z", Some("e"), "assistant", json!("done"), "m2"),
        ];
        let nodes: Vec<Node> = lines.iter().map(Node::from_value).collect();
        let refs: Vec<&Node> = nodes.iter().collect();
        let s = select(&refs);
        assert!(!s.subagent);
        assert_eq!(s.chain, vec![0, 1, 2, 3, 5, 7, 10]);
        let taken: Vec<usize> = (0..lines.len()).filter(|&i| s.included[i]).collect();
        assert_eq!(taken, vec![0, 1, 2, 3, 4, 5, 7, 10]);
        assert_eq!(
            s.left_out,
            vec![
                (6, LeftOut::Branch),
                (8, LeftOut::Branch),
                (9, LeftOut::Detached)
            ]
        );
    }

    #[test]
    fn a_file_of_sidechains_is_a_subagent_and_a_cycle_ends_the_chain() {
        let mut a = line("a", Some("b"), "user", json!("go"), "");
        let mut b = line("b", Some("a"), "assistant", json!("ok"), "m");
        a["isSidechain"] = json!(true);
        b["isSidechain"] = json!(true);
        let s = select(&[&Node::from_value(&a), &Node::from_value(&b)]);
        assert!(s.subagent);
        assert_eq!(s.chain, vec![0, 1]);
        // A compacted conversation continues through the boundary's logical parent.
        let first = line("u", None, "user", json!("before"), "");
        let boundary = json!({"uuid": "c", "parentUuid": null, "logicalParentUuid": "u",
            "type": "system", "subtype": "compact_boundary"});
        let after = line("v", Some("c"), "user", json!("after"), "");
        let [first, boundary, after] = [&first, &boundary, &after].map(Node::from_value);
        let s = select(&[&first, &boundary, &after]);
        assert_eq!(s.chain, vec![0, 1, 2]);
    }
}

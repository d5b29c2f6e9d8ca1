//! Which lines of a session make its trajectory. Claude Code links its lines into a tree by
//! `parentUuid`: the main chain runs from the leaf (the conversation's last message) back to
//! the root, and a response's tool results hang off the line of their own call, so parallel
//! calls put results (and the lines of the same response written after them) on side branches.
//! The trajectory is the main chain plus what hangs off it and belongs to the same
//! conversation: a result answering a call already taken, a line of a response already taken.
//! Anything else off the chain is a real branch (a prompt edited or retried, a sidechain) and
//! is left out.
//!
//! A line without a parent (no `parentUuid`, a null one, one of the wrong type, or one naming
//! no line of the file) follows the message before it in the file, so transcripts written
//! without `parentUuid` read in file order and a stray root (a `progress` or `attachment` line
//! with a null parent) does not cut the conversation; a `compact_boundary` root follows its
//! `logicalParentUuid`, so a compacted session stays one conversation. Bookkeeping lines (any
//! type but `user` and `assistant`) are passed through: they never end a chain, and the leaf
//! is chosen among the messages only.

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use crate::json::Node;

/// Why a message is left out of the trajectory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Off {
    /// Off the conversation: another prompt or response hanging off a line of it (an edit, a
    /// retry, a rewind), or what follows one.
    Branch,
    /// A sidechain line in a main session file (older versions wrote subagents inline).
    Sidechain,
    /// A second line with the uuid of an earlier one (a copy Claude Code wrote again): the
    /// first stands for both.
    Duplicate,
}

impl Off {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Off::Branch => "branch",
            Off::Sidechain => "sidechain",
            Off::Duplicate => "duplicate",
        }
    }
}

/// A structural field of a message whose value has the wrong type, read as absent.
pub(super) struct WrongField {
    /// The line's index among the session's entries.
    pub index: usize,
    pub pointer: &'static str,
    pub reason: &'static str,
}

/// The lines taken, by index into the session's entries.
pub(super) struct Selection {
    /// The lines of the trajectory: the main chain (with the bookkeeping lines on it) and the
    /// messages that hang off it in the same conversation.
    pub included: Vec<bool>,
    /// The indices of the main chain, root first.
    pub chain: Vec<usize>,
    /// Messages not taken, with why, in file order.
    pub left_out: Vec<(usize, Off)>,
    /// Messages placed after the message before them in the file (no usable parent), but
    /// the first one.
    pub by_file_order: Vec<usize>,
    /// Wrong-typed `uuid`, `parentUuid` and `isSidechain` of messages, in file order.
    pub wrong: Vec<WrongField>,
    /// True when every message is a sidechain: the file is a subagent's.
    pub subagent: bool,
}

/// A user or assistant line: a message of the conversation.
pub(super) fn is_turn(e: &Node<'_>) -> bool {
    matches!(e["type"].as_str(), Some("user" | "assistant"))
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

/// The parent a line names: its `parentUuid`, or for a root that continues a compacted
/// conversation (`compact_boundary`), its `logicalParentUuid`; `None` when it names none.
fn named_parent<'n>(e: &'n Node<'_>) -> Option<&'n str> {
    match e.get("parentUuid") {
        Some(Node::String(p)) => Some(p.as_ref()),
        _ => e["logicalParentUuid"].as_str(),
    }
}

/// Notes the wrong-typed structural fields of message `index`.
fn check_fields(index: usize, e: &Node<'_>, wrong: &mut Vec<WrongField>) {
    let mut note = |pointer, reason| {
        wrong.push(WrongField {
            index,
            pointer,
            reason,
        })
    };
    if e.get("uuid").is_some_and(|v| v.as_str().is_none()) {
        note(
            "/uuid",
            "a uuid that is not a string: no line can name this one as its parent",
        );
    }
    if e.get("parentUuid")
        .is_some_and(|v| !v.is_null() && v.as_str().is_none())
    {
        note(
            "/parentUuid",
            "a parentUuid that is neither a string nor null: the line follows the message before it in the file",
        );
    }
    if e.get("isSidechain").is_some_and(|v| v.as_bool().is_none()) {
        note(
            "/isSidechain",
            "an isSidechain that is not a boolean: read as false",
        );
    }
}

/// Chooses the lines of the trajectory among `entries` (the session's objects, in file order).
pub(super) fn select(entries: &[&Node<'_>]) -> Selection {
    let n = entries.len();
    let side = |e: &Node<'_>| e["isSidechain"].as_bool() == Some(true);
    // The first of two lines with one uuid stands for both (the second is a copy written
    // again).
    let mut by_uuid: HashMap<&str, usize> = HashMap::new();
    let mut turns = Vec::new();
    let mut wrong = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if let Some(u) = e["uuid"].as_str() {
            by_uuid.entry(u).or_insert(i);
        }
        if is_turn(e) {
            turns.push(i);
            check_fields(i, e, &mut wrong);
        }
    }
    let subagent = !turns.is_empty() && turns.iter().all(|&i| side(entries[i]));
    let own_side = |e: &Node<'_>| subagent || !side(e);
    // Each line's parent: the line it names, else the last message before it on its side.
    let mut parent: Vec<Option<usize>> = vec![None; n];
    let mut by_file_order = Vec::new();
    let mut last_turn: [Option<usize>; 2] = [None, None];
    for (i, e) in entries.iter().enumerate() {
        let s = usize::from(side(e));
        let named = named_parent(e)
            .and_then(|p| by_uuid.get(p).copied())
            .filter(|&p| p != i);
        parent[i] = named.or(last_turn[s]);
        if is_turn(e) {
            if named.is_none() && last_turn[s].is_some() {
                by_file_order.push(i);
            }
            last_turn[s] = Some(i);
        }
    }
    // Each message's parent message, through the bookkeeping lines between them; the leaf is
    // the last message of the file's own side that no message follows.
    let duplicate = |i: usize| {
        entries[i]["uuid"]
            .as_str()
            .is_some_and(|u| by_uuid.get(u) != Some(&i))
    };
    let mut followed = vec![false; n];
    for &t in turns
        .iter()
        .filter(|&&t| own_side(entries[t]) && !duplicate(t))
    {
        let mut cursor = parent[t];
        let mut steps = 0;
        while let Some(p) = cursor {
            if is_turn(entries[p]) || steps > n {
                followed[p] = true;
                break;
            }
            cursor = parent[p];
            steps += 1;
        }
    }
    let candidates = || {
        turns
            .iter()
            .rev()
            .copied()
            .filter(|&i| own_side(entries[i]) && !duplicate(i))
    };
    let leaf = candidates()
        .find(|&i| !followed[i])
        .or_else(|| candidates().next());
    let mut included = vec![false; n];
    let mut chain = Vec::new();
    let mut cursor = leaf;
    while let Some(i) = cursor {
        if included[i] {
            break;
        }
        included[i] = true;
        chain.push(i);
        cursor = parent[i];
    }
    chain.reverse();
    // What the chain's responses are and which calls they made: a message off the chain joins
    // the trajectory when it continues one of them, or answers their calls.
    let mut messages: HashSet<&str> = HashSet::new();
    for &i in &chain {
        if entries[i]["type"].as_str() == Some("assistant") {
            messages.extend(entries[i]["message"]["id"].as_str());
        }
    }
    let mut calls: HashSet<&str> = HashSet::new();
    let mut off: Vec<Option<Off>> = vec![None; n];
    for &i in &turns {
        let e = entries[i];
        let why = if included[i] {
            None
        } else if !own_side(e) {
            Some(Off::Sidechain)
        } else if duplicate(i) {
            Some(Off::Duplicate)
        } else if e["type"].as_str() != Some("assistant") {
            // Users: decided once every call taken is known.
            Some(Off::Branch)
        } else if e["message"]["id"]
            .as_str()
            .is_some_and(|m| messages.contains(m))
        {
            None
        } else {
            Some(Off::Branch)
        };
        if why.is_none() {
            included[i] = true;
            if e["type"].as_str() == Some("assistant") {
                calls.extend(call_ids(e));
            }
        }
        off[i] = why;
    }
    for &i in &turns {
        let e = entries[i];
        if off[i] == Some(Off::Branch) && e["type"].as_str() == Some("user") {
            let answers = result_ids(e);
            if !answers.is_empty() && answers.iter().all(|id| calls.contains(id)) {
                included[i] = true;
                off[i] = None;
            }
        }
    }
    let left_out = turns
        .iter()
        .filter_map(|&i| off[i].map(|w| (i, w)))
        .collect();
    Selection {
        included,
        chain,
        left_out,
        by_file_order,
        wrong,
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

    fn select_values(lines: &[Value]) -> Selection {
        let nodes: Vec<Node> = lines.iter().map(Node::from_value).collect();
        let refs: Vec<&Node> = nodes.iter().collect();
        select(&refs)
    }

    fn taken(s: &Selection) -> Vec<usize> {
        (0..s.included.len()).filter(|&i| s.included[i]).collect()
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
            line("z", Some("e"), "assistant", json!("done"), "m2"),
        ];
        let s = select_values(&lines);
        assert!(!s.subagent);
        assert_eq!(s.chain, vec![0, 1, 2, 3, 5, 7, 9]);
        assert_eq!(taken(&s), vec![0, 1, 2, 3, 4, 5, 7, 9]);
        assert_eq!(s.left_out, vec![(6, Off::Branch), (8, Off::Branch)]);
        assert!(s.by_file_order.is_empty() && s.wrong.is_empty());
    }

    #[test]
    fn a_file_of_sidechains_is_a_subagent_and_a_cycle_ends_the_chain() {
        let mut a = line("a", Some("b"), "user", json!("go"), "");
        let mut b = line("b", Some("a"), "assistant", json!("ok"), "m");
        a["isSidechain"] = json!(true);
        b["isSidechain"] = json!(true);
        let s = select_values(&[a, b]);
        assert!(s.subagent);
        assert_eq!(s.chain, vec![0, 1]);
    }

    /// Without `parentUuid`, and with stray roots, the lines follow each other in file order;
    /// a compact boundary joins the conversation through its logical parent.
    #[test]
    fn lines_without_a_parent_follow_the_file_and_a_boundary_its_logical_parent() {
        let plain = |uuid: &str, kind: &str, content: Value| {
            let mut v = line(uuid, None, kind, content, &format!("m-{uuid}"));
            v.as_object_mut().map(|o| o.remove("parentUuid"));
            v
        };
        let lines = [
            json!({"type": "summary", "summary": "s", "leafUuid": "u4"}),
            plain("u1", "user", json!("go")),
            plain("u2", "assistant", call("c1")),
            plain("u3", "user", result("c1")),
            plain("u4", "assistant", json!("done")),
        ];
        let s = select_values(&lines);
        assert_eq!(s.chain, vec![1, 2, 3, 4]);
        assert_eq!(s.by_file_order, vec![2, 3, 4]);
        let lines = [
            json!({"uuid": "g0", "parentUuid": null, "type": "progress"}),
            line("u", Some("g0"), "user", json!("before"), ""),
            line("a", Some("u"), "assistant", json!("ok"), "m1"),
            json!({"uuid": "g1", "parentUuid": null, "type": "attachment"}),
            json!({"uuid": "c", "parentUuid": null, "logicalParentUuid": "g1",
                "type": "system", "subtype": "compact_boundary"}),
            line("v", Some("c"), "user", json!("summary"), ""),
            line("w", Some("v"), "assistant", json!("after"), "m2"),
            json!({"uuid": "g2", "parentUuid": 7, "type": "mode"}),
        ];
        let s = select_values(&lines);
        assert_eq!(s.chain, vec![0, 1, 2, 3, 4, 5, 6]);
        assert!(s.left_out.is_empty() && s.by_file_order.is_empty());
    }

    /// The leaf is the last message nothing follows: not a copy written again, and not a call
    /// whose result was written before it.
    #[test]
    fn the_leaf_is_the_last_message_nothing_follows() {
        let mut lines = vec![
            line("p", None, "user", json!("task"), ""),
            line("r", Some("a"), "user", result("c1"), ""),
            line("a", Some("p"), "assistant", call("c1"), "m1"),
        ];
        let s = select_values(&lines);
        assert_eq!(s.chain, vec![0, 2, 1]);
        lines.push(line("b", Some("r"), "assistant", json!("done"), "m2"));
        lines.push(line("p", None, "user", json!("task"), ""));
        let s = select_values(&lines);
        assert_eq!(s.chain, vec![0, 2, 1, 3]);
        assert_eq!(s.left_out, vec![(4, Off::Duplicate)]);
        // A sidechain line hanging off the last message does not follow it.
        let mut side = line("s", Some("a"), "user", json!("subtask"), "");
        side["isSidechain"] = json!(true);
        let lines = [
            line("p", None, "user", json!("task"), ""),
            line("x", Some("p"), "assistant", json!("a retry"), "m9"),
            line("a", Some("p"), "assistant", call("c1"), "m1"),
            side,
        ];
        let s = select_values(&lines);
        assert_eq!(s.chain, vec![0, 2]);
        assert_eq!(s.left_out, vec![(1, Off::Branch), (3, Off::Sidechain)]);
        let mut bad = line("q", None, "user", json!("x"), "");
        bad["isSidechain"] = json!("no");
        bad["uuid"] = json!(5);
        let s = select_values(&[bad]);
        let pointers: Vec<&str> = s.wrong.iter().map(|w| w.pointer).collect();
        assert_eq!(pointers, vec!["/uuid", "/isSidechain"]);
        assert_eq!(s.chain, vec![0]);
    }
}

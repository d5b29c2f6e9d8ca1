//! Which entries of a session make its trajectory. From version 2 on, Pi links its entries into
//! a tree by `id`/`parentId`: the conversation is the path from the leaf (the entry appended
//! last, where Pi resumes) back to the root, as Pi's own context building walks it; the other
//! branches were abandoned (`/tree`, `/branch`) and are left out. Version 1 files have no ids:
//! their entries are one linear conversation, in file order.

use foldhash::{HashMap, HashMapExt};

use crate::json::Node;

/// The entries taken, by index into the session's body entries (the lines after the header).
pub(super) struct Selection {
    /// The path from the root to the leaf, in order.
    pub path: Vec<usize>,
    /// Entries off the path (abandoned branches), in file order.
    pub off_path: Vec<usize>,
    /// Entries of a tree without a string `id`: they cannot be placed, in file order.
    pub unplaced: Vec<usize>,
}

/// True when the session is a tree: its header says version 2 or later, or (a header without
/// a version) its entries carry `parentId`.
pub(super) fn is_tree(version: Option<u64>, body: &[&Node<'_>]) -> bool {
    match version {
        Some(v) => v >= 2,
        None => body.iter().any(|e| e.get("parentId").is_some()),
    }
}

/// Chooses the entries of the conversation among `body` (the entries after the header, in
/// file order).
pub(super) fn select(body: &[&Node<'_>], tree: bool) -> Selection {
    if !tree {
        return Selection {
            path: (0..body.len()).collect(),
            off_path: Vec::new(),
            unplaced: Vec::new(),
        };
    }
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    let mut unplaced = Vec::new();
    for (i, e) in body.iter().enumerate() {
        match e["id"].as_str() {
            Some(id) => {
                by_id.entry(id).or_insert(i);
            }
            None => unplaced.push(i),
        }
    }
    let leaf = (0..body.len())
        .rev()
        .find(|&i| body[i]["id"].as_str().is_some());
    let mut on_path = vec![false; body.len()];
    let mut path = Vec::new();
    let mut cursor = leaf;
    while let Some(i) = cursor {
        if on_path[i] {
            break; // a cycle: the path ends where it closes
        }
        on_path[i] = true;
        path.push(i);
        cursor = body[i]["parentId"]
            .as_str()
            .and_then(|p| by_id.get(p).copied());
    }
    path.reverse();
    let off_path = (0..body.len())
        .filter(|&i| !on_path[i] && body[i]["id"].as_str().is_some())
        .collect();
    Selection {
        path,
        off_path,
        unplaced,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn entry(id: &str, parent: Option<&str>) -> Value {
        json!({"type": "message", "id": id, "parentId": parent})
    }

    #[test]
    fn the_path_runs_from_the_last_entry_to_the_root() {
        let lines = [
            entry("a", None),
            entry("b", Some("a")),
            entry("c", Some("b")),
            entry("x", Some("a")), // a branch from `a`, abandoned: the leaf is on the other
            json!({"type": "message"}),
            entry("d", Some("c")),
        ];
        let nodes: Vec<Node> = lines.iter().map(Node::from_value).collect();
        let refs: Vec<&Node> = nodes.iter().collect();
        assert!(is_tree(Some(3), &refs));
        let s = select(&refs, true);
        assert_eq!(s.path, vec![0, 1, 2, 5]);
        assert_eq!(s.off_path, vec![3]);
        assert_eq!(s.unplaced, vec![4]);
    }

    #[test]
    fn a_linear_file_is_taken_whole_and_a_cycle_ends_the_path() {
        let lines = [json!({"type": "message"}), json!({"type": "compaction"})];
        let nodes: Vec<Node> = lines.iter().map(Node::from_value).collect();
        let refs: Vec<&Node> = nodes.iter().collect();
        assert!(!is_tree(None, &refs));
        assert_eq!(select(&refs, false).path, vec![0, 1]);
        let cycle = [entry("a", Some("b")), entry("b", Some("a"))];
        let nodes: Vec<Node> = cycle.iter().map(Node::from_value).collect();
        let refs: Vec<&Node> = nodes.iter().collect();
        assert!(is_tree(None, &refs));
        assert_eq!(select(&refs, true).path, vec![0, 1]);
    }
}

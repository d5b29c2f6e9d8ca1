//! Which entries of a session make its trajectory. From version 2 on, Pi links its entries into
//! a tree by `id`/`parentId`: the conversation is the path from the leaf (the entry appended
//! last, where Pi resumes) back to the root, as Pi's own context building walks it; the other
//! branches were abandoned (`/tree`, `/branch`) and are left out. Version 1 files have no ids:
//! their entries are one linear conversation, in file order.

use crate::formats::tree::path_to_leaf;
pub(super) use crate::formats::tree::Selection;
use crate::json::Node;

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
    path_to_leaf(body, "id", "parentId")
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

//! The conversation of a session whose entries form a tree by id and parent id (Pi's
//! `id`/`parentId`, Qwen Code's `uuid`/`parentUuid`): the path from the leaf, the entry
//! appended last, back to the root, as those tools rebuild the context they resume from. The
//! other branches were abandoned (a rewind, a branch, an edit) and are left out.

use foldhash::{HashMap, HashMapExt};

use crate::json::Node;

/// The entries taken, by index into the entries given.
pub struct Selection {
    /// The path from the root to the leaf, in order.
    pub path: Vec<usize>,
    /// Entries with an id off the path (abandoned branches, and later copies of an id), in
    /// file order.
    pub off_path: Vec<usize>,
    /// Entries without a string id: they cannot be placed, in file order.
    pub unplaced: Vec<usize>,
}

/// Walks `entries` (in file order) from the last one with a string `id_key` back through
/// `parent_key`. A parent id names the first entry with that id; a parent that no entry has,
/// or a cycle, ends the path.
pub fn path_to_leaf(entries: &[&Node<'_>], id_key: &str, parent_key: &str) -> Selection {
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    let mut unplaced = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        match e[id_key].as_str() {
            Some(id) => {
                by_id.entry(id).or_insert(i);
            }
            None => unplaced.push(i),
        }
    }
    let leaf = (0..entries.len())
        .rev()
        .find(|&i| entries[i][id_key].as_str().is_some());
    let mut on_path = vec![false; entries.len()];
    let mut path = Vec::new();
    let mut cursor = leaf;
    while let Some(i) = cursor {
        if on_path[i] {
            break; // a cycle: the path ends where it closes
        }
        on_path[i] = true;
        path.push(i);
        cursor = entries[i][parent_key]
            .as_str()
            .and_then(|p| by_id.get(p).copied());
    }
    path.reverse();
    let off_path = (0..entries.len())
        .filter(|&i| !on_path[i] && entries[i][id_key].as_str().is_some())
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
        json!({"uuid": id, "parentUuid": parent})
    }

    #[test]
    fn the_path_runs_from_the_last_entry_to_the_root() {
        let lines = [
            entry("a", None),
            entry("b", Some("a")),
            entry("x", Some("a")), // abandoned: the leaf is on the other branch
            json!({"type": "stray"}),
            entry("c", Some("b")),
        ];
        let nodes: Vec<Node> = lines.iter().map(Node::from_value).collect();
        let refs: Vec<&Node> = nodes.iter().collect();
        let s = path_to_leaf(&refs, "uuid", "parentUuid");
        assert_eq!(s.path, vec![0, 1, 4]);
        assert_eq!(s.off_path, vec![2]);
        assert_eq!(s.unplaced, vec![3]);
    }

    #[test]
    fn a_parent_names_the_first_entry_of_its_id_and_a_cycle_ends_the_path() {
        let lines = [
            entry("a", None),
            entry("b", Some("a")),
            entry("b", Some("a")),
        ];
        let lines = [
            lines[0].clone(),
            lines[1].clone(),
            entry("c", Some("b")),
            lines[2].clone(),
        ];
        let nodes: Vec<Node> = lines.iter().map(Node::from_value).collect();
        let refs: Vec<&Node> = nodes.iter().collect();
        let s = path_to_leaf(&refs, "uuid", "parentUuid");
        assert_eq!(s.path, vec![0, 3]);
        assert_eq!(s.off_path, vec![1, 2]);
        let cycle = [entry("a", Some("b")), entry("b", Some("a"))];
        let nodes: Vec<Node> = cycle.iter().map(Node::from_value).collect();
        let refs: Vec<&Node> = nodes.iter().collect();
        assert_eq!(path_to_leaf(&refs, "uuid", "parentUuid").path, vec![0, 1]);
    }
}

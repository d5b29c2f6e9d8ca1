//! Where a session was compacted. When the context fills (or on `/compact`), Claude Code writes
//! a `system` line of subtype `compact_boundary` (a new root, `parentUuid: null`, joined to the
//! conversation before it by `logicalParentUuid`), then a user line with `isCompactSummary: true`
//! holding the summary the conversation goes on from; older versions wrote the summary alone.
//! The summary stays a step (an environment observation named `compact_summary`); each
//! compaction is listed with the index of the first step after it, where a later stage may cut
//! the trajectory.

use crate::json::Node;

/// One compaction: the boundary's line, the summary's line, the boundary's `compactMetadata`.
struct Compaction<'a> {
    line: Option<u64>,
    summary_line: Option<u64>,
    metadata: Node<'a>,
}

/// The compactions among `lines` (numbered entries, in file order) of the conversation's side
/// (`own_side`), each as `{step, line, summary_line, metadata}`: `step` is the index of the
/// first step made from a line after the compaction (the summary's, when it is kept), `null`
/// when no step comes after it; `origins` is the line each step comes from.
pub(super) fn compactions<'a>(
    lines: &[(u64, &Node<'a>)],
    own_side: impl Fn(&Node<'_>) -> bool,
    origins: &[u64],
) -> Vec<Node<'a>> {
    let mut found: Vec<Compaction<'a>> = Vec::new();
    // True while the last boundary waits for its summary (no message came after it yet).
    let mut open = false;
    for &(line, e) in lines {
        if !own_side(e) {
            continue;
        }
        let kind = e["type"].as_str();
        if kind == Some("system") && e["subtype"].as_str() == Some("compact_boundary") {
            found.push(Compaction {
                line: Some(line),
                summary_line: None,
                metadata: e["compactMetadata"].clone(),
            });
            open = true;
        } else if kind == Some("user") && e["isCompactSummary"].as_bool() == Some(true) {
            match found.last_mut() {
                Some(c) if open => c.summary_line = Some(line),
                _ => found.push(Compaction {
                    line: None,
                    summary_line: Some(line),
                    metadata: Node::Null,
                }),
            }
            open = false;
        } else if matches!(kind, Some("user" | "assistant")) {
            open = false;
        }
    }
    found
        .into_iter()
        .map(|c| {
            let summary_line = c.summary_line;
            let cut = c.line.or(summary_line.map(|l| l - 1)).unwrap_or(0);
            let step = origins.iter().position(|&o| o > cut);
            Node::object([
                ("step", step.map_or(Node::Null, |s| Node::from(s as u64))),
                ("line", c.line.map_or(Node::Null, Node::from)),
                ("summary_line", summary_line.map_or(Node::Null, Node::from)),
                ("metadata", c.metadata),
            ])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_boundary_is_listed_with_its_summary_and_the_step_after_it() {
        let values = [
            json!({"type": "user"}),
            json!({"type": "system", "subtype": "compact_boundary",
                "compactMetadata": {"trigger": "auto", "preTokens": 9}}),
            json!({"type": "user", "isCompactSummary": true}),
            json!({"type": "assistant"}),
            json!({"type": "user", "isCompactSummary": true}),
            json!({"type": "system", "subtype": "compact_boundary", "isSidechain": true}),
            json!({"type": "system", "subtype": "compact_boundary"}),
        ];
        let nodes: Vec<Node> = values.iter().map(Node::from_value).collect();
        let lines: Vec<(u64, &Node)> = (1..).zip(nodes.iter()).collect();
        let own = |e: &Node<'_>| e["isSidechain"].as_bool() != Some(true);
        let found = compactions(&lines, own, &[1, 3, 4, 5]);
        let found: Vec<serde_json::Value> = found.iter().map(Node::to_value).collect();
        assert_eq!(
            found,
            vec![
                json!({"step": 1, "line": 2, "summary_line": 3,
                    "metadata": {"trigger": "auto", "preTokens": 9}}),
                json!({"step": 3, "line": null, "summary_line": 5, "metadata": null}),
                json!({"step": null, "line": 7, "summary_line": null, "metadata": null}),
            ]
        );
    }
}

//! LedgerMind events (JSON lines) as side files for `join` (`--reflections-from ledgermind`):
//! semantic events only (the others are steps, skipped), keyed by their session and by the
//! events they cite, as [`super::store`] attaches them when converting; the reflection as the
//! converter writes it.

use serde_json::Value;

use super::reflection;
use super::store::{CITATION_KEYS, SEMANTIC_KINDS};
use crate::join::side::{Attach, Prepared, SideFormat};
use crate::json::Node;

/// The LedgerMind side format.
#[derive(Debug)]
pub struct LedgerMindSide;

impl SideFormat for LedgerMindSide {
    fn name(&self) -> &'static str {
        "ledgermind"
    }

    fn help(&self) -> &'static str {
        "semantic events, by session id and cited event ids"
    }

    fn keys(&self) -> Vec<String> {
        let mut keys = vec!["session:{context.session_id}".to_owned()];
        keys.extend(
            CITATION_KEYS
                .iter()
                .map(|k| format!("event:{{context.{k}.*}}")),
        );
        keys
    }

    fn trajectory_keys(&self) -> &'static [&'static str] {
        &[
            "session:{id}",
            "event:{details.source.native_ids.event_ids.*}",
        ]
    }

    /// Events that are not semantic are steps: not attached.
    fn prepare(&self, record: &mut Value, _file: &str) -> Prepared {
        if SEMANTIC_KINDS.contains(&record["kind"].as_str().unwrap_or_default()) {
            Prepared::Read
        } else {
            Prepared::Skip
        }
    }

    fn attach(&self, record: &Value, _key: &str) -> Result<Attach, String> {
        Ok(Attach {
            reflection: Some(reflection(&Node::from_value(record)).to_value()),
            ..Attach::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::join::SideSpec;

    #[test]
    fn ledgermind_keys_sessions_and_cited_events_and_skips_steps() {
        let s = SideSpec::of(&LedgerMindSide).expect("spec");
        assert_eq!(s.keys.len(), 1 + CITATION_KEYS.len());
        assert_eq!(s.trajectory_keys.len(), 2);
        let e = json!({"id": 10, "kind": "reflection", "content": "c",
                       "context": {"event_ids": [3, 4], "session_id": "s-1"}});
        let x = s.extract(e, "e.jsonl").expect("reads").expect("attaches");
        assert_eq!(x.keys, vec!["session:s-1", "event:3", "event:4"]);
        let step = json!({"id": 3, "kind": "call", "content": "ls", "context": {}});
        assert!(s.extract(step, "e.jsonl").expect("reads").is_none());
        let uncited = json!({"id": 11, "kind": "insight", "content": "c", "context": {}});
        assert!(s
            .extract(uncited, "e.jsonl")
            .unwrap_err()
            .contains("no key"));
    }
}

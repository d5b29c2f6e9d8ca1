//! Reflexion records as side files for `join` (`--reflections-from reflexion`): key
//! `{loop_id}#{iteration}`, the id [`super::trajectory_id`] gives; the evaluator's reward and
//! outcome and the self-reflection, as the converter writes them.

use serde_json::Value;

use super::{outcome, reflection, reward};
use crate::join::side::{Attach, Outcome, SideFormat, WindowKeys};
use crate::json::Node;

/// The Reflexion side format.
#[derive(Debug)]
pub struct ReflexionSide;

impl SideFormat for ReflexionSide {
    fn name(&self) -> &'static str {
        "reflexion"
    }

    fn help(&self) -> &'static str {
        "key `{loop_id}#{iteration}`"
    }

    fn keys(&self) -> Vec<String> {
        vec!["{loop_id}#{iteration}".to_owned()]
    }

    fn window(&self) -> Option<WindowKeys> {
        Some(WindowKeys {
            group: "loop_id",
            iteration: "iteration",
            trajectory_group: "/details/source/native_ids/loop_id",
            trajectory_iteration: "/details/source/native_ids/iteration",
        })
    }

    fn attach(&self, record: &Value, key: &str) -> Result<Attach, String> {
        let evaluator = &record["evaluator_output"];
        let iteration = record["iteration"].as_u64().unwrap_or_default();
        let reflection = match record.get("self_reflection") {
            Some(r) if r.is_object() => {
                Some(reflection(Node::from_value(r), key, iteration).to_value())
            }
            _ => None,
        };
        let evaluator_node = Node::from_value(evaluator);
        Ok(Attach {
            reward: reward(&evaluator_node).and_then(|r| r.as_number().cloned()),
            outcome: evaluator
                .is_object()
                .then(|| Outcome::Value(outcome(&evaluator_node).to_value())),
            reflection,
            ..Attach::default()
        })
    }
}

//! memabra traces as side files for `join` (`--rewards-from memabra`): key `/trajectory_id`;
//! the reward, its components and the outcome, as the converter writes them.

use serde_json::Value;

use super::outcome;
use crate::join::side::{components, Attach, Outcome, SideFormat};
use crate::json::Node;

/// The memabra side format.
#[derive(Debug)]
pub struct MemabraSide;

impl SideFormat for MemabraSide {
    fn name(&self) -> &'static str {
        "memabra"
    }

    fn help(&self) -> &'static str {
        "`/trajectory_id`"
    }

    fn keys(&self) -> Vec<String> {
        vec!["/trajectory_id".to_owned()]
    }

    fn attach(&self, record: &Value, _key: &str) -> Result<Attach, String> {
        Ok(Attach {
            reward: record["reward"]["total"].as_number().cloned(),
            components: match &record["reward"]["components"] {
                Value::Object(c) => Some(components(c, "/reward/components")?),
                _ => None,
            },
            outcome: record["outcome"].is_object().then(|| {
                let native = Node::from_value(&record["outcome"]);
                Outcome::Value(outcome(&native).to_value())
            }),
            ..Attach::default()
        })
    }
}

//! The `[filter]` stage: which trajectories go on to the exports, by the fields the exports
//! already filter on (`min_reward`, `outcome`, `max_steps`, `max_chars`, as `trajkit export`'s
//! options mean them) and `min_steps`. A trajectory left out is counted as filtered, with the
//! first reason it failed (the `filter` section of the run's summary counts each reason).
//!
//! A pipeline applies it after the joins (so their rewards and outcomes can be filtered on) and
//! before redaction (which then scans only the trajectories that stay).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::stage::{Ordered, Sections, Stage, Step};
use crate::export::filter::{Filtered, Filters};
use crate::ingest::Provenance;
use crate::model::Trajectory;

/// A pipeline's `[filter]` table: every key is optional, and a trajectory must pass each one
/// given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct FilterConfig {
    /// `details.reward` at least this (a trajectory without a reward is left out), as `export
    /// --min-reward`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_reward: Option<f64>,
    /// `details.outcome` (or its `status`) one of these, as `export --outcome`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1)))]
    pub outcome: Vec<String>,
    /// At least this many steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_steps: Option<usize>,
    /// At most this many steps, as `export --max-steps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<usize>,
    /// At most this many characters of free text (contents, code, pages, thoughts), as `export
    /// --max-chars`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
}

/// The stage a `[filter]` table makes.
pub struct Filter {
    min_steps: Option<usize>,
    filters: Filters,
}

impl FilterConfig {
    /// The stage.
    pub fn stage(&self) -> Filter {
        Filter {
            min_steps: self.min_steps,
            filters: Filters {
                min_reward: self.min_reward,
                outcome: self.outcome.clone(),
                max_steps: self.max_steps,
                max_chars: self.max_chars,
            },
        }
    }
}

impl Filter {
    /// The first key of the table `traj` fails (its name is the reason), if any: in the order
    /// `min_reward`, `outcome`, `min_steps`, `max_steps`, `max_chars`.
    pub fn check(&self, traj: &Trajectory) -> Option<&'static str> {
        let failed = self.filters.check(traj);
        if let Some(f @ (Filtered::MinReward | Filtered::Outcome)) = failed {
            return Some(reason(f));
        }
        if self.min_steps.is_some_and(|m| traj.content.len() < m) {
            return Some("min_steps");
        }
        failed.map(reason)
    }
}

/// The key a filter of the exports' is given by.
fn reason(f: Filtered) -> &'static str {
    match f {
        Filtered::MinReward => "min_reward",
        Filtered::Outcome => "outcome",
        Filtered::MaxSteps => "max_steps",
        Filtered::MaxChars => "max_chars",
        // Not among the keys of `[filter]`.
        _ => "other",
    }
}

impl Stage for Filter {
    fn kind(&self) -> &'static str {
        "filter"
    }

    fn apply(&self, traj: &mut Trajectory, _prov: &Provenance) -> Step {
        match self.check(traj) {
            Some(why) => Step::Dropped(why),
            None => Step::Kept(None),
        }
    }

    fn ordered(&self) -> Box<dyn Ordered + '_> {
        Box::new(Reasons::default())
    }
}

/// What the filter reports in a run's summary (its `filter` section).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FilterReport {
    /// Trajectories left out, per reason (the key they failed first).
    pub filtered: BTreeMap<String, u64>,
}

/// The ordered half: trajectories left out, per reason.
#[derive(Default)]
struct Reasons(BTreeMap<String, u64>);

impl Ordered for Reasons {
    fn accept(&mut self, step: &Step) {
        if let Step::Dropped(why) = step {
            *self.0.entry((*why).to_owned()).or_default() += 1;
        }
    }

    fn checkpoint(&mut self) -> Value {
        serde_json::to_value(&self.0).unwrap_or(Value::Null)
    }

    fn restore(&mut self, states: &[Value]) {
        if let Some(r) = states.last().and_then(|s| BTreeMap::deserialize(s).ok()) {
            self.0 = r;
        }
    }

    fn summarize(&self, sections: &mut Sections) {
        let report = FilterReport {
            filtered: self.0.clone(),
        };
        sections.set(
            "filter",
            serde_json::to_value(report).unwrap_or(Value::Null),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trajectory(steps: usize, details: Value) -> Trajectory {
        let content: Vec<Value> = (0..steps)
            .map(|i| {
                serde_json::json!({"class_": "text_observation", "source": "user",
                    "content": format!("step {i}")})
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "id": "t", "content": content, "details": details,
        }))
        .expect("a trajectory")
    }

    fn config(toml_text: &str) -> FilterConfig {
        toml::from_str(toml_text).expect("a [filter] table")
    }

    #[test]
    fn each_key_is_a_reason_in_order() {
        let f = config("min_reward = 0.5\nmin_steps = 2\nmax_steps = 3\n").stage();
        let rewarded = |r: f64| serde_json::json!({ "reward": r });
        assert_eq!(f.check(&trajectory(2, rewarded(0.9))), None);
        assert_eq!(f.check(&trajectory(1, rewarded(0.1))), Some("min_reward"));
        assert_eq!(
            f.check(&trajectory(2, serde_json::json!({}))),
            Some("min_reward")
        );
        assert_eq!(f.check(&trajectory(1, rewarded(0.9))), Some("min_steps"));
        assert_eq!(f.check(&trajectory(4, rewarded(0.9))), Some("max_steps"));
    }

    #[test]
    fn outcome_matches_a_string_or_a_status() {
        let f = config("outcome = [\"resolved\"]\n").stage();
        let with = |o: Value| trajectory(1, serde_json::json!({ "outcome": o }));
        assert_eq!(f.check(&with(Value::from("resolved"))), None);
        assert_eq!(
            f.check(&with(serde_json::json!({"status": "resolved"}))),
            None
        );
        assert_eq!(f.check(&with(Value::from("failed"))), Some("outcome"));
    }

    #[test]
    fn unknown_keys_are_refused() {
        assert!(toml::from_str::<FilterConfig>("max_turns = 3\n").is_err());
    }
}

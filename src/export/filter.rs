//! Filters: which trajectories an export writes (`--min-reward`, `--outcome`, `--max-steps`,
//! `--max-chars`), and why one was left out.

use serde::Serialize;
use serde_json::Value;

use crate::model::Trajectory;

/// Which trajectories are written.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Filters {
    /// `details.reward` at least this (trajectories without a reward are filtered).
    pub min_reward: Option<f64>,
    /// `details.outcome.status` one of these.
    pub outcome: Vec<String>,
    /// At most this many steps.
    pub max_steps: Option<usize>,
    /// At most this many characters of free text (contents, code, pages, thoughts).
    pub max_chars: Option<usize>,
}

/// Why a trajectory was filtered out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filtered {
    /// `--min-reward`.
    MinReward,
    /// `--outcome`.
    Outcome,
    /// `--max-steps`.
    MaxSteps,
    /// Longer than `--max-tokens` (`tokens`; with `--overlength truncate`, no whole
    /// assistant turn fits).
    MaxTokens,
    /// No token trains (`tokens`: `--train-on` picks no turn, or every picked one is marked
    /// not for training).
    NothingToTrain,
    /// `--max-chars`.
    MaxChars,
    /// `--dedup`.
    Duplicate,
    /// No assistant turn to train on (always on: an SFT row needs one).
    NoAssistantTurn,
}

impl Filters {
    /// The first filter `traj` fails, if any.
    pub fn check(&self, traj: &Trajectory) -> Option<Filtered> {
        if let Some(min) = self.min_reward {
            let reward = traj.details.get("reward").and_then(Value::as_f64);
            if reward.is_none_or(|r| r < min) {
                return Some(Filtered::MinReward);
            }
        }
        if !self.outcome.is_empty() {
            let status = traj.details.get("outcome").and_then(|o| match o {
                Value::String(s) => Some(s.as_str()),
                other => other.get("status").and_then(Value::as_str),
            });
            if status.is_none_or(|s| !self.outcome.iter().any(|o| o == s)) {
                return Some(Filtered::Outcome);
            }
        }
        if self.max_steps.is_some_and(|m| traj.content.len() > m) {
            return Some(Filtered::MaxSteps);
        }
        if let Some(m) = self.max_chars {
            let chars: usize = traj.content.iter().map(|s| s.text_chars()).sum();
            if chars > m {
                return Some(Filtered::MaxChars);
            }
        }
        None
    }
}

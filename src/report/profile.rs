//! What the report counts, in one pass over the trajectories: `stats`' numbers (the same
//! [`Stats`] accumulator), histograms, tool calls and their errors, breakdowns by source format
//! and file, and the examples. Memory is bounded: fixed histograms, tables capped at
//! [`MAX_KEYS`] keys, a few clipped examples.

use std::collections::BTreeMap;

use serde::Serialize;

use super::examples::Examples;
use super::histogram::{Log2Histogram, RewardHistogram};
use super::segments::SegmentProfile;
use super::stats::{capped, Stats};
pub use super::stats::{MAX_KEYS, OTHER};
use super::view::{links, outcome, reward, source_format};
use crate::model::{Step, Trajectory};

/// Calls of one tool and how many of their results were errors.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ToolCount {
    /// Calls.
    pub calls: u64,
    /// Calls whose result looks like an error (see [`is_error_result`]).
    pub errors: u64,
    /// Calls no observation answers.
    pub unanswered: u64,
}

/// Trajectories, steps and bytes of one source format or file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Share {
    /// Trajectories.
    pub trajectories: u64,
    /// Steps.
    pub steps: u64,
    /// Bytes of their records.
    pub bytes: u64,
}

/// The report's numbers.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Profile {
    /// What `trajkit stats` prints for the same input.
    pub stats: Stats,
    /// Bytes of all records read.
    pub bytes: u64,
    /// Steps per valid trajectory.
    pub steps_per_trajectory: Log2Histogram,
    /// Agent turns per trajectory: runs of consecutive action steps.
    pub turns_per_trajectory: Log2Histogram,
    /// Tokens per trajectory, when counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_per_trajectory: Option<Log2Histogram>,
    /// `details.reward` of the trajectories that have one.
    pub rewards: RewardHistogram,
    /// Trajectories by `details.outcome.status` (`none` without one; at most [`MAX_KEYS`]
    /// statuses, then [`OTHER`]).
    pub outcomes: BTreeMap<String, u64>,
    /// Tool calls by tool: an api action's function, a code action's `LANGUAGE code`.
    pub tools: BTreeMap<String, ToolCount>,
    /// By `details.source.format` (`adp` when absent: trajectories read as written).
    pub formats: BTreeMap<String, Share>,
    /// By `details.source.file`, or the input file when absent.
    pub files: BTreeMap<String, Share>,
    /// Compaction segments per session and their tokens; absent when no session was compacted.
    #[serde(skip_serializing_if = "SegmentProfile::is_empty")]
    pub segments: SegmentProfile,
    /// The example trajectories.
    #[serde(skip)]
    pub examples: Examples,
}

impl Profile {
    /// Counts one valid trajectory of `bytes` bytes read from `file`, with its tokens when
    /// counted ([`Stats::accept`] has counted it already).
    pub fn add(&mut self, traj: Trajectory, file: &str, bytes: u64, tokens: Option<usize>) {
        let steps = traj.content.len() as u64;
        self.steps_per_trajectory.add(steps);
        self.turns_per_trajectory.add(turns(&traj.content));
        if let Some(n) = tokens {
            self.tokens_per_trajectory
                .get_or_insert_with(Default::default)
                .add(n as u64);
        }
        if let Some(r) = reward(&traj) {
            self.rewards.add(r);
        }
        *capped(&mut self.outcomes, outcome(&traj).unwrap_or("none")) += 1;
        self.count_tools(&traj.content);
        let share = |m: &mut BTreeMap<String, Share>, key: &str| {
            let s = capped(m, key);
            s.trajectories += 1;
            s.steps += steps;
            s.bytes += bytes;
        };
        share(&mut self.formats, source_format(&traj).unwrap_or("adp"));
        let source_file = traj
            .details
            .get("source")
            .and_then(|s| s.get("file"))
            .and_then(|f| f.as_str());
        share(&mut self.files, source_file.unwrap_or(file));
        self.examples.offer(traj);
    }

    fn count_tools(&mut self, steps: &[Step]) {
        let links = links(steps);
        for (i, step) in steps.iter().enumerate() {
            let name = match step {
                Step::ApiAction(a) => a.function.clone(),
                Step::CodeAction(c) => format!("{} code", c.language),
                _ => continue,
            };
            let t = capped(&mut self.tools, &name);
            t.calls += 1;
            match links[i] {
                Some(r) => t.errors += u64::from(is_error_result(&steps[r])),
                None => t.unanswered += 1,
            }
        }
    }
}

/// Agent turns: runs of consecutive action steps.
pub fn turns(steps: &[Step]) -> u64 {
    let mut turns = 0;
    let mut in_turn = false;
    for s in steps {
        let action = s.is_action();
        turns += u64::from(action && !in_turn);
        in_turn = action;
    }
    turns
}

/// Whether a tool call's result reads as an error: an observation named `error` or
/// `api_error`, a text starting (after blanks, in any case) with `error`, `traceback`,
/// `exception` or `fatal:`, or a JSON result with a non-null `error` key. ADP has no error
/// flag; this is the report's documented guess.
pub fn is_error_result(step: &Step) -> bool {
    let named_error =
        |name: &Option<String>| matches!(name.as_deref(), Some("error" | "api_error"));
    match step {
        Step::TextObservation(o) => {
            let head: String = o
                .content
                .trim_start()
                .chars()
                .take(10)
                .flat_map(char::to_lowercase)
                .collect();
            named_error(&o.name)
                || ["error", "traceback", "exception", "fatal:"]
                    .iter()
                    .any(|p| head.starts_with(p))
        }
        Step::JsonObservation(o) => {
            named_error(&o.name) || o.content.get("error").is_some_and(|e| !e.is_null())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_are_runs_of_actions() {
        let steps = vec![
            Step::user_text("q"),
            Step::code("bash", "ls", None),
            Step::message("m", None),
            Step::environment_text(None, "o"),
            Step::message("done", None),
        ];
        assert_eq!(turns(&steps), 2);
        assert_eq!(turns(&[]), 0);
    }

    #[test]
    fn errors_are_read_from_names_and_leading_words() {
        let text = |s: &str| Step::environment_text(None, s);
        assert!(is_error_result(&text("  Error: no such file")));
        assert!(is_error_result(&text("Traceback (most recent call last):")));
        assert!(!is_error_result(&text("0 errors")));
        assert!(is_error_result(&Step::environment_text(
            Some("error".into()),
            "x"
        )));
    }
}

//! The counts of an export: trajectories read, rows written, filtered (by which filter) and
//! rejected.

use serde::{Deserialize, Serialize};

/// Filter counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilteredBy {
    /// `--min-reward`.
    pub min_reward: u64,
    /// `--outcome`.
    pub outcome: u64,
    /// `--max-steps`.
    pub max_steps: u64,
    /// `--max-chars`.
    pub max_chars: u64,
    /// `--dedup`.
    pub duplicate: u64,
    /// Trajectories with nothing for the model to learn: no assistant turn (a session cut off
    /// before the agent answered). Always on. Absent from manifests written before it existed.
    #[serde(default)]
    pub no_assistant_turn: u64,
}

/// Counts of an export: `records_in == written + filtered + rejected` (trajectories; a record
/// that does not parse counts as one).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportSummary {
    /// Trajectories read.
    #[serde(rename = "in")]
    pub records_in: u64,
    /// Rows written.
    pub written: u64,
    /// Trajectories filtered out.
    pub filtered: u64,
    /// By which filter.
    pub filtered_by: FilteredBy,
    /// Trajectories rejected (invalid ADP, untrainable).
    pub rejected: u64,
    /// Inputs that held no records.
    #[serde(skip)]
    pub empty_inputs: Vec<String>,
}

impl ExportSummary {
    /// Adds the counts of `other` (another partition's) to these.
    pub fn add(&mut self, other: &ExportSummary) {
        self.records_in += other.records_in;
        self.written += other.written;
        self.filtered += other.filtered;
        self.rejected += other.rejected;
        let (a, b) = (&mut self.filtered_by, &other.filtered_by);
        a.min_reward += b.min_reward;
        a.outcome += b.outcome;
        a.max_steps += b.max_steps;
        a.max_chars += b.max_chars;
        a.duplicate += b.duplicate;
        a.no_assistant_turn += b.no_assistant_turn;
    }
}

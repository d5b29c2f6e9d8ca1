//! The counts of a run, as `run.json` and the resume journal record them.

use serde::{Deserialize, Serialize};

use crate::convert::LeftOut;
use crate::engine::partition::Elsewhere;
use crate::engine::pipeline::StageSummary;
use crate::engine::stage::Sections;
use crate::export::ExportSummary;

/// Counts of one input.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InputSummary {
    /// The input path.
    pub path: String,
    /// Records read.
    pub records: u64,
    /// Trajectories converted from them.
    pub trajectories: u64,
    /// Records rejected at some stage (or with a trajectory rejected at some stage).
    pub rejected: u64,
    /// In a partition by id: records read whose trajectories all belong to other partitions
    /// (not in `records`; left out of the JSON when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub elsewhere: u64,
    /// What the readers left out of its trajectories (left out of the JSON when nothing was).
    #[serde(default, skip_serializing_if = "LeftOut::is_empty")]
    pub left_out: LeftOut,
    /// Wall time from the writer's first to its last record of this input (reading,
    /// processing and writing overlap, so this is the input's share of the run), in seconds.
    pub seconds: f64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Counts of a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunSummary {
    /// Input records read.
    pub records: u64,
    /// Trajectories converted.
    pub trajectories: u64,
    /// Records rejected at any stage (a record counts once).
    pub rejected_records: u64,
    /// Per input.
    pub inputs: Vec<InputSummary>,
    /// Per stage, in pipeline order.
    pub stages: Vec<StageSummary>,
    /// What the stages report beyond their counts, each under its section (`joins`: per join
    /// stage, with its side files; `redaction`: what `[redact]` replaced, per rule).
    #[serde(flatten)]
    pub sections: Sections,
    /// Per export.
    pub exports: Vec<ExportSummary>,
    /// Inputs that held no records.
    pub empty_inputs: Vec<String>,
    /// What a partitioned run left to the other partitions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<Elsewhere>,
}

impl RunSummary {
    /// Rejected records over records read (0 when nothing was read).
    pub fn reject_rate(&self) -> f64 {
        if self.records == 0 {
            0.0
        } else {
            self.rejected_records as f64 / self.records as f64
        }
    }
}

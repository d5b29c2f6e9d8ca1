//! What a run or an export leaves beside its trajectories, as the report reads it: the rejects
//! file (counted by stage and rule, one line at a time), the stage counts of `run.json` and the
//! redaction counts of `manifest.json`.

use std::collections::BTreeMap;
use std::io::{self, BufRead};

use serde::{Deserialize, Serialize};

use super::stats::capped;
use crate::engine::pipeline::StageSummary;
use crate::redact::Redaction;

/// Rejected records by stage, then by rule (at most [`super::stats::MAX_KEYS`] of each).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Rejects {
    /// `stage → rule → records` (a record counts under its first diagnostic's rule).
    pub by_stage: BTreeMap<String, BTreeMap<String, u64>>,
    /// Lines of the rejects file that are not a reject record.
    pub unreadable_lines: u64,
}

#[derive(Deserialize)]
struct RejectLine {
    #[serde(default)]
    stage: Option<String>,
    #[serde(default)]
    diagnostics: Vec<RejectDiagnostic>,
}

#[derive(Deserialize)]
struct RejectDiagnostic {
    rule: String,
}

impl Rejects {
    /// Counts the records of a rejects file (`rejects.jsonl`, as `--rejects` and a pipeline's
    /// `rejects` write it).
    pub fn read(reader: impl BufRead) -> io::Result<Rejects> {
        let mut r = Rejects::default();
        for line in reader.split(b'\n') {
            let line = line?;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<RejectLine>(&line) {
                Ok(l) => {
                    let stage = l.stage.unwrap_or_else(|| "validate".to_owned());
                    let rule = l
                        .diagnostics
                        .into_iter()
                        .next()
                        .map_or_else(|| "unknown".to_owned(), |d| d.rule);
                    *capped(capped(&mut r.by_stage, &stage), &rule) += 1;
                }
                Err(_) => r.unreadable_lines += 1,
            }
        }
        Ok(r)
    }

    /// Records in all.
    pub fn total(&self) -> u64 {
        self.by_stage.values().flat_map(|m| m.values()).sum()
    }
}

/// The part of `run.json` the report shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunCounts {
    /// The pipeline file run.
    #[serde(default)]
    pub pipeline: Option<String>,
    /// Per stage: in, written, filtered, rejected.
    #[serde(default)]
    pub stages: Vec<StageSummary>,
}

#[derive(Deserialize)]
struct RunFile {
    #[serde(default)]
    pipeline: Option<String>,
    summary: RunSummary,
}

#[derive(Deserialize)]
struct RunSummary {
    #[serde(default)]
    stages: Vec<StageSummary>,
}

impl RunCounts {
    /// Reads a `run.json`.
    pub fn parse(text: &str) -> Result<RunCounts, serde_json::Error> {
        let f: RunFile = serde_json::from_str(text)?;
        Ok(RunCounts {
            pipeline: f.pipeline,
            stages: f.summary.stages,
        })
    }
}

/// The part of an export's `manifest.json` the report uses.
#[derive(Debug, Clone, Deserialize)]
pub struct Manifest {
    /// The export target (`parquet`, `adp`, `openai`, ...).
    pub target: String,
    /// The data files, relative to the export directory.
    pub files: Vec<ManifestFile>,
    /// The counts, with redaction's when there was one.
    #[serde(default)]
    pub counts: ManifestCounts,
}

/// A data file of a manifest.
#[derive(Debug, Clone, Deserialize)]
pub struct ManifestFile {
    /// Its path, relative to the export directory.
    pub path: String,
}

/// The counts of a manifest the report shows.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ManifestCounts {
    /// What redaction replaced, when the export's trajectories were redacted.
    #[serde(default)]
    pub redaction: Option<Redaction>,
}

impl Manifest {
    /// Whether its rows are trajectories the report reads (ADP or trajkit's Parquet).
    pub fn holds_trajectories(&self) -> bool {
        matches!(self.target.as_str(), "adp" | "parquet")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_are_counted_by_stage_and_first_rule() {
        let text = "{\"stage\":\"convert\",\"diagnostics\":[{\"rule\":\"a\"},{\"rule\":\"b\"}]}\n\
                    {\"stage\":\"convert\",\"diagnostics\":[{\"rule\":\"a\"}]}\n\
                    \n{\"diagnostics\":[]}\nnot json\n";
        let r = Rejects::read(text.as_bytes()).unwrap();
        assert_eq!(r.by_stage["convert"]["a"], 2);
        assert_eq!(r.by_stage["validate"]["unknown"], 1);
        assert_eq!((r.total(), r.unreadable_lines), (3, 1));
    }
}

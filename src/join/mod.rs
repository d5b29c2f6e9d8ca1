//! Join: attach reflections and rewards from side files to trajectories, by declared keys.
//!
//! - [`key`]: key expressions (pointers, field paths, templates with explicit formatting);
//! - [`side`]: [`SideFormat`], what a side format provides (the input formats implement it in
//!   their folders; the formats registry lists them) and what a record attaches;
//! - [`generic`]: the built-in side format, reading the paths the user declares;
//! - [`spec`]: how a side set's records are read, as its side format and the user's keys say;
//! - [`index`]: the side records in memory, by key, with the duplicate policy applied (its keys
//!   in a compact `key_table`);
//! - [`attach`]: [`Join::apply`], the join of one trajectory (the stage `run` pipelines use);
//! - [`policy`]: unmatched, orphan, duplicate and conflict policies.
//!
//! [`JoinStage`] is the join as a stage of a pass: `run` applies it to each trajectory it
//! converts, the `join` command ([`crate::commands::join`]) to each ADP record it reads.

pub mod attach;
pub mod generic;
pub mod index;
pub mod key;
mod key_table;
mod packed;
pub mod policy;
pub mod side;
pub mod spec;
pub mod stage;

use std::io;

use serde::{Deserialize, Serialize};

pub use attach::{Applied, Join, JoinPolicies};
pub use generic::GenericFields;
pub use index::{IndexError, SideFile, SideIndex, SideSet};
pub use key::KeyExpr;
pub use policy::{Conflicts, Duplicates, Orphans, Unmatched};
pub use side::SideFormat;
pub use spec::{SideFrom, SideSpec};
pub use stage::JoinStage;

use crate::engine::pipeline::RunOptions;
use crate::engine::rejects::RejectsWriter;
use crate::ingest::FramedRecords;
use crate::model::upgrade::UpgradeOptions;
use crate::validate::report::Reporter;
use crate::validate::{Diagnostic, Severity};

/// Options of the `join` command beyond the join itself.
#[derive(Debug, Clone, Default)]
pub struct JoinRunOptions {
    /// The ADP version written (1.1.0 or later: the join writes JSON values into `details`).
    pub upgrade: UpgradeOptions,
    /// Runner options.
    pub run: RunOptions,
    /// What happens to side records no trajectory matched.
    pub orphans: Option<Orphans>,
    /// At most this many orphans are reported to the reporter (`None`: all); the summary counts
    /// them all, and under [`Orphans::Reject`] the rejects file has them all.
    pub orphan_diagnostics: Option<u64>,
}

/// Counts of one side file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SideFileSummary {
    /// The path as given.
    pub file: String,
    /// `reflections` or `rewards`.
    pub set: String,
    /// Records read.
    pub records: u64,
    /// Records the side format does not attach (skipped).
    pub skipped: u64,
    /// Records attached to at least one trajectory.
    pub matched: u64,
    /// Records attached to none.
    pub orphans: u64,
    /// Records every key of which a duplicate superseded (`--duplicates first|last`).
    pub superseded: u64,
}

/// Counts of a join: `records == written_records + dropped + rejected`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JoinSummary {
    /// Trajectory records read.
    pub records: u64,
    /// Records written.
    pub written_records: u64,
    /// Written trajectories a side record matched.
    pub matched: u64,
    /// Written trajectories no side record matched (`--unmatched keep`).
    pub unmatched_kept: u64,
    /// Trajectories not written because nothing matched (`--unmatched drop`).
    pub dropped: u64,
    /// Records rejected (invalid ADP, conflicts, `--unmatched reject`).
    pub rejected: u64,
    /// Side records indexed (read, less skipped ones).
    pub side_records: u64,
    /// Side records attached to at least one trajectory.
    pub side_matched: u64,
    /// Side records attached to none.
    pub side_orphans: u64,
    /// Per side file.
    pub side_files: Vec<SideFileSummary>,
    /// Trajectory inputs that held no records.
    pub empty_inputs: Vec<String>,
}

impl JoinSummary {
    /// Whether the join failed (`trajkit join` exits 1): a record was rejected, or side records
    /// matched no trajectory under `orphans` = [`Orphans::Reject`].
    pub fn failed(&self, orphans: Orphans) -> bool {
        self.rejected > 0 || (orphans == Orphans::Reject && self.side_orphans > 0)
    }

    /// The summary `trajkit join` prints, a line each: the trajectories (and `speed`, how fast
    /// the inputs were read), then each side file.
    pub fn lines(&self, speed: &str) -> Vec<String> {
        let s = self;
        let mut out = vec![format!(
            "join: {} trajectories in, {} written ({} matched, {} unmatched), {} dropped, {} rejected; {}",
            s.records, s.written_records, s.matched, s.unmatched_kept, s.dropped, s.rejected, speed
        )];
        for f in &s.side_files {
            let superseded = if f.superseded > 0 {
                format!(", {} superseded by duplicates", f.superseded)
            } else {
                String::new()
            };
            let skipped = if f.skipped > 0 {
                format!(", {} skipped (not attachable)", f.skipped)
            } else {
                String::new()
            };
            out.push(format!(
                "join: {} {}: {} records, {} matched, {} orphans{superseded}{skipped}",
                f.set, f.file, f.records, f.matched, f.orphans
            ));
        }
        out
    }
}

/// After a pass over the trajectories (`used[r]`: side record `r` was attached to one): reports
/// the orphans under `opts.orphans` (rejected ones written to `rejects` as of `stage`) and fills
/// the side-file counts of `summary`.
pub fn finish_side(
    join: &Join,
    used: &[bool],
    opts: &JoinRunOptions,
    stage: &str,
    reporter: &mut dyn Reporter,
    rejects: Option<&mut RejectsWriter>,
    summary: &mut JoinSummary,
) -> io::Result<()> {
    let policy = opts.orphans.unwrap_or(Orphans::Report);
    report_orphans(join, used, reporter, rejects, stage, policy, opts)?;
    summarize_side(join, used, summary);
    Ok(())
}

/// Reports each side record no trajectory used (an orphan), in file order: as a warning under
/// [`Orphans::Report`]; as an error, written with the record to the rejects file, under
/// [`Orphans::Reject`] (the side files are read again for that: the index keeps only what
/// records attach, not the records).
fn report_orphans(
    join: &Join,
    used: &[bool],
    reporter: &mut dyn Reporter,
    rejects: Option<&mut RejectsWriter>,
    stage: &str,
    policy: Orphans,
    opts: &JoinRunOptions,
) -> io::Result<()> {
    let idx = &join.index;
    let rejecting = policy == Orphans::Reject && rejects.is_some();
    let limit = match (rejecting, opts.orphan_diagnostics) {
        (false, Some(n)) => usize::try_from(n).unwrap_or(usize::MAX),
        _ => usize::MAX,
    };
    let orphans: Vec<u32> = (0..idx.records.len())
        .filter(|&r| idx.live[r] && !used[r])
        .map(|r| r as u32)
        .take(limit)
        .collect();
    if orphans.is_empty() {
        return Ok(());
    }
    // The smallest key of each orphan, for the message (deterministic when a record has several).
    let mut key_of: Vec<Option<&str>> = vec![None; idx.records.len()];
    for si in &idx.sets {
        for (k, p) in si.keys.iter() {
            for &r in si.records(p) {
                if used[r as usize] {
                    continue;
                }
                let slot = &mut key_of[r as usize];
                if slot.is_none_or(|old| k < old) {
                    *slot = Some(k);
                }
            }
        }
    }
    let diagnostic = |r: u32| {
        let mut d = Diagnostic::error(
            &idx.provenance(r),
            None,
            "",
            "join-orphan",
            format!(
                "no trajectory matched this {} record (key {:?})",
                idx.sets[idx.set_of(r)].name,
                key_of[r as usize].unwrap_or_default()
            ),
        );
        if policy == Orphans::Report {
            d.severity = Severity::Warning;
        }
        d
    };
    let Some(rejects) = rejects.filter(|_| policy == Orphans::Reject) else {
        for &r in &orphans {
            reporter.diagnostic(&diagnostic(r))?;
        }
        return Ok(());
    };
    let mut next = orphans.iter().peekable();
    for (f, file) in idx.files.iter().enumerate() {
        if next.peek().is_none() {
            break;
        }
        if next.peek().is_some_and(|&&r| idx.file_of(r) != f) {
            continue;
        }
        for raw in FramedRecords::open(&file.path, opts.run.max_record_bytes)? {
            while let Some(&&r) = next.peek() {
                let index = u64::from(idx.records[r as usize].index);
                if idx.file_of(r) != f || index > raw.provenance.index {
                    break;
                }
                if index == raw.provenance.index {
                    let d = diagnostic(r);
                    reporter.diagnostic(&d)?;
                    rejects.write(&raw, stage, std::slice::from_ref(&d))?;
                }
                next.next();
            }
            if next.peek().is_none_or(|&&r| idx.file_of(r) != f) {
                break;
            }
        }
        // Records the second reading did not find again (the file changed meanwhile).
        while next.peek().is_some_and(|&&r| idx.file_of(r) == f) {
            next.next();
        }
    }
    Ok(())
}

fn summarize_side(join: &Join, used: &[bool], summary: &mut JoinSummary) {
    let idx = &join.index;
    let mut files: Vec<SideFileSummary> = idx
        .files
        .iter()
        .map(|f| SideFileSummary {
            file: f.path.to_string(),
            set: f.set.clone(),
            records: f.records,
            skipped: f.skipped,
            ..SideFileSummary::default()
        })
        .collect();
    for r in 0..idx.records.len() {
        let s = &mut files[idx.file_of(r as u32)];
        if used[r] {
            s.matched += 1;
        } else if idx.live[r] {
            s.orphans += 1;
        } else {
            s.superseded += 1;
        }
    }
    summary.side_records = idx.records.len() as u64;
    summary.side_matched = files.iter().map(|f| f.matched).sum();
    summary.side_orphans = files.iter().map(|f| f.orphans).sum();
    summary.side_files = files;
}

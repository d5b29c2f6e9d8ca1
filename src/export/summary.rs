//! The counts of an export: trajectories read, rows written, filtered (by which filter) and
//! rejected.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::redact::Redaction;
use crate::segment::Mode;

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
    /// `--max-tokens` (`tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_tokens: u64,
    /// Nothing trains under `--train-on` (`tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nothing_to_train: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
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
    /// Token counts of the rows written (`tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenCounts>,
    /// What redaction replaced in the trajectories this export read (`--redact`, a
    /// pipeline's `[redact]`); absent without redaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redaction: Option<Redaction>,
    /// How `--segments` cut trajectories into rows; absent when it did not cut (`none`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments: Option<Box<SegmentCounts>>,
    /// Inputs that held no records.
    #[serde(skip)]
    pub empty_inputs: Vec<String>,
}

/// The trajectories `--segments compaction` cut at their compactions, and the rows they became
/// (each counted in `in` as a row of its own); with `subagents`, the subagent branches linked to
/// their parents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentCounts {
    /// Trajectories read.
    pub trajectories: u64,
    /// Of them, those cut (one compaction or more).
    pub cut: u64,
    /// The rows the cut trajectories became.
    pub segments: u64,
    /// Of the trajectories, the subagent branches linked to their parent (`subagents` modes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagents: Option<u64>,
}

impl SegmentCounts {
    /// The counts an export in `mode` keeps: none for `none`.
    pub fn of_mode(mode: Mode) -> Option<SegmentCounts> {
        (mode != Mode::None).then(|| SegmentCounts {
            subagents: mode.links_subagents().then_some(0),
            ..SegmentCounts::default()
        })
    }

    /// Counts a trajectory that became `rows` rows, a subagent branch when `branch`.
    pub fn count(&mut self, rows: usize, branch: bool) {
        self.trajectories += 1;
        if rows > 1 {
            self.cut += 1;
            self.segments += rows as u64;
        }
        if let (Some(n), true) = (&mut self.subagents, branch) {
            *n += 1;
        }
    }

    /// What the counts say, after `rows in`: `(53 trajectories, 4 cut at compactions into 12
    /// segments, 3 subagent branches)`, each part where its mode counts it.
    pub fn describe(&self) -> String {
        let mut parts = vec![format!("{} trajectories", self.trajectories)];
        if self.subagents.is_none() || self.cut > 0 {
            parts.push(format!(
                "{} cut at compactions into {} segments",
                self.cut, self.segments
            ));
        }
        if let Some(n) = self.subagents {
            parts.push(format!("{n} subagent branches"));
        }
        format!("rows in ({})", parts.join(", "))
    }
}

impl ExportSummary {
    /// The summary of an export `--to target` into `output` as a front end prints it, a line
    /// each: the counts (and tokens), `speed` (how fast the inputs were read), then what
    /// redaction replaced.
    pub fn lines(&self, target: &str, output: &str, speed: &str) -> Vec<String> {
        let tokens = match &self.tokens {
            Some(t) => format!(
                "; {} tokens (p50 {}, p90 {}, p99 {}, max {})",
                t.total, t.p50, t.p90, t.p99, t.max
            ),
            None => String::new(),
        };
        let mut out = vec![format!(
            "export --to {target}: {} {}, {} written, {} filtered, {} rejected -> \
             {output}{tokens}; {speed}",
            self.records_in,
            self.what_in(),
            self.written,
            self.filtered,
            self.rejected,
        )];
        if let Some(r) = &self.redaction {
            out.push(format!("export: redaction: {}", r.describe()));
        }
        out
    }

    /// What `in` counts, as printed after it: `trajectories in`, or for a segmented export the
    /// rows and what they were cut from ([`SegmentCounts::describe`]).
    pub fn what_in(&self) -> String {
        match &self.segments {
            Some(c) => c.describe(),
            None => "trajectories in".to_owned(),
        }
    }

    /// Adds the counts of `other` (another partition's) to these.
    pub fn add(&mut self, other: &ExportSummary) {
        self.records_in += other.records_in;
        self.written += other.written;
        self.filtered += other.filtered;
        self.rejected += other.rejected;
        if let Some(b) = &other.segments {
            let a = self.segments.get_or_insert_with(Default::default);
            a.trajectories += b.trajectories;
            a.cut += b.cut;
            a.segments += b.segments;
            if let Some(n) = b.subagents {
                *a.subagents.get_or_insert(0) += n;
            }
        }
        let (a, b) = (&mut self.filtered_by, &other.filtered_by);
        a.min_reward += b.min_reward;
        a.outcome += b.outcome;
        a.max_steps += b.max_steps;
        a.max_chars += b.max_chars;
        a.duplicate += b.duplicate;
        a.no_assistant_turn += b.no_assistant_turn;
        a.max_tokens += b.max_tokens;
        a.nothing_to_train += b.nothing_to_train;
        if let Some(t) = &other.tokens {
            self.tokens.get_or_insert_with(Default::default).add(t);
        }
        if let Some(r) = &other.redaction {
            self.redaction.get_or_insert_with(Default::default).add(r);
        }
    }
}

/// The token counts of the rows written: the total, percentiles of the rows' lengths, and a
/// histogram of the lengths (`length: rows`), which merged partitions add up.
///
/// The histogram stays small whatever the number of rows: lengths under [`EXACT_BELOW`] are
/// kept exactly, longer ones rounded down to their 8 most significant bits (within 0.8 %), so
/// it has at most 128 entries per doubling of the length. The total and the maximum are exact;
/// the percentiles are read off the histogram (exact under [`EXACT_BELOW`] tokens).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenCounts {
    /// Tokens in all rows.
    pub total: u64,
    /// Median row length.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// The longest row.
    pub max: u64,
    /// Rows by length (longer lengths rounded down, see above).
    pub lengths: BTreeMap<u64, u64>,
}

/// Lengths below this are kept exactly in [`TokenCounts::lengths`].
pub const EXACT_BELOW: u64 = 1024;

/// The histogram key of a length of `n` tokens: `n` itself under [`EXACT_BELOW`], else `n`
/// with all but its 8 most significant bits cleared.
fn bucket(n: u64) -> u64 {
    if n < EXACT_BELOW {
        return n;
    }
    let drop = (u64::BITS - n.leading_zeros()).saturating_sub(8);
    n >> drop << drop
}

impl TokenCounts {
    /// Counts a row of `n` tokens ([`TokenCounts::settle`] updates the percentiles).
    pub fn count(&mut self, n: u64) {
        self.total += n;
        self.max = self.max.max(n);
        *self.lengths.entry(bucket(n)).or_insert(0) += 1;
    }

    /// Adds `other`'s rows.
    pub fn add(&mut self, other: &TokenCounts) {
        self.total += other.total;
        self.max = self.max.max(other.max);
        for (n, rows) in &other.lengths {
            *self.lengths.entry(bucket(*n)).or_insert(0) += rows;
        }
        self.settle();
    }

    /// Recomputes the percentiles (nearest rank) from the histogram.
    pub fn settle(&mut self) {
        let rows: u64 = self.lengths.values().sum();
        let rank = |p: u64| {
            // The smallest length with at least p% of the rows at or below it.
            let want = (rows * p).div_ceil(100).max(1);
            let mut seen = 0;
            for (n, r) in &self.lengths {
                seen += r;
                if seen >= want {
                    return *n;
                }
            }
            0
        };
        (self.p50, self.p90, self.p99) = (rank(50), rank(90), rank(99));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut t = TokenCounts::default();
        for n in 1..=100 {
            t.count(n);
        }
        t.settle();
        assert_eq!(
            (t.total, t.p50, t.p90, t.p99, t.max),
            (5050, 50, 90, 99, 100)
        );
        let mut u = TokenCounts::default();
        u.count(1000);
        t.add(&u);
        assert_eq!((t.max, t.p99), (1000, 100));
    }

    #[test]
    fn long_lengths_share_buckets_and_the_histogram_stays_small() {
        assert_eq!(bucket(1023), 1023);
        assert_eq!(bucket(1024), 1024);
        assert_eq!(bucket(1031), 1024);
        assert_eq!(bucket(1032), 1032);
        assert_eq!(bucket(100_000), 99_840);
        let mut t = TokenCounts::default();
        for n in 0..200_000u64 {
            t.count(n);
        }
        t.settle();
        assert_eq!(t.total, (0..200_000u64).sum::<u64>());
        assert_eq!(t.max, 199_999);
        assert!(t.lengths.len() <= 1024 + 8 * 128, "{}", t.lengths.len());
        for (p, exact) in [(t.p50, 100_000), (t.p90, 180_000), (t.p99, 198_000)] {
            assert!(p <= exact && exact - p <= exact / 128, "{p} for {exact}");
        }
        // Merging partitions gives what one pass gives.
        let (mut a, mut b) = (TokenCounts::default(), TokenCounts::default());
        for n in 0..200_000u64 {
            if n % 3 == 0 {
                a.count(n)
            } else {
                b.count(n)
            }
        }
        a.add(&b);
        assert_eq!(a, t);
    }
}

//! The ordered writer of one export: [`Shards`] takes the outcomes in input order, drops
//! `--dedup` duplicates, writes each row to its split's shards and counts; for `trajkit run`
//! it records a [`ShardCheckpoint`] each time a shard starts, and resumes from an
//! [`ExportRestart`].

use std::collections::HashSet;
use std::io;
use std::path::Path;

use serde::Serialize;

use super::dir::Earlier;
use super::encode::Outcome;
use super::filter::Filtered;
use super::settings::ExportOptions;
use super::shard::{ClosedShard, ShardFile, ShardSet, ShardWriter};
use super::summary::ExportSummary;
use crate::engine::output::Commit;
use crate::validate::Diagnostic;

/// The shards of one export being written, the `--dedup` hashes seen and the counts.
pub struct Shards<W: ShardWriter> {
    shards: Vec<ShardSet<W>>,
    seen: HashSet<[u8; 16]>,
    pub(super) summary: ExportSummary,
    /// Collect a [`ShardCheckpoint`] each time a shard starts (`trajkit run`).
    pub(super) checkpoints: bool,
    /// Checkpoints not yet taken by [`super::ExportStage::take_checkpoints`].
    pub(super) pending: Vec<ShardCheckpoint>,
    /// `--dedup` hashes seen since the last checkpoint, in order.
    new_seen: Vec<[u8; 16]>,
    /// Per split: rows offered before this position are already in completed shards of a
    /// resumed run, and are counted but not written again.
    written_from: Vec<u64>,
}

/// The state of an export at the moment one of its shards starts: what a resumed run
/// restarts that split from. `at` counts the rows offered to the export before the one that
/// starts the shard (a row per trajectory, or per segment with `segments`).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ShardCheckpoint {
    /// The split whose shard starts.
    pub split: usize,
    /// Rows offered before.
    pub at: u64,
    /// The shard it completed (synced to disk), when it was not the split's first.
    pub closed: Option<ClosedShard>,
    /// The counts at `at`.
    pub summary: ExportSummary,
    /// `--dedup` hashes first seen since the previous checkpoint, in order.
    #[serde(skip)]
    pub new_seen: Vec<[u8; 16]>,
}

/// Where a resumed export restarts (see [`super::ExportStage::resume`]).
#[derive(Debug, Clone, Default)]
pub struct ExportRestart {
    /// The counts at the restart position.
    pub summary: ExportSummary,
    /// The `--dedup` hashes seen before it.
    pub seen: Vec<[u8; 16]>,
    /// Per split, the completed shards to keep.
    pub closed: Vec<Vec<ClosedShard>>,
    /// Per split, the position its open shard started at (its rows before are kept).
    pub written_from: Vec<u64>,
    /// Rows the resumed pass offers before the restart position: passed over, except
    /// that their rejections are still reported (the rejects file is rewound further back).
    pub skip: u64,
}

impl<W: ShardWriter> Shards<W> {
    pub fn new(data: &Path, opts: &ExportOptions, config: &W::Config) -> Self {
        let shards: Vec<ShardSet<W>> = opts
            .splits
            .names()
            .iter()
            .map(|s| ShardSet::new(data, s, &opts.shards, config))
            .collect();
        Shards {
            written_from: vec![0; shards.len()],
            shards,
            seen: HashSet::new(),
            summary: ExportSummary::default(),
            checkpoints: false,
            pending: Vec::new(),
            new_seen: Vec::new(),
        }
    }

    /// The shards of a resumed export, restarting at `restart`'s position.
    pub(super) fn resume(
        data: &Path,
        opts: &ExportOptions,
        config: &W::Config,
        restart: ExportRestart,
    ) -> io::Result<Self> {
        let names = opts.splits.names();
        let mut closed = restart.closed;
        closed.resize(names.len(), Vec::new());
        let shards = names
            .iter()
            .zip(closed)
            .map(|(s, c)| ShardSet::resume(data, s, &opts.shards, config, c))
            .collect::<io::Result<Vec<_>>>()?;
        let mut written_from = restart.written_from;
        written_from.resize(names.len(), 0);
        Ok(Shards {
            shards,
            seen: restart.seen.into_iter().collect(),
            summary: restart.summary,
            checkpoints: true,
            pending: Vec::new(),
            new_seen: Vec::new(),
            written_from,
        })
    }

    /// Writes or counts one outcome; a rejection's diagnostics are handed back to report.
    pub fn add(&mut self, item: Outcome<W::Row>) -> io::Result<Option<Vec<Diagnostic>>> {
        let at = self.summary.records_in;
        let out = self.count(item, at);
        self.summary.records_in += 1;
        out
    }

    fn count(&mut self, item: Outcome<W::Row>, at: u64) -> io::Result<Option<Vec<Diagnostic>>> {
        let by = &mut self.summary.filtered_by;
        match item {
            Outcome::Row(split, encoded) => {
                if encoded.hash.is_some_and(|h| self.seen.contains(&h)) {
                    by.duplicate += 1;
                    self.summary.filtered += 1;
                    return Ok(None);
                }
                let from = self.written_from.get(split).copied().unwrap_or(0);
                if let Some(s) = self.shards.get_mut(split).filter(|_| at >= from) {
                    if self.checkpoints && s.starts_shard(encoded.len) {
                        let closed = s.close()?.cloned();
                        self.pending.push(ShardCheckpoint {
                            split,
                            at,
                            closed,
                            summary: self.summary.clone(),
                            new_seen: std::mem::take(&mut self.new_seen),
                        });
                    }
                    s.write(encoded.row, encoded.len)?;
                }
                if let Some(h) = encoded.hash {
                    self.seen.insert(h);
                    if self.checkpoints {
                        self.new_seen.push(h);
                    }
                }
                self.summary.written += 1;
                if let Some(n) = encoded.tokens {
                    self.summary
                        .tokens
                        .get_or_insert_with(Default::default)
                        .count(n);
                }
            }
            Outcome::Filtered(f) => {
                *match f {
                    Filtered::MinReward => &mut by.min_reward,
                    Filtered::Outcome => &mut by.outcome,
                    Filtered::MaxSteps => &mut by.max_steps,
                    Filtered::MaxChars => &mut by.max_chars,
                    Filtered::Duplicate => &mut by.duplicate,
                    Filtered::NoAssistantTurn => &mut by.no_assistant_turn,
                    Filtered::MaxTokens => &mut by.max_tokens,
                    Filtered::NothingToTrain => &mut by.nothing_to_train,
                } += 1;
                self.summary.filtered += 1;
            }
            Outcome::Rejected(diagnostics) => {
                self.summary.rejected += 1;
                return Ok(Some(diagnostics));
            }
        }
        Ok(None)
    }

    /// Completes the shards, and hands back the commit that replaces the `earlier` export
    /// and gives the new shards their final names.
    pub fn into_commit(
        mut self,
        earlier: &Earlier,
    ) -> io::Result<(ExportSummary, Vec<ShardFile>, Commit)> {
        // Every shard is completed before any is handed over: on an error, dropping the sets
        // removes every partial file.
        for s in &mut self.shards {
            s.finish()?;
        }
        let mut commit = earlier.commit();
        let mut files: Vec<ShardFile> = Vec::new();
        for s in self.shards.drain(..) {
            let (renames, f) = s.into_commit()?;
            commit.rename.extend(renames);
            files.extend(f);
        }
        if let Some(t) = &mut self.summary.tokens {
            t.settle();
        }
        Ok((self.summary, files, commit))
    }
}

//! [`ExportStage`]: one export as the output of a pass (`trajkit run`, `trajkit export`), its
//! rows of any target, checkpointed and resumable.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::dir::{earlier_export, earlier_shards, is_partial, prepare_dir, Earlier, ExportError};
use super::encode::{AnyRow, Outcome};
use super::manifest::manifest_commit;
use super::parquet::ParquetShard;
use super::settings::ExportOptions;
use super::shard::{self, JsonLines};
use super::summary::{ExportSummary, SegmentCounts};
use super::target::Target;
use super::tokens::TokensShard;
use super::writer::{ExportRestart, ShardCheckpoint, Shards};
use crate::engine::output::Commit;
use crate::engine::stage::Sections;
use crate::validate::Diagnostic;

enum AnyShards {
    Lines(Shards<JsonLines>),
    Parquet(Shards<ParquetShard>),
    Tokens(Shards<TokensShard>),
}

/// One export as the output of a pass (`trajkit run`, `trajkit export`): the caller encodes
/// rows with [`export_trajectory`](super::export_trajectory) and
/// [`encode_any`](super::encode_any) in parallel, and hands the outcomes to
/// [`ExportStage::add_trajectory`] in input order. Nothing in the directory looks finished until
/// [`ExportStage::into_commit`].
pub struct ExportStage {
    dir: PathBuf,
    earlier: Earlier,
    shards: AnyShards,
    /// Rows still to pass over (a resumed run, before the restart position).
    skip: u64,
}

impl ExportStage {
    /// Prepares `dir` for an export with `opts` (refused if it holds one, unless `force`).
    pub fn open(dir: &Path, opts: &ExportOptions) -> Result<Self, ExportError> {
        let (data, earlier) = prepare_dir(dir, opts.force, opts.shards.partition.as_ref())?;
        let mut shards = match opts.target {
            Target::Parquet => AnyShards::Parquet(Shards::new(&data, opts, &opts.parquet)),
            Target::Tokens => AnyShards::Tokens(Shards::new(&data, opts, &opts.parquet)),
            _ => AnyShards::Lines(Shards::new(&data, opts, &opts.shards.zstd)),
        };
        match &mut shards {
            AnyShards::Lines(s) => s.checkpoints = true,
            AnyShards::Parquet(s) => s.checkpoints = true,
            AnyShards::Tokens(s) => s.checkpoints = true,
        }
        let mut stage = ExportStage {
            dir: dir.to_owned(),
            earlier,
            shards,
            skip: 0,
        };
        stage.summary_mut().segments = SegmentCounts::of_mode(opts.segments).map(Box::new);
        Ok(stage)
    }

    /// Reopens `dir` for a resumed run: keeps the completed shards `restart` lists and removes
    /// every other partial shard file. An earlier finished export in the directory is still
    /// replaced only with `force`.
    pub fn resume(
        dir: &Path,
        opts: &ExportOptions,
        restart: ExportRestart,
    ) -> Result<Self, ExportError> {
        let io_err = |source: io::Error| ExportError::Io {
            dir: dir.display().to_string(),
            source,
        };
        let data = dir.join("data");
        let partition = opts.shards.partition.as_ref();
        let earlier = earlier_export(dir, opts.force, partition, false)?;
        let partial: Vec<PathBuf> = earlier_shards(&data, partition)
            .map_err(io_err)?
            .into_iter()
            .filter(|p| is_partial(p))
            .collect();
        let names = opts.splits.names();
        let keep: HashSet<PathBuf> = restart
            .closed
            .iter()
            .zip(names)
            .flat_map(|(c, n)| {
                let (data, prefix) = (&data, opts.shards.prefix(n));
                c.iter()
                    .map(move |c| shard::partial_path(data, &prefix, c.index))
            })
            .collect();
        for p in partial.iter().filter(|p| !keep.contains(*p)) {
            fs::remove_file(p).map_err(io_err)?;
        }
        fs::create_dir_all(&data).map_err(io_err)?;
        let skip = restart.skip;
        let shards = match opts.target {
            Target::Parquet => AnyShards::Parquet(
                Shards::resume(&data, opts, &opts.parquet, restart).map_err(io_err)?,
            ),
            Target::Tokens => AnyShards::Tokens(
                Shards::resume(&data, opts, &opts.parquet, restart).map_err(io_err)?,
            ),
            _ => AnyShards::Lines(
                Shards::resume(&data, opts, &opts.shards.zstd, restart).map_err(io_err)?,
            ),
        };
        let mut stage = ExportStage {
            dir: dir.to_owned(),
            earlier,
            shards,
            skip,
        };
        // A restart before any checkpoint starts from empty counts.
        let counts = &mut stage.summary_mut().segments;
        if counts.is_none() {
            *counts = SegmentCounts::of_mode(opts.segments).map(Box::new);
        }
        Ok(stage)
    }

    /// The checkpoints collected since the last call, in order: one each time a shard starts.
    pub fn take_checkpoints(&mut self) -> Vec<ShardCheckpoint> {
        match &mut self.shards {
            AnyShards::Lines(s) => std::mem::take(&mut s.pending),
            AnyShards::Parquet(s) => std::mem::take(&mut s.pending),
            AnyShards::Tokens(s) => std::mem::take(&mut s.pending),
        }
    }

    /// Writes or counts the outcomes of one trajectory, a row each in order (several when
    /// `segments` cut it). `made` is what it became with `segments` (its rows, and whether it is
    /// a subagent branch linked to its parent; `None` when it was rejected before it was cut).
    /// The rejections' diagnostics are handed back to report, in order.
    pub fn add_trajectory(
        &mut self,
        outcomes: Vec<Outcome<AnyRow>>,
        made: Option<(usize, bool)>,
    ) -> io::Result<Vec<Vec<Diagnostic>>> {
        let mut rejected = Vec::new();
        for (k, outcome) in outcomes.into_iter().enumerate() {
            // The trajectory is counted with its first row, after the checkpoint that row may
            // take: a resumed run that passes over the row passes over the count too.
            let first = k == 0 && self.skip == 0;
            rejected.extend(self.add(outcome)?);
            if let Some(counts) = self.summary_mut().segments.as_deref_mut().filter(|_| first) {
                let (rows, branch) = made.unwrap_or((1, false));
                counts.count(rows, branch);
            }
        }
        Ok(rejected)
    }

    /// Writes or counts one outcome; a rejection's diagnostics are handed back to report.
    fn add(&mut self, item: Outcome<AnyRow>) -> io::Result<Option<Vec<Diagnostic>>> {
        if self.skip > 0 {
            self.skip -= 1;
            return Ok(match item {
                Outcome::Rejected(d) => Some(d),
                _ => None,
            });
        }
        let mismatch = || io::Error::other("a row of another target reached this export");
        match (&mut self.shards, item) {
            (shards, Outcome::Row(split, e)) => match (shards, e.take_row()) {
                (AnyShards::Lines(s), (AnyRow::Line(row), e)) => {
                    s.add(Outcome::Row(split, e.with_row(row)))
                }
                (AnyShards::Parquet(s), (AnyRow::Parquet(row), e)) => {
                    s.add(Outcome::Row(split, e.with_row(*row)))
                }
                (AnyShards::Tokens(s), (AnyRow::Tokens(row), e)) => {
                    s.add(Outcome::Row(split, e.with_row(*row)))
                }
                _ => Err(mismatch()),
            },
            (AnyShards::Lines(s), Outcome::Filtered(f)) => s.add(Outcome::Filtered(f)),
            (AnyShards::Parquet(s), Outcome::Filtered(f)) => s.add(Outcome::Filtered(f)),
            (AnyShards::Tokens(s), Outcome::Filtered(f)) => s.add(Outcome::Filtered(f)),
            (AnyShards::Lines(s), Outcome::Rejected(d)) => s.add(Outcome::Rejected(d)),
            (AnyShards::Parquet(s), Outcome::Rejected(d)) => s.add(Outcome::Rejected(d)),
            (AnyShards::Tokens(s), Outcome::Rejected(d)) => s.add(Outcome::Rejected(d)),
        }
    }

    /// Counts so far.
    pub fn summary(&self) -> &ExportSummary {
        match &self.shards {
            AnyShards::Lines(s) => &s.summary,
            AnyShards::Parquet(s) => &s.summary,
            AnyShards::Tokens(s) => &s.summary,
        }
    }

    fn summary_mut(&mut self) -> &mut ExportSummary {
        match &mut self.shards {
            AnyShards::Lines(s) => &mut s.summary,
            AnyShards::Parquet(s) => &mut s.summary,
            AnyShards::Tokens(s) => &mut s.summary,
        }
    }

    /// Takes what the stages before this export report (the summary's sections) that its
    /// manifest and card describe: what redaction replaced (the `redaction` section).
    pub fn set_upstream(&mut self, sections: &Sections) {
        self.summary_mut().redaction = sections.get("redaction");
    }

    /// Completes the shards, and hands back the export's counts and the commit that renames
    /// the shards into place (replacing an earlier export's) and writes the manifest and card.
    pub fn into_commit(self, opts: &ExportOptions) -> Result<(ExportSummary, Commit), ExportError> {
        let io_err = |source: io::Error| ExportError::Io {
            dir: self.dir.display().to_string(),
            source,
        };
        let (summary, files, mut commit) = match self.shards {
            AnyShards::Lines(s) => s.into_commit(&self.earlier),
            AnyShards::Parquet(s) => s.into_commit(&self.earlier),
            AnyShards::Tokens(s) => s.into_commit(&self.earlier),
        }
        .map_err(io_err)?;
        match manifest_commit(&self.dir, opts, &summary, &files) {
            Ok(m) => commit.extend(m),
            Err(e) => {
                commit.discard();
                return Err(io_err(e));
            }
        }
        Ok((summary, commit))
    }
}

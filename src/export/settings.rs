//! [`ExportOptions`], everything one export needs: the target and SFT options
//! ([`super::options`]), splits, shards, Parquet files, the chat template and tokenizer,
//! filters, `--dedup`, runner options.

use std::sync::Arc;

use serde_json::Value;

use super::filter::Filters;
use super::options::SftOptions;
use super::parquet::ParquetConfig;
use super::sample::Training;
use super::shard::ShardOptions;
use super::split::Splits;
use super::target::Target;
use crate::engine::pipeline::RunOptions;
use crate::model::upgrade::UpgradeOptions;

/// Options of an export ([`crate::commands::export::export_inputs`], [`super::ExportStage`]).
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// The target.
    pub target: Target,
    /// SFT options (ignored by `adp`).
    pub sft: SftOptions,
    /// Splits.
    pub splits: Splits,
    /// Shards.
    pub shards: ShardOptions,
    /// Parquet files (`--to parquet`, `--to tokens`).
    pub parquet: ParquetConfig,
    /// The chat template, tokenizer and loss options (`--to tokens`).
    pub training: Option<Arc<Training>>,
    /// Filters.
    pub filters: Filters,
    /// Drop rows whose content (the row without its id) was already written.
    pub dedup: bool,
    /// How trajectories are cut into rows (`--segments`).
    pub segments: crate::segment::Mode,
    /// Replace the data files and manifest of an earlier export in the directory.
    pub force: bool,
    /// Recorded in the manifest as the run's options.
    pub recorded_options: Value,
    /// The ADP version read into (1.5.0).
    pub upgrade: UpgradeOptions,
    /// Runner options.
    pub run: RunOptions,
}

impl ExportOptions {
    /// True when the export builds each trajectory's conversation: the SFT targets, and any
    /// export that counts tokens (so it lists tool specs, and may infer them from the dataset).
    pub fn builds_conversations(&self) -> bool {
        self.target.is_sft() || self.training.is_some()
    }

    /// True when this export counts tokens ([`super::encode::count_tokens`]) and `other` counts
    /// the same number for any trajectory whose conversation has no thoughts (and for any
    /// trajectory with equal `--thoughts`): the same template and tokenizer, and the same
    /// trajectory (ADP version) mapped to the same conversation and tool specs (the catalog
    /// holds the specs `--infer-tools dataset` found). The `tokens`
    /// target counts its samples instead, an export with `segments` counts each segment, and
    /// neither counts alike with another.
    pub fn counts_like(&self, other: &ExportOptions) -> bool {
        // A trajectory's shared count is of the whole trajectory: an export that cuts it into
        // segments counts each row itself.
        let counts = |o: &ExportOptions| {
            !o.target.writes_samples() && o.segments == crate::segment::Mode::None
        };
        match (&self.training, &other.training) {
            (Some(a), Some(b)) if counts(self) && counts(other) => {
                a.counts_like(b)
                    && self.upgrade == other.upgrade
                    && self.sft.map == other.sft.map
                    && self.sft.catalog == other.sft.catalog
            }
            _ => false,
        }
    }
}

//! `manifest.json` and the dataset card `README.md` of an export directory, and the commit
//! step that writes them.
//!
//! Both are deterministic: no timestamps or host names, so the same input and options give
//! the same bytes.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::settings::ExportOptions;
use super::shard::ShardFile;
use super::summary::ExportSummary;
use super::target::Target;
use crate::engine::output::Commit;
use crate::engine::partition::{Partition, PartitionInfo};

/// What `manifest.json` holds.
#[derive(Debug, Serialize)]
pub struct Manifest<'a> {
    /// trajkit's version.
    pub trajkit_version: &'static str,
    /// The target (`openai`, `hf`, `sharegpt`, `adp`).
    pub target: &'a str,
    /// The options of the run, as given.
    pub options: &'a Value,
    /// Counts: `in == written + filtered + rejected`.
    pub counts: &'a ExportSummary,
    /// Rows and bytes per split, in the order of `--split`.
    pub splits: Vec<SplitEntry>,
    /// Every data file.
    pub files: &'a [ShardFile],
    /// The partition of a partitioned run (`index`), or the partitions a merged manifest
    /// combines (no `index`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<PartitionInfo>,
}

/// Totals of one split.
#[derive(Debug, Serialize, Deserialize)]
pub struct SplitEntry {
    /// The split name.
    pub name: String,
    /// Rows.
    pub rows: u64,
    /// Bytes of its files.
    pub bytes: u64,
    /// Number of files.
    pub files: usize,
}

impl<'a> Manifest<'a> {
    /// The manifest of `files`, with every split of `split_names` listed (empty ones too).
    pub fn new(
        target: &'a str,
        options: &'a Value,
        counts: &'a ExportSummary,
        split_names: &[String],
        files: &'a [ShardFile],
    ) -> Self {
        let splits = split_names
            .iter()
            .map(|name| {
                let of: Vec<&ShardFile> = files.iter().filter(|f| &f.split == name).collect();
                SplitEntry {
                    name: name.clone(),
                    rows: of.iter().map(|f| f.rows).sum(),
                    bytes: of.iter().map(|f| f.bytes).sum(),
                    files: of.len(),
                }
            })
            .collect();
        Manifest {
            trajkit_version: env!("CARGO_PKG_VERSION"),
            target,
            options,
            counts,
            splits,
            files,
            partition: None,
        }
    }

    /// The dataset card: Hugging Face front matter (`configs` with one `data_files` pattern
    /// per non-empty split), then what the rows are and how they were made.
    pub fn card(&self, shape: &str) -> String {
        let mut out = String::from("---\nconfigs:\n- config_name: default\n  data_files:\n");
        for s in self.splits.iter().filter(|s| s.files > 0) {
            out.push_str(&format!(
                "  - split: {}\n    path: \"data/{}-*\"\n",
                s.name, s.name
            ));
        }
        out.push_str("---\n\n");
        out.push_str(&format!(
            "# Agent trajectories ({} format)\n\nExported by trajkit {} from ADP trajectories \
             with `trajkit export --to {}`. `manifest.json` lists every file with its rows, \
             bytes and SHA-256, and the options of the run.\n\n",
            self.target, self.trajkit_version, self.target
        ));
        out.push_str("## Rows\n\n");
        out.push_str(shape);
        out.push_str("\n\n## Splits\n\n| split | rows | files | bytes |\n|---|---|---|---|\n");
        for s in &self.splits {
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                s.name, s.rows, s.files, s.bytes
            ));
        }
        let c = self.counts;
        out.push_str(&format!(
            "\n## Counts\n\n{} trajectories read: {} written, {} filtered ({} by reward, {} by \
             outcome, {} by steps, {} by characters, {} duplicates, {} with no assistant turn), {} \
             rejected as untrainable or invalid.\n",
            c.records_in,
            c.written,
            c.filtered,
            c.filtered_by.min_reward,
            c.filtered_by.outcome,
            c.filtered_by.max_steps,
            c.filtered_by.max_chars,
            c.filtered_by.duplicate,
            c.filtered_by.no_assistant_turn,
            c.rejected
        ));
        if let Some(r) = &c.redaction {
            out.push_str(&format!(
                "\n## Redaction\n\nSecrets and personal data were replaced by placeholders naming the \
                 rule that found them (`<SECRET:rule>`, `<PII:rule>`): {}.\n",
                r.describe()
            ));
        }
        out
    }
}

/// The manifest's file name: `manifest.json`, or `manifest.part-00000-of-00002.json` for a
/// partition.
pub(super) fn manifest_name(partition: Option<&Partition>) -> String {
    match partition {
        Some(p) => p.file_name("manifest.json"),
        None => "manifest.json".to_owned(),
    }
}

/// The commit step that writes `manifest.json` and the dataset card of a finished export (and
/// for a partition, removes a stale merged manifest and card).
pub fn manifest_commit(
    dir: &Path,
    opts: &ExportOptions,
    summary: &ExportSummary,
    files: &[ShardFile],
) -> io::Result<Commit> {
    let mut manifest = Manifest::new(
        opts.target.name(),
        &opts.recorded_options,
        summary,
        opts.splits.names(),
        files,
    );
    let partition = opts.shards.partition.as_ref();
    manifest.partition = partition.map(Partition::info);
    let mut commit = manifest_files(dir, &manifest_name(partition), &manifest, opts.target)?;
    if partition.is_some() {
        // A merged manifest and card no longer describe the data files: the directory must not
        // look finished until `merge-manifests` runs again.
        commit.remove = ["manifest.json", "README.md"]
            .iter()
            .map(|stale| dir.join(stale))
            .collect();
    }
    Ok(commit)
}

/// The commit step that writes `manifest` as `name` in `dir`, with the dataset card unless it
/// is a partition's.
fn manifest_files(
    dir: &Path,
    name: &str,
    manifest: &Manifest<'_>,
    target: Target,
) -> io::Result<Commit> {
    let mut text = serde_json::to_string_pretty(manifest)?;
    text.push('\n');
    let mut commit = Commit::default();
    commit.write.push((dir.join(name), text));
    if manifest
        .partition
        .as_ref()
        .is_none_or(|p| p.index.is_none())
    {
        let shape = target.card_shape(manifest.counts.tokens.is_some());
        commit
            .write
            .push((dir.join("README.md"), manifest.card(&shape)));
    }
    Ok(commit)
}

/// Writes `manifest` as `name` in `dir`, with the dataset card unless it is a partition's.
pub fn write_manifest_files(
    dir: &Path,
    name: &str,
    manifest: &Manifest<'_>,
    target: Target,
) -> io::Result<()> {
    manifest_files(dir, name, manifest, target)?.apply()
}

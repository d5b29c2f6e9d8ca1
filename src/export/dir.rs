//! The output directory of an export: what it holds (finished and partial shards, manifests),
//! whether it may be written ([`ExportError::Exists`] unless `force`), and its preparation.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::manifest::manifest_name;
use super::shard;
use crate::engine::partition::{state_dir, Partition};
use crate::engine::pipeline::PipelineError;

/// Why an export could not start.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The directory holds an earlier export and `force` is off.
    #[error(
        "{0} already holds an export (manifest.json or data files); pass --force to replace it"
    )]
    Exists(String),
    /// The run failed.
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    /// Creating or finishing the outputs failed.
    #[error("cannot write the export in {dir}: {source}")]
    Io {
        /// The output directory.
        dir: String,
        /// Why.
        source: io::Error,
    },
}

/// The shard files in `data` (finished and partial ones), sorted: all of them, or only
/// `partition`'s.
pub(super) fn earlier_shards(
    data: &Path,
    partition: Option<&Partition>,
) -> io::Result<Vec<PathBuf>> {
    if !data.is_dir() {
        return Ok(Vec::new());
    }
    let tag = partition.map(|p| format!("-{}-", p.tag()));
    let mut found = Vec::new();
    for entry in fs::read_dir(data)? {
        let path = entry?.path();
        if path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
            shard::is_shard_name(n) && tag.as_ref().is_none_or(|t| n.contains(t.as_str()))
        }) {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

/// True for a shard's partial name (`.{split}-{i}.partial`).
pub(super) fn is_partial(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "partial")
}

/// Checks that `dir` may be written (no earlier export unless `force`), creates `dir/data`,
/// and returns it with the earlier shards to replace. A partition looks only at its own
/// shards and manifest (and at a merged `manifest.json`): the other partitions may be writing
/// to the same directory.
pub fn prepare_dir(
    dir: &Path,
    force: bool,
    partition: Option<&Partition>,
) -> Result<(PathBuf, Vec<PathBuf>), ExportError> {
    let io_err = |source: io::Error| ExportError::Io {
        dir: dir.display().to_string(),
        source,
    };
    let data = dir.join("data");
    let (partial, earlier): (Vec<PathBuf>, Vec<PathBuf>) = earlier_shards(&data, partition)
        .map_err(io_err)?
        .into_iter()
        .partition(|p| is_partial(p));
    // Partial files beside the journal of a killed `run` are what `--resume` goes on from:
    // kept unless `force`. Any other partial file was left by a killed command (the
    // directory's lock keeps out a running one): removed now, as this run writes partial
    // files of the same names.
    let interrupted = !partial.is_empty() && state_dir(dir, partition).exists();
    if !force && (interrupted || holds_export(dir, &earlier, partition)) {
        return Err(ExportError::Exists(dir.display().to_string()));
    }
    for p in &partial {
        fs::remove_file(p).map_err(io_err)?;
    }
    fs::create_dir_all(&data).map_err(io_err)?;
    Ok((data, earlier))
}

/// True when `dir` holds a finished export: shards (`earlier`, partial files left out) or a
/// manifest. The lock file and the files of an interrupted run do not count.
pub(super) fn holds_export(dir: &Path, earlier: &[PathBuf], partition: Option<&Partition>) -> bool {
    let manifest = |name: &str| dir.join(name).exists();
    !earlier.is_empty() || manifest("manifest.json") || manifest(&manifest_name(partition))
}

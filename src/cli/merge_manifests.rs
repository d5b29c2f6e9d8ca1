//! `trajkit merge-manifests`

use std::path::Path;

use clap::Args;
use trajkit::commands::merge_manifests::{merge_parts, MergeError};
use trajkit::engine::output::Lock;

use super::common::{CliError, GlobalArgs};

/// Combine the part manifests of a partitioned export (`trajkit run --partition I/N`, one run
/// per I, writing to the same export directory or copied into one) into `manifest.json` and
/// the dataset card, so the directory loads like an unpartitioned export.
///
/// Each DIR is one export directory. Refused (exit 2, every problem listed) unless its
/// `manifest.part-I-of-N.json` files are every partition of one partitioning exactly once,
/// made with the same target and options, with their data files present and the only shard
/// files in `data/`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct MergeManifestsArgs {
    /// Export directories, each holding every partition's manifest and data files.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<String>,
}

const EXAMPLES: &str = "Examples:
  for i in 0 1 2 3; do trajkit run pipeline.toml --partition $i/4; done
  trajkit merge-manifests out/parquet out/openai";

/// Runs `merge-manifests`.
pub fn run(args: MergeManifestsArgs, global: &GlobalArgs) -> Result<u8, CliError> {
    for dir in &args.dirs {
        let _lock = Lock::dir(Path::new(dir), None)?;
        let merged = merge_parts(Path::new(dir)).map_err(|e| match e {
            MergeError::Parts { .. } => CliError::usage(e.to_string()),
            MergeError::Io { .. } => CliError::io(e),
        })?;
        let c = &merged.counts;
        global.summary(format_args!(
            "merge-manifests: {dir}: {} partitions, {} files; {} {}, {} written, \
             {} filtered, {} rejected",
            merged.parts,
            merged.files,
            c.records_in,
            c.what_in(),
            c.written,
            c.filtered,
            c.rejected
        ));
    }
    Ok(0)
}

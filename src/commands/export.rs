//! `export`: every trajectory of the inputs into a training dataset in one directory: shards
//! per split, `manifest.json` and the dataset card, with the rejected records and their
//! diagnostics: a plan over ADP records into one export ([`Source::Adp`], [`Output::Exports`]),
//! with `--redact` as its one stage, on `run`'s runner.
//!
//! Each record is parsed as ADP (any version, like `convert --from adp`), upgraded to 1.5.0
//! and checked, redacted, filtered, rendered and assigned its split in parallel; the ordered
//! writer drops duplicates and writes shards, so the output bytes do not depend on the thread
//! count.

use std::path::Path;

use super::run::{run_plan, ExportTarget, Output, Plan, RunError, Source, Unread};
use crate::config::redact::RedactFlags;
use crate::config::ConfigError;
use crate::convert::ConvertOptions;
use crate::engine::output::{Lock, LockError};
use crate::engine::pipeline::Progress;
use crate::engine::stage::Stage;
use crate::export::{ExportOptions, ExportSummary};
use crate::redact::Redactor;
use crate::validate::report::Reporter;

/// What `export` opens before reading: the locks on its directory and rejects file (held
/// while the value lives) and the redactor.
pub struct Opened {
    _locks: (Lock, Option<Lock>),
    /// The redactor of `--redact`.
    pub redactor: Option<Redactor>,
}

/// Why `export` could not open what it writes.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Another process writes the directory or the rejects file.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The redaction options cannot work (a rule file that does not read or check).
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// Locks `dir` (this partition's share of it) and `rejects` and, with `redact`, makes the
/// redactor: what [`export_inputs`] is handed.
pub fn open(
    dir: &Path,
    opts: &ExportOptions,
    rejects: Option<&str>,
    redact: Option<&RedactFlags>,
) -> Result<Opened, OpenError> {
    let locks = (
        Lock::dir(dir, opts.shards.partition.as_ref())?,
        rejects.map(Lock::file).transpose()?.flatten(),
    );
    let redactor = redact.map(RedactFlags::redactor).transpose()?;
    Ok(Opened {
        _locks: locks,
        redactor,
    })
}

/// Exports every trajectory of `inputs` to `dir`: `data/{split}-{i:05}-of-{n:05}.jsonl[.zst]`,
/// `manifest.json` and `README.md`. Rejected records go to the file `rejects` and their
/// diagnostics to `reporter`. Nothing in `dir` looks finished until the whole run succeeded.
///
/// With `redact`, each trajectory is redacted once upgraded and checked (a trajectory in which
/// something is still found is rejected at stage `redact`), the tool specs are inferred from
/// the redacted trajectories, and the rejects and diagnostics show what its rules find masked.
pub fn export_inputs(
    inputs: &[String],
    dir: &Path,
    opts: &ExportOptions,
    progress: &dyn Progress,
    rejects: Option<&str>,
    reporter: Box<dyn Reporter>,
    redact: Option<&Redactor>,
) -> Result<ExportSummary, RunError> {
    let convert = ConvertOptions {
        upgrade: opts.upgrade.clone(),
        run: opts.run.clone(),
        ..ConvertOptions::default()
    };
    let stages: Vec<&dyn Stage> = redact.map(|r| r as &dyn Stage).into_iter().collect();
    let exports = [ExportTarget {
        dir: dir.to_owned(),
        opts: opts.clone(),
    }];
    let source = Source::Adp(inputs, Unread::Exports);
    let plan = Plan::command(source, &convert, &stages, Output::Exports(&exports));
    let run = run_plan(&plan, progress, rejects, reporter)?;
    let mut summary = run.exports.into_iter().next().unwrap_or_default();
    summary.empty_inputs = run.empty_inputs;
    Ok(summary)
}

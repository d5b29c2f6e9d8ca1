//! A command's inputs: the paths given, expanded, each paired with the converter that reads
//! it.

use std::io;
use std::path::Path;

use crate::config::ConfigError;
use crate::convert::Converter;
use crate::formats::detect::{detect_input, DetectError};
use crate::formats::parquet::reader::{is_parquet, ParquetRecords};
use crate::formats::{beside_conversation, path_converter};
use crate::ingest::inputs::expand_inputs_with;
use crate::ingest::{boxed, RecordSource};

/// Expands `given` (none means stdin, `-`), keeping whole the directories for which `is_unit`
/// holds and leaving out the files a walk finds for which `skip` gives a reason; what a
/// directory walk skipped goes to `notice`. An input that cannot be read is an error.
pub fn expand(
    given: &[String],
    is_unit: &dyn Fn(&Path) -> bool,
    skip: &dyn Fn(&Path) -> Option<&'static str>,
    notice: &dyn Fn(&str),
) -> Result<Vec<String>, ConfigError> {
    if given.is_empty() {
        return Ok(vec!["-".to_owned()]);
    }
    let expanded =
        expand_inputs_with(given, is_unit, skip).map_err(|e| ConfigError::Io(e.to_string()))?;
    for w in &expanded.warnings {
        notice(&format!("warning: {w}"));
    }
    Ok(expanded.paths)
}

/// Pairs each input (expanded; directories a format claims stay whole) with its converter:
/// `named`, or the one detected from its first record (each detection goes to `notice`).
pub fn plan(
    given: &[String],
    named: Option<&'static dyn Converter>,
    notice: &dyn Fn(&str),
) -> Result<Vec<(String, &'static dyn Converter)>, ConfigError> {
    let claimant = |p: &Path| match named {
        Some(c) => c.claims_path(p).then_some(c),
        None => path_converter(p),
    };
    let mut plan = Vec::new();
    let skip = |p: &Path| match named {
        Some(c) => c.beside_conversation(p),
        None => beside_conversation(p),
    };
    for input in expand(given, &|p| claimant(p).is_some(), &skip, notice)? {
        let converter = match (claimant(Path::new(&input)), named) {
            (Some(c), _) | (None, Some(c)) => c,
            (None, None) => detect_input(&input).map_err(|e| match e {
                DetectError::Read { .. } => ConfigError::Io(e.to_string()),
                _ => ConfigError::Invalid(e.to_string()),
            })?,
        };
        if named.is_none() {
            notice(&format!("{input}: detected {}", converter.name()));
        }
        plan.push((input, converter));
    }
    Ok(plan)
}

/// The record source of an input of ADP trajectories that is not JSON: a Parquet file written
/// by `export --to parquet` (its rows as ADP JSON); `None` for JSON framing. For
/// [`crate::engine::pipeline::run_with_sources`].
pub fn adp_source(path: &str) -> Option<io::Result<Box<dyn RecordSource>>> {
    is_parquet(Path::new(path)).then(|| boxed(ParquetRecords::open(path)))
}

/// Expands the inputs of a command that reads ADP trajectories (`stats`, `report`, `show`):
/// as [`expand`], with Parquet files found in directories.
pub fn expand_adp(given: &[String], notice: &dyn Fn(&str)) -> Result<Vec<String>, ConfigError> {
    expand(given, &|p| p.is_file() && is_parquet(p), &|_| None, notice)
}

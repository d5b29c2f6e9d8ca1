//! trajkit's own Parquet export read back (`--from parquet`): every row is one trajectory,
//! decoded by [`crate::ingest::parquet`] into ADP JSON and then read like `--from adp`.

use std::io;
use std::path::Path;

use serde_json::Value;

use super::{adp::Adp, ConvertOptions, Converter, Mapping};
use crate::ingest::parquet::{is_parquet, ParquetRecords};
use crate::ingest::{RawRecord, RecordSource};
use crate::model::{AdpVersion, Trajectory};
use crate::validate::Diagnostic;

/// Reads Parquet files written by `trajkit export --to parquet`.
pub struct Parquet;

impl Converter for Parquet {
    fn name(&self) -> &'static str {
        "parquet"
    }

    fn description(&self) -> &'static str {
        "Parquet files written by `trajkit export --to parquet` (one trajectory per row)"
    }

    fn sniff(&self, _first: &Value) -> bool {
        false
    }

    fn claims_path(&self, path: &Path) -> bool {
        is_parquet(path)
    }

    fn reads_adp(&self) -> bool {
        true
    }

    fn open_source(
        &self,
        path: &str,
        _opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        Some(ParquetRecords::open(path).map(|r| Box::new(r) as Box<dyn RecordSource>))
    }

    fn convert(
        &self,
        record: &RawRecord,
        _map: &Mapping,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        Adp.convert(record, &Mapping::default())
    }
}

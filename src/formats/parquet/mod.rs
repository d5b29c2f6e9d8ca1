//! trajkit's own Parquet export read back (`--from parquet`): every row is one trajectory,
//! decoded by [`reader`] into ADP JSON and then read like `--from adp`.

pub mod reader;

use std::io;
use std::path::Path;

use serde_json::Value;

use self::reader::{is_parquet, ParquetRecords};
use crate::convert::{ConvertOptions, Converter, FormatOptions};
use crate::formats::adp::Adp;
use crate::formats::Format;
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::model::{AdpVersion, Trajectory};
use crate::validate::Diagnostic;

/// Reads Parquet files written by `trajkit export --to parquet`.
pub struct Parquet;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &Parquet,
    side: None,
};

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
        Some(boxed(ParquetRecords::open(path)))
    }

    fn convert(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        // Nothing is left out: each row is a whole ADP trajectory, read as `--from adp` reads
        // one (its `details.source.left_out`, if any, is its own reader's).
        Adp.convert(record, &FormatOptions::default())
    }
}

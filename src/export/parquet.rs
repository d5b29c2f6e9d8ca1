//! One Parquet shard file: rows gathered into record batches, written by parquet's
//! `ArrowWriter` with zstd, page statistics and the page index, and row groups cut by bytes.
//!
//! Row groups and record batches are cut by the rows' [`Row::bytes`], so the file's layout,
//! like its content, depends only on the input and the options.

use std::io;

use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use super::shard::{HashingFile, ShardWriter};
use crate::parquet::columns::Columns;
use crate::parquet::row::Row;
use crate::parquet::schema::{schema, PLAIN_COLUMNS};

/// Rows are handed to the Parquet writer in record batches of about this many bytes.
const BATCH_BYTES: u64 = 8 << 20;

/// What every Parquet file of an export shares.
#[derive(Debug, Clone, PartialEq)]
pub struct ParquetConfig {
    /// A row group ends before the row that would take its data past this many bytes.
    pub row_group_bytes: u64,
    /// zstd level of the pages.
    pub zstd_level: i32,
    /// Key-value metadata of the file (trajkit's version and the options that shape the file).
    pub metadata: Vec<(String, String)>,
    /// The `parquet` target's files have an `n_tokens` column (the export counts tokens).
    pub token_counts: bool,
}

impl Default for ParquetConfig {
    fn default() -> Self {
        ParquetConfig {
            row_group_bytes: 100_000_000,
            zstd_level: 3,
            metadata: Vec::new(),
            token_counts: false,
        }
    }
}

impl ParquetConfig {
    /// The writer properties of a file whose `plain` columns (dotted paths) are written
    /// without a dictionary.
    pub(super) fn properties(&self, plain: &[&str]) -> Result<WriterProperties, ParquetError> {
        let metadata = self
            .metadata
            .iter()
            .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
            .collect();
        let mut props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(self.zstd_level)?))
            .set_max_row_group_row_count(None)
            .set_max_row_group_bytes(None)
            .set_statistics_enabled(EnabledStatistics::Page)
            .set_key_value_metadata(Some(metadata));
        for path in plain {
            let path = ColumnPath::new(path.split('.').map(str::to_owned).collect());
            props = props.set_column_dictionary_enabled(path, false);
        }
        Ok(props.build())
    }
}

fn io_error(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> io::Error {
    io::Error::other(e)
}

/// A Parquet shard being written.
pub struct ParquetShard {
    writer: ArrowWriter<HashingFile>,
    pending: Columns,
    group_bytes: u64,
    row_group_bytes: u64,
}

impl ParquetShard {
    /// Hands the gathered rows to the Parquet writer.
    fn write_pending(&mut self) -> io::Result<()> {
        if self.pending.rows() == 0 {
            return Ok(());
        }
        let batch = self.pending.finish().map_err(io_error)?;
        self.writer.write(&batch).map_err(io_error)
    }
}

impl ShardWriter for ParquetShard {
    type Row = Row;
    type Config = ParquetConfig;

    fn extension(_: &ParquetConfig) -> &'static str {
        "parquet"
    }

    fn start(file: HashingFile, config: &ParquetConfig) -> io::Result<Self> {
        let props = config.properties(PLAIN_COLUMNS).map_err(io_error)?;
        Ok(ParquetShard {
            writer: ArrowWriter::try_new(file, schema(config.token_counts), Some(props))
                .map_err(io_error)?,
            pending: if config.token_counts {
                Columns::with_token_counts()
            } else {
                Columns::default()
            },
            group_bytes: 0,
            row_group_bytes: config.row_group_bytes,
        })
    }

    fn write(&mut self, row: Row, len: u64) -> io::Result<()> {
        if self.group_bytes > 0 && self.group_bytes + len > self.row_group_bytes {
            self.write_pending()?;
            self.writer.flush().map_err(io_error)?;
            self.group_bytes = 0;
        }
        self.pending.push(&row);
        self.group_bytes += len;
        if self.pending.bytes() >= BATCH_BYTES {
            self.write_pending()?;
        }
        Ok(())
    }

    fn finish(mut self) -> io::Result<HashingFile> {
        self.write_pending()?;
        self.writer.into_inner().map_err(io_error)
    }
}

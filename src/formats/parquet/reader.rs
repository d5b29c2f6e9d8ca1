//! trajkit's Parquet files read back as records: each row becomes the ADP JSON of its
//! trajectory, with the row number (1-based) as its line.

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;

use crate::ingest::{FrameError, Provenance, RawRecord, RecordSource};
use crate::parquet::decode::{RowError, Rows, READ_COLUMNS};

/// Rows decoded per batch.
const BATCH_ROWS: usize = 1024;

/// True when `path` is a file that starts with Parquet's magic bytes.
pub fn is_parquet(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    path.is_file()
        && File::open(path)
            .and_then(|mut f| io::Read::read_exact(&mut f, &mut magic))
            .is_ok()
        && &magic == b"PAR1"
}

/// The rows of one Parquet file, as ADP JSON records.
pub struct ParquetRecords {
    reader: Option<ParquetRecordBatchReader>,
    file: Arc<str>,
    pending: std::vec::IntoIter<RawRecord>,
    rows_read: u64,
    rows_total: u64,
    size: u64,
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

impl ParquetRecords {
    /// Opens `path` and checks that it has trajkit's columns.
    pub fn open(path: &str) -> io::Result<ParquetRecords> {
        let file = File::open(path)?;
        let size = file.metadata()?.len();
        let builder = ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| invalid(format!("not a readable Parquet file: {e}")))?;
        let schema = builder.schema().clone();
        let mut roots = Vec::with_capacity(READ_COLUMNS.len());
        for name in READ_COLUMNS {
            let (i, _) = schema.column_with_name(name).ok_or_else(|| {
                invalid(format!("not a trajkit Parquet file: no column `{name}`"))
            })?;
            roots.push(i);
        }
        let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
        let rows_total = builder.metadata().file_metadata().num_rows().max(0) as u64;
        let reader = builder
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(|e| invalid(e.to_string()))?;
        Ok(ParquetRecords {
            reader: Some(reader),
            file: Arc::from(path),
            pending: Vec::new().into_iter(),
            rows_read: 0,
            rows_total,
            size,
        })
    }

    fn record(&self, row: u64, bytes: Vec<u8>, error: Option<FrameError>) -> RawRecord {
        RawRecord {
            provenance: Provenance {
                input: self.file.clone(),
                file: self.file.clone(),
                line: row + 1,
                index: row,
            },
            bytes,
            error,
        }
    }

    fn decode(&self, batch: &RecordBatch) -> Vec<RawRecord> {
        let first = self.rows_read;
        let rows = match Rows::new(batch) {
            Ok(rows) => rows,
            Err(message) => {
                return vec![self.record(first, Vec::new(), Some(FrameError::Read(message)))]
            }
        };
        (0..rows.len())
            .map(|i| {
                let row = first + i as u64;
                let decoded = rows.trajectory(i).and_then(|t| {
                    serde_json::to_vec(&t).map_err(|e| RowError {
                        pointer: String::new(),
                        message: e.to_string(),
                    })
                });
                match decoded {
                    Ok(bytes) => self.record(row, bytes, None),
                    Err(e) => self.record(
                        row,
                        rows.raw(i).to_string().into_bytes(),
                        Some(FrameError::Row {
                            pointer: e.pointer,
                            message: e.message,
                        }),
                    ),
                }
            })
            .collect()
    }
}

impl Iterator for ParquetRecords {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        loop {
            if let Some(r) = self.pending.next() {
                return Some(r);
            }
            match self.reader.as_mut()?.next()? {
                Ok(batch) => {
                    let records = self.decode(&batch);
                    self.rows_read += batch.num_rows() as u64;
                    self.pending = records.into_iter();
                }
                Err(e) => {
                    // A page that does not decode ends this file: what follows is unreadable.
                    self.reader = None;
                    let row = self.rows_read;
                    return Some(self.record(
                        row,
                        Vec::new(),
                        Some(FrameError::Read(e.to_string())),
                    ));
                }
            }
        }
    }
}

impl RecordSource for ParquetRecords {
    fn bytes_read(&self) -> u64 {
        if self.rows_total == 0 {
            return 0;
        }
        self.size * self.rows_read.min(self.rows_total) / self.rows_total
    }
}

//! `--to tokens`: pre-tokenized Parquet rows, the `hf` target's conversation rendered by the
//! model's chat template and tokenized ([`crate::training`]).
//!
//! Columns (docs/training.md, "The tokens target"): `id` (string), `input_ids`
//! (`list<int32>`), `attention_mask` (`list<int8>`, all 1), `assistant_masks` (`list<int8>`, 1
//! on the tokens that train), `labels` (`list<int32>`, the token id where it trains, else
//! -100) and `n_tokens` (`int32`).

use std::borrow::Cow;
use std::io;
use std::sync::{Arc, LazyLock};

use arrow_array::{ArrayRef, Int32Array, Int8Array, ListArray, StringArray};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory,
};
use parquet::arrow::ArrowWriter;
use parquet::errors::ParquetError;
use parquet::file::writer::SerializedFileWriter;
use rayon::prelude::*;

use super::filter::Filtered;
use super::parquet::ParquetConfig;
use super::render::{sample_error, with_conversation, Encoded, RenderError};
use super::sample::Skip;
use super::settings::ExportOptions;
use super::shard::{HashingFile, ShardWriter};
use crate::model::Trajectory;

/// A pre-tokenized row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRow {
    /// The trajectory id.
    pub id: String,
    /// Token ids.
    pub ids: Vec<u32>,
    /// 1 on the tokens that train.
    pub trained: Vec<u8>,
}

/// Encodes a `tokens` row: the conversation, rendered and tokenized with `opts.training`.
pub fn encode_tokens(
    traj: Cow<'_, Trajectory>,
    opts: &ExportOptions,
) -> Result<Encoded<TokenRow>, RenderError> {
    let Some(training) = opts.training.as_deref() else {
        return Err(RenderError::Template(
            "--to tokens needs --chat-template and --tokenizer".into(),
        ));
    };
    let id = traj.id.clone();
    let sft = &opts.sft;
    let sample = with_conversation(traj, sft, |conv, tools| {
        match training.sample(conv, tools, sft) {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(Skip::Overlength)) => Err(RenderError::Skipped(Filtered::MaxTokens)),
            Ok(Err(Skip::NothingToTrain)) => Err(RenderError::Skipped(Filtered::NothingToTrain)),
            Err(e) => Err(sample_error(e)),
        }
    })?;
    let n = sample.ids.len() as u64;
    let hash = opts.dedup.then(|| {
        let mut bytes = Vec::with_capacity(sample.ids.len() * 5);
        for (t, m) in sample.ids.iter().zip(&sample.trained) {
            bytes.extend_from_slice(&t.to_le_bytes());
            bytes.push(*m);
        }
        super::render::content_hash(&bytes)
    });
    Ok(Encoded {
        // id, and per token: input id, label, two masks.
        len: id.len() as u64 + n * 10,
        tokens: Some(n),
        row: TokenRow {
            id,
            ids: sample.ids,
            trained: sample.trained,
        },
        hash,
    })
}

/// The columns written without a dictionary: all of them. Token ids and labels spread over the
/// whole vocabulary (a dictionary of them costs time and, past its page limit, falls back to
/// plain anyway); the masks' runs of 0 and 1 compress as well with zstd as run-length encoded,
/// and their dictionary encoders held more memory than the rest of the export.
const PLAIN_COLUMNS: &[&str] = &[
    "id",
    "input_ids.list.item",
    "attention_mask.list.item",
    "assistant_masks.list.item",
    "labels.list.item",
];

/// The schema of the `tokens` files.
pub fn schema() -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Utf8, false),
            Field::new("input_ids", list_of(DataType::Int32), false),
            Field::new("attention_mask", list_of(DataType::Int8), false),
            Field::new("assistant_masks", list_of(DataType::Int8), false),
            Field::new("labels", list_of(DataType::Int32), false),
            Field::new("n_tokens", DataType::Int32, false),
        ]))
    });
    SCHEMA.clone()
}

fn list_of(item: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", item, false)))
}

/// The label of a token that does not train.
pub const IGNORE: i32 = -100;

/// A `tokens` Parquet shard being written.
///
/// The columns of a row group are encoded and compressed in parallel, each by its own column
/// writer (the ids and labels, the largest, on different threads): a column's pages depend only
/// on its values and the order they come in, so the file's bytes are those of one writer
/// encoding the columns in turn, whatever the thread count.
pub struct TokensShard {
    file: SerializedFileWriter<HashingFile>,
    factory: ArrowRowGroupWriterFactory,
    /// The column writers of the row group being written.
    columns: Option<Vec<ArrowColumnWriter>>,
    pending: Vec<TokenRow>,
    pending_bytes: u64,
    group_bytes: u64,
    row_group_bytes: u64,
}

/// Rows are handed to the column writers in batches of about this many bytes.
const BATCH_BYTES: u64 = 8 << 20;

fn io_error(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> io::Error {
    io::Error::other(e)
}

impl TokensShard {
    /// Encodes the pending rows into the row group's columns, each column on its own task.
    fn write_pending(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let columns = match &mut self.columns {
            Some(c) => c,
            None => {
                let index = self.file.flushed_row_groups().len();
                let writers = self
                    .factory
                    .create_column_writers(index)
                    .map_err(io_error)?;
                self.columns.insert(writers)
            }
        };
        let rows = &self.pending;
        let fields = schema();
        columns
            .par_iter_mut()
            .zip(fields.fields().par_iter())
            .enumerate()
            .try_for_each(|(i, (writer, field))| -> Result<(), ParquetError> {
                let array = column(rows, i)?;
                for leaf in compute_leaves(field, &array)? {
                    writer.write(&leaf)?;
                }
                Ok(())
            })
            .map_err(io_error)?;
        self.pending.clear();
        self.pending_bytes = 0;
        Ok(())
    }

    /// Ends the row group: its columns' last pages, in parallel, then the chunks in order.
    fn flush(&mut self) -> io::Result<()> {
        let Some(columns) = self.columns.take() else {
            return Ok(());
        };
        let chunks: Vec<ArrowColumnChunk> = columns
            .into_par_iter()
            .map(ArrowColumnWriter::close)
            .collect::<Result<_, _>>()
            .map_err(io_error)?;
        let mut group = self.file.next_row_group().map_err(io_error)?;
        for chunk in chunks {
            chunk.append_to_row_group(&mut group).map_err(io_error)?;
        }
        group.close().map_err(io_error)?;
        Ok(())
    }
}

/// Column `i` of [`schema`] for `rows`.
fn column(rows: &[TokenRow], i: usize) -> Result<ArrayRef, arrow_schema::ArrowError> {
    let list = |item: DataType, values: ArrayRef| -> Result<ArrayRef, arrow_schema::ArrowError> {
        let offsets = OffsetBuffer::<i32>::from_lengths(rows.iter().map(|r| r.ids.len()));
        Ok(Arc::new(ListArray::try_new(
            Arc::new(Field::new("item", item, false)),
            offsets,
            values,
            None,
        )?))
    };
    let ids = || rows.iter().flat_map(|r| r.ids.iter().map(|&t| t as i32));
    let trained = || rows.iter().flat_map(|r| r.trained.iter().map(|&m| m as i8));
    Ok(match i {
        0 => Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &r.id))),
        1 => list(
            DataType::Int32,
            Arc::new(Int32Array::from_iter_values(ids())),
        )?,
        2 => {
            let n = rows.iter().map(|r| r.ids.len()).sum();
            list(DataType::Int8, Arc::new(Int8Array::from(vec![1i8; n])))?
        }
        3 => list(
            DataType::Int8,
            Arc::new(Int8Array::from_iter_values(trained())),
        )?,
        4 => {
            let labels = ids()
                .zip(trained())
                .map(|(t, m)| if m == 1 { t } else { IGNORE });
            list(
                DataType::Int32,
                Arc::new(Int32Array::from_iter_values(labels)),
            )?
        }
        _ => Arc::new(Int32Array::from_iter_values(
            rows.iter().map(|r| r.ids.len() as i32),
        )),
    })
}

impl ShardWriter for TokensShard {
    type Row = TokenRow;
    type Config = ParquetConfig;

    fn extension(_: &ParquetConfig) -> &'static str {
        "parquet"
    }

    fn start(file: HashingFile, config: &ParquetConfig) -> io::Result<Self> {
        let props = config.properties(PLAIN_COLUMNS).map_err(io_error)?;
        let writer = ArrowWriter::try_new(file, schema(), Some(props)).map_err(io_error)?;
        let (file, factory) = writer.into_serialized_writer().map_err(io_error)?;
        Ok(TokensShard {
            file,
            factory,
            columns: None,
            pending: Vec::new(),
            pending_bytes: 0,
            group_bytes: 0,
            row_group_bytes: config.row_group_bytes,
        })
    }

    fn write(&mut self, row: TokenRow, len: u64) -> io::Result<()> {
        if self.group_bytes > 0 && self.group_bytes + len > self.row_group_bytes {
            self.write_pending()?;
            self.flush()?;
            self.group_bytes = 0;
        }
        self.pending.push(row);
        self.pending_bytes += len;
        self.group_bytes += len;
        if self.pending_bytes >= BATCH_BYTES {
            self.write_pending()?;
        }
        Ok(())
    }

    fn finish(mut self) -> io::Result<HashingFile> {
        self.write_pending()?;
        self.flush()?;
        self.file.into_inner().map_err(io_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_ignore_the_tokens_that_do_not_train() {
        let rows = vec![TokenRow {
            id: "a".into(),
            ids: vec![5, 6, 7],
            trained: vec![0, 1, 1],
        }];
        let labels = column(&rows, 4).expect("column");
        let labels = labels.as_any().downcast_ref::<ListArray>().expect("list");
        let values = labels.value(0);
        let values = values.as_any().downcast_ref::<Int32Array>().expect("int32");
        assert_eq!(values.values().to_vec(), vec![IGNORE, 6, 7]);
    }
}

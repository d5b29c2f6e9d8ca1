//! Reading inputs into raw records with provenance: files or stdin, plain, gzip or zstd,
//! JSON lines, JSON arrays or JSON documents.

pub mod framing;
pub mod inputs;
pub mod open;
pub(crate) mod sqlite;

use std::io::{self, BufRead};
use std::sync::Arc;

pub use framing::{Frame, FrameError, Framer, Layout};

/// The records of one input, in order. The generic one is [`FramedRecords`]; formats whose
/// unit is not a JSON value in a stream (a directory per attempt, sessions of a database)
/// provide their own.
pub trait RecordSource: Iterator<Item = RawRecord> + Send {
    /// Input bytes consumed so far, for progress; 0 when not known.
    fn bytes_read(&self) -> u64 {
        0
    }
}

/// An opened source as the boxed [`RecordSource`] readers hand on.
pub fn boxed<S: RecordSource + 'static>(
    source: io::Result<S>,
) -> io::Result<Box<dyn RecordSource>> {
    source.map(|s| Box::new(s) as Box<dyn RecordSource>)
}

/// The records of a JSON input (file or stdin): opened, decompressed and framed.
pub struct FramedRecords {
    framer: Framer<Box<dyn BufRead + Send>>,
    file: Arc<str>,
    index: u64,
}

impl FramedRecords {
    /// Opens `path` (`-` is stdin); records larger than `max_record_bytes` are cut to a preview
    /// and marked.
    pub fn open(path: &str, max_record_bytes: usize) -> io::Result<FramedRecords> {
        let reader = open::open(path)?;
        Ok(FramedRecords {
            framer: Framer::new(reader, layout_hint(path), max_record_bytes),
            file: Arc::from(path),
            index: 0,
        })
    }

    /// The size of the input file, when it is one (not stdin): what a reader gathering the
    /// whole input into one record reserves room for. Of a compressed file, its compressed
    /// size (a lower bound).
    pub fn file_size(&self) -> Option<u64> {
        if &*self.file == "-" {
            return None;
        }
        std::fs::metadata(&*self.file)
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.len())
    }

    /// Gives back the bytes of a record the caller is done with: see [`Framer::recycle`].
    pub fn recycle(&mut self, bytes: Vec<u8>) {
        self.framer.recycle(bytes);
    }
}

impl Iterator for FramedRecords {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        let frame = self.framer.next()?;
        let record = RawRecord {
            provenance: Provenance {
                input: self.file.clone(),
                file: self.file.clone(),
                line: frame.line,
                index: self.index,
            },
            bytes: frame.bytes,
            error: frame.error,
        };
        self.index += 1;
        Some(record)
    }
}

impl RecordSource for FramedRecords {
    fn bytes_read(&self) -> u64 {
        self.framer.bytes_read
    }
}

/// Where a record came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    /// The input it was read from, as given (`-` for stdin).
    pub input: Arc<str>,
    /// The file it is in: the input itself, or a file inside an input directory.
    pub file: Arc<str>,
    /// 1-based line on which the record starts.
    pub line: u64,
    /// 0-based position of the record in its input.
    pub index: u64,
}

/// One record's bytes with its provenance, before parsing.
#[derive(Debug, Clone)]
pub struct RawRecord {
    /// Where it came from.
    pub provenance: Provenance,
    /// The record's bytes (a preview when `error` is set).
    pub bytes: Vec<u8>,
    /// Set when the record could not be framed (truncated, oversized, unreadable).
    pub error: Option<FrameError>,
}

impl RawRecord {
    /// The record a reader assembled from several rows or files (a session of a store): its
    /// bytes, a 256-byte preview with [`FrameError::TooLarge`] when they exceed `max_bytes`, or
    /// no bytes with [`FrameError::Read`] when assembling failed (`built` says why).
    pub fn assembled(
        provenance: Provenance,
        built: Result<Vec<u8>, String>,
        max_bytes: usize,
    ) -> RawRecord {
        let (bytes, error) = match built {
            Ok(b) if b.len() > max_bytes => {
                let size = b.len() as u64;
                let preview = b.get(..256).unwrap_or(&b).to_vec();
                let limit = max_bytes as u64;
                (preview, Some(FrameError::TooLarge { size, limit }))
            }
            Ok(b) => (b, None),
            Err(e) => (Vec::new(), Some(FrameError::Read(e))),
        };
        RawRecord {
            provenance,
            bytes,
            error,
        }
    }
}

/// The layout an input's name promises, before looking at its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutHint {
    /// `*.jsonl`, `*.ndjson`: one record per line, whatever the first byte.
    Lines,
    /// `*.json` and `*.traj` (agent trajectories written as one pretty-printed JSON object): a
    /// JSON array of records, or one or more JSON documents.
    Json,
    /// Anything else (stdin included): a JSON array if the first byte is `[`, else lines.
    Sniff,
}

/// `name` without a compression suffix (`.gz`, `.zst`), which the readers look through.
pub fn without_compression(name: &str) -> &str {
    name.strip_suffix(".gz")
        .or_else(|| name.strip_suffix(".zst"))
        .unwrap_or(name)
}

/// The layout hint for an input name (compression suffixes `.gz` and `.zst` are looked through).
pub fn layout_hint(path: &str) -> LayoutHint {
    let base = without_compression(path);
    if base.ends_with(".jsonl") || base.ends_with(".ndjson") {
        LayoutHint::Lines
    } else if base.ends_with(".json") || base.ends_with(".traj") {
        LayoutHint::Json
    } else {
        LayoutHint::Sniff
    }
}

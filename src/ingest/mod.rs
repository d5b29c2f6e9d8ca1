//! Reading inputs into raw records with provenance: files or stdin, plain, gzip or zstd,
//! JSON lines, JSON arrays or JSON documents.

pub mod framing;
pub mod inputs;
pub mod open;

use std::sync::Arc;

pub use framing::{Frame, FrameError, Framer, Layout};

/// Where a record came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    /// The input path as given (`-` for stdin).
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

/// The layout an input's name promises, before looking at its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutHint {
    /// `*.jsonl`, `*.ndjson`: one record per line, whatever the first byte.
    Lines,
    /// `*.json`: a JSON array of records, or one or more JSON documents.
    Json,
    /// Anything else (stdin included): a JSON array if the first byte is `[`, else lines.
    Sniff,
}

/// The layout hint for an input name (compression suffixes `.gz` and `.zst` are looked through).
pub fn layout_hint(path: &str) -> LayoutHint {
    let base = path
        .strip_suffix(".gz")
        .or_else(|| path.strip_suffix(".zst"))
        .unwrap_or(path);
    if base.ends_with(".jsonl") || base.ends_with(".ndjson") {
        LayoutHint::Lines
    } else if base.ends_with(".json") {
        LayoutHint::Json
    } else {
        LayoutHint::Sniff
    }
}

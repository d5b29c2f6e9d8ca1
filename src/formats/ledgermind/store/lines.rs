//! LedgerMind events as JSON lines, indexed in parallel batches; the lines that are not valid
//! events kept as records to reject.

use std::io;
use std::sync::Arc;

use rayon::prelude::*;
use serde_json::Value;

use super::index::Index;
use super::EventCheck;
use crate::ingest::open::{self, is_plain_file};
use crate::ingest::{layout_hint, Frame, FrameError, Framer, Provenance, RawRecord};
use crate::json::strict::{self, ParseError};
use crate::json::Node;

/// Frames per batch checked in parallel while JSON lines are indexed.
pub(super) const BATCH_FRAMES: usize = 16_384;
/// Frames per parallel task.
pub(super) const CHUNK_FRAMES: usize = 256;

/// What indexing JSON lines gives: the index, a copy of the events' texts when the input is not
/// a plain file (they are read back from the file otherwise), the bytes read, and the frames
/// that are not valid events, in input order.
pub(super) struct Lines {
    pub(super) index: Index,
    pub(super) copy: Option<Vec<u8>>,
    pub(super) bytes: u64,
    pub(super) bad: Vec<RawRecord>,
}

/// Indexes the events of JSON lines at `path`.
pub(super) fn read_lines(
    path: &str,
    max_record_bytes: usize,
    check: EventCheck<'_>,
    input: &Arc<str>,
) -> io::Result<Lines> {
    let plain = is_plain_file(path);
    let mut framer = Framer::new(open::open(path)?, layout_hint(path), max_record_bytes);
    let mut lines = Lines {
        index: Index::default(),
        copy: (!plain).then(Vec::new),
        bytes: 0,
        bad: Vec::new(),
    };
    // The file's size, to size the index from the first batch.
    let size = plain
        .then(|| std::fs::metadata(path).map(|m| m.len()).ok())
        .flatten();
    let mut batch: Vec<Frame> = framer.by_ref().take(BATCH_FRAMES).collect();
    let mut checked: Option<(Vec<Frame>, Vec<Part>)> = None;
    while !batch.is_empty() {
        // Each batch's events are checked in parallel, while the next batch is framed and the
        // previous one is added to the index.
        let (parts, (next, ())) = rayon::join(
            || {
                batch
                    .par_chunks(CHUNK_FRAMES)
                    .map(|frames| index_frames(frames, check, input))
                    .collect()
            },
            || {
                rayon::join(
                    || framer.by_ref().take(BATCH_FRAMES).collect(),
                    || {
                        if let Some((frames, parts)) = checked.take() {
                            lines.add(&frames, parts, size);
                        }
                    },
                )
            },
        );
        checked = Some((std::mem::replace(&mut batch, next), parts));
    }
    if let Some((frames, parts)) = checked {
        lines.add(&frames, parts, size);
    }
    lines.bytes = framer.bytes_read;
    Ok(lines)
}

impl Lines {
    /// Adds the checked events of `frames` (in input order), and the frames that are not
    /// valid events. The first batch sizes the index for a plain file of `size` bytes.
    pub(super) fn add(&mut self, frames: &[Frame], parts: Vec<Part>, size: Option<u64>) {
        let first = self.index.events.is_empty();
        for (frames, mut part) in frames.chunks(CHUNK_FRAMES).zip(parts) {
            self.bad.append(&mut part.bad);
            if let Some(copy) = &mut self.copy {
                let kept = part.kept.iter().map(|&i| &frames[i]);
                for (e, frame) in part.index.events.iter_mut().zip(kept) {
                    e.offset = copy.len() as u64;
                    copy.extend_from_slice(&frame.bytes);
                }
            }
            self.index.append(part.index);
        }
        if let (Some(size), true, Some(head), Some(tail)) =
            (size, first, frames.first(), frames.last())
        {
            let span = (tail.offset + tail.bytes.len() as u64).saturating_sub(head.offset);
            self.index.reserve_for(span, size);
        }
    }
}

/// The events among some frames.
pub(super) struct Part {
    pub(super) index: Index,
    /// Which frames they are.
    pub(super) kept: Vec<usize>,
    /// The frames that are not valid events, as records: with their error, or as they were
    /// when they are not JSON (so converting them diagnoses the syntax).
    pub(super) bad: Vec<RawRecord>,
}

/// Indexes the events among `frames`.
pub(super) fn index_frames(frames: &[Frame], check: EventCheck<'_>, input: &Arc<str>) -> Part {
    let mut index = Index::default();
    let mut kept = Vec::new();
    let mut bad = Vec::new();
    for (i, frame) in frames.iter().enumerate() {
        let added = match &frame.error {
            Some(error) => Err(Some(error.clone())),
            None => match check.fast.and_then(|shapes| shapes.parse(&frame.bytes)) {
                Some(node) => Ok(index.push(&node, frame.offset, frame.bytes.len(), frame.line)),
                None => slow_check(&frame.bytes, check).map(|value| {
                    let node = Node::from_value(&value);
                    index.push(&node, frame.offset, frame.bytes.len(), frame.line)
                }),
            },
        };
        let error = match added {
            Ok(Some(())) => {
                kept.push(i);
                continue;
            }
            Ok(None) => Some(FrameError::Invalid(
                "a LedgerMind event or one of its fields is over 4 GiB".to_owned(),
            )),
            Err(error) => error,
        };
        bad.push(RawRecord {
            provenance: Provenance {
                input: input.clone(),
                file: input.clone(),
                line: frame.line,
                index: 0,
            },
            bytes: frame.bytes.clone(),
            error,
        });
    }
    Part { index, kept, bad }
}

/// An event the compiled checks did not accept, parsed as a `Value` and checked by the schema;
/// the error to reject it with when it is not a valid event (`None`: it is not JSON).
pub(super) fn slow_check(bytes: &[u8], check: EventCheck<'_>) -> Result<Value, Option<FrameError>> {
    let value = strict::parse_value(bytes).map_err(|e| match e {
        ParseError::Rule(p) => Some(FrameError::Json(Box::new(p))),
        ParseError::Syntax(_) => None,
    })?;
    let problems = if value.is_object() {
        (check.problems)(&value)
    } else {
        vec!["a LedgerMind event must be a JSON object".to_owned()]
    };
    if problems.is_empty() {
        Ok(value)
    } else {
        Err(Some(FrameError::Invalid(problems.join("; "))))
    }
}

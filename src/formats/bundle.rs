//! A whole file of JSON objects as one record, for formats whose unit is a file rather than a
//! line: a Claude Code session, an OpenHands event stream. The objects become one record
//! `{<marker>: true, "lines": [{"line", "entry"}]}` (read back with [`bundle_lines`]); every
//! frame that is not a JSON object follows as a record of its own, so it is rejected with its
//! line while the rest of the file still converts.
//!
//! Chat formats read a file of bare messages (a JSON array of `{role, content}`, or JSON lines
//! of them) the same way, as one chat: [`open_chat`].

use std::io;

use serde_json::{json, Value};

use super::chat::is_message;
use crate::ingest::{FrameError, FramedRecords, RawRecord, RecordSource};
use crate::json::strict::{self, ParseError};

/// Opens `path` for a chat format. A file whose first record is one chat message
/// ([`is_message`]: a string `role`, no `messages`) holds one chat: its records become one
/// record `{"messages": [...]}` (line 1, index 0), in file order, so JSON pointers into it read
/// `/messages/N` for the file's N-th message; a record that cannot be read (cut by the end of
/// the file, too large, not JSON) follows as a record of its own, rejected with its line while
/// the rest of the chat still converts. Any other file is framed as usual, a record each.
pub fn open_chat(path: &str, max_record_bytes: usize) -> io::Result<Box<dyn RecordSource>> {
    let mut framed = FramedRecords::open(path, max_record_bytes)?;
    let Some(first) = framed.next() else {
        return Ok(Box::new(FileBundle {
            pending: Vec::new().into_iter(),
            bytes: framed.bytes_read(),
        }));
    };
    let message = first.error.is_none()
        && serde_json::from_slice::<Value>(&first.bytes).is_ok_and(|v| is_message(&v));
    if message {
        Ok(Box::new(FileBundle::messages(first, framed)))
    } else {
        Ok(Box::new(Peeked {
            first: Some(first),
            rest: framed,
        }))
    }
}

/// A framed input whose first record was read ahead.
struct Peeked {
    first: Option<RawRecord>,
    rest: FramedRecords,
}

impl Iterator for Peeked {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        self.first.take().or_else(|| self.rest.next())
    }
}

impl RecordSource for Peeked {
    fn bytes_read(&self) -> u64 {
        self.rest.bytes_read()
    }
}

/// The records of a bundled file: the bundle first, then the frames that are not objects.
pub struct FileBundle {
    pending: std::vec::IntoIter<RawRecord>,
    bytes: u64,
}

impl FileBundle {
    /// Bundles the objects of `path` under `marker`.
    pub fn open(path: &str, max_record_bytes: usize, marker: &str) -> std::io::Result<FileBundle> {
        Ok(FileBundle::from_framed(
            Vec::new(),
            FramedRecords::open(path, max_record_bytes)?,
            marker,
        ))
    }

    /// Bundles `read` (records already read from `framed`) and the rest of `framed`.
    pub fn from_framed(
        read: Vec<RawRecord>,
        mut framed: FramedRecords,
        marker: &str,
    ) -> FileBundle {
        let mut lines = Vec::new();
        let mut bad = Vec::new();
        let mut head: Option<RawRecord> = None;
        for mut record in read.into_iter().chain(framed.by_ref()) {
            // An entry that breaks trajkit's rules on JSON text is rejected as it is.
            let parsed = match &record.error {
                Some(_) => None,
                None => match strict::parse_value(&record.bytes) {
                    Ok(value) => Some(value),
                    Err(ParseError::Rule(p)) => {
                        record.error = Some(FrameError::Json(Box::new(p)));
                        None
                    }
                    Err(ParseError::Syntax(_)) => None,
                },
            };
            match parsed {
                Some(entry) if entry.is_object() => {
                    lines.push(json!({"line": record.provenance.line, "entry": entry}));
                    if head.is_none() {
                        head = Some(record);
                    }
                }
                Some(_) => {
                    record.error = Some(FrameError::Invalid(
                        "each entry of this file must be a JSON object".into(),
                    ));
                    bad.push(record);
                }
                None => bad.push(record),
            }
        }
        let mut records = Vec::new();
        if let Some(mut head) = head {
            let mut bundle = serde_json::Map::new();
            bundle.insert(marker.to_owned(), Value::Bool(true));
            bundle.insert("lines".to_owned(), Value::Array(lines));
            head.bytes = serde_json::to_vec(&bundle).unwrap_or_default();
            head.provenance.line = 1;
            head.provenance.index = 0;
            records.push(head);
        }
        for (i, mut r) in bad.into_iter().enumerate() {
            r.provenance.index = i as u64 + 1;
            records.push(r);
        }
        FileBundle {
            pending: records.into_iter(),
            bytes: framed.bytes_read(),
        }
    }
}

impl FileBundle {
    /// The chat of a file of messages ([`open_chat`]): `first`, then the rest of `framed`.
    fn messages(first: RawRecord, mut framed: FramedRecords) -> FileBundle {
        let mut messages = Vec::new();
        let mut bad = Vec::new();
        let mut head: Option<RawRecord> = None;
        for mut record in std::iter::once(first).chain(framed.by_ref()) {
            if record.error.is_some() {
                bad.push(record);
                continue;
            }
            match strict::parse_value(&record.bytes) {
                Ok(value) => {
                    messages.push(value);
                    if head.is_none() {
                        head = Some(record);
                    }
                }
                Err(ParseError::Rule(p)) => {
                    record.error = Some(FrameError::Json(Box::new(p)));
                    bad.push(record);
                }
                Err(ParseError::Syntax(_)) => bad.push(record),
            }
        }
        let mut records = Vec::new();
        if let Some(mut head) = head {
            head.bytes = serde_json::to_vec(&json!({ "messages": messages })).unwrap_or_default();
            head.provenance.line = 1;
            head.provenance.index = 0;
            records.push(head);
        }
        for (i, mut r) in bad.into_iter().enumerate() {
            r.provenance.index = i as u64 + 1;
            records.push(r);
        }
        FileBundle {
            pending: records.into_iter(),
            bytes: framed.bytes_read(),
        }
    }
}

impl Iterator for FileBundle {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        self.pending.next()
    }
}

impl RecordSource for FileBundle {
    fn bytes_read(&self) -> u64 {
        self.bytes
    }
}

/// The `(line, entry)` pairs of a bundle built by [`FileBundle`], in file order.
pub fn bundle_lines(bundle: &Value) -> impl Iterator<Item = (u64, &Value)> {
    bundle["lines"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| (l["line"].as_u64().unwrap_or(0), &l["entry"]))
}

//! A whole file of JSON objects as one record, for formats whose unit is a file rather than a
//! line: a Claude Code session, an OpenHands event stream. The objects become one record
//! `{<marker>: true, "lines": [{"line", "entry"}]}` (read back with [`bundle_lines`]); every
//! frame that is not a JSON object follows as a record of its own, so it is rejected with its
//! line while the rest of the file still converts.

use serde_json::{json, Value};

use crate::ingest::{FrameError, FramedRecords, RawRecord, RecordSource};
use crate::json::strict::{self, ParseError};

/// The records of a bundled file: the bundle first, then the frames that are not objects.
pub struct FileBundle {
    pending: std::vec::IntoIter<RawRecord>,
    bytes: u64,
}

impl FileBundle {
    /// Bundles the objects of `path` under `marker`.
    pub fn open(path: &str, max_record_bytes: usize, marker: &str) -> std::io::Result<FileBundle> {
        FileBundle::open_with(
            path,
            max_record_bytes,
            marker,
            &mut |_: &mut serde_json::Map<String, Value>| {},
        )
    }

    /// [`FileBundle::open`], where `extend` sees the bundle (its marker and `lines`) before it
    /// is written and may add keys to it: what the reader knows from outside the file (a
    /// sidecar file, another file of the same directory).
    pub fn open_with(
        path: &str,
        max_record_bytes: usize,
        marker: &str,
        extend: &mut dyn FnMut(&mut serde_json::Map<String, Value>),
    ) -> std::io::Result<FileBundle> {
        Ok(FileBundle::build(
            Vec::new(),
            FramedRecords::open(path, max_record_bytes)?,
            marker,
            extend,
        ))
    }

    /// Bundles `read` (records already read from `framed`) and the rest of `framed`.
    pub fn from_framed(read: Vec<RawRecord>, framed: FramedRecords, marker: &str) -> FileBundle {
        FileBundle::build(read, framed, marker, &mut |_: &mut serde_json::Map<
            String,
            Value,
        >| {})
    }

    fn build(
        read: Vec<RawRecord>,
        mut framed: FramedRecords,
        marker: &str,
        extend: &mut dyn FnMut(&mut serde_json::Map<String, Value>),
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
            extend(&mut bundle);
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

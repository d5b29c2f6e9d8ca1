//! A whole file of JSON objects as one record, for formats whose unit is a file rather than a
//! line: a Claude Code session, an OpenHands event stream. The objects become one record
//! `{<marker>: true, "lines": [{"line", "entry"}]}` (read back with [`bundle_lines`]); every
//! frame that is not a JSON object follows as a record of its own, so it is rejected with its
//! line while the rest of the file still converts.

use serde_json::Value;

use crate::ingest::{FrameError, FramedRecords, RawRecord, RecordSource};
use crate::json::strict;

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
        // The bundle's text, written as the entries are checked: each entry's own bytes, not
        // re-serialized (the converter parses the bundle once).
        let mut text =
            format!("{{{}:true,\"lines\":[", Value::String(marker.to_owned())).into_bytes();
        let mut entries = 0usize;
        let mut bad = Vec::new();
        let mut head: Option<RawRecord> = None;
        for mut record in read.into_iter().chain(framed.by_ref()) {
            // An entry that breaks trajkit's rules on JSON text is rejected as it is.
            let object = match &record.error {
                Some(_) => None,
                None => match entry_kind(&record.bytes) {
                    Ok(object) => Some(object),
                    Err(Some(p)) => {
                        record.error = Some(FrameError::Json(Box::new(p)));
                        None
                    }
                    Err(None) => None,
                },
            };
            match object {
                Some(true) => {
                    if entries > 0 {
                        text.push(b',');
                    }
                    entries += 1;
                    text.extend_from_slice(
                        format!("{{\"line\":{},\"entry\":", record.provenance.line).as_bytes(),
                    );
                    text.extend_from_slice(&record.bytes);
                    text.push(b'}');
                    if head.is_none() {
                        head = Some(record);
                    }
                }
                Some(false) => {
                    record.error = Some(FrameError::Invalid(
                        "each entry of this file must be a JSON object".into(),
                    ));
                    bad.push(record);
                }
                None => bad.push(record),
            }
        }
        text.extend_from_slice(b"]}");
        let mut records = Vec::new();
        if let Some(mut head) = head {
            head.bytes = text;
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

/// Whether `bytes` are a JSON object (`Ok(true)`) or another JSON value (`Ok(false)`), read
/// without building it; `Err` when they are not JSON (`None`: the parse of the bundle reports
/// nothing more useful than the framer's syntax error, so the record is rejected as it is) or
/// break one of trajkit's rules on JSON text (`Some`).
fn entry_kind(bytes: &[u8]) -> Result<bool, Option<strict::JsonProblem>> {
    if serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_err() {
        return Err(None);
    }
    strict::check(bytes).map_err(Some)?;
    Ok(bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{'))
}

/// The `(line, entry)` pairs of a bundle built by [`FileBundle`], in file order.
pub fn bundle_lines(bundle: &Value) -> impl Iterator<Item = (u64, &Value)> {
    bundle["lines"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| (l["line"].as_u64().unwrap_or(0), &l["entry"]))
}

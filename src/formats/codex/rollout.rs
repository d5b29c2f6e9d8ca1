//! The reader of a Codex rollout file: every line that is a JSON object goes into one record,
//! `{"codex_rollout": true, "lines": [[LINE, ENTRY], ...]}`, built by copying each line's text
//! (it is not parsed into a value and written again); every other line follows as a record of
//! its own, so it is rejected with its line (a cut last line: `json-truncated`) while the rest
//! of the file still converts.

use crate::ingest::{FrameError, FramedRecords, RawRecord, RecordSource};
use crate::json::strict::{self, ParseError};
use crate::json::Shapes;

/// The key that marks a record this reader built.
pub const MARKER: &str = "codex_rollout";

/// The records of one rollout file: the bundle first, then the lines that are not objects.
pub struct Rollout {
    pending: std::vec::IntoIter<RawRecord>,
    bytes: u64,
}

/// What a line is.
enum Line {
    /// A JSON object: its text, as it is or (when only the slow parser read it) rewritten.
    Object(Option<Vec<u8>>),
    /// Anything else: the record keeps its bytes, with `error` set when the reason is known
    /// here (left unset for bad JSON, which the converter diagnoses with the exact position).
    Bad(Option<FrameError>),
}

fn classify(bytes: &[u8]) -> Line {
    match Shapes::any().parse(bytes) {
        Some(node) if node.is_object() => Line::Object(None),
        Some(_) => Line::Bad(Some(not_an_object())),
        None => match strict::parse_value(bytes) {
            Ok(value) if value.is_object() => Line::Object(serde_json::to_vec(&value).ok()),
            Ok(_) => Line::Bad(Some(not_an_object())),
            Err(ParseError::Rule(p)) => Line::Bad(Some(FrameError::Json(Box::new(p)))),
            Err(ParseError::Syntax(_)) => Line::Bad(None),
        },
    }
}

fn not_an_object() -> FrameError {
    FrameError::Invalid("each line of a Codex rollout must be a JSON object".into())
}

impl Rollout {
    /// Reads the rollout at `path` (`-` is stdin).
    pub fn open(path: &str, max_record_bytes: usize) -> std::io::Result<Rollout> {
        Ok(Rollout::from_framed(FramedRecords::open(
            path,
            max_record_bytes,
        )?))
    }

    fn from_framed(mut framed: FramedRecords) -> Rollout {
        let mut bundle: Vec<u8> = Vec::new();
        let mut head: Option<RawRecord> = None;
        let mut bad: Vec<RawRecord> = Vec::new();
        for mut record in framed.by_ref() {
            let line = match &record.error {
                Some(_) => Line::Bad(None),
                None => classify(&record.bytes),
            };
            match line {
                Line::Object(rewritten) => {
                    bundle.push(if head.is_none() { b'[' } else { b',' });
                    bundle.push(b'[');
                    bundle.extend_from_slice(record.provenance.line.to_string().as_bytes());
                    bundle.push(b',');
                    bundle.extend_from_slice(rewritten.as_deref().unwrap_or(&record.bytes));
                    bundle.push(b']');
                    if head.is_none() {
                        record.bytes = Vec::new();
                        head = Some(record);
                    }
                }
                Line::Bad(error) => {
                    if error.is_some() {
                        record.error = error;
                    }
                    bad.push(record);
                }
            }
        }
        let mut records = Vec::with_capacity(bad.len() + 1);
        if let Some(mut head) = head {
            let mut bytes = Vec::with_capacity(bundle.len() + 40);
            bytes.extend_from_slice(b"{\"");
            bytes.extend_from_slice(MARKER.as_bytes());
            bytes.extend_from_slice(b"\":true,\"lines\":");
            bytes.extend_from_slice(&bundle);
            bytes.extend_from_slice(b"]}");
            head.bytes = bytes;
            head.provenance.line = 1;
            head.provenance.index = 0;
            records.push(head);
        }
        for (i, mut r) in bad.into_iter().enumerate() {
            r.provenance.index = i as u64 + 1;
            records.push(r);
        }
        Rollout {
            pending: records.into_iter(),
            bytes: framed.bytes_read(),
        }
    }
}

impl Iterator for Rollout {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        self.pending.next()
    }
}

impl RecordSource for Rollout {
    fn bytes_read(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn records(text: &str) -> Vec<RawRecord> {
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        file.write_all(text.as_bytes()).expect("write");
        let path = file.path().to_string_lossy().into_owned();
        Rollout::open(&path, 1 << 20).expect("open").collect()
    }

    #[test]
    fn objects_are_bundled_with_their_lines_and_other_lines_follow_alone() {
        let text = "{\"type\":\"session_meta\",\"payload\":{\"id\":\"s\"}}\n\n[1]\n{\"a\":{\"b\":1}}\n{\"cut\":";
        let got = records(text);
        assert_eq!(got.len(), 3);
        let bundle: serde_json::Value = serde_json::from_slice(&got[0].bytes).expect("bundle");
        assert_eq!(
            bundle,
            serde_json::json!({"codex_rollout": true, "lines": [
                [1, {"type": "session_meta", "payload": {"id": "s"}}],
                [4, {"a": {"b": 1}}]
            ]})
        );
        assert_eq!(got[1].provenance.line, 3);
        assert!(matches!(got[1].error, Some(FrameError::Invalid(_))));
        assert_eq!(got[2].provenance.line, 5);
        assert_eq!(got[2].provenance.index, 2);
    }

    #[test]
    fn a_duplicate_key_is_a_line_of_its_own_and_no_object_means_no_bundle() {
        let got = records("{\"a\":1,\"a\":2}\n7\n");
        assert_eq!(got.len(), 2);
        assert!(
            matches!(&got[0].error, Some(FrameError::Json(p)) if p.rule == strict::DUPLICATE_KEY)
        );
        assert!(records("").is_empty());
    }
}

//! The reader of a Codex rollout file: every line that is a JSON object goes into one record,
//! `{"codex_rollout": true, "lines": [[LINE, ENTRY], ...]}`, built by copying each line's text
//! (it is not parsed into a value and written again); every other line follows as a record of
//! its own, so it is rejected with its line (a cut last line: `json-truncated`) while the rest
//! of the file still converts.

use crate::formats::bundle::{Classified, FileBundle};
use crate::ingest::{FrameError, FramedRecords};
use crate::json::strict::{self, ParseError};
use crate::json::Shapes;

/// The key that marks a record this reader built.
pub const MARKER: &str = "codex_rollout";

/// What a line is: a JSON object is bundled, as it is or (when only the slow parser read it)
/// rewritten, so that the converter's fast parser reads it; anything else is rejected alone,
/// with the reason when it is known here (bad JSON is left to the converter, which diagnoses it
/// with the exact position).
fn classify(bytes: &[u8]) -> Classified {
    match Shapes::any().parse(bytes) {
        Some(node) if node.is_object() => Ok(None),
        Some(_) => Err(Some(not_an_object())),
        None => match strict::parse_value(bytes) {
            Ok(value) if value.is_object() => Ok(serde_json::to_vec(&value).ok()),
            Ok(_) => Err(Some(not_an_object())),
            Err(ParseError::Rule(p)) => Err(Some(FrameError::Json(Box::new(p)))),
            Err(ParseError::Syntax(_)) => Err(None),
        },
    }
}

fn not_an_object() -> FrameError {
    FrameError::Invalid("each line of a Codex rollout must be a JSON object".into())
}

/// Reads the rollout at `path` (`-` is stdin): the bundle first, then the lines that are not
/// objects.
pub fn open(path: &str, max_record_bytes: usize) -> std::io::Result<FileBundle> {
    let framed = FramedRecords::open(path, max_record_bytes)?;
    let head = format!("{{\"{MARKER}\":true,\"lines\":[");
    Ok(FileBundle::build(
        Vec::new(),
        framed,
        head,
        classify,
        |text, line, bytes| {
            text.push(b'[');
            text.extend_from_slice(line.to_string().as_bytes());
            text.push(b',');
            text.extend_from_slice(bytes);
            text.push(b']');
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::RawRecord;
    use std::io::Write;

    fn records(text: &str) -> Vec<RawRecord> {
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        file.write_all(text.as_bytes()).expect("write");
        let path = file.path().to_string_lossy().into_owned();
        open(&path, 1 << 20).expect("open").collect()
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

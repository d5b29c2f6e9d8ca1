//! Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`): one
//! JSON-lines file per session, one trajectory per file. Lines are `{timestamp, type,
//! payload}` envelopes (`session_meta`, `turn_context`, `response_item`, `event_msg`,
//! `compacted`), or, in rollouts of mid-2025 CLIs, a bare session header followed by bare
//! response items and `record_type: state` markers. Response items are the steps; event
//! messages repeat them for the terminal UI and are kept in details, except the repeats
//! themselves. The mapping is in docs/formats/codex.md.

mod convert;
mod order;
mod rollout;
mod text;

use std::io;

use serde_json::Value;

use crate::convert::{ConvertOptions, Converter, FormatOptions, PartialSink};
use crate::formats::kit::not_a_unit;
use crate::formats::Format;
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::json::{Node, Shapes};
use crate::validate::check::parse_json;
use crate::validate::Diagnostic;

/// Reads Codex CLI rollout files.
pub struct Codex;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &Codex,
    side: None,
};

/// What a record that is not a rollout read by this format's reader gets.
const NOT_A_ROLLOUT: &str =
    "not a Codex rollout (use --from codex on the rollout file, not on one of its lines)";

impl Converter for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn description(&self) -> &'static str {
        "Codex CLI rollout JSONL (~/.codex/sessions/.../rollout-*.jsonl; one file per session)"
    }

    /// A `session_meta` envelope, or the bare session header of older rollouts: an `id` and a
    /// `timestamp` with the header's own `instructions`, or with `originator` and
    /// `cli_version`; or the earliest rollouts' one document, `{session: {id, timestamp, ...},
    /// items: [...]}`.
    fn sniff(&self, first: &Value) -> bool {
        let header = |h: &Value| {
            h.get("type").is_none()
                && h["id"].is_string()
                && h["timestamp"].is_string()
                && (h.get("instructions").is_some()
                    || (h["originator"].is_string() && h["cli_version"].is_string()))
        };
        let envelope = first["type"] == "session_meta" && first["payload"].is_object();
        let document = first.get("type").is_none()
            && first["items"].is_array()
            && first["session"]["id"].is_string()
            && first["session"]["timestamp"].is_string();
        envelope || header(first) || document
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        Some(boxed(rollout::open(path, opts.run.max_record_bytes)))
    }

    fn each_partial(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
        to: &mut PartialSink<'_>,
    ) -> Option<Result<(), Vec<Diagnostic>>> {
        Some(parse(record).and_then(|bundle| to(convert::rollout(&bundle, record)?)))
    }
}

/// The bundle the reader built, or why the record is not one: a line that is not JSON (the
/// reader passes it on alone), or a record given to the converter without its reader.
fn parse(record: &RawRecord) -> Result<Node<'_>, Vec<Diagnostic>> {
    if record.error.is_none() {
        if let Some(node) = Shapes::any().parse(&record.bytes) {
            if node[rollout::MARKER] == Node::Bool(true) {
                return Ok(node);
            }
            return Err(not_a_unit(record, NOT_A_ROLLOUT));
        }
    }
    match parse_json(record) {
        Err(d) => Err(vec![*d]),
        Ok(_) => Err(not_a_unit(record, NOT_A_ROLLOUT)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sniffs_the_session_meta_envelope_and_the_legacy_header_only() {
        let codex = Codex;
        assert!(
            codex.sniff(&json!({"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}))
        );
        assert!(codex.sniff(&json!({"id": "s", "timestamp": "t", "instructions": null})));
        assert!(codex.sniff(
            &json!({"id": "s", "timestamp": "t", "originator": "codex_cli_rs", "cli_version": "0.34.0"})
        ));
        assert!(!codex.sniff(&json!({"id": "s", "timestamp": "t"})));
        assert!(!codex.sniff(&json!({"type": "response_item", "payload": {"type": "message"}})));
        assert!(!codex.sniff(&json!({"type": "session_meta"})));
        assert!(codex.sniff(
            &json!({"session": {"id": "s", "timestamp": "t", "instructions": ""}, "items": []})
        ));
        assert!(!codex.sniff(&json!({"session": {"id": "s"}, "items": []})));
    }
}

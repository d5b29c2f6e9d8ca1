//! Factory Droid sessions (`~/.factory/sessions/<cwd>/<uuid>.jsonl`): one JSON-lines file per
//! session, one trajectory per file. The first line is the `session_start` header (`id`,
//! `title`, `owner`, `version`, `cwd`, ...); the lines after it are `message` rows (`id`,
//! `parentId`, `timestamp`, and an Anthropic Messages API `message`) and Droid's bookkeeping
//! (`todo_state`, `compaction_state`, `agent_turn_outcome`, `session_end`). The conversation
//! is the message rows in file order; their blocks become steps as the `anthropic` reader
//! makes them (`anthropic::steps::build_lines`); the rest is sorted into `details.droid` by
//! `lines.rs`. A `<uuid>.settings.json` beside the file (the model, token usage) is kept too; a
//! directory of sessions is read whole (`dir.rs`). The mapping is in docs/formats/droid.md.

mod dir;
mod lines;

use std::fs;
use std::io;
use std::path::Path;

use serde_json::{json, Map, Value};

use crate::convert::{ConvertOptions, Converter, FormatOptions, Partial, PartialSink};
use crate::formats::anthropic::steps::build_lines;
use crate::formats::bundle::{bundle_node_lines, FileBundle};
use crate::formats::kit::{file_stem, parse_bundle_node, source_node};
use crate::formats::Format;
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::json::Node;
use crate::model::{JsonObject, Trajectory};
use crate::validate::Diagnostic;

/// Reads Factory Droid session files.
pub struct Droid;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &Droid,
    side: None,
};

/// The key marking a record built from a session file.
const MARKER: &str = "droid_session";

/// What a record that is not a session bundle is told.
const NOT_A_SESSION: &str = "not a Droid session (use --from droid on the session file)";

impl Converter for Droid {
    fn name(&self) -> &'static str {
        "droid"
    }

    fn description(&self) -> &'static str {
        "Factory Droid sessions (~/.factory/sessions/): one JSONL file per session, Anthropic-style messages, todo and compaction lines"
    }

    /// The session header: `type: "session_start"` with a string `id` and `cwd` and a numeric
    /// `version`.
    fn sniff(&self, first: &Value) -> bool {
        is_header(first)
    }

    fn decline(&self, first: &Value) -> Option<String> {
        (first["type"] == "session_start" && !is_header(first)).then(|| {
            "the first line is a `session_start` but lacks Droid's string `id` and `cwd` and numeric `version`".to_owned()
        })
    }

    /// A directory of sessions and their sidecars, read whole (`dir.rs`).
    fn claims_path(&self, path: &Path) -> bool {
        dir::sessions(path).is_some()
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        let max = opts.run.max_record_bytes;
        if Path::new(path).is_dir() {
            return Some(dir::records(path, max));
        }
        Some(boxed(FileBundle::open_with(path, max, MARKER, &mut |_| {
            attach_settings(Path::new(path))
        })))
    }

    fn each_partial(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
        to: &mut PartialSink<'_>,
    ) -> Option<Result<(), Vec<Diagnostic>>> {
        let mut slow = None;
        let bundle = parse_bundle_node(record, &mut slow, MARKER, NOT_A_SESSION);
        Some(bundle.and_then(|b| to(to_partial(&b, record)?)))
    }
}

/// True for Droid's `session_start` header.
fn is_header(first: &Value) -> bool {
    first["type"] == "session_start"
        && first["id"].is_string()
        && first["cwd"].is_string()
        && first["version"].is_u64()
}

/// `settings` (or `settings_error`) for the bundle of the session file at `path`: its sidecar
/// `<uuid>.settings.json`, when there is one, parsed.
fn attach_settings(path: &Path) -> Map<String, Value> {
    let mut keys = Map::new();
    let Some(stem) = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".jsonl"))
    else {
        return keys;
    };
    let sidecar = path.with_file_name(format!("{stem}.settings.json"));
    if !sidecar.is_file() {
        return keys;
    }
    match fs::read(&sidecar)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| e.to_string()))
    {
        Ok(settings) => {
            keys.insert("settings".into(), settings);
        }
        Err(e) => {
            keys.insert(
                "settings_error".into(),
                json!(format!("{}: {e}", sidecar.display())),
            );
        }
    }
    keys
}

/// A diagnostic of the whole session.
fn refuse(
    record: &RawRecord,
    id: Option<&str>,
    pointer: &str,
    rule: &str,
    why: &str,
) -> Diagnostic {
    Diagnostic::error(&record.provenance, id, pointer, rule, why)
}

fn to_partial<'a>(
    bundle: &'a Node<'a>,
    record: &'a RawRecord,
) -> Result<Partial<'a>, Vec<Diagnostic>> {
    let numbered: Vec<(u64, &Node)> = bundle_node_lines(bundle).collect();
    let Some((&(_, header), body)) = numbered
        .split_first()
        .filter(|((_, h), _)| h["type"].as_str() == Some("session_start"))
    else {
        return Err(vec![refuse(
            record,
            None,
            "/type",
            "not-a-unit",
            "the first line is not a Droid session_start header: not a Droid session",
        )]);
    };
    let file = record.provenance.file.as_ref();
    let id = match header["id"].as_str().filter(|s| !s.is_empty()) {
        Some(s) => s.to_owned(),
        None if file != "-" => file_stem(file),
        None => {
            return Err(vec![refuse(
                record,
                None,
                "/id",
                "missing-id",
                "the session_start header has no id, and there is no file name to use instead",
            )])
        }
    };
    let sorted = lines::sort(body);
    let built = build_lines(&sorted.messages, &sorted.message_lines, "details.droid").map_err(
        |(pointer, why)| vec![refuse(record, Some(&id), &pointer, "chat-structure", &why)],
    )?;
    if built.content.is_empty() {
        return Err(vec![refuse(
            record,
            Some(&id),
            "",
            "empty-trajectory",
            "its conversation holds no message, call or result that ADP can carry",
        )]);
    }
    let mut left = built.left;
    let droid = sorted.details(
        header,
        bundle,
        &built.first_step,
        built.content.len(),
        built.notes,
        &mut left,
    );
    let mut source = source_node(
        "droid",
        record,
        Node::object([("session_id", header["id"].clone())]),
    );
    left.add_to_node(&mut source);
    Ok(Partial {
        trajectory: Trajectory::new(id, built.content, JsonObject::new()),
        tail: vec![("source", source), ("droid", droid)],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_the_session_start_header_only() {
        let header = json!({"type": "session_start", "id": "u", "title": "t", "owner": "o",
            "version": 2, "cwd": "/w"});
        assert!(Droid.sniff(&header));
        assert!(Droid.decline(&header).is_none());
        for near in [
            json!({"type": "session_start", "id": "u", "title": "t"}),
            json!({"type": "session_start", "id": "u", "cwd": "/w", "version": "2"}),
            json!({"type": "session_start", "session": {"id": "u"}}),
        ] {
            assert!(!Droid.sniff(&near), "{near}");
            assert!(Droid.decline(&near).is_some(), "{near}");
        }
        let pi = json!({"type": "session", "version": 3, "id": "u", "timestamp": "t", "cwd": "/w"});
        assert!(!Droid.sniff(&pi));
        assert!(Droid.decline(&pi).is_none());
    }
}

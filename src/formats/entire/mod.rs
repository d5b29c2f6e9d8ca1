//! Entire checkpoints (entire.io's CLI, `entireio/cli`). Entire keeps the sessions of the coding
//! agents it follows on a git branch of their own (`entire/checkpoints/v1`; earlier
//! `entire/sessions`): a checkpoint at the sharded path `<id[:2]>/<id[2:]>/` of its 12-hex id,
//! each session that contributed to it in a numbered folder `<n>/` holding the agent's own
//! transcript `full.jsonl`, a `metadata.json` naming the agent (`agent`: "Claude Code",
//! "Codex", "Copilot CLI", "Cursor", "Factory AI Droid", "Gemini CLI", "Pi", ...) with the
//! checkpoint and session ids, and `prompt.txt`, `context.md`, `content_hash.txt`. Early
//! checkpoints hold one session's files in the checkpoint folder itself.
//!
//! A session folder is one input: its transcript is read by the named agent's reader (or, for
//! an agent trajkit has no reader named for, the format detected from the transcript), and
//! each trajectory gets the session's metadata in `details.entire`. The mapping is in
//! docs/formats/entire.md.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::convert::{ConvertOptions, Converter, FormatOptions, Partial, PartialSink};
use crate::formats::detect::detect_input;
use crate::formats::kit::not_a_unit;
use crate::formats::{lookup, Format};
use crate::ingest::{boxed, FramedRecords, RawRecord, RecordSource};
use crate::json::Node;
use crate::validate::check::parse_json;
use crate::validate::Diagnostic;

/// Reads Entire checkpoint session folders.
pub struct Entire;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &Entire,
    side: None,
};

/// The agent's transcript in a session folder.
const TRANSCRIPT: &str = "full.jsonl";

/// The session's metadata in a session folder.
const METADATA: &str = "metadata.json";

/// The key marking a record of a session folder: `{<MARKER>: metadata, "reader", "record"}`.
const MARKER: &str = "entire_session";

/// What a record that is not one of a session folder's is told.
const NOT_A_SESSION: &str =
    "not an Entire checkpoint session (use --from entire on a checkpoint's session folder, the one holding full.jsonl and metadata.json)";

/// The readers of the agents Entire names in `metadata.json`'s `agent`.
const AGENTS: &[(&str, &str)] = &[
    ("Claude Code", "claude-code"),
    ("Codex", "codex"),
    ("Copilot CLI", "copilot-cli"),
    ("Cursor", "cursor"),
    ("Factory AI Droid", "droid"),
    ("Gemini CLI", "gemini-cli"),
    ("Pi", "pi"),
];

/// The session metadata of folder `dir`, when `dir` is a session folder: a `full.jsonl` file
/// beside a `metadata.json` that is an object with a string `checkpoint_id`.
fn session_metadata(dir: &Path) -> Option<Value> {
    if !dir.join(TRANSCRIPT).is_file() {
        return None;
    }
    checkpoint_metadata(&dir.join(METADATA))
}

/// The file `path` as Entire's metadata: an object with a string `checkpoint_id`.
fn checkpoint_metadata(path: &Path) -> Option<Value> {
    let text = std::fs::read(path).ok()?;
    let metadata: Value = serde_json::from_slice(&text).ok()?;
    metadata["checkpoint_id"].is_string().then_some(metadata)
}

/// The reader of the session's transcript `transcript`: the one of the agent `metadata` names,
/// unless the transcript is plainly another agent's (detected as another format: early Entire
/// versions named "Gemini CLI" for Claude Code sessions); else the format detected from the
/// transcript.
fn reader_of(metadata: &Value, transcript: &str) -> io::Result<&'static dyn Converter> {
    let agent = metadata["agent"].as_str().unwrap_or_default();
    if let Some((_, name)) = AGENTS.iter().find(|(a, _)| *a == agent) {
        let named = lookup(name).map_err(io::Error::other)?;
        return Ok(match detect_input(transcript) {
            Ok(found) if found.name() != named.name() && found.name() != "adp" => found,
            _ => named,
        });
    }
    detect_input(transcript).map_err(|e| {
        io::Error::other(format!(
            "the Entire session's agent {agent:?} has no reader in trajkit, and its transcript's format is not known: {e}"
        ))
    })
}

impl Converter for Entire {
    fn name(&self) -> &'static str {
        "entire"
    }

    fn description(&self) -> &'static str {
        "Entire checkpoint sessions (<n>/full.jsonl with the metadata.json naming the agent, on an entire/checkpoints/v1 branch): read by the named agent's reader, the session's metadata in details.entire"
    }

    /// Claimed by its folder, never by a record.
    fn sniff(&self, _first: &Value) -> bool {
        false
    }

    /// A checkpoint's session folder: `full.jsonl` beside a `metadata.json` with a
    /// `checkpoint_id`.
    fn claims_path(&self, path: &Path) -> bool {
        path.is_dir() && session_metadata(path).is_some()
    }

    /// A checkpoint's own `metadata.json` (the summary of its sessions, beside the numbered
    /// session folders), or the `metadata.json` of a session folder Entire wrote no
    /// `full.jsonl` in.
    fn beside_conversation(&self, path: &Path) -> Option<&'static str> {
        let dir = path.parent()?;
        if path.file_name()? != METADATA || dir.join(TRANSCRIPT).is_file() {
            return None;
        }
        let metadata = checkpoint_metadata(path)?;
        Some(
            if metadata["sessions"].is_array() || dir.join("0").is_dir() {
                "an Entire checkpoint's summary; its sessions are the numbered folders beside it"
            } else {
                "an Entire checkpoint session with no transcript (no full.jsonl beside its metadata): nothing to convert"
            },
        )
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        Some(open(path, opts))
    }

    fn each_partial(
        &self,
        record: &RawRecord,
        map: &FormatOptions,
        to: &mut PartialSink<'_>,
    ) -> Option<Result<(), Vec<Diagnostic>>> {
        Some(each(record, map, to))
    }
}

/// The records of session folder `dir`: its transcript's, as the agent's reader makes them,
/// each wrapped with the session's metadata and the reader's name.
fn open(input: &str, opts: &ConvertOptions) -> io::Result<Box<dyn RecordSource>> {
    let dir = Path::new(input);
    let Some(metadata) = session_metadata(dir) else {
        return Err(io::Error::other(format!(
            "{}: not an Entire checkpoint session folder (a full.jsonl beside a metadata.json with a checkpoint_id)",
            dir.display()
        )));
    };
    let transcript: PathBuf = dir.join(TRANSCRIPT);
    let transcript = transcript.to_string_lossy().into_owned();
    let reader = reader_of(&metadata, &transcript)?;
    let inner = match reader.open_source(&transcript, opts) {
        Some(source) => source?,
        None => boxed(FramedRecords::open(&transcript, opts.run.max_record_bytes))?,
    };
    let head = serde_json::to_vec(&metadata).map_err(io::Error::other)?;
    boxed(Ok(Wrapped {
        inner,
        head,
        reader: reader.name(),
        input: Arc::from(input),
    }))
}

/// A session's records, wrapped: `{"entire_session": <metadata>, "reader": <name>, "record":
/// <the record>}`; a record that could not be framed passes as it is (it is rejected with its
/// line). Each is the session folder's input (the transcript's file stays its `file`).
struct Wrapped {
    inner: Box<dyn RecordSource>,
    head: Vec<u8>,
    reader: &'static str,
    input: Arc<str>,
}

impl Iterator for Wrapped {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        let mut record = self.inner.next()?;
        record.provenance.input = Arc::clone(&self.input);
        if record.error.is_none() {
            let mut bytes = Vec::with_capacity(record.bytes.len() + self.head.len() + 64);
            bytes.extend_from_slice(b"{\"");
            bytes.extend_from_slice(MARKER.as_bytes());
            bytes.extend_from_slice(b"\":");
            bytes.extend_from_slice(&self.head);
            bytes.extend_from_slice(b",\"reader\":\"");
            bytes.extend_from_slice(self.reader.as_bytes());
            bytes.extend_from_slice(b"\",\"record\":");
            bytes.extend_from_slice(&record.bytes);
            bytes.push(b'}');
            record.bytes = bytes;
        }
        Some(record)
    }
}

impl RecordSource for Wrapped {
    fn bytes_read(&self) -> u64 {
        self.inner.bytes_read()
    }
}

/// A wrapped record, its parts borrowed.
#[derive(Deserialize)]
struct Parts<'a> {
    #[serde(borrow, rename = "entire_session")]
    metadata: &'a RawValue,
    reader: &'a str,
    #[serde(borrow)]
    record: &'a RawValue,
}

/// Why a record did not parse as a wrapped one: when it is one whose agent's record is not JSON
/// (two objects written on one line, a cut line), what the agent's record itself breaks, at
/// its line; else it is no record of a session folder.
fn unwrapped_problem(record: &RawRecord) -> Vec<Diagnostic> {
    let Some(bytes) = agent_bytes(&record.bytes) else {
        return not_a_unit(record, NOT_A_SESSION);
    };
    let inner = RawRecord {
        provenance: record.provenance.clone(),
        bytes: bytes.to_vec(),
        error: None,
    };
    match parse_json(&inner) {
        Err(d) => vec![*d],
        Ok(_) => not_a_unit(record, NOT_A_SESSION),
    }
}

/// The agent's record in `wrapped`, laid out as [`Wrapped`] writes it: `{"entire_session":`,
/// the metadata, `,"reader":"<name>","record":`, the record, `}`.
fn agent_bytes(wrapped: &[u8]) -> Option<&[u8]> {
    let head = format!("{{\"{MARKER}\":");
    let rest = wrapped.strip_prefix(head.as_bytes())?;
    let mut metadata = serde_json::Deserializer::from_slice(rest).into_iter::<IgnoredAny>();
    metadata.next()?.ok()?;
    let rest = rest
        .get(metadata.byte_offset()..)?
        .strip_prefix(b",\"reader\":\"")?;
    let name_end = rest.iter().position(|&b| b == b'"')?;
    let rest = rest.get(name_end..)?.strip_prefix(b"\",\"record\":")?;
    rest.strip_suffix(b"}")
}

/// Converts a wrapped record with its agent's reader, each trajectory's details getting
/// `entire`: the session's metadata and the reader.
fn each(
    record: &RawRecord,
    map: &FormatOptions,
    to: &mut PartialSink<'_>,
) -> Result<(), Vec<Diagnostic>> {
    let parts: Parts =
        serde_json::from_slice(&record.bytes).map_err(|_| unwrapped_problem(record))?;
    let reader = lookup(parts.reader).map_err(|_| not_a_unit(record, NOT_A_SESSION))?;
    let metadata: Value = serde_json::from_str(parts.metadata.get())
        .map_err(|_| not_a_unit(record, NOT_A_SESSION))?;
    let inner = RawRecord {
        provenance: record.provenance.clone(),
        bytes: parts.record.get().as_bytes().to_vec(),
        error: None,
    };
    let mut details = metadata;
    if let Some(o) = details.as_object_mut() {
        o.insert("reader".into(), parts.reader.into());
    }
    let entire = Node::from(details);
    let mut forward = |mut p: Partial<'_>| {
        p.tail.push(("entire", entire.clone()));
        to(p)
    };
    match reader.each_partial(&inner, map, &mut forward) {
        Some(done) => done,
        None => {
            for (trajectory, _) in reader.convert(&inner, map)? {
                forward(Partial {
                    trajectory,
                    tail: Vec::new(),
                })?;
            }
            Ok(())
        }
    }
}

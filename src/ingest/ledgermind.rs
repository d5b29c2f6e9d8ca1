//! Reading LedgerMind memory events (an `episodic.db` SQLite file or JSON lines of
//! `MemoryEvent` objects) and cutting them into sessions, one record per session.
//!
//! Events are ordered by timestamp, then by row id (SQLite) or line (JSON lines). An event with
//! `context.session_id` belongs to that session, wherever it falls; the others form implicit
//! sessions, cut at each `prompt` event and after an idle gap (default 30 minutes). Semantic
//! events (see [`SEMANTIC_KINDS`]) are not steps: each is attached to the sessions holding the
//! events it cites (`context` keys in [`CITATION_KEYS`]), else to the session of the event
//! before it. The whole input is read before the first session is emitted (sessions can
//! interleave), so memory grows with the number of events, which are small.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, NaiveDateTime};
use rusqlite::{Connection, OpenFlags};
use serde_json::{json, Value};

use rayon::prelude::*;

use super::{FrameError, FramedRecords, Provenance, RawRecord, RecordSource};

/// Event kinds that record knowledge rather than a step of work.
pub const SEMANTIC_KINDS: &[&str] = &[
    "decision",
    "proposal",
    "reflection_summary",
    "reflection",
    "insight",
    "constraint",
    "assumption",
];

/// `context` keys listing the ids of the events a semantic event is about.
pub const CITATION_KEYS: &[&str] = &["event_ids", "evidence_ids", "source_event_ids", "cites"];

/// Checks one event read from JSON lines; returns what is wrong with it (empty when fine).
pub type EventCheck<'a> = &'a (dyn Fn(&Value) -> Vec<String> + Sync);

/// How events are cut into sessions.
#[derive(Debug, Clone, Copy)]
pub struct SessionOptions {
    /// A gap longer than this between two events starts a new implicit session.
    pub idle_gap_seconds: i64,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            idle_gap_seconds: 30 * 60,
        }
    }
}

/// True when the file at `path` starts with SQLite's header.
pub fn is_sqlite(path: &Path) -> bool {
    let mut head = [0u8; 16];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == b"SQLite format 3\0")
}

/// An event: its JSON text, where it came from, and what sessions are cut by (read once, so
/// the events of a large store take little more memory than their text).
struct Event {
    raw: Box<[u8]>,
    line: u64,
    kind: Box<str>,
    timestamp: Box<str>,
    id: Box<str>,
    session_id: Option<Box<str>>,
    cited: Vec<String>,
}

impl Event {
    /// The event `value`, whose JSON text is `raw`.
    fn new(value: &Value, raw: Vec<u8>, line: u64) -> Event {
        let text = |v: &Value| v.as_str().unwrap_or_default().into();
        let context = &value["context"];
        Event {
            raw: raw.into_boxed_slice(),
            line,
            kind: text(&value["kind"]),
            timestamp: text(&value["timestamp"]),
            // Its row id, else its `id` field, else `line-N`.
            id: match &value["id"] {
                Value::Number(n) => n.to_string().into(),
                Value::String(s) => s.as_str().into(),
                _ => format!("line-{line}").into(),
            },
            session_id: match &context["session_id"] {
                Value::String(s) if !s.is_empty() => Some(s.as_str().into()),
                Value::Number(n) => Some(n.to_string().into()),
                _ => None,
            },
            cited: CITATION_KEYS
                .iter()
                .filter_map(|k| context[*k].as_array())
                .flatten()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect(),
        }
    }
}

/// Seconds since the epoch of an ISO 8601 timestamp, with or without an offset (a timestamp
/// without one is taken as UTC).
fn seconds(ts: &str) -> Option<i64> {
    if let Ok(t) = DateTime::parse_from_rfc3339(ts) {
        return Some(t.timestamp());
    }
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(ts, f).ok())
        .map(|t| t.and_utc().timestamp())
}

/// Reads the `events` table of a SQLite file, read-only and without touching its WAL.
fn read_sqlite(path: &Path) -> rusqlite::Result<Vec<Event>> {
    let uri = format!("file:{}?mode=ro&immutable=1", path.display());
    let conn = Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
    )?;
    let mut stmt = conn.prepare(
        "SELECT id, source, kind, content, context, timestamp, status, linked_id, link_strength \
         FROM events ORDER BY timestamp, id",
    )?;
    let rows = stmt.query_map([], |r| {
        let id: i64 = r.get(0)?;
        let context: Option<String> = r.get(4)?;
        let context = context
            .as_deref()
            .map(|c| {
                serde_json::from_str::<Value>(c).unwrap_or_else(|_| Value::String(c.to_owned()))
            })
            .unwrap_or(json!({}));
        let value = json!({
            "id": id,
            "source": r.get::<_, Option<String>>(1)?,
            "kind": r.get::<_, Option<String>>(2)?,
            "content": r.get::<_, Option<String>>(3)?,
            "context": context,
            "timestamp": r.get::<_, Option<String>>(5)?,
            "status": r.get::<_, Option<String>>(6)?,
            "linked_id": r.get::<_, Option<String>>(7)?,
            "link_strength": r.get::<_, Option<f64>>(8)?,
        });
        // A `Value` always serializes.
        let raw = serde_json::to_vec(&value).unwrap_or_default();
        Ok(Event::new(&value, raw, u64::try_from(id).unwrap_or(0)))
    })?;
    rows.collect()
}

/// The records of a LedgerMind input: one per session, then one per unreadable line.
pub struct SessionRecords {
    pending: std::vec::IntoIter<RawRecord>,
    bytes: u64,
}

impl SessionRecords {
    /// Reads `path` (a SQLite file, or JSON lines) and cuts it into sessions. A SQLite file
    /// that cannot be read becomes one rejected record, so other inputs still convert; a JSON
    /// line that `check` finds wrong is a record of its own, rejected with its line.
    pub fn open(
        path: &str,
        opts: SessionOptions,
        max_record_bytes: usize,
        check: EventCheck<'_>,
    ) -> io::Result<Self> {
        let input: Arc<str> = Arc::from(path);
        let mut bad = Vec::new();
        let mut events = Vec::new();
        let bytes;
        if path != "-" && is_sqlite(Path::new(path)) {
            bytes = std::fs::metadata(path).map_or(0, |m| m.len());
            match read_sqlite(Path::new(path)) {
                Ok(e) => events = e,
                Err(e) => bad.push(RawRecord {
                    provenance: Provenance {
                        input: input.clone(),
                        file: input.clone(),
                        line: 1,
                        index: 0,
                    },
                    bytes: Vec::new(),
                    error: Some(FrameError::Read(format!(
                        "cannot read the SQLite events table: {e}"
                    ))),
                }),
            }
        } else {
            let mut framed = FramedRecords::open(path, max_record_bytes)?;
            let records: Vec<RawRecord> = framed.by_ref().collect();
            bytes = framed.bytes_read();
            // Parsing and checking are per event: in parallel, in input order.
            let read: Vec<Result<Event, RawRecord>> = records
                .into_par_iter()
                .map(|r| read_event(r, check))
                .collect();
            for r in read {
                match r {
                    Ok(e) => events.push(e),
                    Err(record) => bad.push(record),
                }
            }
            events.sort_by(|a, b| a.timestamp.cmp(&b.timestamp).then(a.line.cmp(&b.line)));
        }
        let mut records = sessions(&events, opts, &input);
        let start = records.len() as u64;
        for (i, mut r) in bad.into_iter().enumerate() {
            r.provenance.index = start + i as u64;
            records.push(r);
        }
        Ok(SessionRecords {
            pending: records.into_iter(),
            bytes,
        })
    }
}

/// One JSON-lines event, checked; a record that is not a valid event comes back with its
/// error set (or as it was, when it could not be framed or parsed).
fn read_event(mut record: RawRecord, check: EventCheck<'_>) -> Result<Event, RawRecord> {
    if record.error.is_some() {
        return Err(record);
    }
    let Ok(value) = serde_json::from_slice::<Value>(&record.bytes) else {
        return Err(record);
    };
    let problems = if value.is_object() {
        check(&value)
    } else {
        vec!["a LedgerMind event must be a JSON object".to_owned()]
    };
    if !problems.is_empty() {
        record.error = Some(FrameError::Invalid(problems.join("; ")));
        return Err(record);
    }
    let line = record.provenance.line;
    Ok(Event::new(&value, record.bytes, line))
}

struct Session<'a> {
    key: String,
    explicit: bool,
    events: Vec<&'a Event>,
    semantic: Vec<&'a Event>,
}

fn sessions(events: &[Event], opts: SessionOptions, input: &Arc<str>) -> Vec<RawRecord> {
    let mut out: Vec<Session<'_>> = Vec::new();
    let mut by_key: HashMap<String, usize> = HashMap::new();
    let mut by_event: HashMap<&str, usize> = HashMap::new();
    let mut implicit: Option<usize> = None;
    let mut last_implicit: Option<i64> = None;
    let mut last_session: Option<usize> = None;
    let mut semantic: Vec<(&Event, Option<usize>)> = Vec::new();
    for e in events {
        if SEMANTIC_KINDS.contains(&&*e.kind) {
            semantic.push((e, last_session));
            continue;
        }
        let index = match &e.session_id {
            Some(sid) => *by_key.entry(sid.to_string()).or_insert_with(|| {
                out.push(Session {
                    key: sid.to_string(),
                    explicit: true,
                    events: Vec::new(),
                    semantic: Vec::new(),
                });
                out.len() - 1
            }),
            None => {
                let now = seconds(&e.timestamp);
                let gap = match (last_implicit, now) {
                    (Some(a), Some(b)) => b - a > opts.idle_gap_seconds,
                    _ => false,
                };
                if implicit.is_none() || &*e.kind == "prompt" || gap {
                    out.push(Session {
                        key: format!("session-{}", e.id),
                        explicit: false,
                        events: Vec::new(),
                        semantic: Vec::new(),
                    });
                    implicit = Some(out.len() - 1);
                }
                last_implicit = now.or(last_implicit);
                implicit.unwrap_or_default()
            }
        };
        out[index].events.push(e);
        by_event.insert(&*e.id, index);
        last_session = Some(index);
    }
    for (e, before) in semantic {
        let mut targets: Vec<usize> = e
            .cited
            .iter()
            .filter_map(|id| by_event.get(id.as_str()).copied())
            .collect();
        targets.sort_unstable();
        targets.dedup();
        if targets.is_empty() {
            targets.extend(before.or((!out.is_empty()).then_some(0)));
        }
        for t in targets {
            out[t].semantic.push(e);
        }
    }
    out.into_iter()
        .enumerate()
        .map(|(index, s)| {
            let line = s.events.first().map_or(1, |e| e.line);
            RawRecord {
                provenance: Provenance {
                    input: input.clone(),
                    file: input.clone(),
                    line,
                    index: index as u64,
                },
                bytes: bundle(&s),
                error: None,
            }
        })
        .collect()
}

/// The record of a session: `{"ledgermind_session": true, "key", "explicit", "events",
/// "semantic"}`, the events as their JSON text.
fn bundle(s: &Session<'_>) -> Vec<u8> {
    fn list(out: &mut Vec<u8>, events: &[&Event]) {
        out.push(b'[');
        for (i, e) in events.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&e.raw);
        }
        out.push(b']');
    }
    let size: usize = s
        .events
        .iter()
        .chain(&s.semantic)
        .map(|e| e.raw.len() + 1)
        .sum();
    let mut out = Vec::with_capacity(size + s.key.len() + 96);
    out.extend_from_slice(b"{\"ledgermind_session\":true,\"key\":");
    // A string always serializes.
    let _ = serde_json::to_writer(&mut out, &s.key);
    out.extend_from_slice(if s.explicit {
        b",\"explicit\":true,\"events\":"
    } else {
        b",\"explicit\":false,\"events\":"
    });
    list(&mut out, &s.events);
    out.extend_from_slice(b",\"semantic\":");
    list(&mut out, &s.semantic);
    out.push(b'}');
    out
}

impl Iterator for SessionRecords {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        self.pending.next()
    }
}

impl RecordSource for SessionRecords {
    fn bytes_read(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_with_and_without_offsets() {
        assert_eq!(seconds("1970-01-01T00:01:00Z"), Some(60));
        assert_eq!(seconds("1970-01-01T00:01:00"), Some(60));
        assert_eq!(seconds("1970-01-01 00:01:00.250"), Some(60));
        assert_eq!(seconds("1970-01-01T01:01:00+01:00"), Some(60));
        assert_eq!(seconds("yesterday"), None);
    }
}

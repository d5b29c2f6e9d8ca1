//! Reading LedgerMind memory events (an `episodic.db` SQLite file or JSON lines of
//! `MemoryEvent` objects) and cutting them into sessions, one record per session.
//!
//! Events are ordered by timestamp, then by row id (SQLite) or line (JSON lines). An event with
//! `context.session_id` belongs to that session, wherever it falls; the others form implicit
//! sessions, cut at each `prompt` event and after an idle gap (default 30 minutes). Semantic
//! events (see [`SEMANTIC_KINDS`]) are not steps: each is attached to the sessions holding the
//! events it cites (`context` keys in [`CITATION_KEYS`]), else to the session of the event
//! before it.
//!
//! Sessions can interleave, so the whole input is indexed before the first session is emitted,
//! but only the index is held: per event, where its text is and what sessions are cut by (its
//! timestamp, id, session id, kind). Each session's events are read back when it is emitted:
//! from the input file itself when it is a plain file, else from a copy kept in memory (stdin,
//! a compressed input, a SQLite table).
//!
//! Holding this index rather than the parsed events took the peak memory of converting the
//! 268 MB LedgerMind bench input from 1.1 GB to 335-367 MB (the input is read whole before the
//! first session is emitted, so without it memory grows with the input).

use std::fs::File;
use std::hash::BuildHasher;
use std::io;
use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, NaiveDateTime};
use foldhash::{HashMap, HashSet};
use rayon::prelude::*;
use serde_json::{json, Value};

use crate::ingest::open::{self, is_plain_file};
use crate::ingest::sqlite::{is_sqlite, open_store};
use crate::ingest::{layout_hint, Frame, FrameError, Framer, Provenance, RawRecord, RecordSource};
use crate::json::strict::{self, ParseError};
use crate::json::{Node, Shapes};

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

/// How events read from JSON lines are checked.
#[derive(Clone, Copy)]
pub struct EventCheck<'a> {
    /// Compiled checks of the event schema: an event they accept is valid and is read without
    /// building a `Value`; `None` sends every event to `problems`.
    pub fast: Option<&'a Shapes>,
    /// What is wrong with an event `fast` did not accept (empty when it is fine).
    pub problems: &'a (dyn Fn(&Value) -> Vec<String> + Sync),
}

/// How events are cut into sessions (made from the format's options by [`super::sessions`]).
#[derive(Debug, Clone, Copy)]
pub struct SessionOptions {
    /// A gap longer than this between two events starts a new implicit session.
    pub idle_gap_seconds: i64,
    /// A `prompt` event without a session id starts a new implicit session (else only the
    /// idle gap cuts them).
    pub cut_at_prompt: bool,
}

/// What sessions are cut by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Prompt,
    Semantic,
    Other,
}

/// One event of the index: where its text is, and its fields, as spans of the index's string
/// arena (timestamp, id, then session id, one after the other).
struct Event {
    offset: u64,
    len: u32,
    line: u64,
    strings: usize,
    timestamp_len: u32,
    id_len: u32,
    /// `u32::MAX` when the event has no session id.
    session_len: u32,
    kind: Kind,
    /// Seconds since the epoch of its timestamp, when it reads as one.
    seconds: Option<i64>,
    /// 1 + its entry in [`Index::citations`] (a semantic event citing others), else 0.
    cited: u32,
}

/// The events of an input and the strings they are cut by.
#[derive(Default)]
struct Index {
    events: Vec<Event>,
    strings: String,
    citations: Vec<Vec<String>>,
}

impl Index {
    /// Adds the event `value` whose text is `len` bytes at `offset`; `None` when an index
    /// field would not fit (an event or field over 4 GiB).
    fn push(&mut self, value: &Node<'_>, offset: u64, len: usize, line: u64) -> Option<()> {
        let strings = self.strings.len();
        let added = self.push_fields(value, offset, len, line);
        if added.is_none() {
            self.strings.truncate(strings);
        }
        added
    }

    /// [`Index::push`], the event's fields written straight into the arena: its timestamp,
    /// its id (its row id, else its `id` field, else `line-N`) and its session id, each read
    /// as a `Value` of the event would read it.
    fn push_fields(&mut self, value: &Node<'_>, offset: u64, len: usize, line: u64) -> Option<()> {
        use std::fmt::Write;
        let kind = match value["kind"].as_str().unwrap_or_default() {
            k if SEMANTIC_KINDS.contains(&k) => Kind::Semantic,
            "prompt" => Kind::Prompt,
            _ => Kind::Other,
        };
        let timestamp = value["timestamp"].as_str().unwrap_or_default();
        let strings = self.strings.len();
        self.strings.push_str(timestamp);
        let id_at = self.strings.len();
        // Writing to a `String` cannot fail.
        let _ = match &value["id"] {
            Node::Number(n) => write!(self.strings, "{n}"),
            Node::String(s) => self.strings.write_str(s),
            _ => write!(self.strings, "line-{line}"),
        };
        let session_at = self.strings.len();
        let has_session = match &value["context"]["session_id"] {
            Node::String(s) if !s.is_empty() => self.strings.write_str(s).is_ok(),
            Node::Number(n) => write!(self.strings, "{n}").is_ok(),
            _ => false,
        };
        let span = |n: usize| u32::try_from(n).ok().filter(|&n| n != u32::MAX);
        let (len, timestamp_len, id_len) = (
            u32::try_from(len).ok()?,
            span(timestamp.len())?,
            span(session_at - id_at)?,
        );
        let session_len = match has_session {
            true => span(self.strings.len() - session_at)?,
            false => u32::MAX,
        };
        let cited = match kind {
            Kind::Semantic => {
                self.citations.push(cited(value));
                u32::try_from(self.citations.len()).ok()?
            }
            _ => 0,
        };
        self.events.push(Event {
            offset,
            len,
            line,
            strings,
            timestamp_len,
            id_len,
            session_len,
            kind,
            // Only implicit sessions are cut by time.
            seconds: match (has_session, kind) {
                (false, Kind::Prompt | Kind::Other) => seconds(timestamp),
                _ => None,
            },
            cited,
        });
        Some(())
    }

    fn text(&self, at: usize, len: u32) -> &str {
        self.strings.get(at..at + len as usize).unwrap_or_default()
    }

    fn timestamp(&self, e: &Event) -> &str {
        self.text(e.strings, e.timestamp_len)
    }

    fn id(&self, e: &Event) -> &str {
        self.text(e.strings + e.timestamp_len as usize, e.id_len)
    }

    fn session_id(&self, e: &Event) -> Option<&str> {
        (e.session_len != u32::MAX).then(|| {
            self.text(
                e.strings + e.timestamp_len as usize + e.id_len as usize,
                e.session_len,
            )
        })
    }

    fn cited(&self, e: &Event) -> &[String] {
        match e.cited.checked_sub(1) {
            Some(i) => self.citations.get(i as usize).map_or(&[], Vec::as_slice),
            None => &[],
        }
    }

    /// Adds the events of another index.
    fn append(&mut self, mut other: Index) {
        let strings = self.strings.len();
        let citations = self.citations.len() as u32;
        self.events.extend(other.events.drain(..).map(|e| Event {
            strings: e.strings + strings,
            cited: if e.cited > 0 { e.cited + citations } else { 0 },
            ..e
        }));
        self.strings.push_str(&other.strings);
        self.citations.append(&mut other.citations);
    }

    /// Makes room for the events of `total` input bytes when those indexed so far came from
    /// `done` bytes, so that a large index is sized once rather than grown (each growth copies
    /// it and touches fresh pages, which cost more than checking the events on two cores).
    /// Only address space is taken until events fill it; when even that is refused (an
    /// estimate far off, from small first events), the index grows as it would have.
    fn reserve_for(&mut self, done: u64, total: u64) {
        let Some(scale) = (done > 0).then(|| total as f64 / done as f64) else {
            return;
        };
        // An eighth over the estimate, so that a file of slightly larger events still fits.
        let grow = |len: usize| ((len as f64 * scale * 1.125) as usize).saturating_sub(len);
        let _ = self.events.try_reserve_exact(grow(self.events.len()));
        let _ = self.strings.try_reserve_exact(grow(self.strings.len()));
    }
}

/// The ids an event cites.
fn cited(value: &Node<'_>) -> Vec<String> {
    CITATION_KEYS
        .iter()
        .filter_map(|k| value["context"][*k].as_array())
        .flatten()
        .map(|v| match v {
            Node::String(s) => s.to_string(),
            other => other.to_string(),
        })
        .collect()
}

/// Seconds since the epoch of an ISO 8601 timestamp, with or without an offset (a timestamp
/// without one is taken as UTC).
fn seconds(ts: &str) -> Option<i64> {
    if let Some(t) = plain_seconds(ts) {
        return Some(t);
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(ts) {
        return Some(t.timestamp());
    }
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(ts, f).ok())
        .map(|t| t.and_utc().timestamp())
}

/// [`seconds`] of the usual timestamp without an offset, `YYYY-MM-DD[T ]hh:mm:ss[.f]` (1 to 9
/// fraction digits), read without chrono's format parser; `None` for any other text, which
/// `seconds` then reads the general way.
fn plain_seconds(ts: &str) -> Option<i64> {
    let b = ts.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<u32> {
        b.get(range)?.iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let fraction = b.get(19..).unwrap_or_default();
    let fraction_ok = match fraction {
        [] => true,
        [b'.', rest @ ..] => (1..=9).contains(&rest.len()) && rest.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    let shape_ok = b.len() >= 19
        && b[4] == b'-'
        && b[7] == b'-'
        && (b[10] == b'T' || b[10] == b' ')
        && b[13] == b':'
        && b[16] == b':';
    if !(shape_ok && fraction_ok) {
        return None;
    }
    let date = chrono::NaiveDate::from_ymd_opt(
        i32::try_from(digits(0..4)?).ok()?,
        digits(5..7)?,
        digits(8..10)?,
    )?;
    let time = date.and_hms_opt(digits(11..13)?, digits(14..16)?, digits(17..19)?)?;
    Some(time.and_utc().timestamp())
}

/// Where the events' texts are read back from.
enum Texts {
    /// The input file, at the events' offsets.
    File(File),
    /// A copy, at the events' offsets in it.
    Memory(Vec<u8>),
}

impl Texts {
    /// Appends the `len` bytes at `offset` to `out`.
    fn read(&self, offset: u64, len: usize, out: &mut Vec<u8>) -> io::Result<()> {
        match self {
            Texts::Memory(bytes) => {
                let text = usize::try_from(offset)
                    .ok()
                    .and_then(|at| bytes.get(at..at.checked_add(len)?))
                    .ok_or_else(|| io::Error::other("event text out of range"))?;
                out.extend_from_slice(text);
                Ok(())
            }
            Texts::File(file) => {
                let start = out.len();
                out.resize(start + len, 0);
                read_at(file, &mut out[start..], offset)
            }
        }
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(not(unix))]
fn read_at(mut file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(buf)
}

/// Reads the `events` table of a SQLite file (see `open_store`) into an index whose texts
/// are the rows as JSON objects.
fn read_sqlite(path: &Path) -> rusqlite::Result<(Index, Vec<u8>)> {
    let mut copy = None;
    let conn = open_store(path, &mut copy)?;
    let mut stmt = conn.prepare(
        "SELECT id, source, kind, content, context, timestamp, status, linked_id, link_strength \
         FROM events ORDER BY timestamp, id",
    )?;
    let mut rows = stmt.query([])?;
    let mut index = Index::default();
    let mut texts = Vec::new();
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        let context: Option<String> = r.get(4)?;
        let context = context
            .as_deref()
            .map(|c| {
                // Text that is not JSON, or JSON that would lose data read as a `Value` (a
                // duplicate key, an integer past 64 bits), is kept as the text it is.
                strict::parse_value(c.as_bytes()).unwrap_or_else(|_| Value::String(c.to_owned()))
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
        let offset = texts.len();
        // A `Value` always serializes.
        let _ = serde_json::to_writer(&mut texts, &value);
        let len = texts.len() - offset;
        let line = u64::try_from(id).unwrap_or(0);
        if index
            .push(&Node::from_value(&value), offset as u64, len, line)
            .is_none()
        {
            return Err(rusqlite::Error::ToSqlConversionFailure(
                format!("event {id} is too large").into(),
            ));
        }
    }
    Ok((index, texts))
}

/// Frames per batch checked in parallel while JSON lines are indexed.
const BATCH_FRAMES: usize = 16_384;
/// Frames per parallel task.
const CHUNK_FRAMES: usize = 256;

/// What indexing JSON lines gives: the index, a copy of the events' texts when the input is not
/// a plain file (they are read back from the file otherwise), the bytes read, and the frames
/// that are not valid events, in input order.
struct Lines {
    index: Index,
    copy: Option<Vec<u8>>,
    bytes: u64,
    bad: Vec<RawRecord>,
}

/// Indexes the events of JSON lines at `path`.
fn read_lines(
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
    fn add(&mut self, frames: &[Frame], parts: Vec<Part>, size: Option<u64>) {
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
struct Part {
    index: Index,
    /// Which frames they are.
    kept: Vec<usize>,
    /// The frames that are not valid events, as records: with their error, or as they were
    /// when they are not JSON (so converting them diagnoses the syntax).
    bad: Vec<RawRecord>,
}

/// Indexes the events among `frames`.
fn index_frames(frames: &[Frame], check: EventCheck<'_>, input: &Arc<str>) -> Part {
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
fn slow_check(bytes: &[u8], check: EventCheck<'_>) -> Result<Value, Option<FrameError>> {
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

/// The sessions of an input. Each session's key, events and attached semantic events are
/// ranges of lists shared by all of them, ending where the next session's begin: cutting
/// writes a few lists front to back rather than a record and two lists per session (the
/// stores into fresh memory were most of the cutting's time).
#[derive(Default)]
struct Sessions {
    heads: Vec<Head>,
    /// The sessions' keys, one after the other.
    keys: String,
    /// The positions of the sessions' events in the index, session after session.
    events: Vec<u32>,
    /// The positions of the semantic events attached to them, session after session.
    semantic: Vec<u32>,
}

/// Where a session's parts end in the lists of [`Sessions`].
#[derive(Debug, Clone, Copy, Default)]
struct Head {
    key_end: usize,
    events_end: u32,
    semantic_end: u32,
    explicit: bool,
}

/// A session: its key, whether it was named by the events, and its events and the semantic
/// events attached to it (positions in the index).
#[derive(Debug, Clone, Copy)]
struct Session<'a> {
    key: &'a str,
    explicit: bool,
    events: &'a [u32],
    semantic: &'a [u32],
}

impl Sessions {
    fn len(&self) -> usize {
        self.heads.len()
    }

    /// The heads of session `i` and of the one before it (where `i`'s parts start).
    fn bounds(&self, i: usize) -> Option<(Head, Head)> {
        let head = *self.heads.get(i)?;
        let before = match i.checked_sub(1) {
            Some(b) => *self.heads.get(b)?,
            None => Head::default(),
        };
        Some((before, head))
    }

    /// Session `i`.
    fn get(&self, i: usize) -> Option<Session<'_>> {
        let (before, head) = self.bounds(i)?;
        let span = |from: u32, to: u32| from as usize..to as usize;
        Some(Session {
            key: self.keys.get(before.key_end..head.key_end)?,
            explicit: head.explicit,
            events: self.events.get(span(before.events_end, head.events_end))?,
            semantic: self
                .semantic
                .get(span(before.semantic_end, head.semantic_end))?,
        })
    }

    /// The key of session `i` (empty when there is no such session).
    fn key(&self, i: usize) -> &str {
        self.bounds(i)
            .and_then(|(before, head)| self.keys.get(before.key_end..head.key_end))
            .unwrap_or_default()
    }

    /// Starts a session whose key is `key` (written by `write`, which cannot fail).
    fn start(&mut self, explicit: bool, write: impl FnOnce(&mut String)) -> usize {
        write(&mut self.keys);
        self.heads.push(Head {
            key_end: self.keys.len(),
            explicit,
            ..Head::default()
        });
        self.heads.len() - 1
    }

    /// Fills each session's list of `entries` (`ends` of its heads): `members` are
    /// (session, position) pairs in position order, and each list keeps that order.
    fn fill(
        heads: &mut [Head],
        list: &mut Vec<u32>,
        members: &[(u32, u32)],
        end: fn(&mut Head) -> &mut u32,
    ) {
        // A counting sort by session: each session's count, where its list ends, then each
        // position placed (from the end, so the order is kept).
        for &(s, _) in members {
            *end(&mut heads[s as usize]) += 1;
        }
        let mut total = 0u32;
        for head in heads.iter_mut() {
            total += *end(head);
            *end(head) = total;
        }
        list.clear();
        list.resize(members.len(), 0);
        let mut next: Vec<u32> = heads.iter_mut().map(|h| *end(h)).collect();
        for &(s, position) in members.iter().rev() {
            let slot = &mut next[s as usize];
            *slot -= 1;
            list[*slot as usize] = position;
        }
    }
}

/// The explicit sessions met so far, by the hash of their id: the last few looked at first,
/// then a table of all of them. Events of a session usually come close together, and the
/// table is large: a lookup there is a cache miss, one in the last few is not.
#[derive(Default)]
struct SessionTable {
    /// (hash, session) of the sessions last found or added, the newest at `next - 1`.
    recent: [Option<(u64, usize)>; RECENT_SESSIONS],
    next: usize,
    table: hashbrown::HashTable<(u64, usize)>,
}

/// How many sessions [`SessionTable`] looks at before its table.
const RECENT_SESSIONS: usize = 8;

impl SessionTable {
    /// The session whose id hashes to `hash` and for which `is_it` holds.
    fn find(&mut self, hash: u64, is_it: impl Fn(usize) -> bool) -> Option<usize> {
        let recent = self.recent.iter().flatten();
        if let Some(&(_, s)) = recent.clone().find(|&&(h, s)| h == hash && is_it(s)) {
            return Some(s);
        }
        let &(_, s) = self.table.find(hash, |&(h, s)| h == hash && is_it(s))?;
        self.remember(hash, s);
        Some(s)
    }

    /// Adds session `s`, whose id hashes to `hash` (and is not in the table yet).
    fn add(&mut self, hash: u64, s: usize) {
        self.table.insert_unique(hash, (hash, s), |&(h, _)| h);
        self.remember(hash, s);
    }

    fn remember(&mut self, hash: u64, s: usize) {
        self.recent[self.next % RECENT_SESSIONS] = Some((hash, s));
        self.next += 1;
    }
}

/// Cuts the events of `index` (in order) into sessions.
fn sessions(index: &Index, opts: SessionOptions) -> Sessions {
    // Only the ids semantic events cite are looked up.
    let mut cited: HashSet<&str> = HashSet::default();
    cited.reserve(index.citations.iter().map(Vec::len).sum());
    cited.extend(index.citations.iter().flatten().map(String::as_str));
    // Looked up apart from the cutting, and in parallel: each lookup is a cache miss, and
    // misses that do not wait on each other overlap. Session ids are hashed here too.
    let hasher = foldhash::fast::RandomState::default();
    let (hashes, is_cited): (Vec<u64>, Vec<bool>) = index
        .events
        .par_iter()
        .map(|e| {
            (
                index.session_id(e).map_or(0, |sid| hasher.hash_one(sid)),
                !cited.is_empty() && cited.contains(index.id(e)),
            )
        })
        .unzip();
    let mut out = Sessions::default();
    // (session, position) of every event that is not semantic, in order.
    let mut members: Vec<(u32, u32)> = Vec::with_capacity(index.events.len());
    let mut by_key = SessionTable::default();
    let mut by_event: HashMap<&str, usize> = HashMap::default();
    by_event.reserve(cited.len());
    let mut implicit: Option<usize> = None;
    let mut last_implicit: Option<i64> = None;
    let mut last_session: Option<usize> = None;
    let mut semantic: Vec<(u32, Option<usize>)> = Vec::new();
    for (position, e) in (0u32..).zip(&index.events) {
        if e.kind == Kind::Semantic {
            semantic.push((position, last_session));
            continue;
        }
        let session = match index.session_id(e) {
            Some(sid) => {
                let hash = hashes[position as usize];
                match by_key.find(hash, |s| out.key(s) == sid) {
                    Some(s) => s,
                    None => {
                        let s = out.start(true, |keys| keys.push_str(sid));
                        by_key.add(hash, s);
                        s
                    }
                }
            }
            None => {
                let gap = match (last_implicit, e.seconds) {
                    (Some(a), Some(b)) => b - a > opts.idle_gap_seconds,
                    _ => false,
                };
                let prompt_cut = opts.cut_at_prompt && e.kind == Kind::Prompt;
                let current = match implicit {
                    Some(s) if !prompt_cut && !gap => s,
                    _ => out.start(false, |keys| {
                        keys.push_str("session-");
                        keys.push_str(index.id(e));
                    }),
                };
                implicit = Some(current);
                last_implicit = e.seconds.or(last_implicit);
                current
            }
        };
        // Sessions are fewer than events, whose positions are `u32`s.
        members.push((session as u32, position));
        if is_cited[position as usize] {
            by_event.insert(index.id(e), session);
        }
        last_session = Some(session);
    }
    Sessions::fill(&mut out.heads, &mut out.events, &members, |h| {
        &mut h.events_end
    });
    members.clear();
    // The sessions each semantic event goes to, found in parallel (a lookup is a cache miss).
    let first = (out.len() > 0).then_some(0);
    members.par_extend(semantic.par_iter().flat_map_iter(|&(position, before)| {
        let e = &index.events[position as usize];
        let mut targets: Vec<usize> = index
            .cited(e)
            .iter()
            .filter_map(|id| by_event.get(id.as_str()).copied())
            .collect();
        targets.sort_unstable();
        targets.dedup();
        if targets.is_empty() {
            targets.extend(before.or(first));
        }
        targets.into_iter().map(move |t| (t as u32, position))
    }));
    Sessions::fill(&mut out.heads, &mut out.semantic, &members, |h| {
        &mut h.semantic_end
    });
    out
}

/// Where a session's events are read back from, and what is needed to do it.
struct Events {
    /// The events of the index, in its order.
    events: Vec<Event>,
    texts: Texts,
}

/// The records of a LedgerMind input: one per session, then one per unreadable line.
pub struct SessionRecords {
    events: Events,
    sessions: Sessions,
    /// The next session to read back.
    next_session: usize,
    next_index: u64,
    bad: std::vec::IntoIter<RawRecord>,
    input: Arc<str>,
    bytes: u64,
    /// The records of the sessions read back together, not yet emitted.
    ready: std::collections::VecDeque<RawRecord>,
    /// The texts of the sessions being read back.
    scratch: Vec<u8>,
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
        let (index, texts, bytes, bad) = if path != "-" && is_sqlite(Path::new(path)) {
            let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
            match read_sqlite(Path::new(path)) {
                Ok((index, texts)) => (index, Texts::Memory(texts), bytes, Vec::new()),
                Err(e) => (
                    Index::default(),
                    Texts::Memory(Vec::new()),
                    bytes,
                    vec![RawRecord {
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
                    }],
                ),
            }
        } else {
            let mut lines = read_lines(path, max_record_bytes, check, &input)?;
            let texts = match lines.copy.take() {
                Some(copy) => Texts::Memory(copy),
                None => Texts::File(File::open(path)?),
            };
            // The SQLite query orders its rows; lines are ordered here.
            // By timestamp, then line, then offset: the offsets grow in input order, so this is
            // the stable order by timestamp and line, sorted in place.
            let mut events = std::mem::take(&mut lines.index.events);
            let ix = &lines.index;
            events.par_sort_unstable_by(|a, b| {
                ix.timestamp(a)
                    .cmp(ix.timestamp(b))
                    .then(a.line.cmp(&b.line))
                    .then(a.offset.cmp(&b.offset))
            });
            lines.index.events = events;
            (lines.index, texts, lines.bytes, lines.bad)
        };
        let sessions = sessions(&index, opts);
        let mut bad = bad;
        if sessions.len() == 0 {
            // Semantic events attach to sessions; with none, they would vanish unreported.
            if let Some(first) = index.events.first() {
                bad.insert(
                    0,
                    RawRecord {
                        provenance: Provenance {
                            input: input.clone(),
                            file: input.clone(),
                            line: first.line,
                            index: 0,
                        },
                        bytes: Vec::new(),
                        error: Some(FrameError::Invalid(format!(
                            "{} semantic events (decisions, reflections, ...) but no event of \
                             work: no session to attach them to",
                            index.events.len()
                        ))),
                    },
                );
            }
        }
        // The strings sessions were cut by are no longer needed.
        let events = index.events;
        Ok(SessionRecords {
            events: Events { events, texts },
            next_index: 0,
            sessions,
            next_session: 0,
            bad: bad.into_iter(),
            input,
            bytes,
            ready: std::collections::VecDeque::new(),
            scratch: Vec::new(),
        })
    }

    /// Reads back the next sessions: those whose events lie close together in the file (as
    /// consecutive sessions' usually do), up to [`GROUP_BYTES`] of them, with one read of the
    /// span that holds them; a session far from the others alone, each event with a read of
    /// its own when they are far apart. (A read per session cost the reading thread a fifth
    /// of a core.)
    fn read_group(&mut self) {
        let first = self.next_session;
        let mut span = Span::EMPTY;
        while span.useful < GROUP_BYTES {
            let Some(next) = self.sessions.get(self.next_session) else {
                break;
            };
            let joined = span.join(self.events.span(&next));
            if self.next_session > first && !joined.is_dense() {
                break;
            }
            span = joined;
            self.next_session += 1;
        }
        let one_read = matches!(self.events.texts, Texts::File(_)) && span.is_dense();
        let read = if one_read {
            self.events.read_span(span, &mut self.scratch)
        } else {
            Ok(())
        };
        for session in (first..self.next_session).filter_map(|i| self.sessions.get(i)) {
            let bytes = read.as_ref().map_err(clone_error).and_then(|()| {
                let ranges = if one_read {
                    self.events.ranges_in_span(&session, span.low)
                } else {
                    self.events.read_each(&session, &mut self.scratch)
                }?;
                Ok(bundle(
                    &session,
                    &ranges,
                    &self.scratch,
                    &self.events.events,
                ))
            });
            let record = record(&self.events, &self.input, &session, bytes);
            self.ready.push_back(record);
        }
    }
}

/// The record of `session` of `input`, from its bundle (see [`bundle`]) or the error reading
/// it.
fn record(
    events: &Events,
    input: &Arc<str>,
    session: &Session<'_>,
    bytes: io::Result<Vec<u8>>,
) -> RawRecord {
    let line = session
        .events
        .first()
        .and_then(|&p| events.events.get(p as usize))
        .map_or(1, |e| e.line);
    let (bytes, error) = match bytes {
        Ok(bytes) => (bytes, None),
        Err(e) => (
            Vec::new(),
            Some(FrameError::Read(format!(
                "cannot read back the events of session {:?}: {e}",
                session.key
            ))),
        ),
    };
    RawRecord {
        provenance: Provenance {
            input: input.clone(),
            file: input.clone(),
            line,
            // Numbered when it is emitted.
            index: 0,
        },
        bytes,
        error,
    }
}

/// The same error again (an `io::Error` is not `Clone`).
fn clone_error(e: &io::Error) -> io::Error {
    io::Error::new(e.kind(), e.to_string())
}

/// The record of session `s` whose events' texts are at `ranges` of `texts` (its events, then
/// its semantic events): `{"ledgermind_session": true, "key", "explicit", "events",
/// "semantic", "lines"}`, the events as their JSON text, and `lines` the line (or row id) of
/// each, events then semantic ones, from `index`: an event without an `id` is known by it.
fn bundle(
    s: &Session<'_>,
    ranges: &[std::ops::Range<usize>],
    texts: &[u8],
    index: &[Event],
) -> Vec<u8> {
    use std::io::Write;
    let size: usize = ranges.iter().map(|r| r.len() + 1).sum();
    let mut out = Vec::with_capacity(size + s.key.len() + 96);
    out.extend_from_slice(b"{\"ledgermind_session\":true,\"key\":");
    // A string always serializes.
    let _ = serde_json::to_writer(&mut out, &s.key);
    out.extend_from_slice(if s.explicit {
        b",\"explicit\":true,\"events\":"
    } else {
        b",\"explicit\":false,\"events\":"
    });
    let (events, semantic) = ranges.split_at(s.events.len().min(ranges.len()));
    for (name, list) in [("", events), (",\"semantic\":", semantic)] {
        out.extend_from_slice(name.as_bytes());
        out.push(b'[');
        for (i, range) in list.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(texts.get(range.clone()).unwrap_or_default());
        }
        out.push(b']');
    }
    out.extend_from_slice(b",\"lines\":[");
    for (i, &p) in s.events.iter().chain(s.semantic).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let line = index.get(p as usize).map_or(0, |e| e.line);
        // Writing to a `Vec` cannot fail.
        let _ = write!(out, "{line}");
    }
    out.push(b']');
    out.push(b'}');
    out
}

/// The most bytes of sessions' events read back with one read.
const GROUP_BYTES: u64 = 1 << 20;

/// The most bytes read besides events' texts (beyond twice theirs) when they are read with one
/// read.
const READ_SLACK: u64 = 64 << 10;

/// Where some events' texts lie in the input: from its first byte to past its last, and how
/// many bytes the texts themselves take.
#[derive(Debug, Clone, Copy)]
struct Span {
    low: u64,
    high: u64,
    useful: u64,
}

impl Span {
    /// The span of no events.
    const EMPTY: Span = Span {
        low: u64::MAX,
        high: 0,
        useful: 0,
    };

    /// The span of the events of both.
    fn join(self, other: Span) -> Span {
        Span {
            low: self.low.min(other.low),
            high: self.high.max(other.high),
            useful: self.useful + other.useful,
        }
    }

    /// True when reading the whole span reads little besides the texts in it: at most twice
    /// as much, plus [`READ_SLACK`].
    fn is_dense(self) -> bool {
        self.low < self.high && self.high - self.low <= 2 * self.useful + READ_SLACK
    }
}

impl Events {
    /// The positions of a session's events, then of its semantic events.
    fn positions<'s>(s: &Session<'s>) -> impl Iterator<Item = usize> + 's {
        s.events.iter().chain(s.semantic).map(|&p| p as usize)
    }

    /// Where the text of the event at `position` is, and its length.
    fn place(&self, position: usize) -> io::Result<(u64, u32)> {
        self.events
            .get(position)
            .map(|e| (e.offset, e.len))
            .ok_or_else(|| io::Error::other("event out of range"))
    }

    /// The span of a session's events (an event out of range, which reading reports, aside).
    fn span(&self, s: &Session<'_>) -> Span {
        Self::positions(s).filter_map(|p| self.place(p).ok()).fold(
            Span::EMPTY,
            |span, (offset, len)| {
                span.join(Span {
                    low: offset,
                    high: offset + u64::from(len),
                    useful: u64::from(len),
                })
            },
        )
    }

    /// Reads the bytes of `span` into `scratch`.
    fn read_span(&self, span: Span, scratch: &mut Vec<u8>) -> io::Result<()> {
        scratch.clear();
        let len = usize::try_from(span.high - span.low).map_err(io::Error::other)?;
        self.texts.read(span.low, len, scratch)
    }

    /// Where a session's texts are in the bytes of a span starting at `low` (see
    /// [`Events::read_span`]).
    fn ranges_in_span(&self, s: &Session<'_>, low: u64) -> io::Result<Vec<std::ops::Range<usize>>> {
        Self::positions(s)
            .map(|p| {
                let (offset, len) = self.place(p)?;
                let start = offset
                    .checked_sub(low)
                    .and_then(|at| usize::try_from(at).ok())
                    .ok_or_else(|| io::Error::other("event outside the span read"))?;
                Ok(start..start + len as usize)
            })
            .collect()
    }

    /// Reads a session's texts one by one into `scratch`, returning where each is in it.
    fn read_each(
        &self,
        s: &Session<'_>,
        scratch: &mut Vec<u8>,
    ) -> io::Result<Vec<std::ops::Range<usize>>> {
        scratch.clear();
        Self::positions(s)
            .map(|p| {
                let (offset, len) = self.place(p)?;
                let start = scratch.len();
                self.texts.read(offset, len as usize, scratch)?;
                Ok(start..scratch.len())
            })
            .collect()
    }
}

impl Iterator for SessionRecords {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        if self.ready.is_empty() {
            self.read_group();
        }
        let mut record = match self.ready.pop_front() {
            Some(record) => record,
            None => self.bad.next()?,
        };
        record.provenance.index = self.next_index;
        self.next_index += 1;
        Some(record)
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
    fn plain_timestamps_read_as_chrono_reads_them() {
        for ts in [
            "2025-03-01T12:34:56",
            "2025-03-01 12:34:56.5",
            "2024-02-29T23:59:59.123456789",
            "1969-12-31T23:59:59",
        ] {
            let general =
                NaiveDateTime::parse_from_str(&ts.replace(' ', "T"), "%Y-%m-%dT%H:%M:%S%.f")
                    .map(|t| t.and_utc().timestamp());
            assert_eq!(plain_seconds(ts), general.ok(), "{ts}");
        }
        // Not the plain form, or not a real date: left to the general parser.
        for ts in [
            "2025-02-30T00:00:00",
            "2025-03-01T24:00:00",
            "2025-03-01T12:34:56Z",
            "2025-03-01T12:34:56.",
            "2025-03-01T12:34:56.1234567890",
            "2025-3-01T12:34:56",
            "+2025-03-01T12:34:56",
            "2025-03-01t12:34:56",
        ] {
            assert_eq!(plain_seconds(ts), None, "{ts}");
        }
        assert_eq!(
            seconds("2025-03-01T12:34:56Z"),
            plain_seconds("2025-03-01T12:34:56")
        );
    }

    #[test]
    fn sessions_keep_their_members_in_order_in_shared_lists() {
        let mut sessions = Sessions::default();
        for key in ["a", "bb", ""] {
            sessions.start(!key.is_empty(), |keys| keys.push_str(key));
        }
        // Interleaved, in position order; session 2 has no events.
        let members = [(1, 0), (0, 1), (1, 2), (1, 5), (0, 7)];
        Sessions::fill(&mut sessions.heads, &mut sessions.events, &members, |h| {
            &mut h.events_end
        });
        Sessions::fill(
            &mut sessions.heads,
            &mut sessions.semantic,
            &[(2, 3)],
            |h| &mut h.semantic_end,
        );
        let got: Vec<_> = (0..sessions.len())
            .filter_map(|i| sessions.get(i))
            .map(|s| (s.key, s.explicit, s.events.to_vec(), s.semantic.to_vec()))
            .collect();
        assert_eq!(
            got,
            [
                ("a", true, vec![1, 7], vec![]),
                ("bb", true, vec![0, 2, 5], vec![]),
                ("", false, vec![], vec![3]),
            ]
        );
        assert_eq!(sessions.key(1), "bb");
        assert!(sessions.get(3).is_none());
    }

    #[test]
    fn sessions_are_found_by_their_key_when_hashes_collide() {
        let keys = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"];
        let mut table = SessionTable::default();
        // Every key with the same hash, more of them than are remembered as recent.
        for (s, key) in keys.iter().enumerate() {
            assert_eq!(table.find(7, |t| keys[t] == *key), None);
            table.add(7, s);
        }
        for (s, key) in keys.iter().enumerate().rev() {
            assert_eq!(table.find(7, |t| keys[t] == *key), Some(s), "{key}");
        }
        assert_eq!(table.find(7, |_| false), None);
        assert_eq!(table.find(8, |t| keys[t] == "a"), None);
    }

    #[test]
    fn timestamps_with_and_without_offsets() {
        assert_eq!(seconds("1970-01-01T00:01:00Z"), Some(60));
        assert_eq!(seconds("1970-01-01T00:01:00"), Some(60));
        assert_eq!(seconds("1970-01-01 00:01:00.250"), Some(60));
        assert_eq!(seconds("1970-01-01T01:01:00+01:00"), Some(60));
        assert_eq!(seconds("yesterday"), None);
    }
}

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

mod index;
mod lines;
mod sessions;
mod sqlite;
mod texts;
mod time;

use self::index::{Event, Index};
use self::lines::read_lines;
use self::sessions::{Session, Sessions};
use self::sqlite::read_sqlite;
use self::texts::Texts;
use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;
use serde_json::Value;

use crate::ingest::sqlite::is_sqlite;
use crate::ingest::{FrameError, Provenance, RawRecord, RecordSource};
use crate::json::Shapes;

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
        let sessions = sessions::sessions(&index, opts);
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

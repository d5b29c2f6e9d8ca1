//! The index of a LedgerMind input's events: per event, where its text is and what sessions are
//! cut by (its timestamp, id, session id, kind, citations), its strings in one arena.

use super::time::seconds;
use super::{CITATION_KEYS, SEMANTIC_KINDS};
use crate::json::Node;

/// What sessions are cut by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Prompt,
    Semantic,
    Other,
}

/// One event of the index: where its text is, and its fields, as spans of the index's string
/// arena (timestamp, id, then session id, one after the other).
pub(super) struct Event {
    pub(super) offset: u64,
    pub(super) len: u32,
    pub(super) line: u64,
    pub(super) strings: usize,
    pub(super) timestamp_len: u32,
    pub(super) id_len: u32,
    /// `u32::MAX` when the event has no session id.
    pub(super) session_len: u32,
    pub(super) kind: Kind,
    /// Seconds since the epoch of its timestamp, when it reads as one.
    pub(super) seconds: Option<i64>,
    /// 1 + its entry in [`Index::citations`] (a semantic event citing others), else 0.
    pub(super) cited: u32,
}

/// The events of an input and the strings they are cut by.
#[derive(Default)]
pub(super) struct Index {
    pub(super) events: Vec<Event>,
    pub(super) strings: String,
    pub(super) citations: Vec<Vec<String>>,
}

impl Index {
    /// Adds the event `value` whose text is `len` bytes at `offset`; `None` when an index
    /// field would not fit (an event or field over 4 GiB).
    pub(super) fn push(
        &mut self,
        value: &Node<'_>,
        offset: u64,
        len: usize,
        line: u64,
    ) -> Option<()> {
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
    pub(super) fn push_fields(
        &mut self,
        value: &Node<'_>,
        offset: u64,
        len: usize,
        line: u64,
    ) -> Option<()> {
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

    pub(super) fn text(&self, at: usize, len: u32) -> &str {
        self.strings.get(at..at + len as usize).unwrap_or_default()
    }

    pub(super) fn timestamp(&self, e: &Event) -> &str {
        self.text(e.strings, e.timestamp_len)
    }

    pub(super) fn id(&self, e: &Event) -> &str {
        self.text(e.strings + e.timestamp_len as usize, e.id_len)
    }

    pub(super) fn session_id(&self, e: &Event) -> Option<&str> {
        (e.session_len != u32::MAX).then(|| {
            self.text(
                e.strings + e.timestamp_len as usize + e.id_len as usize,
                e.session_len,
            )
        })
    }

    pub(super) fn cited(&self, e: &Event) -> &[String] {
        match e.cited.checked_sub(1) {
            Some(i) => self.citations.get(i as usize).map_or(&[], Vec::as_slice),
            None => &[],
        }
    }

    /// Adds the events of another index.
    pub(super) fn append(&mut self, mut other: Index) {
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
    pub(super) fn reserve_for(&mut self, done: u64, total: u64) {
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
pub(super) fn cited(value: &Node<'_>) -> Vec<String> {
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

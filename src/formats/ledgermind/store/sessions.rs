//! Cutting the indexed events into sessions: explicit ones by their session id, implicit ones at
//! prompts and idle gaps, semantic events attached to the sessions they cite.

use std::hash::BuildHasher;

use foldhash::{HashMap, HashSet};
use rayon::prelude::*;

use super::index::{Index, Kind};
use super::SessionOptions;

/// The sessions of an input. Each session's key, events and attached semantic events are
/// ranges of lists shared by all of them, ending where the next session's begin: cutting
/// writes a few lists front to back rather than a record and two lists per session (the
/// stores into fresh memory were most of the cutting's time).
#[derive(Default)]
pub(super) struct Sessions {
    pub(super) heads: Vec<Head>,
    /// The sessions' keys, one after the other.
    pub(super) keys: String,
    /// The positions of the sessions' events in the index, session after session.
    pub(super) events: Vec<u32>,
    /// The positions of the semantic events attached to them, session after session.
    pub(super) semantic: Vec<u32>,
}

/// Where a session's parts end in the lists of [`Sessions`].
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Head {
    pub(super) key_end: usize,
    pub(super) events_end: u32,
    pub(super) semantic_end: u32,
    pub(super) explicit: bool,
}

/// A session: its key, whether it was named by the events, and its events and the semantic
/// events attached to it (positions in the index).
#[derive(Debug, Clone, Copy)]
pub(super) struct Session<'a> {
    pub(super) key: &'a str,
    pub(super) explicit: bool,
    pub(super) events: &'a [u32],
    pub(super) semantic: &'a [u32],
}

impl Sessions {
    pub(super) fn len(&self) -> usize {
        self.heads.len()
    }

    /// The heads of session `i` and of the one before it (where `i`'s parts start).
    pub(super) fn bounds(&self, i: usize) -> Option<(Head, Head)> {
        let head = *self.heads.get(i)?;
        let before = match i.checked_sub(1) {
            Some(b) => *self.heads.get(b)?,
            None => Head::default(),
        };
        Some((before, head))
    }

    /// Session `i`.
    pub(super) fn get(&self, i: usize) -> Option<Session<'_>> {
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
    pub(super) fn key(&self, i: usize) -> &str {
        self.bounds(i)
            .and_then(|(before, head)| self.keys.get(before.key_end..head.key_end))
            .unwrap_or_default()
    }

    /// Starts a session whose key is `key` (written by `write`, which cannot fail).
    pub(super) fn start(&mut self, explicit: bool, write: impl FnOnce(&mut String)) -> usize {
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
    pub(super) fn fill(
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
pub(super) struct SessionTable {
    /// (hash, session) of the sessions last found or added, the newest at `next - 1`.
    pub(super) recent: [Option<(u64, usize)>; RECENT_SESSIONS],
    pub(super) next: usize,
    pub(super) table: hashbrown::HashTable<(u64, usize)>,
}

/// How many sessions [`SessionTable`] looks at before its table.
pub(super) const RECENT_SESSIONS: usize = 8;

impl SessionTable {
    /// The session whose id hashes to `hash` and for which `is_it` holds.
    pub(super) fn find(&mut self, hash: u64, is_it: impl Fn(usize) -> bool) -> Option<usize> {
        let recent = self.recent.iter().flatten();
        if let Some(&(_, s)) = recent.clone().find(|&&(h, s)| h == hash && is_it(s)) {
            return Some(s);
        }
        let &(_, s) = self.table.find(hash, |&(h, s)| h == hash && is_it(s))?;
        self.remember(hash, s);
        Some(s)
    }

    /// Adds session `s`, whose id hashes to `hash` (and is not in the table yet).
    pub(super) fn add(&mut self, hash: u64, s: usize) {
        self.table.insert_unique(hash, (hash, s), |&(h, _)| h);
        self.remember(hash, s);
    }

    pub(super) fn remember(&mut self, hash: u64, s: usize) {
        self.recent[self.next % RECENT_SESSIONS] = Some((hash, s));
        self.next += 1;
    }
}

/// Cuts the events of `index` (in order) into sessions.
pub(super) fn sessions(index: &Index, opts: SessionOptions) -> Sessions {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}

//! BPE merges over byte-level symbols, and the per-thread cache of merged pieces.
//!
//! A piece starts as one symbol per byte (the vocabulary's byte-level character for it); the
//! merge of lowest rank among adjacent symbols is applied first, the leftmost of equal ones,
//! until no adjacent pair has a merge: the `tokenizers` library's BPE without dropout.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use std::hash::BuildHasher;

use foldhash::fast::FixedState;
use hashbrown::{HashMap, HashTable};

/// Pieces longer than this are merged every time, not cached.
const CACHED_LEN: usize = 256;
/// Pieces of at most this many symbols merge by scanning ([`Merges::merge_short`]).
const SHORT: usize = 48;
/// A cache holding this many pieces is emptied before the next one goes in.
const CACHE_CAPACITY: usize = 1 << 18;

/// A vocabulary's merges, as ids.
#[derive(Debug)]
pub struct Merges {
    /// `(left, right)` → `(rank, merged)`.
    pairs: HashMap<(u32, u32), (u32, u32), FixedState>,
    /// With `ignore_merges`: pieces that are whole tokens, by their bytes.
    whole: Option<Whole>,
}

/// Tokens by their bytes, kept in one buffer (a 128 k vocabulary in one allocation, not one
/// per token).
#[derive(Debug, Default)]
pub struct Whole {
    bytes: Vec<u8>,
    /// `(start, end)` of a token's bytes in `bytes`, and its id.
    table: HashTable<(u32, u32, u32)>,
    hasher: FixedState,
}

impl Whole {
    /// Adds the token `id` of `bytes` (a token already there keeps its id).
    pub fn insert(&mut self, bytes: &[u8], id: u32) {
        let hash = self.hasher.hash_one(bytes);
        if self.get_hashed(hash, bytes).is_some() {
            return;
        }
        let Whole {
            bytes: all,
            table,
            hasher,
        } = self;
        let start = all.len() as u32;
        all.extend_from_slice(bytes);
        let entry = (start, all.len() as u32, id);
        table.insert_unique(hash, entry, |&(a, b, _)| {
            hasher.hash_one(&all[a as usize..b as usize])
        });
    }

    /// The token of `bytes`.
    pub fn get(&self, bytes: &[u8]) -> Option<u32> {
        self.get_hashed(self.hasher.hash_one(bytes), bytes)
    }

    fn get_hashed(&self, hash: u64, bytes: &[u8]) -> Option<u32> {
        self.table
            .find(hash, |&(a, b, _)| {
                &self.bytes[a as usize..b as usize] == bytes
            })
            .map(|e| e.2)
    }
}

/// A thread's merged pieces and buffers.
#[derive(Debug, Default)]
pub struct Pieces {
    pieces: HashMap<Box<[u8]>, Box<[u32]>, FixedState>,
    /// A piece's symbols before merging.
    ids: Vec<u32>,
    /// A short piece's symbols while merging, each with its pair's rank and result.
    parts: Vec<(u32, (u32, u32))>,
    symbols: Vec<Symbol>,
    queue: BinaryHeap<Reverse<(u32, u32)>>,
}

/// A symbol of a piece being merged: a token, linked to its alive neighbours.
#[derive(Debug, Clone, Copy)]
struct Symbol {
    id: u32,
    prev: u32,
    next: u32,
    alive: bool,
}

const NONE: u32 = u32::MAX;

impl Merges {
    /// Merges from `(left, right, merged)` ids in rank order; `whole` for `ignore_merges`.
    pub fn new(ranked: impl IntoIterator<Item = (u32, u32, u32)>, whole: Option<Whole>) -> Self {
        let mut pairs = HashMap::with_hasher(FixedState::default());
        for (rank, (l, r, merged)) in ranked.into_iter().enumerate() {
            let rank = u32::try_from(rank).unwrap_or(u32::MAX);
            // A pair listed twice keeps its last rank and result, as the library's map does.
            pairs.insert((l, r), (rank, merged));
        }
        Merges { pairs, whole }
    }

    /// Appends the tokens of `piece` (its bytes) to `out`. `symbols_of` puts the piece's
    /// symbols in the buffer it is given, or says `false` when one has no token (then so does
    /// this, and `out` is left as it was); it is called only when the piece is not cached.
    pub fn tokenize(
        &self,
        piece: &[u8],
        symbols_of: impl FnOnce(&mut Vec<u32>) -> bool,
        cache: &mut Pieces,
        out: &mut Vec<u32>,
    ) -> bool {
        let cached = piece.len() > 1 && piece.len() <= CACHED_LEN;
        if piece.len() > 1 {
            if let Some(id) = self.whole.as_ref().and_then(|w| w.get(piece)) {
                out.push(id);
                return true;
            }
        }
        if cached {
            if let Some(tokens) = cache.pieces.get(piece) {
                out.extend_from_slice(tokens);
                return true;
            }
        }
        let mut ids = std::mem::take(&mut cache.ids);
        ids.clear();
        let known = symbols_of(&mut ids);
        if known {
            if let [one] = ids[..] {
                out.push(one);
            } else {
                let from = out.len();
                self.merge(&ids, cache, out);
                if cached {
                    if cache.pieces.len() >= CACHE_CAPACITY {
                        cache.pieces.clear();
                    }
                    cache.pieces.insert(piece.into(), out[from..].into());
                }
            }
        }
        cache.ids = ids;
        known
    }

    /// Merges the symbols `ids` and appends the result to `out`.
    pub fn merge_symbols(&self, ids: &[u32], cache: &mut Pieces, out: &mut Vec<u32>) {
        match ids {
            [] => {}
            [one] => out.push(*one),
            _ => self.merge(ids, cache, out),
        }
    }

    /// Merges `ids` (at least two) and appends the result to `out`.
    fn merge(&self, ids: &[u32], cache: &mut Pieces, out: &mut Vec<u32>) {
        if ids.len() <= SHORT {
            return self.merge_short(ids, cache, out);
        }
        self.merge_long(ids, cache, out)
    }

    /// [`Merges::merge`] of a short piece: the lowest rank (the leftmost of equal ones) found
    /// by scanning the pairs' ranks, each pair looked up once and again only when a merge
    /// changes it (no queue to keep).
    fn merge_short(&self, ids: &[u32], cache: &mut Pieces, out: &mut Vec<u32>) {
        let Pieces { parts, .. } = cache;
        parts.clear();
        let pair = |l: u32, r: u32| self.pairs.get(&(l, r)).copied().unwrap_or((NONE, NONE));
        // Each symbol with the rank and result of its pair with the next one.
        parts.extend(ids.windows(2).map(|w| (w[0], pair(w[0], w[1]))));
        parts.push((ids[ids.len() - 1], (NONE, NONE)));
        loop {
            let mut best = (NONE, 0);
            for (i, &(_, (rank, _))) in parts.iter().enumerate() {
                if rank < best.0 {
                    best = (rank, i);
                }
            }
            if best.0 == NONE {
                break;
            }
            let i = best.1;
            let merged = parts[i].1 .1;
            parts.remove(i + 1);
            let next = parts.get(i + 1).map(|p| p.0);
            parts[i] = (merged, next.map_or((NONE, NONE), |n| pair(merged, n)));
            if i > 0 {
                parts[i - 1].1 = pair(parts[i - 1].0, merged);
            }
        }
        out.extend(parts.iter().map(|p| p.0));
    }

    /// [`Merges::merge`] of a long piece, the pairs queued by rank.
    fn merge_long(&self, ids: &[u32], cache: &mut Pieces, out: &mut Vec<u32>) {
        let Pieces { symbols, queue, .. } = cache;
        symbols.clear();
        queue.clear();
        let last = ids.len() - 1;
        symbols.extend(ids.iter().enumerate().map(|(i, &id)| Symbol {
            id,
            prev: if i == 0 { NONE } else { i as u32 - 1 },
            next: if i == last { NONE } else { i as u32 + 1 },
            alive: true,
        }));
        for (i, w) in ids.windows(2).enumerate() {
            if let Some(&(rank, _)) = self.pairs.get(&(w[0], w[1])) {
                queue.push(Reverse((rank, i as u32)));
            }
        }
        while let Some(Reverse((rank, at))) = queue.pop() {
            let left = symbols[at as usize];
            if !left.alive || left.next == NONE {
                continue;
            }
            let right = symbols[left.next as usize];
            // An entry whose pair has changed since it was queued is stale.
            let Some(&(now, merged)) = self.pairs.get(&(left.id, right.id)) else {
                continue;
            };
            if now != rank {
                continue;
            }
            symbols[at as usize].id = merged;
            symbols[at as usize].next = right.next;
            symbols[left.next as usize].alive = false;
            if right.next != NONE {
                symbols[right.next as usize].prev = at;
                if let Some(&(r, _)) = self.pairs.get(&(merged, symbols[right.next as usize].id)) {
                    queue.push(Reverse((r, at)));
                }
            }
            if left.prev != NONE {
                if let Some(&(r, _)) = self.pairs.get(&(symbols[left.prev as usize].id, merged)) {
                    queue.push(Reverse((r, left.prev)));
                }
            }
        }
        out.extend(symbols.iter().filter(|s| s.alive).map(|s| s.id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowest_rank_first_then_leftmost() {
        // ids: a=0 b=1 c=2; merges: (b,c)→3 rank 0, (a,b)→4 rank 1, (a,a)→5 rank 2, (5,a)→6.
        let m = Merges::new([(1, 2, 3), (0, 1, 4), (0, 0, 5), (5, 0, 6)], None);
        let mut cache = Pieces::default();
        let mut run = |ids: &[u32]| {
            let bytes: Vec<u8> = ids.iter().map(|&i| b'a' + i as u8).collect();
            let mut out = Vec::new();
            assert!(m.tokenize(
                &bytes,
                |s| {
                    s.extend(ids);
                    true
                },
                &mut cache,
                &mut out
            ));
            out
        };
        assert_eq!(run(&[0, 1, 2]), [0, 3]); // "abc": bc before ab
        assert_eq!(run(&[0, 1]), [4]);
        assert_eq!(run(&[0, 0, 0]), [6]); // "aaa": aa|a then (aa)a
        assert_eq!(run(&[0, 0, 0, 0]), [5, 5]); // leftmost first: aa|aa
        assert_eq!(run(&[0, 0, 0, 0]), [5, 5]); // from the cache
        assert_eq!(run(&[2]), [2]);
    }

    #[test]
    fn short_and_long_pieces_merge_alike() {
        // Merges over ids 0..4 and their results, pairs that recur and overlap.
        let m = Merges::new(
            [
                (0, 1, 4),
                (1, 1, 5),
                (4, 5, 6),
                (2, 3, 7),
                (5, 1, 8),
                (7, 0, 9),
                (3, 3, 10),
            ],
            None,
        );
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut cache = Pieces::default();
        for len in 2..100 {
            let ids: Vec<u32> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x % 4) as u32
                })
                .collect();
            let (mut short, mut long) = (Vec::new(), Vec::new());
            m.merge_short(&ids, &mut cache, &mut short);
            m.merge_long(&ids, &mut cache, &mut long);
            assert_eq!(short, long, "{ids:?}");
        }
    }
}

//! BPE merges over byte-level symbols, and the per-thread cache of merged pieces.
//!
//! A piece starts as one symbol per byte (the vocabulary's byte-level character for it); the
//! merge of lowest rank among adjacent symbols is applied first, the leftmost of equal ones,
//! until no adjacent pair has a merge: the `tokenizers` library's BPE without dropout.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use foldhash::fast::FixedState;
use hashbrown::HashMap;

/// Pieces longer than this are merged every time, not cached.
const CACHED_LEN: usize = 256;
/// A cache holding this many pieces is emptied before the next one goes in.
const CACHE_CAPACITY: usize = 1 << 18;

/// A vocabulary's merges, as ids.
#[derive(Debug)]
pub struct Merges {
    /// `(left, right)` → `(rank, merged)`.
    pairs: HashMap<(u32, u32), (u32, u32), FixedState>,
    /// With `ignore_merges`: pieces that are whole tokens, by their bytes.
    whole: Option<HashMap<Box<[u8]>, u32, FixedState>>,
}

/// A thread's merged pieces and buffers.
#[derive(Debug, Default)]
pub struct Pieces {
    pieces: HashMap<Box<[u8]>, Box<[u32]>, FixedState>,
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
    pub fn new(
        ranked: impl IntoIterator<Item = (u32, u32, u32)>,
        whole: Option<HashMap<Box<[u8]>, u32, FixedState>>,
    ) -> Self {
        let mut pairs = HashMap::with_hasher(FixedState::default());
        for (rank, (l, r, merged)) in ranked.into_iter().enumerate() {
            let rank = u32::try_from(rank).unwrap_or(u32::MAX);
            // A pair listed twice keeps its last rank and result, as the library's map does.
            pairs.insert((l, r), (rank, merged));
        }
        Merges { pairs, whole }
    }

    /// Appends the tokens of `piece` (its bytes, `ids` their byte-level symbols) to `out`.
    pub fn tokenize(&self, piece: &[u8], ids: &[u32], cache: &mut Pieces, out: &mut Vec<u32>) {
        if let Some(id) = self.whole.as_ref().and_then(|w| w.get(piece)) {
            out.push(*id);
            return;
        }
        if ids.len() == 1 {
            out.push(ids[0]);
            return;
        }
        if piece.len() <= CACHED_LEN {
            if let Some(tokens) = cache.pieces.get(piece) {
                out.extend_from_slice(tokens);
                return;
            }
        }
        let from = out.len();
        self.merge(ids, cache, out);
        if piece.len() <= CACHED_LEN {
            if cache.pieces.len() >= CACHE_CAPACITY {
                cache.pieces.clear();
            }
            cache.pieces.insert(piece.into(), out[from..].into());
        }
    }

    /// Merges `ids` (at least two) and appends the result to `out`.
    fn merge(&self, ids: &[u32], cache: &mut Pieces, out: &mut Vec<u32>) {
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
            m.tokenize(&bytes, ids, &mut cache, &mut out);
            out
        };
        assert_eq!(run(&[0, 1, 2]), [0, 3]); // "abc": bc before ab
        assert_eq!(run(&[0, 1]), [4]);
        assert_eq!(run(&[0, 0, 0]), [6]); // "aaa": aa|a then (aa)a
        assert_eq!(run(&[0, 0, 0, 0]), [5, 5]); // leftmost first: aa|aa
        assert_eq!(run(&[0, 0, 0, 0]), [5, 5]); // from the cache
        assert_eq!(run(&[2]), [2]);
    }
}

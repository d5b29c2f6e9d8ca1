//! The side index's keys: every key's bytes in one arena string and a hash table of
//! (offset, length, postings) entries, 12 bytes each, instead of a heap string and a map entry
//! per key. A million keys of a dozen characters take about 40 MB this way, against about
//! 65 MB as a `HashMap<Box<str>, _>`. With the packed numbers ([`super::packed`]), this took the
//! peak memory of `scripts/bench.sh`'s mixed `run` (2.15 GB joined with 1,000,000 rewards)
//! from 369-381 MB to 328-352 MB; the side index is the only part of a run that grows with
//! its input, so its size is what decides how large a join fits in memory.

use std::hash::BuildHasher;

use foldhash::fast::RandomState;
use hashbrown::HashTable;

/// A key's entry: where its bytes are in the arena, and its postings.
#[derive(Debug, Clone, Copy)]
struct Entry<P> {
    start: u32,
    len: u32,
    postings: P,
}

/// Keys (strings) mapped to postings `P`, stored compactly.
#[derive(Debug)]
pub(crate) struct KeyTable<P> {
    arena: String,
    table: HashTable<Entry<P>>,
    hasher: RandomState,
}

impl<P> Default for KeyTable<P> {
    fn default() -> Self {
        KeyTable {
            arena: String::new(),
            table: HashTable::new(),
            hasher: RandomState::default(),
        }
    }
}

/// The arena would pass 4 GiB of key bytes.
#[derive(Debug)]
pub(crate) struct ArenaFull;

/// The key of entry `e`, whose bytes are in `arena`.
fn key_of<'a, P>(arena: &'a str, e: &Entry<P>) -> &'a str {
    let start = e.start as usize;
    arena.get(start..start + e.len as usize).unwrap_or_default()
}

impl<P> KeyTable<P> {
    /// The postings of `key`.
    pub fn get(&self, key: &str) -> Option<&P> {
        let hash = self.hasher.hash_one(key);
        self.table
            .find(hash, |e| key_of(&self.arena, e) == key)
            .map(|e| &e.postings)
    }

    /// The postings of `key` to change, or, when the table has no `key`, `key` added with
    /// `postings` (`None` then): one probe of the table for both.
    pub fn get_or_insert(&mut self, key: &str, postings: P) -> Result<Option<&mut P>, ArenaFull> {
        let hasher = &self.hasher;
        let arena = &self.arena;
        let hash = hasher.hash_one(key);
        let entry = self.table.entry(
            hash,
            |e| key_of(arena, e) == key,
            |e| hasher.hash_one(key_of(arena, e)),
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(e) => Ok(Some(&mut e.into_mut().postings)),
            hashbrown::hash_table::Entry::Vacant(v) => {
                let start = u32::try_from(self.arena.len()).map_err(|_| ArenaFull)?;
                let len = u32::try_from(key.len()).map_err(|_| ArenaFull)?;
                start.checked_add(len).ok_or(ArenaFull)?;
                self.arena.push_str(key);
                v.insert(Entry {
                    start,
                    len,
                    postings,
                });
                Ok(None)
            }
        }
    }

    /// Makes room for `keys` more keys, as long on average as those in the table.
    pub fn reserve(&mut self, keys: usize) {
        let key_bytes = self.arena.len().div_ceil(self.table.len().max(1));
        let room = self.arena.capacity() - self.arena.len();
        self.arena
            .reserve_exact(keys.saturating_mul(key_bytes).saturating_sub(room));
        let hasher = &self.hasher;
        let arena = &self.arena;
        self.table
            .reserve(keys, |e| hasher.hash_one(key_of(arena, e)));
    }

    /// Every key and its postings, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &P)> {
        self.table
            .iter()
            .map(|e| (key_of(&self.arena, e), &e.postings))
    }

    /// Every key's postings, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &P> {
        self.table.iter().map(|e| &e.postings)
    }

    /// Every key's postings, to change.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut P> {
        self.table.iter_mut().map(|e| &mut e.postings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_after_the_table_grows() {
        let mut t = KeyTable::default();
        for i in 0..10_000u32 {
            assert_eq!(
                t.get_or_insert(&format!("key-{i}"), i).expect("insert"),
                None
            );
        }
        for i in 0..10_000u32 {
            assert_eq!(t.get(&format!("key-{i}")), Some(&i));
        }
        assert_eq!(t.get("key-10000"), None);
        assert_eq!(t.get(""), None);
        if let Some(p) = t.get_or_insert("key-7", 0).expect("found") {
            *p = 70;
        }
        assert_eq!(t.get("key-7"), Some(&70));
        let mut all: Vec<(String, u32)> = t.iter().map(|(k, p)| (k.to_owned(), *p)).collect();
        all.sort();
        assert_eq!(all.len(), 10_000);
        assert_eq!(all[0], ("key-0".to_owned(), 0));
        assert_eq!(t.values().count(), 10_000);
    }

    #[test]
    fn empty_and_unicode_keys_are_keys() {
        let mut t = KeyTable::default();
        assert_eq!(t.get_or_insert("", 1).expect("insert"), None);
        assert_eq!(t.get_or_insert("é#1", 2).expect("insert"), None);
        assert_eq!(t.get(""), Some(&1));
        assert_eq!(t.get("é#1"), Some(&2));
        assert_eq!(t.get("é"), None);
    }
}

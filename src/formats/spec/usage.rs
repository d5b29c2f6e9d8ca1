//! Whether the data pointers of a spec's templates resolve: a pointer that resolves in no record
//! (a mistyped `{/nonexistent}`) would otherwise render nothing without a word, so it is
//! reported when a conversion ends, with its spec line and how often it was missing.
//!
//! Counters are shared by the threads converting records. A pointer that resolves is marked
//! once (a read, then a write the first time only); only misses are counted, so a spec whose
//! pointers resolve adds no contended write to the hot path. The counts do not depend on the
//! order records are converted in, so reports are deterministic.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The uses of one placeholder or `for_each` source that reads the data.
#[derive(Debug, Default)]
pub struct Usage {
    resolved: AtomicBool,
    missing: AtomicU64,
}

impl Usage {
    /// Counts one use: `found` when the pointer led to a value (`null` included).
    pub fn note(&self, found: bool) {
        if found {
            if !self.resolved.load(Ordering::Relaxed) {
                self.resolved.store(true, Ordering::Relaxed);
            }
        } else {
            self.missing.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// How many times the pointer was missing, when it was used and never resolved; the counts
    /// start again from zero.
    pub fn take_never_resolved(&self) -> Option<u64> {
        let resolved = self.resolved.swap(false, Ordering::Relaxed);
        let missing = self.missing.swap(0, Ordering::Relaxed);
        (!resolved && missing > 0).then_some(missing)
    }
}

/// Tracking is not part of what a template means: two templates that read the same things are
/// equal whatever their counts.
impl PartialEq for Usage {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl Eq for Usage {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_pointer_used_and_never_found_is_reported_once() {
        let u = Usage::default();
        assert_eq!(u.take_never_resolved(), None, "never used");
        u.note(false);
        u.note(false);
        assert_eq!(u.take_never_resolved(), Some(2));
        assert_eq!(u.take_never_resolved(), None, "the counts start again");
        u.note(false);
        u.note(true);
        assert_eq!(u.take_never_resolved(), None, "found once is enough");
    }
}

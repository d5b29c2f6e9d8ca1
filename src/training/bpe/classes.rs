//! The Unicode classes the pre-tokenizer patterns of real tokenizers use (`\s`, `\p{L}`,
//! `\p{N}`, `\p{M}`, `\p{P}`, `\p{S}` and o200k's two letter-case classes), as one byte of
//! flags per code point, for the hand-written matchers of `pattern.rs`.
//!
//! The classes are read from `regex-syntax`, the parser of the regex engine the other patterns
//! run on, so a hand-written matcher and the regex agree on every character by construction
//! (the same Unicode tables), not by a second copy of them.

use std::sync::LazyLock;

use regex_syntax::hir::{Class, HirKind};

/// White space (`\s`: the `White_Space` property).
pub const SPACE: u8 = 1;
/// A letter (`\p{L}`).
pub const LETTER: u8 = 1 << 1;
/// A number (`\p{N}`).
pub const NUMBER: u8 = 1 << 2;
/// A mark (`\p{M}`).
pub const MARK: u8 = 1 << 3;
/// Punctuation (`\p{P}`).
pub const PUNCT: u8 = 1 << 4;
/// A symbol (`\p{S}`).
pub const SYMBOL: u8 = 1 << 5;
/// o200k's upper-case side: `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`.
pub const UPPER: u8 = 1 << 6;
/// o200k's lower-case side: `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`.
pub const LOWER: u8 = 1 << 7;

/// Each class's flag and its pattern.
const CLASSES: [(u8, &str); 8] = [
    (SPACE, r"\s"),
    (LETTER, r"\p{L}"),
    (NUMBER, r"\p{N}"),
    (MARK, r"\p{M}"),
    (PUNCT, r"\p{P}"),
    (SYMBOL, r"\p{S}"),
    (UPPER, r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"),
    (LOWER, r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"),
];

/// The flags of every code point (1.1 MB, most of it never touched: the pages of unassigned
/// planes stay unmapped).
pub struct Table(Box<[u8]>);

impl Table {
    /// The flags of `c`.
    #[inline]
    pub fn of(&self, c: u32) -> u8 {
        self.0.get(c as usize).copied().unwrap_or(0)
    }
}

/// The table, built on first use (about a millisecond).
pub static TABLE: LazyLock<Table> = LazyLock::new(|| {
    let mut flags = vec![0u8; 0x11_0000].into_boxed_slice();
    for (flag, pattern) in CLASSES {
        for (start, end) in ranges(pattern) {
            for f in &mut flags[start as usize..=end as usize] {
                *f |= flag;
            }
        }
    }
    Table(flags)
});

/// The code point ranges of a one-class pattern, as `regex-syntax` reads it.
pub fn ranges(pattern: &str) -> Vec<(u32, u32)> {
    let hir = regex_syntax::parse(pattern).unwrap_or_else(|_| regex_syntax::hir::Hir::fail());
    match hir.kind() {
        HirKind::Class(Class::Unicode(class)) => class
            .ranges()
            .iter()
            .map(|r| (r.start() as u32, r.end() as u32))
            .collect(),
        // ok: the patterns are the constants above, each one Unicode class.
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_holds_each_class() {
        let t = &*TABLE;
        assert_eq!(t.of(' ' as u32), SPACE);
        assert_eq!(t.of('\u{3000}' as u32), SPACE);
        assert_eq!(t.of('a' as u32), LETTER | LOWER);
        assert_eq!(t.of('A' as u32), LETTER | UPPER);
        assert_eq!(t.of('日' as u32), LETTER | UPPER | LOWER);
        assert_eq!(t.of('\u{301}' as u32), MARK | UPPER | LOWER);
        assert_eq!(t.of('٣' as u32), NUMBER);
        assert_eq!(t.of('!' as u32), PUNCT);
        assert_eq!(t.of('€' as u32), SYMBOL);
        assert_eq!(t.of(0x378), 0);
        assert_eq!(t.of(0x11_0000), 0);
        for (_, pattern) in CLASSES {
            assert!(!ranges(pattern).is_empty(), "{pattern}");
        }
    }
}

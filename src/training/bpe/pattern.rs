//! Hand-written matchers for the `Split` patterns real tokenizers ship, without a regex
//! engine: GPT-4's (cl100k, also Llama 3's), Qwen 2/3's, o200k's (GPT-4o, GPT-OSS), GPT-2's
//! byte-level one, and DeepSeek V3's three, fused into one pass.
//!
//! Each matcher is the pattern's backtracking semantics written out (leftmost-first
//! alternation, greedy repetition giving back what a later part needs, the look-ahead of
//! `\s+(?!\S)`), on the Unicode classes of `classes.rs`. A pattern not listed here runs on the
//! regex engine (`split.rs`), which also serves as the reference the tests check these against
//! on generated and real texts.

use super::classes::{self, LETTER, LOWER, MARK, NUMBER, PUNCT, SPACE, SYMBOL, UPPER};

/// The pattern of the GPT-2 byte-level pre-tokenizer (`ByteLevel` with `use_regex`).
pub const BYTE_LEVEL: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

/// GPT-4's pattern (cl100k; Llama 3 uses it too): digits in threes.
pub const CL100K: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen 2 / 2.5 / 3's pattern: cl100k's with single digits.
pub const QWEN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// o200k's pattern (GPT-4o, GPT-OSS): words cut at case changes.
pub const O200K: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// DeepSeek V3's first pattern: digits in threes.
pub const DEEPSEEK_DIGITS: &str = r"\p{N}{1,3}";
/// DeepSeek V3's second pattern: runs of CJK ideographs, hiragana and katakana.
pub const DEEPSEEK_CJK: &str = "[\u{4e00}-\u{9fa5}\u{3040}-\u{309f}\u{30a0}-\u{30ff}]+";
/// DeepSeek V3's third pattern.
pub const DEEPSEEK: &str = r##"[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"##;

/// A pattern matched by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Known {
    /// [`CL100K`] (`digits` 3) or [`QWEN`] (`digits` 1).
    Cl100k { digits: usize },
    /// [`O200K`].
    O200k,
    /// [`DEEPSEEK_DIGITS`].
    Digits,
    /// [`DEEPSEEK_CJK`].
    Cjk,
    /// [`DEEPSEEK`].
    DeepSeek,
    /// [`DEEPSEEK_DIGITS`], then [`DEEPSEEK_CJK`], then [`DEEPSEEK`], in one pass.
    DeepSeekSequence,
    /// GPT-2's byte-level pattern ([`BYTE_LEVEL`]).
    Gpt2,
}

impl Known {
    /// The matcher of `pattern`, when it is one of those above (written exactly so, but for
    /// carriage returns and line feeds written as characters, as DeepSeek's file has them).
    pub fn of(pattern: &str) -> Option<Self> {
        let pattern = pattern.replace('\r', r"\r").replace('\n', r"\n");
        Some(match pattern.as_str() {
            CL100K => Known::Cl100k { digits: 3 },
            QWEN => Known::Cl100k { digits: 1 },
            O200K => Known::O200k,
            DEEPSEEK_DIGITS => Known::Digits,
            DEEPSEEK_CJK => Known::Cjk,
            DEEPSEEK => Known::DeepSeek,
            BYTE_LEVEL => Known::Gpt2,
            _ => return None,
        })
    }

    /// Calls `piece` with the byte range of each piece of `text` (offset by `base`), in
    /// order: the matches and the text between them, as the regex splitter cuts it.
    pub fn split(self, text: &str, base: usize, piece: &mut dyn FnMut(usize, usize)) {
        if self == Known::DeepSeekSequence {
            return deepseek_sequence(text.as_bytes(), base, piece);
        }
        split_by(self, text.as_bytes(), base, piece);
    }

    /// The end of this pattern's match at `i`, if any.
    #[inline]
    fn match_at(self, t: &[u8], i: usize) -> Option<usize> {
        match self {
            Known::Cl100k { digits } => cl100k(t, i, digits),
            Known::O200k => o200k(t, i),
            Known::Digits => numbers(t, i, 3),
            Known::Cjk => {
                let e = run_while(t, i, |c, _| is_cjk(c));
                (e > i).then_some(e)
            }
            Known::DeepSeek | Known::DeepSeekSequence => deepseek(t, i),
            Known::Gpt2 => gpt2(t, i),
        }
    }
}

/// `t` cut by `known`'s matches and the text between them.
fn split_by(known: Known, t: &[u8], base: usize, piece: &mut dyn FnMut(usize, usize)) {
    let (mut i, mut gap) = (0, 0);
    while i < t.len() {
        match known.match_at(t, i) {
            Some(end) if end > i => {
                if i > gap {
                    piece(base + gap, base + i);
                }
                piece(base + i, base + end);
                i = end;
                gap = end;
            }
            _ => i += char_len(t[i]),
        }
    }
    if gap < t.len() {
        piece(base + gap, base + t.len());
    }
}

/// DeepSeek's three patterns in one pass: each run of up to three digits is a piece (the
/// later patterns find nothing in it), each run of CJK characters and each stretch of
/// neither is cut by the third pattern, as the `Sequence` cuts the pieces of the one before.
fn deepseek_sequence(t: &[u8], base: usize, piece: &mut dyn FnMut(usize, usize)) {
    let table = &*classes::TABLE;
    let mut i = 0;
    while i < t.len() {
        let (c, _) = decode(t, i);
        let end = if flags(table, c) & NUMBER != 0 {
            let e = numbers(t, i, 3).unwrap_or(t.len()); // ok: a number matches
            piece(base + i, base + e);
            i = e;
            continue;
        } else if is_cjk(c) {
            run_while(t, i, |c, _| is_cjk(c))
        } else {
            run_while(t, i, |c, f| f & NUMBER == 0 && !is_cjk(c))
        };
        // `t[i..end]` is whole characters of a `str`.
        split_by(Known::DeepSeek, &t[i..end], base + i, piece);
        i = end;
    }
}

/// The length of the UTF-8 character starting with byte `b`.
#[inline]
fn char_len(b: u8) -> usize {
    match b {
        0..0xc0 => 1,
        0xc0..0xe0 => 2,
        0xe0..0xf0 => 3,
        _ => 4,
    }
}

/// The code point at `i` of `t` (bytes of a `str`, `i` on a character boundary) and its length.
#[inline]
fn decode(t: &[u8], i: usize) -> (u32, usize) {
    let b = t[i] as u32;
    let at = |k: usize| t.get(i + k).map_or(0, |&b| (b & 0x3f) as u32);
    match b {
        0..0x80 => (b, 1),
        0xc0..0xe0 => (((b & 0x1f) << 6) | at(1), 2),
        0xe0..0xf0 => (((b & 0x0f) << 12) | (at(1) << 6) | at(2), 3),
        _ => (((b & 0x07) << 18) | (at(1) << 12) | (at(2) << 6) | at(3), 4),
    }
}

/// The flags of `c` (see `classes.rs`).
#[inline]
fn flags(table: &classes::Table, c: u32) -> u8 {
    if c < 0x80 {
        ASCII[c as usize]
    } else {
        table.of(c)
    }
}

/// The flags of the ASCII characters.
static ASCII: [u8; 128] = {
    let mut out = [0u8; 128];
    let mut c = 0;
    while c < 128 {
        let b = c as u8;
        out[c] = if b.is_ascii_lowercase() {
            LETTER | LOWER
        } else if b.is_ascii_uppercase() {
            LETTER | UPPER
        } else if b.is_ascii_digit() {
            NUMBER
        } else if matches!(b, b'\t'..=b'\r' | b' ') {
            SPACE
        } else if matches!(
            b,
            b'$' | b'+' | b'<' | b'=' | b'>' | b'^' | b'`' | b'|' | b'~'
        ) {
            SYMBOL
        } else if b.is_ascii_punctuation() {
            PUNCT
        } else {
            0
        };
        c += 1;
    }
    out
};

/// Whether `c` is in DeepSeek's CJK class.
#[inline]
fn is_cjk(c: u32) -> bool {
    matches!(c, 0x4e00..=0x9fa5 | 0x3040..=0x309f | 0x30a0..=0x30ff)
}

/// The end of the run of characters from `i` that `keep` (of the code point and its flags).
#[inline]
fn run_while(t: &[u8], mut i: usize, keep: impl Fn(u32, u8) -> bool) -> usize {
    let table = &*classes::TABLE;
    while i < t.len() {
        let (c, len) = decode(t, i);
        if !keep(c, flags(table, c)) {
            break;
        }
        i += len;
    }
    i
}

/// The end of the run of characters from `i` with any of the flags `any`.
#[inline]
fn run(t: &[u8], i: usize, any: u8) -> usize {
    run_while(t, i, |_, f| f & any != 0)
}

/// The character at `i` and its flags, if `i` is inside `t`.
#[inline]
fn at(t: &[u8], i: usize) -> Option<(u32, u8, usize)> {
    if i >= t.len() {
        return None;
    }
    let (c, len) = decode(t, i);
    Some((c, flags(&classes::TABLE, c), len))
}

/// `\p{N}{1,max}` at `i`.
#[inline]
fn numbers(t: &[u8], mut i: usize, max: usize) -> Option<usize> {
    let start = i;
    for _ in 0..max {
        match at(t, i) {
            Some((_, f, len)) if f & NUMBER != 0 => i += len,
            _ => break,
        }
    }
    (i > start).then_some(i)
}

/// `'s|'t|'re|'ve|'m|'ll|'d` at `i`, case-insensitively (`fold`) as `(?i:...)` reads it
/// (`ſ` is an `s`) or not.
#[inline]
fn contraction(t: &[u8], i: usize, fold: bool) -> Option<usize> {
    if t.get(i) != Some(&b'\'') {
        return None;
    }
    let letter = |k: usize| -> Option<(char, usize)> {
        let (c, len) = at(t, k).map(|(c, _, len)| (c, len))?;
        let c = char::from_u32(c)?;
        let c = match c {
            'ſ' if fold => 's',
            c if fold => c.to_ascii_lowercase(),
            c => c,
        };
        Some((c, len))
    };
    let (first, len) = letter(i + 1)?;
    let after = i + 1 + len;
    match first {
        's' | 't' | 'm' | 'd' => Some(after),
        'r' | 'v' | 'l' => {
            let (second, len2) = letter(after)?;
            let wanted = if first == 'l' { 'l' } else { 'e' };
            (second == wanted).then_some(after + len2)
        }
        _ => None,
    }
}

/// The white-space alternatives at `i`: `\s*[\r\n]+` when `newlines`, then
/// `\s+(?!\S)|\s+` (a run followed by text leaves its last character to it).
#[inline]
fn spaces(t: &[u8], i: usize, newlines: bool) -> Option<usize> {
    let table = &*classes::TABLE;
    let (mut k, mut last, mut newline_end) = (i, i, None);
    while k < t.len() {
        let (c, len) = decode(t, k);
        if flags(table, c) & SPACE == 0 {
            break;
        }
        if c == '\r' as u32 || c == '\n' as u32 {
            newline_end = Some(k + len);
        }
        last = k;
        k += len;
    }
    if k == i {
        return None;
    }
    if let (true, Some(end)) = (newlines, newline_end) {
        return Some(end);
    }
    if k < t.len() && last > i {
        return Some(last);
    }
    Some(k)
}

/// ` ?[class]+` at `i` (the class given by `inside`), then the characters `tail` takes.
#[inline]
fn spaced_run(
    t: &[u8],
    i: usize,
    c: u32,
    f: u8,
    len: usize,
    inside: impl Fn(u8) -> bool + Copy,
    tail: impl Fn(u32) -> bool,
) -> Option<usize> {
    let start = if inside(f) {
        i
    } else if c == ' ' as u32 && at(t, i + len).is_some_and(|(_, f, _)| inside(f)) {
        i + len
    } else {
        return None;
    };
    let end = run_while(t, start, |_, f| inside(f));
    Some(run_while(t, end, |c, _| tail(c)))
}

/// `[\r\n]`.
#[inline]
fn is_newline(c: u32) -> bool {
    c == '\r' as u32 || c == '\n' as u32
}

/// [`CL100K`] (`digits` 3) and [`QWEN`] (`digits` 1) at `i`.
fn cl100k(t: &[u8], i: usize, digits: usize) -> Option<usize> {
    let (c, f, len) = at(t, i)?;
    if let Some(e) = contraction(t, i, true) {
        return Some(e);
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if !is_newline(c) && f & (LETTER | NUMBER) == 0 {
        if at(t, i + len).is_some_and(|(_, f, _)| f & LETTER != 0) {
            return Some(run(t, i + len, LETTER));
        }
    } else if f & LETTER != 0 {
        return Some(run(t, i, LETTER));
    }
    if f & NUMBER != 0 {
        return numbers(t, i, digits);
    }
    let other = |f: u8| f & (SPACE | LETTER | NUMBER) == 0;
    if let Some(e) = spaced_run(t, i, c, f, len, other, is_newline) {
        return Some(e);
    }
    spaces(t, i, true)
}

/// [`O200K`] at `i`.
fn o200k(t: &[u8], i: usize) -> Option<usize> {
    let (c, f, len) = at(t, i)?;
    let prefixed = (!is_newline(c) && f & (LETTER | NUMBER) == 0).then_some(i + len);
    let suffix = |e: usize| contraction(t, e, true).unwrap_or(e);
    // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+, with and without the prefix.
    for q in prefixed.into_iter().chain([i]) {
        let mut k = q;
        let mut last_lower = None;
        while let Some((_, f, len)) = at(t, k).filter(|(_, f, _)| f & UPPER != 0) {
            if f & LOWER != 0 {
                last_lower = Some(k + len);
            }
            k += len;
        }
        if at(t, k).is_some_and(|(_, f, _)| f & LOWER != 0) {
            return Some(suffix(run(t, k, LOWER)));
        }
        if let Some(end) = last_lower {
            return Some(suffix(end));
        }
    }
    // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*, with and without the prefix.
    for q in prefixed.into_iter().chain([i]) {
        let k = run(t, q, UPPER);
        if k > q {
            return Some(suffix(run(t, k, LOWER)));
        }
    }
    if f & NUMBER != 0 {
        return numbers(t, i, 3);
    }
    let other = |f: u8| f & (SPACE | LETTER | NUMBER) == 0;
    if let Some(e) = spaced_run(t, i, c, f, len, other, |c| is_newline(c) || c == '/' as u32) {
        return Some(e);
    }
    spaces(t, i, true)
}

/// [`DEEPSEEK`] at `i`.
fn deepseek(t: &[u8], i: usize) -> Option<usize> {
    let (c, f, len) = at(t, i)?;
    // [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
    if c < 0x80 && (c as u8).is_ascii_punctuation() {
        let e = run_while(t, i + 1, |c, _| c < 0x80 && (c as u8).is_ascii_alphabetic());
        if e > i + 1 {
            return Some(e);
        }
    }
    // [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
    if !is_newline(c)
        && f & (LETTER | PUNCT | SYMBOL) == 0
        && at(t, i + len).is_some_and(|(_, f, _)| f & (LETTER | MARK) != 0)
    {
        return Some(run(t, i + len, LETTER | MARK));
    }
    if f & (LETTER | MARK) != 0 {
        return Some(run(t, i, LETTER | MARK));
    }
    let marks = |f: u8| f & (PUNCT | SYMBOL) != 0;
    if let Some(e) = spaced_run(t, i, c, f, len, marks, is_newline) {
        return Some(e);
    }
    spaces(t, i, true)
}

/// GPT-2's pattern ([`BYTE_LEVEL`]) at `i`.
fn gpt2(t: &[u8], i: usize) -> Option<usize> {
    let (c, f, len) = at(t, i)?;
    if let Some(e) = contraction(t, i, false) {
        return Some(e);
    }
    for class in [LETTER, NUMBER] {
        if let Some(e) = spaced_run(t, i, c, f, len, |f| f & class != 0, |_| false) {
            return Some(e);
        }
    }
    let other = |f: u8| f & (SPACE | LETTER | NUMBER) == 0;
    if let Some(e) = spaced_run(t, i, c, f, len, other, |_| false) {
        return Some(e);
    }
    spaces(t, i, false)
}

#[cfg(test)]
mod tests;

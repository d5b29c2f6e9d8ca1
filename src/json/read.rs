//! [`Reader`]: the tokens of one JSON text, read straight from its bytes for
//! [`super::Shapes::parse`].
//!
//! It reads what `serde_json` reads, the same way: a string with no escape borrows from the
//! text, an escaped one is decoded, and a number becomes the [`Number`] `serde_json` makes of
//! it. Anything it does not read exactly as `serde_json` would (a lone surrogate escape, a
//! number it does not read itself and `serde_json` refuses, nesting past [`MAX_DEPTH`]) is
//! refused with `None`; callers then take the slow way through `serde_json`, which reports
//! what is wrong or reads what is right. Building nodes on this reader costs about 30 % less
//! than building them through serde's visitors did (`read_nodes` in `benches/`): records are
//! small and structure-heavy, and there the per-token calls cost more than the scanning.
//! End to end it is smaller: converting the 268 MB LedgerMind bench input took 2.31 s of CPU
//! instead of 2.47 s (about 6 %). It is kept because [`super::Shapes`] needs a reader that
//! checks while it reads, and this one is small and tested against `serde_json` byte by byte
//! (`reads_nothing_serde_json_reads_otherwise`); were it to cost more upkeep, serde's visitors
//! are the fallback (git history has that version).

use std::borrow::Cow;

use serde_json::Number;

use super::node::{Entries, Node};

/// The deepest nesting read: `serde_json`'s recursion limit (128 levels counted from one)
/// leaves 127 open arrays and objects, so no text this reader takes is one it refuses.
const MAX_DEPTH: u32 = 127;

/// A position in a JSON text, and room to gather the items of the arrays and objects being
/// read.
pub(super) struct Reader<'a> {
    text: &'a str,
    at: usize,
    depth: u32,
    /// The items read so far of the arrays being read, innermost last: an array's items are
    /// gathered here and moved into a vector of their exact number when it closes, so that
    /// no array grows by reallocation (records are mostly small arrays and objects).
    pub(super) items: Vec<Node<'a>>,
    /// Likewise the entries of the objects being read.
    pub(super) entries: Entries<'a>,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `text`.
    pub(super) fn new(text: &'a str) -> Self {
        Reader {
            text,
            at: 0,
            depth: 0,
            items: Vec::new(),
            entries: Vec::new(),
        }
    }

    /// The next byte that is not JSON whitespace, not consumed.
    #[inline]
    pub(super) fn peek(&mut self) -> Option<u8> {
        let bytes = self.text.as_bytes();
        while let Some(&b) = bytes.get(self.at) {
            match b {
                b' ' | b'\n' | b'\r' | b'\t' => self.at += 1,
                _ => return Some(b),
            }
        }
        None
    }

    /// Consumes the byte [`Reader::peek`] returned.
    #[inline]
    pub(super) fn bump(&mut self) {
        self.at += 1;
    }

    /// Consumes `byte` when it comes next (after whitespace).
    #[inline]
    pub(super) fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.bump())
    }

    /// True when only whitespace is left.
    pub(super) fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// Reads the array or object that starts at the next byte: `element` reads each of its
    /// elements (an object's key, colon and value), which are separated by commas and end at
    /// `close`. `None` past [`MAX_DEPTH`], or when `element` or the punctuation fails.
    pub(super) fn elements(
        &mut self,
        close: u8,
        mut element: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        self.bump();
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        if self.peek()? != close {
            loop {
                element(self)?;
                match self.peek()? {
                    b',' => self.bump(),
                    b if b == close => break,
                    _ => return None,
                }
            }
        }
        self.bump();
        self.depth -= 1;
        Some(())
    }

    /// Consumes `word` (`true`, `false` or `null`) whole.
    pub(super) fn literal(&mut self, word: &str) -> Option<()> {
        let rest = self.text.as_bytes().get(self.at..)?;
        rest.starts_with(word.as_bytes())
            .then(|| self.at += word.len())
    }

    /// The string that starts at the next byte (a `"`): borrowed when it has no escape.
    pub(super) fn string(&mut self) -> Option<Cow<'a, str>> {
        let bytes = self.text.as_bytes();
        let start = self.at + 1;
        let mut at = plain_run(bytes, start);
        match *bytes.get(at)? {
            b'"' => {
                self.at = at + 1;
                return self.text.get(start..at).map(Cow::Borrowed);
            }
            b'\\' => {}
            // A control character, which JSON strings may not hold as it is.
            _ => return None,
        }
        let mut out = String::with_capacity(at - start + 16);
        out.push_str(self.text.get(start..at)?);
        loop {
            match *bytes.get(at)? {
                b'"' => {
                    self.at = at + 1;
                    return Some(Cow::Owned(out));
                }
                b'\\' => {
                    let (c, len) = escape(bytes.get(at + 1..)?)?;
                    out.push(c);
                    at += 1 + len;
                }
                _ => return None,
            }
            let run = plain_run(bytes, at);
            out.push_str(self.text.get(at..run)?);
            at = run;
        }
    }

    /// The number that starts at the next byte, whether it was written as an integer, and
    /// its value as `f64` (for bounds).
    pub(super) fn number(&mut self) -> Option<(Number, bool, f64)> {
        let bytes = self.text.as_bytes();
        let start = self.at;
        let negative = bytes.get(start) == Some(&b'-');
        let digits = start + usize::from(negative);
        let mut end = digits
            + bytes
                .get(digits..)?
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
        let whole = end - digits;
        let leading_zero = whole > 1 && bytes[digits] == b'0';
        if whole == 0 || leading_zero {
            return None;
        }
        let mut integer = true;
        if bytes.get(end) == Some(&b'.') {
            integer = false;
            end = digits_after(bytes, end + 1)?;
        }
        if matches!(bytes.get(end), Some(b'e' | b'E')) {
            integer = false;
            let sign = usize::from(matches!(bytes.get(end + 1), Some(b'+' | b'-')));
            end = digits_after(bytes, end + 1 + sign)?;
        }
        self.at = end;
        let token = self.text.get(start..end)?;
        // Up to 18 digits fit an i64 with either sign; `-0` is a float to serde_json.
        if integer && whole <= 18 && !(negative && token == "-0") {
            let n: u64 = token[usize::from(negative)..].parse().ok()?;
            let number = match negative {
                true => Number::from(-(n as i64)),
                false => Number::from(n),
            };
            return Some((number, true, if negative { -(n as f64) } else { n as f64 }));
        }
        // An integer past 64 bits, which serde_json would read as a float, is refused: the
        // slow way reports it (`json-number-range`, see `super::strict`).
        if integer && !super::strict::integer_fits(token) {
            return None;
        }
        // Fractions and exponents: `str::parse` rounds correctly, as serde_json does with
        // `float_roundtrip`, so both read the same `f64`; one too large is refused, as
        // serde_json refuses it.
        if !integer {
            let value: f64 = token.parse().ok()?;
            return Number::from_f64(value).map(|number| (number, false, value));
        }
        // Longer integers: as serde_json reads them.
        let number: Number = serde_json::from_str(token).ok()?;
        let integer = !number.is_f64();
        let value = number.as_f64()?;
        Some((number, integer, value))
    }
}

/// The end of the digits starting at `at`, when there is at least one.
fn digits_after(bytes: &[u8], at: usize) -> Option<usize> {
    let n = bytes
        .get(at..)?
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    (n > 0).then_some(at + n)
}

/// The first byte at or after `at` that ends a run of plain string bytes: a quote, a
/// backslash or a control character (or the end), found eight bytes at a time.
#[inline]
fn plain_run(bytes: &[u8], mut at: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // The lowest byte flagged by each test is exact (higher ones may be flagged falsely).
    let zero_bytes = |w: u64| w.wrapping_sub(ONES) & !w & HIGH;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let special = zero_bytes(w ^ (ONES * u64::from(b'"')))
            | zero_bytes(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w & HIGH);
        if special != 0 {
            return at + (special.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at + bytes
        .get(at..)
        .unwrap_or_default()
        .iter()
        .take_while(|&&b| b != b'"' && b != b'\\' && b >= 0x20)
        .count()
}

/// The character of the escape whose text follows a backslash, and that text's length; `None`
/// for an unknown escape or a surrogate that is not half of a pair.
fn escape(after: &[u8]) -> Option<(char, usize)> {
    let simple = match *after.first()? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let high = hex4(after.get(1..5)?)?;
            if !(0xD800..0xE000).contains(&high) {
                return Some((char::from_u32(high)?, 5));
            }
            // A high surrogate followed by `\u` and a low one.
            let low = match after.get(5..7)? {
                b"\\u" => hex4(after.get(7..11)?)?,
                _ => return None,
            };
            if !(0xD800..0xDC00).contains(&high) || !(0xDC00..0xE000).contains(&low) {
                return None;
            }
            let c = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
            return Some((char::from_u32(c)?, 11));
        }
        _ => return None,
    };
    Some((simple, 1))
}

/// Four hex digits.
fn hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |n, &d| {
        let v = (d as char).to_digit(16)?;
        Some(n * 16 + v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(text: &str) -> Option<Cow<'_, str>> {
        let mut r = Reader::new(text);
        let s = r.string()?;
        r.at_end().then_some(s)
    }

    fn number(text: &str) -> Option<(Number, bool)> {
        let mut r = Reader::new(text);
        let (n, integer, value) = r.number()?;
        assert_eq!(n.as_f64(), Some(value), "{text}");
        r.at_end().then_some((n, integer))
    }

    #[test]
    fn strings_read_as_serde_json_reads_them() {
        for text in [
            r#""""#,
            r#""plain text, long enough to take a few words at a time""#,
            r#""é and 😀 and ✓ around""#,
            r#""esc \" \\ \/ \b \f \n \r \t end""#,
            r#""\u0041\u00e9\u20AC\ud83d\ude00""#,
            r#""a\"""#,
            r#""12345678\n12345678""#,
        ] {
            let ours = string(text).map(|s| s.into_owned());
            let theirs: Option<String> = serde_json::from_str(text).ok();
            assert_eq!(ours, theirs, "{text}");
        }
        assert!(matches!(string(r#""no escape""#), Some(Cow::Borrowed(_))));
        // Refused here; serde_json refuses all but the last too, and reads that one the slow way.
        for text in [
            "\"tab\tinside\"",
            "\"new\nline\"",
            r#""open"#,
            r#""bad \x escape""#,
            r#""\u12""#,
            r#""\ud83d alone""#,
            r#""\ude00 alone""#,
            r#""\ud83d\u0041""#,
        ] {
            assert_eq!(string(text), None, "{text}");
        }
    }

    #[test]
    fn numbers_read_as_serde_json_reads_them() {
        for text in [
            "0",
            "7",
            "-7",
            "123456789012345678",
            "-123456789012345678",
            "1234567890123456789",
            "18446744073709551615",
            "-9223372036854775808",
            "-0",
            "0.5",
            "-0.0",
            "1e3",
            "1E+3",
            "2.5e-3",
            "1.0",
            "0.1000000000000000055511151231257827",
            "123456789012345678901234567890.0",
            "0.30000000000000004",
            "9007199254740993.0",
            "2.2250738585072011e-308",
            "4.9e-324",
            "1e-400",
            "0e99999999999999999999",
            "1.7976931348623157e308",
            "0.07222222536802292",
            "-1242.5E-2",
        ] {
            let theirs: Number = serde_json::from_str(text).expect(text);
            let ours = number(text).expect(text);
            assert_eq!(ours, (theirs.clone(), !theirs.is_f64()), "{text}");
        }
        // Integers past 64 bits too, which serde_json reads as floats (`json-number-range`).
        for text in [
            "-",
            "01",
            "-01",
            "1.",
            ".5",
            "1e",
            "1e+",
            "+1",
            "1e999",
            "1.8e308",
            "-1e99999999999999999999",
            "18446744073709551616",
            "-9223372036854775809",
            "123456789012345678901234567890",
        ] {
            assert_eq!(number(text), None, "{text}");
        }
    }

    #[test]
    fn plain_runs_stop_at_the_first_special_byte() {
        let text = "abcdefgh\"ijklmnop\\qrst\u{1}uvwxyz";
        let bytes = text.as_bytes();
        for start in 0..bytes.len() {
            let slow = (start..bytes.len())
                .find(|&i| matches!(bytes[i], b'"' | b'\\') || bytes[i] < 0x20)
                .unwrap_or(bytes.len());
            assert_eq!(plain_run(bytes, start), slow, "from {start}");
        }
        // Bytes of multi-byte characters are not special.
        assert_eq!(plain_run("éééééééé\"".as_bytes(), 0), 16);
    }
}

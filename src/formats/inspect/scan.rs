//! The outline of an Inspect `.json` log, found by one streaming scan that parses nothing: its
//! top-level keys, the values of the few header keys a trajectory needs (captured whole), and
//! where each element of `samples` starts and ends (offset and line). The log is then read a
//! second time, one sample at a time ([`super::reader`]), so memory holds one sample, not the
//! log (Inspect's `.json` logs run to gigabytes; one of a few MiB is kept in memory instead).
//!
//! The scan follows strings (and their escapes) and brackets only; it does not check the JSON
//! grammar, which the parse of each sample does. It stops at the first bracket that does not
//! match, or at the end of the input inside the document: the samples before are complete,
//! and what was cut is reported with its line.

use std::io::{self, BufRead};

/// Top-level keys whose values are captured (the log's header: what every sample's trajectory
/// carries). The rest of the header (`results`, `stats`, `reductions`) is about the whole run.
pub const CAPTURED: &[&str] = &["version", "status", "eval", "plan", "error"];

/// Where one value of the input is: `[start, end)` in bytes of the (decompressed) input, and the
/// 1-based line of its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Offset of the first byte.
    pub start: u64,
    /// Offset after the last byte (before the `,` or `]` that ends it).
    pub end: u64,
    /// Line of the first byte.
    pub line: u64,
}

/// Why the scan stopped before the document ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// The input ended inside the document; `line` is where the value being read starts (the
    /// cut sample, or the top-level value).
    Truncated {
        /// Line of the cut value.
        line: u64,
        /// The cut sample, when the cut is inside one.
        sample: Option<Span>,
    },
    /// A bracket that does not match, or text after the document, at `line`.
    Syntax {
        /// Where.
        line: u64,
        /// What.
        message: String,
    },
}

/// What one scan found.
#[derive(Debug, Default)]
pub struct Outline {
    /// The first non-blank byte is `{`.
    pub is_object: bool,
    /// Top-level keys, in order.
    pub keys: Vec<String>,
    /// The captured header values ([`CAPTURED`]), as raw JSON text.
    pub header: Vec<(String, Vec<u8>)>,
    /// The complete elements of `samples`, in order.
    pub samples: Vec<Span>,
    /// Why the scan stopped early, if it did.
    pub stop: Option<Stop>,
    /// Bytes read.
    pub bytes: u64,
}

impl Outline {
    /// The captured raw value of header key `key`.
    pub fn header_value(&self, key: &str) -> Option<&[u8]> {
        self.header
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_slice())
    }
}

/// When to stop before the end: after `budget` bytes, or (for detection) as soon as `done`
/// says the outline so far decides the question.
pub struct Limits<'a> {
    /// Most bytes to read.
    pub budget: u64,
    /// Stop once this holds.
    pub done: &'a dyn Fn(&Outline) -> bool,
}

/// Most bytes scanned between two checks of [`Limits`].
const LIMITS_STEP: usize = 64 << 10;

/// The scanner's state between bytes.
struct Scanner {
    out: Outline,
    offset: u64,
    /// The line at byte `counted` of the current chunk: newlines are counted in bulk, up to
    /// where a line is needed and at the end of each chunk, not byte by byte.
    line: u64,
    counted: usize,
    /// Open brackets.
    stack: Vec<u8>,
    in_string: bool,
    escape: bool,
    /// At depth 1: the next string is a key.
    expect_key: bool,
    /// The key being read (at depth 1), and the last key read.
    key: Option<Vec<u8>>,
    current_key: Option<String>,
    /// The top-level value being read: its start, line, and its bytes when captured.
    value: Option<(u64, u64)>,
    capture: Option<Vec<u8>>,
    /// Inside the `samples` array; the element being read.
    in_samples: bool,
    element: Option<(u64, u64)>,
    closed: bool,
}

/// Scans `reader` (see the module docs).
pub fn scan(reader: &mut dyn BufRead, limits: Option<&Limits<'_>>) -> io::Result<Outline> {
    let mut s = Scanner {
        out: Outline::default(),
        offset: 0,
        line: 1,
        counted: 0,
        stack: Vec::new(),
        in_string: false,
        escape: false,
        expect_key: false,
        key: None,
        current_key: None,
        value: None,
        capture: None,
        in_samples: false,
        element: None,
        closed: false,
    };
    let mut started = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            break;
        }
        // With limits, a bounded step between checks: a reader's buffer may hold the whole
        // file, and detection should stop at the header.
        let n = match limits {
            Some(_) => chunk.len().min(LIMITS_STEP),
            None => chunk.len(),
        };
        let chunk = &chunk[..n];
        let mut i = 0;
        while i < n {
            if s.stack.len() > 2 && s.capture.is_none() {
                i = s.skim(chunk, i);
                if i == n {
                    break;
                }
            }
            if s.in_string {
                i = s.string_bytes(chunk, i);
                continue;
            }
            let b = chunk[i];
            if !started {
                if b.is_ascii_whitespace() || (s.offset < 3 && matches!(b, 0xEF | 0xBB | 0xBF)) {
                    // Blank lines (and a UTF-8 byte-order mark) before the document.
                    s.advance(b);
                    i += 1;
                    continue;
                }
                started = true;
                if b != b'{' {
                    s.out.bytes = s.offset;
                    return Ok(s.out);
                }
                s.out.is_object = true;
            }
            if let Err(message) = s.byte(b, chunk, i) {
                s.sync_line(chunk, i);
                s.out.stop = Some(Stop::Syntax {
                    line: s.line,
                    message,
                });
                s.out.bytes = s.offset;
                return Ok(s.out);
            }
            i += 1;
        }
        s.sync_line(chunk, n);
        s.counted = 0;
        reader.consume(n);
        if let Some(l) = limits {
            if s.offset >= l.budget || (l.done)(&s.out) {
                s.out.bytes = s.offset;
                return Ok(s.out);
            }
        }
    }
    if !s.stack.is_empty() {
        let sample = s.element.map(|(start, line)| Span {
            start,
            end: s.offset,
            line,
        });
        let line = match (sample, s.value) {
            (Some(span), _) => span.line,
            (None, Some((_, line))) => line,
            (None, None) => s.line,
        };
        s.out.stop = Some(Stop::Truncated { line, sample });
    }
    s.out.bytes = s.offset;
    Ok(s.out)
}

impl Scanner {
    /// Counts the lines of `chunk` up to byte `i`.
    fn sync_line(&mut self, chunk: &[u8], i: usize) {
        if let Some(skipped) = chunk.get(self.counted..i) {
            self.line += memchr::memchr_iter(b'\n', skipped).count() as u64;
            self.counted = i;
        }
    }

    /// Moves past byte `b` (capturing).
    fn advance(&mut self, b: u8) {
        if let Some(c) = self.capture.as_mut() {
            c.push(b);
        }
        if let Some(k) = self.key.as_mut() {
            k.push(b);
        }
        self.offset += 1;
    }

    /// Bytes from `i` deep inside a value (below the elements of `samples`, outside captured
    /// values), where only strings and brackets matter: skipped in one tight loop, up to the end
    /// of `chunk` or the first byte the general path must see (a bracket that does not match,
    /// or one that closes the value at depth 2). Returns the index it stopped at.
    fn skim(&mut self, chunk: &[u8], mut i: usize) -> usize {
        let start = i;
        let (mut in_string, mut escape) = (self.in_string, self.escape);
        while let Some(&b) = chunk.get(i) {
            if in_string {
                if escape {
                    escape = false;
                } else if let Some(stop) = chunk[i..].iter().position(|&c| c == b'"' || c == b'\\')
                {
                    i += stop;
                    in_string = chunk[i] != b'"';
                    escape = in_string;
                } else {
                    i = chunk.len();
                    break;
                }
            } else {
                match b {
                    b'"' => in_string = true,
                    b'{' | b'[' => self.stack.push(b),
                    b'}' | b']' => {
                        let open = if b == b'}' { b'{' } else { b'[' };
                        if self.stack.len() <= 3 || self.stack.last() != Some(&open) {
                            break;
                        }
                        self.stack.pop();
                    }
                    _ => {}
                }
            }
            i += 1;
        }
        (self.in_string, self.escape) = (in_string, escape);
        self.offset += (i - start) as u64;
        i
    }

    /// Bytes inside a string from `i`: up to the next quote or backslash at once. Returns the
    /// index after what was consumed.
    fn string_bytes(&mut self, chunk: &[u8], i: usize) -> usize {
        if self.escape {
            self.escape = false;
            self.advance(chunk[i]);
            return i + 1;
        }
        let rest = &chunk[i..];
        let stop = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
        let plain = &rest[..stop];
        if let Some(c) = self.capture.as_mut() {
            c.extend_from_slice(plain);
        }
        if let Some(k) = self.key.as_mut() {
            k.extend_from_slice(plain);
        }
        self.offset += plain.len() as u64;
        let Some(&b) = rest.get(stop) else {
            return chunk.len();
        };
        if b == b'\\' {
            self.escape = true;
            self.advance(b);
        } else {
            self.in_string = false;
            // The key's closing quote is not part of it.
            let key = self.key.take();
            self.advance(b);
            if let Some(k) = key {
                let name = String::from_utf8_lossy(&k).into_owned();
                self.out.keys.push(name.clone());
                self.current_key = Some(name);
            }
        }
        i + stop + 1
    }

    /// One byte outside strings, byte `i` of `chunk`.
    fn byte(&mut self, b: u8, chunk: &[u8], i: usize) -> Result<(), String> {
        if self.closed {
            if b.is_ascii_whitespace() {
                self.advance(b);
                return Ok(());
            }
            return Err("text after the log's JSON document".to_owned());
        }
        let depth = self.stack.len();
        if b.is_ascii_whitespace() {
            self.advance(b);
            return Ok(());
        }
        // A value starts at depth 1 (after its key's colon), or an element of `samples` at 2.
        if depth == 1
            && self.value.is_none()
            && !self.expect_key
            && !matches!(b, b':' | b',' | b'}')
        {
            self.sync_line(chunk, i);
            self.value = Some((self.offset, self.line));
            if self
                .current_key
                .as_deref()
                .is_some_and(|k| CAPTURED.contains(&k))
            {
                self.capture = Some(Vec::new());
            }
            if b == b'[' && self.current_key.as_deref() == Some("samples") {
                self.in_samples = true;
            }
        }
        if depth == 2 && self.in_samples && self.element.is_none() && !matches!(b, b',' | b']') {
            self.sync_line(chunk, i);
            self.element = Some((self.offset, self.line));
        }
        match b {
            b'"' => {
                if depth == 1 && self.expect_key {
                    self.expect_key = false;
                    self.advance(b);
                    self.key = Some(Vec::new());
                } else {
                    self.advance(b);
                }
                self.in_string = true;
            }
            b'{' | b'[' => {
                self.stack.push(b);
                if self.stack.len() == 1 {
                    self.expect_key = true;
                }
                self.advance(b);
            }
            b'}' | b']' => {
                let open = if b == b'}' { b'{' } else { b'[' };
                if self.stack.last() != Some(&open) {
                    return Err(format!("unexpected `{}`", b as char));
                }
                if depth == 2 && self.in_samples {
                    self.end_element();
                    self.in_samples = false;
                }
                if depth == 1 {
                    self.end_value();
                    self.closed = true;
                }
                self.stack.pop();
                self.advance(b);
            }
            b',' => {
                if depth == 2 && self.in_samples {
                    self.end_element();
                }
                if depth == 1 {
                    self.end_value();
                    self.expect_key = true;
                }
                self.advance(b);
            }
            _ => self.advance(b),
        }
        Ok(())
    }

    fn end_element(&mut self) {
        if let Some((start, line)) = self.element.take() {
            self.out.samples.push(Span {
                start,
                end: self.offset,
                line,
            });
        }
    }

    fn end_value(&mut self) {
        self.value = None;
        if let (Some(mut bytes), Some(key)) = (self.capture.take(), self.current_key.clone()) {
            while bytes.last().is_some_and(u8::is_ascii_whitespace) {
                bytes.pop();
            }
            self.out.header.push((key, bytes));
        }
        self.current_key = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outline(text: &str) -> Outline {
        scan(&mut text.as_bytes(), None).expect("in memory")
    }

    fn slice(text: &str, s: Span) -> &str {
        text[s.start as usize..s.end as usize].trim_end()
    }

    #[test]
    fn finds_header_values_and_sample_spans() {
        let text = "{\n  \"version\": 2,\n  \"eval\": {\"task\": \"t}\\\"[\", \"n\": [1, {}]},\n  \"results\": {\"x\": 1},\n  \"samples\": [\n    {\"id\": 1, \"s\": \"a,]\"},\n    {\"id\": \"b\"}\n  ],\n  \"reductions\": []\n}\n";
        let o = outline(text);
        assert!(o.is_object);
        assert_eq!(
            o.keys,
            ["version", "eval", "results", "samples", "reductions"]
        );
        assert_eq!(o.header_value("version"), Some(&b"2"[..]));
        assert_eq!(
            o.header_value("eval"),
            Some(&br#"{"task": "t}\"[", "n": [1, {}]}"#[..])
        );
        assert!(o.header_value("results").is_none());
        assert_eq!(o.samples.len(), 2);
        assert_eq!(slice(text, o.samples[0]), r#"{"id": 1, "s": "a,]"}"#);
        assert_eq!(o.samples[0].line, 6);
        assert_eq!(slice(text, o.samples[1]), r#"{"id": "b"}"#);
        assert_eq!(o.samples[1].line, 7);
        assert_eq!(o.stop, None);
    }

    #[test]
    fn a_cut_sample_is_reported_with_its_line_and_the_samples_before_are_kept() {
        let text = "{\"eval\": {}, \"samples\": [\n{\"id\": 1},\n{\"id\": 2, \"messages\": [";
        let o = outline(text);
        assert_eq!(o.samples.len(), 1);
        match o.stop {
            Some(Stop::Truncated {
                line: 3,
                sample: Some(span),
            }) => assert_eq!(span.line, 3),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn any_buffer_size_finds_the_same_outline() {
        let text = "{\"version\": 2,\n\"samples\": [\n{\"m\": [{\"a\": \"x\\\"]}\\\\\"},\n [[1], {\"b\": []}]]},\n{\"m\": {\"c\": [\n{\"d\": 1]}}},\n{}]}";
        let whole = outline(text);
        assert_eq!(whole.samples.len(), 1);
        assert!(matches!(whole.stop, Some(Stop::Syntax { line: 6, .. })));
        for size in 1..8 {
            let mut reader = io::BufReader::with_capacity(size, text.as_bytes());
            let o = scan(&mut reader, None).expect("in memory");
            assert_eq!(o.samples, whole.samples, "buffer of {size}");
            assert_eq!(o.stop, whole.stop, "buffer of {size}");
        }
    }

    #[test]
    fn a_bracket_that_does_not_match_stops_the_scan() {
        let o = outline("{\"samples\": [{\"id\": 1}, {\"id\": 2]}]}");
        assert_eq!(o.samples.len(), 1);
        assert!(matches!(o.stop, Some(Stop::Syntax { line: 1, .. })));
        let o = outline("{\"a\": 1} x");
        assert!(matches!(o.stop, Some(Stop::Syntax { .. })));
    }

    #[test]
    fn a_document_that_is_not_an_object_is_said_so() {
        assert!(!outline("  [1, 2]").is_object);
        assert!(!outline("").is_object);
    }

    #[test]
    fn stops_when_told() {
        let text = "{\"version\": 2, \"eval\": {\"task\": \"t\"}, \"samples\": [{}]}";
        let done = |o: &Outline| o.header_value("eval").is_some();
        let limits = Limits {
            budget: 1 << 20,
            done: &done,
        };
        let mut reader = io::BufReader::with_capacity(8, text.as_bytes());
        let o = scan(&mut reader, Some(&limits)).expect("in memory");
        assert!(o.header_value("eval").is_some());
        assert!(o.samples.is_empty());
    }

    #[test]
    fn stops_when_told_even_when_the_buffer_holds_the_whole_log() {
        let sample = "{\"id\": 1, \"messages\": []}";
        let samples = vec![sample; 20_000].join(",");
        let text = format!("{{\"version\": 2, \"eval\": {{}}, \"samples\": [{samples}]}}");
        let done = |o: &Outline| o.header_value("eval").is_some();
        let limits = Limits {
            budget: 1 << 30,
            done: &done,
        };
        let mut reader = io::BufReader::with_capacity(text.len(), text.as_bytes());
        let o = scan(&mut reader, Some(&limits)).expect("in memory");
        assert!(o.header_value("eval").is_some());
        assert!(
            o.bytes <= LIMITS_STEP as u64,
            "{} of {}",
            o.bytes,
            text.len()
        );
    }
}

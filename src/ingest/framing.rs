//! Splitting an input stream into records without parsing them.
//!
//! Three layouts, chosen from the input's name and first byte (see [`LayoutHint`]):
//! - **JSON lines**: `.jsonl`/`.ndjson`, or a non-`.json` input not starting with `[`; each
//!   non-blank line is a record.
//! - **JSON array**: a `.json` or unnamed input whose first non-blank byte is `[`; each element
//!   is a record.
//! - **JSON documents**: a `.json` or `.traj` file that is not an array holds one
//!   or more JSON values (one pretty-printed object, or several concatenated).
//!
//! Framing only finds record boundaries (tracking strings, escapes and nesting depth without
//! recursion, so arbitrarily deep input cannot overflow the stack); parsing happens later, in
//! parallel. Each record carries the 1-based line on which it starts.
//!
//! Every frame the framer emits has consumed input, or ends the input: bytes that cannot start
//! a JSON value (`,` `]` `}` `:`) between documents are reported once per run and skipped,
//! inside an array they stop the input, and a guard in [`Framer`]'s `next` ends the input
//! should any step ever cut a frame without consuming a byte (a frame that consumes nothing
//! would be cut again and again, forever). An input in UTF-16 or UTF-32 is refused at its first
//! bytes, naming the encoding.

use std::io::{self, BufRead};

use super::LayoutHint;
use crate::json::strict::JsonProblem;

/// The most bytes of an oversized or unframeable record kept for the rejects file.
pub const PREVIEW_BYTES: usize = 4096;

/// How an input's records are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One record per non-blank line.
    Lines,
    /// A single JSON array of records.
    Array,
    /// One or more whitespace-separated JSON values.
    Documents,
}

/// Why a frame could not be cut cleanly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// The record is larger than the configured limit; `bytes` holds a preview.
    TooLarge {
        /// The record's size in bytes.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The input ended inside this record.
    Truncated,
    /// The bytes around here do not form a JSON array or JSON values. Reading this input stops,
    /// except after stray bytes between JSON documents, which are skipped.
    Syntax(String),
    /// Reading (or decompressing) failed; reading this input stops.
    Read(String),
    /// The record is JSON but not what the format's reader expects (e.g. not an object).
    Invalid(String),
    /// A Parquet row could not be turned back into a trajectory: the value at `pointer` (in
    /// the trajectory it would have been) is missing or malformed.
    Row {
        /// JSON pointer into the trajectory.
        pointer: String,
        /// What is wrong.
        message: String,
    },
    /// The record (or the input) breaks one of trajkit's rules on JSON text: its encoding, a
    /// duplicate key, an integer past 64 bits (see [`crate::json::strict`]).
    ///
    /// Boxed so that this rare error does not make every frame and record larger: unboxed it
    /// took `FrameError` from 48 to 64 bytes and `RawRecord` from 120 to 136, past the 128
    /// bytes that the compiler moves inline, so each record's moves from the framer to its
    /// batch and to the sink became `memcpy` calls (about 90 instructions a record in
    /// callgrind, 0.2 % of converting the bench's ShareGPT rows).
    Json(Box<JsonProblem>),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::TooLarge { size, limit } => write!(
                f,
                "record is {size} bytes, over the limit of {limit} bytes (--max-record-bytes)"
            ),
            FrameError::Truncated => f.write_str("input ends inside this record (truncated JSON)"),
            FrameError::Syntax(m) => f.write_str(m),
            FrameError::Read(m) => write!(f, "reading failed: {m}"),
            FrameError::Invalid(m) => f.write_str(m),
            FrameError::Row { message, .. } => f.write_str(message),
            FrameError::Json(p) => f.write_str(&p.message),
        }
    }
}

/// One record's bytes and where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// 1-based line of the record's first byte.
    pub line: u64,
    /// Position of the record's first byte in the (decompressed) stream: for a plain file,
    /// `bytes` is the file's content at this offset (when `error` is `None`).
    pub offset: u64,
    /// The record's bytes (a preview only when `error` is `TooLarge`, `Syntax` or `Read`).
    pub bytes: Vec<u8>,
    /// Set when the record could not be framed cleanly.
    pub error: Option<FrameError>,
}

/// A record's bytes as they are read: kept whole up to the size limit, then only a preview,
/// while the full size is still counted.
struct CappedBytes {
    bytes: Vec<u8>,
    size: u64,
    limit: u64,
}

impl CappedBytes {
    fn new(limit: usize) -> Self {
        CappedBytes::reusing(Vec::new(), limit)
    }

    /// Bytes read into `room` (emptied first), which keeps its allocation.
    fn reusing(mut room: Vec<u8>, limit: usize) -> Self {
        room.clear();
        CappedBytes {
            bytes: room,
            size: 0,
            limit: limit as u64,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        self.size += chunk.len() as u64;
        if self.size <= self.limit {
            self.bytes.extend_from_slice(chunk);
        } else if self.bytes.len() < PREVIEW_BYTES {
            let room = PREVIEW_BYTES - self.bytes.len();
            self.bytes
                .extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
    }

    fn is_blank(&self) -> bool {
        self.size <= self.limit && self.bytes.iter().all(u8::is_ascii_whitespace)
    }

    /// The frame starting at `line`; `TooLarge` (with a preview) when over the limit, else
    /// `error`.
    fn into_frame(mut self, line: u64, offset: u64, error: Option<FrameError>) -> Frame {
        let error = if self.size > self.limit {
            self.bytes.truncate(PREVIEW_BYTES);
            Some(FrameError::TooLarge {
                size: self.size,
                limit: self.limit,
            })
        } else {
            if error.is_some() {
                self.bytes.truncate(PREVIEW_BYTES);
            }
            error
        };
        Frame {
            line,
            offset,
            bytes: self.bytes,
            error,
        }
    }
}

/// Streams the frames of one input.
pub struct Framer<R> {
    reader: R,
    layout: Option<Layout>,
    hint: LayoutHint,
    line: u64,
    max_bytes: usize,
    done: bool,
    emitted: u64,
    /// Bytes consumed from the (decompressed) stream so far.
    pub bytes_read: u64,
    /// A frame's bytes given back ([`Framer::recycle`]), to read the next line into.
    spare: Vec<u8>,
}

impl<R: BufRead> Framer<R> {
    /// A framer over `reader`, whose name gave `hint`.
    pub fn new(reader: R, hint: LayoutHint, max_bytes: usize) -> Self {
        Framer {
            reader,
            layout: None,
            hint,
            line: 1,
            max_bytes,
            done: false,
            emitted: 0,
            bytes_read: 0,
            spare: Vec::new(),
        }
    }

    /// Takes back the bytes of a frame the caller is done with (copied elsewhere): the next
    /// line is read into them, so that a reader gathering a file's lines allocates once
    /// rather than once a line.
    pub fn recycle(&mut self, bytes: Vec<u8>) {
        self.spare = bytes;
    }

    fn consume(&mut self, n: usize) {
        self.reader.consume(n);
        self.bytes_read += n as u64;
    }

    /// Skips whitespace (and a UTF-8 byte-order mark at the very start), counting lines.
    /// Returns the next byte without consuming it, or `None` at the end.
    fn skip_blank(&mut self) -> io::Result<Option<u8>> {
        loop {
            let chunk = self.reader.fill_buf()?;
            if chunk.is_empty() {
                return Ok(None);
            }
            if self.bytes_read == 0 && chunk.starts_with(b"\xEF\xBB\xBF") {
                self.consume(3);
                continue;
            }
            let mut n = 0;
            let mut lines = 0;
            let mut found = None;
            for &b in chunk {
                match b {
                    b'\n' => lines += 1,
                    b' ' | b'\t' | b'\r' => {}
                    other => {
                        found = Some(other);
                        break;
                    }
                }
                n += 1;
            }
            self.line += lines;
            self.consume(n);
            if found.is_some() {
                return Ok(found);
            }
        }
    }

    /// Whether the line the reader is at (starting with `{`) holds nothing else, as far as the
    /// buffered bytes show.
    fn lone_brace(&mut self) -> io::Result<bool> {
        let chunk = self.reader.fill_buf()?;
        let rest = chunk.get(1..).unwrap_or_default();
        Ok(rest
            .iter()
            .find(|b| !matches!(b, b' ' | b'\t' | b'\r'))
            .is_some_and(|&b| b == b'\n'))
    }

    fn detect(&mut self) -> io::Result<Layout> {
        let layout = match (self.hint, self.skip_blank()?) {
            // A lone `{` on the first line is no JSON line: a pretty-printed document under a
            // lines name (Entire copies Gemini CLI's session document to `full.jsonl`).
            (LayoutHint::Lines, Some(b'{')) if self.lone_brace()? => Layout::Documents,
            (LayoutHint::Lines, _) => Layout::Lines,
            (_, Some(b'[')) => {
                self.consume(1);
                Layout::Array
            }
            (LayoutHint::Json, _) => Layout::Documents,
            (LayoutHint::Sniff, _) => Layout::Lines,
        };
        self.layout = Some(layout);
        Ok(layout)
    }

    fn fail(&mut self, line: u64, bytes: Vec<u8>, error: FrameError) -> Option<Frame> {
        self.done = true;
        Some(Frame {
            line,
            offset: self.bytes_read,
            bytes,
            error: Some(error),
        })
    }

    fn next_line(&mut self) -> io::Result<Option<Frame>> {
        loop {
            let start = self.line;
            let offset = self.bytes_read;
            let mut record = CappedBytes::reusing(std::mem::take(&mut self.spare), self.max_bytes);
            let mut saw_any = false;
            loop {
                let chunk = self.reader.fill_buf()?;
                if chunk.is_empty() {
                    break;
                }
                saw_any = true;
                let (take, ends) = match memchr::memchr(b'\n', chunk) {
                    Some(i) => (i, true),
                    None => (chunk.len(), false),
                };
                record.push(&chunk[..take]);
                self.consume(take + usize::from(ends));
                if ends {
                    self.line += 1;
                    break;
                }
            }
            if !saw_any {
                return Ok(None);
            }
            if record.is_blank() {
                continue;
            }
            return Ok(Some(record.into_frame(start, offset, None)));
        }
    }

    /// Cuts one JSON value starting at the current (non-blank) byte.
    fn next_value(&mut self) -> io::Result<Frame> {
        let start = self.line;
        let offset = self.bytes_read;
        let mut record = CappedBytes::new(self.max_bytes);
        let mut scan = ValueScan::default();
        loop {
            let chunk = self.reader.fill_buf()?;
            if chunk.is_empty() {
                let complete = scan.scalar_started() && !scan.in_string;
                let error = (!complete).then_some(FrameError::Truncated);
                return Ok(record.into_frame(start, offset, error));
            }
            let (used, lines, complete) = scan.feed(chunk);
            record.push(&chunk[..used]);
            self.line += lines;
            self.consume(used);
            if complete {
                return Ok(record.into_frame(start, offset, None));
            }
        }
    }

    fn next_array_element(&mut self, first: bool) -> io::Result<Option<Frame>> {
        let mut next = self.skip_blank()?;
        if !first {
            match next {
                Some(b',') => {
                    self.consume(1);
                    next = self.skip_blank()?;
                }
                Some(b']') => return self.finish_array(),
                Some(other) => {
                    let line = self.line;
                    return Ok(self.fail(
                        line,
                        Vec::new(),
                        FrameError::Syntax(format!(
                            "expected ',' or ']' after an array element, found {:?}",
                            other as char
                        )),
                    ));
                }
                None => {
                    let line = self.line;
                    return Ok(self.fail(line, Vec::new(), FrameError::Truncated));
                }
            }
        } else if next == Some(b']') {
            return self.finish_array();
        }
        match next {
            None => {
                let line = self.line;
                Ok(self.fail(line, Vec::new(), FrameError::Truncated))
            }
            Some(b) if cannot_start_value(b) => {
                let line = self.line;
                Ok(self.fail(line, vec![b], FrameError::Syntax(expected_value(b))))
            }
            Some(_) => {
                let frame = self.next_value()?;
                if frame.error == Some(FrameError::Truncated) {
                    self.done = true;
                }
                Ok(Some(frame))
            }
        }
    }

    /// Consumes a run of bytes between JSON documents that cannot start a value (`,` `]` `}`
    /// `:`, and the whitespace among them), `first` being the first, and reports the run as
    /// one frame; reading goes on with the next value.
    fn stray(&mut self, first: u8) -> io::Result<Frame> {
        let line = self.line;
        let offset = self.bytes_read;
        let mut run = CappedBytes::new(0);
        loop {
            let chunk = self.reader.fill_buf()?;
            let n = chunk
                .iter()
                .take_while(|&&b| {
                    cannot_start_value(b) || matches!(b, b' ' | b'\t' | b'\r' | b'\n')
                })
                .count();
            let lines = chunk[..n].iter().filter(|&&b| b == b'\n').count();
            run.push(&chunk[..n]);
            let more = n == chunk.len() && n > 0;
            self.line += lines as u64;
            self.consume(n);
            if !more {
                break;
            }
        }
        let mut bytes = run.bytes;
        while bytes
            .last()
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        {
            bytes.pop();
        }
        Ok(Frame {
            line,
            offset,
            bytes,
            error: Some(FrameError::Syntax(expected_value(first))),
        })
    }

    /// `frame`, or, when it consumed no input and the input goes on, an error frame that ends
    /// the input: a frame that consumed nothing would be cut again, forever.
    fn progress(&mut self, frame: Frame) -> Option<Frame> {
        if self.done || self.bytes_read > frame.offset {
            return Some(frame);
        }
        let line = self.line;
        let message = format!(
            "cannot frame a record at byte {} of the input; reading this input stops",
            frame.offset
        );
        self.fail(line, frame.bytes, FrameError::Syntax(message))
    }

    fn finish_array(&mut self) -> io::Result<Option<Frame>> {
        self.consume(1);
        self.done = true;
        match self.skip_blank()? {
            None => Ok(None),
            Some(_) => {
                let line = self.line;
                Ok(self.fail(
                    line,
                    Vec::new(),
                    FrameError::Syntax(
                        "unexpected data after the closing ']' of the JSON array".into(),
                    ),
                ))
            }
        }
    }

    fn next_frame(&mut self, first: bool) -> io::Result<Option<Frame>> {
        let layout = match self.layout {
            Some(l) => l,
            None => {
                if let Some(problem) = wrong_encoding(self.reader.fill_buf()?) {
                    return Ok(self.fail(1, Vec::new(), FrameError::Json(Box::new(problem))));
                }
                self.detect()?
            }
        };
        match layout {
            Layout::Lines => self.next_line(),
            Layout::Array => self.next_array_element(first),
            Layout::Documents => match self.skip_blank()? {
                None => Ok(None),
                Some(b) if cannot_start_value(b) => self.stray(b).map(Some),
                Some(_) => {
                    let frame = self.next_value()?;
                    if frame.error == Some(FrameError::Truncated) {
                        self.done = true;
                    }
                    Ok(Some(frame))
                }
            },
        }
    }
}

impl<R: BufRead> Iterator for Framer<R> {
    type Item = Frame;

    fn next(&mut self) -> Option<Frame> {
        if self.done {
            return None;
        }
        match self.next_frame(self.emitted == 0) {
            Ok(frame) => {
                self.emitted += u64::from(frame.is_some());
                self.progress(frame?)
            }
            Err(e) => {
                let line = self.line;
                self.fail(line, Vec::new(), FrameError::Read(e.to_string()))
            }
        }
    }
}

/// Whether `b` (outside a string) cannot be the first byte of a JSON value.
fn cannot_start_value(b: u8) -> bool {
    matches!(b, b',' | b']' | b'}' | b':')
}

/// The message for a byte where a JSON value should start.
fn expected_value(found: u8) -> String {
    format!("expected a JSON value, found {:?}", found as char)
}

/// The problem with an input whose first bytes show it is UTF-16 or UTF-32 rather than UTF-8:
/// by its byte-order mark, or (UTF-16/32 without one) by NUL bytes beside its first ASCII
/// characters, which UTF-8 JSON cannot hold.
fn wrong_encoding(head: &[u8]) -> Option<JsonProblem> {
    let nul = |i: usize| head.get(i) == Some(&0);
    let text = |i: usize| head.get(i).is_some_and(|&b| b != 0);
    let (name, iconv, how) = match head {
        [0xFF, 0xFE, 0, 0, ..] => (
            "UTF-32 (little-endian)",
            "UTF-32",
            "byte-order mark FF FE 00 00",
        ),
        [0, 0, 0xFE, 0xFF, ..] => (
            "UTF-32 (big-endian)",
            "UTF-32",
            "byte-order mark 00 00 FE FF",
        ),
        [0xFF, 0xFE, ..] => ("UTF-16 (little-endian)", "UTF-16", "byte-order mark FF FE"),
        [0xFE, 0xFF, ..] => ("UTF-16 (big-endian)", "UTF-16", "byte-order mark FE FF"),
        _ if text(0) && nul(1) && nul(2) && nul(3) => (
            "UTF-32 (little-endian)",
            "UTF-32LE",
            "NUL bytes after its first character",
        ),
        _ if nul(0) && nul(1) && nul(2) && text(3) => (
            "UTF-32 (big-endian)",
            "UTF-32BE",
            "NUL bytes before its first character",
        ),
        _ if text(0) && nul(1) && text(2) && nul(3) => (
            "UTF-16 (little-endian)",
            "UTF-16LE",
            "a NUL byte after each of its first characters",
        ),
        _ if nul(0) && text(1) && nul(2) && text(3) => (
            "UTF-16 (big-endian)",
            "UTF-16BE",
            "a NUL byte before each of its first characters",
        ),
        _ => return None,
    };
    Some(JsonProblem {
        rule: "json-encoding",
        pointer: String::new(),
        message: format!(
            "the input is {name} ({how}), not UTF-8; convert it first, e.g. \
             `iconv -f {iconv} -t UTF-8 in.json > out.json`"
        ),
    })
}

/// Incremental scanner of one JSON value's extent.
#[derive(Default)]
struct ValueScan {
    started: bool,
    scalar: bool,
    depth: u64,
    in_string: bool,
    escape: bool,
}

impl ValueScan {
    fn scalar_started(&self) -> bool {
        self.started && self.scalar
    }

    /// Consumes bytes of `chunk` belonging to the value. Returns (bytes used, newlines seen,
    /// whether the value is complete).
    fn feed(&mut self, chunk: &[u8]) -> (usize, u64, bool) {
        let mut i = 0;
        let mut lines = 0;
        while i < chunk.len() {
            if self.in_string {
                if self.escape {
                    self.escape = false;
                    i += 1;
                    continue;
                }
                match memchr::memchr2(b'"', b'\\', &chunk[i..]) {
                    None => return (chunk.len(), lines, false),
                    Some(j) => {
                        i += j;
                        if chunk[i] == b'\\' {
                            self.escape = true;
                        } else {
                            self.in_string = false;
                            if self.depth == 0 {
                                return (i + 1, lines, true);
                            }
                        }
                        i += 1;
                    }
                }
                continue;
            }
            let b = chunk[i];
            if !self.started {
                self.started = true;
                self.scalar = !matches!(b, b'{' | b'[' | b'"');
            }
            if self.scalar {
                if matches!(b, b',' | b']' | b'}' | b' ' | b'\t' | b'\r' | b'\n') {
                    return (i, lines, true);
                }
                i += 1;
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return (i + 1, lines, true);
                    }
                }
                b'\n' => lines += 1,
                _ => {}
            }
            i += 1;
        }
        (chunk.len(), lines, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(input: &str, json: bool, max: usize) -> Vec<(u64, String, Option<FrameError>)> {
        let hint = if json {
            LayoutHint::Json
        } else {
            LayoutHint::Sniff
        };
        Framer::new(input.as_bytes(), hint, max)
            .map(|f| {
                (
                    f.line,
                    String::from_utf8_lossy(&f.bytes).into_owned(),
                    f.error,
                )
            })
            .collect()
    }

    #[test]
    fn lines_skip_blanks_and_keep_line_numbers() {
        let got = frames("{\"a\":1}\n\n  \n{\"b\":2}\r\n{\"c\"", false, 100);
        assert_eq!(
            got,
            vec![
                (1, "{\"a\":1}".into(), None),
                (4, "{\"b\":2}\r".into(), None),
                (5, "{\"c\"".into(), None),
            ]
        );
    }

    #[test]
    fn arrays_split_elements_with_strings_and_nesting() {
        let input =
            "\u{feff}[\n  {\"s\": \"a]\\\"}\", \"n\": [1, {\"x\": []}]},\n  {\"b\": 2}\n]\n";
        let got = frames(input, true, 1000);
        assert_eq!(
            got,
            vec![
                (
                    2,
                    "{\"s\": \"a]\\\"}\", \"n\": [1, {\"x\": []}]}".into(),
                    None
                ),
                (3, "{\"b\": 2}".into(), None),
            ]
        );
    }

    #[test]
    fn a_pretty_printed_document_under_a_lines_name_is_one_document() {
        let doc = "{\n  \"a\": [\n    1\n  ]\n}\n";
        let got: Vec<Frame> = Framer::new(doc.as_bytes(), LayoutHint::Lines, 100).collect();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!((got[0].line, got[0].error.as_ref()), (1, None));
        // A JSON line that opens with `{` stays a line.
        let lines = "{\"a\": 1}\n{\"b\": 2}\n";
        assert_eq!(
            Framer::new(lines.as_bytes(), LayoutHint::Lines, 100).count(),
            2
        );
    }

    #[test]
    fn offsets_point_at_each_record_in_the_stream() {
        let lines = "\u{feff}{\"a\":1}\n\n  {\"b\":2}\r\n{\"c\":3}";
        let array = "[\n {\"a\": [1]},\n\t{\"b\": \"]\"} ]";
        for (input, hint) in [(lines, LayoutHint::Lines), (array, LayoutHint::Json)] {
            let got: Vec<Frame> = Framer::new(input.as_bytes(), hint, 100).collect();
            assert_eq!(got.len(), if hint == LayoutHint::Lines { 3 } else { 2 });
            for f in got {
                let at = usize::try_from(f.offset).unwrap_or(usize::MAX);
                assert_eq!(
                    input.as_bytes().get(at..at + f.bytes.len()),
                    Some(&f.bytes[..])
                );
            }
        }
        let first = Framer::new(lines.as_bytes(), LayoutHint::Lines, 100).next();
        assert_eq!(
            first.map(|f| f.offset),
            Some(3),
            "after the byte-order mark"
        );
    }

    #[test]
    fn empty_array_and_empty_input_have_no_records() {
        assert!(frames("[ ]", true, 10).is_empty());
        assert!(frames("", false, 10).is_empty());
        assert!(frames("\n\n", true, 10).is_empty());
    }

    #[test]
    fn truncated_array_element_is_reported() {
        let got = frames("[{\"a\": 1}, {\"b\": [", true, 100);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].2, Some(FrameError::Truncated));
    }

    #[test]
    fn trailing_garbage_after_array_is_reported() {
        let got = frames("[{\"a\": 1}] x", true, 100);
        assert_eq!(got.len(), 2);
        assert!(matches!(got[1].2, Some(FrameError::Syntax(_))));
    }

    #[test]
    fn scalar_elements_and_documents() {
        let got = frames("[1, true ,\"s\"]", false, 100);
        let texts: Vec<&str> = got.iter().map(|g| g.1.as_str()).collect();
        assert_eq!(texts, vec!["1", "true", "\"s\""]);
        let got = frames("{\n \"a\": 1\n}\n{\"b\": 2}", true, 100);
        assert_eq!(got[0].0, 1);
        assert_eq!(got[1].0, 4);
    }

    #[test]
    fn oversized_records_keep_a_preview_and_framing_goes_on() {
        let big = "x".repeat(50);
        let input = format!("{{\"a\":\"{big}\"}}\n{{\"b\":1}}\n");
        let got = frames(&input, false, 20);
        assert!(matches!(
            got[0].2,
            Some(FrameError::TooLarge {
                size: 58,
                limit: 20
            })
        ));
        assert_eq!(got[1], (2, "{\"b\":1}".into(), None));
    }

    #[test]
    fn jsonl_names_are_lines_even_when_a_line_is_an_array() {
        let got: Vec<Vec<u8>> = Framer::new(&b"[1]\n{}\n"[..], LayoutHint::Lines, 100)
            .map(|f| f.bytes)
            .collect();
        assert_eq!(got, vec![b"[1]".to_vec(), b"{}".to_vec()]);
    }

    #[test]
    fn stray_bytes_between_documents_are_one_frame_each_run() {
        let syntax = |found: &str| {
            Some(FrameError::Syntax(format!(
                "expected a JSON value, found '{found}'"
            )))
        };
        for stray in [",", "]", "}", ":"] {
            let got = frames(
                &format!("{{\"id\":\"a\",\"content\":[]}}{stray}"),
                true,
                100,
            );
            assert_eq!(
                got,
                vec![
                    (1, "{\"id\":\"a\",\"content\":[]}".into(), None),
                    (1, stray.into(), syntax(stray)),
                ]
            );
        }
        // A run of them (across lines) is one frame, and the next value is read.
        let got = frames("1 ,\n ] } :\n2,", true, 100);
        assert_eq!(
            got,
            vec![
                (1, "1".into(), None),
                (1, ",\n ] } :".into(), syntax(",")),
                (3, "2".into(), None),
                (3, ",".into(), syntax(",")),
            ]
        );
    }

    #[test]
    fn arrays_with_a_missing_element_stop_with_a_syntax_error() {
        let syntax = |found: &str| {
            Some(FrameError::Syntax(format!(
                "expected a JSON value, found '{found}'"
            )))
        };
        for (input, found, before) in [
            ("[1,]", "]", 1),
            ("[,1]", ",", 0),
            ("[}", "}", 0),
            ("[1,,2]", ",", 1),
        ] {
            let got = frames(input, true, 100);
            assert_eq!(got.len(), before + 1, "{input}: {got:?}");
            assert_eq!(got[before].2, syntax(found), "{input}");
        }
    }

    #[test]
    fn a_frame_that_consumed_nothing_ends_the_input() {
        let mut framer = Framer::new(&b"xyz"[..], LayoutHint::Json, 100);
        let empty = Frame {
            line: 1,
            offset: 0,
            bytes: Vec::new(),
            error: None,
        };
        let got = framer.progress(empty);
        assert_eq!(
            got.and_then(|f| f.error),
            Some(FrameError::Syntax(
                "cannot frame a record at byte 0 of the input; reading this input stops".into()
            ))
        );
        assert_eq!(framer.next(), None);
    }

    #[test]
    fn utf16_and_utf32_inputs_are_refused_at_their_first_bytes() {
        let rule = |input: &[u8]| -> Vec<Option<FrameError>> {
            Framer::new(input, LayoutHint::Sniff, 100)
                .map(|f| f.error)
                .collect()
        };
        for (input, name) in [
            (&b"\xFF\xFE{\x00}\x00"[..], "UTF-16 (little-endian)"),
            (&b"\xFE\xFF\x00{\x00}"[..], "UTF-16 (big-endian)"),
            (&b"{\x00\"\x00"[..], "UTF-16 (little-endian)"),
            (&b"\x00{\x00\""[..], "UTF-16 (big-endian)"),
            (
                &b"\xFF\xFE\x00\x00{\x00\x00\x00"[..],
                "UTF-32 (little-endian)",
            ),
            (&b"\x00\x00\x00{"[..], "UTF-32 (big-endian)"),
        ] {
            let got = rule(input);
            assert_eq!(got.len(), 1, "{name}");
            match &got[0] {
                Some(FrameError::Json(p)) => {
                    assert_eq!(p.rule, "json-encoding");
                    assert!(
                        p.message.starts_with(&format!("the input is {name} (")),
                        "{}",
                        p.message
                    );
                }
                other => panic!("{name}: {other:?}"),
            }
        }
        // UTF-8, with or without its byte-order mark, is read.
        assert_eq!(rule(b"\xEF\xBB\xBF{}\n[]"), vec![None, None]);
    }

    #[test]
    fn deep_nesting_does_not_recurse() {
        let deep = format!("[{}{}]", "[".repeat(100_000), "]".repeat(100_000));
        let got = frames(&deep, false, usize::MAX);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].1.len(), 200_000);
    }
}

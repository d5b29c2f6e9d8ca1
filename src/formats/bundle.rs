//! A whole file of JSON objects as one record, for formats whose unit is a file rather than a
//! line: a Claude Code session, an OpenHands event stream. The objects become one record
//! `{<marker>: true, "lines": [{"line", "entry"}]}` (read back with [`bundle_lines`]); every
//! frame that is not a JSON object follows as a record of its own, so it is rejected with its
//! line while the rest of the file still converts.
//!
//! Chat formats read a file of bare messages (a JSON array of `{role, content}`, or JSON lines
//! of them) the same way, as one chat: [`open_chat`].

use std::io;
use std::ops::Range;

use serde_json::{Map, Value};

use super::chat::is_message;
use crate::ingest::{FrameError, FramedRecords, RawRecord, RecordSource};
use crate::json::{strict, Node};

/// Opens `path` for a chat format. A file whose first record is one chat message
/// ([`is_message`]: a string `role`, no `messages`) holds one chat: its records become one
/// record `{"messages": [...]}` (line 1, index 0), in file order, so JSON pointers into it read
/// `/messages/N` for the file's N-th message; a record that cannot be read (cut by the end of
/// the file, too large, not JSON) follows as a record of its own, rejected with its line while
/// the rest of the chat still converts. Any other file is framed as usual, a record each.
pub fn open_chat(path: &str, max_record_bytes: usize) -> io::Result<Box<dyn RecordSource>> {
    let mut framed = FramedRecords::open(path, max_record_bytes)?;
    let Some(first) = framed.next() else {
        return Ok(Box::new(FileBundle {
            pending: Vec::new().into_iter(),
            bytes: framed.bytes_read(),
        }));
    };
    let message = first.error.is_none() && is_message_text(&first.bytes);
    if message {
        Ok(Box::new(FileBundle::messages(first, framed)))
    } else {
        Ok(Box::new(Peeked {
            first: Some(first),
            rest: framed,
        }))
    }
}

/// [`is_message`] of the JSON text `bytes`, read without building the value: the first record
/// of a file of documents may be a large one. Text the quick read refuses (not an object, a
/// duplicate key) is parsed whole, so the answer is always `is_message`'s.
fn is_message_text(bytes: &[u8]) -> bool {
    /// The two keys [`is_message`] looks at; the rest of the object is skipped.
    #[derive(serde::Deserialize)]
    struct Keys<'a> {
        #[serde(borrow)]
        role: Option<&'a serde_json::value::RawValue>,
        #[serde(default)]
        messages: Present,
    }
    /// Whether a key was there, whatever its value (`null` included).
    #[derive(Default)]
    struct Present(bool);
    impl<'de> serde::Deserialize<'de> for Present {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Present, D::Error> {
            serde::de::IgnoredAny::deserialize(d).map(|_| Present(true))
        }
    }
    match serde_json::from_slice::<Keys>(bytes) {
        Ok(keys) => keys.role.is_some_and(|r| r.get().starts_with('"')) && !keys.messages.0,
        Err(_) => serde_json::from_slice::<Value>(bytes).is_ok_and(|v| is_message(&v)),
    }
}

/// A framed input whose first record was read ahead.
struct Peeked {
    first: Option<RawRecord>,
    rest: FramedRecords,
}

impl Iterator for Peeked {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        self.first.take().or_else(|| self.rest.next())
    }
}

impl RecordSource for Peeked {
    fn bytes_read(&self) -> u64 {
        self.rest.bytes_read()
    }
}

/// The records of a bundled file: the bundle first, then the frames that are not objects.
pub struct FileBundle {
    pending: std::vec::IntoIter<RawRecord>,
    bytes: u64,
}

impl FileBundle {
    /// Bundles the objects of `path` under `marker`.
    pub fn open(path: &str, max_record_bytes: usize, marker: &str) -> std::io::Result<FileBundle> {
        Ok(FileBundle::from_framed(
            Vec::new(),
            FramedRecords::open(path, max_record_bytes)?,
            marker,
        ))
    }

    /// [`FileBundle::open`], where `extend` sees the bundled lines before the bundle is handed
    /// on, each as the text `{"line":N,"entry":{...}}`, and returns keys to add to the bundle:
    /// what the reader knows from outside the file (a sidecar file, another file of the same
    /// directory). The keys are written into the bundle's text beside its marker; nothing here
    /// parses the lines, so `extend` reads only what it needs of them.
    pub fn open_with(
        path: &str,
        max_record_bytes: usize,
        marker: &str,
        extend: &mut ExtraKeys<'_>,
    ) -> std::io::Result<FileBundle> {
        let framed = FramedRecords::open(path, max_record_bytes)?;
        let (head, fields) = marked_open(marker);
        let (mut bundle, spans) = FileBundle::assemble(
            Vec::new(),
            framed,
            format!("{head}{fields}"),
            object_entry,
            line_entry,
        );
        let mut records: Vec<RawRecord> = bundle.pending.by_ref().collect();
        // The bundle comes first when any line was bundled (`spans` is then not empty).
        if let Some(bundle_record) = records.first_mut().filter(|_| !spans.is_empty()) {
            let text = &bundle_record.bytes;
            let lines: Vec<&[u8]> = spans
                .iter()
                .filter_map(|span| text.get(span.clone()))
                .collect();
            let mut keys = Vec::new();
            for (key, value) in &extend(&lines) {
                keys.extend(serde_json::to_vec(key).unwrap_or_default());
                keys.push(b':');
                keys.extend(serde_json::to_vec(value).unwrap_or_default());
                keys.push(b',');
            }
            bundle_record.bytes.splice(head.len()..head.len(), keys);
        }
        bundle.pending = records.into_iter();
        Ok(bundle)
    }

    /// Bundles `read` (records already read from `framed`) and the rest of `framed`.
    pub fn from_framed(read: Vec<RawRecord>, framed: FramedRecords, marker: &str) -> FileBundle {
        let (head, fields) = marked_open(marker);
        FileBundle::build(
            read,
            framed,
            format!("{head}{fields}"),
            object_entry,
            line_entry,
        )
    }

    /// The chat of a file of messages ([`open_chat`]): `first`, then the rest of `framed`.
    fn messages(first: RawRecord, framed: FramedRecords) -> FileBundle {
        FileBundle::build(
            vec![first],
            framed,
            "{\"messages\":[".into(),
            |bytes| entry_kind(bytes).map(|_| None).map_err(json_error),
            |text, _, bytes| text.extend_from_slice(bytes),
        )
    }

    /// One record whose text is `open`, then each record of `read` and `framed` that `classify`
    /// takes, written by `entry` (with its line, and its bytes as they are or as `classify`
    /// rewrote them), comma-separated, then `]}`. Entries are checked without building a value,
    /// so the converter parses the bundle once. The records `classify` refuses, and those that
    /// cannot be read, follow, each rejected with its line (and the error `classify` gave, if
    /// any) while the rest still converts.
    pub fn build(
        read: Vec<RawRecord>,
        framed: FramedRecords,
        open: String,
        classify: fn(&[u8]) -> Classified,
        entry: fn(&mut Vec<u8>, u64, &[u8]),
    ) -> FileBundle {
        FileBundle::assemble(read, framed, open, classify, entry).0
    }

    /// [`FileBundle::build`], and where in the bundle's text each entry was written.
    fn assemble(
        read: Vec<RawRecord>,
        mut framed: FramedRecords,
        open: String,
        classify: fn(&[u8]) -> Classified,
        entry: fn(&mut Vec<u8>, u64, &[u8]),
    ) -> (FileBundle, Vec<Range<usize>>) {
        let mut text = open.into_bytes();
        // Room for the whole file and the wrapping of its lines (about 20 bytes each), so that
        // the text is not copied as it grows.
        if let Some(size) = framed.file_size() {
            let room = size.saturating_add(size / 4).min(MAX_RESERVED);
            text.reserve(usize::try_from(room).unwrap_or(0));
        }
        let mut spans = Vec::new();
        let mut entries = 0usize;
        let mut bad = Vec::new();
        let mut head: Option<RawRecord> = None;
        let mut read = read.into_iter();
        while let Some(mut record) = read.next().or_else(|| framed.next()) {
            let rewritten = match &record.error {
                Some(_) => {
                    bad.push(record);
                    continue;
                }
                None => match classify(&record.bytes) {
                    Ok(rewritten) => rewritten,
                    Err(error) => {
                        if error.is_some() {
                            record.error = error;
                        }
                        bad.push(record);
                        continue;
                    }
                },
            };
            if entries > 0 {
                text.push(b',');
            }
            entries += 1;
            let bytes = rewritten.as_deref().unwrap_or(&record.bytes);
            let start = text.len();
            entry(&mut text, record.provenance.line, bytes);
            spans.push(start..text.len());
            // Its bytes are copied: the framer reads the next line into them.
            framed.recycle(std::mem::take(&mut record.bytes));
            if head.is_none() {
                head = Some(record);
            }
        }
        text.extend_from_slice(b"]}");
        let mut records = Vec::with_capacity(bad.len() + 1);
        if let Some(mut head) = head {
            head.bytes = text;
            head.provenance.line = 1;
            head.provenance.index = 0;
            records.push(head);
        }
        for (i, mut r) in bad.into_iter().enumerate() {
            r.provenance.index = i as u64 + 1;
            records.push(r);
        }
        let bundle = FileBundle {
            pending: records.into_iter(),
            bytes: framed.bytes_read(),
        };
        (bundle, spans)
    }
}

/// The most room a bundle's text reserves up front (a larger file's grows as it is read).
const MAX_RESERVED: u64 = 1 << 30;

/// The opening text of a bundle marked `marker`, in two parts: the marker, then the start of
/// its `lines` (keys added to the bundle go between them).
fn marked_open(marker: &str) -> (String, &'static str) {
    let head = format!("{{{}:true,", Value::String(marker.to_owned()));
    (head, "\"lines\":[")
}

/// Writes a bundled line: `{"line":N,"entry":<its bytes>}`.
fn line_entry(text: &mut Vec<u8>, line: u64, bytes: &[u8]) {
    let mut buf = [0u8; 20];
    text.extend_from_slice(b"{\"line\":");
    text.extend_from_slice(super::kit::decimal(line, &mut buf).as_bytes());
    text.extend_from_slice(b",\"entry\":");
    text.extend_from_slice(bytes);
    text.push(b'}');
}

/// What [`FileBundle::open_with`] asks of its reader: the keys to add to a bundle, given its
/// lines.
pub type ExtraKeys<'a> = dyn FnMut(&[&[u8]]) -> Map<String, Value> + 'a;

/// What a bundle's classifier makes of a record's bytes: `Ok` to bundle them (`Some`: the text
/// to bundle instead of the bytes), or `Err` to reject the record alone, with the error when
/// it is known here (`None`: the converter diagnoses bad JSON with its exact position).
pub type Classified = Result<Option<Vec<u8>>, Option<FrameError>>;

/// A JSON object is bundled as it is; any other value, or text that breaks trajkit's rules on
/// JSON, is rejected alone.
fn object_entry(bytes: &[u8]) -> Classified {
    match entry_kind(bytes) {
        Ok(true) => Ok(None),
        Ok(false) => Err(Some(FrameError::Invalid(
            "each entry of this file must be a JSON object".into(),
        ))),
        Err(e) => Err(json_error(e)),
    }
}

/// The frame error of an [`entry_kind`] failure.
fn json_error(e: Option<strict::JsonProblem>) -> Option<FrameError> {
    e.map(|p| FrameError::Json(Box::new(p)))
}

/// The bundles of several files read as one input (a directory read whole: a Claude Code
/// project, a Droid sessions directory, a Kimi CLI session folder), one file after the other,
/// their records numbered in one sequence under the input's name. A file that cannot be opened
/// gives one record carrying the error. `keys` gives each file's extra keys
/// ([`FileBundle::open_with`]) from its path and bundled lines, and may remember what it saw
/// for the files after it.
pub struct BundleFiles<K> {
    files: std::vec::IntoIter<std::path::PathBuf>,
    pending: std::vec::IntoIter<RawRecord>,
    input: std::sync::Arc<str>,
    marker: &'static str,
    max_record_bytes: usize,
    index: u64,
    bytes: u64,
    keys: K,
}

impl<K> BundleFiles<K>
where
    K: FnMut(&std::path::Path, &[&[u8]]) -> Map<String, Value>,
{
    /// The bundles of `files`, in order, as the input `input`, each marked with `marker`.
    pub fn new(
        input: &str,
        files: Vec<std::path::PathBuf>,
        marker: &'static str,
        max_record_bytes: usize,
        keys: K,
    ) -> BundleFiles<K> {
        BundleFiles {
            files: files.into_iter(),
            pending: Vec::new().into_iter(),
            input: std::sync::Arc::from(input),
            marker,
            max_record_bytes,
            index: 0,
            bytes: 0,
            keys,
        }
    }

    fn read(&mut self, path: &std::path::Path) -> Vec<RawRecord> {
        let shown = path.display().to_string();
        let keys = &mut self.keys;
        let mut extend = |lines: &[&[u8]]| keys(path, lines);
        match FileBundle::open_with(&shown, self.max_record_bytes, self.marker, &mut extend) {
            Ok(bundle) => {
                self.bytes += bundle.bytes_read();
                bundle.collect()
            }
            Err(e) => vec![RawRecord {
                provenance: crate::ingest::Provenance {
                    input: self.input.clone(),
                    file: std::sync::Arc::from(shown.as_str()),
                    line: 1,
                    index: 0,
                },
                bytes: Vec::new(),
                error: Some(FrameError::Read(e.to_string())),
            }],
        }
    }
}

impl<K> Iterator for BundleFiles<K>
where
    K: FnMut(&std::path::Path, &[&[u8]]) -> Map<String, Value>,
{
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        loop {
            if let Some(mut record) = self.pending.next() {
                record.provenance.input = self.input.clone();
                record.provenance.index = self.index;
                self.index += 1;
                return Some(record);
            }
            let path = self.files.next()?;
            self.pending = self.read(&path).into_iter();
        }
    }
}

impl<K> RecordSource for BundleFiles<K>
where
    K: FnMut(&std::path::Path, &[&[u8]]) -> Map<String, Value> + Send,
{
    fn bytes_read(&self) -> u64 {
        self.bytes
    }
}

impl Iterator for FileBundle {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        self.pending.next()
    }
}

impl RecordSource for FileBundle {
    fn bytes_read(&self) -> u64 {
        self.bytes
    }
}

/// Whether `bytes` are a JSON object (`Ok(true)`) or another JSON value (`Ok(false)`), read
/// without building it; `Err` when they are not JSON (`None`: the parse of the bundle reports
/// nothing more useful than the framer's syntax error, so the record is rejected as it is) or
/// break one of trajkit's rules on JSON text (`Some`).
fn entry_kind(bytes: &[u8]) -> Result<bool, Option<strict::JsonProblem>> {
    // The fast reader accepts only what `serde_json` accepts; what it leaves goes the slow way,
    // which names the problem.
    if let Some(object) = crate::json::shape::skim(bytes) {
        return Ok(object);
    }
    match strict::validate(bytes) {
        Ok(()) => Ok(bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')),
        Err(strict::ParseError::Syntax(_)) => Err(None),
        Err(strict::ParseError::Rule(problem)) => Err(Some(problem)),
    }
}

/// The `(line, entry)` pairs of a bundle built by [`FileBundle`], in file order.
pub fn bundle_lines(bundle: &Value) -> impl Iterator<Item = (u64, &Value)> {
    bundle["lines"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| (l["line"].as_u64().unwrap_or(0), &l["entry"]))
}

/// [`bundle_lines`] of a bundle read as a [`Node`].
pub fn bundle_node_lines<'n, 'a>(
    bundle: &'n Node<'a>,
) -> impl Iterator<Item = (u64, &'n Node<'a>)> {
    bundle["lines"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| (l["line"].as_u64().unwrap_or(0), &l["entry"]))
}

/// [`bundle_node_lines`], moved out of the bundle (a reader that keeps parts of its lines
/// takes them instead of copying them; the bundle is left without its lines).
pub fn take_bundle_node_lines<'a>(
    bundle: &mut Node<'a>,
) -> impl ExactSizeIterator<Item = (u64, Node<'a>)> {
    let lines = match bundle.take("lines") {
        Node::Array(lines) => lines,
        _ => Vec::new(),
    };
    lines
        .into_iter()
        .map(|mut l| (l["line"].as_u64().unwrap_or(0), l.take("entry")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_told_from_its_text_as_from_its_value() {
        let texts = [
            r#"{"role": "user", "content": "hi"}"#,
            r#"{"role": "user", "messages": null}"#,
            r#"{"role": "user", "messages": []}"#,
            r#"{"role": 3, "content": "hi"}"#,
            r#"{"role": null}"#,
            r#"{"messages": [{"role": "user"}]}"#,
            r#"{"role": "a", "role": "b"}"#,
            r#"[{"role": "user"}]"#,
            r#""role""#,
            r#"{"role": "user", "x": {"role": 1, "messages": 2}}"#,
        ];
        for text in texts {
            let value: Value = serde_json::from_str(text).expect("JSON");
            assert_eq!(
                is_message_text(text.as_bytes()),
                is_message(&value),
                "{text}"
            );
        }
    }
}

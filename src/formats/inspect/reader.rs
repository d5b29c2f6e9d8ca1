//! Inspect logs as records, one per sample (× epoch): an `.eval` file is a zip archive with a
//! JSON document per sample (`samples/<id>_epoch_<n>.json`) and the log's header
//! (`header.json`; `_journal/start.json` while the run is going or after it crashed;
//! `start.json` and `results.json` before Inspect 0.3.47 or so); a `.json` log is one JSON
//! document whose `samples` hold them ([`super::scan`] finds them without reading the log into
//! memory).
//!
//! Each record is the sample's own bytes wrapped with what the converter needs from the rest of
//! the log: `{"inspect_sample": {"log": <header>, "entry" | "index": …}, "sample": <sample>}`.
//! The wrapper is written on one line before the sample, so a syntax error in the sample is
//! reported at its line in the log (for a `.json` log) or in its entry (for an `.eval` file,
//! whose records are named `<file>/<entry>`).

use std::fs::File;
use std::io::{self, BufRead, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::scan::{self, Outline, Span, Stop};
use crate::ingest::framing::PREVIEW_BYTES;
use crate::ingest::{open, FrameError, Provenance, RawRecord, RecordSource};
use crate::json::strict::{self, ParseError};

/// The key that marks a record this reader built.
pub const MARKER: &str = "inspect_sample";

/// The first bytes of a zip archive (a local file header).
const ZIP_MAGIC: &[u8] = b"PK\x03\x04";
/// An empty zip archive (only the end of its central directory).
const ZIP_EMPTY: &[u8] = b"PK\x05\x06";

/// Header entries of an `.eval` archive, in the order they are preferred.
const HEADER_ENTRIES: &[&str] = &["header.json", "_journal/start.json", "start.json"];

/// True when the file at `path` starts like a zip archive.
pub fn is_zip(path: &Path) -> bool {
    let mut head = [0u8; 4];
    path.is_file()
        && File::open(path)
            .and_then(|mut f| f.read_exact(&mut head))
            .is_ok()
        && (head == ZIP_MAGIC || head == ZIP_EMPTY)
}

/// An entry's name as Inspect names it, backslashes read as slashes: the zip format allows only
/// `/`, but an archive re-zipped on Windows by some tools names `samples\1_epoch_1.json` what
/// Inspect wrote as `samples/1_epoch_1.json`.
fn entry_name(raw: &str) -> String {
    raw.replace('\\', "/")
}

/// True when `name` is an entry an Inspect log has (a header or a sample).
fn is_inspect_entry(name: &str) -> bool {
    HEADER_ENTRIES.contains(&name) || name == "results.json" || name.starts_with("samples/")
}

/// True when the zip archive at `path` is an Inspect log: an entry of its central directory
/// (or, when that cannot be read, its first entry) is a header or a sample.
pub fn is_eval_archive(path: &Path) -> bool {
    if !is_zip(path) {
        return false;
    }
    let Ok(file) = File::open(path) else {
        return false;
    };
    match zip::ZipArchive::new(file) {
        Ok(archive) => archive
            .file_names()
            .any(|n| n.is_ok_and(|n| is_inspect_entry(&entry_name(&n)))),
        Err(_) => first_local_name(path).is_some_and(|n| is_inspect_entry(&entry_name(&n))),
    }
}

/// The name in the first local file header of the zip archive at `path`.
fn first_local_name(path: &Path) -> Option<String> {
    let mut head = [0u8; 30 + 256];
    let mut file = File::open(path).ok()?;
    let mut filled = 0;
    while filled < head.len() {
        match file.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    if filled < 30 || &head[..4] != ZIP_MAGIC {
        return None;
    }
    let len = usize::from(u16::from_le_bytes([head[26], head[27]]));
    head.get(30..30 + len)
        .filter(|_| 30 + len <= filled)
        .map(|n| String::from_utf8_lossy(n).into_owned())
}

/// True when the JSON file at `path` starts like an Inspect `.json` log: a JSON object whose
/// `version` is a number and whose `eval` names a task and a model, both before its samples.
/// Reads at most the first 16 MiB (the header of a log is small and comes first).
pub fn is_json_log(path: &Path) -> bool {
    let base = crate::ingest::without_compression(path.to_str().unwrap_or_default());
    if !base.ends_with(".json") || !path.is_file() {
        return false;
    }
    let Some(path) = path.to_str() else {
        return false;
    };
    let Ok(mut reader) = open::open(path) else {
        return false;
    };
    // Inspect writes `version` first; a log whose first key is none of its header's is not
    // read further here (detection still parses a small one whole, through `sniff`).
    let done = |o: &Outline| {
        o.keys
            .first()
            .is_some_and(|k| !["version", "status", "eval"].contains(&k.as_str()))
            || o.keys.iter().any(|k| k == "samples")
            || (o.header_value("eval").is_some() && o.header_value("version").is_some())
    };
    let limits = scan::Limits {
        budget: 16 << 20,
        done: &done,
    };
    match scan::scan(&mut reader, Some(&limits)) {
        Ok(outline) => looks_like_log(&outline),
        Err(_) => false,
    }
}

/// The header of a scanned `.json` log looks like Inspect's (see [`is_json_log`]).
fn looks_like_log(outline: &Outline) -> bool {
    let parse = |k: &str| {
        outline
            .header_value(k)
            .and_then(|v| serde_json::from_slice::<Value>(v).ok())
    };
    outline.is_object
        && parse("version").is_some_and(|v| v.is_number())
        && parse("eval").is_some_and(|e| is_eval_spec(&e))
}

/// True when `eval` looks like Inspect's `EvalSpec`: an object naming a task and a model.
pub fn is_eval_spec(eval: &Value) -> bool {
    eval["task"].is_string() && eval["model"].is_string()
}

/// An invalid-data error about `path`.
fn invalid(path: &str, message: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("{path}: {message}"))
}

/// The log header a trajectory carries: `version`, `status`, `eval` (without
/// `dataset.sample_ids`, the run's list of every sample id), `plan` and `error`, from `parts`
/// (header documents, later ones filling keys the earlier lack).
fn log_header(parts: &[&Value]) -> Value {
    let mut log = Map::new();
    for part in parts {
        for key in scan::CAPTURED {
            if let Some(v) = part.get(*key) {
                log.entry(key.to_string()).or_insert_with(|| v.clone());
            }
        }
    }
    if let Some(dataset) = log
        .get_mut("eval")
        .and_then(|e| e.get_mut("dataset"))
        .and_then(Value::as_object_mut)
    {
        dataset.remove("sample_ids");
    }
    Value::Object(log)
}

/// The bytes of a record: the wrapper (one line: where the sample is, `entry` or `index`, then
/// the log header, serialized once per log), then the sample's own bytes.
fn wrap((key, place): (&str, Value), log: &[u8], sample: &[u8]) -> Vec<u8> {
    let place = serde_json::to_vec(&place).unwrap_or_default();
    let mut bytes = Vec::with_capacity(sample.len() + place.len() + log.len() + 48);
    bytes.extend_from_slice(b"{\"");
    bytes.extend_from_slice(MARKER.as_bytes());
    bytes.extend_from_slice(b"\":{\"");
    bytes.extend_from_slice(key.as_bytes());
    bytes.extend_from_slice(b"\":");
    bytes.extend_from_slice(&place);
    bytes.extend_from_slice(b",\"log\":");
    bytes.extend_from_slice(log);
    bytes.extend_from_slice(b"},\"sample\":");
    bytes.extend_from_slice(sample);
    bytes.extend_from_slice(b"}");
    bytes
}

/// The records of one Inspect log (see the module docs).
pub struct LogRecords {
    input: Arc<str>,
    /// The log header ([`log_header`]), serialized.
    log: Vec<u8>,
    source: Source,
    /// Records to hand out before the samples (header problems).
    first: Vec<RawRecord>,
    /// Records to hand out after them (a cut or corrupt end).
    last: Vec<RawRecord>,
    next: usize,
    index: u64,
    max_bytes: usize,
    bytes_read: u64,
}

/// Where the samples are read from.
enum Source {
    /// An `.eval` archive whose central directory was read.
    Archive {
        archive: Box<zip::ZipArchive<File>>,
        samples: Vec<(usize, String)>,
        size: u64,
    },
    /// An `.eval` archive cut short (no central directory): its entries found from their
    /// local headers.
    Recovered {
        file: File,
        samples: Vec<LocalEntry>,
        size: u64,
    },
    /// A `.json` log, read a second time for its samples (from memory when it is small).
    Json {
        reader: Box<dyn BufRead + Send>,
        position: u64,
        spans: Vec<Span>,
    },
}

impl LogRecords {
    /// Opens the log at `path` (`-` is stdin, read whole: a `.json` log only). A zip archive
    /// that is not an Inspect log, and a JSON document that is not one, are errors naming the
    /// file.
    pub fn open(path: &str, max_bytes: usize) -> io::Result<LogRecords> {
        if path != "-" && is_zip(Path::new(path)) {
            Self::open_archive(path, max_bytes)
        } else {
            Self::open_json(path, max_bytes)
        }
    }

    fn provenance(&self, file: Arc<str>, line: u64) -> Provenance {
        Provenance {
            input: self.input.clone(),
            file,
            line,
            index: self.index,
        }
    }

    /// No records yet, from the log at `path`.
    fn empty(path: &str, max_bytes: usize) -> LogRecords {
        LogRecords {
            input: Arc::from(path),
            log: b"null".to_vec(),
            source: Source::Json {
                reader: Box::new(io::empty()),
                position: 0,
                spans: Vec::new(),
            },
            first: Vec::new(),
            last: Vec::new(),
            next: 0,
            index: 0,
            max_bytes,
            bytes_read: 0,
        }
    }

    fn open_archive(path: &str, max_bytes: usize) -> io::Result<LogRecords> {
        let file = File::open(path)?;
        let size = file.metadata()?.len();
        let mut records = LogRecords::empty(path, max_bytes);
        let input = records.input.clone();
        match zip::ZipArchive::new(file) {
            Ok(mut archive) => {
                let names: Vec<String> = archive
                    .file_names()
                    .map(|n| n.map(|n| entry_name(&n)).unwrap_or_default())
                    .collect();
                if !names.iter().any(|n| is_inspect_entry(n)) {
                    return Err(invalid(
                        path,
                        "a zip archive, but not an Inspect AI log: it has no header.json, _journal/start.json or samples/ entry",
                    ));
                }
                let mut headers: Vec<(String, Value)> = Vec::new();
                for name in HEADER_ENTRIES.iter().chain(&["results.json"]) {
                    let Some(index) = names.iter().rposition(|n| n == name) else {
                        continue;
                    };
                    match read_entry(&mut archive, index, 64 << 20).and_then(parse_header) {
                        Ok(v) => headers.push((name.to_string(), v)),
                        Err(e) => {
                            let file: Arc<str> = Arc::from(format!("{path}/{name}"));
                            records.first.push(RawRecord {
                                provenance: Provenance {
                                    input: input.clone(),
                                    file,
                                    line: 1,
                                    index: 0,
                                },
                                bytes: Vec::new(),
                                error: Some(FrameError::Invalid(format!(
                                    "the log's header entry {name} cannot be read ({e}); its samples are converted without it"
                                ))),
                            });
                        }
                    }
                }
                records.set_header(&headers);
                // Every copy of each name: the zip crate keeps only the last copy of a name
                // the archive holds twice, as Python's `zipfile` (and so Inspect) reads it.
                let copies = if archive.has_duplicate_names() {
                    let mut file = File::open(path)?;
                    central_names(&mut file, archive.central_directory_start(), size)
                } else {
                    names.clone()
                };
                if copies.len() <= names.len() && archive.has_duplicate_names() {
                    records.last.push(RawRecord {
                        provenance: records.provenance(input.clone(), 1),
                        bytes: Vec::new(),
                        error: Some(FrameError::Invalid(
                            "the archive names some entries more than once (its central directory cannot be read again to tell which); the last copy of each is read, as Inspect reads it, and the earlier copies are not".into(),
                        )),
                    });
                }
                records.last.extend(superseded(path, &input, &copies));
                // A name written with backslashes and with slashes is one entry twice: the
                // later one is read.
                let mut last: std::collections::BTreeMap<&str, usize> = Default::default();
                for (i, n) in names.iter().enumerate().filter(|(_, n)| is_sample_entry(n)) {
                    last.insert(n, i);
                }
                let mut samples: Vec<(usize, String)> =
                    last.into_iter().map(|(n, i)| (i, n.to_owned())).collect();
                samples.sort_by_key(|a| sample_order(&a.1));
                for name in chunked_samples(&names) {
                    let file: Arc<str> = Arc::from(format!("{path}/{name}"));
                    records.last.push(RawRecord {
                        provenance: Provenance {
                            input: input.clone(),
                            file,
                            line: 1,
                            index: 0,
                        },
                        bytes: Vec::new(),
                        error: Some(FrameError::Invalid(
                            "a chunked sample (Inspect's log format version 3, a shell entry and chunks of messages and events) is not read yet; convert the log to the monolithic layout with Inspect first".into(),
                        )),
                    });
                }
                records.source = Source::Archive {
                    archive: Box::new(archive),
                    samples,
                    size,
                };
            }
            Err(e) => records.recover(path, size, e)?,
        }
        records.renumber();
        Ok(records)
    }

    /// Reads an archive whose central directory is missing or broken (a file cut short, an
    /// interrupted copy) through its local headers: the entries whose data is all there are
    /// read, and where the archive stops being readable is reported.
    fn recover(&mut self, path: &str, size: u64, error: zip::result::ZipError) -> io::Result<()> {
        let mut file = File::open(path)?;
        let mut entries: Vec<LocalEntry> = Vec::new();
        let mut headers: Vec<(String, Value)> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        let mut offset = 0u64;
        let cut = loop {
            match LocalEntry::read(&mut file, offset, size) {
                Ok(Some(entry)) => {
                    offset = entry.data + entry.compressed;
                    names.push(entry.name.clone());
                    if HEADER_ENTRIES.contains(&entry.name.as_str()) || entry.name == "results.json"
                    {
                        if let Ok(v) = entry.bytes(&mut file, 64 << 20).and_then(parse_header) {
                            // A later copy replaces an earlier one, as in Inspect.
                            headers.retain(|(n, _)| *n != entry.name);
                            headers.push((entry.name.clone(), v));
                        }
                    }
                    if is_sample_entry(&entry.name) {
                        entries.push(entry);
                    }
                }
                Ok(None) => break None,
                Err(why) => break Some(format!("at byte {offset}: {why}")),
            }
        };
        if entries.is_empty() && headers.is_empty() {
            return Err(invalid(
                path,
                format!("not a readable Inspect AI log: not a readable zip archive ({error}), and no header or sample entry can be read from its start"),
            ));
        }
        headers.sort_by_key(|(n, _)| {
            HEADER_ENTRIES
                .iter()
                .position(|h| h == n)
                .unwrap_or(HEADER_ENTRIES.len())
        });
        self.set_header(&headers);
        let message = format!(
            "the archive's central directory cannot be read ({error}): the file is cut short or corrupt; {} complete sample entries were read from their local headers{}",
            entries.len(),
            cut.map(|c| format!(", and the archive cannot be read on {c}"))
                .unwrap_or_default()
        );
        self.last.push(RawRecord {
            provenance: self.provenance(self.input.clone(), 1),
            bytes: Vec::new(),
            error: Some(FrameError::Read(message)),
        });
        self.last.extend(superseded(path, &self.input, &names));
        // The last copy of each name, as Inspect reads it.
        let mut last: std::collections::BTreeMap<String, LocalEntry> = Default::default();
        for entry in entries {
            last.insert(entry.name.clone(), entry);
        }
        let mut entries: Vec<LocalEntry> = last.into_values().collect();
        entries.sort_by_key(|e| sample_order(&e.name));
        self.source = Source::Recovered {
            file,
            samples: entries,
            size,
        };
        Ok(())
    }

    /// Sets the log header from the header documents read (by preference: `header.json`,
    /// `_journal/start.json`, `start.json`, then `results.json` for the status and error).
    fn set_header(&mut self, headers: &[(String, Value)]) {
        let parts: Vec<&Value> = headers.iter().map(|(_, v)| v).collect();
        let mut log = log_header(&parts);
        if let (Value::Object(o), Some((name, _))) = (&mut log, headers.first()) {
            o.insert("header_entry".into(), Value::String(name.clone()));
        }
        self.log = serde_json::to_vec(&log).unwrap_or_default();
    }

    fn open_json(path: &str, max_bytes: usize) -> io::Result<LogRecords> {
        // Standard input, and a small log, are read once: kept in memory for the second pass.
        let memory: Option<Arc<Vec<u8>>> = if path == "-" {
            let mut all = Vec::new();
            open::open(path)?.read_to_end(&mut all)?;
            Some(Arc::new(all))
        } else {
            read_small(path)?.map(Arc::new)
        };
        let reopen = || -> io::Result<Box<dyn BufRead + Send>> {
            match &memory {
                Some(m) => Ok(Box::new(io::Cursor::new(SharedBytes(m.clone())))),
                None => open::open(path),
            }
        };
        let outline = scan::scan(&mut reopen()?, None)?;
        if !outline.is_object {
            return Err(invalid(
                path,
                "not an Inspect AI log: an Inspect `.json` log is one JSON object (with `eval` and `samples`), and this input does not start with `{`",
            ));
        }
        if !outline.keys.iter().any(|k| k == "eval") {
            let cut = matches!(outline.stop, Some(Stop::Truncated { .. }));
            return Err(invalid(
                path,
                if cut {
                    "not a readable Inspect AI log: it ends before its `eval` header".to_owned()
                } else {
                    format!(
                        "not an Inspect AI log: the object has no `eval` key (its keys: {})",
                        outline.keys.join(", ")
                    )
                },
            ));
        }
        let mut records = LogRecords::empty(path, max_bytes);
        let input = records.input.clone();
        let mut header = Map::new();
        for (key, raw) in &outline.header {
            match strict::parse_value(raw) {
                Ok(v) => {
                    header.insert(key.clone(), v);
                }
                Err(e) => {
                    let message = match e {
                        ParseError::Syntax(e) => e.to_string(),
                        ParseError::Rule(p) => format!("{}: {}", p.pointer, p.message),
                    };
                    let record = RawRecord {
                        provenance: Provenance {
                            input: input.clone(),
                            file: input.clone(),
                            line: 1,
                            index: 0,
                        },
                        bytes: Vec::new(),
                        error: Some(FrameError::Invalid(format!(
                            "the log's `{key}` cannot be read ({message}); its samples are converted without it"
                        ))),
                    };
                    records.first.push(record);
                }
            }
        }
        records.log =
            serde_json::to_vec(&log_header(&[&Value::Object(header)])).unwrap_or_default();
        match &outline.stop {
            None => {}
            Some(Stop::Truncated { line, sample }) => {
                let preview = match sample {
                    Some(span) => read_span(&mut reopen()?, 0, span, PREVIEW_BYTES)
                        .map(|(b, _)| b)
                        .unwrap_or_default(),
                    None => Vec::new(),
                };
                records.last.push(RawRecord {
                    provenance: Provenance {
                        input: input.clone(),
                        file: input.clone(),
                        line: *line,
                        index: 0,
                    },
                    bytes: preview,
                    error: Some(FrameError::Truncated),
                });
            }
            Some(Stop::Syntax { line, message }) => records.last.push(RawRecord {
                provenance: Provenance {
                    input: input.clone(),
                    file: input.clone(),
                    line: *line,
                    index: 0,
                },
                bytes: Vec::new(),
                error: Some(FrameError::Syntax(format!(
                    "{message}; the log cannot be read past this point"
                ))),
            }),
        }
        records.source = Source::Json {
            reader: reopen()?,
            position: 0,
            spans: outline.samples,
        };
        records.renumber();
        Ok(records)
    }

    /// Numbers the records in the order they are handed out: header problems, samples, the
    /// problems at the end.
    fn renumber(&mut self) {
        let samples = match &self.source {
            Source::Archive { samples, .. } => samples.len(),
            Source::Recovered { samples, .. } => samples.len(),
            Source::Json { spans, .. } => spans.len(),
        } as u64;
        for (i, r) in self.first.iter_mut().enumerate() {
            r.provenance.index = i as u64;
        }
        let before = self.first.len() as u64;
        for (i, r) in self.last.iter_mut().enumerate() {
            r.provenance.index = before + samples + i as u64;
        }
        self.index = before;
        self.first.reverse();
    }

    /// The record of the next sample, if any.
    fn next_sample(&mut self) -> Option<RawRecord> {
        let k = self.next;
        let max = self.max_bytes;
        let input = self.input.clone();
        let (file, line, place, read) = match &mut self.source {
            Source::Archive {
                archive,
                samples,
                size,
            } => {
                let (index, name) = samples.get(k)?.clone();
                let read = read_entry(archive, index, max).map_err(|e| (Vec::new(), e));
                self.bytes_read = size.saturating_mul(k as u64 + 1) / samples.len().max(1) as u64;
                let file: Arc<str> = Arc::from(format!("{input}/{name}"));
                (file, 1, ("entry", Value::String(name)), read)
            }
            Source::Recovered {
                file,
                samples,
                size,
            } => {
                let entry = samples.get(k)?.clone();
                let read = entry.bytes(file, max).map_err(|e| (Vec::new(), e));
                self.bytes_read = size.saturating_mul(k as u64 + 1) / samples.len().max(1) as u64;
                let name = entry.name;
                let file: Arc<str> = Arc::from(format!("{input}/{name}"));
                (file, 1, ("entry", Value::String(name)), read)
            }
            Source::Json {
                reader,
                position,
                spans,
            } => {
                let span = *spans.get(k)?;
                let read = match read_span(reader.as_mut(), *position, &span, max) {
                    Ok((bytes, true)) => Ok(bytes),
                    Ok((preview, false)) => Err((
                        preview,
                        FrameError::TooLarge {
                            size: span.end - span.start,
                            limit: max as u64,
                        },
                    )),
                    Err(e) => Err((Vec::new(), FrameError::Read(e.to_string()))),
                };
                *position = span.end;
                self.bytes_read = span.end;
                (input.clone(), span.line, ("index", Value::from(k)), read)
            }
        };
        self.next += 1;
        let record = match read {
            Ok(sample) => RawRecord {
                provenance: self.provenance(file, line),
                bytes: wrap(place, &self.log, &sample),
                error: None,
            },
            Err((preview, error)) => RawRecord {
                provenance: self.provenance(file, line),
                bytes: preview,
                error: Some(error),
            },
        };
        self.index += 1;
        Some(record)
    }
}

/// Most bytes of a `.json` log read into memory at once rather than twice from its file.
const SMALL_LOG: u64 = 8 << 20;

/// The (decompressed) bytes of the log at `path` when they are at most [`SMALL_LOG`].
fn read_small(path: &str) -> io::Result<Option<Vec<u8>>> {
    if std::fs::metadata(path)?.len() > SMALL_LOG {
        return Ok(None);
    }
    let mut all = Vec::new();
    open::open(path)?
        .take(SMALL_LOG + 1)
        .read_to_end(&mut all)?;
    Ok((all.len() as u64 <= SMALL_LOG).then_some(all))
}

/// `Arc<Vec<u8>>` as bytes for a cursor.
struct SharedBytes(Arc<Vec<u8>>);

impl AsRef<[u8]> for SharedBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// The names of the entries of the central directory at `start` in `file` (of `size` bytes),
/// every copy of each, as [`entry_name`]s; those before the first record that cannot be read.
fn central_names(file: &mut File, start: u64, size: u64) -> Vec<String> {
    let mut names = Vec::new();
    let mut at = start;
    let mut head = [0u8; 46];
    while at + 46 <= size {
        let read = file
            .seek(SeekFrom::Start(at))
            .and_then(|_| file.read_exact(&mut head));
        if read.is_err() || &head[..4] != b"PK\x01\x02" {
            break;
        }
        let u16_at = |i: usize| u16::from_le_bytes([head[i], head[i + 1]]);
        let mut name = vec![0u8; usize::from(u16_at(28))];
        if file.read_exact(&mut name).is_err() {
            break;
        }
        names.push(entry_name(&String::from_utf8_lossy(&name)));
        at += 46 + name.len() as u64 + u64::from(u16_at(30)) + u64::from(u16_at(32));
    }
    names
}

/// A rejected record for each earlier copy of an Inspect entry that `names` (every entry of
/// the archive at `path`, in order) holds more than once: the last copy is read, as Python's
/// `zipfile` and so Inspect read it (a log written to twice, or two archives joined).
fn superseded(path: &str, input: &Arc<str>, names: &[String]) -> Vec<RawRecord> {
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for n in names.iter().filter(|n| is_inspect_entry(n)) {
        *counts.entry(n).or_default() += 1;
    }
    let mut records = Vec::new();
    for (name, copies) in counts.into_iter().filter(|(_, c)| *c > 1) {
        for k in 1..copies {
            records.push(RawRecord {
                provenance: Provenance {
                    input: input.clone(),
                    file: Arc::from(format!("{path}/{name}")),
                    line: 1,
                    index: 0,
                },
                bytes: Vec::new(),
                error: Some(FrameError::Invalid(format!(
                    "the archive holds {copies} entries named {name}: the last is read, as Inspect reads it, and this earlier copy ({k} of {copies}) is not"
                ))),
            });
        }
    }
    records
}

/// True for a monolithic sample entry, `samples/<id>_epoch_<n>.json`.
fn is_sample_entry(name: &str) -> bool {
    name.strip_prefix("samples/")
        .is_some_and(|rest| !rest.contains('/') && rest.ends_with(".json"))
}

/// The chunked samples of an archive (Inspect's log format version 3): the shell entries
/// `samples/<id>_epoch_<n>/sample.json`.
fn chunked_samples(names: &[String]) -> Vec<String> {
    names
        .iter()
        .filter(|n| {
            n.strip_prefix("samples/")
                .and_then(|rest| rest.strip_suffix("/sample.json"))
                .is_some_and(|prefix| !prefix.contains('/'))
        })
        .cloned()
        .collect()
}

/// The order Inspect sorts samples in: by epoch, then id (numbers by value, before strings),
/// from an entry name `samples/<id>_epoch_<n>.json`.
fn sample_order(name: &str) -> (u64, u8, String, String) {
    let stem = name
        .strip_prefix("samples/")
        .and_then(|r| r.strip_suffix(".json"))
        .unwrap_or(name);
    let (id, epoch) = stem
        .rsplit_once("_epoch_")
        .map_or((stem, u64::MAX), |(id, e)| {
            (id, e.parse().unwrap_or(u64::MAX))
        });
    match id.parse::<u64>() {
        Ok(n) => (epoch, 0, format!("{n:020}"), name.to_owned()),
        Err(_) => (epoch, 1, id.to_owned(), name.to_owned()),
    }
}

/// Parses a header entry.
fn parse_header(bytes: Vec<u8>) -> Result<Value, FrameError> {
    match strict::parse_value(&bytes) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(FrameError::Invalid("not a JSON object".into())),
        Err(ParseError::Syntax(e)) => Err(FrameError::Invalid(format!("not JSON: {e}"))),
        Err(ParseError::Rule(p)) => Err(FrameError::Json(Box::new(p))),
    }
}

/// Reads the (decompressed) bytes of entry `index`, at most `max` of them.
fn read_entry(
    archive: &mut zip::ZipArchive<File>,
    index: usize,
    max: usize,
) -> Result<Vec<u8>, FrameError> {
    let entry = archive
        .by_index_raw(index)
        .map_err(|e| FrameError::Read(format!("cannot read the entry: {e}")))?;
    let method = entry.compression();
    let size = entry.size();
    if size > max as u64 {
        return Err(FrameError::TooLarge {
            size,
            limit: max as u64,
        });
    }
    if is_zstd(method) {
        let decoder = zstd::stream::read::Decoder::new(entry)
            .map_err(|e| FrameError::Read(format!("cannot read the zstd entry: {e}")))?;
        return read_capped(decoder, max, size);
    }
    drop(entry);
    let entry = archive.by_index(index).map_err(|e| {
        FrameError::Read(format!(
            "cannot read the entry ({method:?} compression): {e}"
        ))
    })?;
    read_capped(entry, max, size)
}

/// True for zstd compression (method 93, which Inspect writes with `INSPECT_USE_ZSTD`).
fn is_zstd(method: zip::CompressionMethod) -> bool {
    method == zip::CompressionMethod::ZSTD
}

/// Reads `reader` to its end, refusing more than `max` bytes.
fn read_capped(reader: impl Read, max: usize, declared: u64) -> Result<Vec<u8>, FrameError> {
    let mut bytes = Vec::with_capacity(declared.min(max as u64) as usize);
    reader
        .take(max as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| FrameError::Read(format!("the entry is corrupt: {e}")))?;
    if bytes.len() > max {
        return Err(FrameError::TooLarge {
            size: bytes.len() as u64,
            limit: max as u64,
        });
    }
    Ok(bytes)
}

/// An entry found from its local header (when the central directory cannot be read).
#[derive(Debug, Clone)]
struct LocalEntry {
    name: String,
    /// Offset of its data.
    data: u64,
    compressed: u64,
    size: u64,
    method: u16,
}

impl LocalEntry {
    /// The entry whose local header is at `offset`: `None` at the central directory (or the
    /// end of the file), an error when the header is not one or its data runs past the end.
    fn read(file: &mut File, offset: u64, size: u64) -> Result<Option<LocalEntry>, String> {
        if offset + 4 > size {
            return Ok(None);
        }
        let mut head = [0u8; 30];
        file.seek(SeekFrom::Start(offset))
            .and_then(|_| file.read_exact(&mut head[..4]))
            .map_err(|e| e.to_string())?;
        match &head[..4] {
            b"PK\x03\x04" => {}
            b"PK\x01\x02" | b"PK\x05\x06" | b"PK\x06\x06" => return Ok(None),
            _ => return Err("no local file header where one should start".into()),
        }
        let short = |e: io::Error| format!("the local header is cut ({e})");
        file.read_exact(&mut head[4..]).map_err(short)?;
        let u16_at = |i: usize| u16::from_le_bytes([head[i], head[i + 1]]);
        let u32_at =
            |i: usize| u32::from_le_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
        let (flags, method) = (u16_at(6), u16_at(8));
        let (mut compressed, mut unpacked) = (u64::from(u32_at(18)), u64::from(u32_at(22)));
        let mut name = vec![0u8; usize::from(u16_at(26))];
        let mut extra = vec![0u8; usize::from(u16_at(28))];
        file.read_exact(&mut name).map_err(short)?;
        file.read_exact(&mut extra).map_err(short)?;
        let name = entry_name(&String::from_utf8_lossy(&name));
        if flags & 0x0008 != 0 {
            return Err(format!(
                "entry {name} keeps its size after its data (a data descriptor), which only the central directory finds"
            ));
        }
        // ZIP64: sizes past 4 GiB are in extra field 1 (the uncompressed size first).
        let mut at = 0;
        while at + 4 <= extra.len() {
            let id = u16::from_le_bytes([extra[at], extra[at + 1]]);
            let len = usize::from(u16::from_le_bytes([extra[at + 2], extra[at + 3]]));
            let field = extra.get(at + 4..at + 4 + len).unwrap_or_default();
            if id == 1 {
                let u64_at = |i: usize| {
                    field
                        .get(i..i + 8)
                        .and_then(|b| <[u8; 8]>::try_from(b).ok())
                        .map(u64::from_le_bytes)
                };
                let mut i = 0;
                if unpacked == u64::from(u32::MAX) {
                    unpacked = u64_at(i).unwrap_or(unpacked);
                    i += 8;
                }
                if compressed == u64::from(u32::MAX) {
                    compressed = u64_at(i).unwrap_or(compressed);
                }
            }
            at += 4 + len;
        }
        let data = offset + 30 + (name.len() + extra.len()) as u64;
        if data.saturating_add(compressed) > size {
            return Err(format!("entry {name} is cut"));
        }
        Ok(Some(LocalEntry {
            name,
            data,
            compressed,
            size: unpacked,
            method,
        }))
    }

    /// The entry's bytes, decompressed (stored, deflate or zstd), at most `max` of them.
    fn bytes(&self, file: &mut File, max: usize) -> Result<Vec<u8>, FrameError> {
        if self.size > max as u64 {
            return Err(FrameError::TooLarge {
                size: self.size,
                limit: max as u64,
            });
        }
        file.seek(SeekFrom::Start(self.data))
            .map_err(|e| FrameError::Read(e.to_string()))?;
        let raw = Read::take(&mut *file, self.compressed);
        match self.method {
            0 => read_capped(raw, max, self.size),
            8 => read_capped(flate2::read::DeflateDecoder::new(raw), max, self.size),
            93 => {
                let decoder = zstd::stream::read::Decoder::new(raw)
                    .map_err(|e| FrameError::Read(format!("cannot read the zstd entry: {e}")))?;
                read_capped(decoder, max, self.size)
            }
            m => Err(FrameError::Read(format!(
                "the entry's compression (method {m}) is not supported: stored, deflate and zstd are"
            ))),
        }
    }
}

/// Reads `span` from `reader`, which is at `position` (before the span): its bytes, and true,
/// or the first [`PREVIEW_BYTES`] and false when it is longer than `max`. The reader is left
/// at the span's end.
fn read_span(
    reader: &mut dyn BufRead,
    position: u64,
    span: &Span,
    max: usize,
) -> io::Result<(Vec<u8>, bool)> {
    let skip = span.start.saturating_sub(position);
    io::copy(&mut (&mut *reader).take(skip), &mut io::sink())?;
    let len = span.end - span.start;
    let mut bytes = Vec::new();
    if len > max as u64 {
        (&mut *reader)
            .take(PREVIEW_BYTES as u64)
            .read_to_end(&mut bytes)?;
        io::copy(
            &mut (&mut *reader).take(len - bytes.len() as u64),
            &mut io::sink(),
        )?;
        return Ok((bytes, false));
    }
    bytes.reserve_exact(len as usize);
    (&mut *reader).take(len).read_to_end(&mut bytes)?;
    while bytes.last().is_some_and(u8::is_ascii_whitespace) {
        bytes.pop();
    }
    Ok((bytes, true))
}

impl Iterator for LogRecords {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        if let Some(r) = self.first.pop() {
            return Some(r);
        }
        if let Some(r) = self.next_sample() {
            return Some(r);
        }
        if self.last.is_empty() {
            return None;
        }
        Some(self.last.remove(0))
    }
}

impl RecordSource for LogRecords {
    fn bytes_read(&self) -> u64 {
        self.bytes_read
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn samples_are_ordered_as_inspect_orders_them() {
        let mut names = vec![
            "samples/10_epoch_1.json",
            "samples/b_epoch_1.json",
            "samples/2_epoch_2.json",
            "samples/9_epoch_1.json",
            "samples/a_epoch_1.json",
        ];
        names.sort_by_key(|n| sample_order(n));
        assert_eq!(
            names,
            [
                "samples/9_epoch_1.json",
                "samples/10_epoch_1.json",
                "samples/a_epoch_1.json",
                "samples/b_epoch_1.json",
                "samples/2_epoch_2.json"
            ]
        );
    }

    #[test]
    fn entries_are_told_apart() {
        assert!(is_sample_entry("samples/1_epoch_1.json"));
        assert!(!is_sample_entry("samples/1_epoch_1/sample.json"));
        assert!(!is_sample_entry("summaries.json"));
        assert!(is_inspect_entry("_journal/start.json"));
        assert!(!is_inspect_entry("readme.txt"));
        let names = [
            "samples/1_epoch_1/sample.json".to_owned(),
            "samples/1_epoch_1/messages/0.json".to_owned(),
            "samples/2_epoch_1.json".to_owned(),
        ];
        assert_eq!(chunked_samples(&names), ["samples/1_epoch_1/sample.json"]);
    }

    #[test]
    fn the_header_keeps_what_a_sample_needs() {
        let header = json!({
            "version": 2,
            "eval": {"task": "t", "dataset": {"name": "d", "sample_ids": [1, 2]}},
            "results": {"scores": []},
            "stats": {},
        });
        let results = json!({"status": "success", "error": null});
        let log = log_header(&[&header, &results]);
        assert_eq!(
            log,
            json!({"version": 2, "status": "success", "eval": {"task": "t", "dataset": {"name": "d"}}, "error": null})
        );
    }

    #[test]
    fn a_record_is_the_wrapper_then_the_sample() {
        let bytes = wrap(("index", json!(3)), b"{\"v\":1}", b"{\n  \"id\": 1\n}");
        let text = String::from_utf8(bytes).expect("utf-8");
        assert_eq!(
            text,
            "{\"inspect_sample\":{\"index\":3,\"log\":{\"v\":1}},\"sample\":{\n  \"id\": 1\n}}"
        );
        let bytes = wrap(("entry", json!("samples/a \"b\".json")), b"null", b"{}");
        assert_eq!(
            String::from_utf8(bytes).expect("utf-8"),
            r#"{"inspect_sample":{"entry":"samples/a \"b\".json","log":null},"sample":{}}"#
        );
    }
}

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

mod archive;
mod recovery;

use std::fs::File;
use std::io::{self, BufRead, Read};
use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::scan::{self, Outline, Span, Stop};
use crate::ingest::framing::PREVIEW_BYTES;
use crate::ingest::{open, FrameError, Provenance, RawRecord, RecordSource};
use crate::json::strict::{self, ParseError};

pub use self::archive::is_eval_archive;
use self::archive::{is_zip, read_entry};
use self::recovery::LocalEntry;

/// The key that marks a record this reader built.
pub const MARKER: &str = "inspect_sample";

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

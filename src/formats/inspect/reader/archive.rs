//! The zip side of an `.eval` log: telling an Inspect archive from another zip, its entries'
//! names and order, reading an entry, and opening the archive through its central directory.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::{invalid, LogRecords, Source};
use crate::ingest::{FrameError, Provenance, RawRecord};
use crate::json::strict::{self, ParseError};

/// The first bytes of a zip archive (a local file header).
pub(super) const ZIP_MAGIC: &[u8] = b"PK\x03\x04";
/// An empty zip archive (only the end of its central directory).
pub(super) const ZIP_EMPTY: &[u8] = b"PK\x05\x06";

/// Header entries of an `.eval` archive, in the order they are preferred.
pub(super) const HEADER_ENTRIES: &[&str] = &["header.json", "_journal/start.json", "start.json"];

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
pub(super) fn entry_name(raw: &str) -> String {
    raw.replace('\\', "/")
}

/// True when `name` is an entry an Inspect log has (a header or a sample).
pub(super) fn is_inspect_entry(name: &str) -> bool {
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
pub(super) fn first_local_name(path: &Path) -> Option<String> {
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

impl LogRecords {
    /// Opens the `.eval` archive at `path` through its central directory (or, when that cannot
    /// be read, its local headers: [`LogRecords::recover`]).
    pub(super) fn open_archive(path: &str, max_bytes: usize) -> io::Result<LogRecords> {
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
}

/// The names of the entries of the central directory at `start` in `file` (of `size` bytes),
/// every copy of each, as [`entry_name`]s; those before the first record that cannot be read.
pub(super) fn central_names(file: &mut File, start: u64, size: u64) -> Vec<String> {
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
pub(super) fn superseded(path: &str, input: &Arc<str>, names: &[String]) -> Vec<RawRecord> {
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
pub(super) fn is_sample_entry(name: &str) -> bool {
    name.strip_prefix("samples/")
        .is_some_and(|rest| !rest.contains('/') && rest.ends_with(".json"))
}

/// The chunked samples of an archive (Inspect's log format version 3): the shell entries
/// `samples/<id>_epoch_<n>/sample.json`.
pub(super) fn chunked_samples(names: &[String]) -> Vec<String> {
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
pub(super) fn sample_order(name: &str) -> (u64, u8, String, String) {
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
pub(super) fn parse_header(bytes: Vec<u8>) -> Result<Value, FrameError> {
    match strict::parse_value(&bytes) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(FrameError::Invalid("not a JSON object".into())),
        Err(ParseError::Syntax(e)) => Err(FrameError::Invalid(format!("not JSON: {e}"))),
        Err(ParseError::Rule(p)) => Err(FrameError::Json(Box::new(p))),
    }
}

/// Reads the (decompressed) bytes of entry `index`, at most `max` of them.
pub(super) fn read_entry(
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
pub(super) fn is_zstd(method: zip::CompressionMethod) -> bool {
    method == zip::CompressionMethod::ZSTD
}

/// Reads `reader` to its end, refusing more than `max` bytes.
pub(super) fn read_capped(
    reader: impl Read,
    max: usize,
    declared: u64,
) -> Result<Vec<u8>, FrameError> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}

//! Reading an `.eval` archive whose central directory is missing or broken (a file cut short,
//! an interrupted copy) through its local file headers.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

use serde_json::Value;

use super::archive::{
    entry_name, is_sample_entry, parse_header, read_capped, sample_order, superseded,
    HEADER_ENTRIES,
};
use super::{invalid, LogRecords, Source};
use crate::ingest::{FrameError, RawRecord};

impl LogRecords {
    /// Reads an archive whose central directory is missing or broken (a file cut short, an
    /// interrupted copy) through its local headers: the entries whose data is all there are
    /// read, and where the archive stops being readable is reported.
    pub(super) fn recover(
        &mut self,
        path: &str,
        size: u64,
        error: zip::result::ZipError,
    ) -> io::Result<()> {
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
}

/// An entry found from its local header (when the central directory cannot be read).
#[derive(Debug, Clone)]
pub(super) struct LocalEntry {
    pub(super) name: String,
    /// Offset of its data.
    pub(super) data: u64,
    pub(super) compressed: u64,
    pub(super) size: u64,
    pub(super) method: u16,
}

impl LocalEntry {
    /// The entry whose local header is at `offset`: `None` at the central directory (or the
    /// end of the file), an error when the header is not one or its data runs past the end.
    pub(super) fn read(
        file: &mut File,
        offset: u64,
        size: u64,
    ) -> Result<Option<LocalEntry>, String> {
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
    pub(super) fn bytes(&self, file: &mut File, max: usize) -> Result<Vec<u8>, FrameError> {
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

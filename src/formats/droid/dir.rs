//! A directory of Droid sessions read as one input (`~/.factory/sessions`, or one project's
//! folder in it): every session file, in byte order of its path, each with its
//! `settings.json` sidecar. A directory is Droid's when it holds a session and nothing but
//! sessions and their sidecars (the `.bak` copies Droid keeps of them too).

use std::fs;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::formats::bundle::FileBundle;
use crate::ingest::{FrameError, Provenance, RawRecord, RecordSource};

use super::{attach_settings, is_header, MARKER};

/// The most bytes of a session's first line read to tell whether it is Droid's header.
const HEADER_BYTES: u64 = 1 << 20;

/// The files under `dir`, recursively, in byte order of their paths.
fn files(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<io::Result<_>>()?;
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// True for a sidecar Droid writes beside a session: `<uuid>.settings.json` and its `.bak`.
fn is_sidecar(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".settings.json") || n.ends_with(".settings.json.bak"))
}

/// True when the file at `path` starts with Droid's session header.
fn is_session(path: &Path) -> bool {
    if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
        return false;
    }
    let Ok(file) = fs::File::open(path) else {
        return false;
    };
    let mut line = Vec::new();
    let mut reader = BufReader::new(file).take(HEADER_BYTES);
    if reader.read_until(b'\n', &mut line).is_err() {
        return false;
    }
    serde_json::from_slice(&line).is_ok_and(|v| is_header(&v))
}

/// The session files of `dir` when it is a directory of Droid sessions, else `None`.
pub(super) fn sessions(dir: &Path) -> Option<Vec<PathBuf>> {
    if !dir.is_dir() {
        return None;
    }
    let mut all = Vec::new();
    files(dir, &mut all).ok()?;
    let sessions: Vec<PathBuf> = all.into_iter().filter(|p| !is_sidecar(p)).collect();
    (!sessions.is_empty() && sessions.iter().all(|p| is_session(p))).then_some(sessions)
}

/// The records of a directory of sessions: each session file's bundle, in order.
pub(super) struct DirRecords {
    files: std::vec::IntoIter<PathBuf>,
    pending: std::vec::IntoIter<RawRecord>,
    input: Arc<str>,
    max_record_bytes: usize,
    index: u64,
    bytes: u64,
}

impl DirRecords {
    /// Lists the sessions of `dir`.
    pub(super) fn open(dir: &str, max_record_bytes: usize) -> io::Result<DirRecords> {
        let files = sessions(Path::new(dir)).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{dir} is not a directory of Droid sessions"),
            )
        })?;
        Ok(DirRecords {
            files: files.into_iter(),
            pending: Vec::new().into_iter(),
            input: Arc::from(dir),
            max_record_bytes,
            index: 0,
            bytes: 0,
        })
    }

    fn read(&mut self, path: &Path) -> Vec<RawRecord> {
        let shown = path.display().to_string();
        let mut extend = |_: &[&[u8]]| attach_settings(path);
        match FileBundle::open_with(&shown, self.max_record_bytes, MARKER, &mut extend) {
            Ok(bundle) => {
                self.bytes += bundle.bytes_read();
                bundle.collect()
            }
            Err(e) => vec![RawRecord {
                provenance: Provenance {
                    input: self.input.clone(),
                    file: Arc::from(shown.as_str()),
                    line: 1,
                    index: 0,
                },
                bytes: Vec::new(),
                error: Some(FrameError::Read(e.to_string())),
            }],
        }
    }
}

impl Iterator for DirRecords {
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

impl RecordSource for DirRecords {
    fn bytes_read(&self) -> u64 {
        self.bytes
    }
}

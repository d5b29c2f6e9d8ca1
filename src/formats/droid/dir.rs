//! A directory of Droid sessions read as one input (`~/.factory/sessions`, or one project's
//! folder in it): every session file, in byte order of its path, each with its
//! `settings.json` sidecar. A directory is Droid's when it holds a session and nothing but
//! sessions and their sidecars (the `.bak` copies Droid keeps of them too).

use std::fs;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::formats::bundle::BundleFiles;
use crate::ingest::RecordSource;

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

/// The records of a directory of sessions: each session file's bundle (with its settings
/// sidecar), in order.
pub(super) fn records(dir: &str, max_record_bytes: usize) -> io::Result<Box<dyn RecordSource>> {
    let files = sessions(Path::new(dir)).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{dir} is not a directory of Droid sessions"),
        )
    })?;
    Ok(Box::new(BundleFiles::new(
        dir,
        files,
        MARKER,
        max_record_bytes,
        |path, _| attach_settings(path),
    )))
}

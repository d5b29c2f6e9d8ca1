//! A session folder of Kimi CLI 0.59 and later (`~/.kimi/sessions/<work dir>/<session id>/`),
//! read as one input: its context files (`context.jsonl`, rotated `context_<N>.jsonl`,
//! `context_sub_<N>.jsonl`, and `subagents/<agent id>/context.jsonl`), each a trajectory, so that
//! each subagent is linked to the call that spawned it. The rest of the folder is Kimi's own
//! bookkeeping and is not read: `wire.jsonl` (the event log), `state.json`, a subagent's
//! `meta.json`, `prompt.txt` and `output`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::formats::bundle::BundleFiles;
use crate::ingest::RecordSource;
use crate::ingest::{layout_hint, open, without_compression, Framer};

use super::files::spawn_keys;
use super::{is_pseudo_line, is_wire_line, MARKER};

/// Files of a session folder that are Kimi's bookkeeping, not context files.
const SIDECARS: &[&str] = &["state.json", "meta.json", "metadata.json"];

/// The first JSON value of the file at `path`, if it parses.
fn first_value(path: &Path) -> Option<serde_json::Value> {
    let name = path.to_str()?;
    let reader = open::open(name).ok()?;
    Framer::new(reader, layout_hint(name), 16 << 20)
        .take(4)
        .filter(|f| f.error.is_none())
        .find_map(|f| serde_json::from_slice(&f.bytes).ok())
}

/// True when the file named `name` is a context file by its name (`context.jsonl`,
/// `context_<N>.jsonl`, `context_sub_<N>.jsonl`, optionally compressed).
fn is_context_name(name: &str) -> bool {
    without_compression(name)
        .strip_suffix(".jsonl")
        .is_some_and(|stem| stem == "context" || stem.starts_with("context_"))
}

/// The context files directly in `dir`, in path order, or `None` when `dir` holds a data file
/// that is neither one of them nor Kimi's bookkeeping (`wire.jsonl`, [`SIDECARS`]).
fn context_files(dir: &Path) -> Option<Vec<PathBuf>> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let base = without_compression(name);
        let data = base.ends_with(".json") || base.ends_with(".jsonl");
        if !data || !path.is_file() || SIDECARS.contains(&base) {
            continue;
        }
        match first_value(&path) {
            Some(v) if is_context_name(name) && is_pseudo_line(&v) => found.push(path),
            Some(v) if base == "wire.jsonl" && is_wire_line(&v) => {}
            // An empty file Kimi reserved (a rotation) holds nothing.
            None if fs::metadata(&path).is_ok_and(|m| m.len() == 0) => {}
            _ => return None,
        }
    }
    found.sort();
    Some(found)
}

/// True when `dir` is a session folder: a `context.jsonl` starting as Kimi's do, and no data
/// file of another kind beside it.
pub(super) fn is_session_folder(dir: &Path) -> bool {
    // Most folders walked hold no `context.jsonl`: their files are not opened.
    dir.join("context.jsonl").is_file()
        && context_files(dir).is_some_and(|files| {
            files
                .iter()
                .any(|f| f.file_name().is_some_and(|n| n == "context.jsonl"))
        })
}

/// The context files of a session folder: its own, then its subagents', each group in path
/// order (a subagent folder whose files are not all Kimi's is not read).
fn folder_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut files = context_files(dir).unwrap_or_default();
    let mut agents: Vec<PathBuf> = match fs::read_dir(dir.join("subagents")) {
        Ok(entries) => entries.flatten().map(|e| e.path()).collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    agents.sort();
    for agent in agents.iter().filter(|a| a.is_dir()) {
        files.extend(context_files(agent).unwrap_or_default());
    }
    Ok(files)
}

/// The records of a session folder: each context file's bundle (and its unreadable lines); a
/// subagent's spawning call is looked for in every context file of the folder.
pub(super) fn records(dir: &str, max_record_bytes: usize) -> io::Result<Box<dyn RecordSource>> {
    let files = folder_files(Path::new(dir))?;
    let all: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    Ok(Box::new(BundleFiles::new(
        dir,
        files,
        MARKER,
        max_record_bytes,
        move |path, _| spawn_keys(&path.display().to_string(), &all, max_record_bytes),
    )))
}

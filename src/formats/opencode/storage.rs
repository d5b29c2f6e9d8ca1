//! Reading the JSON files OpenCode kept before 1.2 (`~/.local/share/opencode/storage/`): one
//! file per session (`session/<project>/<session>.json`), per message
//! (`message/<session>/<message>.json`) and per part (`part/<message>/<part>.json`). The folder
//! is read whole, one record per session, in the shape of `opencode export` (`{info, messages:
//! [{info, parts}]}`) with the marker, `"source": "storage"` and the session's `sub_sessions`.
//! The session files are read first (they are small, and tell each session's sub-sessions);
//! a session's messages and parts when its record is made. Messages and parts are ordered by
//! their ids, which OpenCode makes ascending in time (as it listed them itself). A file that
//! is not JSON is written as `{"trajkit_unreadable": file, "reason"}` in its place, and counted
//! by the converter.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::ingest::{Provenance, RawRecord, RecordSource};
use crate::json::strict;

use super::MARKER;

/// True when `dir` is a storage folder: it has `session/` and `message/` folders.
pub fn is_storage(dir: &Path) -> bool {
    dir.join("session").is_dir() && dir.join("message").is_dir()
}

/// The `.json` files directly in `dir`, sorted by name (none when it cannot be read).
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
        .collect();
    files.sort();
    files
}

/// A session file: its path, its id (the file's name), its parent and project.
struct SessionFile {
    path: PathBuf,
    id: String,
    parent: Option<String>,
    project: String,
}

/// The sessions of a storage folder, one record each.
pub struct StorageSessions {
    root: PathBuf,
    input: Arc<str>,
    sessions: std::vec::IntoIter<SessionFile>,
    children: foldhash::HashMap<String, Vec<String>>,
    max_record_bytes: usize,
    index: u64,
    bytes: u64,
}

impl StorageSessions {
    /// The sessions of the storage folder `root`, found in the input `input`.
    pub fn open(input: &str, root: &Path, max_record_bytes: usize) -> StorageSessions {
        let mut sessions = Vec::new();
        let mut projects: Vec<PathBuf> = std::fs::read_dir(root.join("session"))
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        projects.sort();
        for project in projects {
            let project_id = name_of(&project);
            for path in json_files(&project) {
                let parent = std::fs::read(&path)
                    .ok()
                    .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                    .and_then(|v| v["parentID"].as_str().map(str::to_owned))
                    .filter(|p| !p.is_empty());
                sessions.push(SessionFile {
                    id: stem_of(&path),
                    path,
                    parent,
                    project: project_id.clone(),
                });
            }
        }
        let mut children: foldhash::HashMap<String, Vec<String>> = Default::default();
        for s in &sessions {
            if let Some(p) = &s.parent {
                children.entry(p.clone()).or_default().push(s.id.clone());
            }
        }
        StorageSessions {
            root: root.to_owned(),
            input: Arc::from(input),
            sessions: sessions.into_iter(),
            children,
            max_record_bytes,
            index: 0,
            bytes: 0,
        }
    }

    /// The record of session `s`.
    fn record(&mut self, s: &SessionFile) -> RawRecord {
        let provenance = Provenance {
            input: self.input.clone(),
            file: Arc::from(s.path.display().to_string().as_str()),
            line: 1,
            index: self.index,
        };
        self.index += 1;
        let built = self
            .bundle(s)
            .map_err(|e| format!("{}: {e}", s.path.display()));
        RawRecord::assembled(provenance, built, self.max_record_bytes)
    }

    /// `{marker, "source": "storage", "info", "project"?, "todos"?, "sub_sessions", "messages"}`
    /// (`todos`: `todo/<session>.json`).
    fn bundle(&mut self, s: &SessionFile) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(4096);
        let _ = write!(out, "{{\"{MARKER}\":true,\"source\":\"storage\",\"info\":");
        let info = std::fs::read(&s.path)?;
        self.bytes += info.len() as u64;
        if strict::validate(&info).is_err() {
            return Err(std::io::Error::other("the session file is not JSON"));
        }
        out.extend_from_slice(&info);
        let project = self
            .root
            .join("project")
            .join(format!("{}.json", s.project));
        if project.is_file() {
            out.extend_from_slice(b",\"project\":");
            self.file(&project, &mut out, true);
        }
        let todos = self.root.join("todo").join(format!("{}.json", s.id));
        if todos.is_file() {
            out.extend_from_slice(b",\"todos\":");
            self.file(&todos, &mut out, false);
        }
        if let Some(call) = s.parent.as_deref().and_then(|p| self.parent_call(p, &s.id)) {
            out.extend_from_slice(b",\"parent_call\":");
            let _ = serde_json::to_writer(&mut out, &call);
        }
        out.extend_from_slice(b",\"sub_sessions\":");
        let none = Vec::new();
        let _ = serde_json::to_writer(&mut out, self.children.get(&s.id).unwrap_or(&none));
        out.extend_from_slice(b",\"messages\":[");
        let messages = json_files(&self.root.join("message").join(&s.id));
        for (i, m) in messages.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"info\":");
            self.file(m, &mut out, true);
            out.extend_from_slice(b",\"parts\":[");
            let parts = json_files(&self.root.join("part").join(stem_of(m)));
            for (j, p) in parts.iter().enumerate() {
                if j > 0 {
                    out.push(b',');
                }
                self.file(p, &mut out, true);
            }
            out.extend_from_slice(b"]}");
        }
        out.extend_from_slice(b"]}");
        Ok(out)
    }

    /// The call of session `parent` that started its sub-session `child` (the task tool keeps
    /// the sub-session's id in its state's metadata): `{message_id, part_id, call_id}`, found
    /// by reading the parent's part files.
    fn parent_call(&self, parent: &str, child: &str) -> Option<Value> {
        let needle = child.as_bytes();
        for m in json_files(&self.root.join("message").join(parent)) {
            let message = stem_of(&m);
            for p in json_files(&self.root.join("part").join(&message)) {
                let Ok(bytes) = std::fs::read(&p) else {
                    continue;
                };
                if !bytes.windows(needle.len()).any(|w| w == needle) {
                    continue;
                }
                let Ok(part) = serde_json::from_slice::<Value>(&bytes) else {
                    continue;
                };
                if part["state"]["metadata"]["sessionId"].as_str() == Some(child) {
                    return Some(serde_json::json!({
                        "message_id": message,
                        "part_id": stem_of(&p),
                        "call_id": part["callID"].clone(),
                    }));
                }
            }
        }
        None
    }

    /// The JSON of the file at `path` (a JSON object when `object`), or what stands in for it
    /// when it cannot be read.
    fn file(&mut self, path: &Path, out: &mut Vec<u8>, object: bool) {
        let problem = match std::fs::read(path) {
            Ok(bytes) => {
                self.bytes += bytes.len() as u64;
                match strict::validate(&bytes) {
                    Ok(())
                        if !object
                            || bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') =>
                    {
                        out.extend_from_slice(&bytes);
                        return;
                    }
                    Ok(()) => "not a JSON object".to_owned(),
                    Err(strict::ParseError::Syntax(e)) => format!("not JSON: {e}"),
                    Err(strict::ParseError::Rule(p)) => format!("not read: {}", p.message),
                }
            }
            Err(e) => e.to_string(),
        };
        let stand_in = serde_json::json!({
            "trajkit_unreadable": path.display().to_string(),
            "reason": problem,
        });
        let _ = serde_json::to_writer(&mut *out, &stand_in);
    }
}

/// A path's last name.
fn name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A file's name without `.json`.
fn stem_of(path: &Path) -> String {
    path.file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

impl Iterator for StorageSessions {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        let s = self.sessions.next()?;
        Some(self.record(&s))
    }
}

impl RecordSource for StorageSessions {
    fn bytes_read(&self) -> u64 {
        self.bytes
    }
}

//! Reading Claude Code's files: a session file (with the `.meta.json` sidecar a subagent file
//! may have), and a project directory (`~/.claude/projects/<project>/`: `<session>.jsonl`
//! files and one `agent-<id>.jsonl` per subagent, under `<session>/subagents/` or, in 2.0.x,
//! beside the sessions), read as one input so that each subagent can be linked to the call
//! that spawned it.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::convert::Converter;
use crate::formats::bundle::{BundleFiles, FileBundle};
use crate::ingest::RecordSource;
use crate::ingest::{layout_hint, open, without_compression, Framer};
use crate::json::Node;

use super::{ClaudeCode, MARKER};

/// The agent id of a subagent file name (`agent-<id>.jsonl`, optionally compressed).
fn agent_of_name(name: &str) -> Option<&str> {
    without_compression(name)
        .strip_suffix(".jsonl")?
        .strip_prefix("agent-")
        .filter(|id| !id.is_empty())
}

fn is_jsonl(name: &str) -> bool {
    without_compression(name).ends_with(".jsonl")
}

/// Files Claude Code keeps beside its transcripts that are not transcripts: a subagent's
/// `agent-<id>.meta.json` (read with its transcript) and a project's `bridge-pointer.json`.
fn is_sidecar(name: &str) -> bool {
    name == "bridge-pointer.json" || (name.starts_with("agent-") && name.ends_with(".meta.json"))
}

/// The first JSON value of the file at `path` (a few unreadable records before it are skipped).
fn first_value(path: &Path) -> Option<Value> {
    let name = path.to_str()?;
    let reader = open::open(name).ok()?;
    Framer::new(reader, layout_hint(name), 16 << 20)
        .take(8)
        .filter(|f| f.error.is_none())
        .find_map(|f| serde_json::from_slice::<Value>(&f.bytes).ok())
}

/// True when `dir` holds Claude Code transcripts as one input: at least one `.jsonl` file
/// directly in it, each starting as a Claude Code session does, and no other data file than
/// Claude Code's own sidecars (a directory mixing formats is walked file by file instead).
pub(super) fn is_transcript_dir(dir: &Path) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    let mut any = false;
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let base = without_compression(name);
        let data = [".json", ".jsonl", ".ndjson", ".traj"]
            .iter()
            .any(|s| base.ends_with(s));
        // An empty file (a session Claude Code created and never wrote) says nothing either way.
        let empty = fs::metadata(&path).is_ok_and(|m| m.len() == 0);
        if !data || !path.is_file() || is_sidecar(name) || empty {
            continue;
        }
        if !is_jsonl(name) || !first_value(&path).is_some_and(|v| ClaudeCode.sniff(&v)) {
            return false;
        }
        any = true;
    }
    any
}

/// True when the file at `path` beside the sessions is a subagent's, as 2.0.x keeps them: named
/// `agent-<id>.jsonl` and starting with a sidechain line (a session may be named so too).
fn is_subagent_beside(path: &Path, name: &str) -> bool {
    agent_of_name(name).is_some()
        && first_value(path).is_some_and(|v| v["isSidechain"].as_bool() == Some(true))
}

/// The files of a transcript directory to read: the sessions directly in it, then the subagent
/// transcripts (`agent-*.jsonl`) beside them (as 2.0.x keeps them) or anywhere below (as
/// `<session>/subagents/`), each group in path order: a subagent is read after the session
/// that names the call spawning it.
fn transcripts(dir: &Path) -> io::Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let mut top = Vec::new();
    let mut below = Vec::new();
    let mut visited = HashSet::new();
    let mut stack = vec![(dir.to_path_buf(), true)];
    while let Some((d, is_top)) = stack.pop() {
        if !visited.insert(fs::canonicalize(&d)?) {
            continue;
        }
        for entry in fs::read_dir(&d)? {
            let path = entry?.path();
            let Ok(meta) = fs::metadata(&path) else {
                continue;
            };
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if meta.is_dir() {
                stack.push((path, false));
            } else if is_top && is_jsonl(name) && !is_subagent_beside(&path, name) {
                top.push(path);
            } else if agent_of_name(name).is_some() {
                below.push(path);
            }
        }
    }
    top.sort();
    below.sort();
    Ok((top, below))
}

/// The subagents a session's lines say it spawned: `(agent id, tool_use id, how it is known)`,
/// from the `toolUseResult.agentId` of a `Task`/`Agent` call's result and from the
/// `agent_progress` lines Claude Code writes while a subagent runs (`data.agentId`,
/// `parentToolUseID`); the first found for an agent is kept.
pub(super) fn spawned_agents<'n, 'a: 'n>(
    entries: impl Iterator<Item = &'n Node<'a>>,
) -> Vec<(String, String, &'static str)> {
    let mut out: Vec<(String, String, &'static str)> = Vec::new();
    let mut seen = HashSet::new();
    for e in entries {
        let found = if let Some(agent) = e["toolUseResult"]["agentId"].as_str() {
            super::tree::result_ids(e)
                .first()
                .filter(|id| !id.is_empty())
                .map(|id| (agent, *id, "toolUseResult"))
        } else if e["type"].as_str() == Some("progress")
            && e["data"]["type"].as_str() == Some("agent_progress")
        {
            e["data"]["agentId"]
                .as_str()
                .zip(e["parentToolUseID"].as_str())
                .map(|(a, t)| (a, t, "agent_progress"))
        } else {
            None
        };
        if let Some((agent, tool, via)) = found {
            if !agent.is_empty() && seen.insert(agent.to_owned()) {
                out.push((agent.to_owned(), tool.to_owned(), via));
            }
        }
    }
    out
}

/// The session file a subagent's file at `path` belongs to, where Claude Code keeps it:
/// `<project>/<session>.jsonl` for a file anywhere under `<project>/<session>/` (`subagents/`,
/// or deeper for workflow agents), or the file beside it (2.0.x); compressed too. `None` when
/// there is none, or when `session` is not a plain file name.
fn session_file_of(path: &Path, session: &str) -> Option<PathBuf> {
    if session.is_empty() || session.starts_with('.') || session.contains(['/', '\\']) {
        return None;
    }
    let dir = path.parent()?;
    let mut bases: Vec<&Path> = dir
        .ancestors()
        .take(6)
        .filter(|d| d.file_name().is_some_and(|n| n == session))
        .filter_map(Path::parent)
        .take(1)
        .collect();
    bases.push(dir);
    bases.into_iter().find_map(|base| {
        ["jsonl", "jsonl.gz", "jsonl.zst"]
            .iter()
            .map(|ext| base.join(format!("{session}.{ext}")))
            .find(|f| f.is_file() && f.as_path() != path)
    })
}

/// The subagents the session file at `path` says it spawned ([`spawned_agents`]); only its
/// lines that name an agent are parsed. Empty when it cannot be read.
fn spawns_in(path: &Path, max_record_bytes: usize) -> Vec<(String, String, &'static str)> {
    let Some(name) = path.to_str() else {
        return Vec::new();
    };
    let Ok(reader) = open::open(name) else {
        return Vec::new();
    };
    let [agent_id, escape] = [&b"agentId"[..], b"\\u"].map(memchr::memmem::Finder::new);
    let lines: Vec<Value> = Framer::new(reader, layout_hint(name), max_record_bytes)
        .filter(|f| f.error.is_none())
        .filter(|f| agent_id.find(&f.bytes).is_some() || escape.find(&f.bytes).is_some())
        .filter_map(|f| serde_json::from_slice::<Value>(&f.bytes).ok())
        .collect();
    let nodes: Vec<Node> = lines.iter().map(Node::from_value).collect();
    spawned_agents(nodes.iter())
}

/// Where a subagent's file read apart from its session finds the call that spawned it: its
/// session's file ([`session_file_of`]), read once per session file.
#[derive(Default)]
struct SessionFiles {
    spawns: HashMap<PathBuf, Vec<(String, String, &'static str)>>,
}

impl SessionFiles {
    /// The `spawned_by` of agent `agent` of session `session` for the subagent file at `path`,
    /// from its session's file unless `skip` says that file was read already.
    fn spawned_by(
        &mut self,
        path: &Path,
        session: &str,
        agent: &str,
        max_record_bytes: usize,
        skip: impl Fn(&Path) -> bool,
    ) -> Option<Value> {
        let file = session_file_of(path, session).filter(|f| !skip(f))?;
        let spawns = self
            .spawns
            .entry(file.clone())
            .or_insert_with(|| spawns_in(&file, max_record_bytes));
        let (_, tool, via) = spawns.iter().find(|(a, _, _)| a == agent)?;
        Some(json!({"tool_use_id": tool, "via": via, "file": file.display().to_string()}))
    }
}

/// Whether the bundle keys of a subagent file name its call already (its sidecar's `toolUseId`).
fn meta_names_call(keys: &Map<String, Value>) -> bool {
    keys.get("meta").is_some_and(|m| m["toolUseId"].is_string())
}

/// The fields of a bundled line (`{"line", "entry"}`) that link a project's files, borrowed
/// from its text unparsed.
#[derive(Deserialize)]
struct BundledLine<'a> {
    #[serde(borrow)]
    entry: LinkFields<'a>,
}

#[derive(Deserialize)]
struct LinkFields<'a> {
    #[serde(rename = "sessionId", borrow)]
    session_id: Option<&'a RawValue>,
    #[serde(rename = "agentId", borrow)]
    agent_id: Option<&'a RawValue>,
    #[serde(rename = "toolUseResult", borrow)]
    tool_use_result: Option<&'a RawValue>,
    #[serde(borrow)]
    data: Option<&'a RawValue>,
}

/// A bundled line with its entry parsed.
#[derive(Deserialize)]
struct ParsedLine {
    entry: Value,
}

/// What the lines of one session file say for linking them to other files.
struct FileLinks {
    /// The first non-empty `sessionId` (empty when there is none).
    session: String,
    /// The first non-empty `agentId`: a subagent file's.
    agent: Option<String>,
    /// The subagents it spawned ([`spawned_agents`]).
    spawned: Vec<(String, String, &'static str)>,
}

/// The [`FileLinks`] of a session file's bundled lines. Only the lines that may name a spawned
/// agent (an `agentId` in `toolUseResult`, an `agent_progress` in `data`) are parsed whole.
fn file_links(lines: &[&[u8]]) -> FileLinks {
    let non_empty = |raw: Option<&RawValue>| {
        raw.and_then(|r| serde_json::from_str::<String>(r.get()).ok())
            .filter(|s| !s.is_empty())
    };
    // Once the session is known, a line can only add an agent when its text names one, and a
    // spawn when it names one in a tool result or is an agent's progress (or when it spells a
    // key with `\u` escapes): the others are not parsed. A subagent file names its own agent
    // on every line, so once that is known, only tool results are looked at.
    let [agent_id, progress, escape, result] =
        [&b"agentId"[..], b"agent_progress", b"\\u", b"toolUseResult"]
            .map(memchr::memmem::Finder::new);
    let has = |finder: &memchr::memmem::Finder<'_>, text: &[u8]| finder.find(text).is_some();
    let mut session = None;
    let mut agent = None;
    let mut spawning = Vec::new();
    for text in lines {
        let may_link = || {
            has(&escape, text)
                || has(&progress, text)
                || (has(&agent_id, text) && (agent.is_none() || has(&result, text)))
        };
        if session.is_some() && !may_link() {
            continue;
        }
        let Ok(BundledLine { entry }) = serde_json::from_slice::<BundledLine>(text) else {
            continue;
        };
        if session.is_none() {
            session = non_empty(entry.session_id);
        }
        if agent.is_none() {
            agent = non_empty(entry.agent_id);
        }
        let may_spawn = entry
            .tool_use_result
            .is_some_and(|r| r.get().contains("agentId"))
            || entry
                .data
                .is_some_and(|r| r.get().contains("agent_progress"));
        if may_spawn {
            spawning.extend(serde_json::from_slice::<ParsedLine>(text).map(|l| l.entry));
        }
    }
    FileLinks {
        session: session.unwrap_or_default(),
        agent,
        spawned: spawned_agents(
            spawning
                .iter()
                .map(Node::from_value)
                .collect::<Vec<_>>()
                .iter(),
        ),
    }
}

/// Adds `meta` to the bundle of the subagent file at `path` when its sidecar
/// `agent-<id>.meta.json` is beside it (Claude Code writes one from version 2.1.x: the agent's
/// type, description and the `toolUseId` of the call that spawned it). A sidecar that cannot
/// be read or parsed is noted in `meta_error`.
fn attach_meta(path: &Path, bundle: &mut Map<String, Value>) {
    let Some(agent) = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(agent_of_name)
    else {
        return;
    };
    let sidecar = path.with_file_name(format!("agent-{agent}.meta.json"));
    if !sidecar.is_file() {
        return;
    }
    match fs::read(&sidecar)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| e.to_string()))
    {
        Ok(meta) => {
            bundle.insert("meta".into(), meta);
        }
        Err(e) => {
            bundle.insert(
                "meta_error".into(),
                json!(format!("{}: {e}", sidecar.display())),
            );
        }
    }
}

/// The session file at `path` as one bundle record (and its bad lines), with its sidecar; a
/// subagent's file carries `spawned_by` when its session's file names the call that spawned it.
pub(super) fn open_file(path: &str, max_record_bytes: usize) -> io::Result<FileBundle> {
    FileBundle::open_with(path, max_record_bytes, MARKER, &mut |lines| {
        let mut keys = Map::new();
        let path = Path::new(path);
        attach_meta(path, &mut keys);
        let links = file_links(lines);
        if let Some(agent) = links.agent.filter(|_| !meta_names_call(&keys)) {
            let found = SessionFiles::default().spawned_by(
                path,
                &links.session,
                &agent,
                max_record_bytes,
                |_| false,
            );
            keys.extend(found.map(|v| ("spawned_by".to_owned(), v)));
        }
        keys
    })
}

/// The records of a transcript directory: each file's bundle, in the order of [`transcripts`];
/// a subagent's bundle carries `spawned_by` when a session read before it names the call
/// that spawned it, or its session's file outside the directory does (a `subagents/` folder
/// read alone).
pub(super) fn dir_records(dir: &str, max_record_bytes: usize) -> io::Result<Box<dyn RecordSource>> {
    let (top, below) = transcripts(Path::new(dir))?;
    let read: HashSet<PathBuf> = top.iter().cloned().collect();
    let files: Vec<PathBuf> = top.into_iter().chain(below).collect();
    // `(session id, agent id)` → `(tool_use id, how it is known, the file that says so)`.
    let mut links: HashMap<(String, String), (String, &'static str, String)> = HashMap::new();
    let mut outside = SessionFiles::default();
    let keys = move |path: &Path, lines: &[&[u8]]| {
        let mut keys = Map::new();
        attach_meta(path, &mut keys);
        let FileLinks {
            session,
            agent,
            spawned,
        } = file_links(lines);
        if let Some(agent) = agent {
            if let Some((tool, via, file)) = links.get(&(session.clone(), agent.clone())) {
                keys.insert(
                    "spawned_by".into(),
                    json!({"tool_use_id": tool, "via": via, "file": file}),
                );
            } else if !meta_names_call(&keys) {
                let found = outside.spawned_by(path, &session, &agent, max_record_bytes, |f| {
                    read.contains(f)
                });
                keys.extend(found.map(|v| ("spawned_by".to_owned(), v)));
            }
        }
        for (agent, tool, via) in spawned {
            links
                .entry((session.clone(), agent))
                .or_insert_with(|| (tool, via, path.display().to_string()));
        }
        keys
    };
    Ok(Box::new(BundleFiles::new(
        dir,
        files,
        MARKER,
        max_record_bytes,
        keys,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subagent_file_names_and_sidecars() {
        assert_eq!(agent_of_name("agent-a1b2.jsonl"), Some("a1b2"));
        assert_eq!(
            agent_of_name("agent-acompact-e1.jsonl.gz"),
            Some("acompact-e1")
        );
        assert_eq!(agent_of_name("agent-.jsonl"), None);
        assert_eq!(agent_of_name("journal.jsonl"), None);
        assert!(is_sidecar("agent-a1.meta.json") && !is_sidecar("wf_1.json"));
    }

    #[test]
    fn a_subagents_session_file_is_looked_for_where_claude_code_keeps_it() {
        let tmp = tempfile::tempdir().expect("dir");
        let sub = tmp.path().join("s1/subagents");
        fs::create_dir_all(&sub).expect("mkdir");
        fs::write(tmp.path().join("s1.jsonl"), "{}").expect("write");
        fs::write(tmp.path().join("s2.jsonl.gz"), "").expect("write");
        let nested = sub.join("agent-a1.jsonl");
        assert_eq!(
            session_file_of(&nested, "s1"),
            Some(tmp.path().join("s1.jsonl"))
        );
        // The folder must be the session's own.
        assert_eq!(session_file_of(&nested, "s2"), None);
        let workflow = sub.join("workflows/wf_1/agent-a3.jsonl");
        assert_eq!(
            session_file_of(&workflow, "s1"),
            Some(tmp.path().join("s1.jsonl"))
        );
        let beside = tmp.path().join("agent-a2.jsonl");
        assert_eq!(
            session_file_of(&beside, "s2"),
            Some(tmp.path().join("s2.jsonl.gz"))
        );
        for bad in ["", "../s1", "..", "a/b"] {
            assert_eq!(session_file_of(&nested, bad), None, "{bad}");
        }
    }

    /// Lines after the session's that name no agent are skipped unparsed; a key spelled with
    /// escapes is still read.
    #[test]
    fn file_links_read_only_the_lines_that_may_link() {
        let lines = [
            r#"{"line":1,"entry":{"sessionId":"s1","type":"user"}}"#,
            r#"{"line":2,"entry":{"sessionId":"s2","type":"user"}}"#,
            r#"{"line":3,"entry":{"agent\u0049d":"a9"}}"#,
            r#"{"line":4,"entry":{"type":"progress","parentToolUseID":"t1","data":{"type":"agent_progress","agentId":"a1"}}}"#,
        ];
        let refs: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
        let links = file_links(&refs);
        assert_eq!(links.session, "s1");
        assert_eq!(links.agent.as_deref(), Some("a9"));
        assert_eq!(
            links.spawned,
            vec![("a1".to_owned(), "t1".to_owned(), "agent_progress")]
        );
    }

    #[test]
    fn spawned_agents_come_from_results_and_progress() {
        let lines = [
            json!({"type": "progress", "data": {"type": "agent_progress", "agentId": "a1"},
                "parentToolUseID": "toolu_1"}),
            json!({"type": "user", "toolUseResult": {"agentId": "a1"},
                "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]}}),
            json!({"type": "user", "toolUseResult": {"agentId": "a2", "status": "completed"},
                "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_2"}]}}),
            json!({"type": "progress", "data": {"type": "hook_progress"}}),
        ];
        assert_eq!(
            spawned_agents(
                lines
                    .iter()
                    .map(Node::from_value)
                    .collect::<Vec<_>>()
                    .iter()
            ),
            vec![
                ("a1".to_owned(), "toolu_1".to_owned(), "agent_progress"),
                ("a2".to_owned(), "toolu_2".to_owned(), "toolUseResult"),
            ]
        );
    }
}

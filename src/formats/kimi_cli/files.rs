//! What a context file's path says, and the link from a subagent's file to the call that
//! spawned it. Kimi CLI names its files so (`utils/path.py`'s `next_available_rotation` adds
//! `_<N>` to a name):
//!
//! - before 0.59: `~/.kimi/sessions/<md5 of the work dir>/<session id>.jsonl`, rotated copies
//!   `<session id>_<N>.jsonl` (a `/clear`, a revert to a checkpoint, a compaction), subagents
//!   `<session id>_sub_<N>.jsonl` (the `Task` tool) and, in Moonshot's SWE-bench runs,
//!   `<session id>_read_<N>.jsonl` (a `ReadContext` tool whose result says "Transcript saved
//!   to: `<path>`");
//! - from 0.59: `.../<session id>/context.jsonl`, `context_<N>.jsonl` rotated, and
//!   `context_sub_<N>.jsonl` for `Task` subagents;
//! - from 1.25: `.../<session id>/subagents/<agent id>/context.jsonl` for the `Agent` tool's
//!   subagents, whose result starts with `agent_id: <agent id>`.

use std::fs;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::ingest::{open, without_compression};

/// The words before the path of a subagent's transcript in a `ReadContext` result.
pub(super) const TRANSCRIPT_SAVED: &str = "Transcript saved to: ";

/// The words before the agent id on the first line of an `Agent` result.
pub(super) const AGENT_ID: &str = "agent_id: ";

/// What a context file is, by its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Kind {
    /// A session's conversation.
    Session,
    /// An older state of a session's conversation, kept when Kimi rotated the file.
    Rotated { session: String, index: u64 },
    /// A subagent's conversation: `via` is `read` or `sub` (a numbered file beside the
    /// session's) or `agent` (a folder under `subagents/`), `name` its number or agent id.
    Subagent {
        parent: String,
        via: &'static str,
        name: String,
    },
}

/// The trajectory id of a context file and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Named {
    pub id: String,
    pub kind: Kind,
}

/// The file name of `path` (after its last `/`), without a compression suffix.
fn base_name(path: &str) -> &str {
    without_compression(path.rsplit(['/', '\\']).next().unwrap_or(path))
}

/// The name of the folder `up` levels above the file at `path` (1: the folder holding it).
fn folder(path: &str, up: usize) -> Option<&str> {
    path.rsplit(['/', '\\'])
        .nth(up)
        .filter(|s| !s.is_empty() && *s != "." && *s != "..")
}

/// `stem` split as `<base>_<word>_<N>` (`word` given) or `<base>_<N>` (`word` empty).
fn numbered<'s>(stem: &'s str, word: &str) -> Option<(&'s str, u64)> {
    let (rest, n) = stem.rsplit_once('_')?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n = n.parse().ok()?;
    let base = if word.is_empty() {
        rest
    } else {
        rest.strip_suffix(word)?.strip_suffix('_')?
    };
    (!base.is_empty()).then_some((base, n))
}

/// A subagent file's name beside its session: `<base>_read_<N>` or `<base>_sub_<N>`.
pub(super) fn subagent_suffix(stem: &str) -> Option<(&str, &'static str, u64)> {
    ["read", "sub"]
        .into_iter()
        .find_map(|via| numbered(stem, via).map(|(base, n)| (base, via, n)))
}

/// True when `s` is a UUID in its usual text form (Kimi's session ids).
fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// The trajectory id and kind of the context file at `path`: the session id (the file's stem
/// before 0.59, its folder's name after), followed for a rotated or subagent file by what
/// tells it apart. `None` for standard input, which has no name.
pub(super) fn name_of(path: &str) -> Option<Named> {
    if path == "-" {
        return None;
    }
    let name = base_name(path);
    let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
    let stem = if stem.is_empty() { name } else { stem };
    let session_folder = folder(path, 1);
    if let ("wire", Some(agent), Some("agents"), Some(session)) =
        (stem, session_folder, folder(path, 2), folder(path, 3))
    {
        // A Kimi Code agent log: `<session>/agents/<main|agent-N>/wire.jsonl`.
        if agent == "main" {
            return Some(Named {
                id: session.to_owned(),
                kind: Kind::Session,
            });
        }
        return Some(Named {
            id: format!("{session}/agents/{agent}"),
            kind: Kind::Subagent {
                parent: session.to_owned(),
                via: "agent",
                name: agent.to_owned(),
            },
        });
    }
    if stem == "context" {
        if let (Some(agent), Some("subagents"), Some(session)) =
            (session_folder, folder(path, 2), folder(path, 3))
        {
            return Some(Named {
                id: format!("{session}/subagents/{agent}"),
                kind: Kind::Subagent {
                    parent: session.to_owned(),
                    via: "agent",
                    name: agent.to_owned(),
                },
            });
        }
        return Some(Named {
            id: session_folder.unwrap_or(stem).to_owned(),
            kind: Kind::Session,
        });
    }
    let in_folder = |s: &str| match session_folder {
        Some(f) => format!("{f}/{s}"),
        None => s.to_owned(),
    };
    if let Some(("context", via, n)) = subagent_suffix(stem) {
        let parent = session_folder.unwrap_or("context").to_owned();
        return Some(Named {
            id: in_folder(stem),
            kind: Kind::Subagent {
                parent,
                via,
                name: n.to_string(),
            },
        });
    }
    if let Some(("context", n)) = numbered(stem, "") {
        let session = session_folder.unwrap_or("context").to_owned();
        return Some(Named {
            id: in_folder(stem),
            kind: Kind::Rotated { session, index: n },
        });
    }
    if let Some((base, via, n)) = subagent_suffix(stem) {
        return Some(Named {
            id: stem.to_owned(),
            kind: Kind::Subagent {
                parent: base.to_owned(),
                via,
                name: n.to_string(),
            },
        });
    }
    if let Some((base, n)) = numbered(stem, "").filter(|(b, _)| is_uuid(b)) {
        return Some(Named {
            id: stem.to_owned(),
            kind: Kind::Rotated {
                session: base.to_owned(),
                index: n,
            },
        });
    }
    Some(Named {
        id: stem.to_owned(),
        kind: Kind::Session,
    })
}

/// The session's file a subagent's file at `path` hangs off, and the text its spawning call's
/// result holds: the end of the subagent file's name (`_read_1.jsonl`, in a `ReadContext`
/// result's "Transcript saved to: `<path>`"), or `agent_id: <id>` (an `Agent` result). `None`
/// when no result names the file (a `Task` subagent's `context_sub_<N>.jsonl`).
fn parent_file(path: &Path) -> Option<(PathBuf, String)> {
    let text = path.to_str()?;
    let named = name_of(text)?;
    let Kind::Subagent { parent, via, name } = named.kind else {
        return None;
    };
    let dir = path.parent()?;
    if base_name(text).starts_with("wire.") {
        // A Kimi Code agent: the session's `state.json` names the agent that spawned it.
        let session = dir.parent()?.parent()?;
        let agent = parent_agent(path)?;
        let log = session.join("agents").join(agent).join(base_name(text));
        return Some((log, format!("{AGENT_ID}{name}")));
    }
    match via {
        "agent" => Some((
            dir.parent()?.parent()?.join("context.jsonl"),
            format!("{AGENT_ID}{name}"),
        )),
        _ if parent == "context" || folder(text, 1) == Some(parent.as_str()) => None,
        _ => {
            // The result names the file as Kimi wrote it; a copy may have been renamed in
            // front (`<prefix><session id>_read_1.jsonl`), so its end is looked for.
            let file = base_name(text);
            let ext = file.rsplit_once('.').map_or("jsonl", |(_, e)| e);
            Some((
                dir.join(format!("{parent}.{ext}")),
                format!("_{via}_{name}.{ext}"),
            ))
        }
    }
}

/// The agent that spawned the Kimi Code agent whose log is at `path`
/// (`<session>/agents/<agent>/wire.jsonl`): its `parentAgentId` in the session's
/// `state.json`.
pub(super) fn parent_agent(path: &Path) -> Option<String> {
    if !base_name(path.to_str()?).starts_with("wire.") {
        return None;
    }
    let agent = path.parent()?;
    let state = agent.parent()?.parent()?.join("state.json");
    let text = fs::read_to_string(state).ok()?;
    let state: Value = serde_json::from_str(&text).ok()?;
    let name = agent.file_name()?.to_str()?;
    state["agents"][name]["parentAgentId"]
        .as_str()
        .map(str::to_owned)
}

/// The line of a tool result in the session file at `parent` whose text holds `needle`: its
/// line number and call id.
fn spawning_result(parent: &Path, needle: &str, max_bytes: usize) -> Option<(u64, String)> {
    let mut reader = open::open(parent.to_str()?).ok()?;
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    let saved = memchr::memmem::Finder::new(TRANSCRIPT_SAVED.as_bytes());
    let agent = needle.starts_with(AGENT_ID);
    let mut buf = Vec::new();
    let mut line = 0u64;
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).ok()?;
        if n == 0 || buf.len() > max_bytes {
            return None;
        }
        line += 1;
        if finder.find(&buf).is_none() || (!agent && saved.find(&buf).is_none()) {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&buf) else {
            continue;
        };
        // A context file's tool message, or a Kimi Code log's `tool.result` event.
        let id = if v["role"] == "tool" {
            &v["tool_call_id"]
        } else if v["event"]["type"] == "tool.result" {
            &v["event"]["toolCallId"]
        } else {
            continue;
        };
        if let Some(id) = id.as_str() {
            return Some((line, id.to_owned()));
        }
    }
}

/// The keys a subagent's bundle gets from outside its file: `spawned_by`, the call of its
/// session that spawned it, when that session's file is one of the run's `inputs` (converted
/// in the same run) and a result of it names this file.
pub(super) fn spawn_keys(path: &str, inputs: &[String], max_bytes: usize) -> Map<String, Value> {
    let mut keys = Map::new();
    if let Some(agent) = parent_agent(Path::new(path)) {
        keys.insert("parent_agent".into(), Value::String(agent));
    }
    let Some((parent, needle)) = parent_file(Path::new(path)) else {
        return keys;
    };
    let Ok(parent_canon) = fs::canonicalize(&parent) else {
        return keys;
    };
    // Only the inputs with the session file's name are resolved (a run may name thousands).
    let parent_name = parent.file_name();
    let given = inputs
        .iter()
        .filter(|i| Path::new(i.as_str()).file_name() == parent_name)
        .any(|i| fs::canonicalize(i).is_ok_and(|c| c == parent_canon));
    if !given {
        return keys;
    }
    if let Some((line, id)) = spawning_result(&parent, &needle, max_bytes) {
        keys.insert(
            "spawned_by".into(),
            json!({"tool_call_id": id, "file": parent.display().to_string(), "line": line}),
        );
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(path: &str) -> (String, Kind) {
        let n = name_of(path).expect("named");
        (n.id, n.kind)
    }

    #[test]
    fn names_of_every_layout() {
        let uuid = "531d195b-6436-426e-b010-4bf723a992de";
        assert_eq!(
            named(&format!("s/00d5/{uuid}.jsonl")),
            (uuid.to_owned(), Kind::Session)
        );
        assert_eq!(
            named(&format!("s/00d5/{uuid}_read_2.jsonl")),
            (
                format!("{uuid}_read_2"),
                Kind::Subagent {
                    parent: uuid.to_owned(),
                    via: "read",
                    name: "2".into()
                }
            )
        );
        assert_eq!(
            named(&format!("{uuid}_3.jsonl")).1,
            Kind::Rotated {
                session: uuid.to_owned(),
                index: 3
            }
        );
        // A name that is not a session id with a number is a session of its own.
        assert_eq!(named("notes_2.jsonl"), ("notes_2".into(), Kind::Session));
        assert_eq!(
            named("/h/.kimi/sessions/w_1a/s9/context.jsonl"),
            ("s9".into(), Kind::Session)
        );
        assert_eq!(
            named("w/s9/context_2.jsonl"),
            (
                "s9/context_2".into(),
                Kind::Rotated {
                    session: "s9".into(),
                    index: 2
                }
            )
        );
        assert_eq!(
            named("w/s9/context_sub_1.jsonl.gz"),
            (
                "s9/context_sub_1".into(),
                Kind::Subagent {
                    parent: "s9".into(),
                    via: "sub",
                    name: "1".into()
                }
            )
        );
        assert_eq!(
            named("w/s9/subagents/a1b2/context.jsonl"),
            (
                "s9/subagents/a1b2".into(),
                Kind::Subagent {
                    parent: "s9".into(),
                    via: "agent",
                    name: "a1b2".into()
                }
            )
        );
        let code = "/h/.kimi-code/sessions/wd_p_1a/session_9f";
        assert_eq!(
            named(&format!("{code}/agents/main/wire.jsonl")),
            ("session_9f".into(), Kind::Session)
        );
        assert_eq!(
            named(&format!("{code}/agents/agent-2/wire.jsonl")),
            (
                "session_9f/agents/agent-2".into(),
                Kind::Subagent {
                    parent: "session_9f".into(),
                    via: "agent",
                    name: "agent-2".into()
                }
            )
        );
        assert_eq!(name_of("-"), None);
    }

    #[test]
    fn a_subagent_file_names_its_session_file() {
        assert_eq!(
            parent_file(Path::new("d/s1_read_2.jsonl")),
            Some((PathBuf::from("d/s1.jsonl"), "_read_2.jsonl".into()))
        );
        assert_eq!(
            parent_file(Path::new("w/s9/subagents/a1/context.jsonl")),
            Some((PathBuf::from("w/s9/context.jsonl"), "agent_id: a1".into()))
        );
        assert_eq!(parent_file(Path::new("w/s9/context_sub_1.jsonl")), None);
        assert_eq!(parent_file(Path::new("d/s1.jsonl")), None);
    }
}

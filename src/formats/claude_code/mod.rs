//! Claude Code sessions: one JSON-lines file per session (and one per subagent), one trajectory
//! per file. The lines form a tree through `parentUuid`: the trajectory is the main chain and
//! what hangs off it in the same conversation (the results of parallel calls, the rest of a
//! response written after one of them), see `tree.rs`; the lines of one response are merged
//! and its calls' results follow it in call order, see `steps.rs`. A project directory is read
//! whole, subagents included (`project.rs`). The mapping is in docs/formats/claude-code.md.

mod project;
mod steps;
mod tree;

use std::io;
use std::path::Path;

use serde_json::{json, Map, Value};

use crate::convert::{ConvertOptions, Converter, FormatOptions};
use crate::formats::bundle::bundle_lines;
use crate::formats::kit::{fields_except, file_stem, has_keys, parse_bundle, source_details};
use crate::formats::Format;
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::json::object;
use crate::model::{AdpVersion, JsonObject, Trajectory};
use crate::validate::Diagnostic;

use steps::{Line, Unmapped};
use tree::{is_turn, Selection};

/// Reads Claude Code session files.
pub struct ClaudeCode;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &ClaudeCode,
    side: None,
};

/// The marker of a session bundle.
const MARKER: &str = "claude_code_session";

/// The envelope keys every turn repeats: kept once (`envelope`, from the first turn taken), and
/// on a line only where its value differs.
const ENVELOPE: &[&str] = &[
    "sessionId",
    "agentId",
    "isSidechain",
    "cwd",
    "version",
    "gitBranch",
    "userType",
    "entrypoint",
    "slug",
];

impl Converter for ClaudeCode {
    fn name(&self) -> &'static str {
        "claude-code"
    }

    fn description(&self) -> &'static str {
        "Claude Code session JSONL (one file per session or subagent, or a project directory; the parentUuid tree followed)"
    }

    /// Claude Code's lines carry a `type` and the `sessionId`, except its bookkeeping lines
    /// `summary` (`leafUuid`) and the file-history ones (`messageId` and the snapshot).
    fn sniff(&self, first: &Value) -> bool {
        let Some(kind) = first["type"].as_str() else {
            return false;
        };
        has_keys(first, &["sessionId"])
            || has_keys(first, &["leafUuid"])
            || (kind == "file-history-snapshot" && has_keys(first, &["messageId", "snapshot"]))
            || (kind == "file-history-delta"
                && has_keys(first, &["messageId", "snapshotMessageId"]))
    }

    fn claims_path(&self, path: &Path) -> bool {
        path.is_dir() && project::is_transcript_dir(path)
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        let max = opts.run.max_record_bytes;
        Some(if Path::new(path).is_dir() {
            boxed(project::DirRecords::open(path, max))
        } else {
            boxed(project::open_file(path, max))
        })
    }

    fn convert(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        let bundle = parse_bundle(
            record,
            MARKER,
            "not a Claude Code session (use --from claude-code on the session file or the project directory)",
        )?;
        to_trajectory(&bundle, record).map(|t| vec![(t, AdpVersion::V1_5)])
    }
}

/// The first non-empty string under `key` among `entries`.
fn first_str<'a>(entries: &[&'a Value], key: &str) -> Option<&'a str> {
    entries
        .iter()
        .filter_map(|e| e[key].as_str())
        .find(|s| !s.is_empty())
}

/// The trajectory id: the session id; a subagent's is `<session id>/agent-<agent id>`.
/// Without a session id, the file name stands in; from stdin there is none.
fn trajectory_id(
    entries: &[&Value],
    subagent: bool,
    record: &RawRecord,
) -> Result<String, Vec<Diagnostic>> {
    let file = record.provenance.file.as_ref();
    let Some(session) = first_str(entries, "sessionId")
        .map(str::to_owned)
        .or_else(|| (file != "-").then(|| file_stem(file)))
    else {
        return Err(vec![Diagnostic::error(
            &record.provenance,
            None,
            "/sessionId",
            "missing-id",
            "no entry has a non-empty sessionId, and there is no file name to use instead",
        )]);
    };
    if !subagent {
        return Ok(session);
    }
    let stem = file_stem(file);
    let agent = match first_str(entries, "agentId") {
        Some(a) => format!("agent-{a}"),
        None if stem.starts_with("agent-") => stem,
        None => "sidechain".to_owned(),
    };
    if session == agent {
        return Ok(session);
    }
    Ok(format!("{session}/{agent}"))
}

/// The fields of a taken turn that the steps do not hold: every top-level key but the mapped
/// ones (an envelope key only where it differs from `envelope`), and the message's keys but
/// its content.
fn line_fields(e: &Value, envelope: &Map<String, Value>) -> (Map<String, Value>, Value) {
    let mut fields = Map::new();
    if let Value::Object(o) = e {
        for (k, v) in o {
            let mapped = matches!(k.as_str(), "type" | "uuid" | "parentUuid" | "message");
            let same = ENVELOPE.contains(&k.as_str()) && envelope.get(k) == Some(v);
            if !mapped && !same {
                fields.insert(k.clone(), v.clone());
            }
        }
    }
    let message = match &e["message"] {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "content")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        _ => Value::Null,
    };
    (fields, message)
}

fn to_trajectory(bundle: &Value, record: &RawRecord) -> Result<Trajectory, Vec<Diagnostic>> {
    let numbered: Vec<(u64, &Value)> = bundle_lines(bundle).collect();
    let entries: Vec<&Value> = numbered.iter().map(|(_, e)| *e).collect();
    let Selection {
        included,
        chain,
        left_out,
        subagent,
    } = tree::select(&entries);
    let id = trajectory_id(&entries, subagent, record)?;
    let empty = |reason: &str| {
        vec![Diagnostic::error(
            &record.provenance,
            Some(&id),
            "/content",
            "empty-trajectory",
            reason,
        )]
    };
    if !entries.iter().any(|e| is_turn(e)) {
        return Err(empty(
            "no line is a Claude Code turn (a \"user\" or \"assistant\" entry with a uuid): not a Claude Code session, or one with no conversation",
        ));
    }
    let mut unmapped = Unmapped::default();
    for &(line, e) in &numbered {
        match e["type"].as_str() {
            Some("user" | "assistant") if e["uuid"].is_string() => {}
            Some("user" | "assistant") => unmapped.keep(
                line,
                "/uuid",
                "a turn without a string uuid cannot be placed in the session's tree".into(),
                e,
            ),
            Some("summary") => {}
            Some(kind) => unmapped.keep(line, "", format!("a {kind:?} entry is not a turn"), e),
            None => unmapped.keep(line, "/type", "an entry without a string type".into(), e),
        }
    }
    let taken: Vec<Line<'_>> = numbered
        .iter()
        .enumerate()
        .filter(|&(i, (_, e))| included[i] && is_turn(e))
        .map(|(_, &(line, entry))| Line { line, entry })
        .collect();
    let built = steps::build(&taken, &mut unmapped).map_err(|p| {
        let mut d = Diagnostic::error(
            &record.provenance,
            Some(&id),
            p.pointer,
            "session-structure",
            p.message,
        );
        d.line = p.line;
        vec![d]
    })?;
    if built.content.is_empty() {
        return Err(empty(
            "its turns hold no text, image, tool call or result that ADP can carry",
        ));
    }
    let session = first_str(&entries, "sessionId");
    let first = taken.first().map(|l| l.entry).unwrap_or(&Value::Null);
    let envelope: Map<String, Value> = ENVELOPE
        .iter()
        .filter_map(|k| first.get(*k).map(|v| ((*k).to_owned(), v.clone())))
        .collect();
    let mut models: Vec<&str> = Vec::new();
    for l in &taken {
        if let Some(m) = l.entry["message"]["model"].as_str() {
            if !models.contains(&m) {
                models.push(m);
            }
        }
    }
    let mut steps_of: std::collections::HashMap<u64, Vec<usize>> = Default::default();
    for (i, line) in built.origins.iter().enumerate() {
        steps_of.entry(*line).or_default().push(i);
    }
    let lines: Vec<Value> = taken
        .iter()
        .map(|l| {
            let (fields, message) = line_fields(l.entry, &envelope);
            let steps = steps_of.get(&l.line).cloned().unwrap_or_default();
            let mut v = object([
                ("line", l.line.into()),
                ("uuid", l.entry["uuid"].clone()),
                ("parent", l.entry["parentUuid"].clone()),
                ("steps", steps.into()),
            ]);
            if !fields.is_empty() {
                v["fields"] = Value::Object(fields);
            }
            if !message.is_null() {
                v["message"] = message;
            }
            v
        })
        .collect();
    let summaries: Vec<Value> = entries
        .iter()
        .filter(|e| e["type"] == "summary")
        .map(|e| Value::Object(fields_except(e, &["type"])))
        .collect();
    let spawned: Vec<Value> = project::spawned_agents(entries.iter().copied())
        .into_iter()
        .map(|(agent, tool, via)| {
            let traj = session.map(|s| format!("{s}/agent-{agent}"));
            json!({"agent_id": agent, "tool_use_id": tool, "via": via, "trajectory_id": traj})
        })
        .collect();
    let main_chain: Vec<u64> = chain.iter().map(|&i| numbered[i].0).collect();
    let left_out: Vec<Value> = left_out
        .iter()
        .map(|&(i, why)| {
            json!({
                "line": numbered[i].0,
                "uuid": entries[i]["uuid"],
                "reason": why.as_str(),
            })
        })
        .collect();
    let mut cc = object([
        ("session_id", session.into()),
        ("envelope", Value::Object(envelope)),
        ("models", models.into()),
        ("summaries", summaries.into()),
        ("error_results", built.error_results.into()),
        ("unanswered_calls", built.unanswered_calls.into()),
        ("unlinked_results", built.unlinked_results.into()),
        ("main_chain_lines", main_chain.into()),
        ("lines", lines.into()),
        ("left_out", left_out.into()),
        ("subagents", spawned.into()),
    ]);
    if subagent {
        let agent_id = first_str(&entries, "agentId");
        let meta = &bundle["meta"];
        let spawned_by = match meta["toolUseId"].as_str() {
            Some(t) => json!({"tool_use_id": t, "via": "meta.json"}),
            None => bundle["spawned_by"].clone(),
        };
        let mut agent = json!({
            "agent_id": agent_id,
            "compaction": agent_id.is_some_and(|a| a.starts_with("acompact")),
            "parent_trajectory_id": session,
            "spawned_by": spawned_by,
        });
        for key in ["meta", "meta_error"] {
            if !bundle[key].is_null() {
                agent[key] = bundle[key].clone();
            }
        }
        cc["agent"] = agent;
    }
    if !unmapped.0.is_empty() {
        cc["unmapped"] = Value::Array(unmapped.0);
    }
    let mut details = JsonObject::new();
    details.insert(
        "source".into(),
        source_details("claude-code", record, json!({"session_id": session})),
    );
    details.insert("claude_code".into(), cc);
    Ok(Trajectory::new(id, built.content, details))
}

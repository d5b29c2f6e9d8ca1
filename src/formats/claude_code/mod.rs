//! Claude Code sessions: one JSON-lines file per session (and one per subagent), one trajectory
//! per file. The lines form a tree through `parentUuid`: the trajectory is the main chain and
//! what hangs off it in the same conversation (the results of parallel calls, the rest of a
//! response written after one of them), see `tree.rs`; the lines of one response are merged
//! and its calls' results follow it in call order, see `steps.rs`. A project directory is read
//! whole, subagents included (`project.rs`); compactions are marked (`compaction.rs`). What
//! is left out is listed in `details.claude_code` and counted in `details.source.left_out`.
//! The mapping is in docs/formats/claude-code.md.

mod compaction;
mod project;
mod steps;
mod tree;

use std::borrow::Cow;
use std::io;
use std::path::Path;

use serde_json::Value;

use crate::convert::{ConvertOptions, Converter, FormatOptions, Partial, PartialSink};
use crate::formats::bundle::bundle_node_lines;
use crate::formats::kit::{
    file_stem, has_keys, node_fields_except, parse_bundle_node, source_node,
};
use crate::formats::Format;
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::json::{Entries, Node};
use crate::model::{JsonObject, Trajectory};
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
    /// `summary` (`leafUuid`) and the file-history ones (`messageId` and the snapshot); a line
    /// whose body is another tool's is not (`foreign_line`).
    fn sniff(&self, first: &Value) -> bool {
        let Some(kind) = first["type"].as_str() else {
            return false;
        };
        if foreign_line(first).is_some() {
            return false;
        }
        has_keys(first, &["sessionId"])
            || has_keys(first, &["leafUuid"])
            || (kind == "file-history-snapshot" && has_keys(first, &["messageId", "snapshot"]))
            || (kind == "file-history-delta"
                && has_keys(first, &["messageId", "snapshotMessageId"]))
    }

    fn decline(&self, first: &Value) -> Option<String> {
        foreign_line(first)
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
            project::dir_records(path, max)
        } else {
            boxed(project::open_file(path, max))
        })
    }

    fn each_partial(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
        to: &mut PartialSink<'_>,
    ) -> Option<Result<(), Vec<Diagnostic>>> {
        let mut slow = None;
        let bundle = parse_bundle_node(record, &mut slow, MARKER, NOT_A_SESSION);
        Some(bundle.and_then(|b| to(to_partial(&b, record)?)))
    }
}

/// Why a line with Claude Code's envelope (a `type` and the `sessionId`) is another tool's:
/// Qwen Code writes the same envelope around Gemini-style bodies (`message.parts`), with a
/// line type (`tool_result`) and a field (`systemPayload`) of its own; the prompt logs of
/// Gemini CLI and Qwen Code (`logs.json`) have a string `message`. `None` for a line of
/// Claude Code's, or one without the envelope.
fn foreign_line(line: &Value) -> Option<String> {
    if !line["type"].is_string() || !has_keys(line, &["sessionId"]) {
        return None;
    }
    let why = if line["message"].get("parts").is_some() {
        "lines have `sessionId` but their `message` has Gemini-style `parts`, not `content`, as Qwen Code writes them"
    } else if line["message"].is_string() {
        "lines have `sessionId` but a string `message`, as the prompt logs of Gemini CLI and Qwen Code (`logs.json`) have"
    } else if line["type"] == "tool_result" {
        "lines have `sessionId` but the type `tool_result`, which Claude Code does not write"
    } else if line.get("systemPayload").is_some() {
        "lines have `sessionId` but a `systemPayload`, which Claude Code does not write"
    } else {
        return None;
    };
    Some(why.to_owned())
}

/// What a record that is not a session bundle is told.
const NOT_A_SESSION: &str = "not a Claude Code session (use --from claude-code on the session file or the project directory)";

/// The first non-empty string under `key` among `entries`.
fn first_str<'a>(entries: &[&'a Node<'a>], key: &str) -> Option<&'a str> {
    entries
        .iter()
        .filter_map(|e| e[key].as_str())
        .find(|s| !s.is_empty())
}

/// The trajectory id: the session id; a subagent's is `<session id>/agent-<agent id>`.
/// Without a session id, the file name stands in; from stdin there is none.
fn trajectory_id(
    entries: &[&Node<'_>],
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
fn line_fields<'a>(e: &Node<'a>, envelope: &Node<'a>) -> (Entries<'a>, Node<'a>) {
    let mut fields = Entries::new();
    if let Node::Object(o) = e {
        for (k, v) in o {
            let mapped = matches!(k.as_ref(), "type" | "uuid" | "parentUuid" | "message");
            let same = ENVELOPE.contains(&k.as_ref()) && envelope.get(k) == Some(v);
            if !mapped && !same {
                fields.push((k.clone(), v.clone()));
            }
        }
    }
    let message = match &e["message"] {
        m @ Node::Object(_) => Node::Object(node_fields_except(m, &["content"])),
        _ => Node::Null,
    };
    (fields, message)
}

/// A string node, or null.
fn opt_str<'a>(s: Option<&'a str>) -> Node<'a> {
    s.map_or(Node::Null, Node::from)
}

/// An array node of numbers.
fn numbers<'a>(ns: impl IntoIterator<Item = u64>) -> Node<'a> {
    Node::Array(ns.into_iter().map(Node::from).collect())
}

fn to_partial<'a>(
    bundle: &'a Node<'a>,
    record: &'a RawRecord,
) -> Result<Partial<'a>, Vec<Diagnostic>> {
    let numbered: Vec<(u64, &Node)> = bundle_node_lines(bundle).collect();
    let entries: Vec<&Node> = numbered.iter().map(|(_, e)| *e).collect();
    let Selection {
        included,
        chain,
        left_out,
        by_file_order,
        wrong,
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
    let in_source = entries.iter().filter(|e| is_turn(e)).count() as u64;
    if in_source == 0 {
        return Err(empty(
            "no line is a Claude Code turn (a \"user\" or \"assistant\" entry): not a Claude Code session, or one with no conversation",
        ));
    }
    // Bookkeeping lines (every type but user and assistant, known or not) are skipped and
    // kept; summaries apart.
    let mut unmapped = Unmapped::new();
    let mut bookkeeping = Vec::new();
    let mut summaries = Vec::new();
    for &(line, e) in &numbered {
        match e["type"].as_str() {
            Some("user" | "assistant") => continue,
            Some("summary") => summaries.push(Node::Object(node_fields_except(e, &["type"]))),
            Some(_) => bookkeeping.push(Node::object([
                ("line", Node::from(line)),
                ("value", (*e).clone()),
            ])),
            None => {
                unmapped.wrong_type(line, "/type", "an entry without a string type".into(), e);
                continue;
            }
        }
        unmapped.left.lines += 1;
    }
    for w in &wrong {
        let (line, e) = numbered[w.index];
        let value = e.pointer(w.pointer).unwrap_or(&Node::Null);
        unmapped.wrong_type(line, w.pointer, w.reason.into(), value);
    }
    unmapped.left.lines += left_out.len() as u64;
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
    let first = taken.first().map(|l| l.entry).unwrap_or(&Node::Null);
    let envelope = Node::Object(
        ENVELOPE
            .iter()
            .filter_map(|&k| first.get(k).map(|v| (Cow::Borrowed(k), v.clone())))
            .collect(),
    );
    let mut models: Vec<&str> = Vec::new();
    for l in &taken {
        if let Some(m) = l.entry["message"]["model"].as_str() {
            if !models.contains(&m) {
                models.push(m);
            }
        }
    }
    let mut steps_of: std::collections::HashMap<u64, Vec<u64>> = Default::default();
    for (i, line) in built.origins.iter().enumerate() {
        steps_of.entry(*line).or_default().push(i as u64);
    }
    let lines: Vec<Node> = taken
        .iter()
        .map(|l| {
            let (fields, message) = line_fields(l.entry, &envelope);
            let steps = steps_of.get(&l.line).cloned().unwrap_or_default();
            let mut v = vec![
                (Cow::Borrowed("line"), Node::from(l.line)),
                (Cow::Borrowed("uuid"), l.entry["uuid"].clone()),
                (Cow::Borrowed("parent"), l.entry["parentUuid"].clone()),
                (Cow::Borrowed("steps"), numbers(steps)),
            ];
            if !fields.is_empty() {
                v.push((Cow::Borrowed("fields"), Node::Object(fields)));
            }
            if !message.is_null() {
                v.push((Cow::Borrowed("message"), message));
            }
            Node::Object(v)
        })
        .collect();
    let spawned: Vec<Node> = project::spawned_agents(entries.iter().copied())
        .into_iter()
        .map(|(agent, tool, via)| {
            let traj = session.map(|s| Node::from(format!("{s}/agent-{agent}")));
            Node::object([
                ("agent_id", Node::from(agent)),
                ("tool_use_id", Node::from(tool)),
                ("via", Node::from(via)),
                ("trajectory_id", traj.unwrap_or_default()),
            ])
        })
        .collect();
    let main_chain = numbers(chain.iter().map(|&i| numbered[i].0));
    let own_side = |e: &Node<'_>| subagent || e["isSidechain"].as_bool() != Some(true);
    let compactions = compaction::compactions(&numbered, own_side, &built.origins);
    let file_order = numbers(by_file_order.iter().map(|&i| numbered[i].0));
    unmapped.left.messages = Some((in_source, built.readable));
    let left_out: Vec<Node> = left_out
        .iter()
        .map(|&(i, why)| {
            Node::object([
                ("line", Node::from(numbered[i].0)),
                ("uuid", entries[i]["uuid"].clone()),
                ("reason", Node::from(why.as_str())),
            ])
        })
        .collect();
    let mut cc = Node::object([
        ("session_id", opt_str(session)),
        ("envelope", envelope),
        (
            "models",
            Node::Array(models.into_iter().map(Node::from).collect()),
        ),
        ("summaries", Node::Array(summaries)),
        ("error_results", Node::Array(built.error_results)),
        ("unanswered_calls", Node::Array(built.unanswered_calls)),
        ("unlinked_results", Node::Array(built.unlinked_results)),
        ("main_chain_lines", main_chain),
        ("file_order_lines", file_order),
        ("compactions", Node::Array(compactions)),
        ("lines", Node::Array(lines)),
        ("left_out", Node::Array(left_out)),
        ("bookkeeping", Node::Array(bookkeeping)),
        ("subagents", Node::Array(spawned)),
    ]);
    if subagent {
        let agent_id = first_str(&entries, "agentId");
        let meta = &bundle["meta"];
        let spawned_by = match meta["toolUseId"].as_str() {
            Some(t) => Node::object([
                ("tool_use_id", Node::from(t)),
                ("via", Node::from("meta.json")),
            ]),
            None => bundle["spawned_by"].clone(),
        };
        let mut agent = Node::object([
            ("agent_id", opt_str(agent_id)),
            (
                "compaction",
                Node::from(agent_id.is_some_and(|a| a.starts_with("acompact"))),
            ),
            ("parent_trajectory_id", opt_str(session)),
            ("spawned_by", spawned_by),
        ]);
        for key in ["meta", "meta_error"] {
            if !bundle[key].is_null() {
                agent.insert(key, bundle[key].clone());
            }
        }
        cc.insert("agent", agent);
    }
    let left = unmapped.left;
    if !unmapped.list.is_empty() {
        cc.insert("unmapped", Node::Array(unmapped.list));
    }
    let mut source = source_node(
        "claude-code",
        record,
        Node::object([("session_id", opt_str(session))]),
    );
    left.add_to_node(&mut source);
    Ok(Partial {
        trajectory: Trajectory::new(id, built.content, JsonObject::new()),
        tail: vec![("source", source), ("claude_code", cc)],
    })
}

//! Reading ATIF (v1.0 to v1.8, and a later v1.N with a warning) as ADP 1.5.0; the mapping is
//! in docs/formats/atif.md.
//!
//! A record is one ATIF document, or a bundle of the files of a continuation chain built by
//! [`super::files`]. Native ATIF follows ATIF's conventions; ATIF that trajkit wrote (with
//! `extra.adp`) is restored as it was.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};

use super::files::BUNDLE;
use super::{carried, SCHEMA};
use crate::convert::{LeftOut, Partial, PartialSink};
use crate::formats::chat::{call_step, record_id, tool_names, OPENHANDS_CODE_TOOLS};
use crate::formats::kit::source_node;
use crate::formats::kit::LinkIds;
use crate::ingest::{Provenance, RawRecord};
use crate::json::Node;
use crate::model::{JsonObject, JsonObservation, Source, Step, Trajectory};
use crate::validate::check::{check_raw_value, parse_json};
use crate::validate::Diagnostic;

/// The last ATIF minor version trajkit knows (`ATIF-v1.8`).
pub const LATEST_MINOR: u64 = 8;

/// `(major, minor)` of `ATIF-vMAJOR.MINOR`.
fn parse_version(text: &str) -> Option<(u64, u64)> {
    let (major, minor) = text.strip_prefix("ATIF-v")?.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// Hands each trajectory of one record (a document or a chain bundle) to `to`
/// ([`Converter::each_partial`]).
///
/// [`Converter::each_partial`]: crate::convert::Converter::each_partial
pub fn each_partial(record: &RawRecord, to: &mut PartialSink<'_>) -> Result<(), Vec<Diagnostic>> {
    let mut slow = None;
    for partial in partials(record, &mut slow)? {
        to(partial)?;
    }
    Ok(())
}

/// The trajectories of a record. A document the compiled raw schema accepts is read straight
/// from its bytes as a [`Node`]; anything else (a chain bundle, a later version with keys
/// trajkit does not know, an invalid document) is parsed into the value kept in `slow`,
/// checked against the schema there (so it is diagnosed as the validator says), and read
/// through a node view of it.
fn partials<'a>(
    record: &'a RawRecord,
    slow: &'a mut Option<Value>,
) -> Result<Vec<Partial<'a>>, Vec<Diagnostic>> {
    let fast = match (&record.error, SCHEMA.shapes(false)) {
        (None, Some(shapes)) => shapes.parse(&record.bytes),
        _ => None,
    };
    let doc = match fast {
        Some(doc) => {
            let id = document_label(&doc);
            check_version(&doc, &record.provenance, id)?;
            check_step_ids(&doc, "", &record.provenance, id)?;
            doc
        }
        None => {
            let value: &'a Value = slow.insert(parse_json(record).map_err(|d| vec![*d])?);
            if value.get(BUNDLE) == Some(&Value::Bool(true)) {
                return bundle(value, record);
            }
            check_document(value, &record.provenance)?;
            Node::from_value(value)
        }
    };
    let id = document_id(&doc, record);
    let mut reader = Reader::default();
    let steps = reader.document(&doc);
    let mut details = reader.native_details(&doc, steps);
    let mut out = Vec::new();
    subagents(&doc, &id, record, &mut details, &mut out);
    out.insert(0, reader.into_partial(&doc, id, record, details));
    Ok(out)
}

/// The subagents embedded in `doc` (v1.7 `subagent_trajectories`) as trajectories of their
/// own, recursively, with ids `{parent id}/{trajectory_id}` (`{parent id}/{index}` for one
/// without) and `details.atif.parent`; the parent's `details.atif.subagent_trajectories`
/// (`atif`) keeps, for each, its ids and the id of its trajectory (`converted_as`).
fn subagents<'a>(
    doc: &Node<'a>,
    parent: &str,
    record: &'a RawRecord,
    atif: &mut Node<'a>,
    out: &mut Vec<Partial<'a>>,
) {
    let Some(subs) = doc["subagent_trajectories"].as_array() else {
        return;
    };
    let mut kept = Vec::new();
    for (k, sub) in subs.iter().enumerate() {
        let own = sub["trajectory_id"].as_str().filter(|s| !s.is_empty());
        let id = match own {
            Some(t) => format!("{parent}/{t}"),
            None => format!("{parent}/{k}"),
        };
        kept.push(Node::object([
            ("trajectory_id", sub["trajectory_id"].clone()),
            ("session_id", sub["session_id"].clone()),
            ("converted_as", Node::from(id.clone())),
        ]));
        let mut reader = Reader::default();
        let steps = reader.document(sub);
        let mut details = reader.native_details(sub, steps);
        details.insert(
            "parent",
            Node::object([("trajectory_id", Node::from(parent.to_owned()))]),
        );
        let mut nested = Vec::new();
        subagents(sub, &id, record, &mut details, &mut nested);
        out.push(reader.into_partial(sub, id, record, details));
        out.extend(nested);
    }
    atif.insert("subagent_trajectories", Node::Array(kept));
}

/// The id diagnostics name a document by: `trajectory_id`, else `session_id`.
fn document_label<'n>(doc: &'n Node<'_>) -> Option<&'n str> {
    doc["trajectory_id"].as_str().or(doc["session_id"].as_str())
}

/// Checks a document the compiled schema refused, as the validator does: its version (rule
/// `atif-version`), the raw schema (for a version later than those trajkit knows, keys it does
/// not know are let through), and the step ids (rule `atif-step-id`).
fn check_document(value: &Value, prov: &Provenance) -> Result<(), Vec<Diagnostic>> {
    let doc = Node::from_value(value);
    let id = document_label(&doc);
    let later = check_version(&doc, prov, id)?;
    if let Err(mut diagnostics) = check_raw_value(prov, id, value, &SCHEMA, false) {
        if later {
            diagnostics.retain(|d| d.rule != "schema-additionalProperties");
        }
        if !diagnostics.is_empty() {
            return Err(diagnostics);
        }
    }
    check_step_ids(&doc, "", prov, id)
}

/// Checks the version a document states (rule `atif-version`); true when it is later than
/// those trajkit knows.
fn check_version(
    doc: &Node<'_>,
    prov: &Provenance,
    id: Option<&str>,
) -> Result<bool, Vec<Diagnostic>> {
    let Some(text) = doc["schema_version"].as_str() else {
        return Ok(false);
    };
    match parse_version(text) {
        Some((1, minor)) => Ok(minor > LATEST_MINOR),
        _ => Err(vec![Diagnostic::error(
            prov,
            id,
            "/schema_version",
            "atif-version",
            format!(
                "{text:?} is not a version trajkit reads: ATIF-v1.0 to ATIF-v1.{LATEST_MINOR} (a later ATIF-v1.N is read with a warning)"
            ),
        )]),
    }
}

/// Step ids are 1, 2, ... in order, in a document and each subagent it embeds (`at`: the
/// document's JSON pointer).
fn check_step_ids(
    doc: &Node<'_>,
    at: &str,
    prov: &Provenance,
    id: Option<&str>,
) -> Result<(), Vec<Diagnostic>> {
    for (i, s) in doc["steps"].as_array().into_iter().flatten().enumerate() {
        if s["step_id"].as_u64() != Some(i as u64 + 1) {
            return Err(vec![Diagnostic::error(
                prov,
                id,
                format!("{at}/steps/{i}/step_id"),
                "atif-step-id",
                format!(
                    "step_id must be {} (1, 2, ... in order), found {}",
                    i + 1,
                    s["step_id"]
                ),
            )]);
        }
    }
    for (k, sub) in doc["subagent_trajectories"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        check_step_ids(sub, &format!("{at}/subagent_trajectories/{k}"), prov, id)?;
    }
    Ok(())
}

/// The trajectory id: `trajectory_id`, else `session_id`, else `{file name}#{index}`.
fn document_id(doc: &Node<'_>, record: &RawRecord) -> String {
    doc["trajectory_id"]
        .as_str()
        .filter(|s| !s.is_empty())
        .or(doc["session_id"].as_str().filter(|s| !s.is_empty()))
        .map_or_else(|| record_id(&doc["id"], record), str::to_owned)
}

/// The id of the chain file named by `head` (`{file, trajectory_id, session_id}`) at `index`
/// in a chain whose first file is `root`: its `trajectory_id`, else (for the first file) its
/// `session_id` or `{file name}#0`, else `{id of the first file}#cont-{index}` (the files of a
/// chain share their `session_id`).
fn chain_id(head: &Value, index: u64, root: &Value) -> String {
    let own = head["trajectory_id"].as_str().filter(|s| !s.is_empty());
    if let Some(id) = own {
        return id.to_owned();
    }
    let root_id = root["trajectory_id"]
        .as_str()
        .filter(|s| !s.is_empty())
        .or(root["session_id"].as_str().filter(|s| !s.is_empty()))
        .map_or_else(
            || {
                let file = root["file"].as_str().unwrap_or_default();
                format!("{}#0", file.rsplit('/').next().unwrap_or(file))
            },
            str::to_owned,
        );
    if index == 0 {
        root_id
    } else {
        format!("{root_id}#cont-{index}")
    }
}

/// A record of a continuation chain ([`super::files`]).
fn bundle<'a>(
    value: &'a Value,
    record: &'a RawRecord,
) -> Result<Vec<Partial<'a>>, Vec<Diagnostic>> {
    let parts = value["parts"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let Some(first) = parts.first() else {
        // A continuation merged into the record of the chain's first file.
        return Ok(Vec::new());
    };
    let provs: Vec<Provenance> = parts
        .iter()
        .map(|p| Provenance {
            file: Arc::from(p["file"].as_str().unwrap_or_default()),
            line: 1,
            index: 0,
            input: record.provenance.input.clone(),
        })
        .collect();
    let mut diagnostics = Vec::new();
    for (part, prov) in parts.iter().zip(&provs) {
        if let Err(d) = check_document(&part["document"], prov) {
            diagnostics.extend(d);
        }
    }
    if !diagnostics.is_empty() {
        return Err(diagnostics);
    }
    let doc = Node::from_value(&first["document"]);
    let mut reader = Reader::default();
    if let Some(index) = value["chain_index"].as_u64() {
        // Linked: this file alone, naming its neighbours.
        let root = &value["chain_root"];
        let head =
            json!({"file": first["file"], "trajectory_id": first["document"]["trajectory_id"]});
        let id = chain_id(&head, index, root);
        let steps = reader.document(&doc);
        let mut details = reader.native_details(&doc, steps);
        let link = |l: &Value| {
            let k = l["index"].as_u64().unwrap_or_default();
            json!({"file": l["file"], "trajectory_id": chain_id(l, k, root)})
        };
        let mut chain = json!({"index": index});
        for key in ["continues", "continued_by"] {
            if value[key].is_object() {
                chain[key] = link(&value[key]);
            }
        }
        details.insert("chain", Node::from(chain));
        // Named after the file, not the record: built whole here, as nothing borrows from it.
        let prov_record = RawRecord {
            provenance: provs[0].clone(),
            bytes: Vec::new(),
            error: None,
        };
        let mut out = Vec::new();
        subagents(&doc, &id, &prov_record, &mut details, &mut out);
        out.insert(0, reader.into_partial(&doc, id, &prov_record, details));
        return Ok(out
            .into_iter()
            .map(|p| Partial {
                trajectory: p.into_trajectory(),
                tail: Vec::new(),
            })
            .collect());
    }
    // Merged: the first file, then each continuation without the context it copies.
    let root = json!({"file": first["file"], "trajectory_id": first["document"]["trajectory_id"], "session_id": first["document"]["session_id"]});
    let id = chain_id(&root, 0, &root);
    reader.track_copies = true;
    let steps = reader.document(&doc);
    let mut continuations = Vec::new();
    let mut out = Vec::new();
    let mut compactions = Vec::new();
    for part in &parts[1..] {
        let cont = Node::from_value(&part["document"]);
        reader.dedupe_copies = true;
        let at = reader.content.len();
        let (steps, copied) = (reader.document(&cont), std::mem::take(&mut reader.copied));
        // The continuation starts where its steps do, from the context it copies.
        let context = std::mem::take(&mut reader.context);
        compactions.push(Node::object([
            ("step", Node::from(at as u64)),
            ("file", Node::from_value(&part["file"])),
            (
                "context_steps",
                Node::Array(context.into_iter().map(|i| Node::from(i as u64)).collect()),
            ),
        ]));
        let mut entry = Node::object([("file", Node::from_value(&part["file"]))]);
        if let Node::Object(rest) = root_rest(&cont) {
            for (k, v) in rest {
                entry.insert(k, v);
            }
        }
        subagents(&cont, &id, record, &mut entry, &mut out);
        if !steps.is_empty() {
            entry.insert("steps", Node::Array(steps));
        }
        if !copied.is_empty() {
            entry.insert("copied_steps", Node::Array(copied));
        }
        continuations.push(entry);
    }
    let mut details = reader.native_details(&doc, steps);
    details.insert("continuations", Node::Array(continuations));
    details.insert("compactions", Node::Array(compactions));
    let mut first_subagents = Vec::new();
    subagents(&doc, &id, record, &mut details, &mut first_subagents);
    first_subagents.extend(out);
    first_subagents.insert(0, reader.into_partial(&doc, id, record, details));
    Ok(first_subagents)
}

/// Warnings about a converted record: each document whose version is later than those
/// trajkit knows (rule `atif-version-unknown`).
pub fn warnings(record: &RawRecord) -> Vec<Diagnostic> {
    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct Head {
        schema_version: Option<String>,
        trajectory_id: Option<String>,
        session_id: Option<String>,
        parts: Vec<PartHead>,
    }
    #[derive(Deserialize)]
    struct PartHead {
        file: String,
        document: Head,
    }
    let Ok(head) = serde_json::from_slice::<Head>(&record.bytes) else {
        return Vec::new();
    };
    let one = |h: &Head, prov: &Provenance| {
        let text = h.schema_version.as_deref()?;
        let (_, minor) = parse_version(text).filter(|(_, m)| *m > LATEST_MINOR)?;
        Some(Diagnostic::warning(
            prov,
            h.trajectory_id.as_deref().or(h.session_id.as_deref()),
            "/schema_version",
            "atif-version-unknown",
            format!(
                "{text} is later than the versions trajkit knows (ATIF-v1.0 to ATIF-v1.{LATEST_MINOR}): read as ATIF-v1.{LATEST_MINOR}, keys of v1.{minor} trajkit does not know are kept in details.atif"
            ),
        ))
    };
    let mut out: Vec<Diagnostic> = one(&head, &record.provenance).into_iter().collect();
    for part in &head.parts {
        let prov = Provenance {
            file: Arc::from(part.file.as_str()),
            line: 1,
            ..record.provenance.clone()
        };
        out.extend(one(&part.document, &prov));
    }
    out
}

// ----- content -----

/// Text of ATIF content (parts' texts joined by newlines) and its image paths.
fn text_and_images(content: &Node<'_>) -> (String, Vec<String>) {
    match content {
        Node::String(s) => (s.as_ref().to_owned(), Vec::new()),
        Node::Array(parts) => {
            let text = parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n");
            let images = parts
                .iter()
                .filter(|p| p["type"].as_str() == Some("image"))
                .filter_map(|p| p["source"]["path"].as_str().map(str::to_owned))
                .collect();
            (text, images)
        }
        _ => (String::new(), Vec::new()),
    }
}

/// The parts of `content` that are not text (images with their media types, audio), with
/// their positions: what the steps do not hold whole.
fn media_parts<'a>(content: &Node<'a>) -> Option<Node<'a>> {
    let parts: Vec<Node<'a>> = content
        .as_array()?
        .iter()
        .enumerate()
        .filter(|(_, p)| p["type"].as_str() != Some("text"))
        .map(|(i, p)| Node::object([("index", Node::from(i as u64)), ("part", p.clone())]))
        .collect();
    (!parts.is_empty()).then_some(Node::Array(parts))
}

/// Rebuilds a step trajkit wrote from its `extra.adp`, putting back what ATIF carried (`native`
/// offers values; only the class's carried keys not already present are taken).
fn restore(extra: &Node<'_>, native: &[(&str, Value)]) -> Option<Step> {
    let mut v = extra.get("adp")?.to_value();
    let class = v["class_"].as_str()?.to_owned();
    let o = v.as_object_mut()?;
    for (k, value) in native {
        if carried(&class).contains(k) && !o.contains_key(*k) {
            o.insert((*k).to_owned(), value.clone());
        }
    }
    serde_json::from_value(v).ok()
}

/// What a continuation step is compared by, to find the earlier step it copies (as values:
/// objects are equal whatever the order of their keys).
fn fingerprint(s: &Node<'_>) -> Value {
    Value::Array(
        [
            "source",
            "message",
            "reasoning_content",
            "tool_calls",
            "observation",
        ]
        .iter()
        .map(|k| s[k].to_value())
        .collect(),
    )
}

/// The root keys of a document other than its steps (and `trajectory_id`, which is in
/// `details.source`), without nulls.
fn root_rest<'a>(doc: &Node<'a>) -> Node<'a> {
    Node::Object(
        doc.as_object()
            .into_iter()
            .flatten()
            .filter(|(k, v)| !v.is_null() && !matches!(k.as_ref(), "steps" | "trajectory_id"))
            .cloned()
            .collect(),
    )
}

// ----- the reader -----

/// One tool call of an agent step, while its step is read.
struct Slot<'s, 'a> {
    native: &'s str,
    name: &'s str,
    call: &'s Node<'a>,
    /// The result answering it (index in the step's results).
    answer: Option<usize>,
    by_position: bool,
}

/// The state of reading one trajectory (one document, or the files of a chain); what it
/// collects for `details` borrows from the documents.
#[derive(Default)]
struct Reader<'a> {
    content: Vec<Step>,
    /// `tool_call_id`s given so far (unique in the trajectory).
    ids: LinkIds,
    excluded: Vec<usize>,
    unmatched: Vec<Node<'a>>,
    unanswered: Vec<Node<'a>>,
    by_position: Vec<Node<'a>>,
    renamed: Vec<Node<'a>>,
    /// Content index of an unanswered tool action → (its entry in `unanswered`, its tool name,
    /// its native id).
    open_calls: HashMap<usize, (usize, String, String)>,
    /// Remember each step's fingerprint (a chain is being read).
    track_copies: bool,
    /// Leave out copied-context steps that repeat an earlier step (a continuation is read).
    dedupe_copies: bool,
    seen: Vec<(Value, usize)>,
    copied: Vec<Node<'a>>,
    /// The content indices of a continuation's copied context, in its order: the earlier step
    /// a copy left out repeats, or the steps a kept copy became.
    context: Vec<usize>,
    /// What no step holds: copied steps left out, content parts that are neither text nor an
    /// image with a path.
    left: LeftOut,
}

/// `{step, id}`: a call at content index `step` whose native id is `id`.
fn call_entry<'a>(step: usize, id: &str) -> Node<'a> {
    Node::object([
        ("step", Node::from(step as u64)),
        ("id", Node::from(id.to_owned())),
    ])
}

impl<'a> Reader<'a> {
    /// Reads the steps of `doc`, returning what `details` keeps of them.
    fn document(&mut self, doc: &Node<'a>) -> Vec<Node<'a>> {
        let own = doc["extra"]["adp"].is_object();
        let mut rest = Vec::new();
        for s in doc["steps"].as_array().into_iter().flatten() {
            let copied = s["is_copied_context"].as_bool() == Some(true);
            if self.dedupe_copies && copied {
                let fp = fingerprint(s);
                if let Some((_, at)) = self.seen.iter().find(|(f, _)| *f == fp) {
                    self.copied.push(Node::object([
                        ("step_id", s["step_id"].clone()),
                        ("same_as", Node::from(*at as u64)),
                    ]));
                    self.context.push(*at);
                    self.left.lines += 1;
                    continue;
                }
            }
            let first = self.content.len();
            if own {
                self.own_step(s);
            } else {
                self.step(s);
            }
            if self.dedupe_copies && copied {
                self.context.extend(first..self.content.len());
            }
            if copied || s["llm_call_count"].as_i64() == Some(0) {
                self.excluded.extend(first..self.content.len());
            }
            if self.track_copies && self.content.len() > first {
                self.seen.push((fingerprint(s), first));
            }
            rest.extend(native_step_details(s));
        }
        rest
    }

    /// Appends an observation; an unanswered tool action right before it gets an empty result
    /// first (ADP links a tool action followed by an observation; the call is still listed in
    /// `unanswered_calls`, with `empty_result`).
    fn push_observation(&mut self, step: Step) {
        let last = self.content.len().wrapping_sub(1);
        if let Some((entry, name, native)) = self.open_calls.remove(&last) {
            let id = self.unique_id(&native, last);
            *self.content[last].tool_call_id_mut() = Some(id.clone());
            if let Some(e) = self.unanswered.get_mut(entry) {
                e.insert("empty_result", Node::from(self.content.len() as u64));
            }
            self.content
                .push(Step::environment_text(Some(name), "").with_tool_call_id(id));
        }
        self.content.push(step);
    }

    /// A `tool_call_id` for the call `native` at content index `at`: its own, unless already
    /// given (then `{native}#2`, `#3`, ..., recorded in `renamed_call_ids`) or empty.
    fn unique_id(&mut self, native: &str, at: usize) -> String {
        let base = if native.is_empty() {
            format!("call_{at}")
        } else {
            native.to_owned()
        };
        let (id, _) = self.ids.unique(base);
        if id != native {
            let mut entry = call_entry(at, native);
            entry.insert("as", Node::from(id.clone()));
            self.renamed.push(entry);
        }
        id
    }

    /// Counts the parts of `content` that no step holds: neither text nor an image with a
    /// path (they are kept in `details.atif`).
    fn count_parts(&mut self, content: &Node<'a>) {
        for p in content.as_array().into_iter().flatten() {
            let held = match p["type"].as_str() {
                Some("image") => p["source"]["path"].as_str().is_some(),
                _ => p["text"].as_str().is_some(),
            };
            self.left.blocks += u64::from(!held);
        }
    }

    /// A native step.
    fn step(&mut self, s: &Node<'a>) {
        self.count_parts(&s["message"]);
        let (text, images) = text_and_images(&s["message"]);
        let results = s["observation"]["results"].as_array().unwrap_or(&[]);
        match s["source"].as_str().unwrap_or_default() {
            "agent" => self.agent(s, text, results),
            source => {
                let from = if source == "user" {
                    if !text.is_empty() || images.is_empty() {
                        self.push_observation(Step::user_text(text));
                    }
                    Source::User
                } else {
                    self.push_observation(Step::environment_text(Some("system".into()), text));
                    Source::Environment
                };
                for p in images {
                    self.push_observation(Step::image(p, from));
                }
                for r in results {
                    self.result(r, None);
                }
            }
        }
    }

    /// An agent step: a message, or one action per tool call (the first taking the step's
    /// message and reasoning as its thought), then its results.
    fn agent(&mut self, s: &Node<'a>, text: String, results: &[Node<'a>]) {
        let reasoning = s["reasoning_content"].as_str().map(str::to_owned);
        let calls = s["tool_calls"].as_array().unwrap_or(&[]);
        if calls.is_empty() {
            let mut m = Step::message(text, None);
            m.set_thought(None, reasoning);
            self.content.push(m);
            for r in results {
                self.result(r, None);
            }
            return;
        }
        let mut slots: Vec<Slot> = calls
            .iter()
            .map(|c| Slot {
                native: c["tool_call_id"].as_str().unwrap_or_default(),
                name: c["function_name"].as_str().unwrap_or_default(),
                call: c,
                answer: None,
                by_position: false,
            })
            .collect();
        let mut answers: Vec<Option<usize>> = vec![None; results.len()];
        // A result naming a call of its step answers it.
        for (j, r) in results.iter().enumerate() {
            if let Some(sid) = r["source_call_id"].as_str() {
                if let Some(k) = slots
                    .iter()
                    .position(|c| c.native == sid && c.answer.is_none())
                {
                    slots[k].answer = Some(j);
                    answers[j] = Some(k);
                }
            }
        }
        // Results naming no call answer the calls no result names, the last ones first
        // (Terminus-2 reports the terminal once, after a batch of keystrokes).
        let unlabeled: Vec<usize> = (0..results.len())
            .filter(|&j| results[j]["source_call_id"].is_null())
            .collect();
        let unnamed: Vec<usize> = (0..slots.len())
            .filter(|&k| slots[k].answer.is_none())
            .collect();
        let n = unlabeled.len().min(unnamed.len());
        for (&j, &k) in unlabeled[..n].iter().zip(&unnamed[unnamed.len() - n..]) {
            slots[k].answer = Some(j);
            slots[k].by_position = true;
            answers[j] = Some(k);
        }
        // Calls no result answers come first: ADP links a tool action followed by an
        // observation.
        let order: Vec<usize> = (0..slots.len())
            .filter(|&k| slots[k].answer.is_none())
            .chain((0..slots.len()).filter(|&k| slots[k].answer.is_some()))
            .collect();
        let mut ids: Vec<Option<String>> = vec![None; slots.len()];
        let mut thought = Some(((!text.is_empty()).then_some(text), reasoning));
        for k in order {
            let slot = &slots[k];
            let args = slot.call["arguments"].to_map();
            let mut step = call_step(slot.name, args, OPENHANDS_CODE_TOOLS);
            if let Some((description, reasoning)) = thought.take() {
                step.set_thought(description, reasoning);
            }
            let at = self.content.len();
            if slot.answer.is_some() {
                let id = self.unique_id(slot.native, at);
                if slot.by_position {
                    self.by_position.push(call_entry(at, slot.native));
                }
                step = step.with_tool_call_id(id.clone());
                ids[k] = Some(id);
            } else {
                self.open_calls.insert(
                    at,
                    (
                        self.unanswered.len(),
                        slot.name.to_owned(),
                        slot.native.to_owned(),
                    ),
                );
                self.unanswered.push(call_entry(at, slot.native));
            }
            self.content.push(step);
        }
        for (j, r) in results.iter().enumerate() {
            let link = answers[j].and_then(|k| Some((ids[k].clone()?, slots[k].name.to_owned())));
            self.result(r, link);
        }
    }

    /// One observation result, answering the call `link` (its id and tool name) if any.
    fn result(&mut self, r: &Node<'a>, link: Option<(String, String)>) {
        if link.is_none() && r["source_call_id"].as_str().is_some() {
            self.unmatched.push(Node::object([
                ("content_index", Node::from(self.content.len() as u64)),
                ("source_call_id", r["source_call_id"].clone()),
            ]));
        }
        let (id, name) = match link {
            Some((id, name)) => (Some(id), Some(name)),
            None => (None, None),
        };
        let refs = r["subagent_trajectory_ref"]
            .as_array()
            .filter(|a| !a.is_empty());
        if let (true, Some(refs)) = (r["content"].is_null(), refs) {
            // A delegation whose result is the subagent's trajectory: the references are
            // what the agent got back.
            let mut content = JsonObject::new();
            content.insert(
                "subagent_trajectory_ref".into(),
                Value::Array(refs.iter().map(Node::to_value).collect()),
            );
            self.push_observation(Step::JsonObservation(JsonObservation {
                content,
                name,
                source: Source::Environment,
                tool_call_id: id,
                reward: None,
            }));
            return;
        }
        self.count_parts(&r["content"]);
        let (text, images) = text_and_images(&r["content"]);
        let mut step = Step::environment_text(name, text);
        if let Some(id) = id {
            step = step.with_tool_call_id(id);
        }
        self.push_observation(step);
        for p in images {
            self.push_observation(Step::image(p, Source::Environment));
        }
    }

    /// A step of ATIF trajkit wrote: restored from `extra.adp`, with what ATIF carried.
    fn own_step(&mut self, s: &Node<'a>) {
        let (text, images) = text_and_images(&s["message"]);
        let source = s["source"].as_str().unwrap_or_default();
        if source != "agent" {
            let native = [("content", json!(text))];
            if let Some(step) = restore(&s["extra"], &native) {
                self.content.push(step);
            } else if source == "user" {
                if !text.is_empty() || images.is_empty() {
                    self.content.push(Step::user_text(text));
                }
                self.content
                    .extend(images.into_iter().map(|p| Step::image(p, Source::User)));
            } else {
                self.content
                    .push(Step::environment_text(Some("system".into()), text));
            }
            return;
        }
        let calls = s["tool_calls"].as_array().unwrap_or(&[]);
        if calls.is_empty() {
            let native = [
                ("content", json!(text)),
                ("reasoning_content", s["reasoning_content"].to_value()),
            ];
            let step = restore(&s["extra"], &native).unwrap_or_else(|| {
                let mut m = Step::message(text, None);
                m.set_thought(None, s["reasoning_content"].as_str().map(str::to_owned));
                m
            });
            self.content.push(step);
        }
        for call in calls {
            let id = call["tool_call_id"].as_str().unwrap_or_default();
            let name = call["function_name"].as_str().unwrap_or_default();
            let args = call["arguments"].to_map();
            let code = args
                .get("code")
                .or(args.get("command"))
                .and_then(Value::as_str);
            let native = [
                ("tool_call_id", json!(id)),
                ("function", json!(name)),
                ("kwargs", Value::Object(args.clone())),
                ("content", json!(code.unwrap_or_default())),
            ];
            let step = restore(&call["extra"], &native).unwrap_or_else(|| {
                call_step(name, args, OPENHANDS_CODE_TOOLS).with_tool_call_id(id)
            });
            if let Some(id) = step.tool_call_id() {
                self.ids.insert(id.to_owned());
            }
            self.content.push(step);
        }
        for r in s["observation"]["results"].as_array().into_iter().flatten() {
            let (text, _) = text_and_images(&r["content"]);
            let link = r["source_call_id"].to_value();
            let native = [("content", json!(text)), ("tool_call_id", link)];
            match restore(&r["extra"], &native) {
                Some(step) => self.content.push(step),
                None => self.result(r, None),
            }
        }
    }

    /// `details.source` and `details.atif` of a native document (`steps`: what its steps keep).
    fn native_details(&mut self, doc: &Node<'a>, steps: Vec<Node<'a>>) -> Node<'a> {
        let mut atif = root_rest(doc);
        let mut put = |key: &'static str, items: Vec<Node<'a>>| {
            if !items.is_empty() {
                atif.insert(key, Node::Array(items));
            }
        };
        put("steps", steps);
        put(
            "excluded_from_training",
            self.excluded
                .iter()
                .map(|&i| Node::from(i as u64))
                .collect(),
        );
        put("unmatched_results", std::mem::take(&mut self.unmatched));
        put("unanswered_calls", std::mem::take(&mut self.unanswered));
        put("linked_by_position", std::mem::take(&mut self.by_position));
        put("renamed_call_ids", std::mem::take(&mut self.renamed));
        atif
    }

    /// The trajectory: trajkit's own ATIF gets back its `details` and tool lists from
    /// `extra.adp`; native ATIF gets `details.source` and `details.atif` (`atif`), as the
    /// partial's tail.
    fn into_partial(
        self,
        doc: &Node<'a>,
        id: String,
        record: &'a RawRecord,
        atif: Node<'a>,
    ) -> Partial<'a> {
        let adp = &doc["extra"]["adp"];
        let list =
            |key: &str| -> Option<Vec<String>> { serde_json::from_value(adp[key].to_value()).ok() };
        if adp.is_object() {
            let details: JsonObject = adp["details"].to_map();
            let mut t = Trajectory::new(id, self.content, details);
            t.available_apis = list("available_apis");
            t.available_custom_tools = list("available_custom_tools");
            t.available_code_languages = list("available_code_languages");
            return Partial {
                trajectory: t,
                tail: Vec::new(),
            };
        }
        let ids = Node::object([
            ("trajectory_id", doc["trajectory_id"].clone()),
            ("session_id", doc["session_id"].clone()),
        ]);
        let tools = doc["agent"]["tool_definitions"]
            .as_array()
            .map(|t| tool_names(&t.iter().map(Node::to_value).collect::<Vec<_>>()))
            .filter(|names| !names.is_empty());
        let mut t = Trajectory::new(id, self.content, JsonObject::new());
        t.available_custom_tools = tools;
        let mut source = source_node("atif", record, ids);
        let mut left = self.left;
        left.place = "details.atif".to_owned();
        left.add_to_node(&mut source);
        Partial {
            trajectory: t,
            tail: vec![("source", source), ("atif", atif)],
        }
    }
}

/// What `details.atif.steps` keeps of a step: its keys the steps do not hold (`step_id`
/// always, to name it), the content parts other than text, and, by position, what its tool
/// calls and results have beyond what the steps hold; `None` when that is only its `step_id`.
fn native_step_details<'a>(s: &Node<'a>) -> Option<Node<'a>> {
    let mut rest = Node::Object(
        s.as_object()
            .into_iter()
            .flatten()
            .filter(|(k, v)| kept_in_details(k, v))
            .cloned()
            .collect(),
    );
    if let Some(parts) = media_parts(&s["message"]) {
        rest.insert("message_parts", parts);
    }
    let calls = positional_rest(
        &s["tool_calls"],
        &["tool_call_id", "function_name", "arguments"],
    );
    if !calls.is_empty() {
        rest.insert("tool_calls", Node::Array(calls));
    }
    let results = positional_rest(&s["observation"]["results"], &["source_call_id", "content"]);
    if !results.is_empty() {
        rest.insert("results", Node::Array(results));
    }
    for (k, v) in s["observation"].as_object().into_iter().flatten() {
        if k != "results" && !v.is_null() {
            rest.insert(format!("observation_{k}"), v.clone());
        }
    }
    let len = rest.as_object().map_or(0, Vec::len);
    (len > 1).then_some(rest)
}

/// `{index, native}` for each item of `items` with keys beyond `mapped` (or content parts
/// other than text): those keys (and the parts, as `content_parts`).
fn positional_rest<'a>(items: &Node<'a>, mapped: &[&str]) -> Vec<Node<'a>> {
    items
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(n, item)| {
            let mut kept = Node::Object(
                item.as_object()
                    .into_iter()
                    .flatten()
                    .filter(|(k, v)| !mapped.contains(&k.as_ref()) && kept_in_details(k, v))
                    .cloned()
                    .collect(),
            );
            if let Some(parts) = media_parts(&item["content"]) {
                kept.insert("content_parts", parts);
            }
            let empty = kept.as_object().is_none_or(Vec::is_empty);
            (!empty).then(|| Node::object([("index", Node::from(n as u64)), ("native", kept)]))
        })
        .collect()
}

/// Whether a native key of a step, call or result is kept in `details.atif` (what the steps do
/// not already hold, and not trajkit's own `extra.adp`).
fn kept_in_details(key: &str, value: &Node<'_>) -> bool {
    match key {
        "source" | "message" | "reasoning_content" | "tool_calls" | "observation" => false,
        "extra" => !value.is_null() && value.get("adp").is_none(),
        _ => !value.is_null(),
    }
}

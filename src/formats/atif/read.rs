//! Reading ATIF (v1.0 to v1.8, and a later v1.N with a warning) as ADP 1.5.0; the mapping is
//! in docs/formats/atif.md.
//!
//! A record is one ATIF document, or a bundle of the files of a continuation chain built by
//! [`super::files`]. Native ATIF follows ATIF's conventions; ATIF that trajkit wrote (with
//! `extra.adp`) is restored as it was.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::files::BUNDLE;
use super::{carried, SCHEMA};
use crate::formats::chat::{call_step, record_id, tool_names, OPENHANDS_CODE_TOOLS};
use crate::formats::kit::source_details;
use crate::ingest::{Provenance, RawRecord};
use crate::json::{object, Node};
use crate::model::{AdpVersion, JsonObject, JsonObservation, Source, Step, Trajectory};
use crate::validate::check::{check_raw_value, parse_json};
use crate::validate::Diagnostic;

/// The last ATIF minor version trajkit knows (`ATIF-v1.8`).
pub const LATEST_MINOR: u64 = 8;

/// `(major, minor)` of `ATIF-vMAJOR.MINOR`.
fn parse_version(text: &str) -> Option<(u64, u64)> {
    let (major, minor) = text.strip_prefix("ATIF-v")?.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// Converts one record (a document or a chain bundle).
pub fn convert(record: &RawRecord) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
    let value = parse_json(record).map_err(|d| vec![*d])?;
    if value.get(BUNDLE) == Some(&Value::Bool(true)) {
        return bundle(&value, record);
    }
    check_document(&value, &record.provenance)?;
    let id = document_id(&value, record);
    let mut reader = Reader::default();
    let steps = reader.document(&value);
    let mut details = reader.native_details(&value, steps);
    let mut out = Vec::new();
    subagents(&value, &id, record, &mut details, &mut out);
    out.insert(0, reader.into_trajectory(&value, id, record, details));
    Ok(out.into_iter().map(|t| (t, AdpVersion::V1_5)).collect())
}

/// The subagents embedded in `doc` (v1.7 `subagent_trajectories`) as trajectories of their
/// own, recursively, with ids `{parent id}/{trajectory_id}` (`{parent id}/{index}` for one
/// without) and `details.atif.parent`; the parent's `details.atif.subagent_trajectories`
/// (`atif`) keeps, for each, its ids and the id of its trajectory (`converted_as`).
fn subagents(
    doc: &Value,
    parent: &str,
    record: &RawRecord,
    atif: &mut Map<String, Value>,
    out: &mut Vec<Trajectory>,
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
        kept.push(json!({
            "trajectory_id": sub["trajectory_id"],
            "session_id": sub["session_id"],
            "converted_as": id,
        }));
        let mut reader = Reader::default();
        let steps = reader.document(sub);
        let mut details = reader.native_details(sub, steps);
        details.insert("parent".into(), json!({"trajectory_id": parent}));
        let mut nested = Vec::new();
        subagents(sub, &id, record, &mut details, &mut nested);
        out.push(reader.into_trajectory(sub, id, record, details));
        out.extend(nested);
    }
    atif.insert("subagent_trajectories".into(), Value::Array(kept));
}

/// Checks a document: its version (rule `atif-version`), the raw schema (for a version later
/// than those trajkit knows, keys it does not know are let through), and the step ids (rule
/// `atif-step-id`).
fn check_document(value: &Value, prov: &Provenance) -> Result<(), Vec<Diagnostic>> {
    let id = value["trajectory_id"]
        .as_str()
        .or(value["session_id"].as_str());
    let mut later = false;
    if let Some(text) = value["schema_version"].as_str() {
        match parse_version(text) {
            Some((1, minor)) => later = minor > LATEST_MINOR,
            _ => {
                return Err(vec![Diagnostic::error(
                    prov,
                    id,
                    "/schema_version",
                    "atif-version",
                    format!(
                        "{text:?} is not a version trajkit reads: ATIF-v1.0 to ATIF-v1.{LATEST_MINOR} (a later ATIF-v1.N is read with a warning)"
                    ),
                )])
            }
        }
    }
    if let Err(mut diagnostics) = check_raw_value(prov, id, value, &SCHEMA, false) {
        if later {
            diagnostics.retain(|d| d.rule != "schema-additionalProperties");
        }
        if !diagnostics.is_empty() {
            return Err(diagnostics);
        }
    }
    check_step_ids(value, "", prov, id)
}

/// Step ids are 1, 2, ... in order, in a document and each subagent it embeds (`at`: the
/// document's JSON pointer).
fn check_step_ids(
    value: &Value,
    at: &str,
    prov: &Provenance,
    id: Option<&str>,
) -> Result<(), Vec<Diagnostic>> {
    for (i, s) in value["steps"].as_array().into_iter().flatten().enumerate() {
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
    for (k, sub) in value["subagent_trajectories"]
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
fn document_id(value: &Value, record: &RawRecord) -> String {
    value["trajectory_id"]
        .as_str()
        .filter(|s| !s.is_empty())
        .or(value["session_id"].as_str().filter(|s| !s.is_empty()))
        .map_or_else(
            || record_id(&Node::from_value(&value["id"]), record),
            str::to_owned,
        )
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
fn bundle(
    value: &Value,
    record: &RawRecord,
) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
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
    let doc = &first["document"];
    let mut reader = Reader::default();
    if let Some(index) = value["chain_index"].as_u64() {
        // Linked: this file alone, naming its neighbours.
        let root = &value["chain_root"];
        let head = json!({"file": first["file"], "trajectory_id": doc["trajectory_id"]});
        let id = chain_id(&head, index, root);
        let steps = reader.document(doc);
        let mut details = reader.native_details(doc, steps);
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
        details.insert("chain".into(), chain);
        let prov_record = RawRecord {
            provenance: provs[0].clone(),
            bytes: Vec::new(),
            error: None,
        };
        let mut out = Vec::new();
        subagents(doc, &id, &prov_record, &mut details, &mut out);
        out.insert(0, reader.into_trajectory(doc, id, &prov_record, details));
        return Ok(out.into_iter().map(|t| (t, AdpVersion::V1_5)).collect());
    }
    // Merged: the first file, then each continuation without the context it copies.
    let root = json!({"file": first["file"], "trajectory_id": doc["trajectory_id"], "session_id": doc["session_id"]});
    let id = chain_id(&root, 0, &root);
    reader.track_copies = true;
    let steps = reader.document(doc);
    let mut continuations = Vec::new();
    let mut out = Vec::new();
    for part in &parts[1..] {
        let cont = &part["document"];
        reader.dedupe_copies = true;
        let (steps, copied) = (reader.document(cont), std::mem::take(&mut reader.copied));
        let mut entry = Map::new();
        entry.insert("file".into(), part["file"].clone());
        entry.extend(root_rest(cont));
        subagents(cont, &id, record, &mut entry, &mut out);
        if !steps.is_empty() {
            entry.insert("steps".into(), Value::Array(steps));
        }
        if !copied.is_empty() {
            entry.insert("copied_steps".into(), Value::Array(copied));
        }
        continuations.push(Value::Object(entry));
    }
    let mut details = reader.native_details(doc, steps);
    details.insert("continuations".into(), Value::Array(continuations));
    let mut first_subagents = Vec::new();
    subagents(doc, &id, record, &mut details, &mut first_subagents);
    first_subagents.extend(out);
    first_subagents.insert(0, reader.into_trajectory(doc, id, record, details));
    Ok(first_subagents
        .into_iter()
        .map(|t| (t, AdpVersion::V1_5))
        .collect())
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
fn text_and_images(content: &Value) -> (String, Vec<String>) {
    match content {
        Value::String(s) => (s.clone(), Vec::new()),
        Value::Array(parts) => {
            let text = parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n");
            let images = parts
                .iter()
                .filter(|p| p["type"] == "image")
                .filter_map(|p| p["source"]["path"].as_str().map(str::to_owned))
                .collect();
            (text, images)
        }
        _ => (String::new(), Vec::new()),
    }
}

/// The parts of `content` that are not text (images with their media types, audio), with
/// their positions: what the steps do not hold whole.
fn media_parts(content: &Value) -> Option<Value> {
    let parts: Vec<Value> = content
        .as_array()?
        .iter()
        .enumerate()
        .filter(|(_, p)| p["type"] != "text")
        .map(|(i, p)| json!({"index": i, "part": p}))
        .collect();
    (!parts.is_empty()).then_some(Value::Array(parts))
}

/// Rebuilds a step trajkit wrote from its `extra.adp`, putting back what ATIF carried (`native`
/// offers values; only the class's carried keys not already present are taken).
fn restore(extra: &Value, native: &[(&str, Value)]) -> Option<Step> {
    let mut v = extra.get("adp")?.clone();
    let class = v["class_"].as_str()?.to_owned();
    let o = v.as_object_mut()?;
    for (k, value) in native {
        if carried(&class).contains(k) && !o.contains_key(*k) {
            o.insert((*k).to_owned(), value.clone());
        }
    }
    serde_json::from_value(v).ok()
}

/// What a continuation step is compared by, to find the earlier step it copies.
fn fingerprint(s: &Value) -> Value {
    json!([
        s["source"],
        s["message"],
        s["reasoning_content"],
        s["tool_calls"],
        s["observation"]
    ])
}

/// The root keys of a document other than its steps (and `trajectory_id`, which is in
/// `details.source`), without nulls.
fn root_rest(doc: &Value) -> Map<String, Value> {
    doc.as_object()
        .into_iter()
        .flatten()
        .filter(|(k, v)| !v.is_null() && !matches!(k.as_str(), "steps" | "trajectory_id"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

// ----- the reader -----

/// One tool call of an agent step, while its step is read.
struct Slot<'a> {
    native: &'a str,
    name: &'a str,
    call: &'a Value,
    /// The result answering it (index in the step's results).
    answer: Option<usize>,
    by_position: bool,
}

/// The state of reading one trajectory (one document, or the files of a chain).
#[derive(Default)]
struct Reader {
    content: Vec<Step>,
    /// `tool_call_id`s given so far (unique in the trajectory).
    ids: HashSet<String>,
    excluded: Vec<usize>,
    unmatched: Vec<Value>,
    unanswered: Vec<Value>,
    by_position: Vec<Value>,
    renamed: Vec<Value>,
    /// Content index of an unanswered tool action → (its entry in `unanswered`, its tool name,
    /// its native id).
    open_calls: HashMap<usize, (usize, String, String)>,
    /// Remember each step's fingerprint (a chain is being read).
    track_copies: bool,
    /// Leave out copied-context steps that repeat an earlier step (a continuation is read).
    dedupe_copies: bool,
    seen: Vec<(Value, usize)>,
    copied: Vec<Value>,
}

impl Reader {
    /// Reads the steps of `doc`, returning what `details` keeps of them.
    fn document(&mut self, doc: &Value) -> Vec<Value> {
        let own = doc["extra"]["adp"].is_object();
        let mut rest = Vec::new();
        for s in doc["steps"].as_array().into_iter().flatten() {
            let copied = s["is_copied_context"] == true;
            if self.dedupe_copies && copied {
                let fp = fingerprint(s);
                if let Some((_, at)) = self.seen.iter().find(|(f, _)| *f == fp) {
                    self.copied
                        .push(json!({"step_id": s["step_id"], "same_as": at}));
                    continue;
                }
            }
            let first = self.content.len();
            if own {
                self.own_step(s);
            } else {
                self.step(s);
            }
            if copied || s["llm_call_count"] == 0 {
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
                e["empty_result"] = json!(self.content.len());
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
        let mut id = base.clone();
        let mut n = 1;
        while self.ids.contains(&id) {
            n += 1;
            id = format!("{base}#{n}");
        }
        if id != native {
            self.renamed
                .push(json!({"step": at, "id": native, "as": id}));
        }
        self.ids.insert(id.clone());
        id
    }

    /// A native step.
    fn step(&mut self, s: &Value) {
        let (text, images) = text_and_images(&s["message"]);
        let results = s["observation"]["results"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
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
    fn agent(&mut self, s: &Value, text: String, results: &[Value]) {
        let reasoning = s["reasoning_content"].as_str().map(str::to_owned);
        let calls = s["tool_calls"].as_array().map(Vec::as_slice).unwrap_or(&[]);
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
            let args = slot.call["arguments"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            let mut step = call_step(slot.name, args, OPENHANDS_CODE_TOOLS);
            if let Some((description, reasoning)) = thought.take() {
                step.set_thought(description, reasoning);
            }
            let at = self.content.len();
            if slot.answer.is_some() {
                let id = self.unique_id(slot.native, at);
                if slot.by_position {
                    self.by_position
                        .push(json!({"step": at, "id": slot.native}));
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
                self.unanswered.push(json!({"step": at, "id": slot.native}));
            }
            self.content.push(step);
        }
        for (j, r) in results.iter().enumerate() {
            let link = answers[j].and_then(|k| Some((ids[k].clone()?, slots[k].name.to_owned())));
            self.result(r, link);
        }
    }

    /// One observation result, answering the call `link` (its id and tool name) if any.
    fn result(&mut self, r: &Value, link: Option<(String, String)>) {
        if link.is_none() && r["source_call_id"].is_string() {
            self.unmatched.push(json!({
                "content_index": self.content.len(),
                "source_call_id": r["source_call_id"],
            }));
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
            content.insert("subagent_trajectory_ref".into(), Value::Array(refs.clone()));
            self.push_observation(Step::JsonObservation(JsonObservation {
                content,
                name,
                source: Source::Environment,
                tool_call_id: id,
                reward: None,
            }));
            return;
        }
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
    fn own_step(&mut self, s: &Value) {
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
        let calls = s["tool_calls"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        if calls.is_empty() {
            let native = [
                ("content", json!(text)),
                ("reasoning_content", s["reasoning_content"].clone()),
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
            let args = call["arguments"].as_object().cloned().unwrap_or_default();
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
            let link = r["source_call_id"].clone();
            let native = [("content", json!(text)), ("tool_call_id", link)];
            match restore(&r["extra"], &native) {
                Some(step) => self.content.push(step),
                None => self.result(r, None),
            }
        }
    }

    /// `details.source` and `details.atif` of a native document (`steps`: what its steps keep).
    fn native_details(&mut self, doc: &Value, steps: Vec<Value>) -> Map<String, Value> {
        let mut atif = root_rest(doc);
        let mut put = |key: &str, items: Vec<Value>| {
            if !items.is_empty() {
                atif.insert(key.into(), Value::Array(items));
            }
        };
        put("steps", steps);
        put(
            "excluded_from_training",
            self.excluded.iter().map(|&i| json!(i)).collect(),
        );
        put("unmatched_results", std::mem::take(&mut self.unmatched));
        put("unanswered_calls", std::mem::take(&mut self.unanswered));
        put("linked_by_position", std::mem::take(&mut self.by_position));
        put("renamed_call_ids", std::mem::take(&mut self.renamed));
        atif
    }

    /// The trajectory: trajkit's own ATIF gets back its `details` and tool lists from
    /// `extra.adp`; native ATIF gets `details.source` and `details.atif` (`atif`).
    fn into_trajectory(
        self,
        doc: &Value,
        id: String,
        record: &RawRecord,
        atif: Map<String, Value>,
    ) -> Trajectory {
        let adp = &doc["extra"]["adp"];
        let list =
            |key: &str| -> Option<Vec<String>> { serde_json::from_value(adp[key].clone()).ok() };
        if adp.is_object() {
            let details: JsonObject = adp["details"].as_object().cloned().unwrap_or_default();
            let mut t = Trajectory::new(id, self.content, details);
            t.available_apis = list("available_apis");
            t.available_custom_tools = list("available_custom_tools");
            t.available_code_languages = list("available_code_languages");
            return t;
        }
        let mut details = JsonObject::new();
        details.insert(
            "source".into(),
            source_details(
                "atif",
                record,
                json!({"trajectory_id": doc["trajectory_id"], "session_id": doc["session_id"]}),
            ),
        );
        details.insert("atif".into(), Value::Object(atif));
        let tools = doc["agent"]["tool_definitions"]
            .as_array()
            .map(|t| tool_names(t))
            .filter(|names| !names.is_empty());
        let mut t = Trajectory::new(id, self.content, details);
        t.available_custom_tools = tools;
        t
    }
}

/// What `details.atif.steps` keeps of a step: its keys the steps do not hold (`step_id`
/// always, to name it), the content parts other than text, and, by position, what its tool
/// calls and results have beyond what the steps hold; `None` when that is only its `step_id`.
fn native_step_details(s: &Value) -> Option<Value> {
    let mut rest: Map<String, Value> = s
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, v)| kept_in_details(k, v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(parts) = media_parts(&s["message"]) {
        rest.insert("message_parts".into(), parts);
    }
    let calls = positional_rest(
        &s["tool_calls"],
        &["tool_call_id", "function_name", "arguments"],
    );
    if !calls.is_empty() {
        rest.insert("tool_calls".into(), Value::Array(calls));
    }
    let results = positional_rest(&s["observation"]["results"], &["source_call_id", "content"]);
    if !results.is_empty() {
        rest.insert("results".into(), Value::Array(results));
    }
    for (k, v) in s["observation"].as_object().into_iter().flatten() {
        if k != "results" && !v.is_null() {
            rest.insert(format!("observation_{k}"), v.clone());
        }
    }
    (rest.len() > 1).then_some(Value::Object(rest))
}

/// `{index, native}` for each item of `items` with keys beyond `mapped` (or content parts
/// other than text): those keys (and the parts, as `content_parts`).
fn positional_rest(items: &Value, mapped: &[&str]) -> Vec<Value> {
    items
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(n, item)| {
            let mut kept: Map<String, Value> = item
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, v)| !mapped.contains(&k.as_str()) && kept_in_details(k, v))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if let Some(parts) = media_parts(&item["content"]) {
                kept.insert("content_parts".into(), parts);
            }
            (!kept.is_empty()).then(|| object([("index", n.into()), ("native", kept.into())]))
        })
        .collect()
}

/// Whether a native key of a step, call or result is kept in `details.atif` (what the steps do
/// not already hold, and not trajkit's own `extra.adp`).
fn kept_in_details(key: &str, value: &Value) -> bool {
    match key {
        "source" | "message" | "reasoning_content" | "tool_calls" | "observation" => false,
        "extra" => !value.is_null() && value.get("adp").is_none(),
        _ => !value.is_null(),
    }
}

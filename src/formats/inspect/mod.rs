//! Inspect AI eval logs (UK AISI's `inspect_ai`): an `.eval` file (a zip archive with a JSON
//! document per sample and the log's header) or a `.json` log (one JSON document), read by
//! [`reader`] into one record per sample and epoch, each mapped by [`sample`] into one
//! trajectory. The mapping is in docs/formats/inspect.md.

pub mod reader;
pub mod sample;
pub mod scan;

use std::io;
use std::path::Path;

use serde_json::{json, Map, Value};

use self::reader::{is_eval_archive, is_eval_spec, is_json_log, LogRecords, MARKER};
use crate::convert::{ConvertOptions, Converter, FormatOptions, Partial, PartialSink};
use crate::formats::chat::tool_names;
use crate::formats::kit::{not_a_unit, source_details};
use crate::formats::Format;
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::json::strict::{self, ParseError};
use crate::json::{Entries, Node, Shapes};
use crate::model::{JsonObject, Trajectory};
use crate::validate::check::parse_json;
use crate::validate::Diagnostic;

/// Reads Inspect AI logs.
pub struct Inspect;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &Inspect,
    side: None,
};

/// Sample fields that become steps, or are replaced in `details.inspect` (`events` by its
/// summary; `attachments`, resolved where they are referenced).
const MAPPED: &[&str] = &["messages", "events", "attachments"];

impl Converter for Inspect {
    fn name(&self) -> &'static str {
        "inspect"
    }

    fn description(&self) -> &'static str {
        "Inspect AI eval logs: .eval archives and .json logs (one trajectory per sample and epoch)"
    }

    /// A whole `.json` log: a `version` number and an `eval` naming a task and a model, with
    /// `samples` or a `status`.
    fn sniff(&self, first: &Value) -> bool {
        first["version"].is_number()
            && is_eval_spec(&first["eval"])
            && (first["samples"].is_array() || first["status"].is_string())
    }

    /// An `.eval` archive (a zip archive with Inspect's entries), or a `.json` file that starts
    /// like an Inspect log (read here, as a large log is more than detection reads whole).
    fn claims_path(&self, path: &Path) -> bool {
        is_eval_archive(path) || is_json_log(path)
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        Some(boxed(LogRecords::open(path, opts.run.max_record_bytes)))
    }

    fn each_partial(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
        to: &mut PartialSink<'_>,
    ) -> Option<Result<(), Vec<Diagnostic>>> {
        let mut slow = None;
        Some(parse_sample(record, &mut slow).and_then(|s| to(to_partial(s, record)?)))
    }
}

/// Parses a record this reader built, as a [`Node`] borrowed from its bytes, or, when the fast
/// parse refuses it (not JSON, a duplicate key, an integer past 64 bits), as the value
/// [`parse_bundle`] reads into `slow`, which diagnoses it as the reader always has. Anything
/// but a record of this reader is `not-a-unit`.
fn parse_sample<'a>(
    record: &'a RawRecord,
    slow: &'a mut Option<Value>,
) -> Result<Node<'a>, Vec<Diagnostic>> {
    let fast = match &record.error {
        None => Shapes::any().parse(&record.bytes),
        Some(_) => None,
    };
    let bundle = match fast {
        Some(node) => node,
        None => Node::from_value(slow.insert(parse_bundle(record)?)),
    };
    if !bundle[MARKER].is_object() {
        return Err(not_a_unit(
            record,
            "not a sample of an Inspect AI log (use --from inspect on the .eval or .json log file)",
        ));
    }
    Ok(bundle)
}

/// Parses a record. A sample that breaks trajkit's rules on JSON text (a duplicate key, an
/// integer past 64 bits) is diagnosed at its pointer in the log, not in the record's wrapper.
fn parse_bundle(record: &RawRecord) -> Result<Value, Vec<Diagnostic>> {
    if record.error.is_some() {
        return parse_json(record).map_err(|d| vec![*d]);
    }
    match strict::parse_value(&record.bytes) {
        Ok(value) => Ok(value),
        Err(ParseError::Rule(p)) => {
            let pointer = match p.pointer.strip_prefix("/sample") {
                Some(rest) => {
                    let index = wrapper(&record.bytes)["index"].as_u64();
                    format!("{}{rest}", log_prefix(index))
                }
                None => p.pointer,
            };
            Err(vec![Diagnostic::error(
                &record.provenance,
                None,
                pointer,
                p.rule,
                p.message,
            )])
        }
        Err(ParseError::Syntax(_)) => parse_json(record).map_err(|d| vec![*d]),
    }
}

/// The wrapper of a record (its first JSON value after the marker key), read alone.
fn wrapper(bytes: &[u8]) -> Value {
    let start = format!("{{\"{MARKER}\":").len();
    bytes
        .get(start..)
        .and_then(|rest| {
            serde_json::Deserializer::from_slice(rest)
                .into_iter::<Value>()
                .next()
        })
        .and_then(Result::ok)
        .unwrap_or(Value::Null)
}

/// Where a record's sample is in its log file, as a pointer prefix from the wrapper's `index`:
/// `/samples/<k>` in a `.json` log, nothing in an `.eval` entry (the record's file).
fn log_prefix(index: Option<u64>) -> String {
    index.map(|k| format!("/samples/{k}")).unwrap_or_default()
}

/// The trajectory of a sample record, its `details.inspect` left as a node (a [`Partial`]'s
/// tail).
fn to_partial<'a>(
    mut bundle: Node<'a>,
    record: &RawRecord,
) -> Result<Partial<'a>, Vec<Diagnostic>> {
    let meta = bundle.take(MARKER);
    let sample = bundle.take("sample");
    // Pointers are into the log file: a `.json` log's samples are at `/samples/<k>`; an
    // `.eval` record's file is its entry.
    let prefix = log_prefix(meta["index"].as_u64());
    let fail = |id: Option<&str>, pointer: &str, rule: &str, message: String| {
        vec![Diagnostic::error(
            &record.provenance,
            id,
            format!("{prefix}{pointer}"),
            rule,
            message,
        )]
    };
    if !sample.is_object() {
        return Err(fail(
            None,
            "",
            "not-a-sample",
            "an Inspect sample must be a JSON object".into(),
        ));
    }
    let log = &meta["log"];
    let id = sample::trajectory_id(log, &sample, &record.provenance.file)
        .map_err(|p| fail(None, &p.pointer, "missing-id", p.message))?;
    let mapped = sample::map(&sample)
        .map_err(|p| fail(Some(&id), &p.pointer, "sample-structure", p.message))?;
    if mapped.content.is_empty() {
        return Err(fail(
            Some(&id),
            "/messages",
            "empty-trajectory",
            "the sample has no messages, and no input or output to take steps from".into(),
        ));
    }
    let scores = sample::scores(&sample);
    let (reward, components) = sample::rewards(&scores);
    let mut details = JsonObject::new();
    let mut source = source_details(
        "inspect",
        record,
        Value::Object(native_ids(log, &sample, &meta)),
    );
    let mut left = mapped.left;
    if let Some(first) = &mut left.first {
        // Placed in the log: the sample's record, and its place in a `.json` log.
        first.line = record.provenance.line;
        first.pointer.insert_str(0, &prefix);
    }
    left.add_to(&mut source);
    details.insert("source".into(), source);
    details.insert("outcome".into(), sample::outcome(&sample, &scores));
    if let Some(r) = reward {
        details.insert("reward".into(), json!(r));
    }
    if !components.is_empty() {
        details.insert("reward_components".into(), Value::Object(components));
    }
    let names = (!mapped.tools.is_empty()).then(|| tool_names(&mapped.tools));
    if !mapped.tools.is_empty() {
        details.insert("tools".into(), Value::Array(mapped.tools));
    }
    let inspect = inspect_details(meta, &sample, mapped.notes);
    let mut traj = Trajectory::new(id, mapped.content, details);
    traj.available_custom_tools = names;
    Ok(Partial {
        trajectory: traj,
        tail: vec![("inspect", inspect)],
    })
}

/// `details.source.native_ids`: the eval's ids, the sample's id, epoch and uuid, and its entry
/// in an `.eval` archive, those that are strings or integers (the uuid and entry strings only).
fn native_ids(log: &Node, sample: &Node, meta: &Node) -> Map<String, Value> {
    let eval = &log["eval"];
    let id_like = |v: &Node| v.as_str().is_some() || v.as_i64().is_some() || v.as_u64().is_some();
    let text = |v: &Node| v.as_str().is_some();
    [
        ("eval_id", &eval["eval_id"], id_like as fn(&Node) -> bool),
        ("run_id", &eval["run_id"], id_like),
        ("task_id", &eval["task_id"], id_like),
        ("sample_id", &sample["id"], id_like),
        ("epoch", &sample["epoch"], id_like),
        ("uuid", &sample["uuid"], text),
        ("entry", &meta["entry"], text),
    ]
    .into_iter()
    .filter(|(_, v, keep)| keep(v))
    .map(|(k, v, _)| (k.to_owned(), v.to_value()))
    .collect()
}

/// `details.inspect`: the log header (`log`), where the sample is in the log (`entry` or
/// `index`), the sample's own fields but those the steps hold (`events` replaced by its
/// summary, attachment references in `input` resolved, the output's message left out when
/// the messages hold it), and the mapping's notes. Keys are set as a map sets them (a later
/// one of the same name replaces the earlier in place).
fn inspect_details<'a>(mut meta: Node<'a>, sample: &Node<'a>, notes: Entries<'a>) -> Node<'a> {
    let att = sample::Attachments::of(sample);
    let mut out = Node::Object(Entries::new());
    out.insert("log", meta.take("log"));
    for key in ["entry", "index"] {
        if !meta[key].is_null() {
            out.insert(key, meta.take(key));
        }
    }
    for (k, v) in sample.as_object().into_iter().flatten() {
        if MAPPED.contains(&k.as_ref()) {
            continue;
        }
        let value = match k.as_ref() {
            "input" => att.node(v),
            "output" => output_without_messages(v, &sample["messages"]),
            _ => v.clone(),
        };
        out.insert(k.clone(), value);
    }
    if let Some(summary) = sample::events_summary(&sample["events"]) {
        out.insert("events", summary);
    }
    for (k, v) in notes {
        out.insert(k, v);
    }
    out
}

/// The sample's `output` without the messages of its choices that the conversation holds
/// already (the final assistant message, as a rule).
fn output_without_messages<'a>(output: &Node<'a>, messages: &Node) -> Node<'a> {
    let held = |m: &Node| {
        messages
            .as_array()
            .is_some_and(|all| all.iter().any(|x| x.equals(m)))
    };
    let mut output = output.clone();
    if let Some(Node::Array(choices)) = output.get_mut("choices") {
        for choice in choices.iter_mut() {
            if choice.get("message").is_some_and(held) {
                choice.remove("message");
            }
        }
    }
    output
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The output's message is left out when the conversation holds it, whatever the order of
    /// its keys (as `Value`s compare), and kept when it differs.
    #[test]
    fn the_output_leaves_out_the_messages_the_conversation_holds() {
        let messages = json!([{"role": "assistant", "content": "done", "id": "m1"}]);
        let output = json!({"model": "x", "choices": [
            {"message": {"id": "m1", "content": "done", "role": "assistant"}, "stop_reason": "stop"},
            {"stop_reason": "stop", "message": {"role": "assistant", "content": "other"}},
        ]});
        let kept =
            output_without_messages(&Node::from_value(&output), &Node::from_value(&messages));
        assert_eq!(
            kept.to_value(),
            json!({"model": "x", "choices": [
                {"stop_reason": "stop"},
                {"stop_reason": "stop", "message": {"role": "assistant", "content": "other"}},
            ]})
        );
    }
}

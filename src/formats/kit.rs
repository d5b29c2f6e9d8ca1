//! Helpers the format converters share: bundles, ids from file names, sniffing, and
//! `details.source`.

use foldhash::{HashMap, HashSet};

use serde_json::{json, Map, Value};

use crate::ingest::RawRecord;
use crate::json::{Entries, Node};
use crate::validate::check::parse_node;
use crate::validate::Diagnostic;

/// Parses a record a format's own reader built (a directory attempt, a session), recognized by
/// `marker: true`; anything else (a stray line given to the wrong converter) is diagnosed with
/// `hint`.
pub fn parse_bundle(
    record: &RawRecord,
    marker: &str,
    hint: &str,
) -> Result<Value, Vec<Diagnostic>> {
    let bundle = crate::validate::check::parse_json(record).map_err(|d| vec![*d])?;
    if bundle[marker] == true {
        Ok(bundle)
    } else {
        Err(not_a_unit(record, hint))
    }
}

/// [`parse_bundle`] for readers that read bundles as [`Node`]s (parsed straight from the bytes,
/// or from the value kept in `slow` when they do not read so: [`parse_node`]).
pub fn parse_bundle_node<'a>(
    record: &'a RawRecord,
    slow: &'a mut Option<Value>,
    marker: &str,
    hint: &str,
) -> Result<Node<'a>, Vec<Diagnostic>> {
    let bundle = parse_node(record, slow).map_err(|d| vec![*d])?;
    if bundle[marker] == Node::Bool(true) {
        Ok(bundle)
    } else {
        Err(not_a_unit(record, hint))
    }
}

/// `n` in decimal, written into `buf` without the formatting machinery: for the line numbers
/// and indexes written once per line or block.
pub fn decimal(n: u64, buf: &mut [u8; 20]) -> &str {
    let mut at = buf.len();
    let mut n = n;
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // ok: ASCII digits.
    std::str::from_utf8(&buf[at..]).unwrap_or_default()
}

/// The diagnostic of a record that is not the unit a reader bundled (`hint` says what to do).
pub fn not_a_unit(record: &RawRecord, hint: &str) -> Vec<Diagnostic> {
    vec![Diagnostic::error(
        &record.provenance,
        None,
        "",
        "not-a-unit",
        hint,
    )]
}

/// A file's name without directories, compression suffix and extension (`run-7.jsonl.gz` is
/// `run-7`): the id of the stream or session it holds, for formats that name files so.
pub fn file_stem(file: &str) -> String {
    let name = crate::ingest::without_compression(file.rsplit('/').next().unwrap_or(file));
    match name.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem.to_owned(),
        _ => name.to_owned(),
    }
}

/// True when the JSON object `first` has every one of `keys` (the usual `sniff`).
pub fn has_keys(first: &Value, keys: &[&str]) -> bool {
    keys.iter().all(|k| first.get(k).is_some())
}

/// `details.source` for a trajectory converted from `record` of `format` (see
/// `schemas/details.schema.json`).
pub fn source_details(format: &str, record: &RawRecord, native_ids: Value) -> Value {
    json!({
        "format": format,
        "file": record.provenance.file.as_ref(),
        "line": record.provenance.line,
        "native_ids": native_ids,
    })
}

/// [`source_details`] as a node, for a [`crate::convert::Partial`]'s tail: its keys are not copied or hashed
/// (building it as a `Value` cost a LedgerMind session more than reading its events).
pub fn source_node<'a>(
    format: &'static str,
    record: &'a RawRecord,
    native_ids: Node<'a>,
) -> Node<'a> {
    Node::object([
        ("format", Node::from(format)),
        ("file", Node::from(record.provenance.file.as_ref())),
        ("line", Node::from(record.provenance.line)),
        ("native_ids", native_ids),
    ])
}

/// The fields of object `v` other than `keys`, cloned (an empty map when `v` is no object):
/// what a reader keeps in `details` of an object whose mapped fields became steps.
pub fn fields_except(v: &Value, keys: &[&str]) -> Map<String, Value> {
    v.as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !keys.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// [`fields_except`] of a node: the entries of object `v` other than `keys`, sharing its
/// borrowed strings (none when `v` is no object).
pub fn node_fields_except<'a>(v: &Node<'a>, keys: &[&str]) -> Entries<'a> {
    v.as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !keys.contains(&k.as_ref()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::Provenance;

    /// The node form of `details.source` writes what the value form writes.
    #[test]
    fn source_node_is_source_details() {
        let record = RawRecord {
            provenance: Provenance {
                input: "in \"x\".jsonl".into(),
                file: "dir/in \"x\".jsonl".into(),
                line: 42,
                index: 7,
            },
            bytes: Vec::new(),
            error: None,
        };
        let ids = serde_json::json!({"session": "s-1", "event_ids": [1, 2]});
        let node = source_node("ledgermind", &record, Node::from_value(&ids));
        assert_eq!(
            serde_json::to_string(&node).ok(),
            serde_json::to_string(&source_details("ledgermind", &record, ids.clone())).ok()
        );
    }
}

/// Call ids made unique within a trajectory, so that each result links to its own call: an id
/// met again becomes `{id}#2`, `#3`, ... (the smallest free). Each id's last suffix is
/// remembered, so a file that repeats one id stays linear. (Looked up once per call: the sets
/// use a fast hash; nothing iterates them.)
#[derive(Debug, Default)]
pub struct LinkIds {
    used: HashSet<String>,
    last: HashMap<String, u32>,
}

impl LinkIds {
    /// `base` when no call had it yet, else its next free `{base}#{n}`; with whether it was
    /// renamed.
    pub fn unique(&mut self, base: String) -> (String, bool) {
        if !self.used.contains(&base) {
            self.used.insert(base.clone());
            return (base, false);
        }
        let n = self.last.entry(base.clone()).or_insert(1);
        let id = loop {
            *n += 1;
            let id = format!("{base}#{n}");
            if !self.used.contains(&id) {
                break id;
            }
        };
        self.used.insert(id.clone());
        (id, true)
    }

    /// Whether a call had `id`.
    pub fn contains(&self, id: &str) -> bool {
        self.used.contains(id)
    }

    /// Marks `id` as taken, as the source wrote it (a call restored as it was).
    pub fn insert(&mut self, id: String) {
        self.used.insert(id);
    }
}

#[cfg(test)]
mod link_id_tests {
    use super::LinkIds;

    #[test]
    fn repeats_take_the_smallest_free_suffix() {
        let mut ids = LinkIds::default();
        let got: Vec<(String, bool)> = ["a", "a#3", "a", "a", "a", "b"]
            .iter()
            .map(|b| ids.unique((*b).to_owned()))
            .collect();
        let want = [
            ("a", false),
            ("a#3", false),
            ("a#2", true),
            ("a#4", true),
            ("a#5", true),
            ("b", false),
        ];
        let want: Vec<(String, bool)> = want.iter().map(|(i, r)| ((*i).to_owned(), *r)).collect();
        assert_eq!(got, want);
    }
}

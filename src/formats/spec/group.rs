//! Grouping consecutive records into one (`[record] group`): the reader side. Records whose
//! group key is the same and that follow one another are bundled into one record
//!
//! ```json
//! {"trajkit_group": {"key": "K", "reappears": false},
//!  "records": [{"line": 3, "index": 2, "record": {...}}, ...]}
//! ```
//!
//! which the spec converts into one trajectory, naming each member's own line in diagnostics.
//! A group is handed on as soon as the key changes, so memory holds one group at a time (and
//! the keys seen, to catch a key that comes back after another). A record that cannot be read
//! or parsed is handed on alone and rejected with its own diagnostic.

use std::collections::{HashSet, VecDeque};
use std::io;

use serde_json::Value;

use super::template::{node_text, Scope, Template, Var};
use crate::ingest::{FramedRecords, RawRecord, RecordSource};
use crate::json::node::pointer_token;
use crate::json::shape::any_object_fields;
use crate::json::Node;
use crate::validate::check::parse_node;

/// The key of a bundle's marker object.
pub const MARKER: &str = "trajkit_group";

/// A group being gathered.
struct Open {
    key: String,
    reappears: bool,
    first: RawRecord,
    rest: Vec<RawRecord>,
}

/// The records of an input, consecutive records of one group key bundled into one.
pub struct GroupedRecords {
    framed: FramedRecords,
    key: Template,
    /// The names of the top-level fields the key reads, when it reads only such fields.
    key_fields: Option<Vec<String>>,
    /// A key that comes back is a group of its own rather than an error.
    separate: bool,
    open: Option<Open>,
    /// Keys of the groups handed on (not kept with `separate`).
    seen: HashSet<String>,
    ready: VecDeque<RawRecord>,
}

impl GroupedRecords {
    /// Opens `path`, grouping its records by `key` (a template of record fields).
    pub fn open(
        path: &str,
        max_record_bytes: usize,
        key: Template,
        separate: bool,
    ) -> io::Result<GroupedRecords> {
        Ok(GroupedRecords {
            framed: FramedRecords::open(path, max_record_bytes)?,
            key_fields: top_level_fields(&key),
            key,
            separate,
            open: None,
            seen: HashSet::new(),
            ready: VecDeque::new(),
        })
    }

    /// Hands on the open group, if any.
    fn close(&mut self) {
        if let Some(open) = self.open.take() {
            let record = bundle(&open.key, open.reappears, open.first, open.rest);
            if !self.separate {
                self.seen.insert(open.key);
            }
            self.ready.push_back(record);
        }
    }

    /// Adds `record` to its group, closing the open group when the key changes.
    fn add(&mut self, record: RawRecord) {
        let key = match group_key(&self.key, self.key_fields.as_deref(), &record) {
            Some(Some(key)) => key,
            // Unreadable records go alone; the converter diagnoses them.
            None => return self.ready.push_back(record),
            // No key: a group of its own with an empty key, which the converter rejects.
            Some(None) => {
                return self.ready.push_back(bundle("", false, record, Vec::new()));
            }
        };
        if let Some(open) = self.open.as_mut().filter(|o| o.key == key) {
            open.rest.push(record);
            return;
        }
        self.close();
        self.open = Some(Open {
            reappears: self.seen.contains(&key),
            key,
            first: record,
            rest: Vec::new(),
        });
    }
}

/// The names of the top-level fields `key` reads (`{/episode_id}`), or `None` when it reads
/// anything else.
fn top_level_fields(key: &Template) -> Option<Vec<String>> {
    key.vars()
        .map(|var| match var {
            Var::Field(pointer) => {
                let token = pointer.strip_prefix('/')?;
                (!token.contains('/')).then(|| pointer_token(token).into_owned())
            }
            _ => None,
        })
        .collect()
}

/// The group key of `record`: `None` when it cannot be read as JSON, `Some(None)` when the key
/// renders empty. A key of top-level fields (`key_fields`) is found without building the rest
/// of the record, which the worker parses when it converts the group; other records and keys
/// are parsed whole.
fn group_key(
    key: &Template,
    key_fields: Option<&[String]>,
    record: &RawRecord,
) -> Option<Option<String>> {
    fn render(key: &Template, record: &Node<'_>) -> Option<String> {
        key.render(&Fields(record))
            .ok()
            .flatten()
            .filter(|k| !k.is_empty())
    }
    if record.error.is_some() {
        return None;
    }
    if let Some(fields) = key_fields.and_then(|names| any_object_fields(&record.bytes, names)) {
        return Some(render(key, &Node::Object(fields)));
    }
    let mut slow = None;
    let node = parse_node(record, &mut slow).ok()?;
    Some(render(key, &node))
}

/// A record's fields, the only variables of a group key.
struct Fields<'a>(&'a Node<'a>);

impl Scope for Fields<'_> {
    fn get(&self, var: &Var) -> Option<std::borrow::Cow<'_, str>> {
        self.node(var).and_then(node_text)
    }

    fn node(&self, var: &Var) -> Option<&Node<'_>> {
        match var {
            Var::Field(p) => self.0.pointer(p),
            _ => None,
        }
    }
}

/// One record bundling `first` and `rest` (read and parsed already), with the first one's
/// provenance.
fn bundle(key: &str, reappears: bool, first: RawRecord, rest: Vec<RawRecord>) -> RawRecord {
    let mut text = format!(
        "{{\"{MARKER}\":{{\"key\":{},\"reappears\":{reappears}}},\"records\":[",
        Value::from(key)
    )
    .into_bytes();
    for (i, record) in std::iter::once(&first).chain(&rest).enumerate() {
        if i > 0 {
            text.push(b',');
        }
        let p = &record.provenance;
        text.extend_from_slice(
            format!("{{\"line\":{},\"index\":{},\"record\":", p.line, p.index).as_bytes(),
        );
        text.extend_from_slice(&record.bytes);
        text.push(b'}');
    }
    text.extend_from_slice(b"]}");
    RawRecord {
        provenance: first.provenance,
        bytes: text,
        error: None,
    }
}

impl Iterator for GroupedRecords {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        loop {
            if let Some(record) = self.ready.pop_front() {
                return Some(record);
            }
            match self.framed.next() {
                Some(record) => self.add(record),
                None if self.open.is_some() => self.close(),
                None => return None,
            }
        }
    }
}

impl RecordSource for GroupedRecords {
    fn bytes_read(&self) -> u64 {
        self.framed.bytes_read()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn runs_of_one_key_become_one_bundle_each_with_their_lines() {
        let mut file = tempfile::Builder::new()
            .suffix(".jsonl")
            .tempfile()
            .unwrap();
        for line in [
            r#"{"k": "a", "n": 1}"#,
            r#"{"k": "a", "n": 2}"#,
            r#"{"k": "b", "n": 3"#,
            r#"{"k": "b", "n": 4}"#,
            r#"{"n": 5}"#,
            r#"{"k": "a", "n": 6}"#,
        ] {
            writeln!(file, "{line}").unwrap();
        }
        let path = file.path().to_string_lossy().into_owned();
        let key = Template::parse("{/k}").unwrap();
        let records: Vec<RawRecord> = GroupedRecords::open(&path, 1 << 20, key, false)
            .unwrap()
            .collect();
        let lines: Vec<u64> = records.iter().map(|r| r.provenance.line).collect();
        assert_eq!(
            lines,
            [3, 1, 5, 4, 6],
            "broken and keyless records go alone as soon as they are read; a group when its key \
             changes or the input ends"
        );
        let bundles: Vec<Value> = records
            .iter()
            .filter_map(|r| serde_json::from_slice(&r.bytes).ok())
            .collect();
        let shape = |b: &Value| {
            let lines: Vec<u64> = b["records"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|m| m["line"].as_u64())
                .collect();
            (
                b[MARKER]["key"].clone(),
                b[MARKER]["reappears"].clone(),
                lines,
            )
        };
        assert_eq!(
            bundles.iter().map(shape).collect::<Vec<_>>(),
            [
                (Value::from("a"), Value::from(false), vec![1, 2]),
                (Value::from(""), Value::from(false), vec![5]),
                (Value::from("b"), Value::from(false), vec![4]),
                (Value::from("a"), Value::from(true), vec![6]),
            ]
        );
    }
}

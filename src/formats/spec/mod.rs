//! Declarative converters: a raw format described in a TOML spec (`converters/*.toml`) instead
//! of Rust code. docs/specs.md is the reference.
//!
//! Loading a spec goes TOML → JSON (remembering lines) → the converter-spec JSON Schema →
//! typed decode → compile (regexes, templates). Every problem names the spec file, line and
//! key, and is found before any data is read. Compiled specs are shared by all threads.
//!
//! Specs are chosen explicitly (`--from NAME`, `--spec FILE`), never auto-detected: several
//! datasets share one record shape (`{id, conversations}`) and differ only in the text of
//! their turns.

mod apply;
mod args;
mod arith;
mod compile;
mod format;
mod group;
mod iterate;
mod schema_errors;
mod template;
mod url;
mod usage;
mod value;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use std::io;

use crate::convert::{ConvertOptions, Converter, DuplicateIds, FormatOptions, LeftOut};
use crate::formats::kit::source_details;
use crate::ingest::{boxed, Provenance, RawRecord, RecordSource};
use crate::json::Node;
use crate::located::LocatedDoc;
use crate::model::{AdpVersion, Trajectory};
use crate::validate::check::parse_node;
use crate::validate::schemas::compile;
use crate::validate::Diagnostic;
use compile::CompiledSpec;
use group::GroupedRecords;
use usage::Usage;

/// The converter-spec JSON Schema.
pub const SPEC_SCHEMA: &str = include_str!("../../../schemas/converter-spec.schema.json");

/// `(file name, text)` of a spec in `converters/`.
macro_rules! embed {
    ($name:literal) => {
        (
            concat!($name, ".toml"),
            include_str!(concat!("../../../converters/", $name, ".toml")),
        )
    };
}

/// The specs shipped in `converters/`, embedded in the binary: `(file name, text)`.
pub const EMBEDDED: &[(&str, &str)] = &[
    embed!("agenttuning_db"),
    embed!("agenttuning_os"),
    embed!("agenttuning_webshop"),
    embed!("android_in_the_wild"),
    embed!("code_feedback"),
    embed!("codeactinstruct"),
    embed!("eto"),
    embed!("llava_plus"),
    embed!("mini-coder"),
    embed!("omniact"),
    embed!("orca_agentinstruct"),
    embed!("synatra"),
    embed!("webarena_successful"),
];

/// A problem in a spec file, located by line and key.
pub use crate::located::LocatedError as SpecError;

/// A converter defined by a spec.
#[derive(Debug)]
pub struct SpecConverter {
    spec: CompiledSpec,
    /// The spec file as given, for messages.
    file: String,
    /// Each placeholder and `for_each` that reads the data: its line, its key, what it reads,
    /// and the counts of its uses.
    sites: Vec<(usize, String, String, Arc<Usage>)>,
    /// `--from` name; leaked once per loaded spec so it can be `'static` like built-in names.
    name: &'static str,
    description: &'static str,
}

/// Loads and compiles the spec in `text` (read from `file`), or says everything wrong with it.
pub fn load(file: &str, text: &str) -> Result<SpecConverter, Vec<SpecError>> {
    let mut doc = LocatedDoc::parse(text).map_err(|e| {
        vec![SpecError {
            file: file.to_owned(),
            line: e.line,
            pointer: e.key.unwrap_or_default(),
            message: format!("TOML: {}", e.message),
        }]
    })?;
    let value = std::mem::take(&mut doc.value);
    let located = |pointer: String, message: String| SpecError {
        file: file.to_owned(),
        line: doc.line(&pointer),
        pointer,
        message,
    };
    let schema = spec_validator();
    if !schema.is_valid(&value) {
        let schema_doc = spec_schema_value();
        let mut problems: Vec<(String, String)> = schema
            .iter_errors(&value)
            .flat_map(|e| schema_errors::explain(&e, schema_doc))
            .collect();
        problems.dedup();
        return Err(problems
            .into_iter()
            .map(|(pointer, message)| located(pointer, message))
            .collect());
    }
    let spec: format::SpecFile =
        serde_json::from_value(value).map_err(|e| vec![located(String::new(), e.to_string())])?;
    let spec = compile::compile(spec).map_err(|problems| {
        problems
            .into_iter()
            .map(|p| located(p.pointer, p.message))
            .collect::<Vec<_>>()
    })?;
    let sites = spec
        .tracked
        .iter()
        .map(|t| {
            let key = t.at.trim_start_matches('/').replace('/', ".");
            (doc.line(&t.at), key, t.what.clone(), Arc::clone(&t.usage))
        })
        .collect();
    Ok(SpecConverter {
        name: Box::leak(spec.name.clone().into_boxed_str()),
        description: Box::leak(spec.description.clone().into_boxed_str()),
        spec,
        file: file.to_owned(),
        sites,
    })
}

/// Loads the spec file at `path`; the converter lives for the rest of the process.
pub fn load_file(path: &str) -> Result<&'static SpecConverter, Vec<SpecError>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        vec![SpecError {
            file: path.to_owned(),
            line: 1,
            pointer: String::new(),
            message: format!("cannot read: {e}"),
        }]
    })?;
    load(path, &text).map(|c| &*Box::leak(Box::new(c)))
}

/// The specs shipped with trajkit, compiled on first use.
pub fn embedded() -> &'static [SpecConverter] {
    static SPECS: OnceLock<Vec<SpecConverter>> = OnceLock::new();
    SPECS.get_or_init(|| {
        EMBEDDED
            .iter()
            .map(|(file, text)| {
                // ok: shipped specs are compiled by the tests (`shipped_specs_load`)
                load(&format!("converters/{file}"), text).unwrap_or_else(|errors| {
                    panic!("shipped spec {file} does not load: {errors:?}")
                })
            })
            .collect()
    })
}

impl SpecConverter {
    /// Converts a bundle of grouped records ([`group`]) into one trajectory; a problem names
    /// the line of the member record it is in.
    fn convert_group(
        &self,
        bundle: &Node<'_>,
        prov: &Provenance,
    ) -> Result<apply::Converted, Vec<Diagnostic>> {
        let error = |prov: &Provenance, pointer: &str, message: String| {
            Diagnostic::error(prov, None, pointer, "spec-convert", message)
        };
        let (Some(marker), Some(Node::Array(records))) =
            (bundle.get(group::MARKER), bundle.get("records"))
        else {
            return Err(vec![error(
                prov,
                "",
                "this spec groups records, and reads them only through its own reader".into(),
            )]);
        };
        let key = marker.get("key").and_then(Node::as_str).unwrap_or_default();
        let key_at = self.spec.group_pointer();
        if key.is_empty() {
            return Err(vec![error(
                prov,
                key_at,
                "the group key renders empty for this record".into(),
            )]);
        }
        if marker.get("reappears") == Some(&Node::Bool(true)) {
            return Err(vec![error(
                prov,
                key_at,
                format!(
                    "group key {key:?} comes back after records of another key (records of a \
                     group must be consecutive; `regroup = \"separate\"` makes each run a \
                     trajectory of its own)"
                ),
            )]);
        }
        let provenance = |m: &Node<'_>| Provenance {
            line: m.get("line").and_then(Node::as_u64).unwrap_or(prov.line),
            index: m.get("index").and_then(Node::as_u64).unwrap_or(prov.index),
            ..prov.clone()
        };
        let members: Vec<apply::Member<'_>> = records
            .iter()
            .map(|m| apply::Member {
                record: m.get("record").unwrap_or(&Node::Null),
                parent: None,
                index: provenance(m).index,
                item: None,
            })
            .collect();
        self.spec.apply_group(&members).map_err(|problems| {
            problems
                .into_iter()
                .map(|(k, (pointer, message))| {
                    let at = records.get(k).map_or_else(|| prov.clone(), provenance);
                    error(&at, &pointer, message)
                })
                .collect()
        })
    }
}

/// The converter-spec JSON Schema as a value, for what its keys must be ([`schema_errors`]).
fn spec_schema_value() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    // ok: the embedded schema is JSON (compiled by `spec_validator` and the tests)
    SCHEMA.get_or_init(|| serde_json::from_str(SPEC_SCHEMA).unwrap_or(Value::Null))
}

fn spec_validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| compile(SPEC_SCHEMA, "converter-spec"))
}

impl Converter for SpecConverter {
    fn name(&self) -> &'static str {
        self.name
    }

    fn description(&self) -> &'static str {
        self.description
    }

    fn sniff(&self, _first: &Value) -> bool {
        false
    }

    fn duplicate_ids(&self) -> Option<DuplicateIds> {
        self.spec.duplicate_ids
    }

    /// The pointers that were used and never resolved since the last call, one line each (by
    /// spec line), with how often they were missing.
    fn run_warnings(&self) -> Vec<String> {
        let mut missing: BTreeMap<(usize, &str, &str), u64> = BTreeMap::new();
        for (line, key, what, usage) in &self.sites {
            if let Some(n) = usage.take_never_resolved() {
                *missing.entry((*line, key, what)).or_default() += n;
            }
        }
        missing
            .into_iter()
            .map(|((line, key, what), n)| {
                format!(
                    "{}:{line}: {key}: {what} never resolved (missing in {n} of {n} uses; \
                     `|required` rejects the records that lack it)",
                    self.file
                )
            })
            .collect()
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        let group = self.spec.group.as_ref()?;
        Some(boxed(GroupedRecords::open(
            path,
            opts.run.max_record_bytes,
            group.key.clone(),
            group.separate,
        )))
    }

    fn convert(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        let mut slow = None;
        let node = parse_node(record, &mut slow).map_err(|d| vec![*d])?;
        let prov = &record.provenance;
        let converted = if self.spec.group.is_some() {
            vec![self.convert_group(&node, prov)?]
        } else {
            self.spec.apply(&node, prov.index).map_err(|problems| {
                problems
                    .into_iter()
                    .map(|(pointer, message)| {
                        Diagnostic::error(prov, None, pointer, "spec-convert", message)
                    })
                    .collect::<Vec<_>>()
            })?
        };
        Ok(converted
            .into_iter()
            .map(|c| {
                let mut details = c.details;
                let mut source =
                    source_details(self.name, record, Value::Object(Default::default()));
                // What a spec leaves out is the turns that give no step (a role it drops, a
                // rule that emits nothing), as lines: they are not kept. The record's fields
                // no template reads are not counted: a spec names what it maps, by choice (a
                // pointer of the spec that never resolves is reported when a conversion ends).
                if c.dropped_turns > 0 {
                    let mut left = LeftOut::new(&format!("spec {}", self.name));
                    left.lines = c.dropped_turns;
                    left.add_to(&mut source);
                }
                details.insert("source".into(), source);
                (Trajectory::new(c.id, c.steps, details), AdpVersion::V1_5)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_specs_load() {
        assert_eq!(embedded().len(), EMBEDDED.len());
        let mut names: Vec<&str> = embedded().iter().map(|c| c.name()).collect();
        for (file, _) in EMBEDDED {
            assert!(names.contains(&file.trim_end_matches(".toml")), "{file}");
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), EMBEDDED.len(), "spec names are unique");
        for builtin in crate::formats::converters() {
            assert!(
                !names.contains(&builtin.name()),
                "{} is both a built-in format and a spec",
                builtin.name()
            );
        }
    }
}

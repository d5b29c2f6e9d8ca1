//! The input formats: one folder each (detection, reader, raw schema, options, converter and,
//! when `join` reads the format's files as side files, its side format), and the registry below,
//! the one list of them. Adding a format is a folder here, a line in [`FORMATS`], a sample in
//! `sample_data/`, its tests and its docs page (docs/development.md, "Adding a format").
//! Helpers several formats share are in [`kit`], [`chat`] (chat messages) and [`bundle`] (files
//! read whole); `spec` is the declarative converter interpreter.

pub mod bundle;
pub mod call_steps;
pub mod chat;
pub mod detect;
pub mod gemini_parts;
pub mod kit;
pub(crate) mod session_steps;
pub mod spec;
pub mod tree;

pub mod adp;
pub mod aider;
pub mod anthropic;
pub mod atif;
pub mod claude_code;
pub mod codex;
pub mod copilot_cli;
pub mod crush;
pub mod cursor;
pub mod droid;
pub mod entire;
pub mod gemini_cli;
pub mod goose;
pub mod hermes;
pub mod inspect;
pub mod kimi_cli;
pub mod ledgermind;
pub mod letta_code;
pub mod memabra;
pub mod mini_swe_agent;
pub mod openai;
pub mod opencode;
pub mod openhands;
pub mod parquet;
pub mod pi;
pub mod qwen_code;
pub mod ralph;
pub mod reflexion;
pub mod sharegpt;
pub mod swe_agent;

use std::path::Path;

use crate::convert::{Converter, FormatOption};
use crate::join::{SideFormat, SideFrom};
use crate::validate::schemas::{self, EmbeddedSchema, RawSchema};

/// One built-in format, as its folder exports it (`FORMAT`): its converter, and the side format
/// `join` reads its files with (`--reflections-from NAME`), if any.
#[derive(Clone, Copy)]
pub struct Format {
    /// The converter (`convert --from NAME`).
    pub converter: &'static dyn Converter,
    /// The side format, named as the converter.
    pub side: Option<&'static dyn SideFormat>,
}

/// Every built-in format: the registry, by name. Everything listed from it (`trajkit
/// formats`, `--from auto`'s candidates, the options, raw schemas and side formats) is in
/// this order.
pub static FORMATS: &[Format] = &[
    adp::FORMAT,
    aider::FORMAT,
    anthropic::FORMAT,
    atif::FORMAT,
    claude_code::FORMAT,
    codex::FORMAT,
    copilot_cli::FORMAT,
    crush::FORMAT,
    cursor::FORMAT,
    droid::FORMAT,
    entire::FORMAT,
    gemini_cli::FORMAT,
    goose::FORMAT,
    hermes::FORMAT,
    inspect::FORMAT,
    kimi_cli::FORMAT,
    ledgermind::FORMAT,
    letta_code::FORMAT,
    memabra::FORMAT,
    mini_swe_agent::FORMAT,
    openai::FORMAT,
    opencode::FORMAT,
    openhands::FORMAT,
    parquet::FORMAT,
    pi::FORMAT,
    qwen_code::FORMAT,
    ralph::FORMAT,
    reflexion::FORMAT,
    sharegpt::FORMAT,
    swe_agent::FORMAT,
];

/// Every built-in converter, in registry order.
pub fn converters() -> Vec<&'static dyn Converter> {
    FORMATS.iter().map(|f| f.converter).collect()
}

/// Every side format `join` reads, in registry order, then the built-in `generic`.
pub fn side_formats() -> impl Iterator<Item = SideFrom> {
    FORMATS
        .iter()
        .filter_map(|f| f.side)
        .map(SideFrom::Format)
        .chain([SideFrom::Generic])
}

/// The side format called `name` (`--reflections-from NAME`, `--rewards-from NAME`), or a
/// message listing the known ones.
pub fn side_format(name: &str) -> Result<SideFrom, String> {
    side_formats().find(|s| s.name() == name).ok_or_else(|| {
        let names: Vec<&str> = side_formats().map(SideFrom::name).collect();
        format!("unknown side format {name:?} (known: {})", names.join(", "))
    })
}

/// The converter that claims `path` (a directory or a non-JSON file) as one input, if any.
pub fn path_converter(path: &Path) -> Option<&'static dyn Converter> {
    converters().into_iter().find(|c| c.claims_path(path))
}

/// Why a file found in a directory input is not read, when a format says it is one its agent
/// keeps beside a conversation without holding one (see [`Converter::beside_conversation`]).
pub fn beside_conversation(path: &Path) -> Option<&'static str> {
    converters()
        .into_iter()
        .find_map(|c| c.beside_conversation(path))
}

/// The converter for `name` (a built-in format or a shipped spec), or a message saying why there
/// is none.
pub fn lookup(name: &str) -> Result<&'static dyn Converter, String> {
    if let Some(c) = converters().into_iter().find(|c| c.name() == name) {
        return Ok(c);
    }
    if let Some(c) = spec::embedded().iter().find(|c| c.name() == name) {
        return Ok(c);
    }
    let known: Vec<&str> = converters()
        .iter()
        .map(|c| c.name())
        .chain(spec::embedded().iter().map(|c| c.name()))
        .collect();
    Err(format!(
        "unknown format {name:?} (supported: {}; run `trajkit formats`)",
        known.join(", ")
    ))
}

/// Every option the formats declare, in the order of [`converters`] (by format name).
pub fn options() -> impl Iterator<Item = &'static FormatOption> {
    converters()
        .into_iter()
        .flat_map(|c| c.options().iter().copied())
}

/// The option whose pipeline key is `key`.
pub fn option(key: &str) -> Option<&'static FormatOption> {
    options().find(|o| o.key == key)
}

/// Every raw schema the formats declare, in the order of [`converters`] (by format name).
pub fn raw_schemas() -> impl Iterator<Item = &'static RawSchema> {
    converters()
        .into_iter()
        .flat_map(|c| c.raw_schemas().iter().copied())
}

/// The raw schema called `name` (`validate --schema NAME`).
pub fn raw_schema(name: &str) -> Option<&'static RawSchema> {
    raw_schemas().find(|s| s.format == name)
}

/// Every schema `trajkit schema` can print: trajkit's own, the declarative-converter spec's,
/// each raw format's, ADP's.
pub fn schemas() -> Vec<EmbeddedSchema> {
    let roots: Vec<&str> = raw_schemas().map(|r| r.documents[0].0).collect();
    let mut formats = vec![EmbeddedSchema {
        name: "converter-spec".to_owned(),
        title: "declarative converter spec (converters/*.toml, read as JSON)",
        text: spec::SPEC_SCHEMA,
    }];
    formats.extend(raw_schemas().flat_map(|r| r.embedded(&roots)));
    schemas::embedded(formats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::AdpVersion;
    use crate::validate::schemas::{adp_validator, compile, RAW_TITLE};
    use serde_json::{json, Value};

    #[test]
    fn every_embedded_schema_compiles_and_is_draft_2020_12() {
        for s in schemas() {
            let v: Value = serde_json::from_str(s.text).expect("schema is JSON");
            assert_eq!(
                v["$schema"], "https://json-schema.org/draft/2020-12/schema",
                "{}",
                s.name
            );
            if s.title != RAW_TITLE {
                compile(s.text, &s.name);
            }
        }
        for v in AdpVersion::ALL {
            let _ = adp_validator(v);
        }
        for raw in raw_schemas() {
            let _ = raw.validator(false);
            let _ = raw.validator(true);
        }
    }

    #[test]
    fn format_names_are_unique() {
        let names: Vec<&str> = converters().iter().map(|c| c.name()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "converter names are unique");
        for name in ["swe-agent", "openhands"] {
            assert!(lookup(name).is_ok_and(|c| c.name() == name));
        }
        assert!(lookup("klingon").is_err_and(|e| e.starts_with("unknown format")));
    }

    /// The registry is sorted by name; side formats are listed in its order, then `generic`.
    #[test]
    fn side_formats_are_named_as_their_formats_and_listed_in_registry_order() {
        let names: Vec<&str> = side_formats().map(SideFrom::name).collect();
        assert_eq!(
            names,
            ["ledgermind", "memabra", "ralph", "reflexion", "generic"]
        );
        for f in FORMATS {
            if let Some(side) = f.side {
                assert_eq!(side.name(), f.converter.name());
            }
        }
        let converters: Vec<&str> = converters().iter().map(|c| c.name()).collect();
        assert!(converters.is_sorted(), "{converters:?}");
        assert!(side_format("ralph").is_ok_and(|s| s.name() == "ralph"));
        assert!(matches!(side_format("generic"), Ok(SideFrom::Generic)));
        assert_eq!(
            side_format("klingon").map(SideFrom::name),
            Err("unknown side format \"klingon\" (known: ledgermind, memabra, ralph, reflexion, generic)".to_owned())
        );
    }

    /// Every key text of every side format parses (the join leaves out those that do not) and
    /// gives the spec keys of both kinds.
    #[test]
    fn every_side_format_has_side_and_trajectory_keys_that_parse() {
        use crate::join::key::KeyExpr;
        use crate::join::spec::WindowSpec;
        for side in FORMATS.iter().filter_map(|f| f.side) {
            let keys = side.keys();
            let trajectory_keys = side.trajectory_keys();
            assert!(!keys.is_empty() && !trajectory_keys.is_empty(), "{side:?}");
            for text in keys
                .iter()
                .map(String::as_str)
                .chain(trajectory_keys.iter().copied())
            {
                assert!(KeyExpr::parse(text).is_ok(), "{side:?}: {text}");
            }
            if let Some(w) = side.window() {
                assert!(WindowSpec::parse(w).is_ok(), "{side:?}");
            }
        }
    }

    #[test]
    fn option_keys_are_unique_and_flags_are_their_keys_with_dashes() {
        let keys: Vec<&str> = options().map(|o| o.key).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), keys.len(), "option keys are unique");
        for o in options() {
            assert_eq!(o.flag, o.key.replace('_', "-"), "{}", o.key);
        }
    }

    #[test]
    fn raw_schema_names_are_unique() {
        let names: Vec<&str> = raw_schemas().map(|s| s.format).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
    }

    /// The samples of the formats whose schemas compile with every value replaced, in turn, by values of other kinds:
    /// whatever the fast parse accepts, the validator accepts.
    #[test]
    fn accepts_nothing_the_raw_schema_refuses() {
        let samples = [
            (
                "memabra",
                include_str!("../../sample_data/memabra/traces.jsonl"),
            ),
            (
                "reflexion",
                include_str!("../../sample_data/reflexion/loop.jsonl"),
            ),
            (
                "openai",
                include_str!("../../sample_data/openai/chats.jsonl"),
            ),
            (
                "anthropic",
                include_str!("../../sample_data/anthropic/messages.jsonl"),
            ),
            (
                "sharegpt",
                include_str!("../../sample_data/sharegpt/conversations.json"),
            ),
            (
                "mini-swe-agent",
                include_str!("../../sample_data/mini-swe-agent/last_mini_run.traj.json"),
            ),
            (
                "mini-swe-agent",
                include_str!("../../sample_data/mini-swe-agent/slugs__slugs-12.traj.json"),
            ),
            (
                "atif",
                include_str!("../../sample_data/atif/trajectory.json"),
            ),
            (
                "atif",
                include_str!("../../sample_data/atif/continued.trajectory.json"),
            ),
        ];
        let replacements = [
            json!(null),
            json!(true),
            json!(-1),
            json!(0),
            json!(11),
            json!(0.5),
            json!(""),
            json!("x"),
            json!("ralph-a"),
            json!("tool_called"),
            json!("user"),
            json!("image"),
            json!([]),
            json!({}),
        ];
        for (format, text) in samples {
            for lenient in [false, true] {
                let schema = raw_schema(format).expect("these formats have schemas");
                let shapes = schema.shapes(lenient).expect("these formats compile");
                let validator = schema.validator(lenient);
                // A sample is JSON lines, one JSON list of records, or one record.
                let records: Vec<Value> = match serde_json::from_str(text) {
                    Ok(Value::Array(items)) => items,
                    Ok(record @ Value::Object(_)) => vec![record],
                    _ => text
                        .lines()
                        .map(|l| serde_json::from_str(l).expect("sample"))
                        .collect(),
                };
                for record in records {
                    let line = serde_json::to_vec(&record).expect("json");
                    assert_eq!(
                        shapes.parse(&line).is_some(),
                        validator.is_valid(&record),
                        "{format} sample, lenient {lenient}"
                    );
                    for pointer in pointers(&record, String::new()) {
                        for r in &replacements {
                            let mut mutated = record.clone();
                            if let Some(slot) = mutated.pointer_mut(&pointer) {
                                *slot = r.clone();
                            }
                            let bytes = serde_json::to_vec(&mutated).expect("json");
                            if shapes.parse(&bytes).is_some() {
                                assert!(
                                    validator.is_valid(&mutated),
                                    "{format} {pointer} = {r} passes the fast check only"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    fn pointers(v: &Value, at: String) -> Vec<String> {
        let children: Vec<(String, &Value)> = match v {
            Value::Object(m) => m
                .iter()
                .map(|(k, x)| (k.replace('~', "~0").replace('/', "~1"), x))
                .collect(),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .map(|(i, x)| (i.to_string(), x))
                .collect(),
            _ => Vec::new(),
        };
        let mut out = vec![at.clone()];
        for (k, child) in children {
            out.extend(pointers(child, format!("{at}/{k}")));
        }
        out
    }
}

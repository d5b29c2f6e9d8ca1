//! The JSON Schemas in `schemas/`, embedded in the binary and compiled once.

use std::collections::HashMap;
use std::sync::OnceLock;

use jsonschema::Validator;
use serde_json::Value;

use crate::json::Shapes;
use crate::model::AdpVersion;

/// A schema trajkit ships: its name (as given to `trajkit schema`) and text.
pub struct EmbeddedSchema {
    /// Name on the command line, e.g. `adp`, `adp@1.3.0`, `memabra/event`.
    pub name: String,
    /// What it describes.
    pub title: &'static str,
    /// The JSON text.
    pub text: &'static str,
}

/// The ADP schema text for `version`.
pub fn adp_schema_text(version: AdpVersion) -> &'static str {
    match version {
        AdpVersion::Unversioned => include_str!("../../schemas/adp/unversioned.schema.json"),
        AdpVersion::V1_0 => include_str!("../../schemas/adp/1.0.0.schema.json"),
        AdpVersion::V1_1 => include_str!("../../schemas/adp/1.1.0.schema.json"),
        AdpVersion::V1_2 => include_str!("../../schemas/adp/1.2.0.schema.json"),
        AdpVersion::V1_3 => include_str!("../../schemas/adp/1.3.0.schema.json"),
        AdpVersion::V1_4 => include_str!("../../schemas/adp/1.4.0.schema.json"),
        AdpVersion::V1_5 => include_str!("../../schemas/adp/1.5.0.schema.json"),
    }
}

/// The title of raw-format schemas in `trajkit schema --list`.
const RAW_TITLE: &str = "raw input format";

/// A raw input format's JSON Schema: its root document, the documents the root refers to by
/// relative `$ref`, and the leniencies `--lenient` applies for drift seen in real files.
pub struct RawSchema {
    /// The format name (`--schema NAME`, `--from NAME`).
    pub format: &'static str,
    /// The field shown as record id in diagnostics.
    pub id_key: &'static str,
    /// `(uri, text)` of every document; the first is the root.
    pub documents: &'static [(&'static str, &'static str)],
    /// What `--lenient` accepts beyond the published schema.
    pub leniencies: &'static [Leniency],
}

/// One documented relaxation of a raw schema: `key` becomes an allowed property (with schema
/// `schema`) of the object whose `properties` are at `pointer` in the root document.
pub struct Leniency {
    /// JSON pointer to a `properties` object in the root document.
    pub pointer: &'static str,
    /// The extra property.
    pub key: &'static str,
    /// Its schema (JSON text).
    pub schema: &'static str,
    /// Why: what real files do.
    pub why: &'static str,
}

/// The raw formats with a schema.
pub const RAW_SCHEMAS: &[RawSchema] = &[
    RawSchema {
        format: "memabra",
        id_key: "trajectory_id",
        documents: &[
            (
                "https://trajkit.invalid/schemas/raw/memabra/trajectory.schema.json",
                include_str!("../../schemas/raw/memabra/trajectory.schema.json"),
            ),
            (
                "https://trajkit.invalid/schemas/raw/memabra/event.schema.json",
                include_str!("../../schemas/raw/memabra/event.schema.json"),
            ),
            (
                "https://trajkit.invalid/schemas/raw/memabra/candidate_object.schema.json",
                include_str!("../../schemas/raw/memabra/candidate_object.schema.json"),
            ),
        ],
        leniencies: &[Leniency {
            pointer: "/properties/decisions/items/properties",
            key: "selected_payloads",
            schema: "{}",
            why: "memabra's own demo trajectories carry selected_payloads in decisions, which its schema forbids",
        }],
    },
    RawSchema {
        format: "atif",
        id_key: "trajectory_id",
        documents: &[(
            "https://trajkit.invalid/schemas/raw/atif.schema.json",
            include_str!("../../schemas/raw/atif.schema.json"),
        )],
        leniencies: &[],
    },
    RawSchema {
        format: "ledgermind",
        id_key: "id",
        documents: &[
            (
                "https://trajkit.invalid/schemas/raw/ledgermind.schema.json",
                include_str!("../../schemas/raw/ledgermind.schema.json"),
            ),
        ],
        leniencies: &[],
    },
    RawSchema {
        format: "ralph-action",
        id_key: "type",
        documents: &[
            (
                "https://trajkit.invalid/schemas/raw/ralph/action.schema.json",
                include_str!("../../schemas/raw/ralph/action.schema.json"),
            ),
        ],
        leniencies: &[],
    },
    RawSchema {
        format: "ralph-attempt",
        id_key: "task_id",
        documents: &[
            (
                "https://trajkit.invalid/schemas/raw/ralph/attempt.schema.json",
                include_str!("../../schemas/raw/ralph/attempt.schema.json"),
            ),
            (
                "https://trajkit.invalid/schemas/raw/ralph/outcome.schema.json",
                include_str!("../../schemas/raw/ralph/outcome.schema.json"),
            ),
        ],
        leniencies: &[],
    },
    RawSchema {
        format: "ralph-outcome",
        id_key: "status",
        documents: &[
            (
                "https://trajkit.invalid/schemas/raw/ralph/outcome.schema.json",
                include_str!("../../schemas/raw/ralph/outcome.schema.json"),
            ),
        ],
        leniencies: &[],
    },
    RawSchema {
        format: "ralph-reflection",
        id_key: "attempt_id",
        documents: &[
            (
                "https://trajkit.invalid/schemas/raw/ralph/reflection.schema.json",
                include_str!("../../schemas/raw/ralph/reflection.schema.json"),
            ),
        ],
        leniencies: &[],
    },
    RawSchema {
        format: "ralph-task",
        id_key: "id",
        documents: &[
            (
                "https://trajkit.invalid/schemas/raw/ralph/task.schema.json",
                include_str!("../../schemas/raw/ralph/task.schema.json"),
            ),
        ],
        leniencies: &[],
    },
    RawSchema {
        format: "openai",
        id_key: "id",
        documents: &[(
            "https://trajkit.invalid/schemas/raw/openai.schema.json",
            include_str!("../../schemas/raw/openai.schema.json"),
        )],
        leniencies: &[],
    },
    RawSchema {
        format: "sharegpt",
        id_key: "id",
        documents: &[(
            "https://trajkit.invalid/schemas/raw/sharegpt.schema.json",
            include_str!("../../schemas/raw/sharegpt.schema.json"),
        )],
        leniencies: &[],
    },
    RawSchema {
        format: "swe-agent",
        id_key: "instance_id",
        documents: &[
            (
                "https://trajkit.invalid/schemas/raw/swe-agent.schema.json",
                include_str!("../../schemas/raw/swe-agent.schema.json"),
            ),
            (
                "https://trajkit.invalid/schemas/raw/openai.schema.json",
                include_str!("../../schemas/raw/openai.schema.json"),
            ),
        ],
        leniencies: &[],
    },
    RawSchema {
        format: "openhands",
        id_key: "instance_id",
        documents: &[
            (
                "https://trajkit.invalid/schemas/raw/openhands.schema.json",
                include_str!("../../schemas/raw/openhands.schema.json"),
            ),
            (
                "https://trajkit.invalid/schemas/raw/openai.schema.json",
                include_str!("../../schemas/raw/openai.schema.json"),
            ),
        ],
        leniencies: &[],
    },
    RawSchema {
        format: "reflexion",
        id_key: "loop_id",
        documents: &[(
            "https://trajkit.invalid/schemas/raw/reflexion.schema.json",
            include_str!("../../schemas/raw/reflexion.schema.json"),
        )],
        leniencies: &[],
    },
];

/// The raw schema of `format`, if it has one.
pub fn raw_schema(format: &str) -> Option<&'static RawSchema> {
    RAW_SCHEMAS.iter().find(|s| s.format == format)
}

/// The compiled validator of raw `format` (strict or lenient), built on first use.
pub fn raw_validator(format: &str, lenient: bool) -> Option<&'static Validator> {
    static VALIDATORS: OnceLock<HashMap<(&'static str, bool), Validator>> = OnceLock::new();
    let map = VALIDATORS.get_or_init(|| {
        RAW_SCHEMAS
            .iter()
            .flat_map(|s| [(s, false), (s, true)])
            .map(|(s, lenient)| ((s.format, lenient), compile_raw(s, lenient)))
            .collect()
    });
    map.iter()
        .find(|((f, l), _)| *f == format && *l == lenient)
        .map(|(_, v)| v)
}

/// The compiled checks of raw `format` (strict or lenient) for reading records as nodes, built
/// on first use; `None` when the format has no schema or its schema uses what
/// [`Shapes`] does not check.
pub fn raw_shapes(format: &str, lenient: bool) -> Option<&'static Shapes> {
    static SHAPES: OnceLock<HashMap<(&'static str, bool), Option<Shapes>>> = OnceLock::new();
    let map = SHAPES.get_or_init(|| {
        RAW_SCHEMAS
            .iter()
            .flat_map(|s| [(s, false), (s, true)])
            .map(|(s, lenient)| {
                (
                    (s.format, lenient),
                    Shapes::compile(&raw_documents(s, lenient)),
                )
            })
            .collect()
    });
    map.iter()
        .find(|((f, l), _)| *f == format && *l == lenient)
        .and_then(|(_, shapes)| shapes.as_ref())
}

/// The documents of a raw schema as `(uri, schema)`, the root first, with the leniencies
/// applied to the root when `lenient`.
fn raw_documents(raw: &RawSchema, lenient: bool) -> Vec<(&'static str, Value)> {
    // ok: compiled-in schema text, parsed by every test run; never user data
    let parse = |uri: &str, text: &str| -> Value {
        serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("embedded schema {uri} is not JSON: {e}"))
    };
    let (root_uri, root_text) = raw.documents[0];
    let mut root = parse(root_uri, root_text);
    if lenient {
        for l in raw.leniencies {
            let extra = parse(l.key, l.schema);
            match root.pointer_mut(l.pointer).and_then(Value::as_object_mut) {
                Some(props) => {
                    props.insert(l.key.to_owned(), extra);
                }
                // ok: the pointer and the schema are both compiled in and covered by the tests
                None => panic!("leniency pointer {} not found in {root_uri}", l.pointer),
            }
        }
    }
    let mut documents: Vec<(&str, Value)> = vec![(root_uri, root)];
    documents.extend(
        raw.documents[1..]
            .iter()
            .map(|&(uri, text)| (uri, parse(uri, text))),
    );
    documents
}

fn compile_raw(raw: &RawSchema, lenient: bool) -> Validator {
    let documents = raw_documents(raw, lenient);
    let root = documents[0].1.clone();
    let root_uri = documents[0].0;
    // ok: embedded schemas (this and the build below), compiled and exercised by the tests
    let registry = jsonschema::Registry::new()
        .extend(documents)
        .and_then(|r| r.prepare())
        .unwrap_or_else(|e| panic!("embedded schemas of {} do not resolve: {e}", raw.format));
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .with_registry(&registry)
        .offline()
        .build(&root)
        .unwrap_or_else(|e| panic!("embedded schema {root_uri} does not compile: {e}"))
}

/// Every schema `trajkit schema` can print.
pub fn embedded() -> Vec<EmbeddedSchema> {
    let mut out = vec![EmbeddedSchema {
        name: "details".to_owned(),
        title: "trajkit's keys in a trajectory's details (source, outcome, reward, reflections)",
        text: include_str!("../../schemas/details.schema.json"),
    }];
    out.push(EmbeddedSchema {
        name: "pipeline".to_owned(),
        title: "trajkit run pipeline file (TOML, read as JSON)",
        text: PIPELINE_SCHEMA,
    });
    out.push(EmbeddedSchema {
        name: "converter-spec".to_owned(),
        title: "declarative converter spec (converters/*.toml, read as JSON)",
        text: crate::convert::spec::SPEC_SCHEMA,
    });
    let roots: Vec<&str> = RAW_SCHEMAS.iter().map(|r| r.documents[0].0).collect();
    for raw in RAW_SCHEMAS {
        out.push(EmbeddedSchema {
            name: raw.format.to_owned(),
            title: RAW_TITLE,
            text: raw.documents[0].1,
        });
        for &(uri, text) in &raw.documents[1..] {
            if roots.contains(&uri) {
                continue;
            }
            let file = uri.rsplit('/').next().unwrap_or(uri);
            let stem = file.strip_suffix(".schema.json").unwrap_or(file);
            out.push(EmbeddedSchema {
                name: format!("{}/{stem}", raw.format),
                title: RAW_TITLE,
                text,
            });
        }
    }
    for v in AdpVersion::ALL {
        out.push(EmbeddedSchema {
            name: adp_schema_name(v).to_owned(),
            title: "ADP standardized trajectory",
            text: adp_schema_text(v),
        });
    }
    out
}

/// The schema of `trajkit run` pipeline files.
pub const PIPELINE_SCHEMA: &str = include_str!("../../schemas/pipeline.schema.json");

/// The compiled pipeline-file schema.
pub fn pipeline_validator() -> &'static Validator {
    static VALIDATOR: OnceLock<Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| compile(PIPELINE_SCHEMA, "pipeline"))
}

fn adp_schema_name(v: AdpVersion) -> &'static str {
    match v {
        AdpVersion::Unversioned => "adp@unversioned",
        AdpVersion::V1_0 => "adp@1.0.0",
        AdpVersion::V1_1 => "adp@1.1.0",
        AdpVersion::V1_2 => "adp@1.2.0",
        AdpVersion::V1_3 => "adp@1.3.0",
        AdpVersion::V1_4 => "adp@1.4.0",
        AdpVersion::V1_5 => "adp@1.5.0",
    }
}

/// The compiled validator for ADP `version`, built on first use and shared by all threads.
pub fn adp_validator(version: AdpVersion) -> &'static Validator {
    static VALIDATORS: OnceLock<HashMap<AdpVersion, Validator>> = OnceLock::new();
    let map = VALIDATORS.get_or_init(|| {
        AdpVersion::ALL
            .into_iter()
            .map(|v| (v, compile(adp_schema_text(v), adp_schema_name(v))))
            .collect()
    });
    // ok: the map is built from `AdpVersion::ALL`, so every version is a key
    &map[&version]
}

/// Compiles an embedded schema. The schemas are part of the binary and covered by tests, so a
/// failure here is a build defect, not a user error.
pub(crate) fn compile(text: &str, name: &str) -> Validator {
    // ok: compiled-in schema text (this and the build below), covered by the tests
    let schema: Value = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("embedded schema {name} is not JSON: {e}"));
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema)
        .unwrap_or_else(|e| panic!("embedded schema {name} does not compile: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_schema_compiles_and_is_draft_2020_12() {
        for s in embedded() {
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
        for raw in RAW_SCHEMAS {
            assert!(raw_validator(raw.format, false).is_some());
            assert!(raw_validator(raw.format, true).is_some());
        }
    }

    #[test]
    fn memabra_refs_resolve_and_leniency_admits_selected_payloads() {
        let decision = serde_json::json!({
            "step": 1, "decision_type": "call_tool", "selected_ids": ["t"], "rationale": "r",
            "selected_payloads": [{"id": "t"}]
        });
        let mut traj = serde_json::json!({
            "trajectory_id": "x",
            "task": {"task_id": "t", "input": "i", "channel": "cli", "created_at": "2026-01-01T00:00:00Z"},
            "context_snapshot": {"conversation_summary": "", "environment_summary": ""},
            "candidate_sets": {"memory": [], "skill": [], "tool": [{"id": 5}]},
            "decisions": [decision],
            "events": [],
            "outcome": {"status": "success", "steps": 1, "latency_ms": 3, "user_corrections": 0},
            "reward": {"total": 1.0, "components": {"task_success": 1, "retrieval_hit": 0, "tool_error": 0, "user_correction": 0, "latency": 0, "context_cost": 0, "useful_reuse": 0}}
        });
        let strict = raw_validator("memabra", false).expect("memabra");
        let lenient = raw_validator("memabra", true).expect("memabra");
        let pointers = |v: &Validator, t: &Value| -> Vec<String> {
            v.iter_errors(t)
                .map(|e| e.instance_path().as_str().to_owned())
                .collect()
        };
        // The candidate is checked through the relative $ref: its id must be a string.
        assert!(pointers(strict, &traj).contains(&"/candidate_sets/tool/0".to_owned()));
        traj["candidate_sets"]["tool"] = serde_json::json!([]);
        assert_eq!(pointers(strict, &traj), vec!["/decisions/0".to_owned()]);
        assert!(pointers(lenient, &traj).is_empty());
    }
}

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
pub const RAW_TITLE: &str = "raw input format";

/// A raw input format's JSON Schema: its root document, the documents the root refers to by
/// relative `$ref`, and the leniencies `--lenient` applies for drift seen in real files. Each
/// format declares its own as a `static` ([`RawSchema::new`]); they are compiled on first use.
pub struct RawSchema {
    /// The format name (`--schema NAME`, `--from NAME`).
    pub format: &'static str,
    /// The field shown as record id in diagnostics.
    pub id_key: &'static str,
    /// `(uri, text)` of every document; the first is the root.
    pub documents: &'static [(&'static str, &'static str)],
    /// What `--lenient` accepts beyond the published schema.
    pub leniencies: &'static [Leniency],
    validators: [OnceLock<Validator>; 2],
    shapes: [OnceLock<Option<Shapes>>; 2],
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

impl std::fmt::Debug for RawSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RawSchema({})", self.format)
    }
}

/// Schemas are told apart by their format name.
impl PartialEq for RawSchema {
    fn eq(&self, other: &Self) -> bool {
        self.format == other.format
    }
}

impl Eq for RawSchema {}

impl RawSchema {
    /// A schema of `format` whose records show `id_key` as their id in diagnostics;
    /// `documents` and `leniencies` as in the fields.
    pub const fn new(
        format: &'static str,
        id_key: &'static str,
        documents: &'static [(&'static str, &'static str)],
        leniencies: &'static [Leniency],
    ) -> RawSchema {
        RawSchema {
            format,
            id_key,
            documents,
            leniencies,
            validators: [OnceLock::new(), OnceLock::new()],
            shapes: [OnceLock::new(), OnceLock::new()],
        }
    }

    /// The compiled validator (strict, or with the leniencies), built on first use.
    pub fn validator(&self, lenient: bool) -> &Validator {
        self.validators[usize::from(lenient)].get_or_init(|| compile_raw(self, lenient))
    }

    /// The compiled checks for reading records as nodes (strict or lenient), built on first
    /// use; `None` when the schema uses what [`Shapes`] does not check.
    pub fn shapes(&self, lenient: bool) -> Option<&Shapes> {
        self.shapes[usize::from(lenient)]
            .get_or_init(|| Shapes::compile(&raw_documents(self, lenient)))
            .as_ref()
    }

    /// The documents `trajkit schema` prints for this schema: the root as `FORMAT`, each
    /// other document as `FORMAT/STEM` unless it is in `roots` (the root of another schema).
    pub fn embedded(&self, roots: &[&str]) -> Vec<EmbeddedSchema> {
        let mut out = vec![EmbeddedSchema {
            name: self.format.to_owned(),
            title: RAW_TITLE,
            text: self.documents[0].1,
        }];
        for &(uri, text) in &self.documents[1..] {
            if roots.contains(&uri) {
                continue;
            }
            let file = uri.rsplit('/').next().unwrap_or(uri);
            let stem = file.strip_suffix(".schema.json").unwrap_or(file);
            out.push(EmbeddedSchema {
                name: format!("{}/{stem}", self.format),
                title: RAW_TITLE,
                text,
            });
        }
        out
    }
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

/// Every schema `trajkit schema` can print: trajkit's own (details, pipeline), then
/// `formats` (those of the input formats), then ADP's.
pub fn embedded(formats: Vec<EmbeddedSchema>) -> Vec<EmbeddedSchema> {
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
    out.extend(formats);
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

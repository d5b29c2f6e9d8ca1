//! The pipeline file's JSON Schema, generated from the stage configs' serde types (their doc
//! comments are the descriptions) and the formats' declared options.
//!
//! `schemas/pipeline.schema.json` is this schema, checked in: `trajkit schema pipeline` prints
//! it and pipeline files are validated against it. The test below fails when the file differs
//! from what the types generate; `TRAJKIT_BLESS=1 cargo test --lib config::schema` rewrites it.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{Map, Value};

use super::convert::ConvertConfig;
use super::export::ExportConfig;
use super::join::JoinConfig;
use super::partition::PartitionConfig;
use super::pipeline::Input;
use super::redact::RedactConfig;
use super::report::ReportConfig;
use super::validate::ValidateConfig;
use crate::filter::FilterConfig;

/// The tables of a pipeline file, as the schema describes them (the file is read table by
/// table, each problem located: [`super::pipeline::parse`]).
#[derive(JsonSchema)]
#[schemars(
    title = "trajkit pipeline file (trajkit run PIPELINE.toml, read as JSON)",
    description = "Inputs, convert options, validation, join stages and exports, run in one streaming pass. Paths are relative to the pipeline file's directory. The keys of [[join]] and [[export]] are the long options of `trajkit join` and `trajkit export`, in snake_case, with the same values and defaults.",
    deny_unknown_fields
)]
#[allow(dead_code)] // described, never built: the file is read table by table
struct PipelineFile {
    /// Inputs, read in order: files, directories (read recursively, or as one unit when a
    /// format claims them: Ralph memory directories, LedgerMind databases) and glob patterns.
    #[schemars(length(min = 1))]
    input: Vec<Input>,
    /// How inputs are converted.
    convert: Option<ConvertConfig>,
    /// How `trajkit run --partition I/N` partitions (I/N itself is given on the command line,
    /// one per run).
    partition: Option<PartitionConfig>,
    /// When the run fails, and where rejected records go.
    validate: Option<ValidateConfig>,
    /// A dataset report (trajkit report) written after the run: the first adp export, else the
    /// first parquet one, with the rejects file; not written by a partition (run trajkit report
    /// on the merged export).
    report: Option<ReportConfig>,
    /// Which trajectories go on to the exports, applied after the joins and before redaction: a
    /// trajectory must pass every key given; one that fails is counted as filtered, with the
    /// first key it failed as the reason (the filter section of run.json counts each).
    filter: Option<FilterConfig>,
    /// Redaction (trajkit redact): when present, every trajectory that leaves the joins has its
    /// secrets and personal data replaced by placeholders before it reaches any export; one in
    /// which something is still found is rejected (redaction-residual). The rejects file then
    /// holds its records masked.
    redact: Option<RedactConfig>,
    /// Join stages, applied in order (trajkit join).
    join: Option<Vec<JoinConfig>>,
    /// Exports; every trajectory that leaves the joins goes to each (trajkit export).
    #[schemars(length(min = 1))]
    export: Vec<ExportConfig>,
}

/// The id of the schema (`$id`).
const ID: &str = "https://trajkit.dev/schemas/pipeline.schema.json";

/// The pipeline file's schema, as generated from the types (draft 2020-12).
pub fn pipeline_schema() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator();
    let mut value = generator.into_root_schema_for::<PipelineFile>().to_value();
    tidy(&mut value);
    if let Some(top) = value.as_object_mut() {
        // What a reader looks for first, first; then the rest in the generated order.
        top.insert("$id".into(), ID.into());
        let mut ordered = Map::new();
        for key in ["$schema", "$id", "title", "description"] {
            if let Some(v) = top.remove(key) {
                ordered.insert(key.into(), v);
            }
        }
        ordered.extend(std::mem::take(top));
        *top = ordered;
    }
    value
}

/// The schema as the checked-in file holds it: pretty-printed, with a final newline.
pub fn pipeline_schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&pipeline_schema()).expect("JSON"); // ok: a Value always serializes
    text.push('\n');
    text
}

/// Removes what schemars adds for Rust rather than for pipeline files: `null` among the types
/// and names of an optional key (TOML has no null: an optional key is absent) and `format`
/// annotations of numbers (`uint64`, `double`: not standard formats, and they validate
/// nothing). Doc comments' line breaks become spaces (a blank line stays a paragraph break).
fn tidy(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(text)) = map.get_mut("description") {
                *text = text
                    .split("\n\n")
                    .map(|p| p.replace('\n', " "))
                    .collect::<Vec<_>>()
                    .join("\n\n");
            }
            if let Some(Value::Array(names)) = map.get_mut("enum") {
                names.retain(|n| !n.is_null());
            }
            if map.get("format").is_some_and(Value::is_string) {
                map.remove("format");
            }
            if map.get("default").is_some_and(Value::is_null) {
                map.remove("default");
            }
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if let [one] = types.as_slice() {
                    let one = one.clone();
                    map.insert("type".into(), one);
                }
            }
            map.values_mut().for_each(tidy);
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checked-in schema is the generated one. `TRAJKIT_BLESS=1` rewrites the file.
    #[test]
    fn the_checked_in_pipeline_schema_is_the_generated_one() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/pipeline.schema.json");
        let generated = pipeline_schema_text();
        if std::env::var_os("TRAJKIT_BLESS").is_some() {
            std::fs::write(path, &generated).expect("write the schema");
            return;
        }
        let checked_in = std::fs::read_to_string(path).expect("read the schema");
        assert!(
            checked_in == generated,
            "schemas/pipeline.schema.json differs from the schema the config types generate; \
             regenerate it with `TRAJKIT_BLESS=1 cargo test --lib config::schema` and commit it"
        );
    }
}

//! The JSON Schemas in `schemas/`, embedded in the binary and compiled once.

use std::collections::HashMap;
use std::sync::OnceLock;

use jsonschema::Validator;
use serde_json::Value;

use crate::model::AdpVersion;

/// A schema trajkit ships: its name (as given to `trajkit schema`) and text.
pub struct EmbeddedSchema {
    /// Name on the command line, e.g. `adp` or `adp@1.3.0`.
    pub name: &'static str,
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

/// Every schema `trajkit schema` can print.
pub fn embedded() -> Vec<EmbeddedSchema> {
    let mut out = vec![EmbeddedSchema {
        name: "details",
        title: "trajkit's keys in a trajectory's details (source, outcome, reward, reflections)",
        text: include_str!("../../schemas/details.schema.json"),
    }];
    for v in AdpVersion::ALL {
        out.push(EmbeddedSchema {
            name: adp_schema_name(v),
            title: "ADP standardized trajectory",
            text: adp_schema_text(v),
        });
    }
    out
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
    &map[&version]
}

/// Compiles an embedded schema. The schemas are part of the binary and covered by tests, so a
/// failure here is a build defect, not a user error.
fn compile(text: &str, name: &str) -> Validator {
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
            compile(s.text, s.name);
        }
        for v in AdpVersion::ALL {
            let _ = adp_validator(v);
        }
    }
}

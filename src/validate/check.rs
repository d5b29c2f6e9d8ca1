//! Checking one raw record as an ADP trajectory: JSON syntax, version, JSON Schema, typed
//! decoding, semantic rules. Each stage stops the check when it fails, so one problem gives one
//! diagnostic rather than a cascade.

use jsonschema::error::ValidationErrorKind;
use jsonschema::ValidationError;
use serde_json::Value;

use super::diagnostic::Diagnostic;
use super::schemas::{adp_validator, RawSchema};
use crate::ingest::{FrameError, Provenance, RawRecord};
use crate::json::strict::{self, ParseError};
use crate::json::{Node, Shapes};
use crate::model::rules::{self, escape_pointer};
use crate::model::upgrade::{upgrade, UpgradeOptions};
use crate::model::{AdpVersion, Trajectory};

/// The result of checking one record.
#[derive(Debug)]
pub struct Checked {
    /// The decoded trajectory and the version it was read as, when the record is valid.
    pub trajectory: Option<(Trajectory, AdpVersion)>,
    /// Every problem found (empty when valid).
    pub diagnostics: Vec<Diagnostic>,
}

impl Checked {
    /// The trajectory and its version, or why the record is not valid ADP.
    pub fn into_result(self) -> Result<(Trajectory, AdpVersion), Vec<Diagnostic>> {
        self.trajectory.ok_or(self.diagnostics)
    }

    fn invalid(diagnostics: Vec<Diagnostic>) -> Self {
        Checked {
            trajectory: None,
            diagnostics,
        }
    }
}

/// Diagnoses a record that could not be framed.
pub fn frame_diagnostic(prov: &Provenance, error: &FrameError) -> Diagnostic {
    let rule = match error {
        FrameError::TooLarge { .. } => "record-too-large",
        FrameError::Truncated => "json-truncated",
        FrameError::Syntax(_) => "json-syntax",
        FrameError::Read(_) => "read-error",
        FrameError::Invalid(_) => "invalid-record",
        FrameError::Row { .. } => "parquet-row",
        FrameError::Json(_) => "json",
    };
    let rule = match error {
        FrameError::Json(p) => p.rule,
        _ => rule,
    };
    let pointer = match error {
        FrameError::Row { pointer, .. } => pointer.as_str(),
        FrameError::Json(p) => p.pointer.as_str(),
        _ => "",
    };
    Diagnostic::error(prov, None, pointer, rule, error.to_string())
}

/// Parses a record's bytes as JSON, or diagnoses why it is not JSON (with the line of the
/// problem in the input file) or breaks trajkit's rules on JSON text (a duplicate key, an
/// integer past 64 bits: [`crate::json::strict`]).
pub fn parse_json(rec: &RawRecord) -> Result<Value, Box<Diagnostic>> {
    let prov = &rec.provenance;
    if let Some(error) = &rec.error {
        return Err(Box::new(frame_diagnostic(prov, error)));
    }
    match strict::parse_value(&rec.bytes) {
        Ok(value) => Ok(value),
        Err(ParseError::Syntax(e)) => Err(syntax_diagnostic(prov, &e)),
        Err(ParseError::Rule(p)) => {
            // Read again (as serde_json reads it) only to name the record in the diagnostic.
            let value = serde_json::from_slice::<Value>(&rec.bytes).ok();
            let id = value
                .as_ref()
                .and_then(|v| v.get("id"))
                .and_then(Value::as_str);
            Err(Box::new(Diagnostic::error(
                prov, id, p.pointer, p.rule, p.message,
            )))
        }
    }
}

/// Why a record's bytes at `prov` are not JSON, as `serde_json` said (`e`).
fn syntax_diagnostic(prov: &Provenance, e: &serde_json::Error) -> Box<Diagnostic> {
    let text = e.to_string();
    let what = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(w, _)| w);
    let (rule, hint) = if what.contains("recursion limit") {
        ("json-depth", " (nesting deeper than 128 levels)")
    } else if what.contains("unicode") || what.contains("UTF-8") {
        ("json-encoding", " (input must be UTF-8)")
    } else if e.is_eof() {
        ("json-truncated", "")
    } else {
        ("json-syntax", "")
    };
    let mut d = Diagnostic::error(
        prov,
        None,
        "",
        rule,
        format!("{what}{hint} at column {}", e.column()),
    );
    d.line = prov.line + (e.line() as u64).saturating_sub(1);
    Box::new(d)
}

/// Checks one record as an ADP trajectory of whatever version it declares.
pub fn check_adp(rec: &RawRecord) -> Checked {
    let value = match parse_json(rec) {
        Ok(v) => v,
        Err(d) => return Checked::invalid(vec![*d]),
    };
    check_adp_value(&rec.provenance, value)
}

/// Checks a parsed JSON value as an ADP trajectory.
pub fn check_adp_value(prov: &Provenance, value: Value) -> Checked {
    let Some(obj) = value.as_object() else {
        return Checked::invalid(vec![Diagnostic::error(
            prov,
            None,
            "",
            "not-an-object",
            format!(
                "a trajectory must be a JSON object, found {}",
                preview(&value)
            ),
        )]);
    };
    let record_id = obj.get("id").and_then(Value::as_str).map(str::to_owned);
    let id = record_id.as_deref();
    let version = match obj.get("schema_version") {
        None => AdpVersion::Unversioned,
        Some(Value::String(s)) => match AdpVersion::from_schema_version(Some(s)) {
            Ok(v) => v,
            Err(e) => {
                return Checked::invalid(vec![Diagnostic::error(
                    prov,
                    id,
                    "/schema_version",
                    "schema-version",
                    e.to_string(),
                )])
            }
        },
        Some(other) => {
            return Checked::invalid(vec![Diagnostic::error(
                prov,
                id,
                "/schema_version",
                "schema-version",
                format!(
                    "schema_version must be a string such as \"1.5.0\", found {}",
                    preview(other)
                ),
            )])
        }
    };
    let validator = adp_validator(version);
    if !validator.is_valid(&value) {
        let diagnostics = validator
            .iter_errors(&value)
            .map(|e| schema_diagnostic(prov, id, &format!("ADP {version}"), &e))
            .collect();
        return Checked::invalid(diagnostics);
    }
    let trajectory: Trajectory = match serde_json::from_value(value) {
        Ok(t) => t,
        Err(e) => {
            return Checked::invalid(vec![Diagnostic::error(
                prov,
                id,
                "",
                "model",
                format!("passes the schema but does not decode: {e}"),
            )])
        }
    };
    let diagnostics: Vec<Diagnostic> = rules::check(&trajectory, version)
        .into_iter()
        .map(|v| Diagnostic::error(prov, id, v.pointer, v.rule, v.message))
        .collect();
    if diagnostics.is_empty() {
        Checked {
            trajectory: Some((trajectory, version)),
            diagnostics,
        }
    } else {
        Checked::invalid(diagnostics)
    }
}

/// Upgrades `traj` to `opts.target` and checks the semantic rules of that version; the
/// diagnostics say why it cannot be written.
pub fn upgrade_checked(
    traj: &mut Trajectory,
    prov: &Provenance,
    opts: &UpgradeOptions,
) -> Result<(), Vec<Diagnostic>> {
    let mut violations = upgrade(traj, opts);
    if violations.is_empty() {
        violations = rules::check(traj, opts.target);
    }
    if violations.is_empty() {
        return Ok(());
    }
    Err(violations
        .into_iter()
        .map(|v| Diagnostic::error(prov, Some(&traj.id), v.pointer, v.rule, v.message))
        .collect())
}

/// Checks one record against a raw format's JSON Schema (strict, or with the format's
/// documented leniencies), returning the parsed value when it conforms.
pub fn check_raw(
    rec: &RawRecord,
    schema: &RawSchema,
    lenient: bool,
) -> Result<Value, Vec<Diagnostic>> {
    let value = parse_json(rec).map_err(|d| vec![*d])?;
    let id = value.get(schema.id_key).and_then(Value::as_str);
    check_raw_value(&rec.provenance, id, &value, schema, lenient)?;
    Ok(value)
}

/// Checks a parsed value (a record, or a part of one that is a unit of the format, such as one
/// event of a stream) against a raw format's `schema`; the diagnostics name `prov` and `id`,
/// and point into `value`.
pub fn check_raw_value(
    prov: &Provenance,
    id: Option<&str>,
    value: &Value,
    schema: &RawSchema,
    lenient: bool,
) -> Result<(), Vec<Diagnostic>> {
    let validator = schema.validator(lenient);
    if validator.is_valid(value) {
        return Ok(());
    }
    let name = format!("the {} schema", schema.format);
    Err(validator
        .iter_errors(value)
        .map(|e| schema_diagnostic(prov, id, &name, &e))
        .collect())
}

/// [`check_raw`] for converters that read records as [`Node`]s. A record the compiled checks of
/// the schema accept ([`RawSchema::shapes`]) is read straight from its bytes; any other goes
/// through `check_raw`, so an invalid record gets the schema's diagnostics, and a valid one is
/// read from the value `check_raw` parsed, kept in `slow`.
pub fn check_raw_node<'a>(
    rec: &'a RawRecord,
    schema: &RawSchema,
    lenient: bool,
    slow: &'a mut Option<Value>,
) -> Result<Node<'a>, Vec<Diagnostic>> {
    let fast = match (&rec.error, schema.shapes(lenient)) {
        (None, Some(shapes)) => shapes.parse(&rec.bytes),
        _ => None,
    };
    match fast {
        Some(node) => Ok(node),
        None => Ok(Node::from_value(
            slow.insert(check_raw(rec, schema, lenient)?),
        )),
    }
}

/// [`parse_json`] for converters that read records as [`Node`]s: straight from the bytes, or
/// from the value `parse_json` gives, kept in `slow`, when they do not read so (text that is not
/// JSON, a duplicate key or an integer past 64 bits: diagnosed there).
pub fn parse_node<'a>(
    rec: &'a RawRecord,
    slow: &'a mut Option<Value>,
) -> Result<Node<'a>, Box<Diagnostic>> {
    let fast = match &rec.error {
        None => Shapes::any().parse(&rec.bytes),
        Some(_) => None,
    };
    match fast {
        Some(node) => Ok(node),
        None => Ok(Node::from_value(slow.insert(parse_json(rec)?))),
    }
}

/// The problems of `value` under a raw format's `schema`, as `pointer: message` lines (empty
/// when it conforms), for readers that check parts of an input before framing records.
pub fn raw_schema_problems(value: &Value, schema: &RawSchema, lenient: bool) -> Vec<String> {
    let v = schema.validator(lenient);
    if v.is_valid(value) {
        return Vec::new();
    }
    v.iter_errors(value)
        .map(|e| {
            let pointer = e.instance_path().as_str().to_owned();
            let message = e.masked_with(preview(e.instance())).to_string();
            format!(
                "{}: {message}",
                if pointer.is_empty() { "/" } else { &pointer }
            )
        })
        .collect()
}

/// Turns a JSON Schema error into a diagnostic with a pointer to the offending key where
/// possible and a short preview of the offending value.
fn schema_diagnostic(
    prov: &Provenance,
    id: Option<&str>,
    schema_name: &str,
    e: &ValidationError<'_>,
) -> Diagnostic {
    let mut pointer = e.instance_path().as_str().to_owned();
    let rule = format!("schema-{}", e.kind().keyword());
    let message = match e.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            if let [key] = unexpected.as_slice() {
                pointer.push('/');
                pointer.push_str(&escape_pointer(key));
            }
            format!("unknown key(s) {unexpected:?}: {schema_name} does not define them here")
        }
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            pointer.push('/');
            pointer.push_str(&escape_pointer(name));
            format!("required key {name:?} is missing")
        }
        _ => e.masked_with(preview(e.instance())).to_string(),
    };
    Diagnostic::error(prov, id, pointer, rule, message)
}

/// A short rendering of a JSON value for messages.
pub fn preview(value: &Value) -> String {
    const MAX: usize = 60;
    let text = value.to_string();
    if text.chars().count() <= MAX {
        text
    } else {
        let cut: String = text.chars().take(MAX).collect();
        format!("{cut}…")
    }
}

//! Diagnostics: one located, named problem with a record.

use std::sync::Arc;

use serde::Serialize;

use crate::ingest::Provenance;

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; the record is still valid.
    Warning,
    /// The record is invalid.
    Error,
}

impl Severity {
    /// The name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One problem with one record, located by file, line and JSON pointer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnostic {
    /// Input path (`-` for stdin).
    pub file: Arc<str>,
    /// 1-based line: where the problem is when known (JSON syntax errors), else where the record
    /// starts.
    pub line: u64,
    /// 0-based index of the record in its input.
    pub index: u64,
    /// The record's `id`, when it has a readable one.
    pub record_id: Option<String>,
    /// JSON pointer (RFC 6901) into the record; empty for the whole record.
    pub pointer: String,
    /// Stable rule name (`json-syntax`, `schema-required`, `link-dangling`, ...).
    pub rule: String,
    /// Readable explanation.
    pub message: String,
    /// Error or warning.
    pub severity: Severity,
}

impl Diagnostic {
    /// An error diagnostic for the record at `prov`.
    pub fn error(
        prov: &Provenance,
        record_id: Option<&str>,
        pointer: impl Into<String>,
        rule: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Diagnostic {
            file: prov.file.clone(),
            line: prov.line,
            index: prov.index,
            record_id: record_id.map(str::to_owned),
            pointer: pointer.into(),
            rule: rule.into(),
            message: message.into(),
            severity: Severity::Error,
        }
    }

    /// A warning diagnostic for the record at `prov` (the record is still converted or valid).
    pub fn warning(
        prov: &Provenance,
        record_id: Option<&str>,
        pointer: impl Into<String>,
        rule: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(prov, record_id, pointer, rule, message)
        }
    }
}

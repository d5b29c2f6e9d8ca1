//! The rejects file: every record that could not be processed, with why. Nothing is lost: a
//! record that parses as JSON is kept as JSON, anything else as its text (or hex bytes when it
//! is not UTF-8).

use std::borrow::Cow;

use std::io::{self, Write};
use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use crate::engine::output::Output;
use crate::ingest::RawRecord;
use crate::validate::report::Reporter;
use crate::validate::Diagnostic;

/// One line of the rejects file.
#[derive(Serialize)]
struct RejectLine<'a> {
    file: &'a str,
    line: u64,
    index: u64,
    record_id: Option<&'a str>,
    stage: &'a str,
    diagnostics: Vec<RejectDiagnostic<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    record: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_hex: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    raw_is_preview: bool,
}

#[derive(Serialize)]
struct RejectDiagnostic<'a> {
    line: u64,
    pointer: &'a str,
    rule: &'a str,
    message: &'a str,
    severity: &'static str,
}

/// What a run hides in the records and diagnostics it rejects (a redacting run: what its rules
/// find, replaced by placeholders), so the rejects file holds nothing the outputs do not.
pub trait Mask: Send + Sync {
    /// Masks every string and member name of a JSON record.
    fn mask_value(&self, value: &mut Value);
    /// Masks a record's text.
    fn mask_text<'t>(&self, text: &'t str) -> Cow<'t, str>;
    /// `diagnostics` as they may be shown.
    fn mask_diagnostics(&self, diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic>;
}

/// Writes rejected records as JSON lines.
pub struct RejectsWriter {
    out: Output,
    /// Masks each record and diagnostic written (a redacting run).
    mask: Option<Box<dyn Mask>>,
    /// Whether the mask leaves the records as they were read (masking their diagnostics only).
    records_as_read: bool,
}

/// Reports a rejected record: its diagnostics to `reporter`, and the record with them to
/// `rejects` when there is a rejects file.
pub fn reject(
    reporter: &mut dyn Reporter,
    rejects: Option<&mut RejectsWriter>,
    record: &RawRecord,
    stage: &str,
    diagnostics: &[Diagnostic],
) -> io::Result<()> {
    for d in diagnostics {
        reporter.diagnostic(d)?;
    }
    match rejects {
        Some(r) => r.write(record, stage, diagnostics),
        None => Ok(()),
    }
}

impl RejectsWriter {
    /// Opens the rejects file (`-` is stdout).
    pub fn create(path: &str) -> io::Result<RejectsWriter> {
        Ok(RejectsWriter {
            out: Output::create(path)?,
            mask: None,
            records_as_read: false,
        })
    }

    /// Opens the rejects file of a run that can be resumed: a file target is written under the
    /// fixed name `PATH.partial`, keeping its first `keep` bytes (see [`Output`]); stdout and
    /// devices are opened as by [`RejectsWriter::create`].
    pub fn resumable(path: &str, keep: u64) -> io::Result<RejectsWriter> {
        Ok(RejectsWriter {
            out: Output::resumable(path, keep)?,
            mask: None,
            records_as_read: false,
        })
    }

    /// This writer, masking with `mask` each record written (every string and member name of
    /// a JSON record, the text of any other) and its diagnostics: the rejects of a redacting
    /// run hold no secret its outputs do not.
    pub fn masked(self, mask: Box<dyn Mask>) -> RejectsWriter {
        RejectsWriter {
            mask: Some(mask),
            ..self
        }
    }

    /// This writer, writing each record as it was read: a mask it has (or is given) masks the
    /// diagnostics only (for a rejects file meant to show what the mask hides).
    pub fn records_as_read(self) -> RejectsWriter {
        RejectsWriter {
            records_as_read: true,
            ..self
        }
    }

    /// Flushes and syncs what was written; its length, or `None` when the rejects go to
    /// stdout or a device.
    pub fn checkpoint(&mut self) -> io::Result<Option<u64>> {
        self.out.checkpoint()
    }

    /// Records `record` as rejected at `stage` because of `diagnostics`.
    pub fn write(
        &mut self,
        record: &RawRecord,
        stage: &str,
        diagnostics: &[Diagnostic],
    ) -> io::Result<()> {
        let prov = &record.provenance;
        let preview = record.error.is_some();
        let mut parsed = if preview {
            None
        } else {
            serde_json::from_slice::<Value>(&record.bytes).ok()
        };
        let mut text = match &parsed {
            Some(_) => None,
            None => std::str::from_utf8(&record.bytes).ok().map(Cow::Borrowed),
        };
        let masked;
        let diagnostics = match &self.mask {
            Some(mask) if self.records_as_read => {
                masked = mask.mask_diagnostics(diagnostics.to_vec());
                &masked[..]
            }
            Some(mask) => {
                if let Some(v) = &mut parsed {
                    mask.mask_value(v);
                }
                if parsed.is_none() {
                    // Bytes that are not UTF-8 are shown as text too (lossily): no rule could
                    // read them as hex.
                    let lossy = String::from_utf8_lossy(&record.bytes);
                    text = Some(Cow::Owned(mask.mask_text(&lossy).into_owned()));
                }
                masked = mask.mask_diagnostics(diagnostics.to_vec());
                &masked[..]
            }
            None => diagnostics,
        };
        let hex = (parsed.is_none() && text.is_none()).then(|| {
            record
                .bytes
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        });
        let line = RejectLine {
            file: &prov.file,
            line: prov.line,
            index: prov.index,
            record_id: diagnostics.iter().find_map(|d| d.record_id.as_deref()),
            stage,
            diagnostics: diagnostics
                .iter()
                .map(|d| RejectDiagnostic {
                    line: d.line,
                    pointer: &d.pointer,
                    rule: &d.rule,
                    message: &d.message,
                    severity: d.severity.as_str(),
                })
                .collect(),
            record: parsed,
            raw: text.as_deref(),
            raw_hex: hex,
            raw_is_preview: preview,
        };
        serde_json::to_writer(&mut self.out, &line)?;
        self.out.write_all(b"\n")
    }

    /// Completes the file.
    pub fn finish(self) -> io::Result<()> {
        self.out.finish()
    }

    /// Flushes and syncs the file, and hands back its temporary name and target for the caller
    /// to rename ([`Output::into_pending`]); `None` for stdout and devices.
    pub fn into_pending(self) -> io::Result<Option<(PathBuf, PathBuf)>> {
        self.out.into_pending()
    }
}

//! Reporters: how diagnostics are shown (`--report human|json|junit|github|sarif`).

mod github;
mod human;
mod json;
mod junit;
mod sarif;

use std::io::{self, Write};
use std::str::FromStr;
use std::sync::Arc;

use super::diagnostic::Diagnostic;

/// Counts of one input, for reporters that group by file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileCounts {
    /// Input path.
    pub file: Arc<str>,
    /// Records read.
    pub records: u64,
    /// Records with at least one error.
    pub invalid: u64,
}

/// The outcome of a validation run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ValidationSummary {
    /// Per input, in the order read.
    pub files: Vec<FileCounts>,
    /// Records read.
    pub records: u64,
    /// Records without errors.
    pub valid: u64,
    /// Records with errors.
    pub invalid: u64,
    /// Diagnostics reported.
    pub diagnostics: u64,
    /// True when `--max-errors` stopped the run before the end of the input.
    pub stopped_early: bool,
}

impl ValidationSummary {
    /// Counts one record of the current input: flagged (with errors, or findings) or not, and
    /// the number of diagnostics reported for it.
    pub fn count_record(&mut self, flagged: bool, diagnostics: usize) {
        self.records += 1;
        if let Some(f) = self.files.last_mut() {
            f.records += 1;
            f.invalid += u64::from(flagged);
        }
        if flagged {
            self.invalid += 1;
        } else {
            self.valid += 1;
        }
        self.diagnostics += diagnostics as u64;
    }

    /// Whether the run failed (exit 1 of `validate` and `redact --scan`): a record was flagged,
    /// or `--max-errors` stopped it early.
    pub fn failed(&self) -> bool {
        self.invalid > 0 || self.stopped_early
    }
}

/// Receives diagnostics as they are found, then the summary.
pub trait Reporter: Send {
    /// One diagnostic, in input order.
    fn diagnostic(&mut self, d: &Diagnostic) -> io::Result<()>;
    /// The end of the run.
    fn finish(&mut self, summary: &ValidationSummary) -> io::Result<()>;
}

/// The report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    /// `file:line: error[rule] id pointer: message`, one per line.
    Human,
    /// One JSON object per diagnostic per line.
    Json,
    /// JUnit XML: a test suite per input, a failed test case per invalid record.
    Junit,
    /// GitHub Actions workflow commands (`::error file=…,line=…::…`).
    Github,
    /// SARIF 2.1.0, for code-scanning dashboards.
    Sarif,
}

impl FromStr for ReportFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "human" => ReportFormat::Human,
            "json" => ReportFormat::Json,
            "junit" => ReportFormat::Junit,
            "github" => ReportFormat::Github,
            "sarif" => ReportFormat::Sarif,
            other => {
                return Err(format!(
                    "unknown report format {other:?} (expected human, json, junit, github or sarif)"
                ))
            }
        })
    }
}

/// Builds the reporter for `format` writing to `out`.
pub fn reporter(format: ReportFormat, out: Box<dyn Write + Send>) -> Box<dyn Reporter> {
    match format {
        ReportFormat::Human => Box::new(human::Human::new(out)),
        ReportFormat::Json => Box::new(json::JsonLines::new(out)),
        ReportFormat::Junit => Box::new(junit::Junit::new(out)),
        ReportFormat::Github => Box::new(github::Github::new(out)),
        ReportFormat::Sarif => Box::new(sarif::Sarif::new(out)),
    }
}

/// `id=… ` prefix and pointer rendering shared by the line-oriented reporters.
fn locus(d: &Diagnostic) -> String {
    let mut s = String::new();
    if let Some(id) = &d.record_id {
        s.push_str(&format!("id={id:?} "));
    }
    s.push_str(if d.pointer.is_empty() {
        "/"
    } else {
        &d.pointer
    });
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::diagnostic::Severity;

    pub(super) fn sample() -> (Diagnostic, ValidationSummary) {
        let d = Diagnostic {
            file: "data/a,b.jsonl".into(),
            line: 7,
            index: 3,
            record_id: Some("t<1>".into()),
            pointer: "/content/2/source".into(),
            rule: "schema-enum".into(),
            message: "\"bot\" is not one of [\"user\"]\nsecond line & more".into(),
            severity: Severity::Error,
        };
        let s = ValidationSummary {
            files: vec![FileCounts {
                file: "data/a,b.jsonl".into(),
                records: 10,
                invalid: 1,
            }],
            records: 10,
            valid: 9,
            invalid: 1,
            diagnostics: 1,
            stopped_early: false,
        };
        (d, s)
    }

    pub(super) fn render(format: ReportFormat) -> String {
        let (d, s) = sample();
        let buf = SharedBuf::default();
        let mut r = reporter(format, Box::new(buf.clone()));
        r.diagnostic(&d).expect("write");
        r.finish(&s).expect("finish");
        drop(r);
        let bytes = buf.0.lock().expect("lock").clone();
        String::from_utf8(bytes).expect("utf-8")
    }

    #[derive(Clone, Default)]
    pub(super) struct SharedBuf(pub(super) std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for SharedBuf {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn parses_format_names() {
        assert_eq!("sarif".parse::<ReportFormat>(), Ok(ReportFormat::Sarif));
        assert!("xml".parse::<ReportFormat>().is_err());
    }
}

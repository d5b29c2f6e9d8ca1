//! `validate` over whole inputs: check every record, report diagnostics, keep counts.

use std::io;
use std::sync::Arc;

use crate::config::ConfigError;
use crate::engine::pipeline::{self, Flow, PipelineError, Progress, RunOptions, Sink};
use crate::engine::rejects::RejectsWriter;
use crate::formats::{raw_schema, raw_schemas, spec};
use crate::ingest::RawRecord;
use crate::validate::check::{check_adp, check_raw};
use crate::validate::diagnostic::{Diagnostic, Severity};
use crate::validate::report::{FileCounts, Reporter, ValidationSummary};
use crate::validate::schemas::RawSchema;

/// What records are validated as.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Target {
    /// ADP trajectories of any version.
    #[default]
    Adp,
    /// A raw input format with a schema in `schemas/raw/`.
    Raw {
        /// The format's schema.
        schema: &'static RawSchema,
        /// Apply the format's documented leniencies.
        lenient: bool,
    },
}

impl Target {
    /// The target named `name`: `adp`, or a raw input format's schema (by the format's name),
    /// with its leniencies when `lenient`. `converter-spec` is [`validate_specs`]'s.
    pub fn named(name: &str, lenient: bool) -> Result<Target, ConfigError> {
        if name == "adp" {
            return Ok(Target::Adp);
        }
        match raw_schema(name) {
            Some(schema) => Ok(Target::Raw { schema, lenient }),
            None => {
                let known: Vec<&str> = raw_schemas().map(|s| s.format).collect();
                Err(ConfigError::Invalid(format!(
                    "no schema for {name:?} (supported: adp, converter-spec, {})",
                    known.join(", ")
                )))
            }
        }
    }
}

/// Loads each declarative converter spec in `files` as `convert --spec` would, and reports
/// every problem to `report` (a spec counts as one record, valid or not).
pub fn validate_specs(
    files: &[String],
    report: &mut dyn Reporter,
) -> io::Result<ValidationSummary> {
    let mut summary = ValidationSummary::default();
    for (index, file) in files.iter().enumerate() {
        let errors = spec::load_file(file).err().unwrap_or_default();
        for e in &errors {
            report.diagnostic(&Diagnostic {
                file: Arc::from(e.file.as_str()),
                line: e.line as u64,
                index: index as u64,
                record_id: None,
                pointer: e.pointer.clone(),
                rule: "converter-spec".into(),
                message: e.message.clone(),
                severity: Severity::Error,
            })?;
        }
        let invalid = u64::from(!errors.is_empty());
        summary.files.push(FileCounts {
            file: Arc::from(file.as_str()),
            records: 1,
            invalid,
        });
        summary.records += 1;
        summary.invalid += invalid;
        summary.valid += 1 - invalid;
        summary.diagnostics += errors.len() as u64;
    }
    report.finish(&summary)?;
    Ok(summary)
}

/// The summary line `trajkit validate` prints; `speed` is how fast the inputs were read.
pub fn summary_line(summary: &ValidationSummary, speed: &str) -> String {
    let s = summary;
    let stopped = if s.stopped_early {
        " (stopped early: --max-errors reached)"
    } else {
        ""
    };
    format!(
        "validate: {} records, {} valid, {} invalid{stopped}; {speed}",
        s.records, s.valid, s.invalid
    )
}

/// The summary line of `trajkit validate --schema converter-spec`.
pub fn specs_line(summary: &ValidationSummary) -> String {
    let s = summary;
    format!(
        "validate: {} converter specs, {} valid, {} invalid",
        s.records, s.valid, s.invalid
    )
}

/// Options of [`validate_inputs`].
#[derive(Debug, Clone, Default)]
pub struct ValidateOptions {
    /// What to validate against.
    pub target: Target,
    /// Stop after this many error diagnostics.
    pub max_errors: Option<u64>,
    /// Runner options.
    pub run: RunOptions,
}

struct ValidateSink {
    reporter: Box<dyn Reporter>,
    rejects: Option<RejectsWriter>,
    summary: ValidationSummary,
    max_errors: Option<u64>,
    errors: u64,
}

impl Sink for ValidateSink {
    type Item = Vec<Diagnostic>;

    fn start_input(&mut self, path: &Arc<str>) -> io::Result<()> {
        self.summary.files.push(FileCounts {
            file: path.clone(),
            records: 0,
            invalid: 0,
        });
        Ok(())
    }

    fn accept(&mut self, record: RawRecord, diagnostics: Vec<Diagnostic>) -> io::Result<Flow> {
        let invalid = diagnostics.iter().any(|d| d.severity == Severity::Error);
        self.summary.count_record(invalid, diagnostics.len());
        for d in &diagnostics {
            self.reporter.diagnostic(d)?;
        }
        if invalid {
            if let Some(r) = &mut self.rejects {
                r.write(&record, "validate", &diagnostics)?;
            }
        }
        self.errors += diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count() as u64;
        if self.max_errors.is_some_and(|max| self.errors >= max) {
            self.summary.stopped_early = true;
            return Ok(Flow::Stop);
        }
        Ok(Flow::Continue)
    }
}

/// Validates every record of `inputs` as ADP, reporting each diagnostic to `reporter` and each
/// invalid record to `rejects`.
pub fn validate_inputs(
    inputs: &[String],
    opts: &ValidateOptions,
    progress: &dyn Progress,
    reporter: Box<dyn Reporter>,
    rejects: Option<RejectsWriter>,
) -> Result<ValidationSummary, PipelineError> {
    let sink = ValidateSink {
        reporter,
        rejects,
        summary: ValidationSummary::default(),
        max_errors: opts.max_errors,
        errors: 0,
    };
    let (mut sink, _) = pipeline::run(
        inputs,
        &opts.run,
        progress,
        |r| match &opts.target {
            Target::Adp => check_adp(r).diagnostics,
            Target::Raw { schema, lenient } => {
                check_raw(r, schema, *lenient).err().unwrap_or_default()
            }
        },
        sink,
    )?;
    sink.reporter
        .finish(&sink.summary)
        .map_err(PipelineError::Write)?;
    if let Some(r) = sink.rejects {
        r.finish().map_err(PipelineError::Write)?;
    }
    Ok(sink.summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_line_says_when_max_errors_stopped_the_run() {
        let mut s = ValidationSummary {
            records: 3,
            valid: 2,
            invalid: 1,
            ..ValidationSummary::default()
        };
        assert_eq!(
            summary_line(&s, "1 MB"),
            "validate: 3 records, 2 valid, 1 invalid; 1 MB"
        );
        assert_eq!(
            specs_line(&s),
            "validate: 3 converter specs, 2 valid, 1 invalid"
        );
        assert!(s.failed());
        s.invalid = 0;
        assert!(!s.failed());
        s.stopped_early = true;
        assert!(s.failed(), "--max-errors stopped it");
        s.invalid = 1;
        assert_eq!(
            summary_line(&s, "1 MB"),
            "validate: 3 records, 2 valid, 1 invalid (stopped early: --max-errors reached); 1 MB"
        );
    }
}

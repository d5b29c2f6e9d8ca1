//! `redact`: every trajectory of the inputs with its secrets and personal data replaced by
//! placeholders, into one JSON-lines output; `redact --scan`: what would be replaced,
//! reported without writing anything.

use std::fmt::Write as _;
use std::io;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::run::{run_plan, Output, Plan, RunError, Source, Unread};
use crate::convert::ConvertOptions;
use crate::engine::pipeline::{self, Flow, PipelineError, Progress, RunOptions, Sink};
use crate::engine::rejects::RejectsWriter;
use crate::engine::stage::{Note, Ordered, Outputs, Stage, Step};
use crate::ingest::{Provenance, RawRecord};
use crate::model::upgrade::UpgradeOptions;
use crate::model::Trajectory;
use crate::redact::{scan_record, Redaction, Redactor, RuleCount, Scanner};
use crate::validate::report::{FileCounts, Reporter, ValidationSummary};

/// Options of [`redact_inputs`].
#[derive(Debug, Clone, Default)]
pub struct RedactRunOptions {
    /// The ADP version written.
    pub upgrade: UpgradeOptions,
    /// Runner options.
    pub run: RunOptions,
}

/// Counts of a redaction: `records == written + filtered + rejected`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedactSummary {
    /// Trajectory records read.
    pub records: u64,
    /// Trajectories written.
    pub written: u64,
    /// Trajectories not written by choice (none: redaction filters nothing; kept for the
    /// accounting every stage reports).
    pub filtered: u64,
    /// Records rejected (invalid ADP, `redaction-residual`).
    pub rejected: u64,
    /// Written trajectories in which something was replaced.
    pub redacted: u64,
    /// Replacements per rule, in rule order, rules that found nothing left out.
    pub rules: Vec<RuleCount>,
    /// Inputs that held no records.
    pub empty_inputs: Vec<String>,
}

impl RedactSummary {
    /// Replacements in all.
    pub fn replacements(&self) -> u64 {
        self.rules.iter().map(|r| r.count).sum()
    }

    /// The summary `trajkit redact` prints, a line each: the trajectories (and `speed`, how
    /// fast the inputs were read), then the replacements by rule, if any.
    pub fn lines(&self, speed: &str) -> Vec<String> {
        let s = self;
        let mut out = vec![format!(
            "redact: {} trajectories in, {} written ({} redacted, {} replacements), {} filtered, {} rejected; {}",
            s.records, s.written, s.redacted, s.replacements(), s.filtered, s.rejected, speed
        )];
        if !s.rules.is_empty() {
            let rules: Vec<String> = (s.rules.iter())
                .map(|r| format!("{} {}", r.rule, r.count))
                .collect();
            out.push(format!("redact: by rule: {}", rules.join(", ")));
        }
        out
    }
}

/// The redaction stage as `trajkit redact` runs it: as in a pipeline, except that the rejects
/// file keeps each record as it was read (only its diagnostics masked), for the user to see
/// what was found (docs/redaction.md: keep it as private as the input).
struct RedactAsRead<'a>(&'a Redactor);

impl Stage for RedactAsRead<'_> {
    fn kind(&self) -> &'static str {
        self.0.kind()
    }

    fn apply(&self, traj: &mut Trajectory, prov: &Provenance) -> Step {
        self.0.apply(traj, prov)
    }

    fn ordered(&self) -> Box<dyn Ordered + '_> {
        self.0.ordered()
    }

    fn added_bytes(&self, note: &Note) -> usize {
        self.0.added_bytes(note)
    }

    fn guard(&self, outputs: Outputs) -> Outputs {
        let guarded = self.0.guard(outputs);
        Outputs {
            rejects: guarded.rejects.map(RejectsWriter::records_as_read),
            ..guarded
        }
    }
}

/// Redacts every trajectory of `inputs` (ADP, any version) with `redactor`, writing them to the
/// file `output` (`-`: stdout), rejected records to the file `rejects` and their diagnostics
/// to `reporter` (diagnostics show no text a rule finds): a plan of the redaction stage over
/// ADP records ([`Plan::command`]), on `run`'s runner.
pub fn redact_inputs(
    inputs: &[String],
    redactor: &Redactor,
    opts: &RedactRunOptions,
    progress: &dyn Progress,
    output: &str,
    rejects: Option<&str>,
    reporter: Box<dyn Reporter>,
) -> Result<RedactSummary, RunError> {
    let convert = ConvertOptions {
        upgrade: opts.upgrade.clone(),
        run: opts.run.clone(),
        ..ConvertOptions::default()
    };
    let stage = RedactAsRead(redactor);
    let stages: [&dyn Stage; 1] = [&stage];
    let source = Source::Adp(inputs, Unread::FirstStage);
    let plan = Plan::command(source, &convert, &stages, Output::AdpLines(output));
    let run = run_plan(&plan, progress, rejects, reporter)?;
    let redaction: Redaction = run.sections.get("redaction").unwrap_or_default();
    let c = run.stages.first().cloned().unwrap_or_default();
    Ok(RedactSummary {
        records: c.records_in,
        written: c.written,
        filtered: c.filtered,
        rejected: c.rejected,
        redacted: redaction.redacted,
        rules: redaction.rules,
        empty_inputs: run.empty_inputs,
    })
}

struct ScanSink {
    reporter: Box<dyn Reporter>,
    summary: ValidationSummary,
}

impl Sink for ScanSink {
    type Item = Result<Vec<crate::validate::Diagnostic>, Vec<crate::validate::Diagnostic>>;

    fn start_input(&mut self, path: &Arc<str>) -> io::Result<()> {
        self.summary.files.push(FileCounts {
            file: path.clone(),
            records: 0,
            invalid: 0,
        });
        Ok(())
    }

    fn accept(&mut self, _: RawRecord, item: Self::Item) -> io::Result<Flow> {
        let diagnostics = item.unwrap_or_else(|invalid| invalid);
        self.summary
            .count_record(!diagnostics.is_empty(), diagnostics.len());
        for d in &diagnostics {
            self.reporter.diagnostic(d)?;
        }
        Ok(Flow::Continue)
    }
}

/// The summary line `trajkit redact --scan` prints; `speed` is how fast the inputs were read.
pub fn scan_line(summary: &ValidationSummary, speed: &str) -> String {
    let s = summary;
    format!(
        "redact --scan: {} records, {} clean, {} with findings or not ADP, {} findings; {speed}",
        s.records, s.valid, s.invalid, s.diagnostics
    )
}

/// `trajkit redact --list-rules`: a line per rule of `scanner` (name, kind, what it finds).
pub fn rule_list(scanner: &Scanner) -> String {
    let mut out = String::new();
    for r in scanner.rules() {
        let _ = writeln!(out, "{:<28} {:<7} {}", r.name, r.kind.prefix(), r.help);
    }
    out
}

/// Scans every trajectory of `inputs` and reports each finding to `reporter` (file, line, id,
/// pointer, rule; never the text found), and records that are not valid ADP with their
/// diagnostics. The summary counts as `invalid` the records with a finding or not ADP.
pub fn scan_inputs(
    inputs: &[String],
    scanner: &Scanner,
    run: &RunOptions,
    progress: &dyn Progress,
    reporter: Box<dyn Reporter>,
) -> Result<ValidationSummary, PipelineError> {
    let sink = ScanSink {
        reporter,
        summary: ValidationSummary::default(),
    };
    let (mut sink, _) = pipeline::run(inputs, run, progress, |r| scan_record(scanner, r), sink)?;
    sink.reporter
        .finish(&sink.summary)
        .map_err(PipelineError::Write)?;
    Ok(sink.summary)
}

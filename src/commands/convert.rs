//! `convert`: every record of each input through its format's converter, into one JSON-lines
//! output, with the rejected records and their diagnostics.

use std::collections::HashMap;
use std::io::{self, Write};

use crate::convert::{convert_record, ConvertOptions, Converted, Converter};
use crate::engine::output::Output;
use crate::engine::pipeline::{self, empty_inputs, Flow, PipelineError, Progress, Sink};
use crate::engine::rejects::{commit_outputs, reject, RejectsWriter};
use crate::ingest::RawRecord;
use crate::validate::report::Reporter;
use crate::validate::Diagnostic;

/// Counts of a conversion: `records == written_records + rejected`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConvertSummary {
    /// Input records read.
    pub records: u64,
    /// Input records converted and written.
    pub written_records: u64,
    /// Trajectories written (a record may yield several).
    pub trajectories: u64,
    /// Input records rejected.
    pub rejected: u64,
    /// Inputs that held no records.
    pub empty_inputs: Vec<String>,
}

struct ConvertSink {
    output: Output,
    rejects: Option<RejectsWriter>,
    reporter: Box<dyn Reporter>,
    summary: ConvertSummary,
}

impl Sink for ConvertSink {
    type Item = Converted;

    fn accept(&mut self, record: RawRecord, item: Converted) -> io::Result<Flow> {
        self.summary.records += 1;
        match item {
            Converted::Written(bytes, n, warnings) => {
                for w in &warnings {
                    self.reporter.diagnostic(w)?;
                }
                self.output.write_all(&bytes)?;
                self.summary.written_records += 1;
                self.summary.trajectories += n;
            }
            Converted::Rejected(diagnostics) => {
                self.summary.rejected += 1;
                reject(
                    self.reporter.as_mut(),
                    self.rejects.as_mut(),
                    &record,
                    "convert",
                    &diagnostics,
                )?;
            }
        }
        Ok(Flow::Continue)
    }
}

/// Converts every record of each input with its converter (`plan` pairs inputs with
/// converters, in order), writing trajectories to `output`, rejected records to `rejects`, and
/// their diagnostics to `reporter`.
pub fn convert_inputs(
    plan: &[(String, &'static dyn Converter)],
    opts: &ConvertOptions,
    progress: &dyn Progress,
    output: Output,
    rejects: Option<RejectsWriter>,
    reporter: Box<dyn Reporter>,
) -> Result<ConvertSummary, PipelineError> {
    let sink = ConvertSink {
        output,
        rejects,
        reporter,
        summary: ConvertSummary::default(),
    };
    let inputs: Vec<String> = plan.iter().map(|(path, _)| path.clone()).collect();
    let opts = &ConvertOptions {
        inputs: std::sync::Arc::new(inputs.clone()),
        ..opts.clone()
    };
    let by_path: HashMap<&str, &dyn Converter> =
        plan.iter().map(|(path, c)| (path.as_str(), *c)).collect();
    let sources = |path: &str| by_path.get(path).and_then(|c| c.open_source(path, opts));
    let (mut sink, inputs_read) = pipeline::run_with_sources(
        &inputs,
        &sources,
        &opts.run,
        progress,
        |r| match by_path.get(r.provenance.input.as_ref()) {
            Some(converter) => convert_record(*converter, r, opts),
            None => Converted::Rejected(vec![Diagnostic::error(
                &r.provenance,
                None,
                "",
                "no-converter",
                "no converter was chosen for this input",
            )]),
        },
        sink,
    )?;
    let write = |e: io::Error| PipelineError::Write(e);
    sink.reporter.finish(&Default::default()).map_err(write)?;
    commit_outputs(sink.output, sink.rejects).map_err(write)?;
    sink.summary.empty_inputs = empty_inputs(&inputs_read);
    Ok(sink.summary)
}

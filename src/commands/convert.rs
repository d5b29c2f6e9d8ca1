//! `convert`: every record of each input through its format's converter, into one JSON-lines
//! output, with the rejected records and their diagnostics.

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::sync::Arc;

use crate::convert::{
    convert_record, write_renamed, ConvertOptions, Converted, Converter, DuplicateIds, LeftOut,
};
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
    /// Warnings about the run as a whole (a spec pointer that never resolved).
    pub warnings: Vec<String>,
    /// What the readers left out, per input that left something out, in input order.
    pub left_out: Vec<(String, LeftOut)>,
}

impl ConvertSummary {
    /// The summary `trajkit convert` prints, a line each: what each input's readers left out,
    /// then the records (written in ADP `version`; `speed`: how fast the inputs were read).
    pub fn lines(&self, version: &dyn std::fmt::Display, speed: &str) -> Vec<String> {
        let mut out: Vec<String> = (self.left_out.iter())
            .map(|(input, left)| format!("convert: input {input}: {}", left.describe()))
            .collect();
        let warnings = match self.warnings.len() {
            0 => String::new(),
            1 => ", 1 warning".to_owned(),
            n => format!(", {n} warnings"),
        };
        out.push(format!(
            "convert: {} records in, {} written ({} trajectories, ADP {version}), {} rejected{warnings}; {speed}",
            self.records, self.written_records, self.trajectories, self.rejected
        ));
        out
    }
}

/// Adds `left` to the entry of `input` in `per_input` (a summary's `left_out`), unless it is
/// empty.
pub fn add_left_out(per_input: &mut Vec<(String, LeftOut)>, input: &str, left: &LeftOut) {
    if left.is_empty() {
        return;
    }
    match per_input.iter_mut().find(|(i, _)| i == input) {
        Some((_, sum)) => sum.add(left),
        None => per_input.push((input.to_owned(), left.clone())),
    }
}

struct ConvertSink<'a> {
    output: Output,
    rejects: Option<RejectsWriter>,
    reporter: Box<dyn Reporter>,
    summary: ConvertSummary,
    /// The converter of each input, and the options, to write a record again with ids renamed.
    by_path: &'a HashMap<&'a str, &'static dyn Converter>,
    opts: &'a ConvertOptions,
    /// Every trajectory id written by a converter that checks for duplicates, with the file
    /// and line it came from: one entry per distinct id.
    seen: HashMap<String, (Arc<str>, u64)>,
}

impl ConvertSink<'_> {
    /// Writes a record whose trajectories' ids the converter checks (`ids`, in order): as it
    /// is when no id was written before; otherwise rejected, or written again with the
    /// repeated ids numbered, as the converter's policy says.
    fn write_checked(
        &mut self,
        record: &RawRecord,
        bytes: Vec<u8>,
        ids: Vec<String>,
    ) -> io::Result<Result<(), Vec<Diagnostic>>> {
        let converter = self.by_path.get(record.provenance.input.as_ref()).copied();
        let mut mine: HashSet<&str> = HashSet::new();
        let repeated = ids
            .iter()
            .find(|id| self.seen.contains_key(id.as_str()) || !mine.insert(id.as_str()));
        let Some(repeated) = repeated else {
            self.output.write_all(&bytes)?;
            let at = (record.provenance.file.clone(), record.provenance.line);
            for id in ids {
                self.seen.insert(id, at.clone());
            }
            return Ok(Ok(()));
        };
        let policy = converter.and_then(|c| c.duplicate_ids());
        let (Some(converter), Some(DuplicateIds::Suffix)) = (converter, policy) else {
            let first = match self.seen.get(repeated.as_str()) {
                Some((file, line)) => format!("was already written, from {file}:{line}"),
                None => "is made twice by this record".to_owned(),
            };
            return Ok(Err(vec![Diagnostic::error(
                &record.provenance,
                Some(repeated),
                "/id",
                "duplicate-id",
                format!(
                    "trajectory id {repeated:?} {first} (ids must be unique; the spec's \
                     `[record] duplicate_ids = \"suffix\"` numbers repeated ones, \"keep\" \
                     writes them as they are)"
                ),
            )]));
        };
        let at = (record.provenance.file.clone(), record.provenance.line);
        let seen = &mut self.seen;
        let mut out = Vec::with_capacity(bytes.len() + 64);
        let written = write_renamed(converter, record, self.opts, &mut out, |id| {
            let fresh = if seen.contains_key(id) {
                (2u64..)
                    .map(|n| format!("{id}_{n}"))
                    .find(|candidate| !seen.contains_key(candidate))
            } else {
                None
            };
            seen.insert(fresh.clone().unwrap_or_else(|| id.to_owned()), at.clone());
            fresh
        });
        match written {
            Ok(_) => {
                self.output.write_all(&out)?;
                Ok(Ok(()))
            }
            Err(d) => Ok(Err(d)),
        }
    }
}

impl Sink for ConvertSink<'_> {
    type Item = Converted;

    fn accept(&mut self, record: RawRecord, item: Converted) -> io::Result<Flow> {
        self.summary.records += 1;
        let item = match item {
            Converted::Written(bytes, n, warnings, ids, left) if !ids.is_empty() => {
                match self.write_checked(&record, bytes, ids)? {
                    Ok(()) => Converted::Written(Vec::new(), n, warnings, Vec::new(), left),
                    Err(diagnostics) => Converted::Rejected(diagnostics),
                }
            }
            Converted::Written(bytes, n, warnings, ids, left) => {
                self.output.write_all(&bytes)?;
                Converted::Written(Vec::new(), n, warnings, ids, left)
            }
            rejected => rejected,
        };
        match item {
            Converted::Written(_, n, warnings, _, left) => {
                for w in &warnings {
                    self.reporter.diagnostic(w)?;
                }
                add_left_out(&mut self.summary.left_out, &record.provenance.input, &left);
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
    let inputs: Vec<String> = plan.iter().map(|(path, _)| path.clone()).collect();
    let opts = &ConvertOptions {
        inputs: Arc::new(inputs.clone()),
        ..opts.clone()
    };
    let by_path: HashMap<&str, &'static dyn Converter> =
        plan.iter().map(|(path, c)| (path.as_str(), *c)).collect();
    let sink = ConvertSink {
        output,
        rejects,
        reporter,
        summary: ConvertSummary::default(),
        by_path: &by_path,
        opts,
        seen: HashMap::new(),
    };
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
    let mut summary = sink.summary;
    summary.empty_inputs = empty_inputs(&inputs_read);
    let mut asked: Vec<&str> = Vec::new();
    for (_, converter) in plan {
        if !asked.contains(&converter.name()) {
            asked.push(converter.name());
            summary.warnings.extend(converter.run_warnings());
        }
    }
    Ok(summary)
}

//! `convert`: every record of each input through its format's converter, into one JSON-lines
//! output, with the rejected records and their diagnostics: a plan with no stage from the
//! formats to ADP lines ([`Source::Formats`], [`Output::AdpLines`]), on `run`'s runner.

use std::sync::Arc;

use super::run::{run_plan, Output, Plan, RunError, Source};
use crate::convert::{ConvertOptions, Converter, LeftOut};
use crate::engine::pipeline::Progress;
use crate::validate::report::Reporter;

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

/// Converts every record of each input with its converter (`plan` pairs inputs with
/// converters, in order), writing trajectories to the file `output` (`-`: stdout), rejected
/// records to the file `rejects`, and their diagnostics to `reporter`.
pub fn convert_inputs(
    plan: &[(String, &'static dyn Converter)],
    opts: &ConvertOptions,
    progress: &dyn Progress,
    output: &str,
    rejects: Option<&str>,
    reporter: Box<dyn Reporter>,
) -> Result<ConvertSummary, RunError> {
    let inputs: Vec<String> = plan.iter().map(|(path, _)| path.clone()).collect();
    let opts = &ConvertOptions {
        inputs: Arc::new(inputs),
        ..opts.clone()
    };
    let command = Plan::command(Source::Formats(plan), opts, &[], Output::AdpLines(output));
    let run = run_plan(&command, progress, rejects, reporter)?;
    let convert = run.stages.first().cloned().unwrap_or_default();
    let mut summary = ConvertSummary {
        records: run.records,
        written_records: convert.written,
        trajectories: run.trajectories,
        rejected: convert.rejected,
        empty_inputs: run.empty_inputs,
        ..ConvertSummary::default()
    };
    for input in &run.inputs {
        add_left_out(&mut summary.left_out, &input.path, &input.left_out);
    }
    let mut asked: Vec<&str> = Vec::new();
    for (_, converter) in plan {
        if !asked.contains(&converter.name()) {
            asked.push(converter.name());
            summary.warnings.extend(converter.run_warnings());
        }
    }
    Ok(summary)
}

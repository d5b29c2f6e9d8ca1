//! The convert stage: what a format implements to be read ([`Converter`]), and the `convert`
//! runner that converts records, upgrades them to the target version and writes them as JSON
//! lines. The formats themselves are in [`crate::formats`]; nothing here names one.

pub mod options;

pub use options::{FormatOption, FormatOptions, OptionValue};

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;

use serde_json::Value;

use crate::ingest::{Provenance, RawRecord, RecordSource};
use crate::json::Node;
use crate::model::rules;
use crate::model::upgrade::{upgrade, UpgradeOptions};
use crate::model::{AdpVersion, Trajectory};
use crate::output::Output;
use crate::pipeline::{self, Flow, PipelineError, Progress, RunOptions, Sink};
use crate::rejects::{commit_outputs, reject, RejectsWriter};
use crate::validate::check::check_raw_node;
use crate::validate::report::Reporter;
use crate::validate::schemas::RawSchema;
use crate::validate::Diagnostic;

/// Turns raw records of one format into trajectories.
pub trait Converter: Sync {
    /// The name used with `--from`.
    fn name(&self) -> &'static str;
    /// One line about the format.
    fn description(&self) -> &'static str;
    /// True when `first`, the first record of an input, looks like this format (for
    /// `--from auto`). Exactly one converter may claim an input.
    fn sniff(&self, first: &Value) -> bool;
    /// Opens `path` as this format's records when they are not JSON values in a stream (a
    /// directory, a database); `None` (the default) uses the generic JSON framing.
    fn open_source(
        &self,
        _path: &str,
        _opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        None
    }
    /// True when `path` is one input of this format that is not a JSON file: a directory read
    /// as a whole (rather than a folder of files to read one by one), or a database file.
    fn claims_path(&self, _path: &Path) -> bool {
        false
    }
    /// True when the records are ADP trajectories already (ADP files, Parquet exports): they
    /// are passed on as they are, even with no steps, where a reader of another format
    /// refuses to make an empty trajectory ([`converted_checked`]).
    fn reads_adp(&self) -> bool {
        false
    }
    /// The options this format declares (pipeline keys in `[convert]`, `convert` flags).
    fn options(&self) -> &'static [&'static FormatOption] {
        &[]
    }
    /// The JSON Schemas of this format's raw records (`validate --schema NAME`).
    fn raw_schemas(&self) -> &'static [&'static RawSchema] {
        &[]
    }
    /// When ADP trajectories can be written in this format (`convert --to NAME`), the function
    /// that builds one record of it from an ADP 1.5.0 trajectory.
    fn writer(&self) -> Option<fn(&Trajectory) -> Value> {
        None
    }
    /// Converts one record into trajectories, each with the ADP version it is expressed in, or
    /// diagnoses why it cannot; `map` holds the format options.
    fn convert(
        &self,
        record: &RawRecord,
        map: &FormatOptions,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>>;
    /// Converts one record, upgrades its trajectories to `opts.upgrade.target` and appends them
    /// to `out` as JSON lines in the output format `opts.to`, returning how many; on error, what
    /// was appended is to be dropped. The default does [`Converter::convert`],
    /// [`converted_checked`] and [`write_line`]; converters that read records as [`Node`]s write a
    /// [`Partial`] instead.
    fn convert_into(
        &self,
        record: &RawRecord,
        opts: &ConvertOptions,
        out: &mut Vec<u8>,
    ) -> Result<u64, Vec<Diagnostic>> {
        let trajectories = self.convert(record, &opts.mapping)?;
        let count = trajectories.len() as u64;
        for (mut traj, _) in trajectories {
            converted_checked(
                &mut traj,
                &record.provenance,
                &opts.upgrade,
                self.reads_adp(),
            )?;
            write_line(out, &traj, opts.to, &record.provenance).map_err(|d| vec![*d])?;
        }
        Ok(count)
    }
}

/// A format whose records are checked against its raw schema while they are parsed into
/// [`Node`]s, each record making one [`Partial`] (memabra, Reflexion): its converter's
/// [`Converter::convert`] and [`Converter::convert_into`] are [`node_convert`] and
/// [`node_convert_into`].
pub trait NodeFormat {
    /// The raw schema.
    const SCHEMA: &'static RawSchema;
    /// The trajectory of a record the schema accepted.
    fn partial<'a>(node: Node<'a>, record: &RawRecord, map: &FormatOptions) -> Partial<'a>;
}

/// [`Converter::convert`] of a [`NodeFormat`].
pub fn node_convert<F: NodeFormat>(
    record: &RawRecord,
    map: &FormatOptions,
) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
    let mut slow = None;
    let node = check_raw_node(record, F::SCHEMA, true, &mut slow)?;
    Ok(vec![(
        F::partial(node, record, map).into_trajectory(),
        AdpVersion::V1_5,
    )])
}

/// [`Converter::convert_into`] of a [`NodeFormat`].
pub fn node_convert_into<F: NodeFormat>(
    record: &RawRecord,
    opts: &ConvertOptions,
    out: &mut Vec<u8>,
) -> Result<u64, Vec<Diagnostic>> {
    let mut slow = None;
    let node = check_raw_node(record, F::SCHEMA, true, &mut slow)?;
    F::partial(node, record, &opts.mapping).write(&record.provenance, opts, out)
}

/// A trajectory converted from a record read as a [`Node`], whose last `details` entries are
/// still nodes borrowed from the record: the bulk of a structure-heavy record's native data,
/// written as it is rather than turned into values.
pub struct Partial<'a> {
    /// The trajectory, without the entries of `tail`.
    pub trajectory: Trajectory,
    /// Entries that follow those of `trajectory.details`, in order (keys not in it).
    pub tail: Vec<(&'static str, Node<'a>)>,
}

impl Partial<'_> {
    /// The whole trajectory: the tail moved into `details` as values.
    pub fn into_trajectory(self) -> Trajectory {
        let mut traj = self.trajectory;
        for (k, v) in self.tail {
            traj.details.insert(k.to_owned(), v.to_value());
        }
        traj
    }

    /// Upgrades the trajectory and appends it to `out`, as [`Converter::convert_into`] does with
    /// the whole trajectory. The tail is written from its nodes when nothing on the way reads
    /// it: the output is ADP of a version whose details are free-form, and no tail entry is a
    /// string (which `--decode-details` might decode); else the whole trajectory is built.
    pub fn write(
        self,
        prov: &Provenance,
        opts: &ConvertOptions,
        out: &mut Vec<u8>,
    ) -> Result<u64, Vec<Diagnostic>> {
        let as_is = matches!(opts.to, OutputFormat::Adp)
            && opts.upgrade.target.has_free_details()
            && !self.tail.iter().any(|(_, v)| v.as_str().is_some());
        if as_is {
            let mut traj = self.trajectory;
            converted_checked(&mut traj, prov, &opts.upgrade, false)?;
            write_json(out, &traj.with_details_tail(&self.tail), &traj.id, prov)
        } else {
            let mut traj = self.into_trajectory();
            converted_checked(&mut traj, prov, &opts.upgrade, false)?;
            write_line(out, &traj, opts.to, prov)
        }
        .map_err(|d| vec![*d])?;
        Ok(1)
    }
}

/// What `convert` writes.
#[derive(Clone, Copy, Default)]
pub enum OutputFormat {
    /// ADP, in the version of [`UpgradeOptions::target`].
    #[default]
    Adp,
    /// Records of another format, built from ADP 1.5.0 by the format's
    /// [`Converter::writer`] (`convert --to atif`).
    Native(&'static dyn Converter),
}

impl std::fmt::Debug for OutputFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OutputFormat::Adp => f.write_str("Adp"),
            OutputFormat::Native(c) => write!(f, "Native({})", c.name()),
        }
    }
}

/// Options of [`convert_inputs`].
#[derive(Debug, Clone, Default)]
pub struct ConvertOptions {
    /// The output format.
    pub to: OutputFormat,
    /// The version written and what to decode on the way.
    pub upgrade: UpgradeOptions,
    /// Runner options.
    pub run: RunOptions,
    /// The options of the formats (reading and mapping choices).
    pub mapping: FormatOptions,
}

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

/// The result of converting one record.
pub enum Converted {
    /// Serialized JSON lines, one per trajectory.
    Written(Vec<u8>, u64),
    /// Why the record was rejected.
    Rejected(Vec<Diagnostic>),
}

/// Converts one record: the format's conversion, then the upgrade to the target version and its
/// rules, then serialization ([`Converter::convert_into`]).
pub fn convert_record(
    converter: &dyn Converter,
    record: &RawRecord,
    opts: &ConvertOptions,
) -> Converted {
    // Converted records are up to about 1.6 times as large as their input.
    let mut out = Vec::with_capacity(2 * record.bytes.len() + 256);
    match converter.convert_into(record, opts, &mut out) {
        Ok(count) => Converted::Written(out, count),
        Err(d) => Converted::Rejected(d),
    }
}

/// What every stage that converts a record does to each trajectory it makes: refuses one with
/// no id (ADP requires one: a reader must not write what `validate` rejects) or no steps,
/// unless `reads_adp` (a reader never makes an empty trajectory: nothing in it can train, and
/// it usually means the reader met a shape it does not know; ADP read as ADP is passed on as it
/// is, see [`Converter::reads_adp`]), then [`upgrade_checked`].
pub fn converted_checked(
    traj: &mut Trajectory,
    prov: &Provenance,
    opts: &UpgradeOptions,
    reads_adp: bool,
) -> Result<(), Vec<Diagnostic>> {
    if traj.id.is_empty() {
        return Err(vec![Diagnostic::error(
            prov,
            None,
            "/id",
            "missing-id",
            "the record yields an empty trajectory id (ADP requires a non-empty one)",
        )]);
    }
    if traj.content.is_empty() && !reads_adp {
        return Err(vec![Diagnostic::error(
            prov,
            Some(&traj.id),
            "/content",
            "empty-trajectory",
            "the record yields a trajectory with no steps",
        )]);
    }
    upgrade_checked(traj, prov, opts)
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

impl OutputFormat {
    /// The function that builds a record of the output format from a trajectory, or `None`
    /// for ADP (written as it is).
    fn writer(self) -> Option<fn(&Trajectory) -> Value> {
        match self {
            OutputFormat::Adp => None,
            OutputFormat::Native(c) => c.writer(),
        }
    }
}

/// Appends `traj` to `out` as one JSON line in the output format `to`.
pub fn write_line(
    out: &mut Vec<u8>,
    traj: &Trajectory,
    to: OutputFormat,
    prov: &Provenance,
) -> Result<(), Box<Diagnostic>> {
    match to.writer() {
        None => write_json(out, traj, &traj.id, prov),
        Some(native) => write_json(out, &native(traj), &traj.id, prov),
    }
}

/// Appends `value`, the output of trajectory `id`, to `out` as one JSON line.
fn write_json(
    out: &mut Vec<u8>,
    value: &impl serde::Serialize,
    id: &str,
    prov: &Provenance,
) -> Result<(), Box<Diagnostic>> {
    match serde_json::to_writer(&mut *out, value) {
        Ok(()) => {
            out.push(b'\n');
            Ok(())
        }
        Err(e) => Err(Box::new(Diagnostic::error(
            prov,
            Some(id),
            "",
            "serialize",
            e.to_string(),
        ))),
    }
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
            Converted::Written(bytes, n) => {
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

/// The inputs of a run that held no records.
pub fn empty_inputs(counts: &[pipeline::InputCount]) -> Vec<String> {
    counts
        .iter()
        .filter(|c| c.records == 0)
        .map(|c| c.path.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_trajectory_id_is_rejected_before_it_is_written() {
        let prov = Provenance {
            input: "in.jsonl".into(),
            file: "in.jsonl".into(),
            line: 3,
            index: 2,
        };
        let mut traj = Trajectory::new(String::new(), Vec::new(), Default::default());
        let err = converted_checked(&mut traj, &prov, &UpgradeOptions::default(), false)
            .expect_err("an empty id is rejected");
        assert_eq!(err[0].rule, "missing-id");
        assert_eq!(err[0].pointer, "/id");
        assert_eq!(err[0].line, 3);
    }

    #[test]
    fn a_trajectory_with_no_steps_is_rejected_by_conversion() {
        let prov = Provenance {
            input: "in.jsonl".into(),
            file: "in.jsonl".into(),
            line: 4,
            index: 3,
        };
        let mut traj = Trajectory::new("t".into(), Vec::new(), Default::default());
        let err = converted_checked(&mut traj, &prov, &UpgradeOptions::default(), false)
            .expect_err("an empty trajectory is rejected");
        assert!(converted_checked(&mut traj, &prov, &UpgradeOptions::default(), true).is_ok());
        assert_eq!(
            (err[0].rule.as_str(), err[0].pointer.as_str(), err[0].line),
            ("empty-trajectory", "/content", 4)
        );
    }
}

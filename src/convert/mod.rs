//! The convert stage: what a format implements to be read ([`Converter`]), and what is done to
//! each trajectory a format makes: checked, upgraded to the target version, written as a JSON
//! line. The formats themselves are in [`crate::formats`], the `convert` command in
//! [`crate::commands::convert`]; nothing here names a format.

pub mod left_out;
pub mod options;

pub use left_out::LeftOut;
pub use options::{FormatOption, FormatOptions, OptionValue};

use std::io;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::engine::output::write_json;
use crate::engine::pipeline::RunOptions;
use crate::ingest::{Provenance, RawRecord, RecordSource};
use crate::json::Node;
use crate::model::upgrade::UpgradeOptions;
use crate::model::{AdpVersion, Trajectory};
use crate::validate::check::upgrade_checked;
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
    /// Why [`Converter::sniff`] declines `first` when the record comes close to this format
    /// (it has some of the format's fields, but not those that make it the format): a few
    /// words naming what is there and what is missing, such as "lines have `sessionId` but
    /// their `message` has Gemini-style `parts`, not `content`". `--from auto` names the
    /// formats that decline so when no format claims an input. `None` (the default): the
    /// record is nothing like this format, or the format claims it.
    fn decline(&self, _first: &Value) -> Option<String> {
        None
    }
    /// True when `messages`, the messages of a chat every converter of chats would read (an
    /// OpenAI chat to [`Converter::sniff`]), carry marks that are this format's own (an agent's
    /// fence or observation template): the chat is then this format's. None by default.
    fn sniff_chat(&self, _messages: &[Value]) -> bool {
        false
    }
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
    /// as a whole (rather than a folder of files to read one by one), or a database file; or a
    /// JSON file known by the name its agent gives it (Cline's `api_conversation_history.json`).
    fn claims_path(&self, _path: &Path) -> bool {
        false
    }
    /// Why a file met while walking a directory input is not read, when it is one this
    /// format's agent keeps beside a conversation and holds none of its own (Cline's
    /// `ui_messages.json` beside `api_conversation_history.json`); the walk lists it as
    /// skipped. Given as an input itself, the file is read (and refused) as any other.
    fn beside_conversation(&self, _path: &Path) -> Option<&'static str> {
        None
    }
    /// As [`Converter::decline`], for a `path` that [`Converter::claims_path`] declines though
    /// it comes close (a SQLite database of another tool).
    fn decline_path(&self, _path: &Path) -> Option<String> {
        None
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
    /// that builds one record of it from an ADP 1.5.0 trajectory and the format options (which
    /// may choose, for instance, the version written).
    fn writer(&self) -> Option<fn(&Trajectory, &FormatOptions) -> Value> {
        None
    }
    /// How a trajectory whose id an earlier one of the run already has is handled; `None` (the
    /// default) writes it without a check.
    fn duplicate_ids(&self) -> Option<DuplicateIds> {
        None
    }
    /// Warnings about the run as a whole, asked once when a conversion ends (a declarative
    /// spec's pointer that never resolved); none by default.
    fn run_warnings(&self) -> Vec<String> {
        Vec::new()
    }
    /// Warnings about a record this converter converted: something in it deserves a look but
    /// did not stop it (a version of the format newer than those the converter knows). Called
    /// once per converted record by `convert`, which reports them; none by default.
    fn warnings(&self, _record: &RawRecord) -> Vec<Diagnostic> {
        Vec::new()
    }
    /// For a converter that reads records as [`Node`]s: hands each trajectory of one record to
    /// `to`, as a [`Partial`] (ADP 1.5.0) borrowed from the record, or says why the record
    /// makes none (or what `to` returned). `map` holds the format options.
    /// [`Converter::convert`] and [`Converter::convert_into`] are built on it.
    ///
    /// A converter implements this or [`Converter::convert`]; `None` (the default) says it
    /// implements `convert`.
    fn each_partial(
        &self,
        _record: &RawRecord,
        _map: &FormatOptions,
        _to: &mut PartialSink<'_>,
    ) -> Option<Result<(), Vec<Diagnostic>>> {
        None
    }
    /// Converts one record into trajectories, each with the ADP version it is expressed in, or
    /// diagnoses why it cannot; `map` holds the format options. The default makes whole
    /// trajectories of the [`Converter::each_partial`].
    fn convert(
        &self,
        record: &RawRecord,
        map: &FormatOptions,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        let mut out = Vec::new();
        let made = self.each_partial(record, map, &mut |p| {
            out.push((p.into_trajectory(), AdpVersion::V1_5));
            Ok(())
        });
        match made {
            Some(made) => made.map(|()| out),
            None => Err(vec![Diagnostic::error(
                &record.provenance,
                None,
                "",
                "no-converter",
                format!("the {} converter converts no record", self.name()),
            )]),
        }
    }
    /// Converts one record, upgrades its trajectories to `opts.upgrade.target` and appends them
    /// to `out` as JSON lines in the output format `opts.to`, returning how many and what the
    /// reader left out of them; on error, what was appended is to be dropped. The default
    /// writes the [`Converter::each_partial`], or else does [`Converter::convert`],
    /// [`converted_checked`] and [`write_line`].
    fn convert_into(
        &self,
        record: &RawRecord,
        opts: &ConvertOptions,
        out: &mut Vec<u8>,
    ) -> Result<Made, Vec<Diagnostic>> {
        let mut made = Made::default();
        let written = self.each_partial(record, &opts.mapping, &mut |p| {
            if !self.reads_adp() {
                made.note(p.left_out(), &record.provenance, &p.trajectory.id, opts)?;
            }
            made.count += p.write(&record.provenance, opts, out)?;
            Ok(())
        });
        if let Some(written) = written {
            return written.map(|()| made);
        }
        let trajectories = self.convert(record, &opts.mapping)?;
        write_converted(trajectories, self.reads_adp(), record, opts, out, |_| None)
    }
}

/// What [`Converter::each_partial`] hands each trajectory to.
pub type PartialSink<'f> = dyn FnMut(Partial<'_>) -> Result<(), Vec<Diagnostic>> + 'f;

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
    /// What the reader left out of this trajectory (`details.source.left_out`, in `details` or
    /// in the tail), if anything.
    pub fn left_out(&self) -> Option<LeftOut> {
        match self.tail.iter().find(|(k, _)| *k == "source") {
            Some((_, source)) => Some(LeftOut::from_value(&source.get("left_out")?.to_value())),
            None => left_out_of(&self.trajectory),
        }
    }

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
            write_line(out, &traj, opts, prov)
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

/// Options of the convert stage ([`crate::commands::convert::convert_inputs`] and `run`).
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
    /// Reject a record whose reader could not map a value or met a line of the wrong type
    /// (`--strict`, `[convert] strict`), rather than keep it in `details` and count it.
    pub strict: bool,
    /// Every input of the run, as planned (directories a format does not claim expanded to
    /// their files): a format whose unit spans files (ATIF continuation files) reads a group
    /// only when its files were given together. Set by the runners from their plan.
    pub inputs: Arc<Vec<String>>,
}

/// What to do with a trajectory whose id an earlier trajectory of the run already has
/// ([`Converter::duplicate_ids`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DuplicateIds {
    /// Reject the record that repeats the id, naming where the id was first written.
    Error,
    /// Write it with the id numbered: `ID_2`, `ID_3`, ... (the first number not yet used).
    Suffix,
}

/// The result of converting one record.
pub enum Converted {
    /// Serialized JSON lines, one per trajectory, their count, warnings about the record
    /// ([`Converter::warnings`] and what was left out), and the trajectories' ids when the
    /// converter checks for duplicates ([`Converter::duplicate_ids`]; empty otherwise), and
    /// what the reader left out of them.
    Written(Vec<u8>, u64, Vec<Diagnostic>, Vec<String>, LeftOut),
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
    let mut ids = Vec::new();
    let written = if converter.duplicate_ids().is_some() {
        write_renamed(converter, record, opts, &mut out, |id| {
            ids.push(id.to_owned());
            None
        })
    } else {
        converter.convert_into(record, opts, &mut out)
    };
    match written {
        Ok(made) => {
            let mut warnings = converter.warnings(record);
            warnings.extend(made.warnings);
            Converted::Written(out, made.count, warnings, ids, made.left_out)
        }
        Err(d) => Converted::Rejected(d),
    }
}

/// Converts `record` as [`Converter::convert_into`] does by default, giving each trajectory the
/// id `rename` returns for its own (`None`: unchanged) before it is checked and written.
pub fn write_renamed(
    converter: &dyn Converter,
    record: &RawRecord,
    opts: &ConvertOptions,
    out: &mut Vec<u8>,
    rename: impl FnMut(&str) -> Option<String>,
) -> Result<Made, Vec<Diagnostic>> {
    let trajectories = converter.convert(record, &opts.mapping)?;
    write_converted(
        trajectories,
        converter.reads_adp(),
        record,
        opts,
        out,
        rename,
    )
}

/// Checks and writes the `trajectories` a converter made of `record` ([`write_renamed`]).
fn write_converted(
    trajectories: Vec<(Trajectory, AdpVersion)>,
    reads_adp: bool,
    record: &RawRecord,
    opts: &ConvertOptions,
    out: &mut Vec<u8>,
    mut rename: impl FnMut(&str) -> Option<String>,
) -> Result<Made, Vec<Diagnostic>> {
    let mut made = Made {
        count: trajectories.len() as u64,
        ..Made::default()
    };
    for (mut traj, _) in trajectories {
        if let Some(id) = rename(&traj.id) {
            traj.id = id;
        }
        if !reads_adp {
            made.note(left_out_of(&traj), &record.provenance, &traj.id, opts)?;
        }
        converted_checked(&mut traj, &record.provenance, &opts.upgrade, reads_adp)?;
        write_line(out, &traj, opts, &record.provenance).map_err(|d| vec![*d])?;
    }
    Ok(made)
}

/// What converting one record made: its trajectories, what the reader left out of them
/// (summed), and the warnings about it.
#[derive(Debug, Default)]
pub struct Made {
    /// Trajectories written.
    pub count: u64,
    /// What the reader left out of them, summed.
    pub left_out: LeftOut,
    /// Warnings: a trajectory that keeps under half of its source's messages.
    pub warnings: Vec<Diagnostic>,
}

impl Made {
    /// Counts what the reader left out of trajectory `id` ([`left_out_checked`]).
    pub fn note(
        &mut self,
        left: Option<LeftOut>,
        prov: &Provenance,
        id: &str,
        opts: &ConvertOptions,
    ) -> Result<(), Vec<Diagnostic>> {
        if let Some(left) = left {
            self.warnings
                .extend(left_out_checked(&left, prov, id, opts.strict)?);
            self.left_out.add(&left);
        }
        Ok(())
    }
}

/// What a reader wrote in `details.source.left_out` of `traj`, if anything.
pub fn left_out_of(traj: &Trajectory) -> Option<LeftOut> {
    LeftOut::read(traj.details.get("source")?)
}

/// What the convert stage does with what a reader left out of trajectory `id`: with `strict`,
/// rejects it when a value could not be mapped or a line had the wrong type; warns when the
/// steps keep under half of the source's conversation messages.
pub fn left_out_checked(
    left: &LeftOut,
    prov: &Provenance,
    id: &str,
    strict: bool,
) -> Result<Option<Diagnostic>, Vec<Diagnostic>> {
    if strict && left.is_lossy() {
        let (pointer, reason) = match &left.first {
            Some(p) => (
                p.pointer.as_str(),
                format!(" (first, on line {}: {})", p.line, p.reason),
            ),
            None => ("", String::new()),
        };
        return Err(vec![Diagnostic::error(
            prov,
            Some(id),
            pointer,
            "left-out",
            format!(
                "--strict: the reader could not convert all of it: {}{reason}",
                left.describe()
            ),
        )]);
    }
    Ok(left.keeps_under_half().then(|| {
        let (n, kept) = left.messages.unwrap_or_default();
        Diagnostic::warning(
            prov,
            Some(id),
            "",
            "left-out",
            format!(
                "the trajectory keeps {kept} of the source's {n} conversation messages: {}",
                match left.why_lost().as_str() {
                    "" => "the rest are not in the conversation that went on".to_owned(),
                    why => why.to_owned(),
                }
            ),
        )
    }))
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

impl OutputFormat {
    /// The function that builds a record of the output format from a trajectory, or `None`
    /// for ADP (written as it is).
    fn writer(self) -> Option<fn(&Trajectory, &FormatOptions) -> Value> {
        match self {
            OutputFormat::Adp => None,
            OutputFormat::Native(c) => c.writer(),
        }
    }
}

/// Appends `traj` to `out` as one JSON line in the output format `opts.to` (built with the
/// format options `opts.mapping`).
pub fn write_line(
    out: &mut Vec<u8>,
    traj: &Trajectory,
    opts: &ConvertOptions,
    prov: &Provenance,
) -> Result<(), Box<Diagnostic>> {
    match opts.to.writer() {
        None => write_json(out, traj, &traj.id, prov),
        Some(native) => write_json(out, &native(traj, &opts.mapping), &traj.id, prov),
    }
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

    /// `--strict` rejects a trajectory with an unmapped value at its first one's pointer;
    /// without it, one that keeps under half of its source's messages is warned about.
    #[test]
    fn what_a_reader_left_out_is_rejected_when_strict_and_warned_about_when_most_is_lost() {
        let prov = Provenance {
            input: "in.jsonl".into(),
            file: "in.jsonl".into(),
            line: 1,
            index: 0,
        };
        let mut left = LeftOut::new("details.x");
        left.unmapped(7, "/message/content/1", "a block of unknown type \"x\"");
        left.messages = Some((10, 3));
        let err = left_out_checked(&left, &prov, "t", true).expect_err("strict rejects");
        assert_eq!(
            (err[0].rule.as_str(), err[0].pointer.as_str()),
            ("left-out", "/message/content/1")
        );
        let warning = left_out_checked(&left, &prov, "t", false)
            .expect("lenient keeps it")
            .expect("under half kept");
        assert!(
            warning.message.contains("keeps 3 of the source's 10"),
            "{}",
            warning.message
        );
        left.messages = Some((10, 5));
        assert!(left_out_checked(&left, &prov, "t", false)
            .expect("kept")
            .is_none());
    }
}

//! What a pass runs ([`Plan`]): where its trajectories come from ([`Source`]), its stages, and
//! where they go ([`Output`]), with the names of its steps.

use std::path::PathBuf;

use super::journal::JournalOptions;
use super::RunSummary;
use crate::convert::{ConvertOptions, Converter};
use crate::engine::partition::Partition;
use crate::engine::stage::{self, Stage};
use crate::export::ExportOptions;

/// One export: its directory and options.
pub struct ExportTarget {
    /// The output directory.
    pub dir: PathBuf,
    /// The options.
    pub opts: ExportOptions,
}

/// Makes the files that describe a run from its summary: paths and texts.
pub type Describe<'a> = &'a (dyn Fn(&RunSummary) -> Vec<(PathBuf, String)> + Sync);

/// Where a plan's trajectories come from.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// Each input with its format's converter, in order (`trajkit run`): each record converted,
    /// upgraded and checked to the plan's version (the `convert` step of the summary).
    Formats(&'a [(String, &'static dyn Converter)]),
    /// ADP records of any version (`trajkit join`, `redact`, `export`): each checked as ADP
    /// and upgraded to the plan's version; a record that fails is counted where [`Unread`]
    /// says. Every rejected record goes to the rejects file as it was read.
    Adp(&'a [String], Unread),
}

/// Where a plan over ADP records counts a record that is not valid ADP (or does not fit its
/// version).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unread {
    /// A rejection of the first stage, whose counts hold every record (`trajkit join`,
    /// `redact`); of `convert` in a plan without stages.
    FirstStage,
    /// A rejection of each export, which the stages never see; and a trajectory a stage
    /// rejects is counted as rejected by each export too (reported once, under the stage): the
    /// exports count every record (`trajkit export`).
    Exports,
}

impl Source<'_> {
    /// The input paths, in order.
    pub(super) fn paths(&self) -> Vec<String> {
        match self {
            Source::Formats(inputs) => inputs.iter().map(|(p, _)| p.clone()).collect(),
            Source::Adp(inputs, _) => inputs.to_vec(),
        }
    }

    /// The inputs and their converters (none for ADP records).
    pub(super) fn converters(&self) -> &[(String, &'static dyn Converter)] {
        match self {
            Source::Formats(inputs) => inputs,
            Source::Adp(..) => &[],
        }
    }
}

/// Where the trajectories that leave a plan's stages go.
pub enum Output<'a> {
    /// One compact ADP JSON line each, to this file (`-`: stdout), written under a temporary
    /// name and renamed with the rejects file once the pass succeeded (`trajkit join`,
    /// `redact`). A trajectory that cannot be written is a rejection of the last stage.
    AdpLines(&'a str),
    /// Each export (`trajkit run`).
    Exports(&'a [ExportTarget]),
}

impl Output<'_> {
    /// The exports (none for ADP lines).
    pub(super) fn exports(&self) -> &[ExportTarget] {
        match self {
            Output::Exports(e) => e,
            Output::AdpLines(_) => &[],
        }
    }
}

/// What a pipeline runs.
pub struct Plan<'a> {
    /// The inputs, in order, and how their records become trajectories.
    pub inputs: Source<'a>,
    /// Convert options (and the runner's): with [`Source::Adp`], only the version and the
    /// runner's options count.
    pub convert: &'a ConvertOptions,
    /// The stages between convert and the outputs, applied in order.
    pub stages: &'a [&'a dyn Stage],
    /// Whether the kinds that can repeat, and the exports, are numbered (`join[1]`,
    /// `export[1]`) even when they appear once, as in a pipeline file; else a stage is named by
    /// its kind and a lone export `export` (a command's).
    pub numbered: bool,
    /// The summary's sections reported even when no stage adds to them (`joins`).
    pub sections: &'a [&'a str],
    /// Where every trajectory that leaves the stages goes.
    pub output: Output<'a>,
    /// The partition this run makes, if any. By path, `inputs` is already its share and
    /// `all_inputs` every input; by id, trajectories of other partitions are left out.
    pub partition: Option<Partition>,
    /// Every input of the pipeline (for the first pass), when `inputs` is a partition's share.
    pub all_inputs: Option<&'a [(String, &'static dyn Converter)]>,
    /// The journal (kept in the first export's directory) and whether to resume from it;
    /// `None`: no journal, and a killed run starts again (ADP lines have none).
    pub journal: Option<&'a JournalOptions>,
    /// Files that describe the run (`run.json`), from its summary: written as part of the
    /// commit of its outputs.
    pub describe: Option<Describe<'a>>,
}

impl<'a> Plan<'a> {
    /// The plan of a command (`trajkit convert`, `join`, `redact`, `export`): `stages` between
    /// `inputs` and `output`, named by their kinds, with no journal and no partition.
    pub fn command(
        inputs: Source<'a>,
        convert: &'a ConvertOptions,
        stages: &'a [&'a dyn Stage],
        output: Output<'a>,
    ) -> Plan<'a> {
        Plan {
            inputs,
            convert,
            stages,
            numbered: false,
            sections: &[],
            output,
            partition: None,
            all_inputs: None,
            journal: None,
            describe: None,
        }
    }

    /// Whether records go straight from their converter to the lines: converted inputs, no
    /// stage, ADP lines out (`trajkit convert`).
    pub(super) fn writes_converted(&self) -> bool {
        matches!(self.inputs, Source::Formats(_))
            && self.stages.is_empty()
            && matches!(self.output, Output::AdpLines(_))
    }

    /// The plan's steps in pipeline order with their names: convert (when the inputs are
    /// converted, or nothing else can reject them), its stages ([`stage::names`]), the exports
    /// (`export[N]`).
    pub(super) fn steps(&self) -> Vec<(StageAt, String)> {
        let converts = matches!(self.inputs, Source::Formats(_)) || self.stages.is_empty();
        let convert = converts.then(|| (StageAt::Convert, "convert".to_owned()));
        let stages = stage::names(self.stages, self.numbered)
            .into_iter()
            .enumerate()
            .map(|(i, n)| (StageAt::Stage(i), n));
        let n = self.output.exports().len();
        let exports = (0..n).map(|i| match self.numbered || n > 1 {
            true => (StageAt::Export(i), format!("export[{}]", i + 1)),
            false => (StageAt::Export(i), "export".to_owned()),
        });
        convert.into_iter().chain(stages).chain(exports).collect()
    }
}

/// A step of the pass: what its busy time and its line of the summary are kept under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StageAt {
    Convert,
    /// The stage of this index in the plan (0-based).
    Stage(usize),
    /// The export of this index in the file (0-based).
    Export(usize),
}

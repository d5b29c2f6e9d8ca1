//! A whole pipeline in one streaming pass (`trajkit run`): each record is read once, converted
//! with its input's converter, upgraded and checked, joined by each join stage in order, and
//! fanned out to every export.
//!
//! The heavy work (converting, joining, rendering and encoding rows) happens in the parallel
//! processing closure of [`pipeline::run_with_sources`]; the ordered sink only counts, writes
//! rows into each export's shards and writes rejects, so the output bytes do not depend on the
//! thread count.
//!
//! Each stage does what its subcommand does, so the one-pass run writes the same shards as
//! `convert`, then `join` for each stage, then `export` for each target:
//! - convert: [`Converter::convert`], then [`upgrade_checked`] to the convert target;
//! - join: [`upgrade_checked`] to the join's target (1.5.0), then [`Join::apply`];
//! - export: [`export_trajectory`] with [`encode_any`].
//!
//! `--infer-tools dataset` (the export default) needs the tool calls of the whole export input
//! before the first row is rendered: when an SFT export asks for it, a first pass converts and
//! joins every record without encoding anything and gathers the calls of the trajectories that
//! reach the exports (what `export` would read), as `export`'s own first pass does.
//!
//! A partition (`--partition I/N`) reads only its inputs (by path, chosen by the caller) or keeps
//! only its trajectories (by id, [`Plan::partition`]); the first pass still reads every input
//! with every trajectory, so each partition infers the same tool specs as one unpartitioned run.

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use crate::convert::{empty_inputs, upgrade_checked, ConvertOptions, Converter};
use crate::export::infer::{trajectory_calls, Gather};
use crate::export::{
    encode_any, export_trajectory, AnyRow, ExportError, ExportOptions, ExportStage, ExportSummary,
    InferTools, Outcome, Target,
};
use crate::ingest::{Provenance, RawRecord};
use crate::join::{finish_side, Join, JoinRunOptions, JoinSummary};
use crate::model::{JsonObject, Trajectory};
use crate::partition::{Elsewhere, Partition, PartitionBy};
use crate::pipeline::{self, Flow, PipelineError, Progress, Sink};
use crate::rejects::{reject, RejectsWriter};
use crate::validate::report::Reporter;
use crate::validate::Diagnostic;

/// One join stage: the join and its run options (target version, orphan policy).
pub struct JoinStage {
    /// The join.
    pub join: Join,
    /// Its options; `run` is ignored (the pass has one).
    pub opts: JoinRunOptions,
}

/// One export: its directory and options.
pub struct ExportTarget {
    /// The output directory.
    pub dir: PathBuf,
    /// The options.
    pub opts: ExportOptions,
}

/// What a pipeline runs.
pub struct Plan<'a> {
    /// Each input with its converter, in order.
    pub inputs: &'a [(String, &'static dyn Converter)],
    /// Convert options (and the runner's).
    pub convert: &'a ConvertOptions,
    /// Join stages, applied in order.
    pub joins: &'a [JoinStage],
    /// Exports; every trajectory that leaves the joins goes to each.
    pub exports: &'a [ExportTarget],
    /// The partition this run makes, if any. By path, `inputs` is already its share and
    /// `all_inputs` every input; by id, trajectories of other partitions are left out.
    pub partition: Option<Partition>,
    /// Every input of the pipeline (for the first pass), when `inputs` is a partition's share.
    pub all_inputs: Option<&'a [(String, &'static dyn Converter)]>,
}

/// Counts of one input.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct InputSummary {
    /// The input path.
    pub path: String,
    /// Records read.
    pub records: u64,
    /// Trajectories converted from them.
    pub trajectories: u64,
    /// Records rejected at some stage (or with a trajectory rejected at some stage).
    pub rejected: u64,
}

/// Counts of one stage: `in == written + filtered + rejected`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StageSummary {
    /// `convert`, `join[N]` or `export[N]` (1-based, in file order).
    pub stage: String,
    /// Records (convert) or trajectories (join, export) in.
    #[serde(rename = "in")]
    pub records_in: u64,
    /// Passed on (convert: records converted; join: trajectories kept; export: rows written).
    pub written: u64,
    /// Dropped by a policy or filter (join `unmatched = "drop"`, export filters and dedup).
    pub filtered: u64,
    /// Rejected.
    pub rejected: u64,
}

/// Counts of a run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunSummary {
    /// Input records read.
    pub records: u64,
    /// Trajectories converted.
    pub trajectories: u64,
    /// Records rejected at any stage (a record counts once).
    pub rejected_records: u64,
    /// Per input.
    pub inputs: Vec<InputSummary>,
    /// Per stage, in pipeline order.
    pub stages: Vec<StageSummary>,
    /// Per join stage, with its side files.
    pub joins: Vec<JoinSummary>,
    /// Per export.
    pub exports: Vec<ExportSummary>,
    /// Inputs that held no records.
    pub empty_inputs: Vec<String>,
    /// What a partitioned run left to the other partitions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<Elsewhere>,
}

impl RunSummary {
    /// Rejected records over records read (0 when nothing was read).
    pub fn reject_rate(&self) -> f64 {
        if self.records == 0 {
            0.0
        } else {
            self.rejected_records as f64 / self.records as f64
        }
    }
}

/// A run that could not complete.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Reading or writing failed.
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    /// An export directory could not be prepared or finished.
    #[error(transparent)]
    Export(#[from] ExportError),
}

/// What a join stage did to one trajectory.
enum JoinStep {
    Kept { matched: bool, used: Vec<u32> },
    Dropped,
    Rejected(Vec<Diagnostic>),
}

/// What the stages after convert made of one trajectory.
struct TrajectoryItem {
    /// The join stages it reached, in order.
    joins: Vec<JoinStep>,
    /// One outcome per export (empty when a join dropped or rejected it).
    exports: Vec<Outcome<AnyRow>>,
    /// The trajectory as JSON, when a join or an export rejected it (for the rejects file).
    rejected_as: Option<Vec<u8>>,
    /// Its api calls (first pass only).
    calls: Vec<(String, JsonObject)>,
}

/// What one record became.
enum Item {
    Rejected(Vec<Diagnostic>),
    /// Its trajectories in this partition, and how many belong to others.
    Converted(Vec<TrajectoryItem>, u64),
    /// Nothing of it belongs to this partition (by id); its trajectories, all elsewhere.
    Elsewhere(u64),
}

struct Stages<'a> {
    plan: &'a Plan<'a>,
    by_path: HashMap<&'a str, &'static dyn Converter>,
    exports: &'a [ExportOptions],
    /// Keep only this partition's trajectories.
    by_id: Option<Partition>,
}

impl Stages<'_> {
    fn process(&self, record: &RawRecord, encode: bool) -> Item {
        let prov = &record.provenance;
        let Some(converter) = self.by_path.get(prov.input.as_ref()) else {
            return Item::Rejected(vec![Diagnostic::error(
                prov,
                None,
                "",
                "no-converter",
                "no converter was chosen for this input",
            )]);
        };
        // By id, a record with no trajectory to choose by (one that converts to none or is
        // rejected at conversion) is partition 0's.
        let first = self.by_id.is_none_or(|p| p.index == 0);
        let converted = match converter.convert(record) {
            Ok(t) => t,
            Err(_) if !first => return Item::Elsewhere(0),
            Err(d) => return Item::Rejected(d),
        };
        let mut trajectories = Vec::with_capacity(converted.len());
        for (mut traj, _) in converted {
            if let Err(d) = upgrade_checked(&mut traj, prov, &self.plan.convert.upgrade) {
                return if first {
                    Item::Rejected(d)
                } else {
                    Item::Elsewhere(0)
                };
            }
            trajectories.push(traj);
        }
        let total = trajectories.len() as u64;
        if let Some(p) = self.by_id {
            trajectories.retain(|t| p.owns(&t.id));
        }
        let elsewhere = total - trajectories.len() as u64;
        if trajectories.is_empty() && (elsewhere > 0 || !first) {
            return Item::Elsewhere(elsewhere);
        }
        Item::Converted(
            trajectories
                .into_iter()
                .map(|t| self.trajectory(t, prov, encode))
                .collect(),
            elsewhere,
        )
    }

    fn trajectory(&self, mut traj: Trajectory, prov: &Provenance, encode: bool) -> TrajectoryItem {
        let mut item = TrajectoryItem {
            joins: Vec::with_capacity(self.plan.joins.len()),
            exports: Vec::new(),
            rejected_as: None,
            calls: Vec::new(),
        };
        for stage in self.plan.joins {
            let step = match upgrade_checked(&mut traj, prov, &stage.opts.upgrade) {
                Err(d) => JoinStep::Rejected(d),
                Ok(()) => match stage.join.apply(&mut traj, prov) {
                    Ok(a) if a.keep => JoinStep::Kept {
                        matched: a.matched,
                        used: a.used,
                    },
                    Ok(_) => JoinStep::Dropped,
                    Err(d) => JoinStep::Rejected(d),
                },
            };
            let stop = !matches!(step, JoinStep::Kept { .. });
            if matches!(step, JoinStep::Rejected(_)) {
                item.rejected_as = serde_json::to_vec(&traj).ok();
            }
            item.joins.push(step);
            if stop {
                return item;
            }
        }
        if !encode {
            item.calls = trajectory_calls(&traj);
            return item;
        }
        item.exports = self
            .exports
            .iter()
            .map(|opts| export_trajectory(traj.clone(), prov, opts, &encode_any))
            .collect();
        if item
            .exports
            .iter()
            .any(|o| matches!(o, Outcome::Rejected(_)))
        {
            item.rejected_as = serde_json::to_vec(&traj).ok();
        }
        item
    }
}

struct RunSink {
    exports: Vec<ExportStage>,
    rejects: Option<RejectsWriter>,
    reporter: Box<dyn Reporter>,
    summary: RunSummary,
    joins: Vec<JoinSummary>,
    used: Vec<Vec<bool>>,
    convert_rejected: u64,
    elsewhere: Elsewhere,
}

impl Sink for RunSink {
    type Item = Item;

    fn start_input(&mut self, path: &Arc<str>) -> io::Result<()> {
        self.summary.inputs.push(InputSummary {
            path: path.to_string(),
            ..InputSummary::default()
        });
        Ok(())
    }

    fn accept(&mut self, record: RawRecord, item: Item) -> io::Result<Flow> {
        if let Item::Elsewhere(n) = item {
            self.elsewhere.records += 1;
            self.elsewhere.trajectories += n;
            return Ok(Flow::Continue);
        }
        self.summary.records += 1;
        let mut rejected = false;
        let mut converted = 0u64;
        match item {
            Item::Rejected(d) => {
                rejected = true;
                self.convert_rejected += 1;
                reject(
                    self.reporter.as_mut(),
                    self.rejects.as_mut(),
                    &record,
                    "convert",
                    &d,
                )?;
            }
            Item::Converted(trajectories, elsewhere) => {
                self.elsewhere.trajectories += elsewhere;
                converted = trajectories.len() as u64;
                for t in trajectories {
                    rejected |= self.trajectory(&record, t)?;
                }
            }
            Item::Elsewhere(_) => {}
        }
        self.summary.trajectories += converted;
        self.summary.rejected_records += u64::from(rejected);
        if let Some(input) = self.summary.inputs.last_mut() {
            input.records += 1;
            input.trajectories += converted;
            input.rejected += u64::from(rejected);
        }
        Ok(Flow::Continue)
    }
}

impl RunSink {
    /// Counts and writes one trajectory's outcomes; true when a stage rejected it.
    fn trajectory(&mut self, record: &RawRecord, t: TrajectoryItem) -> io::Result<bool> {
        let as_record = |bytes: &Option<Vec<u8>>| match bytes {
            Some(b) => RawRecord {
                provenance: record.provenance.clone(),
                bytes: b.clone(),
                error: None,
            },
            None => record.clone(),
        };
        let rejected_as = &t.rejected_as;
        let (reporter, rejects) = (self.reporter.as_mut(), &mut self.rejects);
        let mut report = |stage: String, d: &[Diagnostic]| {
            reject(
                reporter,
                rejects.as_mut(),
                &as_record(rejected_as),
                &stage,
                d,
            )
        };
        let mut rejected = false;
        for (i, step) in t.joins.into_iter().enumerate() {
            let (Some(s), Some(used)) = (self.joins.get_mut(i), self.used.get_mut(i)) else {
                continue;
            };
            s.records += 1;
            match step {
                JoinStep::Kept { matched, used: u } => {
                    s.written_records += 1;
                    if matched {
                        s.matched += 1;
                    } else {
                        s.unmatched_kept += 1;
                    }
                    for r in u {
                        if let Some(x) = used.get_mut(r as usize) {
                            *x = true;
                        }
                    }
                }
                JoinStep::Dropped => s.dropped += 1,
                JoinStep::Rejected(d) => {
                    s.rejected += 1;
                    rejected = true;
                    report(format!("join[{}]", i + 1), &d)?;
                }
            }
        }
        for (i, (outcome, export)) in t.exports.into_iter().zip(&mut self.exports).enumerate() {
            if let Some(d) = export.add(outcome)? {
                rejected = true;
                report(format!("export[{}]", i + 1), &d)?;
            }
        }
        Ok(rejected)
    }
}

/// The first pass of `--infer-tools dataset`: the calls of every trajectory that reaches the
/// exports.
struct Calls(Gather);

impl Sink for Calls {
    type Item = Item;

    fn accept(&mut self, _record: RawRecord, item: Item) -> io::Result<Flow> {
        if let Item::Converted(ts, _) = item {
            for t in ts {
                self.0.add(t.calls);
            }
        }
        Ok(Flow::Continue)
    }
}

/// Runs `plan` in one pass (two when an SFT export infers tool specs from the dataset),
/// writing every export, rejects from every stage to `rejects` (with the stage: `convert`,
/// `join[N]`, `export[N]`) and their diagnostics to `reporter`. The exports are committed
/// (shards renamed, manifest and card written) once the pass succeeded.
pub fn run_plan(
    plan: &Plan<'_>,
    progress: &dyn Progress,
    rejects: Option<RejectsWriter>,
    reporter: Box<dyn Reporter>,
) -> Result<RunSummary, RunError> {
    let paths: Vec<String> = plan.inputs.iter().map(|(p, _)| p.clone()).collect();
    let all_inputs = plan.all_inputs.unwrap_or(plan.inputs);
    let by_path: HashMap<&str, &'static dyn Converter> = all_inputs
        .iter()
        .chain(plan.inputs)
        .map(|(p, c)| (p.as_str(), *c))
        .collect();
    let opts = plan.convert;
    let sources = |path: &str| by_path.get(path).and_then(|c| c.open_source(path, opts));
    let mut export_opts: Vec<ExportOptions> = plan.exports.iter().map(|e| e.opts.clone()).collect();
    let infer = |o: &ExportOptions| {
        !matches!(o.target, Target::Adp | Target::Parquet)
            && o.sft.infer_tools == InferTools::Dataset
    };
    if export_opts.iter().any(infer) {
        let stages = Stages {
            plan,
            by_path: by_path.clone(),
            exports: &[],
            by_id: None,
        };
        let all: Vec<String> = all_inputs.iter().map(|(p, _)| p.clone()).collect();
        let (calls, _) = pipeline::run_with_sources(
            &all,
            &sources,
            &opts.run,
            &pipeline::NoProgress,
            |r| stages.process(r, false),
            Calls(Gather::default()),
        )?;
        for o in export_opts.iter_mut().filter(|o| infer(o)) {
            o.sft.catalog.set_inferred(&calls.0 .0);
        }
    }
    let exports = plan
        .exports
        .iter()
        .zip(&export_opts)
        .map(|(e, o)| ExportStage::open(&e.dir, o))
        .collect::<Result<Vec<_>, _>>()?;
    let sink = RunSink {
        exports,
        rejects,
        reporter,
        summary: RunSummary::default(),
        joins: vec![JoinSummary::default(); plan.joins.len()],
        used: plan
            .joins
            .iter()
            .map(|j| vec![false; j.join.index.len()])
            .collect(),
        convert_rejected: 0,
        elsewhere: Elsewhere::default(),
    };
    let stages = Stages {
        plan,
        by_path: by_path.clone(),
        exports: &export_opts,
        by_id: plan.partition.filter(|p| p.by == PartitionBy::Id),
    };
    let (mut sink, inputs_read) = pipeline::run_with_sources(
        &paths,
        &sources,
        &opts.run,
        progress,
        |r| stages.process(r, true),
        sink,
    )?;
    let write = |e: io::Error| RunError::Pipeline(PipelineError::Write(e));
    for (i, stage) in plan.joins.iter().enumerate() {
        let (Some(summary), Some(used)) = (sink.joins.get_mut(i), sink.used.get(i)) else {
            continue;
        };
        finish_side(
            &stage.join,
            used,
            &stage.opts,
            &format!("join[{}]", i + 1),
            sink.reporter.as_mut(),
            sink.rejects.as_mut(),
            summary,
        )
        .map_err(write)?;
    }
    sink.reporter.finish(&Default::default()).map_err(write)?;
    if let Some(r) = sink.rejects.take() {
        r.finish().map_err(write)?;
    }
    let mut summary = sink.summary;
    summary.empty_inputs = empty_inputs(&inputs_read);
    let convert_rejected = sink.convert_rejected;
    summary.stages.push(StageSummary {
        stage: "convert".into(),
        records_in: summary.records,
        written: summary.records - convert_rejected,
        filtered: 0,
        rejected: convert_rejected,
    });
    for (i, j) in sink.joins.iter().enumerate() {
        summary.stages.push(StageSummary {
            stage: format!("join[{}]", i + 1),
            records_in: j.records,
            written: j.written_records,
            filtered: j.dropped,
            rejected: j.rejected,
        });
    }
    for (i, (stage, o)) in sink.exports.into_iter().zip(&export_opts).enumerate() {
        let s = stage.finish(o)?;
        summary.stages.push(StageSummary {
            stage: format!("export[{}]", i + 1),
            records_in: s.records_in,
            written: s.written,
            filtered: s.filtered,
            rejected: s.rejected,
        });
        summary.exports.push(s);
    }
    summary.joins = sink.joins;
    summary.partition = plan.partition.map(|p| Elsewhere {
        partition: p.spec(),
        by: p.by.name().to_owned(),
        inputs: (all_inputs.len() - plan.inputs.len()) as u64,
        ..sink.elsewhere
    });
    Ok(summary)
}

//! A whole pipeline in one streaming pass (`trajkit run`): each record is read once, converted
//! with its input's converter, upgraded and checked, passed through each stage of the plan in
//! order ([`Stage`]: joins, redaction, filters), and fanned out to every export.
//!
//! Every command of stages is such a plan too ([`Plan::command`]): `convert` from the formats
//! to ADP lines ([`Source::Formats`], [`Output::AdpLines`], no stage), `join` and `redact` one
//! stage over ADP records ([`Source::Adp`]) to ADP lines, `export` ADP records to one export
//! ([`Output::Exports`]). The runner names none of them, nor any stage.
//!
//! The heavy work (converting, joining, rendering and encoding rows) happens in the parallel
//! processing closure of [`pipeline::run_with_sources`]; the ordered sink only counts, writes
//! rows into each export's shards and writes rejects, so the output bytes do not depend on the
//! thread count.
//!
//! Each stage does what its subcommand does, so the one-pass run writes the same shards as
//! `convert`, then `join` for each stage, then `export` for each target:
//! - convert: [`Converter::convert`], then [`converted_checked`] to the convert target;
//! - each stage: [`upgrade_checked`] to the version it asks for ([`Stage::upgrade`]), then
//!   [`Stage::apply`] on the workers and its [`Ordered`] half in order;
//! - export: [`export_trajectory`] with [`encode_any`].
//!
//! `--infer-tools dataset` (the export default) needs the tool calls of the whole export input
//! before the first row is rendered: when an SFT export asks for it, a first pass converts and
//! joins every record without encoding anything and gathers the calls of the trajectories that
//! reach the exports (what `export` would read); over ADP records with no stage, the calls of
//! every record as it is written ([`scan_inputs`]).
//!
//! Stage times are busy times: the time spent in a stage's code, summed over the threads that
//! ran it (convert: converting and checking; a stage: upgrading and applying it; export: upgrading,
//! filtering, rendering and encoding rows on the workers, plus writing them and finishing the
//! shards, by whichever worker writes). In a pipelined pass they overlap, so they add up to more than
//! the wall time on several cores; reading and the first pass of `--infer-tools` are not in them.
//!
//! A partition (`--partition I/N`) reads only its inputs (by path, chosen by the caller) or keeps
//! only its trajectories (by id, [`Plan::partition`]); the first pass still reads every input
//! with every trajectory, so each partition infers the same tool specs as one unpartitioned run.
//!
//! A run with a journal (`trajkit run`'s) keeps a [`journal`] of checkpoints (at input boundaries and shard starts), from
//! which `--resume` restarts a killed run to the same output bytes.

pub mod file;
pub mod journal;
mod lines;
mod plan;
pub mod summary;

use plan::StageAt;
pub use plan::{Describe, ExportTarget, Output, Plan, Source, Unread};
pub use summary::{InputSummary, RunSummary};

use std::borrow::Cow;
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::convert::{
    convert_record, converted_checked, left_out_checked, left_out_of, Converted, Converter, LeftOut,
};
use crate::engine::output::{write_json, Commit, Output as OutputFile};
use crate::engine::partition::{state_dir, Elsewhere, Partition, PartitionBy};
use crate::engine::pipeline::{
    self, empty_inputs, Flow, PipelineError, Progress, Sink, StageSummary,
};
use crate::engine::rejects::{reject, RejectsWriter};
use crate::engine::stage::{Counts, Ordered, Outputs, Sections, Stage, Step};
use crate::export::infer::{scan_inputs, trajectory_calls, Gather};
use crate::export::{
    encode_any, export_trajectory, export_upgraded, AnyRow, ExportError, ExportOptions,
    ExportStage, ExportSummary, InferTools, Outcome, Share, SharedCounts, Target,
};
use crate::ingest::{Provenance, RawRecord};
use crate::model::upgrade::UpgradeOptions;
use crate::model::{JsonObject, Trajectory};
use crate::segment::Mode as SegmentMode;
use crate::validate::check::{check_adp, upgrade_checked};
use crate::validate::report::Reporter;
use crate::validate::Diagnostic;
use journal::{GlobalState, Journal, Restart, ResumeError, StageState};
use lines::Lines;

/// A run that could not complete.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Reading or writing failed.
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    /// An export directory could not be prepared or finished.
    #[error(transparent)]
    Export(#[from] ExportError),
    /// `--resume` refused, or the journal could not be written.
    #[error(transparent)]
    Resume(#[from] ResumeError),
    /// The pass succeeded, but renaming its outputs into place failed part way.
    #[error(
        "the run's outputs could not all be committed ({0}); run again with --resume to \
         finish committing them"
    )]
    Commit(io::Error),
    /// The ADP lines or the rejects file could not be created.
    #[error("cannot create {what}: {source}")]
    Create {
        /// The file (or "the rejects file").
        what: String,
        /// Why.
        source: io::Error,
    },
    /// The outputs are committed, but the `[report]` page could not be written.
    #[error("[report]: {0}")]
    Report(String),
}

/// Busy time per step of the plan, with its name, added to from any thread.
struct Busy(Vec<(StageAt, String, AtomicU64)>);

impl Busy {
    /// A clock for each of `steps` (none: a pass that times nothing).
    fn new(steps: Vec<(StageAt, String)>) -> Self {
        Busy(
            steps
                .into_iter()
                .map(|(s, n)| (s, n, AtomicU64::new(0)))
                .collect(),
        )
    }

    fn clock(&self, stage: StageAt) -> Option<&AtomicU64> {
        self.0.iter().find(|(s, ..)| *s == stage).map(|(.., b)| b)
    }

    /// The name of `stage` in summaries and the rejects file.
    fn name(&self, stage: StageAt) -> String {
        let name = self.0.iter().find(|(s, ..)| *s == stage);
        name.map(|(_, n, _)| n.clone()).unwrap_or_default()
    }

    /// Adds the time since `since` to `stage`.
    fn add(&self, stage: StageAt, since: Instant) {
        if let Some(b) = self.clock(stage) {
            let nanos = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
            b.fetch_add(nanos, Ordering::Relaxed);
        }
    }

    fn seconds(&self, stage: StageAt) -> f64 {
        self.clock(stage).map_or(0.0, |b| {
            Duration::from_nanos(b.load(Ordering::Relaxed)).as_secs_f64()
        })
    }

    /// The steps timed, in pipeline order, with their names.
    fn steps(&self) -> impl Iterator<Item = (StageAt, &str)> + '_ {
        self.0.iter().map(|(s, n, _)| (*s, n.as_str()))
    }
}

/// What the stages after convert made of one trajectory.
#[derive(Default)]
struct TrajectoryItem {
    /// The step of each stage it reached, in order.
    steps: Vec<Step>,
    /// What each export made of it (empty when a stage dropped or rejected it).
    exports: Vec<ExportRows>,
    /// The trajectory as JSON, when a stage or an export rejected it (for the rejects file).
    rejected_as: Option<Vec<u8>>,
    /// Its api calls (first pass only).
    calls: Vec<(String, JsonObject)>,
    /// Its ADP JSON line, when it left the stages for [`Output::AdpLines`].
    line: Option<Vec<u8>>,
}

/// What one export made of a trajectory: an outcome per row (one, or one per segment with
/// `segments`), and with `segments`, what the trajectory became (its rows, and whether it is a
/// subagent branch; `None` when it was rejected before it was cut).
struct ExportRows {
    outcomes: Vec<Outcome<AnyRow>>,
    made: Option<(usize, bool)>,
}

/// What one record became.
enum Item {
    Rejected(Vec<Diagnostic>),
    /// Its trajectories in this partition, how many belong to others, the converter's
    /// warnings about it, and what the reader left out of its trajectories.
    Converted(Vec<TrajectoryItem>, u64, Vec<Diagnostic>, LeftOut),
    /// Nothing of it belongs to this partition (by id); its trajectories, all elsewhere.
    Elsewhere(u64),
    /// Its lines as its converter wrote them, when they go straight to ADP lines (no stage):
    /// as [`Converted::Written`].
    Lines(Vec<u8>, u64, Vec<Diagnostic>, Vec<String>, LeftOut),
}

struct Stages<'a> {
    plan: &'a Plan<'a>,
    by_path: HashMap<&'a str, &'static dyn Converter>,
    exports: &'a [ExportOptions],
    /// For each export, the first that counts tokens like it ([`counts_like`]).
    counts_like: Vec<usize>,
    busy: &'a Busy,
    /// Keep only this partition's trajectories.
    by_id: Option<Partition>,
}

impl Stages<'_> {
    fn process(&self, record: &RawRecord, encode: bool) -> Item {
        if let Source::Adp(_, unread) = self.plan.inputs {
            return self.read_adp(record, unread, encode);
        }
        if self.plan.writes_converted() {
            return self.convert_lines(record);
        }
        let started = Instant::now();
        let converted = self.convert(record);
        self.busy.add(StageAt::Convert, started);
        // By id, a record with no trajectory to choose by (one that converts to none or is
        // rejected at conversion) is partition 0's.
        let first = self.by_id.is_none_or(|p| p.index == 0);
        let (mut trajectories, left_out, mut warnings) = match converted {
            Ok(t) => t,
            Err(_) if !first => return Item::Elsewhere(0),
            Err(d) => return Item::Rejected(d),
        };
        let total = trajectories.len() as u64;
        self.keep_own(&mut trajectories);
        let elsewhere = total - trajectories.len() as u64;
        if trajectories.is_empty() && (elsewhere > 0 || !first) {
            return Item::Elsewhere(elsewhere);
        }
        if let Some(c) = self.by_path.get(record.provenance.input.as_ref()) {
            warnings.splice(0..0, c.warnings(record));
        }
        Item::Converted(
            trajectories
                .into_iter()
                .enumerate()
                .map(|(i, t)| self.trajectory(t, record, i, encode))
                .collect(),
            elsewhere,
            warnings,
            left_out,
        )
    }

    /// A record converted straight into the lines its converter writes ([`convert_record`]:
    /// ADP, or the format of `--to`).
    fn convert_lines(&self, record: &RawRecord) -> Item {
        let started = Instant::now();
        let converted = match self.by_path.get(record.provenance.input.as_ref()) {
            Some(converter) => convert_record(*converter, record, self.plan.convert),
            None => Converted::Rejected(vec![no_converter(&record.provenance)]),
        };
        self.busy.add(StageAt::Convert, started);
        match converted {
            Converted::Written(bytes, n, warnings, ids, left) => {
                Item::Lines(bytes, n, warnings, ids, left)
            }
            Converted::Rejected(d) => Item::Rejected(d),
        }
    }

    /// A record of [`Source::Adp`]: its trajectory checked and upgraded, then through the
    /// stages; when it is not valid ADP (or not of the plan's version), a rejection where
    /// `unread` says.
    fn read_adp(&self, record: &RawRecord, unread: Unread, encode: bool) -> Item {
        let prov = &record.provenance;
        let read = check_adp(record).into_result().and_then(|(mut traj, _)| {
            upgrade_checked(&mut traj, prov, &self.plan.convert.upgrade).map(|()| traj)
        });
        let item = match read {
            Ok(traj) => self.trajectory(traj, record, 0, encode),
            Err(d) if unread == Unread::Exports => TrajectoryItem {
                exports: (self.exports.iter())
                    .map(|_| ExportRows {
                        outcomes: vec![Outcome::Rejected(d.clone())],
                        made: None,
                    })
                    .collect(),
                ..TrajectoryItem::default()
            },
            Err(d) if self.plan.stages.is_empty() => return Item::Rejected(d),
            Err(d) => TrajectoryItem {
                steps: vec![Step::Rejected(d)],
                ..TrajectoryItem::default()
            },
        };
        Item::Converted(vec![item], 0, Vec::new(), LeftOut::default())
    }

    /// Keeps only this partition's trajectories (by id; all when not partitioned by id).
    fn keep_own(&self, trajectories: &mut Vec<Trajectory>) {
        if let Some(p) = self.by_id {
            trajectories.retain(|t| p.owns(&t.id));
        }
    }

    /// The convert stage: the record's trajectories, upgraded and checked, what the reader left
    /// out of them and the warnings about that ([`left_out_checked`]).
    fn convert(
        &self,
        record: &RawRecord,
    ) -> Result<(Vec<Trajectory>, LeftOut, Vec<Diagnostic>), Vec<Diagnostic>> {
        let prov = &record.provenance;
        let Some(converter) = self.by_path.get(prov.input.as_ref()) else {
            return Err(vec![no_converter(prov)]);
        };
        let converted = converter.convert(record, &self.plan.convert.mapping)?;
        let mut trajectories = Vec::with_capacity(converted.len());
        let mut left_out = LeftOut::default();
        let mut warnings = Vec::new();
        for (mut traj, _) in converted {
            if let Some(left) = left_out_of(&traj).filter(|_| !converter.reads_adp()) {
                warnings.extend(left_out_checked(
                    &left,
                    prov,
                    &traj.id,
                    self.plan.convert.strict,
                )?);
                left_out.add(&left);
            }
            converted_checked(
                &mut traj,
                prov,
                &self.plan.convert.upgrade,
                converter.reads_adp(),
            )?;
            trajectories.push(traj);
        }
        Ok((trajectories, left_out, warnings))
    }

    /// Trajectory `i` of `record` as it reaches the exports (converted and joined again), for
    /// the rejects file when the last export, which took the trajectory, rejected it.
    fn rebuild(&self, record: &RawRecord, i: usize) -> Option<Trajectory> {
        let (mut trajectories, ..) = self.convert(record).ok()?;
        self.keep_own(&mut trajectories);
        let mut traj = trajectories.into_iter().nth(i)?;
        let mut done = &self.plan.convert.upgrade;
        for stage in self.plan.stages {
            let step = apply(*stage, &mut traj, &record.provenance, &mut done);
            if !matches!(step, Step::Kept(_)) {
                return None;
            }
        }
        Some(traj)
    }

    fn trajectory(
        &self,
        mut traj: Trajectory,
        record: &RawRecord,
        index: usize,
        encode: bool,
    ) -> TrajectoryItem {
        let prov = &record.provenance;
        let mut item = TrajectoryItem {
            steps: Vec::with_capacity(self.plan.stages.len()),
            ..TrajectoryItem::default()
        };
        // ADP records are rejected as they were read.
        let converted = matches!(self.plan.inputs, Source::Formats(_));
        // The options the trajectory was last upgraded and checked with.
        let mut done = &self.plan.convert.upgrade;
        for (n, stage) in self.plan.stages.iter().enumerate() {
            let started = Instant::now();
            let step = apply(*stage, &mut traj, prov, &mut done);
            self.busy.add(StageAt::Stage(n), started);
            let stop = !matches!(step, Step::Kept(_));
            if let (Step::Rejected(_), Source::Adp(_, Unread::Exports), true) =
                (&step, self.plan.inputs, encode)
            {
                // Counted by the exports, with nothing more to report.
                item.exports = (self.exports.iter())
                    .map(|_| ExportRows {
                        outcomes: vec![Outcome::Rejected(Vec::new())],
                        made: None,
                    })
                    .collect();
            }
            if converted && matches!(step, Step::Rejected(_)) {
                item.rejected_as = serde_json::to_vec(&traj).ok();
            }
            item.steps.push(step);
            if stop {
                return item;
            }
        }
        if !encode {
            item.calls = trajectory_calls(&traj);
            return item;
        }
        if let Output::AdpLines(_) = self.plan.output {
            // Sized for what the stages added: a long line is not copied as it grows.
            let added: usize = (self.plan.stages.iter().zip(&item.steps))
                .map(|(stage, step)| match step {
                    Step::Kept(note) => stage.added_bytes(note),
                    _ => 0,
                })
                .sum();
            let mut line = Vec::with_capacity(record.bytes.len() + added + 256);
            match write_json(&mut line, &traj, &traj.id, prov) {
                Ok(()) => item.line = Some(line),
                // A trajectory serializes to JSON (its maps have text keys, its numbers are
                // finite): with no stage to reject it, this cannot be reached.
                Err(d) => {
                    if let Some(last) = item.steps.last_mut() {
                        *last = Step::Rejected(vec![*d]);
                    }
                }
            }
            return item;
        }
        // One export takes the trajectory: the last one that needs its own copy (an SFT target
        // renders from one, segments are cut from one), else the last. The others borrow it
        // (Parquet) or copy it, and run first, so rejects can still show the trajectory.
        let Some(owner) = self
            .exports
            .iter()
            .rposition(|o| o.target != Target::Parquet || o.segments != SegmentMode::None)
            .or(self.exports.len().checked_sub(1))
        else {
            return item;
        };
        let counts = SharedCounts::default();
        let share = |n: usize| Share {
            counts: &counts,
            like: self.counts_like[n],
        };
        let mut outcomes: Vec<Option<ExportRows>> = Vec::with_capacity(self.exports.len());
        for (n, opts) in self.exports.iter().enumerate() {
            let started = Instant::now();
            outcomes.push(
                (n != owner).then(|| export_rows(Cow::Borrowed(&traj), prov, opts, done, share(n))),
            );
            self.busy.add(StageAt::Export(n), started);
        }
        let rejected = |r: &ExportRows| {
            converted && (r.outcomes.iter()).any(|o| matches!(o, Outcome::Rejected(_)))
        };
        if outcomes.iter().flatten().any(rejected) {
            item.rejected_as = serde_json::to_vec(&traj).ok();
        }
        let started = Instant::now();
        let last = export_rows(
            Cow::Owned(traj),
            prov,
            &self.exports[owner],
            done,
            share(owner),
        );
        self.busy.add(StageAt::Export(owner), started);
        if item.rejected_as.is_none() && rejected(&last) {
            item.rejected_as = self
                .rebuild(record, index)
                .and_then(|t| serde_json::to_vec(&t).ok());
        }
        outcomes[owner] = Some(last);
        item.exports = outcomes.into_iter().flatten().collect();
        item
    }
}

/// Why a record of an input no converter was chosen for is rejected.
fn no_converter(prov: &Provenance) -> Diagnostic {
    Diagnostic::error(
        prov,
        None,
        "",
        "no-converter",
        "no converter was chosen for this input",
    )
}

/// For each export, the first export that counts tokens like it
/// ([`ExportOptions::counts_like`]), or itself: exports alike share each trajectory's count.
fn counts_like(exports: &[ExportOptions]) -> Vec<usize> {
    (0..exports.len())
        .map(|n| {
            let like = |o: &ExportOptions| o.counts_like(&exports[n]);
            exports[..n].iter().position(like).unwrap_or(n)
        })
        .collect()
}

/// What `stage` makes of `traj`, upgraded first to the version it asks for (rejected under its
/// name when that fails).
fn apply<'a>(
    stage: &'a dyn Stage,
    traj: &mut Trajectory,
    prov: &Provenance,
    done: &mut &'a UpgradeOptions,
) -> Step {
    if let Some(opts) = stage.upgrade() {
        if let Err(d) = upgrade_once(traj, prov, opts, done) {
            return Step::Rejected(d);
        }
    }
    stage.apply(traj, prov)
}

/// Upgrades and checks `traj` with `opts`, unless the options it was last upgraded and checked
/// with (`done`) make that a no-op ([`UpgradeOptions::is_done_by`]): with one ADP version
/// throughout, the link and language rules run once per trajectory instead of at every stage.
fn upgrade_once<'a>(
    traj: &mut Trajectory,
    prov: &Provenance,
    opts: &'a UpgradeOptions,
    done: &mut &'a UpgradeOptions,
) -> Result<(), Vec<Diagnostic>> {
    if !opts.is_done_by(done) {
        upgrade_checked(traj, prov, opts)?;
        *done = opts;
    }
    Ok(())
}

/// [`export_trajectory`], without upgrading again what `done` already did, and with the token
/// counts the trajectory's exports `share`.
fn export_once(
    traj: Cow<'_, Trajectory>,
    prov: &Provenance,
    opts: &ExportOptions,
    done: &UpgradeOptions,
    share: Share<'_>,
) -> Outcome<AnyRow> {
    let encode = |t: Cow<'_, Trajectory>, o: &ExportOptions| encode_any(t, o, Some(share));
    if opts.upgrade.is_done_by(done) {
        export_upgraded(traj, prov, opts, &encode)
    } else {
        export_trajectory(traj.into_owned(), prov, opts, &encode)
    }
}

/// What export `opts` makes of `traj`: [`export_once`], or with `segments`, the trajectory
/// upgraded, cut into rows and each row exported as `trajkit export --segments` does (each row
/// counts its own tokens: a trajectory's shared counts are of the whole trajectory).
fn export_rows(
    traj: Cow<'_, Trajectory>,
    prov: &Provenance,
    opts: &ExportOptions,
    done: &UpgradeOptions,
    share: Share<'_>,
) -> ExportRows {
    if opts.segments == SegmentMode::None {
        return ExportRows {
            outcomes: vec![export_once(traj, prov, opts, done, share)],
            made: None,
        };
    }
    let mut traj = traj.into_owned();
    if !opts.upgrade.is_done_by(done) {
        if let Err(d) = upgrade_checked(&mut traj, prov, &opts.upgrade) {
            return ExportRows {
                outcomes: vec![Outcome::Rejected(d)],
                made: None,
            };
        }
    }
    let rows = opts.segments.rows(traj);
    let encode = |t: Cow<'_, Trajectory>, o: &ExportOptions| encode_any(t, o, None);
    ExportRows {
        made: Some((rows.len(), rows.is_branch())),
        outcomes: rows.each(|t| export_upgraded(t, prov, opts, &encode)),
    }
}

/// Records between two looks at the clock for [`Progress::stages`].
const STAGES_EVERY: u64 = 256;

/// How often, at most, [`Progress::stages`] is told the counts during a pass.
const STAGES_PERIOD: Duration = Duration::from_millis(200);

struct RunSink<'a> {
    exports: Vec<ExportStage>,
    /// With [`Output::AdpLines`], the file the lines go to.
    lines: Option<Lines<'a>>,
    /// The diagnostics reporter and rejects file, as the stages guard them.
    out: Outputs,
    summary: RunSummary,
    /// Per stage of the plan, its counts and its ordered half.
    counts: Vec<Counts>,
    ordered: Vec<Box<dyn Ordered + 'a>>,
    convert_rejected: u64,
    busy: &'a Busy,
    progress: &'a dyn Progress,
    /// When the current input's first record reached the sink.
    input_started: Option<Instant>,
    /// When the stage counts were last reported.
    reported: Instant,
    elsewhere: Elsewhere,
    journal: Option<Journal>,
    /// The plan index of the next input.
    input: usize,
    /// Per export, the rows offered to it so far.
    offered: Vec<u64>,
    /// Inputs whose counts are journaled, and when the last input boundary was.
    journaled_inputs: usize,
    last_checkpoint: Option<Instant>,
    /// Records accepted by this process, and the test hook's abort point.
    accepted: u64,
    abort_after: Option<u64>,
}

impl Sink for RunSink<'_> {
    type Item = Item;

    fn start_input(&mut self, path: &Arc<str>) -> io::Result<()> {
        self.close_input();
        // Under the kill test hook every boundary is journaled, so that tests restart from
        // each of them whatever the machine's speed.
        let interval = match self.abort_after {
            Some(_) => Duration::ZERO,
            None => INPUT_CHECKPOINT_INTERVAL,
        };
        if self.last_checkpoint.is_none_or(|t| t.elapsed() >= interval) {
            self.checkpoint()?;
        }
        self.input += 1;
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
            if let Some(input) = self.summary.inputs.last_mut() {
                input.elsewhere += 1;
            }
            return Ok(Flow::Continue);
        }
        self.input_started.get_or_insert_with(Instant::now);
        if self.summary.records.is_multiple_of(STAGES_EVERY)
            && self.reported.elapsed() >= STAGES_PERIOD
        {
            self.progress.stages(&self.stages());
            self.reported = Instant::now();
        }
        self.summary.records += 1;
        let mut rejected = false;
        let mut converted = 0u64;
        match item {
            Item::Rejected(d) => {
                rejected = true;
                self.reject_converting(&record, &d)?;
            }
            Item::Lines(bytes, n, warnings, ids, left) => {
                let written = match &mut self.lines {
                    Some(lines) => lines.write_checked(&record, bytes, ids)?,
                    None => Ok(()),
                };
                match written {
                    Ok(()) => {
                        for w in &warnings {
                            self.out.reporter.diagnostic(w)?;
                        }
                        if let Some(input) = self.summary.inputs.last_mut() {
                            input.left_out.add(&left);
                        }
                        converted = n;
                    }
                    Err(d) => {
                        rejected = true;
                        self.reject_converting(&record, &d)?;
                    }
                }
            }
            Item::Converted(trajectories, elsewhere, warnings, left) => {
                for w in &warnings {
                    self.out.reporter.diagnostic(w)?;
                }
                if let Some(input) = self.summary.inputs.last_mut() {
                    input.left_out.add(&left);
                }
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
        self.accepted += 1;
        if self.abort_after == Some(self.accepted) {
            // The test hook: a kill at a chosen point, without destructors or flushes.
            std::process::abort();
        }
        Ok(Flow::Continue)
    }
}

/// Input boundaries closer than this to the last journaled one are not journaled (a run over
/// many small files would otherwise sync the journal and rejects file for each); a resumed run
/// redoes at most this long of small inputs.
const INPUT_CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);

impl RunSink<'_> {
    /// Counts and reports a record the convert step rejected.
    fn reject_converting(&mut self, record: &RawRecord, d: &[Diagnostic]) -> io::Result<()> {
        self.convert_rejected += 1;
        let (reporter, rejects) = (self.out.reporter.as_mut(), self.out.rejects.as_mut());
        reject(reporter, rejects, record, "convert", d)
    }

    /// Sets the time of the input whose records came last.
    fn close_input(&mut self) {
        if let (Some(started), Some(input)) =
            (self.input_started.take(), self.summary.inputs.last_mut())
        {
            input.seconds = started.elapsed().as_secs_f64();
        }
    }

    /// The counts and busy times of every stage so far, in pipeline order.
    fn stages(&self) -> Vec<StageSummary> {
        let records = self.summary.records;
        (self.busy.steps())
            .map(|(at, name)| {
                let counts = match at {
                    StageAt::Convert => Counts {
                        records_in: records,
                        written: records - self.convert_rejected,
                        filtered: 0,
                        rejected: self.convert_rejected,
                    },
                    StageAt::Stage(i) => self.counts.get(i).copied().unwrap_or_default(),
                    StageAt::Export(i) => self.exports.get(i).map_or_else(Counts::default, |e| {
                        let s = e.summary();
                        Counts {
                            records_in: s.records_in,
                            written: s.written,
                            filtered: s.filtered,
                            rejected: s.rejected,
                        }
                    }),
                };
                counts.summary(name.to_owned(), self.busy.seconds(at))
            })
            .collect()
    }

    /// Journals the state at the start of input `self.input` (the rejects file synced first).
    fn checkpoint(&mut self) -> io::Result<()> {
        let stages = (self.counts.iter().zip(&mut self.ordered))
            .map(|(c, o)| StageState {
                counts: *c,
                state: o.checkpoint(),
            })
            .collect();
        let state = GlobalState {
            records: self.summary.records,
            trajectories: self.summary.trajectories,
            rejected_records: self.summary.rejected_records,
            convert_rejected: self.convert_rejected,
            inputs: self
                .summary
                .inputs
                .get(self.journaled_inputs..)
                .unwrap_or_default()
                .to_vec(),
            stages,
            elsewhere_records: self.elsewhere.records,
            elsewhere_trajectories: self.elsewhere.trajectories,
            rejects: match &mut self.out.rejects {
                Some(r) => r.checkpoint()?,
                None => None,
            },
        };
        if let Some(journal) = &mut self.journal {
            journal.input(self.input, &self.offered, state)?;
        }
        self.journaled_inputs = self.summary.inputs.len();
        self.last_checkpoint = Some(Instant::now());
        Ok(())
    }

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
        let (reporter, rejects) = (self.out.reporter.as_mut(), &mut self.out.rejects);
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
        for (i, step) in t.steps.iter().enumerate() {
            let (Some(c), Some(o)) = (self.counts.get_mut(i), self.ordered.get_mut(i)) else {
                continue;
            };
            c.add(step);
            o.accept(step);
            if let Step::Rejected(d) = step {
                rejected = true;
                report(self.busy.name(StageAt::Stage(i)), d)?;
            }
        }
        let by_stage = rejected;
        if let (Some(line), Some(out)) = (&t.line, &mut self.lines) {
            out.write(line)?;
        }
        let exports = t.exports.into_iter().zip(&mut self.exports);
        for (i, ((rows, export), offered)) in exports.zip(&mut self.offered).enumerate() {
            let started = Instant::now();
            *offered += rows.outcomes.len() as u64;
            let added = export.add_trajectory(rows.outcomes, rows.made)?;
            self.busy.add(StageAt::Export(i), started);
            // A stage's rejection, which the export counts too, is reported already.
            for d in added.into_iter().filter(|d| !(by_stage && d.is_empty())) {
                rejected = true;
                report(self.busy.name(StageAt::Export(i)), &d)?;
            }
            for c in export.take_checkpoints() {
                if let Some(journal) = &mut self.journal {
                    journal.shard(i, c)?;
                }
            }
        }
        Ok(rejected)
    }
}

/// The sink of the pass, with the counters of `restart` (all zero for a fresh run), timing its
/// stages in `busy` and reporting their counts to `progress`.
fn restored_sink<'a>(
    plan: &Plan<'a>,
    restart: Restart,
    (exports, lines): (Vec<ExportStage>, Option<Lines<'a>>),
    out: Outputs,
    journal: Option<Journal>,
    (busy, progress): (&'a Busy, &'a dyn Progress),
) -> RunSink<'a> {
    let st = restart.state;
    let mut counts: Vec<Counts> = st.stages.iter().map(|s| s.counts).collect();
    counts.resize(plan.stages.len(), Counts::default());
    let ordered = (plan.stages.iter().enumerate())
        .map(|(i, s)| {
            let mut o = s.ordered();
            if let Some(history) = restart.stage_history.get(i) {
                o.restore(history);
            }
            o
        })
        .collect();
    let mut offered = restart.offered;
    offered.resize(exports.len(), 0);
    RunSink {
        exports,
        lines,
        out,
        summary: RunSummary {
            records: st.records,
            trajectories: st.trajectories,
            rejected_records: st.rejected_records,
            inputs: st.inputs,
            ..RunSummary::default()
        },
        counts,
        ordered,
        journaled_inputs: restart.input,
        last_checkpoint: None,
        convert_rejected: st.convert_rejected,
        journal,
        input: restart.input,
        offered,
        busy,
        progress,
        input_started: None,
        reported: Instant::now(),
        elsewhere: Elsewhere {
            records: st.elsewhere_records,
            trajectories: st.elsewhere_trajectories,
            ..Elsewhere::default()
        },
        accepted: 0,
        abort_after: std::env::var(journal::ABORT_AFTER_RECORDS)
            .ok()
            .and_then(|v| v.parse().ok()),
    }
}

/// The first pass of `--infer-tools dataset`: the calls of every trajectory that reaches the
/// exports.
struct Calls(Gather);

impl Sink for Calls {
    type Item = Item;

    fn accept(&mut self, _record: RawRecord, item: Item) -> io::Result<Flow> {
        if let Item::Converted(ts, ..) = item {
            for t in ts {
                self.0.add(t.calls);
            }
        }
        Ok(Flow::Continue)
    }
}

/// Runs `plan` in one pass (two when an SFT export infers tool specs from the dataset),
/// writing its output (every export, or ADP lines), rejects from every stage to the file
/// `rejects` (with the stage: `convert`, each stage's name, `export[N]`) and their diagnostics
/// to `reporter`. The outputs are committed (shards renamed, manifest and card written, the
/// lines and the rejects file renamed) once the pass succeeded. With a journal that says
/// `resume`, restarts from where a killed run's journal says (see [`journal`]).
pub fn run_plan<'a>(
    plan: &Plan<'a>,
    progress: &dyn Progress,
    rejects: Option<&str>,
    reporter: Box<dyn Reporter>,
) -> Result<RunSummary, RunError> {
    let paths = plan.inputs.paths();
    let all_inputs = plan.all_inputs.unwrap_or(plan.inputs.converters());
    let by_path: HashMap<&str, &'static dyn Converter> = all_inputs
        .iter()
        .chain(plan.inputs.converters())
        .map(|(p, c)| (p.as_str(), *c))
        .collect();
    let opts = plan.convert;
    let sources = |path: &str| by_path.get(path).and_then(|c| c.open_source(path, opts));
    let targets = plan.output.exports();
    let mut export_opts: Vec<ExportOptions> = targets.iter().map(|e| e.opts.clone()).collect();
    let journal_at = match (plan.journal, &plan.output) {
        (Some(j), Output::Exports(_)) => match targets.first() {
            Some(e) => Some((j, state_dir(&e.dir, plan.partition.as_ref()))),
            None => return Err(RunError::Resume(ResumeError::Refused("no export".into()))),
        },
        _ => None,
    };
    let splits: Vec<usize> = export_opts.iter().map(|o| o.splits.names().len()).collect();
    // A resumed run reads the journal first (refusals come before any work); a fresh one
    // replaces it only once the export directories could be opened.
    let mut resumed = None;
    if let Some((j, dir)) = journal_at.as_ref().filter(|(j, _)| j.resume) {
        resumed = Some(Journal::start(dir, j, &splits)?);
    }
    let infer =
        |o: &ExportOptions| o.builds_conversations() && o.sft.infer_tools == InferTools::Dataset;
    if export_opts.iter().any(infer)
        && matches!(plan.inputs, Source::Adp(..))
        && plan.stages.is_empty()
    {
        // Every call of the records as they are written (`trajkit export`).
        let calls = scan_inputs(&paths, &opts.run, progress)?;
        for o in export_opts.iter_mut().filter(|o| infer(o)) {
            o.sft.catalog.set_inferred(&calls);
        }
    } else if export_opts.iter().any(infer) {
        let stages = Stages {
            plan,
            by_path: by_path.clone(),
            exports: &[],
            counts_like: Vec::new(),
            busy: &Busy::new(Vec::new()),
            by_id: None,
        };
        let all: Vec<String> = match plan.all_inputs {
            Some(all) => all.iter().map(|(p, _)| p.clone()).collect(),
            None => paths.clone(),
        };
        // Over ADP records the bar shows both passes, as it did before they were a plan.
        let first_progress = match plan.inputs {
            Source::Adp(..) => progress,
            Source::Formats(_) => &pipeline::NoProgress,
        };
        let (calls, _) = pipeline::run_with_sources(
            &all,
            &sources,
            &opts.run,
            first_progress,
            |r| stages.process(r, false),
            Calls(Gather::default()),
        )?;
        for o in export_opts.iter_mut().filter(|o| infer(o)) {
            o.sft.catalog.set_inferred(&calls.0 .0);
        }
    }
    let (journal, restart, exports) = match resumed {
        Some((
            journal,
            Some(Restart {
                commit: Some(done), ..
            }),
        )) => {
            // The pass was over and its outputs were being committed: finish that.
            done.commit.apply().map_err(RunError::Commit)?;
            journal.close();
            return Ok(done.summary);
        }
        Some((journal, restart)) => {
            let restart = restart.unwrap_or_default();
            let exports = targets
                .iter()
                .zip(&export_opts)
                .enumerate()
                .map(|(i, (e, o))| {
                    let x = restart.exports.get(i).cloned().unwrap_or_default();
                    ExportStage::resume(&e.dir, o, x)
                })
                .collect::<Result<Vec<_>, _>>()?;
            (Some(journal), restart, exports)
        }
        None => {
            let exports = targets
                .iter()
                .zip(&export_opts)
                .map(|(e, o)| ExportStage::open(&e.dir, o))
                .collect::<Result<Vec<_>, _>>()?;
            let journal = match &journal_at {
                Some((j, dir)) => Some(Journal::start(dir, j, &splits)?.0),
                None => None,
            };
            (journal, Restart::default(), exports)
        }
    };
    let lines = match plan.output {
        Output::AdpLines(path) => {
            let file = OutputFile::create(path).map_err(|source| RunError::Create {
                what: path.to_owned(),
                source,
            })?;
            Some(Lines::new(file, by_path.clone(), opts))
        }
        Output::Exports(_) => None,
    };
    let busy = Busy::new(plan.steps());
    let write = |e: io::Error| RunError::Pipeline(PipelineError::Write(e));
    let rejects = match (rejects, &journal) {
        (Some(p), Some(_)) => {
            Some(RejectsWriter::resumable(p, restart.state.rejects.unwrap_or(0)).map_err(write)?)
        }
        (Some(p), None) => Some(RejectsWriter::create(p).map_err(|source| RunError::Create {
            what: "the rejects file".to_owned(),
            source,
        })?),
        (None, _) => None,
    };
    let out = (plan.stages.iter()).fold(Outputs { reporter, rejects }, |o, s| s.guard(o));
    let first = restart.input;
    let empty_before: Vec<String> = restart
        .state
        .inputs
        .iter()
        .filter(|i| i.records == 0 && i.elsewhere == 0)
        .map(|i| i.path.clone())
        .collect();
    let sink = restored_sink(
        plan,
        restart,
        (exports, lines),
        out,
        journal,
        (&busy, progress),
    );
    let stages = Stages {
        plan,
        by_path: by_path.clone(),
        exports: &export_opts,
        counts_like: counts_like(&export_opts),
        busy: &busy,
        by_id: plan.partition.filter(|p| p.by == PartitionBy::Id),
    };
    let (mut sink, inputs_read) = pipeline::run_with_sources(
        paths.get(first..).unwrap_or_default(),
        &sources,
        &opts.run,
        progress,
        |r| stages.process(r, true),
        sink,
    )?;
    sink.close_input();
    // Everything is completed and synced under temporary names (gathered in `commit`) before
    // the journal records the commit, after which a kill is finished by `--resume`.
    let mut commit = Commit::default();
    let completed = complete(&mut sink, plan, &export_opts, &busy, &mut commit);
    let (stages, exports, sections) = match completed {
        Ok(done) => done,
        Err(e) => {
            commit.discard();
            return Err(e);
        }
    };
    progress.stages(&stages);
    let mut summary = sink.summary;
    summary.empty_inputs = empty_before;
    summary.empty_inputs.extend(empty_inputs(&inputs_read));
    summary.stages = stages;
    summary.exports = exports;
    summary.sections = sections;
    summary.partition = plan.partition.map(|p| Elsewhere {
        partition: p.spec(),
        by: p.by.name().to_owned(),
        inputs: (all_inputs.len() - paths.len()) as u64,
        ..sink.elsewhere
    });
    if let Some(describe) = plan.describe {
        commit.write.extend(describe(&summary));
    }
    let Some(mut journal) = sink.journal else {
        // Nothing to resume: the outputs are renamed into place, or removed.
        commit
            .apply()
            .inspect_err(|_| commit.discard())
            .map_err(write)?;
        return Ok(summary);
    };
    if let Some(ms) = std::env::var(journal::PAUSE_BEFORE_COMMIT)
        .ok()
        .and_then(|v| v.parse().ok())
    {
        std::thread::sleep(Duration::from_millis(ms));
    }
    let recorded = commit
        .make_absolute()
        .and_then(|()| journal.commit(&commit, &summary));
    if let Err(e) = recorded {
        commit.discard();
        return Err(write(e));
    }
    commit.apply().map_err(RunError::Commit)?;
    journal.close();
    Ok(summary)
}

/// Completes the run's outputs once its pass is over: each stage finishes (a join reports its
/// orphan side records), the rejects file, the ADP lines and every export's shards are
/// completed and synced, and what commits them is added to `commit` (the rejects file first).
/// Returns the stages' counts, the exports' summaries and the stages' sections of the summary,
/// which each export's manifest is told of.
fn complete(
    sink: &mut RunSink<'_>,
    plan: &Plan<'_>,
    export_opts: &[ExportOptions],
    busy: &Busy,
    commit: &mut Commit,
) -> Result<(Vec<StageSummary>, Vec<ExportSummary>, Sections), RunError> {
    let write = |e: io::Error| RunError::Pipeline(PipelineError::Write(e));
    for (i, o) in sink.ordered.iter_mut().enumerate() {
        o.finish(&busy.name(StageAt::Stage(i)), &mut sink.out)
            .map_err(write)?;
    }
    sink.out
        .reporter
        .finish(&Default::default())
        .map_err(write)?;
    if let Some(r) = sink.out.rejects.take() {
        commit.rename.extend(r.into_pending().map_err(write)?);
    }
    if let Some(lines) = sink.lines.take() {
        commit.rename.extend(lines.into_pending().map_err(write)?);
    }
    let mut stages = sink.stages();
    let mut sections = Sections::with_lists(plan.sections);
    for o in &sink.ordered {
        o.summarize(&mut sections);
    }
    let mut exports = Vec::new();
    for (i, (stage, o)) in std::mem::take(&mut sink.exports)
        .into_iter()
        .zip(export_opts)
        .enumerate()
    {
        let started = Instant::now();
        let mut stage = stage;
        stage.set_upstream(&sections);
        let (summary, c) = stage.into_commit(o)?;
        commit.extend(c);
        exports.push(summary);
        let at = StageAt::Export(i);
        busy.add(at, started);
        let name = busy.name(at);
        if let Some(s) = stages.iter_mut().find(|s| s.stage == name) {
            s.seconds = busy.seconds(at);
        }
    }
    Ok((stages, exports, sections))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::export::ExportConfig;

    /// The options of an export given as a pipeline table (with `keys`).
    fn export(keys: &str) -> ExportOptions {
        let fixture = |f: &str| {
            format!(
                "{}/tests/fixtures/templates/{f}",
                env!("CARGO_MANIFEST_DIR")
            )
        };
        let table = keys
            .replace("TEMPLATE", &fixture("reasoning.jinja"))
            .replace("OTHER", &fixture("generation.jinja"))
            .replace("TOKENIZER", &fixture("words.tokenizer.json"));
        let config: ExportConfig =
            toml::from_str(&format!("output = \"out\"\n{table}")).expect("table");
        config
            .options(&["in.jsonl".into()], pipeline::RunOptions::default())
            .expect("options")
    }

    #[test]
    fn exports_count_alike_with_the_same_template_tokenizer_and_mapping() {
        let counting = "chat_template = \"TEMPLATE\"\ntokenizer = \"TOKENIZER\"\n";
        let exports = [
            export(&format!("to = \"parquet\"\n{counting}")),
            // Thoughts go elsewhere: alike for conversations without thoughts.
            export(&format!("to = \"openai\"\n{counting}")),
            export("to = \"openai\"\n"),
            export(&format!(
                "to = \"hf\"\n{counting}description_as = \"thought\"\n"
            )),
            export("to = \"hf\"\nchat_template = \"OTHER\"\ntokenizer = \"TOKENIZER\"\n"),
            export(&format!("to = \"tokens\"\n{counting}")),
            export(&format!("to = \"sharegpt\"\n{counting}")),
        ];
        assert_eq!(counts_like(&exports), [0, 0, 2, 3, 4, 5, 0]);
    }
}

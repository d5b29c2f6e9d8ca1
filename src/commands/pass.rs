//! One stage over ADP JSON lines (`trajkit join`, `trajkit redact`): each record is checked as
//! ADP, upgraded, passed through the [`Stage`] (its worker half on the pool, its ordered half
//! in input order, as `run` does) and written as one JSON line; rejected records go to the
//! rejects file under the stage's name, as they were read.

use std::io::{self, Write};

use crate::engine::output::{write_json, Output};
use crate::engine::pipeline::{
    self, empty_inputs, Flow, PipelineError, Progress, RunOptions, Sink,
};
use crate::engine::rejects::{commit_outputs, reject, Mask};
use crate::engine::stage::{Counts, Ordered, Outputs, Sections, Stage, Step};
use crate::ingest::RawRecord;
use crate::model::upgrade::UpgradeOptions;
use crate::validate::check::{check_adp, upgrade_checked};

/// How a stage is run over ADP inputs.
pub struct Pass<'a> {
    /// The stage.
    pub stage: &'a dyn Stage,
    /// The ADP version each record is upgraded to and checked in before the stage.
    pub upgrade: &'a UpgradeOptions,
    /// Runner options.
    pub run: &'a RunOptions,
    /// Masks the diagnostics of rejected records, when they may show what the stage hides.
    pub mask: Option<&'a dyn Mask>,
}

/// What a pass did: the stage's counts and sections, and the inputs that held no records.
pub struct Passed {
    /// Trajectories in, written, filtered, rejected.
    pub counts: Counts,
    /// What the stage reports ([`Ordered::summarize`]).
    pub sections: Sections,
    /// Inputs that held no records.
    pub empty_inputs: Vec<String>,
}

/// One record's step, and its JSON line when kept.
struct Item(Step, Vec<u8>);

struct PassSink<'a> {
    name: &'static str,
    output: Output,
    out: Outputs,
    counts: Counts,
    ordered: Box<dyn Ordered + 'a>,
}

impl Sink for PassSink<'_> {
    type Item = Item;

    fn accept(&mut self, record: RawRecord, Item(step, line): Item) -> io::Result<Flow> {
        self.counts.add(&step);
        self.ordered.accept(&step);
        match &step {
            Step::Kept(_) => self.output.write_all(&line)?,
            Step::Dropped(_) => {}
            Step::Rejected(d) => reject(
                self.out.reporter.as_mut(),
                self.out.rejects.as_mut(),
                &record,
                self.name,
                d,
            )?,
        }
        Ok(Flow::Continue)
    }
}

/// The step of one record.
fn process(pass: &Pass<'_>, record: &RawRecord) -> Item {
    let rejected = |d| {
        let d = match pass.mask {
            Some(m) => m.mask_diagnostics(d),
            None => d,
        };
        Item(Step::Rejected(d), Vec::new())
    };
    let mut traj = match check_adp(record).into_result() {
        Ok((t, _)) => t,
        Err(d) => return rejected(d),
    };
    let prov = &record.provenance;
    if let Err(d) = upgrade_checked(&mut traj, prov, pass.upgrade) {
        return rejected(d);
    }
    if let Some(u) = pass.stage.upgrade().filter(|u| !u.is_done_by(pass.upgrade)) {
        if let Err(d) = upgrade_checked(&mut traj, prov, u) {
            return rejected(d);
        }
    }
    match pass.stage.apply(&mut traj, prov) {
        Step::Kept(note) => {
            let mut line = Vec::with_capacity(record.bytes.len() + 256);
            match write_json(&mut line, &traj, &traj.id, prov) {
                Ok(()) => Item(Step::Kept(note), line),
                Err(d) => rejected(vec![*d]),
            }
        }
        Step::Rejected(d) => rejected(d),
        dropped => Item(dropped, Vec::new()),
    }
}

/// Runs `pass` over every record of `inputs`, writing the records it keeps to `output`, the
/// rejected ones to `out.rejects` and diagnostics to `out.reporter`; then finishes the stage
/// (a join reports its orphans) and commits the output and the rejects file.
pub fn run_pass(
    inputs: &[String],
    pass: &Pass<'_>,
    progress: &dyn Progress,
    output: Output,
    out: Outputs,
) -> Result<Passed, PipelineError> {
    let sink = PassSink {
        name: pass.stage.kind(),
        output,
        out,
        counts: Counts::default(),
        ordered: pass.stage.ordered(),
    };
    let (mut sink, inputs_read) =
        pipeline::run(inputs, pass.run, progress, |r| process(pass, r), sink)?;
    let write = |e: io::Error| PipelineError::Write(e);
    sink.ordered
        .finish(sink.name, &mut sink.out)
        .map_err(write)?;
    sink.out
        .reporter
        .finish(&Default::default())
        .map_err(write)?;
    let mut sections = Sections::default();
    sink.ordered.summarize(&mut sections);
    commit_outputs(sink.output, sink.out.rejects).map_err(write)?;
    Ok(Passed {
        counts: sink.counts,
        sections,
        empty_inputs: empty_inputs(&inputs_read),
    })
}

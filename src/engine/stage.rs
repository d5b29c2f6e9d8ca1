//! A stage of a pass: what a plan holds a list of, and what the runner, the journal, progress
//! and the summaries iterate over without naming any.
//!
//! A stage has two halves, as the runner has two sides:
//! - [`Stage::apply`], on the workers, in parallel: what the stage makes of one trajectory
//!   ([`Step`]: kept, dropped with a reason, or rejected with diagnostics). It may change the
//!   trajectory and may carry a note of what it did (which side records a join used, what
//!   redaction replaced) to the ordered half.
//! - the [`Ordered`] half ([`Stage::ordered`]), on the sink's thread, in input order: it takes
//!   each step's note, keeps what the stage reports ([`Ordered::summarize`]), what a resumed
//!   run restarts it from ([`Ordered::checkpoint`], [`Ordered::restore`]) and what it does once
//!   the pass is over ([`Ordered::finish`]).
//!
//! The runner counts every stage the same way (`in = written + filtered + rejected`:
//! [`Counts`]), writes the trajectories it rejects to the rejects file under the stage's name
//! and times it. A new stage is one type with this trait in its own folder, and one pipeline
//! table that builds it (see "Adding a stage" in `docs/development.md`).

use std::any::Any;
use std::io;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::engine::pipeline::StageSummary;
use crate::engine::rejects::RejectsWriter;
use crate::ingest::Provenance;
use crate::model::upgrade::UpgradeOptions;
use crate::model::Trajectory;
use crate::validate::report::Reporter;
use crate::validate::Diagnostic;

/// What a stage's ordered half learns of one trajectory besides its fate: any value of the
/// stage's own (`None` for stages that need none, so most steps allocate nothing).
pub type Note = Option<Box<dyn Any + Send>>;

/// What a stage made of one trajectory.
pub enum Step {
    /// Passed on to the next stage, with the stage's note.
    Kept(Note),
    /// Left out on purpose (counted as filtered), with the reason.
    Dropped(&'static str),
    /// Rejected: written to the rejects file with these diagnostics.
    Rejected(Vec<Diagnostic>),
}

/// One stage of a pass over trajectories. Implementations live in the stage's own folder.
pub trait Stage: Sync {
    /// Its kind, as summaries and the rejects file name it (`join`, `redact`, `filter`);
    /// numbered `kind[N]` (1-based, in file order) when the kind can appear more than once.
    fn kind(&self) -> &'static str;

    /// Whether the kind can appear more than once in a plan (its name then has a number).
    fn repeats(&self) -> bool {
        false
    }

    /// The ADP version and checks the trajectory must have before this stage (the runner
    /// upgrades it once, rejecting it under this stage's name when that fails); `None`: as it
    /// comes.
    fn upgrade(&self) -> Option<&UpgradeOptions> {
        None
    }

    /// The worker half: what the stage makes of `traj` (changed in place when kept).
    fn apply(&self, traj: &mut Trajectory, prov: &Provenance) -> Step;

    /// The ordered half, fresh.
    fn ordered(&self) -> Box<dyn Ordered + '_>;

    /// Bytes the stage added to the trajectory's text, as its note of a kept trajectory says
    /// (the output line is sized for them rather than grown as it is written). None by default.
    fn added_bytes(&self, _note: &Note) -> usize {
        0
    }

    /// What the run's rejects file and diagnostics become with this stage in the plan (a
    /// redacting stage masks them, so they hold nothing the outputs do not). As given by
    /// default.
    fn guard(&self, outputs: Outputs) -> Outputs {
        outputs
    }
}

/// The diagnostics reporter and the rejects file of a run.
pub struct Outputs {
    /// Where diagnostics go.
    pub reporter: Box<dyn Reporter>,
    /// The rejects file, if any.
    pub rejects: Option<RejectsWriter>,
}

/// The ordered half of a stage: used by one thread, in input order.
pub trait Ordered: Send {
    /// One trajectory's step, in input order (the runner counts it; the stage keeps what else
    /// it needs, such as its note).
    fn accept(&mut self, _step: &Step) {}

    /// The stage's state to journal at an input boundary: what a resumed run restarts it from
    /// (`Value::Null` for a stage with nothing to restore). May start afresh what it returned
    /// before (a join's side records used since the last boundary).
    fn checkpoint(&mut self) -> Value {
        Value::Null
    }

    /// Restarts the stage from what it journaled at every boundary up to the restart one, in
    /// order.
    fn restore(&mut self, _states: &[Value]) {}

    /// Once the pass is over, before the outputs are committed: reports what the stage alone
    /// knows then (a join's orphan side records) under its `name`.
    fn finish(&mut self, _name: &str, _outputs: &mut Outputs) -> io::Result<()> {
        Ok(())
    }

    /// Adds what the stage reports beyond its counts to the run's summary.
    fn summarize(&self, _sections: &mut Sections) {}
}

/// The sections stages add to a run's summary (`run.json`), in the order they were first
/// added: a list that each stage of a kind adds to, or one value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Sections(pub Map<String, Value>);

impl Sections {
    /// Sections with an empty list under each of `lists` (reported even when no stage adds
    /// to them).
    pub fn with_lists(lists: &[&str]) -> Sections {
        let mut s = Sections::default();
        for l in lists {
            s.0.insert((*l).to_owned(), Value::Array(Vec::new()));
        }
        s
    }

    /// Adds `value` to the list `section`.
    pub fn push(&mut self, section: &str, value: Value) {
        let list = self
            .0
            .entry(section)
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(items) = list {
            items.push(value);
        }
    }

    /// Sets `section` to `value`.
    pub fn set(&mut self, section: &str, value: Value) {
        self.0.insert(section.to_owned(), value);
    }

    /// `section` read as `T`, if present and of that shape.
    pub fn get<T: serde::de::DeserializeOwned>(&self, section: &str) -> Option<T> {
        self.0.get(section).and_then(|v| T::deserialize(v).ok())
    }
}

/// A stage's counts: `records_in == written + filtered + rejected`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Trajectories in.
    #[serde(rename = "in")]
    pub records_in: u64,
    /// Passed on.
    pub written: u64,
    /// Dropped on purpose.
    pub filtered: u64,
    /// Rejected.
    pub rejected: u64,
}

impl Counts {
    /// Counts one step.
    pub fn add(&mut self, step: &Step) {
        self.records_in += 1;
        match step {
            Step::Kept(_) => self.written += 1,
            Step::Dropped(_) => self.filtered += 1,
            Step::Rejected(_) => self.rejected += 1,
        }
    }

    /// The summary line of the stage `name`, with its busy time.
    pub fn summary(&self, name: String, seconds: f64) -> StageSummary {
        StageSummary {
            stage: name,
            records_in: self.records_in,
            written: self.written,
            filtered: self.filtered,
            rejected: self.rejected,
            seconds,
        }
    }
}

/// The names of `stages` in a plan: the kind, numbered (`join[2]`) for kinds that repeat when
/// `numbered` (a pipeline file's stages) or when the kind appears more than once.
pub fn names(stages: &[&dyn Stage], numbered: bool) -> Vec<String> {
    let times = |kind: &str| stages.iter().filter(|s| s.kind() == kind).count();
    let mut seen: Vec<(&str, usize)> = Vec::new();
    stages
        .iter()
        .map(|s| {
            let n = match seen.iter_mut().find(|(k, _)| *k == s.kind()) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    seen.push((s.kind(), 1));
                    1
                }
            };
            match s.repeats() && (numbered || times(s.kind()) > 1) {
                true => format!("{}[{n}]", s.kind()),
                false => s.kind().to_owned(),
            }
        })
        .collect()
}

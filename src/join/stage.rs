//! A join as a stage of a pass ([`Stage`]): on the workers it attaches the side records to a
//! trajectory (upgraded first to the join's ADP version); in order it counts matches, marks the
//! side records used and, once the pass is over, reports the orphans and each side file's
//! counts (the `joins` section of the summary).

use std::io;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{finish_side, Join, JoinRunOptions, JoinSummary};
use crate::engine::stage::{Ordered, Outputs, Sections, Stage, Step};
use crate::ingest::Provenance;
use crate::model::upgrade::UpgradeOptions;
use crate::model::Trajectory;

/// One join stage: the join and its run options (target version, orphan policy).
pub struct JoinStage {
    /// The join.
    pub join: Join,
    /// Its options; `run` is ignored (the pass has one).
    pub opts: JoinRunOptions,
}

/// What a kept trajectory tells the ordered half: whether a side record matched, and the side
/// records it used.
type Matched = (bool, Vec<u32>);

impl Stage for JoinStage {
    fn kind(&self) -> &'static str {
        "join"
    }

    fn repeats(&self) -> bool {
        true
    }

    fn upgrade(&self) -> Option<&UpgradeOptions> {
        Some(&self.opts.upgrade)
    }

    fn apply(&self, traj: &mut Trajectory, prov: &Provenance) -> Step {
        match self.join.apply(traj, prov) {
            Ok(a) if a.keep => Step::Kept(Some(Box::new((a.matched, a.used) as Matched))),
            Ok(_) => Step::Dropped("unmatched"),
            Err(d) => Step::Rejected(d),
        }
    }

    fn ordered(&self) -> Box<dyn Ordered + '_> {
        Box::new(JoinCounts {
            stage: self,
            summary: JoinSummary::default(),
            used: vec![false; self.join.index.len()],
            newly_used: Vec::new(),
        })
    }
}

/// The ordered half of a join.
struct JoinCounts<'a> {
    stage: &'a JoinStage,
    summary: JoinSummary,
    /// Per side record, whether a trajectory used it.
    used: Vec<bool>,
    /// Side records first used since the last checkpoint.
    newly_used: Vec<u32>,
}

/// What a join journals at an input boundary.
#[derive(Serialize, Deserialize)]
struct Checkpoint {
    summary: JoinSummary,
    /// Side records first used since the previous boundary.
    used: Vec<u32>,
}

impl Ordered for JoinCounts<'_> {
    fn accept(&mut self, step: &Step) {
        let s = &mut self.summary;
        s.records += 1;
        match step {
            Step::Kept(note) => {
                s.written_records += 1;
                let Some((matched, used)) = note.as_ref().and_then(|n| n.downcast_ref::<Matched>())
                else {
                    return;
                };
                if *matched {
                    s.matched += 1;
                } else {
                    s.unmatched_kept += 1;
                }
                for &r in used {
                    if let Some(x) = self.used.get_mut(r as usize).filter(|x| !**x) {
                        *x = true;
                        self.newly_used.push(r);
                    }
                }
            }
            Step::Dropped(_) => s.dropped += 1,
            Step::Rejected(_) => s.rejected += 1,
        }
    }

    fn checkpoint(&mut self) -> Value {
        let c = Checkpoint {
            summary: self.summary.clone(),
            used: std::mem::take(&mut self.newly_used),
        };
        serde_json::to_value(c).unwrap_or(Value::Null)
    }

    fn restore(&mut self, states: &[Value]) {
        for state in states {
            let Ok(c) = Checkpoint::deserialize(state) else {
                continue;
            };
            for r in c.used {
                if let Some(b) = self.used.get_mut(r as usize) {
                    *b = true;
                }
            }
            self.summary = c.summary;
        }
    }

    fn finish(&mut self, name: &str, out: &mut Outputs) -> io::Result<()> {
        finish_side(
            &self.stage.join,
            &self.used,
            &self.stage.opts,
            name,
            out.reporter.as_mut(),
            out.rejects.as_mut(),
            &mut self.summary,
        )
    }

    fn summarize(&self, sections: &mut Sections) {
        sections.push(
            "joins",
            serde_json::to_value(&self.summary).unwrap_or(Value::Null),
        );
    }
}

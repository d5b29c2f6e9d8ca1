//! Redaction as a stage of a pass ([`Stage`]): on the workers it replaces what the rules find;
//! in order it tallies the replacements per rule (the `redaction` section of the summary). With
//! it in a plan, the rejects file and the diagnostics are masked too.

use serde::Deserialize;
use serde_json::Value;

use super::{MaskedReporter, Redactor, Tally};
use crate::engine::stage::{Note, Ordered, Outputs, Sections, Stage, Step};
use crate::ingest::Provenance;
use crate::model::Trajectory;

/// The note of a redacted trajectory: the replacements per rule (indexed like
/// [`super::Scanner::rules`]), and the bytes the placeholders added over what they replaced.
struct Replaced {
    counts: Vec<u64>,
    grown: usize,
}

impl Stage for Redactor {
    fn kind(&self) -> &'static str {
        "redact"
    }

    fn apply(&self, traj: &mut Trajectory, prov: &Provenance) -> Step {
        match self.redact_counted(traj, prov) {
            Ok((counts, grown)) => Step::Kept(Some(Box::new(Replaced { counts, grown }))),
            Err(d) => Step::Rejected(d),
        }
    }

    fn ordered(&self) -> Box<dyn Ordered + '_> {
        Box::new(Tally::new(self.scanner()))
    }

    fn added_bytes(&self, note: &Note) -> usize {
        (note.as_ref())
            .and_then(|n| n.downcast_ref::<Replaced>())
            .map_or(0, |r| r.grown)
    }

    fn guard(&self, outputs: Outputs) -> Outputs {
        let scanner = self.scanner();
        Outputs {
            reporter: Box::new(MaskedReporter::new(outputs.reporter, scanner.clone())),
            rejects: outputs.rejects.map(|w| w.masked(Box::new(scanner.clone()))),
        }
    }
}

impl Ordered for Tally {
    fn accept(&mut self, step: &Step) {
        match step {
            Step::Kept(note) => {
                if let Some(r) = note.as_ref().and_then(|n| n.downcast_ref::<Replaced>()) {
                    self.written(&r.counts);
                }
            }
            Step::Dropped(_) => {}
            Step::Rejected(_) => self.rejected(),
        }
    }

    fn checkpoint(&mut self) -> Value {
        serde_json::to_value(&*self).unwrap_or(Value::Null)
    }

    fn restore(&mut self, states: &[Value]) {
        if let Some(t) = states.last().and_then(|s| Tally::deserialize(s).ok()) {
            *self = t;
        }
    }

    fn summarize(&self, sections: &mut Sections) {
        sections.set(
            "redaction",
            serde_json::to_value(self.report()).unwrap_or(Value::Null),
        );
    }
}

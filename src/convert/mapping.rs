//! Mapping choices that a raw format does not force, each with its default (docs/inputs.md,
//! "Mapping options"). What a choice leaves out of the steps stays in `details`, so nothing is lost
//! either way.

/// The mapping choices of the seed-format converters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    /// memabra: when no event of a trace records execution, build the steps from its routing
    /// `decisions` (`true`, the default); else such a trace keeps only its task observation.
    pub memabra_decisions: bool,
    /// Reflexion: close each attempt with a `message_action` holding the actor's `rationale`
    /// and `strategy` (`true`, the default); else both stay in `details.reflexion`.
    pub reflexion_closing_message: bool,
    /// Ralph: put the attempt's `plan.md` into the first observation, after the task
    /// (`true`, the default); else it goes to `details.ralph.plan`.
    pub ralph_plan: bool,
}

impl Default for Mapping {
    fn default() -> Self {
        Mapping {
            memabra_decisions: true,
            reflexion_closing_message: true,
            ralph_plan: true,
        }
    }
}

//! The counts of `trajkit stats`, which the report shows too: steps by class, actions and
//! observations, languages, functions, text sizes, tokens. Memory is bounded: the tables of
//! names from the data (languages, functions) keep at most [`MAX_KEYS`] names each.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::export::TokenCounts;
use crate::model::{AdpVersion, Step, Trajectory};

/// Distinct keys a table of names from the data keeps (functions, languages, and the
/// report's tools, outcomes, formats and files); later keys are counted under [`OTHER`].
pub const MAX_KEYS: usize = 1000;

/// The key under which a full table counts new keys.
pub const OTHER: &str = "(other)";

/// The entry of `key`, or of [`OTHER`] once `map` holds [`MAX_KEYS`] keys.
pub fn capped<'m, V: Default>(map: &'m mut BTreeMap<String, V>, key: &str) -> &'m mut V {
    let key = if map.len() < MAX_KEYS || map.contains_key(key) {
        key
    } else {
        OTHER
    };
    map.entry(key.to_owned()).or_default()
}

/// Counts over the valid trajectories of the input (invalid records are only counted).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Stats {
    /// Records read.
    pub records: u64,
    /// Records that are valid ADP.
    pub valid: u64,
    /// Records that are not (run `trajkit validate` for why).
    pub invalid: u64,
    /// Trajectories by ADP version.
    pub versions: BTreeMap<String, u64>,
    /// Steps in all trajectories.
    pub steps: u64,
    /// Action steps.
    pub actions: u64,
    /// Observation steps.
    pub observations: u64,
    /// Steps by `class_`.
    pub steps_by_class: BTreeMap<String, u64>,
    /// Text, image and JSON observations by `source`.
    pub observations_by_source: BTreeMap<String, u64>,
    /// Code actions by language (at most [`MAX_KEYS`] languages, then [`OTHER`]).
    pub code_languages: BTreeMap<String, u64>,
    /// API actions by function (at most [`MAX_KEYS`] functions, then [`OTHER`]).
    pub functions: BTreeMap<String, u64>,
    /// Steps carrying a `tool_call_id`.
    pub linked_steps: u64,
    /// Characters of free text (contents, code, thoughts, pages).
    pub text_chars: u64,
    /// Most steps in one trajectory.
    pub max_steps: u64,
    /// Most text characters in one trajectory.
    pub max_text_chars: u64,
    /// Mean steps per trajectory.
    pub mean_steps: f64,
    /// Mean text characters per trajectory.
    pub mean_text_chars: f64,
    /// With a chat template and tokenizer: the tokens of each trajectory rendered as `--to
    /// tokens` renders it (those that cannot become a conversation, or that the template
    /// rejects, are left out: `lengths` counts the others).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenCounts>,
}

impl Stats {
    /// Adds one valid trajectory.
    pub fn add(&mut self, traj: &Trajectory, version: AdpVersion) {
        self.valid += 1;
        *self.versions.entry(version.name().to_owned()).or_default() += 1;
        let mut chars = 0u64;
        for step in &traj.content {
            self.steps += 1;
            if step.is_action() {
                self.actions += 1;
            } else {
                self.observations += 1;
            }
            *self
                .steps_by_class
                .entry(step.class_name().to_owned())
                .or_default() += 1;
            if let Some(source) = step.source() {
                *self
                    .observations_by_source
                    .entry(source.as_str().to_owned())
                    .or_default() += 1;
            }
            match step {
                Step::CodeAction(c) => *capped(&mut self.code_languages, &c.language) += 1,
                Step::ApiAction(a) => *capped(&mut self.functions, &a.function) += 1,
                _ => {}
            }
            self.linked_steps += u64::from(step.tool_call_id().is_some());
            chars += step.text_chars() as u64;
        }
        self.text_chars += chars;
        self.max_steps = self.max_steps.max(traj.content.len() as u64);
        self.max_text_chars = self.max_text_chars.max(chars);
    }

    /// Computes the means and token percentiles once every record is counted.
    pub fn finish(&mut self) {
        if self.valid > 0 {
            self.mean_steps = self.steps as f64 / self.valid as f64;
            self.mean_text_chars = self.text_chars as f64 / self.valid as f64;
        }
        if let Some(t) = &mut self.tokens {
            t.settle();
        }
    }
}

/// What `stats` makes of one record: the valid trajectory with its version and, when tokens
/// are counted, its tokens; `None` for a record that is not valid ADP.
pub type Checked = Option<(Trajectory, AdpVersion, Option<usize>)>;

impl Stats {
    /// Counts one record as [`crate::commands::stats::check`] made it.
    pub fn accept(&mut self, item: &Checked) {
        self.records += 1;
        match item {
            Some((t, v, tokens)) => {
                self.add(t, *v);
                if let Some(n) = tokens {
                    self.tokens
                        .get_or_insert_with(Default::default)
                        .count(*n as u64);
                }
            }
            None => self.invalid += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Step;

    #[test]
    fn tables_stop_growing_at_the_cap() {
        let mut m: BTreeMap<String, u64> = BTreeMap::new();
        for i in 0..MAX_KEYS + 5 {
            *capped(&mut m, &i.to_string()) += 1;
        }
        *capped(&mut m, "0") += 1;
        assert_eq!(m.len(), MAX_KEYS + 1);
        assert_eq!((m[OTHER], m["0"]), (5, 2));
    }

    #[test]
    fn function_and_language_names_are_capped() {
        let mut stats = Stats::default();
        for i in 0..MAX_KEYS * 3 {
            let steps = vec![
                Step::api(format!("f{i}"), Default::default(), None),
                Step::code(format!("lang{i}"), "x", None),
            ];
            stats.add(
                &Trajectory::new(format!("t{i}"), steps, Default::default()),
                AdpVersion::V1_3,
            );
        }
        assert_eq!(stats.functions.len(), MAX_KEYS + 1);
        assert_eq!(stats.functions[OTHER], 2 * MAX_KEYS as u64);
        assert_eq!(stats.code_languages.len(), MAX_KEYS + 1);
        assert_eq!(stats.functions.values().sum::<u64>(), 3 * MAX_KEYS as u64);
    }
}

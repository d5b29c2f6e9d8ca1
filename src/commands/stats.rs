//! `stats`: what a set of ADP trajectories contains.

use std::collections::BTreeMap;
use std::io;

use serde::Serialize;

use crate::engine::pipeline::{self, Flow, PipelineError, Progress, RunOptions, Sink};
use crate::ingest::RawRecord;
use crate::model::{AdpVersion, Step, Trajectory};
use crate::validate::check_adp;

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
    /// Code actions by language.
    pub code_languages: BTreeMap<String, u64>,
    /// API actions by function.
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
                Step::CodeAction(c) => {
                    *self.code_languages.entry(c.language.clone()).or_default() += 1
                }
                Step::ApiAction(a) => *self.functions.entry(a.function.clone()).or_default() += 1,
                _ => {}
            }
            self.linked_steps += u64::from(step.tool_call_id().is_some());
            chars += step.text_chars() as u64;
        }
        self.text_chars += chars;
        self.max_steps = self.max_steps.max(traj.content.len() as u64);
        self.max_text_chars = self.max_text_chars.max(chars);
    }

    fn finish(&mut self) {
        if self.valid > 0 {
            self.mean_steps = self.steps as f64 / self.valid as f64;
            self.mean_text_chars = self.text_chars as f64 / self.valid as f64;
        }
    }
}

struct StatsSink(Stats);

impl Sink for StatsSink {
    type Item = Option<(Trajectory, AdpVersion)>;

    fn accept(&mut self, _record: RawRecord, item: Self::Item) -> io::Result<Flow> {
        self.0.records += 1;
        match item {
            Some((t, v)) => self.0.add(&t, v),
            None => self.0.invalid += 1,
        }
        Ok(Flow::Continue)
    }
}

/// Computes [`Stats`] over every record of `inputs`.
pub fn stats_inputs(
    inputs: &[String],
    run: &RunOptions,
    progress: &dyn Progress,
) -> Result<Stats, PipelineError> {
    let (sink, _) = pipeline::run(
        inputs,
        run,
        progress,
        |r| check_adp(r).trajectory,
        StatsSink(Stats::default()),
    )?;
    let mut stats = sink.0;
    stats.finish();
    Ok(stats)
}

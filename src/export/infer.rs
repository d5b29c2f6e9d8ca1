//! `--infer-tools dataset`: a first pass over the export's inputs that gathers, per tool, the
//! shapes of the arguments of every `api_action` (the calls the SFT targets write), so every
//! row lists the same spec for a tool.
//!
//! The pass decodes only `content[].class_`, `function` and `kwargs`; everything else in a
//! record is skipped. Records that do not decode are left to the export pass, which rejects
//! them with a reason; calls of trajectories that the export later filters or rejects still
//! count (the specs describe the input).

use std::collections::BTreeMap;
use std::io;

use serde::Deserialize;

use super::tools::ArgShapes;
use crate::engine::pipeline::{self, Flow, PipelineError, Progress, RunOptions, Sink};
use crate::ingest::RawRecord;
use crate::model::{JsonObject, Step, Trajectory};

#[derive(Deserialize)]
struct Record {
    #[serde(default)]
    content: Vec<CallStep>,
}

#[derive(Deserialize)]
struct CallStep {
    #[serde(default)]
    class_: Option<String>,
    #[serde(default)]
    function: Option<String>,
    #[serde(default)]
    kwargs: Option<JsonObject>,
}

/// The api calls of one record: (tool, arguments).
fn calls(record: &RawRecord) -> Vec<(String, JsonObject)> {
    if record.error.is_some() {
        return Vec::new();
    }
    let Ok(parsed) = serde_json::from_slice::<Record>(&record.bytes) else {
        return Vec::new();
    };
    parsed
        .content
        .into_iter()
        .filter(|s| s.class_.as_deref() == Some("api_action"))
        .filter_map(|s| Some((s.function?, s.kwargs?)))
        .collect()
}

/// The api calls of a trajectory already parsed: (tool, arguments).
pub fn trajectory_calls(traj: &Trajectory) -> Vec<(String, JsonObject)> {
    traj.content
        .iter()
        .filter_map(|s| match s {
            Step::ApiAction(a) => Some((a.function.clone(), a.kwargs.clone())),
            _ => None,
        })
        .collect()
}

/// Argument shapes by tool name, gathered call by call in input order.
#[derive(Debug, Default)]
pub struct Gather(pub BTreeMap<String, ArgShapes>);

impl Gather {
    /// Adds the shapes of `calls`.
    pub fn add(&mut self, calls: Vec<(String, JsonObject)>) {
        for (name, args) in calls {
            self.0.entry(name).or_default().add(&args);
        }
    }
}

impl Sink for Gather {
    type Item = Vec<(String, JsonObject)>;

    fn accept(&mut self, _record: RawRecord, calls: Self::Item) -> io::Result<Flow> {
        self.add(calls);
        Ok(Flow::Continue)
    }
}

/// The argument shapes of every tool called in `inputs` (every call of the records as they
/// are written, whether or not they are valid ADP), by tool name. Keys keep the order in which
/// the input first uses them, so the result does not depend on the thread count.
pub fn scan_inputs(
    inputs: &[String],
    opts: &RunOptions,
    progress: &dyn Progress,
) -> Result<BTreeMap<String, ArgShapes>, PipelineError> {
    let (gathered, _) = pipeline::run(inputs, opts, progress, calls, Gather(BTreeMap::new()))?;
    Ok(gathered.0)
}
